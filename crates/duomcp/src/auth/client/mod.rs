//! The client half: [`OAuthClient`], an [`AuthProvider`] that obtains, stores and refreshes
//! tokens for MCP servers.

mod discovery;
mod flow;
mod keys;
mod redirect;
mod registration;
mod store;
mod token;

pub use keys::SigningKey;
pub use redirect::{AuthorizationResponse, HeadlessRedirect, LoopbackRedirect, RedirectHandler};
pub use store::{ClientRecord, FileTokenStore, MemoryTokenStore, StoredToken, TokenStore};

use crate::auth::challenge::ChallengeInfo;
use crate::auth::http as ahttp;
use crate::auth::split_scopes;
use crate::client::auth::{AuthError, AuthFuture, AuthProvider, Challenge};
use keys::{dpop_proof, now_secs};
use serde_json::json;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};
use token::{ClientAuth, TokenResponse};

/// Client credentials registered with an authorization server out of band.
#[derive(Clone)]
pub struct PreRegistered {
    client_id: String,
    client_secret: Option<String>,
    issuer: Option<String>,
    auth_method: Option<String>,
}

impl std::fmt::Debug for PreRegistered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreRegistered")
            .field("client_id", &self.client_id)
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl PreRegistered {
    /// A public client `client_id`, used with whichever authorization server the MCP server
    /// names (prefer [`issuer`](Self::issuer)).
    pub fn new(client_id: impl Into<String>) -> Self {
        PreRegistered {
            client_id: client_id.into(),
            client_secret: None,
            issuer: None,
            auth_method: None,
        }
    }

    /// The client secret (a confidential client).
    pub fn secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }

    /// The authorization server these credentials belong to; they are never sent to another.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Forces a token endpoint authentication method (`client_secret_basic`,
    /// `client_secret_post`, `none`); by default one the server supports is chosen.
    pub fn auth_method(mut self, method: impl Into<String>) -> Self {
        self.auth_method = Some(method.into());
        self
    }
}

/// How the client obtains tokens.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Grant {
    /// The authorization code flow with PKCE, through a [`RedirectHandler`] (the default).
    AuthorizationCode,
    /// `io.modelcontextprotocol/oauth-client-credentials`: machine-to-machine with
    /// pre-registered credentials, authenticated by a secret (`client_secret_basic` or
    /// `_post`) or a private key (`private_key_jwt`, RFC 7523).
    ClientCredentials {
        /// The client identifier.
        client_id: String,
        /// The client secret, or…
        secret: Option<String>,
        /// …the private key signing the client assertion.
        private_key: Option<SigningKey>,
    },
    /// The RFC 7523 JWT bearer grant with an assertion the client already holds (workload
    /// identity federation).
    JwtBearer {
        /// Sent as `client_id` when given (public client).
        client_id: Option<String>,
        /// The JWT presented as `assertion`.
        assertion: String,
    },
    /// `io.modelcontextprotocol/enterprise-managed-authorization`: the enterprise identity
    /// provider exchanges the user's ID token for an ID-JAG (RFC 8693), which the MCP
    /// authorization server exchanges for an access token (RFC 7523).
    EnterpriseManaged(EnterpriseManaged),
}

/// The settings of [`Grant::EnterpriseManaged`].
#[derive(Clone)]
pub struct EnterpriseManaged {
    /// The identity provider's token endpoint.
    pub idp_token_endpoint: String,
    /// This client at the identity provider.
    pub idp_client_id: String,
    /// Its secret there, if confidential.
    pub idp_client_secret: Option<String>,
    /// The ID token from the user's single sign-on.
    pub id_token: String,
    /// This client at the MCP server's authorization server.
    pub client_id: String,
    /// Its secret there.
    pub client_secret: Option<String>,
}

impl std::fmt::Debug for EnterpriseManaged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnterpriseManaged")
            .field("idp_token_endpoint", &self.idp_token_endpoint)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// `application_type` of Dynamic Client Registration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApplicationType {
    /// Desktop and command-line apps, and apps served from `localhost`.
    Native,
    /// Browser apps served from a remote host.
    Web,
}

/// An OAuth 2.1 client for MCP servers, usable as the HTTP transport's
/// [`AuthProvider`]: it runs the flow on the first `401`, steps up on `403
/// insufficient_scope`, and refreshes tokens before they expire.
///
/// ```no_run
/// use duomcp::auth::{FileTokenStore, LoopbackRedirect, OAuthClient};
/// use duomcp::client::Client;
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let oauth = OAuthClient::builder()
///     .client_name("my-agent")
///     .redirect(LoopbackRedirect::new(LoopbackRedirect::DEFAULT_PORT))
///     .store(FileTokenStore::new("/home/me/.config/my-agent/tokens.json"))
///     .build()?;
/// let client = Client::builder().auth(oauth).connect_http("https://mcp.example.com/mcp").await?;
/// # let _ = client; Ok(()) }
/// ```
#[derive(Clone)]
pub struct OAuthClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("client_name", &self.inner.client_name)
            .field("grant", &self.inner.grant)
            .finish_non_exhaustive()
    }
}

struct Inner {
    http: reqwest::Client,
    store: Arc<dyn TokenStore>,
    redirect: Option<Arc<dyn RedirectHandler>>,
    client_name: String,
    application_type: ApplicationType,
    client_metadata_url: Option<String>,
    pre_registered: Vec<PreRegistered>,
    extra_scopes: Vec<String>,
    refresh_tokens: bool,
    max_step_ups: u32,
    grant: Grant,
    dpop: Option<SigningKey>,
    allow_http: bool,
    state: tokio::sync::Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Scopes last requested, per endpoint.
    requested: HashMap<String, BTreeSet<String>>,
    /// Flows run for the same endpoint and challenged scopes, and when the last one ran.
    attempts: HashMap<(String, String), (u32, Instant)>,
    /// When the last refresh of an endpoint's token happened.
    refreshed: HashMap<String, Instant>,
    /// The token endpoint's DPoP nonce.
    as_nonce: Option<String>,
    /// The MCP server's DPoP nonce, per endpoint.
    rs_nonce: HashMap<String, String>,
}

/// Builds an [`OAuthClient`].
pub struct OAuthClientBuilder {
    store: Option<Arc<dyn TokenStore>>,
    redirect: Option<Arc<dyn RedirectHandler>>,
    client_name: String,
    application_type: ApplicationType,
    client_metadata_url: Option<String>,
    pre_registered: Vec<PreRegistered>,
    extra_scopes: Vec<String>,
    refresh_tokens: bool,
    max_step_ups: u32,
    grant: Grant,
    dpop: bool,
    allow_http: bool,
    timeout: Duration,
}

impl OAuthClient {
    /// Starts a configuration (authorization code flow, memory store, two step-ups at most).
    pub fn builder() -> OAuthClientBuilder {
        OAuthClientBuilder {
            store: None,
            redirect: None,
            client_name: "duomcp".into(),
            application_type: ApplicationType::Native,
            client_metadata_url: None,
            pre_registered: Vec::new(),
            extra_scopes: Vec::new(),
            refresh_tokens: true,
            max_step_ups: 2,
            grant: Grant::AuthorizationCode,
            dpop: false,
            allow_http: false,
            timeout: Duration::from_secs(30),
        }
    }
}

impl OAuthClientBuilder {
    /// Where tokens and registrations are kept (default: in memory).
    pub fn store(mut self, store: impl TokenStore) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// How the user is sent to the authorization server (authorization code flow).
    pub fn redirect(mut self, handler: impl RedirectHandler) -> Self {
        self.redirect = Some(Arc::new(handler));
        self
    }

    /// `client_name` for registration and metadata documents.
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// `application_type` sent in Dynamic Client Registration (default `native`).
    pub fn application_type(mut self, t: ApplicationType) -> Self {
        self.application_type = t;
        self
    }

    /// The HTTPS URL of this client's Client ID Metadata Document, used as `client_id` with
    /// authorization servers that support them.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Pre-registered credentials (tried before any other registration).
    pub fn pre_registered(mut self, client: PreRegistered) -> Self {
        self.pre_registered.push(client);
        self
    }

    /// Scopes requested on top of those the server asks for.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.extra_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Whether to ask for refresh tokens (`offline_access` when the authorization server lists
    /// it; `refresh_token` in registered grant types). Default on.
    pub fn refresh_tokens(mut self, want: bool) -> Self {
        self.refresh_tokens = want;
        self
    }

    /// How many times the same scope challenge may be answered with a new authorization
    /// before giving up (default 2).
    pub fn max_step_ups(mut self, n: u32) -> Self {
        self.max_step_ups = n;
        self
    }

    /// The grant (default [`Grant::AuthorizationCode`]).
    pub fn grant(mut self, grant: Grant) -> Self {
        self.grant = grant;
        self
    }

    /// Requests DPoP-bound tokens (RFC 9449) from authorization servers that support them,
    /// and proves possession on every request.
    pub fn dpop(mut self, on: bool) -> Self {
        self.dpop = on;
        self
    }

    /// Allows plain HTTP to hosts other than loopback (tests only).
    pub fn allow_insecure_http(mut self, allow: bool) -> Self {
        self.allow_http = allow;
        self
    }

    /// Timeout of each HTTP request (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Finishes the client.
    pub fn build(self) -> Result<OAuthClient, AuthError> {
        if matches!(self.grant, Grant::AuthorizationCode) && self.redirect.is_none() {
            return Err(AuthError::Failed(
                "the authorization code flow needs a redirect handler".into(),
            ));
        }
        if let Some(uri) = self.redirect.as_ref().map(|r| r.redirect_uri()) {
            if !(uri.starts_with("https://") || ahttp::is_loopback(&uri)) {
                return Err(AuthError::Failed(format!(
                    "the redirect URI `{uri}` must be HTTPS or on localhost"
                )));
            }
        }
        if let Some(url) = &self.client_metadata_url {
            let ok = url::Url::parse(url)
                .is_ok_and(|u| u.scheme() == "https" && u.path() != "/" && !u.path().is_empty());
            if !ok {
                return Err(AuthError::Failed(format!(
                    "a Client ID Metadata Document URL must be HTTPS with a path, not `{url}`"
                )));
            }
        }
        let dpop = if self.dpop {
            Some(SigningKey::generate_es256()?)
        } else {
            None
        };
        Ok(OAuthClient {
            inner: Arc::new(Inner {
                http: ahttp::client(self.timeout).map_err(AuthError::Failed)?,
                store: self
                    .store
                    .unwrap_or_else(|| Arc::new(MemoryTokenStore::new())),
                redirect: self.redirect,
                client_name: self.client_name,
                application_type: self.application_type,
                client_metadata_url: self.client_metadata_url,
                pre_registered: self.pre_registered,
                extra_scopes: self.extra_scopes,
                refresh_tokens: self.refresh_tokens,
                max_step_ups: self.max_step_ups,
                grant: self.grant,
                dpop,
                allow_http: self.allow_http,
                state: tokio::sync::Mutex::new(State::default()),
            }),
        })
    }
}

fn failed(msg: impl Into<String>) -> AuthError {
    AuthError::Failed(msg.into())
}

impl OAuthClient {
    /// Runs the whole flow for `endpoint` now, without waiting for a `401` (what
    /// `duomcp login` does): the server is asked for its challenge with an unauthenticated
    /// request first, so the scopes it names are requested.
    pub async fn login(&self, endpoint: &str) -> Result<StoredToken, AuthError> {
        let answer = ahttp::post_json(
            &self.inner.http,
            endpoint,
            &json!({"jsonrpc": "2.0", "id": 0, "method": "ping"}),
        )
        .await
        .ok();
        let values: Vec<String> = answer
            .as_ref()
            .map(|a| {
                a.headers
                    .get_all(http::header::WWW_AUTHENTICATE)
                    .iter()
                    .filter_map(|v| v.to_str().ok().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let info = ChallengeInfo::from_headers(values.iter().map(String::as_str));
        self.flow(endpoint, &info, false).await?;
        self.inner
            .store
            .load_token(endpoint)
            .await?
            .ok_or_else(|| failed("no token was stored"))
    }

    /// The token stored for `endpoint`, refreshed first when it is about to expire.
    async fn current_token(&self, endpoint: &str) -> Result<Option<StoredToken>, AuthError> {
        let Some(token) = self.inner.store.load_token(endpoint).await? else {
            return Ok(None);
        };
        let expiring = token.expires_at.is_some_and(|e| e <= now_secs() + 30);
        if !expiring {
            return Ok(Some(token));
        }
        if token.refresh_token.is_some() {
            if let Ok(t) = self.refresh(endpoint, &token).await {
                return Ok(Some(t));
            }
        }
        // Expired and not refreshable: let the server's 401 start a new flow.
        self.inner.store.remove_token(endpoint).await?;
        Ok(None)
    }

    /// Exchanges the refresh token for a new access token.
    async fn refresh(&self, endpoint: &str, old: &StoredToken) -> Result<StoredToken, AuthError> {
        let refresh = old
            .refresh_token
            .clone()
            .ok_or_else(|| failed("no refresh token"))?;
        let endpoint_url = old
            .token_endpoint
            .clone()
            .ok_or_else(|| failed("no token endpoint recorded"))?;
        let auth = self.refresh_auth(&old.issuer).await?;
        let mut form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh.clone()),
            ("resource", old.resource.clone()),
        ];
        if !old.scopes.is_empty() {
            form.push(("scope", old.scopes.join(" ")));
        }
        let response = self
            .token_request(&endpoint_url, &old.issuer, form, &auth)
            .await?;
        let mut stored = self.stored(
            response,
            old.resource.clone(),
            old.issuer.clone(),
            &endpoint_url,
            &old.scopes,
        )?;
        if stored.refresh_token.is_none() {
            // No rotation: the old refresh token stays valid.
            stored.refresh_token = Some(refresh);
        }
        self.inner
            .store
            .save_token(endpoint, stored.clone())
            .await?;
        self.inner
            .state
            .lock()
            .await
            .refreshed
            .insert(endpoint.to_owned(), Instant::now());
        Ok(stored)
    }

    /// The client authentication to use when refreshing a token from `issuer`.
    async fn refresh_auth(&self, issuer: &str) -> Result<ClientAuth, AuthError> {
        if let Some(auth) = self.grant_auth(|m| m == "client_secret_basic")? {
            return Ok(auth);
        }
        if let Some(p) = self.pre_registered_for(issuer) {
            return Ok(ClientAuth::choose(
                p.client_id.clone(),
                p.client_secret.clone(),
                p.auth_method.as_deref(),
                |m| m == "client_secret_basic",
            ));
        }
        if let Some(rec) = self.inner.store.load_client(issuer).await? {
            return Ok(ClientAuth::choose(
                rec.client_id,
                rec.client_secret,
                Some(&rec.token_endpoint_auth_method),
                |_| true,
            ));
        }
        match &self.inner.client_metadata_url {
            Some(url) => Ok(ClientAuth::None {
                client_id: url.clone(),
            }),
            None => Err(failed(format!("no client registration for `{issuer}`"))),
        }
    }

    fn pre_registered_for(&self, issuer: &str) -> Option<&PreRegistered> {
        let list = &self.inner.pre_registered;
        list.iter()
            .find(|p| p.issuer.as_deref() == Some(issuer))
            .or_else(|| list.iter().find(|p| p.issuer.is_none()))
    }

    /// The client authentication the configured machine grant prescribes, if any.
    fn grant_auth(
        &self,
        supported: impl Fn(&str) -> bool,
    ) -> Result<Option<ClientAuth>, AuthError> {
        Ok(match &self.inner.grant {
            Grant::AuthorizationCode => None,
            Grant::ClientCredentials {
                client_id,
                secret,
                private_key,
            } => Some(match (private_key, secret) {
                (Some(key), _) => ClientAuth::PrivateKeyJwt {
                    client_id: client_id.clone(),
                    key: key.clone(),
                },
                (None, Some(s)) => {
                    ClientAuth::choose(client_id.clone(), Some(s.clone()), None, supported)
                }
                (None, None) => {
                    return Err(failed("client credentials need a secret or a private key"))
                }
            }),
            Grant::JwtBearer { client_id, .. } => {
                client_id.clone().map(|c| ClientAuth::None { client_id: c })
            }
            Grant::EnterpriseManaged(e) => Some(ClientAuth::choose(
                e.client_id.clone(),
                e.client_secret.clone(),
                None,
                supported,
            )),
        })
    }

    async fn token_request(
        &self,
        endpoint: &str,
        issuer: &str,
        form: Vec<(&'static str, String)>,
        auth: &ClientAuth,
    ) -> Result<TokenResponse, AuthError> {
        match &self.inner.dpop {
            Some(key) => {
                let mut nonce = self.inner.state.lock().await.as_nonce.clone();
                let r = token::request(
                    &self.inner.http,
                    endpoint,
                    issuer,
                    form,
                    auth,
                    Some((key, &mut nonce)),
                )
                .await;
                self.inner.state.lock().await.as_nonce = nonce;
                r
            }
            None => token::request(&self.inner.http, endpoint, issuer, form, auth, None).await,
        }
    }

    fn stored(
        &self,
        response: TokenResponse,
        resource: String,
        issuer: String,
        token_endpoint: &str,
        requested: &[String],
    ) -> Result<StoredToken, AuthError> {
        let token_type = response
            .token_type
            .clone()
            .unwrap_or_else(|| "Bearer".into());
        let dpop = token_type.eq_ignore_ascii_case("dpop");
        if !(token_type.eq_ignore_ascii_case("bearer") || (dpop && self.inner.dpop.is_some())) {
            return Err(failed(format!("unsupported token type `{token_type}`")));
        }
        let scopes = match &response.scope {
            Some(s) => split_scopes(s).map(str::to_owned).collect(),
            None => requested.to_vec(),
        };
        Ok(StoredToken {
            resource,
            issuer,
            expires_at: response.expires_at(),
            access_token: response.access_token,
            token_type: if dpop { "DPoP".into() } else { "Bearer".into() },
            refresh_token: response.refresh_token,
            scopes,
            token_endpoint: Some(token_endpoint.to_owned()),
        })
    }

    /// Counts flows per endpoint and challenged scope set; `Err` once the limit is passed.
    async fn count_attempt(
        &self,
        endpoint: &str,
        scopes: &str,
        status: u16,
    ) -> Result<(), AuthError> {
        let mut st = self.inner.state.lock().await;
        let key = (endpoint.to_owned(), scopes.to_owned());
        let now = Instant::now();
        let entry = st.attempts.entry(key).or_insert((0, now));
        if entry.1.elapsed() > Duration::from_secs(600) {
            *entry = (0, now);
        }
        entry.0 += 1;
        entry.1 = now;
        // The first authorization plus `max_step_ups` more for the same challenge.
        if entry.0 > self.inner.max_step_ups + 1 {
            return Err(AuthError::Refused {
                attempts: entry.0 - 1,
                reason: format!(
                    "the server keeps answering {status}{}",
                    if scopes.is_empty() {
                        String::new()
                    } else {
                        format!(" for scope `{scopes}`")
                    }
                ),
            });
        }
        Ok(())
    }
}

impl AuthProvider for OAuthClient {
    fn authorization<'a>(
        &'a self,
        resource_url: &'a str,
    ) -> AuthFuture<'a, Result<Option<String>, AuthError>> {
        Box::pin(async move {
            Ok(self
                .current_token(resource_url)
                .await?
                .map(|t| format!("{} {}", t.token_type, t.access_token)))
        })
    }

    fn request_headers<'a>(
        &'a self,
        method: &'a str,
        url: &'a str,
    ) -> AuthFuture<'a, Result<Vec<(String, String)>, AuthError>> {
        Box::pin(async move {
            let Some(t) = self.current_token(url).await? else {
                return Ok(Vec::new());
            };
            let mut headers = vec![(
                "Authorization".to_owned(),
                format!("{} {}", t.token_type, t.access_token),
            )];
            if let (Some(key), true) = (&self.inner.dpop, t.token_type == "DPoP") {
                let nonce = self.inner.state.lock().await.rs_nonce.get(url).cloned();
                headers.push((
                    "DPoP".to_owned(),
                    dpop_proof(key, method, url, Some(&t.access_token), nonce.as_deref())?,
                ));
            }
            Ok(headers)
        })
    }

    fn on_challenge<'a>(
        &'a self,
        challenge: Challenge<'a>,
    ) -> AuthFuture<'a, Result<bool, AuthError>> {
        Box::pin(async move {
            let endpoint = challenge.resource_url;
            let info = ChallengeInfo::from_headers(challenge.www_authenticate.iter().copied());
            let step_up = challenge.status == 403;
            if step_up && info.error.as_deref() != Some("insufficient_scope") {
                // A plain refusal: new credentials will not help.
                return Ok(false);
            }
            if info.error.as_deref() == Some("use_dpop_nonce") {
                // RFC 9449 §9: retry once with the server's nonce in a fresh proof.
                let (Some(nonce), Some(_)) = (challenge.dpop_nonce, &self.inner.dpop) else {
                    return Ok(false);
                };
                let mut st = self.inner.state.lock().await;
                if st.rs_nonce.get(endpoint).map(String::as_str) == Some(nonce) {
                    return Ok(false);
                }
                st.rs_nonce.insert(endpoint.to_owned(), nonce.to_owned());
                return Ok(true);
            }
            // A 401 with a refreshable token: refresh first (once in a while).
            if !step_up {
                if let Some(old) = self.inner.store.load_token(endpoint).await? {
                    let recently = self
                        .inner
                        .state
                        .lock()
                        .await
                        .refreshed
                        .get(endpoint)
                        .is_some_and(|t| t.elapsed() < Duration::from_secs(10));
                    if old.refresh_token.is_some()
                        && !recently
                        && self.refresh(endpoint, &old).await.is_ok()
                    {
                        return Ok(true);
                    }
                    self.inner.store.remove_token(endpoint).await?;
                }
            }
            let challenged: BTreeSet<&str> = info
                .scope
                .as_deref()
                .map(|s| split_scopes(s).collect())
                .unwrap_or_default();
            let key = challenged.into_iter().collect::<Vec<_>>().join(" ");
            self.count_attempt(endpoint, &key, challenge.status).await?;
            self.flow(endpoint, &info, step_up).await?;
            Ok(true)
        })
    }
}
