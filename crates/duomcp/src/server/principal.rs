//! [`Principal`]: who made a request, and what the token lets them do. The type is plain data
//! and lives in `duomcp-proto` ([`duomcp_proto::principal::Principal`]); this module holds what ties it
//! to the server: taking it as a handler argument, scope checks, the scope hierarchy.
//!
//! Handlers reach it through [`Context::principal`](crate::server::Context::principal), or take
//! it as an argument (the call is refused when the request is not authenticated):
//!
//! ```
//! use duomcp::server::Principal;
//! async fn whoami(p: Principal) -> String {
//!     format!("{} ({})", p.subject().unwrap_or("?"), p.scopes().collect::<Vec<_>>().join(" "))
//! }
//! let server = duomcp::server::Server::builder().tool("whoami", whoami).build();
//! # let _ = server;
//! ```

use crate::era::ProtocolError;
use crate::server::{CallParts, ExtractRejection, FromCallParts, HandlerError};

pub use duomcp_proto::principal::Principal;

/// `principal` with its scopes expanded through `hierarchy` (the server's
/// [`ScopeHierarchy`](crate::auth::ScopeHierarchy)).
#[cfg_attr(not(all(feature = "auth", feature = "http-server")), allow(dead_code))]
pub(crate) fn expand_scopes(
    principal: Principal,
    hierarchy: &crate::common::scope::ScopeHierarchy,
) -> Principal {
    if hierarchy.is_empty() {
        return principal;
    }
    principal.map_scopes(|granted| hierarchy.expand(granted))
}

impl FromCallParts for Principal {
    fn from_call_parts(parts: &CallParts) -> Result<Self, ExtractRejection> {
        parts
            .ctx
            .principal()
            .cloned()
            .ok_or(ExtractRejection::Unauthenticated)
    }
}

/// Refuses the call unless the request's principal holds every scope of `required`; the
/// refusal names all of them at once, as the 2026-07-28 revision asks.
pub(crate) fn require_scopes(
    principal: Option<&Principal>,
    required: &[String],
) -> Result<(), HandlerError> {
    if required.is_empty() {
        return Ok(());
    }
    let lacking = match principal {
        Some(p) => !p.missing_scopes(required).is_empty(),
        None => true,
    };
    if lacking {
        return Err(ProtocolError::InsufficientScope {
            required: required.to_vec(),
        }
        .into());
    }
    Ok(())
}

/// A resource template's scopes for one read: each `{name}` of a variable the URI matched is
/// replaced by its value (a list's items joined with `,`), so that
/// `files:read:{owner}` read at `file:///alice/notes` needs `files:read:alice`. A character a
/// scope may not hold (RFC 6749: space, `"`, `\`, controls, non-ASCII) is percent-encoded, so
/// that a URI cannot make a scope that splits or breaks the challenge.
pub(crate) fn expand_template_scopes(
    scopes: Vec<String>,
    vars: &serde_json::Map<String, serde_json::Value>,
) -> Vec<String> {
    if vars.is_empty() || !scopes.iter().any(|s| s.contains('{')) {
        return scopes;
    }
    scopes
        .into_iter()
        .map(|scope| {
            let mut out = scope;
            for (name, value) in vars {
                let placeholder = format!("{{{name}}}");
                if !out.contains(&placeholder) {
                    continue;
                }
                let text = match value {
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Array(items) => items
                        .iter()
                        .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                        .collect::<Vec<_>>()
                        .join(","),
                    other => other.to_string(),
                };
                out = out.replace(&placeholder, &scope_safe(&text));
            }
            out
        })
        .collect()
}

/// `text` with every byte a scope token may not hold percent-encoded (RFC 6749 §3.3:
/// `%x21 / %x23-5B / %x5D-7E`; `%` itself too, so that the encoding is unambiguous).
fn scope_safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            0x21 | 0x23..=0x24 | 0x26..=0x5B | 0x5D..=0x7E => out.push(char::from(b)),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Set by the HTTP transport on a response refused for lack of scope, so that the auth layer
/// can add its `WWW-Authenticate` challenge.
#[cfg_attr(not(all(feature = "auth", feature = "http-server")), allow(dead_code))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScopeChallenge(pub Vec<String>);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_scopes_take_the_uris_values_and_cannot_be_split_by_them() {
        let vars: serde_json::Map<String, serde_json::Value> = serde_json::from_value(
            serde_json::json!({ "id": "123", "tags": ["a", "b"], "evil": "x y\"%" }),
        )
        .unwrap();
        let scopes = vec![
            "read".to_owned(),
            "template:{id}".to_owned(),
            "tags:{tags}".to_owned(),
            "e:{evil}".to_owned(),
            "unknown:{nope}".to_owned(),
        ];
        assert_eq!(
            expand_template_scopes(scopes, &vars),
            [
                "read",
                "template:123",
                "tags:a,b",
                "e:x%20y%22%25",
                "unknown:{nope}"
            ]
        );
        // Nothing to expand: the same list.
        let plain = vec!["a".to_owned()];
        assert_eq!(expand_template_scopes(plain.clone(), &vars), plain);
    }

    #[test]
    fn require_scopes_names_every_missing_scope() {
        let need = vec!["a".to_owned(), "b".to_owned()];
        assert!(require_scopes(None, &[]).is_ok());
        let p = Principal::new("x").with_scopes(["a"]);
        match require_scopes(Some(&p), &need) {
            Err(HandlerError::Protocol(ProtocolError::InsufficientScope { required })) => {
                assert_eq!(required, need)
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(require_scopes(None, &need).is_err());
        assert!(require_scopes(Some(&Principal::local()), &need).is_ok());
    }
}
