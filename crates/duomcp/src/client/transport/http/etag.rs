//! Revalidation of cacheable 2026-07-28 answers (experimental; no MCP revision defines it):
//! the `ETag` a duomcp server puts on the JSON answer of a list, a read or `server/discover` is
//! kept with its result, and the same request sent again (the client's `ttlMs` cache having
//! expired, or without one) carries `If-None-Match`. A `304` is then answered from the kept
//! result, with the new request's id: the server sent no body. A server that sends no `ETag`
//! is asked as always.
//!
//! Kept: at most [`MAX_ENTRIES`] results of at most [`MAX_ENTRY_BYTES`] each and
//! [`MAX_BYTES`] in all, the oldest dropped first.

use crate::client::cache::{Cache, CACHEABLE};
use crate::client::transport::Outgoing;
use duomcp_schema::version;
use http::HeaderValue;
use serde_json::value::RawValue;
use std::collections::HashMap;

/// Results kept for revalidation, at most.
pub(super) const MAX_ENTRIES: usize = 256;
/// Bytes of one kept result, at most (a larger one is not kept).
pub(super) const MAX_ENTRY_BYTES: usize = 1024 * 1024;
/// Bytes of all kept results, at most.
pub(super) const MAX_BYTES: usize = 8 * 1024 * 1024;

struct Entry {
    tag: HeaderValue,
    result: Box<RawValue>,
    seq: u64,
}

/// The kept results, by request key.
#[derive(Default)]
pub(super) struct Etags {
    entries: HashMap<String, Entry>,
    bytes: usize,
    seq: u64,
}

/// The key of `msg` when it is a cacheable 2026-07-28 request: its method and params (without
/// `_meta`), as the client's cache keys them.
pub(super) fn key(msg: &Outgoing) -> Option<String> {
    let method = msg.method.as_deref()?;
    if !CACHEABLE.contains(&method)
        || !msg
            .protocol_version
            .as_deref()
            .is_some_and(version::is_modern)
    {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Body {
        #[serde(default)]
        params: serde_json::Map<String, serde_json::Value>,
    }
    let body: Body = serde_json::from_slice(&msg.body).ok()?;
    Some(Cache::key(method, &body.params))
}

impl Etags {
    /// The tag to send for `key`, if a result is kept.
    pub(super) fn tag(&self, key: &str) -> Option<HeaderValue> {
        self.entries.get(key).map(|e| e.tag.clone())
    }

    /// The result kept for `key` under `tag` (what a `304` to `tag` stands for).
    pub(super) fn result(&mut self, key: &str, tag: &HeaderValue) -> Option<Box<RawValue>> {
        self.seq += 1;
        let seq = self.seq;
        let entry = self.entries.get_mut(key).filter(|e| e.tag == tag)?;
        entry.seq = seq;
        Some(entry.result.clone())
    }

    /// Keeps `result` for `key` under `tag`, within the bounds (the oldest go first).
    pub(super) fn put(&mut self, key: String, tag: HeaderValue, result: &RawValue) {
        let size = result.get().len();
        if let Some(old) = self.entries.remove(&key) {
            self.bytes -= old.result.get().len();
        }
        if size > MAX_ENTRY_BYTES {
            return;
        }
        while !self.entries.is_empty()
            && (self.entries.len() >= MAX_ENTRIES || self.bytes + size > MAX_BYTES)
        {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.seq)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                if let Some(e) = self.entries.remove(&k) {
                    self.bytes -= e.result.get().len();
                }
            }
        }
        self.seq += 1;
        self.bytes += size;
        self.entries.insert(
            key,
            Entry {
                tag,
                result: result.to_owned(),
                seq: self.seq,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    fn msg(method: &str, version: &str, body: &str) -> Outgoing {
        let mut m = Outgoing::new(body.as_bytes().to_vec());
        m.method = Some(method.into());
        m.protocol_version = Some(version.into());
        m
    }

    #[test]
    fn only_cacheable_modern_requests_have_a_key_and_meta_does_not_count() {
        let a = msg(
            "tools/list",
            "2026-07-28",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"c","_meta":{"x":1}}}"#,
        );
        let b = msg(
            "tools/list",
            "2026-07-28",
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"_meta":{"y":2},"cursor":"c"}}"#,
        );
        assert!(key(&a).is_some());
        assert_eq!(key(&a), key(&b));
        let other_page = msg(
            "tools/list",
            "2026-07-28",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"d"}}"#,
        );
        assert_ne!(key(&a), key(&other_page));
        assert!(key(&msg("tools/list", "2025-11-25", r#"{"params":{}}"#)).is_none());
        assert!(key(&msg("tools/call", "2026-07-28", r#"{"params":{}}"#)).is_none());
    }

    #[test]
    fn results_are_bounded_and_the_oldest_go_first() {
        let mut e = Etags::default();
        let tag = HeaderValue::from_static("\"t\"");
        for i in 0..MAX_ENTRIES + 10 {
            e.put(format!("k{i}"), tag.clone(), &raw("{}"));
        }
        assert_eq!(e.entries.len(), MAX_ENTRIES);
        assert!(e.tag("k0").is_none());
        assert!(e.tag(&format!("k{}", MAX_ENTRIES + 9)).is_some());
        // Only the tag it was kept under gets the result back.
        assert!(e
            .result("k200", &HeaderValue::from_static("\"u\""))
            .is_none());
        assert!(e.result("k200", &tag).is_some());
        // Too large: not kept (and the old one for the key is gone).
        let big = format!("\"{}\"", "a".repeat(MAX_ENTRY_BYTES));
        e.put("k200".into(), tag.clone(), &raw(&big));
        assert!(e.tag("k200").is_none());
        // The byte bound holds.
        let half = format!("\"{}\"", "b".repeat(MAX_ENTRY_BYTES - 2));
        for i in 0..20 {
            e.put(format!("big{i}"), tag.clone(), &raw(&half));
        }
        assert!(e.bytes <= MAX_BYTES, "{}", e.bytes);
        assert_eq!(
            e.bytes,
            e.entries
                .values()
                .map(|v| v.result.get().len())
                .sum::<usize>()
        );
    }
}
