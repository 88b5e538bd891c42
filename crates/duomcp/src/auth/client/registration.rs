//! The client identity for the authorization code flow at an authorization server:
//! pre-registered, a stored registration, a Client ID Metadata Document, or Dynamic Client
//! Registration (RFC 7591).

use super::discovery::Discovered;
use super::token::ClientAuth;
use super::{failed, ApplicationType, ClientRecord, OAuthClient};
use crate::auth::http as ahttp;
use crate::client::auth::AuthError;
use serde_json::json;

impl OAuthClient {
    /// The client identity for `disc`'s authorization server: pre-registered, then a stored
    /// registration, then a Client ID Metadata Document, then Dynamic Client Registration.
    pub(super) async fn client_for(
        &self,
        disc: &Discovered,
        redirect_uri: &str,
    ) -> Result<ClientAuth, AuthError> {
        let supported = |m: &str| disc.supports_auth_method(m);
        if let Some(p) = self.pre_registered_for(&disc.issuer) {
            return Ok(ClientAuth::choose(
                p.client_id.clone(),
                p.client_secret.clone(),
                p.auth_method.as_deref(),
                supported,
            ));
        }
        if let Some(rec) = self.inner.store.load_client(&disc.issuer).await? {
            if rec.redirect_uris.iter().any(|u| u == redirect_uri) {
                return Ok(ClientAuth::choose(
                    rec.client_id,
                    rec.client_secret,
                    Some(&rec.token_endpoint_auth_method),
                    supported,
                ));
            }
        }
        let cimd = disc
            .metadata
            .as_ref()
            .and_then(|m| m.client_id_metadata_document_supported)
            .unwrap_or(false);
        if let (true, Some(url)) = (cimd, &self.inner.client_metadata_url) {
            return Ok(ClientAuth::None {
                client_id: url.clone(),
            });
        }
        let Some(registration) = &disc.registration_endpoint else {
            return Err(failed(format!(
                "the authorization server `{}` offers no way to register this client; configure pre-registered credentials",
                disc.issuer
            )));
        };
        self.register(disc, registration, redirect_uri, &supported)
            .await
    }

    /// Dynamic Client Registration (RFC 7591).
    async fn register(
        &self,
        disc: &Discovered,
        endpoint: &str,
        redirect_uri: &str,
        supported: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<ClientAuth, AuthError> {
        let method = ["none", "client_secret_basic", "client_secret_post"]
            .into_iter()
            .find(|m| supported(m))
            .unwrap_or("none");
        let mut grant_types = vec!["authorization_code"];
        if self.inner.refresh_tokens {
            grant_types.push("refresh_token");
        }
        let body = json!({
            "client_name": self.inner.client_name,
            "redirect_uris": [redirect_uri],
            "grant_types": grant_types,
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": match self.inner.application_type {
                ApplicationType::Native => "native",
                ApplicationType::Web => "web",
            },
        });
        let answer = ahttp::post_json(&self.inner.http, endpoint, &body)
            .await
            .map_err(|e| failed(format!("client registration: {e}")))?;
        if !answer.status.is_success() {
            let detail = String::from_utf8_lossy(&answer.body);
            return Err(failed(format!(
                "client registration refused ({}): {}",
                answer.status,
                detail.chars().take(300).collect::<String>()
            )));
        }
        #[derive(serde::Deserialize)]
        struct Registered {
            client_id: String,
            #[serde(default)]
            client_secret: Option<String>,
            #[serde(default)]
            token_endpoint_auth_method: Option<String>,
        }
        let reg: Registered = answer
            .json()
            .map_err(|e| failed(format!("client registration answer: {e}")))?;
        let method = reg
            .token_endpoint_auth_method
            .clone()
            .unwrap_or_else(|| method.to_owned());
        let record = ClientRecord {
            issuer: disc.issuer.clone(),
            client_id: reg.client_id,
            client_secret: reg.client_secret,
            token_endpoint_auth_method: method,
            redirect_uris: vec![redirect_uri.to_owned()],
        };
        self.inner.store.save_client(record.clone()).await?;
        Ok(ClientAuth::choose(
            record.client_id,
            record.client_secret,
            Some(&record.token_endpoint_auth_method),
            supported,
        ))
    }
}
