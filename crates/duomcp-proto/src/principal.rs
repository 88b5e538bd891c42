//! [`Principal`]: who made a request, and what the token lets them do.

use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// The authenticated caller of a request: the subject of a validated access token and the
/// scopes it grants.
///
/// It is plain data: a server's authentication layer builds it from a validated token (and
/// expands its scopes through the server's scope hierarchy); handlers read it (in `duomcp`,
/// through `Context::principal`, or as an argument: `duomcp::server::Principal` is this
/// type).
///
/// ```
/// use duomcp_proto::principal::Principal;
/// let p = Principal::new("alice").with_issuer("https://as.example").with_scopes(["files:read"]);
/// assert_eq!(p.subject(), Some("alice"));
/// assert!(p.has_scope("files:read"));
/// ```
///
/// The raw access token is deliberately not part of it: a server never passes the client's
/// token on to upstream APIs.
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
    /// use duomcp_proto::principal::Principal;
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
    /// let p = duomcp_proto::principal::Principal::local();
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

    /// Grants every scope (as [`Principal::local`] has): a check of scopes never refuses it.
    ///
    /// ```
    /// use duomcp_proto::principal::Principal;
    /// let p = Principal::new("anonymous").with_all_scopes();
    /// assert!(p.missing_scopes(&["anything".to_owned()]).is_empty());
    /// ```
    pub fn with_all_scopes(mut self) -> Self {
        self.scopes = Grant::All;
        self
    }

    /// The principal with its granted scopes replaced by what `f` makes of them (a server
    /// expands them through its scope hierarchy this way); [`Principal::local`], which holds
    /// every scope, is returned unchanged.
    ///
    /// ```
    /// use duomcp_proto::principal::Principal;
    /// let p = Principal::new("alice").with_scopes(["files"]);
    /// let p = p.map_scopes(|mut s| {
    ///     s.insert("files:read".into());
    ///     s
    /// });
    /// assert!(p.has_scope("files") && p.has_scope("files:read"));
    /// ```
    pub fn map_scopes(mut self, f: impl FnOnce(BTreeSet<String>) -> BTreeSet<String>) -> Self {
        if let Grant::Some(set) = &mut self.scopes {
            *set = f(std::mem::take(set));
        }
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
    /// let p = duomcp_proto::principal::Principal::new("bob").with_scopes(["a"]);
    /// assert_eq!(p.missing_scopes(&["a".into(), "b".into()]), ["b"]);
    /// ```
    pub fn missing_scopes<'a>(&self, required: &'a [String]) -> Vec<&'a str> {
        required
            .iter()
            .filter(|s| !self.has_scope(s))
            .map(String::as_str)
            .collect()
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
    fn the_local_user_keeps_every_scope_when_scopes_are_mapped() {
        let p = Principal::local().map_scopes(|_| BTreeSet::new());
        assert!(p.has_scope("anything"));
        assert_eq!(p.scopes().count(), 0);
        let q = Principal::new("q")
            .with_scopes(["a"])
            .map_scopes(|_| BTreeSet::new());
        assert!(!q.has_scope("a"));
    }
}
