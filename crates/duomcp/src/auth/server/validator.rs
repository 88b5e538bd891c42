//! [`TokenValidator`]: how a resource server turns an access token into a [`Principal`].

use crate::auth::Principal;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;

/// The future a [`TokenValidator`] returns.
pub type ValidateFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Principal, TokenError>> + Send + 'a>>;

/// Why a token was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The token is malformed, forged, expired, for another resource or issuer, or revoked:
    /// `401` with `error="invalid_token"`.
    #[error("invalid token: {0}")]
    Invalid(String),
    /// The token could not be checked right now (keys or introspection unreachable): `503`.
    #[error("token validation unavailable: {0}")]
    Unavailable(String),
}

/// Validates access tokens for a resource server. Two implementations come with duomcp:
/// [`JwtValidator`](crate::auth::JwtValidator) (signed JWTs checked against the issuer's keys)
/// and [`IntrospectionValidator`](crate::auth::IntrospectionValidator) (RFC 7662). A
/// validator MUST check that the token was issued for this resource (its audience).
///
/// ```
/// use duomcp::auth::{TokenError, TokenValidator, ValidateFuture};
/// use duomcp::server::Principal;
/// struct OnlyAlice;
/// impl TokenValidator for OnlyAlice {
///     fn validate<'a>(&'a self, token: &'a str) -> ValidateFuture<'a> {
///         Box::pin(async move {
///             if token == "alice-token" {
///                 Ok(Principal::new("alice").with_scopes(["files:read"]))
///             } else {
///                 Err(TokenError::Invalid("unknown token".into()))
///             }
///         })
///     }
/// }
/// ```
pub trait TokenValidator: Send + Sync + 'static {
    /// Checks `token` and says who it belongs to.
    fn validate<'a>(&'a self, token: &'a str) -> ValidateFuture<'a>;
}

impl<V: TokenValidator + ?Sized> TokenValidator for std::sync::Arc<V> {
    fn validate<'a>(&'a self, token: &'a str) -> ValidateFuture<'a> {
        (**self).validate(token)
    }
}

/// A fixed table of tokens, for tests and development servers.
///
/// ```
/// use duomcp::auth::{StaticTokens, TokenValidator};
/// use duomcp::server::Principal;
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let tokens = StaticTokens::new().with("dev-token", Principal::new("dev").with_scopes(["mcp"]));
/// assert_eq!(tokens.validate("dev-token").await.unwrap().subject(), Some("dev"));
/// assert!(tokens.validate("other").await.is_err());
/// # });
/// ```
#[derive(Debug, Clone, Default)]
pub struct StaticTokens {
    tokens: HashMap<String, Principal>,
}

impl StaticTokens {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts `token` as `principal`.
    pub fn with(mut self, token: impl Into<String>, principal: Principal) -> Self {
        self.tokens.insert(token.into(), principal);
        self
    }
}

impl TokenValidator for StaticTokens {
    fn validate<'a>(&'a self, token: &'a str) -> ValidateFuture<'a> {
        let found = self.tokens.get(token).cloned();
        Box::pin(async move { found.ok_or_else(|| TokenError::Invalid("unknown token".into())) })
    }
}
