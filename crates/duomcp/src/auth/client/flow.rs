//! The flow after a challenge: discovery, the scopes to request, then the configured grant
//! (authorization code with PKCE and its response checks, client credentials, JWT bearer,
//! enterprise-managed), and the token stored.

use super::discovery::{self, Discovered};
use super::keys::{random_b64, Pkce};
use super::token::{self, ClientAuth, TokenResponse};
use super::{failed, AuthorizationResponse, EnterpriseManaged, Grant, OAuthClient};
use crate::auth::challenge::ChallengeInfo;
use crate::auth::split_scopes;
use crate::client::auth::AuthError;
use std::collections::BTreeSet;

impl OAuthClient {
    /// The scopes to request: the challenge's (with those requested before, so that nothing
    /// granted is lost), else those requested before, else the server's `scopes_supported`;
    /// plus configured extras, and `offline_access` when refresh tokens are wanted and the
    /// authorization server lists it (and never otherwise).
    fn select_scopes(
        &self,
        disc: &Discovered,
        challenged: Option<&str>,
        previous: Option<&BTreeSet<String>>,
    ) -> Vec<String> {
        let mut set: BTreeSet<String> = BTreeSet::new();
        match challenged.filter(|s| !s.trim().is_empty()) {
            Some(c) => {
                set.extend(split_scopes(c).map(str::to_owned));
                set.extend(previous.into_iter().flatten().cloned());
            }
            None => match previous.filter(|p| !p.is_empty()) {
                Some(p) => set.extend(p.iter().cloned()),
                None => set.extend(disc.scopes_supported.iter().flatten().cloned()),
            },
        }
        set.extend(self.inner.extra_scopes.iter().cloned());
        let as_offers_offline = disc
            .metadata
            .as_ref()
            .is_some_and(|m| m.supports_scope("offline_access"));
        set.remove("offline_access");
        if self.inner.refresh_tokens && as_offers_offline && !set.is_empty() {
            set.insert("offline_access".into());
        }
        set.into_iter().collect()
    }

    /// A flow for `endpoint` after a challenge: discovery, then the configured grant.
    pub(super) async fn flow(
        &self,
        endpoint: &str,
        info: &ChallengeInfo,
        step_up: bool,
    ) -> Result<(), AuthError> {
        let disc = discovery::discover(
            &self.inner.http,
            endpoint,
            info.resource_metadata.as_deref(),
            self.inner.allow_http,
        )
        .await?;
        let previous = {
            let st = self.inner.state.lock().await;
            st.requested.get(endpoint).cloned()
        };
        let previous = match previous {
            Some(p) => Some(p),
            None => self
                .inner
                .store
                .load_token(endpoint)
                .await?
                .filter(|t| t.issuer == disc.issuer)
                .map(|t| {
                    t.scopes
                        .into_iter()
                        .filter(|s| s != "offline_access")
                        .collect()
                }),
        };
        let _ = step_up;
        let scopes = self.select_scopes(&disc, info.scope.as_deref(), previous.as_ref());
        let response = match &self.inner.grant {
            Grant::AuthorizationCode => self.authorization_code(&disc, &scopes).await?,
            Grant::ClientCredentials { .. } => {
                let auth = self
                    .grant_auth(|m| disc.supports_auth_method(m))?
                    .ok_or_else(|| failed("no client credentials"))?;
                let mut form = vec![
                    ("grant_type", "client_credentials".to_owned()),
                    ("resource", disc.resource.clone()),
                ];
                if !scopes.is_empty() {
                    form.push(("scope", scopes.join(" ")));
                }
                self.token_request(&disc.token_endpoint, &disc.issuer, form, &auth)
                    .await?
            }
            Grant::JwtBearer {
                client_id,
                assertion,
            } => {
                let mut form = vec![
                    ("grant_type", JWT_BEARER.to_owned()),
                    ("assertion", assertion.clone()),
                    ("resource", disc.resource.clone()),
                ];
                if !scopes.is_empty() {
                    form.push(("scope", scopes.join(" ")));
                }
                // Without a client id the request carries no client authentication at all.
                let auth = ClientAuth::None {
                    client_id: client_id.clone().unwrap_or_default(),
                };
                self.token_request(&disc.token_endpoint, &disc.issuer, form, &auth)
                    .await?
            }
            Grant::EnterpriseManaged(e) => self.enterprise(&disc, e, &scopes).await?,
        };
        let stored = self.stored(
            response,
            disc.resource.clone(),
            disc.issuer.clone(),
            &disc.token_endpoint,
            &scopes,
        )?;
        self.inner.store.save_token(endpoint, stored).await?;
        self.inner.state.lock().await.requested.insert(
            endpoint.to_owned(),
            scopes
                .into_iter()
                .filter(|s| s != "offline_access")
                .collect(),
        );
        Ok(())
    }

    /// Enterprise-managed authorization: ID token → ID-JAG at the IdP → access token.
    async fn enterprise(
        &self,
        disc: &Discovered,
        e: &EnterpriseManaged,
        scopes: &[String],
    ) -> Result<TokenResponse, AuthError> {
        let idp_auth = ClientAuth::choose(
            e.idp_client_id.clone(),
            e.idp_client_secret.clone(),
            None,
            |_| true,
        );
        let mut form = vec![
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange".to_owned(),
            ),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:id-jag".to_owned(),
            ),
            ("audience", disc.issuer.clone()),
            ("resource", disc.resource.clone()),
            ("subject_token", e.id_token.clone()),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token".to_owned(),
            ),
        ];
        if !scopes.is_empty() {
            form.push(("scope", scopes.join(" ")));
        }
        let exchanged = token::request(
            &self.inner.http,
            &e.idp_token_endpoint,
            &disc.issuer,
            form,
            &idp_auth,
            None,
        )
        .await
        .map_err(|err| failed(format!("identity provider token exchange: {err}")))?;
        if exchanged
            .issued_token_type
            .as_deref()
            .is_some_and(|t| t != "urn:ietf:params:oauth:token-type:id-jag")
        {
            return Err(failed("the identity provider did not issue an ID-JAG"));
        }
        let auth = self
            .grant_auth(|m| disc.supports_auth_method(m))?
            .ok_or_else(|| failed("no client credentials for the authorization server"))?;
        let mut form = vec![
            ("grant_type", JWT_BEARER.to_owned()),
            ("assertion", exchanged.access_token),
            ("resource", disc.resource.clone()),
        ];
        if !scopes.is_empty() {
            form.push(("scope", scopes.join(" ")));
        }
        self.token_request(&disc.token_endpoint, &disc.issuer, form, &auth)
            .await
    }

    /// The authorization code flow with PKCE `S256`, `state`, `resource` and `iss` checks.
    async fn authorization_code(
        &self,
        disc: &Discovered,
        scopes: &[String],
    ) -> Result<TokenResponse, AuthError> {
        let redirect = self
            .inner
            .redirect
            .clone()
            .ok_or_else(|| failed("no redirect handler"))?;
        if let Some(m) = &disc.metadata {
            let s256 = m
                .code_challenge_methods_supported
                .as_ref()
                .is_some_and(|l| l.iter().any(|x| x == "S256"));
            if !s256 {
                return Err(failed(format!(
                    "the authorization server `{}` does not advertise PKCE S256 (code_challenge_methods_supported); refusing to proceed",
                    disc.issuer
                )));
            }
        }
        let authorization_endpoint = disc
            .authorization_endpoint
            .clone()
            .ok_or_else(|| failed("the authorization server has no authorization endpoint"))?;
        let redirect_uri = redirect.redirect_uri();
        let auth = self.client_for(disc, &redirect_uri).await?;
        let pkce = Pkce::new()?;
        let state = random_b64(24)?;
        let mut url = url::Url::parse(&authorization_endpoint)
            .map_err(|e| failed(format!("authorization endpoint: {e}")))?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", auth.client_id())
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("code_challenge", &pkce.challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state)
                .append_pair("resource", &disc.resource);
            if !scopes.is_empty() {
                q.append_pair("scope", &scopes.join(" "));
            }
        }
        let response = redirect.authorize(url.as_str()).await?;
        check_authorization_response(&response, &state, disc)?;
        let code = response
            .code
            .ok_or_else(|| failed("the authorization response has no code"))?;
        let form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", pkce.verifier),
            ("resource", disc.resource.clone()),
        ];
        self.token_request(&disc.token_endpoint, &disc.issuer, form, &auth)
            .await
    }
}

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// RFC 9207 and `state` checks on the authorization response, before the code is used.
fn check_authorization_response(
    r: &AuthorizationResponse,
    state: &str,
    disc: &Discovered,
) -> Result<(), AuthError> {
    if r.repeated {
        return Err(failed("the authorization response repeats a parameter"));
    }
    if r.state.as_deref() != Some(state) {
        return Err(failed(
            "the authorization response's state does not match; discarding it",
        ));
    }
    let advertised = disc
        .metadata
        .as_ref()
        .and_then(|m| m.authorization_response_iss_parameter_supported)
        .unwrap_or(false);
    match &r.iss {
        // Simple string comparison: no normalisation at all.
        Some(iss) if *iss != disc.issuer => {
            return Err(failed(format!(
                "the authorization response comes from issuer `{iss}`, not `{}`; discarding it",
                disc.issuer
            )))
        }
        None if advertised => return Err(failed(
            "the authorization server promises `iss` in its responses but sent none; discarding it",
        )),
        _ => {}
    }
    if let Some(e) = &r.error {
        return Err(failed(format!(
            "authorization refused: {e}{}",
            r.error_description
                .as_ref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        )));
    }
    Ok(())
}
