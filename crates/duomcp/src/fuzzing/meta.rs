//! `_meta` of 2026-07-28 requests: [`MetaMemo`] validation (with the memo warm and cold),
//! the version probe the dispatcher uses, and the request-level `params` split.
//!
//! Oracles: a memo that has seen other `_meta` gives the same verdict as a fresh one; a valid
//! `_meta` names a version we speak, and the probe sees that version.

use super::text;
use crate::era::modern::{names_version, MetaFields, MetaMemo, ValidMeta};
use crate::server::params::ParamsIndex;
use duomcp_schema::version;
use serde_json::value::RawValue;

fn same(
    a: &Result<ValidMeta, crate::era::ProtocolError>,
    b: &Result<ValidMeta, crate::era::ProtocolError>,
) -> bool {
    match (a, b) {
        (Ok(a), Ok(b)) => {
            a.protocol_version == b.protocol_version
                && a.client_capabilities == b.client_capabilities
                && a.client_info == b.client_info
                && a.log_level == b.log_level
                && a.progress_token == b.progress_token
        }
        (Err(a), Err(b)) => a == b,
        _ => false,
    }
}

/// Input: a `_meta` object (or a whole `params` object holding one).
pub fn meta(data: &[u8]) {
    let Some(raw) = text(data) else { return };
    let cold = MetaMemo::default().validate(Some(raw));
    // A memo warmed with other bytes first, then with these twice.
    let memo = MetaMemo::default();
    let _ = memo.validate(Some(
        r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"}}"#,
    ));
    let warm = memo.validate(Some(raw));
    let again = memo.validate(Some(raw));
    assert!(
        same(&cold, &warm),
        "the memo changed the verdict: {cold:?} / {warm:?}"
    );
    assert!(same(&warm, &again), "a second look changed the verdict");
    if let Ok(valid) = &cold {
        assert!(
            raw.trim_start().starts_with('{'),
            "valid _meta that is not an object"
        );
        assert!(version::MODERN_VERSIONS.contains(&&*valid.protocol_version));
        assert!(names_version(raw), "valid _meta the era probe does not see");
        let fields = MetaFields::parse(raw).expect("valid _meta parses");
        assert_eq!(fields.protocol_version(), Some(&*valid.protocol_version));
    }
    // The same bytes as `params`: the split must find the `_meta` member the parser reads.
    if let Ok(params) = RawValue::from_string(raw.to_owned()) {
        if let Ok(index) = ParamsIndex::read_text(params.get()) {
            if let Some(m) = index.meta() {
                let _ = MetaMemo::default().validate(Some(m));
            }
            let _ = index.parse::<duomcp_schema::CallToolRequestParams>();
        }
    }
}
