//! [`AuthLayer`]: the tower layer that authenticates requests to an MCP endpoint.

use super::{Inner, ResourceServer, TokenError};
use crate::auth::{join_scopes, Principal, WwwAuthenticate};
use crate::server::principal::ScopeChallenge;
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http::{HeaderMap, HeaderValue, StatusCode, Uri};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// Authenticates every request with the [`ResourceServer`]'s validator before it reaches the
/// wrapped service; see the [module docs](crate::auth) for the answers it gives.
///
/// ```
/// # use duomcp::auth::{ResourceServer, StaticTokens};
/// # use duomcp::server::Principal;
/// # let rs = ResourceServer::builder("https://mcp.example.com/mcp")
/// #     .authorization_server("https://auth.example.com")
/// #     .validator(StaticTokens::new()).build().unwrap();
/// let server = duomcp::server::Server::builder().build();
/// let app: axum::Router = server
///     .http_router()
///     .layer(rs.layer())
///     .merge(rs.metadata_router());
/// ```
#[derive(Clone, Debug)]
pub struct AuthLayer {
    pub(super) rs: ResourceServer,
}

impl<S> tower_layer::Layer<S> for AuthLayer {
    type Service = Auth<S>;

    fn layer(&self, inner: S) -> Auth<S> {
        Auth {
            inner,
            rs: self.rs.clone(),
        }
    }
}

/// The service [`AuthLayer`] produces.
#[derive(Clone, Debug)]
pub struct Auth<S> {
    inner: S,
    rs: ResourceServer,
}

type BoxFuture = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

impl<S> tower_service::Service<Request> for Auth<S>
where
    S: tower_service::Service<Request, Response = Response, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request) -> BoxFuture {
        // The clone that was polled ready serves this request (tower's contract).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let rs = self.rs.inner.clone();
        Box::pin(async move {
            let path = req.uri().path();
            if req.method() == http::Method::OPTIONS
                || path.starts_with("/.well-known/oauth-protected-resource")
                || public_card_path(&rs.metadata.resource, path)
            {
                return inner.call(req).await;
            }
            let no_header = !req.headers().contains_key(http::header::AUTHORIZATION);
            let (principal, anonymous) = match authenticate(&rs, req.headers(), req.uri()).await {
                Ok(p) => (p, false),
                Err(AuthRejection::Missing) if no_header && rs.anonymous.is_some() => {
                    match rs.anonymous.clone() {
                        Some(p) if p.missing_scopes(&rs.required).is_empty() => (p, true),
                        _ => return Ok(AuthRejection::Missing.into_response_for(&rs)),
                    }
                }
                Err(refusal) => return Ok(refusal.into_response_for(&rs)),
            };
            // The token stops here: nothing behind the layer can pass it on upstream.
            req.headers_mut().remove(http::header::AUTHORIZATION);
            req.extensions_mut().insert(Arc::new(principal));
            let mut res = inner.call(req).await?;
            if let Some(ScopeChallenge(scopes)) = res.extensions_mut().remove::<ScopeChallenge>() {
                // An anonymous caller has no token to step up: it is asked for one, with the
                // scopes this operation needs.
                let (status, challenge) = if anonymous {
                    let c = WwwAuthenticate::bearer()
                        .with("resource_metadata", &rs.metadata_url)
                        .with("scope", join_scopes(&scopes));
                    (StatusCode::UNAUTHORIZED, c.to_header_value())
                } else {
                    AuthRejection::InsufficientScope(scopes).challenge(&rs)
                };
                *res.status_mut() = status;
                if let Ok(v) = HeaderValue::from_str(&challenge) {
                    res.headers_mut().insert(http::header::WWW_AUTHENTICATE, v);
                }
            }
            Ok(res)
        })
    }
}

/// Whether `path` is one of the public documents of the Server Card (experimental, SEP-2127):
/// the card of the protected endpoint (`<its path>/server-card`) or the AI Catalog. They are
/// public by design and never carry more than the operator chose to publish.
fn public_card_path(resource: &str, path: &str) -> bool {
    if path == crate::transport::http::card::CATALOG_PATH {
        return true;
    }
    let after_scheme = resource.split_once("://").map_or(resource, |(_, r)| r);
    let endpoint = after_scheme.find('/').map_or("", |i| &after_scheme[i..]);
    let endpoint = endpoint.split(['?', '#']).next().unwrap_or("");
    path.strip_suffix("/server-card")
        .is_some_and(|p| p == endpoint.trim_end_matches('/'))
}

/// Why the authorization layer did not let a request through; it becomes the HTTP answer its
/// variant names (status, `WWW-Authenticate` challenge, a JSON body), and its
/// [`Display`](std::fmt::Display) is that body's `error_description`.
///
/// ```
/// use duomcp::auth::AuthRejection;
/// let r = AuthRejection::InsufficientScope(vec!["files:write".into()]);
/// assert_eq!(r.to_string(), "this operation needs: files:write");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthRejection {
    /// No bearer token (`401`, challenge without an error code).
    Missing,
    /// The request is malformed (`400 invalid_request`).
    Malformed(String),
    /// The token was refused by the validator (`401 invalid_token`).
    Invalid(String),
    /// The token lacks these scopes (`403 insufficient_scope`).
    InsufficientScope(Vec<String>),
    /// The token could not be checked (`503`).
    Unavailable(String),
}

impl AuthRejection {
    fn challenge(&self, rs: &Inner) -> (StatusCode, String) {
        let mut c = WwwAuthenticate::bearer();
        let scopes = |list: &[String]| join_scopes(list);
        let status = match self {
            AuthRejection::Missing => {
                c = c.with("resource_metadata", &rs.metadata_url);
                if !rs.challenge_scopes.is_empty() {
                    c = c.with("scope", scopes(&rs.challenge_scopes));
                }
                StatusCode::UNAUTHORIZED
            }
            AuthRejection::Invalid(why) => {
                c = c
                    .with("error", "invalid_token")
                    .with("error_description", why)
                    .with("resource_metadata", &rs.metadata_url);
                if !rs.challenge_scopes.is_empty() {
                    c = c.with("scope", scopes(&rs.challenge_scopes));
                }
                StatusCode::UNAUTHORIZED
            }
            AuthRejection::InsufficientScope(needed) => {
                c = c
                    .with("error", "insufficient_scope")
                    .with("scope", scopes(needed))
                    .with("resource_metadata", &rs.metadata_url)
                    .with(
                        "error_description",
                        format!("this operation needs: {}", scopes(needed)),
                    );
                StatusCode::FORBIDDEN
            }
            AuthRejection::Malformed(why) => {
                c = c
                    .with("error", "invalid_request")
                    .with("error_description", why)
                    .with("resource_metadata", &rs.metadata_url);
                StatusCode::BAD_REQUEST
            }
            AuthRejection::Unavailable(_) => {
                c = c.with("resource_metadata", &rs.metadata_url);
                StatusCode::SERVICE_UNAVAILABLE
            }
        };
        (status, c.to_header_value())
    }

    /// The OAuth error code of the answer's body.
    fn error_code(&self) -> &'static str {
        match self {
            AuthRejection::Missing | AuthRejection::Invalid(_) => "invalid_token",
            AuthRejection::Malformed(_) => "invalid_request",
            AuthRejection::InsufficientScope(_) => "insufficient_scope",
            AuthRejection::Unavailable(_) => "temporarily_unavailable",
        }
    }

    fn into_response_for(self, rs: &Inner) -> Response {
        let (status, challenge) = self.challenge(rs);
        let (error, description) = (self.error_code(), self.to_string());
        if let AuthRejection::Unavailable(why) = &self {
            tracing::warn!("token validation unavailable: {why}");
        }
        let body = serde_json::json!({ "error": error, "error_description": description });
        let mut res = Response::new(Body::from(body.to_string()));
        *res.status_mut() = status;
        let h = res.headers_mut();
        h.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Ok(v) = HeaderValue::from_str(&challenge) {
            h.insert(http::header::WWW_AUTHENTICATE, v);
        }
        if status == StatusCode::SERVICE_UNAVAILABLE {
            h.insert(http::header::RETRY_AFTER, HeaderValue::from_static("5"));
        }
        res
    }
}

/// RFC 6750 `b64token`: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
impl std::fmt::Display for AuthRejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthRejection::Missing => f.write_str("an access token is required"),
            AuthRejection::Malformed(why) | AuthRejection::Invalid(why) => f.write_str(why),
            AuthRejection::InsufficientScope(needed) => {
                write!(f, "this operation needs: {}", join_scopes(needed))
            }
            AuthRejection::Unavailable(_) => f.write_str("the token cannot be checked right now"),
        }
    }
}

impl std::error::Error for AuthRejection {}

/// The name the rejection had before (`duomcp::auth::Refusal`), kept so that code naming it
/// compiles.
#[doc(hidden)]
pub use AuthRejection as Refusal;

fn is_b64token(t: &str) -> bool {
    let body = t.trim_end_matches('=');
    !body.is_empty()
        && body
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"-._~+/".contains(&c))
}

pub(super) async fn authenticate(
    rs: &Inner,
    headers: &HeaderMap,
    uri: &Uri,
) -> Result<Principal, AuthRejection> {
    if let Some(q) = uri.query() {
        if url::form_urlencoded::parse(q.as_bytes()).any(|(k, _)| k == "access_token") {
            return Err(AuthRejection::Malformed(
                "access tokens are not accepted in the query string; use the Authorization header"
                    .into(),
            ));
        }
    }
    let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Err(AuthRejection::Missing);
    };
    if values.next().is_some() {
        return Err(AuthRejection::Malformed(
            "more than one Authorization header".into(),
        ));
    }
    let Ok(value) = value.to_str() else {
        return Err(AuthRejection::Malformed(
            "the Authorization header is not ASCII".into(),
        ));
    };
    let (scheme, token) = match value.split_once(' ') {
        Some((s, t)) => (s, t.trim_start_matches(' ')),
        None => (value, ""),
    };
    if !scheme.eq_ignore_ascii_case("Bearer") {
        // Another scheme carries no bearer token: ask for one.
        return Err(AuthRejection::Missing);
    }
    if !is_b64token(token) {
        return Err(AuthRejection::Malformed(
            "the bearer token is malformed".into(),
        ));
    }
    let principal = rs.validator.validate(token).await.map_err(|e| match e {
        TokenError::Invalid(why) => AuthRejection::Invalid(why),
        TokenError::Unavailable(why) => AuthRejection::Unavailable(why),
    })?;
    // Honour the scope hierarchy whatever the validator did.
    let principal = crate::server::principal::expand_scopes(principal, &rs.hierarchy);
    let missing = principal.missing_scopes(&rs.required);
    if !missing.is_empty() {
        return Err(AuthRejection::InsufficientScope(rs.required.clone()));
    }
    Ok(principal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b64token_syntax() {
        assert!(is_b64token("abc.DEF-_~+/=="));
        assert!(!is_b64token(""));
        assert!(!is_b64token("=="));
        assert!(!is_b64token("a b"));
        assert!(!is_b64token("a,b"));
        assert!(!is_b64token("a\"b"));
    }
}
