//! [`JwtValidator`]: access tokens that are signed JWTs (RFC 9068 style), checked against the
//! issuer's JSON Web Key Set, fetched and cached with rotation.

use super::validator::{TokenError, TokenValidator, ValidateFuture};
use crate::auth::http as ahttp;
use crate::auth::metadata::{authorization_server_metadata_urls, AuthorizationServerMetadata};
use crate::auth::{split_scopes, Principal, ScopeHierarchy};
use crate::clock::{Clock, SystemClock};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// Validates JWT access tokens: the signature against the issuer's keys, `iss` equal to the
/// configured issuer, `aud` containing this server's canonical resource URI (RFC 8707),
/// `exp` and `nbf` with a leeway; scopes come from `scope` (or `scp`).
///
/// Keys come from a JWKS URL, from the issuer's metadata (`jwks_uri`), or are given. Remote
/// key sets are cached ([`cache_ttl`](JwtValidatorBuilder::cache_ttl)) and fetched again when a
/// token names an unknown key id (rotation), at most once per
/// [`min_refresh_interval`](JwtValidatorBuilder::min_refresh_interval).
///
/// ```
/// use duomcp::auth::JwtValidator;
/// let validator = JwtValidator::builder("https://auth.example.com", "https://mcp.example.com/mcp")
///     .jwks_url("https://auth.example.com/.well-known/jwks.json")
///     .build()
///     .unwrap();
/// # let _ = validator;
/// ```
#[derive(Clone)]
pub struct JwtValidator {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for JwtValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtValidator")
            .field("issuer", &self.inner.issuer)
            .field("audience", &self.inner.audience)
            .finish_non_exhaustive()
    }
}

enum Source {
    Static,
    Url(String),
    Discover,
}

struct Inner {
    issuer: String,
    audience: String,
    algorithms: Vec<Algorithm>,
    leeway: Duration,
    clock: Arc<dyn Clock>,
    cache_ttl: Duration,
    min_refresh: Duration,
    hierarchy: ScopeHierarchy,
    source: Source,
    http: Option<reqwest::Client>,
    allow_http: bool,
    cache: RwLock<Cache>,
    fetching: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Cache {
    keys: Arc<Vec<Jwk>>,
    fetched: Option<Instant>,
    last_try: Option<Instant>,
    jwks_url: Option<String>,
    /// Counts fetches, so that waiters can tell one happened while they waited.
    generation: u64,
}

/// Builds a [`JwtValidator`].
pub struct JwtValidatorBuilder {
    issuer: String,
    audience: String,
    algorithms: Vec<Algorithm>,
    leeway: Duration,
    clock: Arc<dyn Clock>,
    cache_ttl: Duration,
    min_refresh: Duration,
    hierarchy: ScopeHierarchy,
    source: Option<Source>,
    keys: Vec<Jwk>,
    allow_http: bool,
    timeout: Duration,
}

/// Why a validator could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("authorization misconfigured: {0}")]
pub struct ConfigError(pub String);

impl JwtValidator {
    /// A validator for tokens from `issuer` meant for `audience` (this server's canonical
    /// resource URI, exactly as in its Protected Resource Metadata).
    pub fn builder(issuer: impl Into<String>, audience: impl Into<String>) -> JwtValidatorBuilder {
        JwtValidatorBuilder {
            issuer: issuer.into(),
            audience: audience.into(),
            algorithms: vec![
                Algorithm::RS256,
                Algorithm::RS384,
                Algorithm::RS512,
                Algorithm::PS256,
                Algorithm::PS384,
                Algorithm::PS512,
                Algorithm::ES256,
                Algorithm::ES384,
                Algorithm::EdDSA,
            ],
            leeway: Duration::from_secs(60),
            clock: Arc::new(SystemClock),
            cache_ttl: Duration::from_secs(600),
            min_refresh: Duration::from_secs(30),
            hierarchy: ScopeHierarchy::new(),
            source: None,
            keys: Vec::new(),
            allow_http: false,
            timeout: Duration::from_secs(10),
        }
    }
}

impl JwtValidatorBuilder {
    /// Fetches the keys from this JWKS URL.
    pub fn jwks_url(mut self, url: impl Into<String>) -> Self {
        self.source = Some(Source::Url(url.into()));
        self
    }

    /// Finds the JWKS URL in the issuer's metadata (`jwks_uri`), trying the OAuth and OpenID
    /// Connect well-known locations.
    pub fn discover_jwks(mut self) -> Self {
        self.source = Some(Source::Discover);
        self
    }

    /// Uses these keys (a JWKS document: `{"keys": [...]}`); keys it cannot use are skipped.
    pub fn jwks(mut self, jwks: &Value) -> Self {
        self.keys = parse_jwks(jwks);
        if self.source.is_none() {
            self.source = Some(Source::Static);
        }
        self
    }

    /// The signature algorithms accepted (default: the RSA, RSA-PSS, ECDSA and EdDSA ones;
    /// HMAC is never accepted for keys from a JWKS).
    pub fn algorithms(mut self, algorithms: impl IntoIterator<Item = Algorithm>) -> Self {
        self.algorithms = algorithms.into_iter().collect();
        self
    }

    /// Clock skew tolerated on `exp` and `nbf` (default 60 s).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// Where the time `exp` and `nbf` are compared with comes from (default: [`SystemClock`]);
    /// a [`ManualClock`](crate::clock::ManualClock) checks expiry without waiting.
    ///
    /// ```
    /// use duomcp::auth::JwtValidator;
    /// use duomcp::clock::ManualClock;
    /// let clock = ManualClock::new(1_800_000_000_000);
    /// let validator = JwtValidator::builder("https://auth.example.com", "https://mcp.example.com/mcp")
    ///     .jwks(&serde_json::json!({ "keys": [] }))
    ///     .clock(clock.clone())
    ///     .build();
    /// # let _ = validator;
    /// ```
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// How long fetched keys are trusted before being fetched again (default 10 minutes).
    pub fn cache_ttl(mut self, ttl: Duration) -> Self {
        self.cache_ttl = ttl;
        self
    }

    /// The shortest time between two fetches caused by unknown key ids (default 30 s).
    pub fn min_refresh_interval(mut self, interval: Duration) -> Self {
        self.min_refresh = interval;
        self
    }

    /// Expands granted scopes through this hierarchy.
    pub fn scope_hierarchy(mut self, hierarchy: ScopeHierarchy) -> Self {
        self.hierarchy = hierarchy;
        self
    }

    /// Allows plain-HTTP JWKS and metadata URLs on hosts other than loopback (tests only).
    pub fn allow_insecure_http(mut self, allow: bool) -> Self {
        self.allow_http = allow;
        self
    }

    /// Finishes the validator.
    pub fn build(self) -> Result<JwtValidator, ConfigError> {
        if self.issuer.is_empty() || self.audience.is_empty() {
            return Err(ConfigError(
                "a JWT validator needs an issuer and an audience".into(),
            ));
        }
        let algorithms: Vec<Algorithm> = self
            .algorithms
            .into_iter()
            .filter(|a| !matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512))
            .collect();
        if algorithms.is_empty() {
            return Err(ConfigError(
                "no asymmetric signature algorithm allowed".into(),
            ));
        }
        let source = self
            .source
            .ok_or_else(|| ConfigError("no keys: give jwks_url, discover_jwks or jwks".into()))?;
        let http = match source {
            Source::Static => None,
            Source::Url(ref url) => {
                ahttp::require_secure(url, self.allow_http, "JWKS URL").map_err(ConfigError)?;
                Some(ahttp::client(self.timeout).map_err(ConfigError)?)
            }
            Source::Discover => {
                ahttp::require_secure(&self.issuer, self.allow_http, "issuer")
                    .map_err(ConfigError)?;
                Some(ahttp::client(self.timeout).map_err(ConfigError)?)
            }
        };
        let fetched = matches!(source, Source::Static).then(Instant::now);
        Ok(JwtValidator {
            inner: Arc::new(Inner {
                issuer: self.issuer,
                audience: self.audience,
                algorithms,
                leeway: self.leeway,
                clock: self.clock,
                cache_ttl: self.cache_ttl,
                min_refresh: self.min_refresh,
                hierarchy: self.hierarchy,
                source,
                http,
                allow_http: self.allow_http,
                cache: RwLock::new(Cache {
                    keys: Arc::new(self.keys),
                    fetched,
                    last_try: None,
                    jwks_url: None,
                    generation: 0,
                }),
                fetching: tokio::sync::Mutex::new(()),
            }),
        })
    }
}

/// The usable keys of a JWKS document; keys of unknown types or meant for encryption are
/// skipped rather than failing the whole set.
fn parse_jwks(doc: &Value) -> Vec<Jwk> {
    let Some(keys) = doc.get("keys").and_then(Value::as_array) else {
        return Vec::new();
    };
    keys.iter()
        .filter_map(|k| serde_json::from_value::<Jwk>(k.clone()).ok())
        .filter(|k| !matches!(k.common.public_key_use, Some(PublicKeyUse::Encryption)))
        .filter(|k| !matches!(k.algorithm, AlgorithmParameters::OctetKey(_)))
        .collect()
}

fn family_matches(jwk: &Jwk, alg: Algorithm) -> bool {
    let family_ok = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => matches!(
            alg,
            Algorithm::RS256
                | Algorithm::RS384
                | Algorithm::RS512
                | Algorithm::PS256
                | Algorithm::PS384
                | Algorithm::PS512
        ),
        AlgorithmParameters::EllipticCurve(_) => {
            matches!(alg, Algorithm::ES256 | Algorithm::ES384)
        }
        AlgorithmParameters::OctetKeyPair(_) => alg == Algorithm::EdDSA,
        AlgorithmParameters::OctetKey(_) => false,
    };
    // A key that names its algorithm is only used with that algorithm.
    let alg_ok = jwk
        .common
        .key_algorithm
        .is_none_or(|k| format!("{k:?}") == format!("{alg:?}"));
    family_ok && alg_ok
}

/// Scopes from `scope` (space-separated string, or array) and `scp` (array or string).
pub(crate) fn claim_scopes(claims: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    for key in ["scope", "scp"] {
        match claims.get(key) {
            Some(Value::String(s)) => out.extend(split_scopes(s).map(str::to_owned)),
            Some(Value::Array(a)) => {
                out.extend(a.iter().filter_map(Value::as_str).map(str::to_owned))
            }
            _ => {}
        }
    }
    out
}

/// A principal from token claims (JWT payload or introspection response).
pub(crate) fn principal_from_claims(
    claims: Map<String, Value>,
    hierarchy: &ScopeHierarchy,
) -> Principal {
    let text = |k: &str| claims.get(k).and_then(Value::as_str).map(str::to_owned);
    let client = text("client_id")
        .or_else(|| text("azp"))
        .or_else(|| text("cid"));
    let mut p = match text("sub") {
        Some(sub) => Principal::new(sub),
        None => Principal::for_client(client.clone().unwrap_or_default()),
    };
    if let Some(c) = client {
        p = p.with_client_id(c);
    }
    if let Some(iss) = text("iss") {
        p = p.with_issuer(iss);
    }
    if let Some(exp) = claims.get("exp").and_then(Value::as_u64) {
        p = p.with_expiry(exp);
    }
    let scopes = hierarchy.expand(claim_scopes(&claims));
    p.with_scopes(scopes).with_claims(claims)
}

fn describe(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "the token has expired".into(),
        ErrorKind::ImmatureSignature => "the token is not valid yet".into(),
        ErrorKind::InvalidAudience => "the token was not issued for this resource".into(),
        ErrorKind::InvalidIssuer => "the token's issuer is not trusted".into(),
        ErrorKind::InvalidSignature => "the token's signature does not verify".into(),
        ErrorKind::MissingRequiredClaim(c) => format!("the token has no `{c}` claim"),
        ErrorKind::InvalidAlgorithm => "the token's algorithm does not match its key".into(),
        _ => "the token is malformed".into(),
    }
}

impl Inner {
    /// The cached keys, fetched first when stale (or when `force`, rate-limited).
    async fn keys(&self, force: bool) -> Result<Arc<Vec<Jwk>>, TokenError> {
        if matches!(self.source, Source::Static) {
            return Ok(self.read_cache().keys.clone());
        }
        let fresh = |c: &Cache| c.fetched.is_some_and(|t| t.elapsed() < self.cache_ttl);
        let may_retry = |c: &Cache| c.last_try.is_none_or(|t| t.elapsed() >= self.min_refresh);
        let generation = {
            let c = self.read_cache();
            if (!force && fresh(&c)) || (force && !may_retry(&c)) {
                return Ok(c.keys.clone());
            }
            c.generation
        };
        let _one_at_a_time = self.fetching.lock().await;
        {
            // Someone else fetched while we waited: use that.
            let c = self.read_cache();
            if c.generation != generation {
                return Ok(c.keys.clone());
            }
        }
        {
            let mut c = self.write_cache();
            c.last_try = Some(Instant::now());
            c.generation += 1;
        }
        match self.fetch().await {
            Ok(keys) => {
                let mut c = self.write_cache();
                c.keys = Arc::new(keys);
                c.fetched = Some(Instant::now());
                Ok(c.keys.clone())
            }
            Err(e) => {
                let c = self.read_cache();
                if c.keys.is_empty() {
                    Err(TokenError::Unavailable(e))
                } else {
                    tracing::warn!("JWKS refresh failed, keeping the cached keys: {e}");
                    Ok(c.keys.clone())
                }
            }
        }
    }

    fn read_cache(&self) -> std::sync::RwLockReadGuard<'_, Cache> {
        self.cache.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write_cache(&self) -> std::sync::RwLockWriteGuard<'_, Cache> {
        self.cache.write().unwrap_or_else(|p| p.into_inner())
    }

    async fn fetch(&self) -> Result<Vec<Jwk>, String> {
        let Some(http) = &self.http else {
            return Err("no HTTP client".into());
        };
        let url = match &self.source {
            Source::Url(u) => u.clone(),
            Source::Discover => {
                let known = self.read_cache().jwks_url.clone();
                match known {
                    Some(u) => u,
                    None => {
                        let u = self.discover(http).await?;
                        self.write_cache().jwks_url = Some(u.clone());
                        u
                    }
                }
            }
            Source::Static => return Err("static keys".into()),
        };
        let answer = ahttp::get(http, &url).await?;
        if !answer.status.is_success() {
            return Err(format!("JWKS `{url}` answered {}", answer.status));
        }
        let doc: Value = answer.json()?;
        Ok(parse_jwks(&doc))
    }

    async fn discover(&self, http: &reqwest::Client) -> Result<String, String> {
        for url in authorization_server_metadata_urls(&self.issuer)? {
            let Ok(answer) = ahttp::get(http, &url).await else {
                continue;
            };
            if !answer.status.is_success() {
                continue;
            }
            let Ok(meta) = answer.json::<AuthorizationServerMetadata>() else {
                continue;
            };
            if meta.issuer != self.issuer {
                continue;
            }
            if let Some(jwks) = meta.jwks_uri {
                ahttp::require_secure(&jwks, self.allow_http, "jwks_uri")?;
                return Ok(jwks);
            }
        }
        Err(format!(
            "no `jwks_uri` in the metadata of `{}`",
            self.issuer
        ))
    }

    async fn validate(&self, token: &str) -> Result<Principal, TokenError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| TokenError::Invalid("the token is not a well-formed JWT".into()))?;
        if !self.algorithms.contains(&header.alg) {
            return Err(TokenError::Invalid(format!(
                "the token's algorithm {:?} is not accepted",
                header.alg
            )));
        }
        let mut validation = Validation::new(header.alg);
        // `exp` and `nbf` are compared with this validator's clock below (jsonwebtoken reads
        // the system clock itself); `exp` stays required.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);

        let mut keys = self.keys(false).await?;
        let mut candidates = pick(&keys, header.kid.as_deref(), header.alg);
        if candidates.is_empty() && !matches!(self.source, Source::Static) {
            // An unknown key id: the issuer may have rotated its keys.
            keys = self.keys(true).await?;
            candidates = pick(&keys, header.kid.as_deref(), header.alg);
        }
        if candidates.is_empty() {
            return Err(TokenError::Invalid("no known key signed this token".into()));
        }
        let mut last = ErrorKind::InvalidSignature;
        for jwk in candidates {
            let Ok(key) = DecodingKey::from_jwk(jwk) else {
                continue;
            };
            match jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation) {
                Ok(data) => {
                    let claims = data.claims;
                    let Some(exp) = claims.get("exp").and_then(Value::as_u64) else {
                        return Err(TokenError::Invalid("the token has no numeric `exp`".into()));
                    };
                    // Expired once `exp` is more than the leeway behind; not valid yet while
                    // `nbf` (a NumericDate: any JSON number, RFC 7519 §2) is more than the
                    // leeway ahead. jsonwebtoken would let a fractional or non-numeric `nbf`
                    // pass unchecked; here it is compared, or refused.
                    let now = self.clock.now_ms() / 1000;
                    let leeway = self.leeway.as_secs();
                    if exp < now.saturating_sub(leeway) {
                        return Err(TokenError::Invalid(describe(&ErrorKind::ExpiredSignature)));
                    }
                    if let Some(nbf) = claims.get("nbf") {
                        let Some(nbf) = nbf.as_f64() else {
                            return Err(TokenError::Invalid(
                                "the token's `nbf` is not a number".into(),
                            ));
                        };
                        if nbf > now.saturating_add(leeway) as f64 {
                            return Err(TokenError::Invalid(describe(
                                &ErrorKind::ImmatureSignature,
                            )));
                        }
                    }
                    return Ok(principal_from_claims(claims, &self.hierarchy));
                }
                Err(e) => {
                    let kind = e.into_kind();
                    // A verified signature with bad claims says more than a key that did not fit.
                    if matches!(last, ErrorKind::InvalidSignature)
                        || !matches!(kind, ErrorKind::InvalidSignature)
                    {
                        last = kind;
                    }
                }
            }
        }
        Err(TokenError::Invalid(describe(&last)))
    }
}

fn pick<'a>(keys: &'a [Jwk], kid: Option<&str>, alg: Algorithm) -> Vec<&'a Jwk> {
    keys.iter()
        .filter(|k| match kid {
            Some(kid) => k.common.key_id.as_deref() == Some(kid),
            None => true,
        })
        .filter(|k| family_matches(k, alg))
        .take(8)
        .collect()
}

impl TokenValidator for JwtValidator {
    fn validate<'a>(&'a self, token: &'a str) -> ValidateFuture<'a> {
        Box::pin(self.inner.validate(token))
    }
}
