//! [`Principal`]: who made a request, and what the token lets them do.

use crate::era::ProtocolError;
use crate::server::{CallParts, FromCallParts, HandlerError, Rejection};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// The authenticated caller of a request: the subject of a validated access token and the
/// scopes it grants (already expanded through the server's [`ScopeHierarchy`]).
///
/// Handlers reach it through [`Context::principal`](crate::server::Context::principal), or take
/// it as an argument (the call is refused when the request is not authenticated):
///
/// ```
/// use duomcp::auth::Principal;
/// async fn whoami(p: Principal) -> String {
///     format!("{} ({})", p.subject().unwrap_or("?"), p.scopes().collect::<Vec<_>>().join(" "))
/// }
/// let server = duomcp::server::Server::builder().tool("whoami", whoami).build();
/// # let _ = server;
/// ```
///
/// The raw access token is deliberately not part of it: a server never passes the client's
/// token on to upstream APIs.
///
/// [`ScopeHierarchy`]: crate::auth::ScopeHierarchy
#[derive(Debug, Clone, PartialEq)]
pub struct Principal {
    subject: Option<String>,
    issuer: Option<String>,
    client_id: Option<String>,
    scopes: Grant,
    expires_at: Option<u64>,
    claims: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq)]
enum Grant {
    /// The local user of a stdio server: trusted with everything.
    All,
    Some(BTreeSet<String>),
}

impl Principal {
    /// A principal for `subject` with no scopes.
    ///
    /// ```
    /// use duomcp::auth::Principal;
    /// let p = Principal::new("alice").with_scopes(["files:read"]);
    /// assert!(p.has_scope("files:read"));
    /// assert!(!p.has_scope("files:write"));
    /// ```
    pub fn new(subject: impl Into<String>) -> Self {
        Principal {
            subject: Some(subject.into()),
            issuer: None,
            client_id: None,
            scopes: Grant::Some(BTreeSet::new()),
            expires_at: None,
            claims: Map::new(),
        }
    }

    /// A principal known only by its client (a `client_credentials` token has no user).
    pub fn for_client(client_id: impl Into<String>) -> Self {
        let mut p = Principal::new("");
        p.subject = None;
        p.client_id = Some(client_id.into());
        p
    }

    /// The user who started a stdio server: the spec has stdio servers take credentials from
    /// the environment rather than from OAuth, so the local caller holds every scope.
    ///
    /// ```
    /// let p = duomcp::auth::Principal::local();
    /// assert!(p.has_scope("anything:at-all"));
    /// ```
    pub fn local() -> Self {
        let mut p = Principal::new("local");
        p.scopes = Grant::All;
        p
    }

    /// Sets the granted scopes (replacing earlier ones).
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = Grant::Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the token issuer.
    pub fn with_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Sets the OAuth client the token was issued to.
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// Sets when the token expires (seconds since the Unix epoch).
    pub fn with_expiry(mut self, unix_seconds: u64) -> Self {
        self.expires_at = Some(unix_seconds);
        self
    }

    /// Sets the token's claims (JWT payload or introspection response).
    pub fn with_claims(mut self, claims: Map<String, Value>) -> Self {
        self.claims = claims;
        self
    }

    /// The subject (`sub`): the user, or the client for machine-to-machine tokens.
    pub fn subject(&self) -> Option<&str> {
        self.subject.as_deref()
    }

    /// The issuer (`iss`) of the token.
    pub fn issuer(&self) -> Option<&str> {
        self.issuer.as_deref()
    }

    /// The OAuth client the token was issued to (`client_id`, `azp` or `cid`).
    pub fn client_id(&self) -> Option<&str> {
        self.client_id.as_deref()
    }

    /// When the token expires, in seconds since the Unix epoch.
    pub fn expires_at(&self) -> Option<u64> {
        self.expires_at
    }

    /// Every claim of the token, for application-specific checks.
    pub fn claims(&self) -> &Map<String, Value> {
        &self.claims
    }

    /// The granted scopes (empty for [`Principal::local`], which holds all).
    pub fn scopes(&self) -> impl Iterator<Item = &str> {
        let set = match &self.scopes {
            Grant::All => None,
            Grant::Some(s) => Some(s),
        };
        set.into_iter().flatten().map(String::as_str)
    }

    /// Whether the token grants `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        match &self.scopes {
            Grant::All => true,
            Grant::Some(s) => s.contains(scope),
        }
    }

    /// The scopes of `required` this principal lacks (empty when it has them all).
    ///
    /// ```
    /// let p = duomcp::auth::Principal::new("bob").with_scopes(["a"]);
    /// assert_eq!(p.missing_scopes(&["a".into(), "b".into()]), ["b"]);
    /// ```
    pub fn missing_scopes<'a>(&self, required: &'a [String]) -> Vec<&'a str> {
        required
            .iter()
            .filter(|s| !self.has_scope(s))
            .map(String::as_str)
            .collect()
    }

    /// The principal with its scopes expanded through `hierarchy`.
    #[cfg_attr(not(all(feature = "auth", feature = "http-server")), allow(dead_code))]
    pub(crate) fn expanded(mut self, hierarchy: &crate::common::scope::ScopeHierarchy) -> Self {
        if let Grant::Some(set) = &mut self.scopes {
            if !hierarchy.is_empty() {
                *set = hierarchy.expand(std::mem::take(set));
            }
        }
        self
    }

    /// A stable identity for binding state (sessions, tasks, `requestState`) to this caller:
    /// issuer and subject, or issuer and client for tokens without a subject.
    pub fn key(&self) -> String {
        let iss = self.issuer.as_deref().unwrap_or("");
        match (&self.subject, &self.client_id) {
            (Some(sub), _) => format!("{iss}\u{1f}sub\u{1f}{sub}"),
            (None, Some(client)) => format!("{iss}\u{1f}client\u{1f}{client}"),
            (None, None) => format!("{iss}\u{1f}anonymous"),
        }
    }
}

impl FromCallParts for Principal {
    fn from_call_parts(parts: &CallParts) -> Result<Self, Rejection> {
        parts
            .ctx
            .principal()
            .cloned()
            .ok_or_else(|| Rejection("this call requires an authenticated caller".into()))
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
    fn keys_distinguish_subjects_clients_and_issuers() {
        let a = Principal::new("a").with_issuer("https://as");
        let b = Principal::new("a").with_issuer("https://other");
        let c = Principal::for_client("a").with_issuer("https://as");
        assert_ne!(a.key(), b.key());
        assert_ne!(a.key(), c.key());
        assert_eq!(a.key(), Principal::new("a").with_issuer("https://as").key());
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
