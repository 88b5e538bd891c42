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

/// Set by the HTTP transport on a response refused for lack of scope, so that the auth layer
/// can add its `WWW-Authenticate` challenge.
#[cfg_attr(not(all(feature = "auth", feature = "http-server")), allow(dead_code))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScopeChallenge(pub Vec<String>);

#[cfg(test)]
mod tests {
    use super::*;

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
