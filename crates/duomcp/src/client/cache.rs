//! The result cache of 2026-07-28 (`ttlMs` / `cacheScope`), and the clock it reads.
//!
//! Keys are the method plus its params (without `_meta`), so every page of a list is cached on
//! its own. A `list_changed` notification drops the matching lists, `resources/updated` the
//! matching read. Both scopes are kept: a client's cache serves one authorization context.

use crate::util::lock;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[cfg(test)]
use crate::clock::ManualClock;
pub(crate) use crate::clock::{Clock, SystemClock};

/// Which cached results a notification makes stale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Invalidate {
    Method(&'static str),
    Read(String),
    All,
}

struct Entry {
    value: Value,
    fresh_until: Instant,
    method: String,
    uri: Option<String>,
}

#[derive(Default)]
struct State {
    entries: HashMap<String, Entry>,
    /// Bumped by every invalidation; a response that was requested before the bump is not
    /// stored (it may predate the change).
    generation: u64,
}

/// The cache itself.
pub(crate) struct Cache {
    enabled: bool,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
}

impl fmt::Debug for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cache")
            .field("enabled", &self.enabled)
            .field("entries", &lock(&self.state).entries.len())
            .finish()
    }
}

pub(crate) use crate::era::modern::CACHEABLE_METHODS as CACHEABLE;

impl Cache {
    pub(crate) fn new(enabled: bool, clock: Arc<dyn Clock>) -> Self {
        Cache {
            enabled,
            clock,
            state: Mutex::default(),
        }
    }

    /// The key of a request: method and params without `_meta`, in a canonical form.
    pub(crate) fn key(method: &str, params: &Map<String, Value>) -> String {
        let mut sorted: Vec<(&String, &Value)> =
            params.iter().filter(|(k, _)| *k != "_meta").collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        let canonical: Vec<Value> = sorted
            .into_iter()
            .map(|(k, v)| Value::Array(vec![Value::String(k.clone()), canonicalize(v)]))
            .collect();
        format!("{method} {}", Value::Array(canonical))
    }

    /// A fresh cached result, if there is one.
    pub(crate) fn get(&self, key: &str) -> Option<Value> {
        if !self.enabled {
            return None;
        }
        let now = self.clock.now();
        let mut state = lock(&self.state);
        match state.entries.get(key) {
            Some(e) if now < e.fresh_until => Some(e.value.clone()),
            Some(_) => {
                state.entries.remove(key);
                None
            }
            None => None,
        }
    }

    /// The generation to pass to [`put`](Self::put) for a request about to be sent.
    pub(crate) fn generation(&self) -> u64 {
        lock(&self.state).generation
    }

    /// Stores a complete result according to its `ttlMs` (absent or 0: not stored).
    pub(crate) fn put(
        &self,
        key: String,
        method: &str,
        params: &Map<String, Value>,
        value: &Value,
        generation: u64,
    ) {
        if !self.enabled || !CACHEABLE.contains(&method) {
            return;
        }
        let ttl = value.get("ttlMs").and_then(Value::as_f64).unwrap_or(0.0);
        if !ttl.is_finite() || ttl <= 0.0 {
            return;
        }
        let fresh_until = self.clock.now() + Duration::from_millis(ttl.min(u64::MAX as f64) as u64);
        let uri = params.get("uri").and_then(Value::as_str).map(str::to_owned);
        let mut state = lock(&self.state);
        if state.generation != generation {
            return;
        }
        state.entries.insert(
            key,
            Entry {
                value: value.clone(),
                fresh_until,
                method: method.to_owned(),
                uri,
            },
        );
    }

    pub(crate) fn invalidate(&self, what: Invalidate) {
        let mut state = lock(&self.state);
        state.generation += 1;
        match what {
            Invalidate::All => state.entries.clear(),
            Invalidate::Method(m) => state.entries.retain(|_, e| e.method != m),
            Invalidate::Read(uri) => state.entries.retain(|_, e| {
                !(e.method == "resources/read" && e.uri.as_deref() == Some(uri.as_str()))
            }),
        }
    }
}

fn canonicalize(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonicalize(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(canonicalize).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn keys_ignore_meta_and_key_order() {
        let a = Cache::key(
            "tools/list",
            &obj(json!({ "cursor": "c", "x": { "b": 1, "a": 2 }, "_meta": { "m": 1 } })),
        );
        let b = Cache::key(
            "tools/list",
            &obj(json!({ "x": { "a": 2, "b": 1 }, "cursor": "c" })),
        );
        assert_eq!(a, b);
        assert_ne!(a, Cache::key("tools/list", &obj(json!({ "cursor": "d" }))));
        assert_ne!(
            a,
            Cache::key("prompts/list", &obj(json!({ "cursor": "c" })))
        );
    }

    #[test]
    fn entries_expire_with_the_clock() {
        let clock = ManualClock::default();
        let cache = Cache::new(true, Arc::new(clock.clone()));
        let params = obj(json!({}));
        let key = Cache::key("tools/list", &params);
        cache.put(
            key.clone(),
            "tools/list",
            &params,
            &json!({ "tools": [], "ttlMs": 1000 }),
            cache.generation(),
        );
        assert!(cache.get(&key).is_some());
        clock.advance(Duration::from_millis(999));
        assert!(cache.get(&key).is_some());
        clock.advance(Duration::from_millis(1));
        assert!(cache.get(&key).is_none());
    }

    #[test]
    fn zero_absent_and_negative_ttls_are_not_stored() {
        let cache = Cache::new(true, Arc::new(ManualClock::default()));
        let params = obj(json!({}));
        for v in [json!({ "ttlMs": 0 }), json!({}), json!({ "ttlMs": -5 })] {
            let key = Cache::key("tools/list", &params);
            cache.put(key.clone(), "tools/list", &params, &v, cache.generation());
            assert!(cache.get(&key).is_none(), "{v}");
        }
    }

    #[test]
    fn invalidation_is_targeted_and_beats_a_racing_response() {
        let cache = Cache::new(true, Arc::new(ManualClock::default()));
        let tools = obj(json!({}));
        let read = obj(json!({ "uri": "a://1" }));
        let (kt, kr) = (
            Cache::key("tools/list", &tools),
            Cache::key("resources/read", &read),
        );
        cache.put(
            kt.clone(),
            "tools/list",
            &tools,
            &json!({ "ttlMs": 100 }),
            cache.generation(),
        );
        cache.put(
            kr.clone(),
            "resources/read",
            &read,
            &json!({ "ttlMs": 100 }),
            cache.generation(),
        );
        cache.invalidate(Invalidate::Read("a://2".into()));
        assert!(cache.get(&kr).is_some());
        cache.invalidate(Invalidate::Read("a://1".into()));
        assert!(cache.get(&kr).is_none());
        assert!(cache.get(&kt).is_some());
        let before = cache.generation();
        cache.invalidate(Invalidate::Method("tools/list"));
        assert!(cache.get(&kt).is_none());
        cache.put(
            kt.clone(),
            "tools/list",
            &tools,
            &json!({ "ttlMs": 100 }),
            before,
        );
        assert!(
            cache.get(&kt).is_none(),
            "a response requested before the invalidation must not be stored"
        );
    }

    #[test]
    fn a_disabled_cache_stores_nothing() {
        let cache = Cache::new(false, Arc::new(ManualClock::default()));
        let params = obj(json!({}));
        let key = Cache::key("tools/list", &params);
        cache.put(
            key.clone(),
            "tools/list",
            &params,
            &json!({ "ttlMs": 100 }),
            cache.generation(),
        );
        assert!(cache.get(&key).is_none());
    }
}
