//! What a 2026-07-28 client writes into a request's `_meta` ([`RequestMeta`]), and the params
//! with it ([`RequestParams`]): the client's half of the `_meta` that
//! [`validate_meta`](super::validate_meta) checks on the server.
//!
//! Four sources may name the same key; one entry per key is written, the later source winning:
//! the caller's own `_meta`, then the request options', then the revision's fields
//! ([`RequestMeta`]), then the progress token.
//!
//! ```
//! use duomcp_proto::era::modern::{validate_meta, RequestMeta, RequestParams};
//! use duomcp_schema::{ClientCapabilities, Implementation};
//! use serde_json::{json, Map, Value};
//!
//! let info = Implementation::new("host", "1.0");
//! let meta = RequestMeta {
//!     protocol_version: Some("2026-07-28"),
//!     client_capabilities: Some(ClientCapabilities::default()),
//!     client_info: Some(&info),
//!     ..RequestMeta::default()
//! };
//! let (params, empty) = (Map::new(), Map::new());
//! let sent = RequestParams { params: &params, caller: &empty, options: &empty, meta: &meta, progress: None };
//! let body: Value = serde_json::to_value(&sent)?;
//! // What the client writes, the server accepts.
//! let checked = validate_meta(Some(&body["_meta"].to_string())).expect("valid _meta");
//! assert_eq!(&*checked.protocol_version, "2026-07-28");
//! assert_eq!(checked.client_info.as_deref().map(|i| i.name.as_str()), Some("host"));
//! # Ok::<(), serde_json::Error>(())
//! ```

use crate::jsonrpc::RequestId;
use duomcp_schema::{meta, ClientCapabilities, Implementation, LoggingLevel, ProgressToken};
use serde::ser::SerializeMap;
use serde::Serialize;
use serde_json::{Map, Value};

/// What the client adds to a request's `_meta` in 2026-07-28 (empty in 2025-11-25),
/// serialized straight into the request's body: no `Value` maps built and dropped per
/// request.
#[derive(Default)]
pub struct RequestMeta<'a> {
    /// `io.modelcontextprotocol/protocolVersion`.
    pub protocol_version: Option<&'a str>,
    /// `io.modelcontextprotocol/clientCapabilities`; `None` also when the caller set its own
    /// (a gateway relaying its client's).
    pub client_capabilities: Option<ClientCapabilities>,
    /// `io.modelcontextprotocol/clientInfo`.
    pub client_info: Option<&'a Implementation>,
    /// `client_info` serialized already (written instead of it when set).
    pub client_info_json: Option<&'a serde_json::value::RawValue>,
    /// `io.modelcontextprotocol/logLevel`.
    pub log_level: Option<LoggingLevel>,
}

impl RequestMeta<'_> {
    /// Whether the meta writes `key` (a caller's key of that name is then left out).
    pub fn sets(&self, key: &str) -> bool {
        match key {
            meta::PROTOCOL_VERSION => self.protocol_version.is_some(),
            meta::CLIENT_CAPABILITIES => self.client_capabilities.is_some(),
            meta::CLIENT_INFO => self.client_info.is_some(),
            meta::LOG_LEVEL => self.log_level.is_some(),
            _ => false,
        }
    }

    /// Whether it writes nothing.
    pub fn is_empty(&self) -> bool {
        self.protocol_version.is_none()
            && self.client_capabilities.is_none()
            && self.client_info.is_none()
            && self.log_level.is_none()
    }

    /// Writes the meta's entries into a `_meta` map being serialized.
    pub fn write<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        if let Some(v) = self.protocol_version {
            map.serialize_entry(meta::PROTOCOL_VERSION, v)?;
        }
        if let Some(v) = &self.client_capabilities {
            map.serialize_entry(meta::CLIENT_CAPABILITIES, v)?;
        }
        match (self.client_info_json, self.client_info) {
            (Some(json), _) => map.serialize_entry(meta::CLIENT_INFO, json)?,
            (None, Some(v)) => map.serialize_entry(meta::CLIENT_INFO, v)?,
            (None, None) => {}
        }
        if let Some(v) = &self.log_level {
            map.serialize_entry(meta::LOG_LEVEL, v)?;
        }
        Ok(())
    }
}

/// A request's params as sent: `params` (without `_meta`), then a `_meta` of the caller's
/// keys, the request options' (which win over the caller's), the revision's
/// [`RequestMeta`] and the
/// progress token (which win over both), written without building a `Value` map.
pub struct RequestParams<'a> {
    /// The params, without `_meta`.
    pub params: &'a Map<String, Value>,
    /// The `_meta` the caller put in the params.
    pub caller: &'a Map<String, Value>,
    /// The `_meta` of the request's options.
    pub options: &'a Map<String, Value>,
    /// What the revision adds.
    pub meta: &'a RequestMeta<'a>,
    /// The progress token, when the caller wants progress.
    pub progress: Option<&'a ProgressToken>,
}

impl RequestParams<'_> {
    /// Whether a later source sets `key` (so an earlier one's entry is left out).
    fn later(&self, key: &str) -> bool {
        self.meta.sets(key) || (self.progress.is_some() && key == meta::PROGRESS_TOKEN)
    }
}

impl Serialize for RequestParams<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for (k, v) in self.params {
            map.serialize_entry(k, v)?;
        }
        let empty = self.caller.is_empty()
            && self.options.is_empty()
            && self.meta.is_empty()
            && self.progress.is_none();
        if !empty {
            map.serialize_entry("_meta", &Meta(self))?;
        }
        map.end()
    }
}

struct Meta<'a>(&'a RequestParams<'a>);

impl Serialize for Meta<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let w = self.0;
        let mut map = s.serialize_map(None)?;
        for (k, v) in w.caller {
            if !w.options.contains_key(k) && !w.later(k) {
                map.serialize_entry(k, v)?;
            }
        }
        for (k, v) in w.options {
            if !w.later(k) {
                map.serialize_entry(k, v)?;
            }
        }
        w.meta.write(&mut map)?;
        if let Some(token) = w.progress {
            map.serialize_entry(meta::PROGRESS_TOKEN, token)?;
        }
        map.end()
    }
}

/// The progress token a request asks for: its own id (the one way to find the request a
/// progress notification is about without a table).
pub fn progress_token(id: &RequestId) -> ProgressToken {
    match id {
        RequestId::Number(n) => ProgressToken::Number(n.clone()),
        RequestId::String(s) => ProgressToken::String(s.clone()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::era::modern::validate_meta;
    use serde_json::json;

    fn meta_of(w: &RequestParams<'_>) -> Value {
        let body = serde_json::to_value(w).unwrap_or_default();
        body.get("_meta").cloned().unwrap_or(Value::Null)
    }

    #[test]
    fn meta_keys_win_in_order_caller_options_revision_progress() {
        let mut params = Map::new();
        params.insert("name".into(), json!("echo"));
        let caller = json!({
            "a": 1,
            "b": 1,
            (meta::PROTOCOL_VERSION): "caller",
            (meta::PROGRESS_TOKEN): "caller",
        });
        let options = json!({ "b": 2, (meta::CLIENT_CAPABILITIES): { "x": {} } });
        let (Value::Object(caller), Value::Object(options)) = (caller, options) else {
            unreachable!()
        };
        let info = Implementation::new("c", "1");
        let meta_fields = RequestMeta {
            protocol_version: Some("2026-07-28"),
            client_capabilities: None,
            client_info: Some(&info),
            client_info_json: None,
            log_level: Some(LoggingLevel::Debug),
        };
        let token: ProgressToken = serde_json::from_value(json!(7)).unwrap();
        let w = RequestParams {
            params: &params,
            caller: &caller,
            options: &options,
            meta: &meta_fields,
            progress: Some(&token),
        };
        let body = serde_json::to_string(&w).unwrap_or_default();
        // One entry per key, never two.
        assert_eq!(body.matches(meta::PROTOCOL_VERSION).count(), 1, "{body}");
        assert_eq!(body.matches(meta::PROGRESS_TOKEN).count(), 1, "{body}");
        assert_eq!(body.matches("\"b\"").count(), 1, "{body}");
        assert_eq!(
            meta_of(&w),
            json!({
                "a": 1,
                "b": 2,
                (meta::CLIENT_CAPABILITIES): { "x": {} },
                (meta::PROTOCOL_VERSION): "2026-07-28",
                (meta::CLIENT_INFO): { "name": "c", "version": "1" },
                (meta::LOG_LEVEL): "debug",
                (meta::PROGRESS_TOKEN): 7,
            })
        );
        assert_eq!(serde_json::to_value(&w).unwrap_or_default()["name"], "echo");
        // The client info serialized once is written as the struct would be.
        let json = serde_json::value::to_raw_value(&info).unwrap();
        let rendered = RequestMeta {
            protocol_version: Some("2026-07-28"),
            client_capabilities: None,
            client_info: None,
            client_info_json: Some(&json),
            log_level: Some(LoggingLevel::Debug),
        };
        let w2 = RequestParams {
            meta: &rendered,
            ..w
        };
        assert_eq!(serde_json::to_string(&w2).unwrap_or_default(), body);
    }

    #[test]
    fn no_meta_when_nothing_to_say() {
        let params = Map::new();
        let empty = Map::new();
        let meta_fields = RequestMeta::default();
        let w = RequestParams {
            params: &params,
            caller: &empty,
            options: &empty,
            meta: &meta_fields,
            progress: None,
        };
        assert_eq!(serde_json::to_string(&w).unwrap_or_default(), "{}");
    }

    /// The keys of a JSON object in the order written, duplicates kept.
    struct Keys(Vec<String>);

    impl<'de> serde::Deserialize<'de> for Keys {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Visit;
            impl<'de> serde::de::Visitor<'de> for Visit {
                type Value = Keys;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut m: A,
                ) -> Result<Keys, A::Error> {
                    let mut keys = Vec::new();
                    while let Some((k, _)) = m.next_entry::<String, serde::de::IgnoredAny>()? {
                        keys.push(k);
                    }
                    Ok(Keys(keys))
                }
            }
            d.deserialize_map(Visit)
        }
    }

    mod props {
        #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
        //! Whatever the caller and the options put in `_meta`, the client writes each key once
        //! and the server's validation reads back the revision's fields as written.
        use super::*;
        use crate::strategies::object;
        use proptest::prelude::*;

        /// An object with, often, keys the revision writes too (with values the server
        /// accepts where a later source may leave them in place).
        fn with_reserved() -> impl Strategy<Value = Map<String, Value>> {
            let reserved = prop_oneof![
                crate::strategies::json().prop_map(|v| (meta::PROTOCOL_VERSION, v)),
                crate::strategies::json().prop_map(|v| (meta::CLIENT_INFO, v)),
                crate::strategies::json().prop_map(|v| (meta::CLIENT_CAPABILITIES, v)),
                Just((meta::LOG_LEVEL, Value::from("info"))),
                Just((meta::PROGRESS_TOKEN, Value::from("p"))),
                crate::strategies::json().prop_map(|v| ("x", v)),
            ];
            (object(), proptest::collection::vec(reserved, 0..4)).prop_map(|(mut m, extra)| {
                for (k, v) in extra {
                    m.insert(k.to_owned(), v);
                }
                m
            })
        }

        proptest! {
            #[test]
            fn written_meta_validates_and_names_each_key_once(
                params in object(),
                caller in with_reserved(),
                options in with_reserved(),
                level in proptest::option::of(prop_oneof![Just(LoggingLevel::Debug), Just(LoggingLevel::Error)]),
                progress in proptest::option::of(any::<i64>()),
            ) {
                let mut params = params;
                params.remove("_meta");
                let info = Implementation::new("c", "1");
                let fields = RequestMeta {
                    protocol_version: Some("2026-07-28"),
                    client_capabilities: Some(ClientCapabilities::default()),
                    client_info: Some(&info),
                    client_info_json: None,
                    log_level: level,
                };
                let token = progress.map(|n| progress_token(&RequestId::from(n)));
                let sent = RequestParams {
                    params: &params, caller: &caller, options: &options, meta: &fields, progress: token.as_ref(),
                };
                let body = serde_json::to_string(&sent).unwrap();
                let value: Value = serde_json::from_str(&body).unwrap();
                // The `_meta` as written (not through a map, which would hide a repeat).
                #[derive(serde::Deserialize)]
                struct Body<'a> {
                    #[serde(rename = "_meta", borrow)]
                    meta: &'a serde_json::value::RawValue,
                }
                let meta_text = serde_json::from_str::<Body<'_>>(&body).unwrap().meta.get();
                let keys: Keys = serde_json::from_str(meta_text).unwrap();
                let mut seen = std::collections::HashSet::new();
                prop_assert!(keys.0.iter().all(|k| seen.insert(k.clone())), "{}", body);
                let checked = validate_meta(Some(meta_text)).unwrap();
                prop_assert_eq!(&*checked.protocol_version, "2026-07-28");
                prop_assert_eq!(checked.client_info.as_deref().map(|i| i.name.as_str()), Some("c"));
                if level.is_some() {
                    prop_assert_eq!(checked.log_level, level);
                }
                if let Some(t) = token {
                    prop_assert_eq!(checked.progress_token, Some(t));
                }
                for (k, v) in &params {
                    prop_assert_eq!(&value[k], v);
                }
            }
        }
    }
}
