//! The seam between the HTTP client transport and authorization.
//!
//! The Streamable HTTP client asks an [`AuthProvider`] for the `Authorization` header of every
//! request, and tells it about `401`/`403` challenges so it can obtain (or step up) a token and
//! have the request retried. The OAuth 2.1 client of the `auth` module implements it; a fixed
//! bearer token ([`StaticToken`]) is the simplest implementation.

use std::future::Future;
use std::pin::Pin;

/// A boxed future, as returned by [`AuthProvider`] methods.
pub type AuthFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why authorization could not be obtained.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The authorization flow failed; the message says where.
    #[error("authorization failed: {0}")]
    Failed(String),
    /// The server keeps refusing the credentials (step-up retry limit reached).
    #[error("authorization refused after {attempts} attempts: {reason}")]
    Refused {
        /// How many times the request was retried with new credentials.
        attempts: u32,
        /// The last challenge or error.
        reason: String,
    },
}

/// A `401 Unauthorized` or `403 Forbidden` answer from the MCP server.
#[derive(Debug, Clone)]
pub struct Challenge<'a> {
    /// The MCP endpoint URL that answered.
    pub resource_url: &'a str,
    /// 401 or 403.
    pub status: u16,
    /// The raw `WWW-Authenticate` header values, if any.
    pub www_authenticate: Vec<&'a str>,
    /// The `DPoP-Nonce` header, when the server requires a nonce in DPoP proofs (RFC 9449 §9).
    pub dpop_nonce: Option<&'a str>,
}

/// Supplies credentials to the HTTP client transport.
pub trait AuthProvider: Send + Sync + 'static {
    /// The `Authorization` header value for a request to `resource_url` (e.g. `Bearer abc`),
    /// or `None` to send the request without one.
    fn authorization<'a>(
        &'a self,
        resource_url: &'a str,
    ) -> AuthFuture<'a, Result<Option<String>, AuthError>>;

    /// The authentication headers of a request (`method` and full `url`): by default the
    /// `Authorization` header from [`authorization`](Self::authorization). Providers that
    /// prove possession of a key (DPoP, RFC 9449) add a per-request `DPoP` proof here, so
    /// transports should prefer this method.
    fn request_headers<'a>(
        &'a self,
        method: &'a str,
        url: &'a str,
    ) -> AuthFuture<'a, Result<Vec<(String, String)>, AuthError>> {
        let _ = method;
        Box::pin(async move {
            Ok(match self.authorization(url).await? {
                Some(v) => vec![("Authorization".to_owned(), v)],
                None => Vec::new(),
            })
        })
    }

    /// Called when the server answers 401 or 403. Returns `Ok(true)` when new credentials were
    /// obtained and the request should be sent again (the transport then calls
    /// [`authorization`](Self::authorization) once more); `Ok(false)` gives up with the
    /// server's answer.
    fn on_challenge<'a>(
        &'a self,
        challenge: Challenge<'a>,
    ) -> AuthFuture<'a, Result<bool, AuthError>>;
}

/// A fixed bearer token (e.g. from the environment); never retries.
///
/// ```
/// use duomcp::client::auth::{AuthProvider, StaticToken};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let auth = StaticToken::new("s3cret");
/// assert_eq!(auth.authorization("https://example.com/mcp").await.unwrap().as_deref(), Some("Bearer s3cret"));
/// # });
/// ```
#[derive(Clone)]
pub struct StaticToken(String);

impl StaticToken {
    /// A provider that always sends `Authorization: Bearer <token>`.
    pub fn new(token: impl Into<String>) -> Self {
        StaticToken(token.into())
    }
}

impl std::fmt::Debug for StaticToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StaticToken(..)")
    }
}

impl AuthProvider for StaticToken {
    fn authorization<'a>(
        &'a self,
        _resource_url: &'a str,
    ) -> AuthFuture<'a, Result<Option<String>, AuthError>> {
        Box::pin(async move { Ok(Some(format!("Bearer {}", self.0))) })
    }

    fn on_challenge<'a>(
        &'a self,
        _challenge: Challenge<'a>,
    ) -> AuthFuture<'a, Result<bool, AuthError>> {
        Box::pin(async { Ok(false) })
    }
}
