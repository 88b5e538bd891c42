//! Property tests of the 2026-07-28 `_meta`: a `_meta` written from valid fields is read and
//! validated ([`MetaFields::parse`], [`validate_meta`], [`MetaMemo`]) to those fields, and no
//! JSON object makes them panic.

use super::*;
use crate::strategies::{any_json, json};
use proptest::prelude::*;
use serde_json::{Map, Value};

const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// Capabilities a client may declare (known members with their shapes, and unknown ones).
fn capabilities() -> impl Strategy<Value = Value> {
    (
        any::<bool>(),
        proptest::option::of(any::<bool>()),
        any::<bool>(),
        proptest::collection::btree_map("x-[a-z]{1,5}", json(), 0..2),
    )
        .prop_map(|(sampling, roots, elicitation, extra)| {
            let mut caps: Map<String, Value> = extra.into_iter().collect();
            if sampling {
                caps.insert("sampling".into(), json!({}));
            }
            if let Some(list_changed) = roots {
                caps.insert("roots".into(), json!({ "listChanged": list_changed }));
            }
            if elicitation {
                caps.insert("elicitation".into(), json!({}));
            }
            Value::Object(caps)
        })
}

fn client_info() -> impl Strategy<Value = Value> {
    (".{0,10}", ".{0,6}", proptest::option::of(".{0,10}")).prop_map(|(name, version, title)| {
        let mut info = json!({ "name": name, "version": version });
        if let Some(title) = title {
            info["title"] = json!(title);
        }
        info
    })
}

fn progress_token() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        ".{0,8}".prop_map(Value::from)
    ]
}

/// The fields of a valid `_meta`, and other members a request's `_meta` may carry.
#[derive(Debug, Clone)]
struct Fields {
    version: &'static str,
    capabilities: Value,
    info: Option<Value>,
    level: Option<&'static str>,
    progress: Option<Value>,
    other: Map<String, Value>,
}

fn fields() -> impl Strategy<Value = Fields> {
    (
        proptest::sample::select(version::MODERN_VERSIONS),
        capabilities(),
        proptest::option::of(client_info()),
        proptest::option::of(proptest::sample::select(&LEVELS[..])),
        proptest::option::of(progress_token()),
        proptest::collection::btree_map("[a-z]{1,6}/[a-z]{1,6}", json(), 0..3),
    )
        .prop_map(
            |(version, capabilities, info, level, progress, other)| Fields {
                version,
                capabilities,
                info,
                level,
                progress,
                other: other.into_iter().collect(),
            },
        )
}

/// The `_meta` a client writes from `f`.
fn written(f: &Fields) -> String {
    let mut m = f.other.clone();
    m.insert(meta::PROTOCOL_VERSION.into(), json!(f.version));
    m.insert(meta::CLIENT_CAPABILITIES.into(), f.capabilities.clone());
    if let Some(info) = &f.info {
        m.insert(meta::CLIENT_INFO.into(), info.clone());
    }
    if let Some(level) = f.level {
        m.insert("io.modelcontextprotocol/logLevel".into(), json!(level));
    }
    if let Some(p) = &f.progress {
        m.insert("progressToken".into(), p.clone());
    }
    Value::Object(m).to_string()
}

/// A `_meta` whose known members hold anything at all.
fn any_meta() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just(meta::PROTOCOL_VERSION.to_owned()),
        Just(meta::CLIENT_CAPABILITIES.to_owned()),
        Just(meta::CLIENT_INFO.to_owned()),
        Just("io.modelcontextprotocol/logLevel".to_owned()),
        Just("progressToken".to_owned()),
        ".{0,8}",
    ];
    prop_oneof![
        proptest::collection::vec((key, any_json()), 0..6)
            .prop_map(|members| Value::Object(members.into_iter().collect()).to_string()),
        any_json().prop_map(|v| v.to_string()),
        ".{0,64}",
    ]
}

proptest! {
    /// A `_meta` written from valid fields parses and validates to those fields, whether the
    /// memo has seen its capabilities before or not.
    #[test]
    fn a_meta_written_from_valid_fields_reads_back(f in fields(), seen in any::<bool>()) {
        let text = written(&f);
        let parsed = MetaFields::parse(&text).map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        prop_assert_eq!(parsed.protocol_version(), Some(f.version));
        prop_assert!(parsed.has_version());
        prop_assert!(names_version(&text));

        let memo = MetaMemo::default();
        if seen {
            let _ = memo.validate(Some(&text));
        }
        let valid = memo.validate(Some(&text)).map_err(|e| TestCaseError::fail(format!("{e:?}: {text}")))?;
        prop_assert_eq!(&*valid.protocol_version, f.version);
        let caps: ClientCapabilities = serde_json::from_value(f.capabilities.clone())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&*valid.client_capabilities, &caps);
        let info: Option<Implementation> = f
            .info
            .clone()
            .map(serde_json::from_value)
            .transpose()
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(valid.client_info.as_deref(), info.as_ref());
        let level: Option<LoggingLevel> = f.level.map(|l| serde_json::from_value(json!(l))).transpose()
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(valid.log_level, level);
        let progress: Option<ProgressToken> = f.progress.clone().map(serde_json::from_value).transpose()
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(valid.progress_token, progress);
        prop_assert_eq!(validate_meta(Some(&text)).map(|v| v.protocol_version), Ok(valid.protocol_version));
    }

    /// Without a protocol version, or with one no 2026-07-28 server speaks, a `_meta` is
    /// refused as such.
    #[test]
    fn a_meta_without_a_known_version_is_refused(f in fields(), unknown in "[0-9]{4}-[0-9]{2}-[0-9]{2}") {
        let mut m: Map<String, Value> = serde_json::from_str(&written(&f)).map_err(|e| TestCaseError::fail(e.to_string()))?;
        m.remove(meta::PROTOCOL_VERSION);
        let text = Value::Object(m.clone()).to_string();
        prop_assert!(!names_version(&text));
        prop_assert!(matches!(validate_meta(Some(&text)), Err(ProtocolError::InvalidMeta(_))));
        prop_assume!(!version::MODERN_VERSIONS.contains(&unknown.as_str()));
        m.insert(meta::PROTOCOL_VERSION.into(), json!(unknown));
        let text = Value::Object(m).to_string();
        let refused = validate_meta(Some(&text));
        let named = matches!(&refused, Err(ProtocolError::UnsupportedVersion { requested }) if *requested == unknown);
        prop_assert!(named, "{:?}", refused);
    }

    /// Any text, any JSON object (its known members holding anything): an answer or a
    /// refusal, never a panic; a refusal is `_meta`'s or the version's.
    #[test]
    fn any_meta_parses_and_validates_without_panic(text in any_meta()) {
        let memo = MetaMemo::default();
        let _ = names_version(&text);
        if let Ok(fields) = MetaFields::parse(&text) {
            let _ = (fields.protocol_version(), fields.has_version());
        }
        for _ in 0..2 {
            match memo.validate(Some(&text)) {
                Ok(v) => prop_assert!(version::MODERN_VERSIONS.contains(&&*v.protocol_version)),
                Err(e) => prop_assert!(
                    matches!(e, ProtocolError::InvalidMeta(_) | ProtocolError::UnsupportedVersion { .. }),
                    "{:?}", e
                ),
            }
        }
    }
}
