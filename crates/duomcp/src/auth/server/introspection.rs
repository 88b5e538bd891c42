//! [`IntrospectionValidator`]: opaque access tokens checked at the authorization server's
//! introspection endpoint (RFC 7662), with answers cached briefly.

use super::jwt::{principal_from_claims, ConfigError};
use super::validator::{TokenError, TokenValidator, ValidateFuture};
use crate::auth::http as ahttp;
use crate::auth::{Principal, ScopeHierarchy};
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Validates tokens by asking the authorization server (RFC 7662 introspection). A token is
/// accepted when the answer says `active: true`, its audience (`aud`) names this resource, and
/// (when configured) its issuer matches. Answers are cached for
/// [`cache_ttl`](IntrospectionValidatorBuilder::cache_ttl) (never past the token's `exp`),
/// keyed by a hash of the token.
///
/// ```
/// use duomcp::auth::IntrospectionValidator;
/// let validator = IntrospectionValidator::builder("https://auth.example.com/introspect", "https://mcp.example.com/mcp")
///     .client_credentials("mcp-server", "s3cret")
///     .build()
///     .unwrap();
/// # let _ = validator;
/// ```
#[derive(Clone)]
pub struct IntrospectionValidator {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for IntrospectionValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionValidator")
            .field("endpoint", &self.inner.endpoint)
            .field("audience", &self.inner.audience)
            .finish_non_exhaustive()
    }
}

struct Inner {
    endpoint: String,
    audience: String,
    issuer: Option<String>,
    credentials: Option<(String, String)>,
    require_audience: bool,
    cache_ttl: Duration,
    hierarchy: ScopeHierarchy,
    http: reqwest::Client,
    cache: Mutex<HashMap<String, Cached>>,
}

/// An answer and until when it may be reused.
type Cached = (Instant, Result<Principal, String>);

/// Builds an [`IntrospectionValidator`].
pub struct IntrospectionValidatorBuilder {
    endpoint: String,
    audience: String,
    issuer: Option<String>,
    credentials: Option<(String, String)>,
    require_audience: bool,
    cache_ttl: Duration,
    hierarchy: ScopeHierarchy,
    allow_http: bool,
    timeout: Duration,
}

/// Most cached introspection answers kept at once.
const MAX_CACHED: usize = 10_000;

impl IntrospectionValidator {
    /// A validator asking `endpoint` about tokens that must be meant for `audience` (this
    /// server's canonical resource URI).
    pub fn builder(
        endpoint: impl Into<String>,
        audience: impl Into<String>,
    ) -> IntrospectionValidatorBuilder {
        IntrospectionValidatorBuilder {
            endpoint: endpoint.into(),
            audience: audience.into(),
            issuer: None,
            credentials: None,
            require_audience: true,
            cache_ttl: Duration::from_secs(30),
            hierarchy: ScopeHierarchy::new(),
            allow_http: false,
            timeout: Duration::from_secs(10),
        }
    }
}

impl IntrospectionValidatorBuilder {
    /// Authenticates this server to the introspection endpoint (HTTP Basic).
    pub fn client_credentials(
        mut self,
        client_id: impl Into<String>,
        secret: impl Into<String>,
    ) -> Self {
        self.credentials = Some((client_id.into(), secret.into()));
        self
    }

    /// Requires `iss` in the answer to equal `issuer`.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Accepts answers without an `aud` member (some servers never send one). Answers with an
    /// `aud` that does not name this resource are always refused.
    pub fn accept_missing_audience(mut self) -> Self {
        self.require_audience = false;
        self
    }

    /// How long an answer is reused (default 30 s; `0` asks every time).
    pub fn cache_ttl(mut self, ttl: Duration) -> Self {
        self.cache_ttl = ttl;
        self
    }

    /// Expands granted scopes through this hierarchy.
    pub fn scope_hierarchy(mut self, hierarchy: ScopeHierarchy) -> Self {
        self.hierarchy = hierarchy;
        self
    }

    /// Allows a plain-HTTP endpoint on hosts other than loopback (tests only).
    pub fn allow_insecure_http(mut self, allow: bool) -> Self {
        self.allow_http = allow;
        self
    }

    /// Finishes the validator.
    pub fn build(self) -> Result<IntrospectionValidator, ConfigError> {
        ahttp::require_secure(&self.endpoint, self.allow_http, "introspection endpoint")
            .map_err(ConfigError)?;
        if self.audience.is_empty() {
            return Err(ConfigError(
                "an introspection validator needs an audience".into(),
            ));
        }
        Ok(IntrospectionValidator {
            inner: Arc::new(Inner {
                http: ahttp::client(self.timeout).map_err(ConfigError)?,
                endpoint: self.endpoint,
                audience: self.audience,
                issuer: self.issuer,
                credentials: self.credentials,
                require_audience: self.require_audience,
                cache_ttl: self.cache_ttl,
                hierarchy: self.hierarchy,
                cache: Mutex::new(HashMap::new()),
            }),
        })
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Form-urlencodes a Basic credential part (RFC 6749 §2.3.1).
fn basic_part(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

impl Inner {
    fn cached(&self, key: &str) -> Option<Result<Principal, String>> {
        let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let (until, answer) = cache.get(key)?;
        (Instant::now() < *until).then(|| answer.clone())
    }

    fn remember(&self, key: String, answer: &Result<Principal, String>) {
        if self.cache_ttl.is_zero() {
            return;
        }
        let mut ttl = self.cache_ttl;
        if let Ok(p) = answer {
            if let Some(exp) = p.expires_at() {
                ttl = ttl.min(Duration::from_secs(exp.saturating_sub(now_secs())));
            }
        }
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= MAX_CACHED {
            let now = Instant::now();
            cache.retain(|_, (until, _)| *until > now);
            if cache.len() >= MAX_CACHED {
                cache.clear();
            }
        }
        cache.insert(key, (Instant::now() + ttl, answer.clone()));
    }

    async fn validate(&self, token: &str) -> Result<Principal, TokenError> {
        let key = URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()));
        if let Some(answer) = self.cached(&key) {
            return answer.map_err(TokenError::Invalid);
        }
        let mut extra = Vec::new();
        if let Some((id, secret)) = &self.credentials {
            let pair = format!("{}:{}", basic_part(id), basic_part(secret));
            extra.push(("authorization", format!("Basic {}", STANDARD.encode(pair))));
        }
        let answer = ahttp::post_form(
            &self.http,
            &self.endpoint,
            &[("token", token), ("token_type_hint", "access_token")],
            &extra,
        )
        .await
        .map_err(TokenError::Unavailable)?;
        if !answer.status.is_success() {
            return Err(TokenError::Unavailable(format!(
                "the introspection endpoint answered {}",
                answer.status
            )));
        }
        let claims: Map<String, Value> = answer
            .json()
            .map_err(|e| TokenError::Unavailable(format!("introspection answer: {e}")))?;
        let verdict = self.judge(claims);
        self.remember(key, &verdict);
        verdict.map_err(TokenError::Invalid)
    }

    fn judge(&self, claims: Map<String, Value>) -> Result<Principal, String> {
        if claims.get("active").and_then(Value::as_bool) != Some(true) {
            return Err("the token is not active".into());
        }
        if let Some(exp) = claims.get("exp").and_then(Value::as_u64) {
            if exp <= now_secs() {
                return Err("the token has expired".into());
            }
        }
        if let Some(nbf) = claims.get("nbf").and_then(Value::as_u64) {
            if nbf > now_secs() + 60 {
                return Err("the token is not valid yet".into());
            }
        }
        match claims.get("aud") {
            Some(Value::String(a)) if *a == self.audience => {}
            Some(Value::Array(list)) if list.iter().any(|a| a.as_str() == Some(&self.audience)) => {
            }
            None if !self.require_audience => {}
            _ => return Err("the token was not issued for this resource".into()),
        }
        if let Some(iss) = &self.issuer {
            if claims.get("iss").and_then(Value::as_str) != Some(iss.as_str()) {
                return Err("the token's issuer is not trusted".into());
            }
        }
        Ok(principal_from_claims(claims, &self.hierarchy))
    }
}

impl TokenValidator for IntrospectionValidator {
    fn validate<'a>(&'a self, token: &'a str) -> ValidateFuture<'a> {
        Box::pin(self.inner.validate(token))
    }
}
