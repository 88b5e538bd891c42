//! Token endpoint requests: client authentication, DPoP proofs, and the answer.

use super::keys::{dpop_proof, now_secs, random_b64, SigningKey};
use crate::auth::http as ahttp;
use crate::client::auth::AuthError;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::json;

/// How the client authenticates at the token endpoint.
#[derive(Clone)]
pub(crate) enum ClientAuth {
    /// A public client: `client_id` in the body.
    None { client_id: String },
    /// HTTP Basic with the form-urlencoded id and secret (RFC 6749 §2.3.1).
    Basic { client_id: String, secret: String },
    /// `client_id` and `client_secret` in the body.
    Post { client_id: String, secret: String },
    /// RFC 7523 §2.2: a signed assertion (`iss` = `sub` = client id, `aud` = issuer).
    PrivateKeyJwt { client_id: String, key: SigningKey },
}

impl ClientAuth {
    pub fn client_id(&self) -> &str {
        match self {
            ClientAuth::None { client_id }
            | ClientAuth::Basic { client_id, .. }
            | ClientAuth::Post { client_id, .. }
            | ClientAuth::PrivateKeyJwt { client_id, .. } => client_id,
        }
    }

    /// A method for a client with `secret` (if any), among those the server lists.
    pub fn choose(
        client_id: String,
        secret: Option<String>,
        method: Option<&str>,
        supported: impl Fn(&str) -> bool,
    ) -> ClientAuth {
        match (secret, method) {
            (None, _) | (_, Some("none")) => ClientAuth::None { client_id },
            (Some(secret), Some("client_secret_post")) => ClientAuth::Post { client_id, secret },
            (Some(secret), Some("client_secret_basic")) => ClientAuth::Basic { client_id, secret },
            (Some(secret), _) => {
                if !supported("client_secret_basic") && supported("client_secret_post") {
                    ClientAuth::Post { client_id, secret }
                } else {
                    ClientAuth::Basic { client_id, secret }
                }
            }
        }
    }
}

fn basic_part(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A successful token response.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct TokenResponse {
    pub access_token: String,
    #[serde(default)]
    pub token_type: Option<String>,
    #[serde(default)]
    pub expires_in: Option<u64>,
    #[serde(default)]
    pub refresh_token: Option<String>,
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub issued_token_type: Option<String>,
}

impl TokenResponse {
    pub fn expires_at(&self) -> Option<u64> {
        self.expires_in.map(|s| now_secs() + s)
    }
}

#[derive(Deserialize)]
struct ErrorResponse {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// Posts `form` to `endpoint` with the client's authentication; with `dpop` a proof goes in
/// the `DPoP` header, and a `use_dpop_nonce` answer is retried once with the nonce.
pub(crate) async fn request(
    http: &reqwest::Client,
    endpoint: &str,
    issuer: &str,
    mut form: Vec<(&'static str, String)>,
    auth: &ClientAuth,
    dpop: Option<(&SigningKey, &mut Option<String>)>,
) -> Result<TokenResponse, AuthError> {
    let mut headers: Vec<(&str, String)> = Vec::new();
    match auth {
        ClientAuth::None { client_id } => {
            if !client_id.is_empty() {
                form.push(("client_id", client_id.clone()))
            }
        }
        ClientAuth::Basic { client_id, secret } => {
            let pair = format!("{}:{}", basic_part(client_id), basic_part(secret));
            headers.push(("authorization", format!("Basic {}", STANDARD.encode(pair))));
        }
        ClientAuth::Post { client_id, secret } => {
            form.push(("client_id", client_id.clone()));
            form.push(("client_secret", secret.clone()));
        }
        ClientAuth::PrivateKeyJwt { client_id, key } => {
            let now = now_secs();
            let claims = json!({
                "iss": client_id, "sub": client_id, "aud": issuer,
                "iat": now, "exp": now + 300, "jti": random_b64(16)?,
            });
            let assertion = key.sign(json!({ "typ": "JWT" }), &claims)?;
            form.push((
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
            ));
            form.push(("client_assertion", assertion));
        }
    }
    let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut dpop = dpop;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut h = headers.clone();
        if let Some((key, nonce)) = &dpop {
            h.push((
                "dpop",
                dpop_proof(key, "POST", endpoint, None, nonce.as_deref())?,
            ));
        }
        let answer = ahttp::post_form(http, endpoint, &pairs, &h)
            .await
            .map_err(|e| AuthError::Failed(format!("token request to {endpoint}: {e}")))?;
        if answer.status.is_success() {
            return answer
                .json::<TokenResponse>()
                .map_err(|e| AuthError::Failed(format!("token response: {e}")));
        }
        let err = answer.json::<ErrorResponse>().ok();
        if let (Some((_, nonce)), Some(e), Some(new)) =
            (&mut dpop, &err, answer.header("dpop-nonce"))
        {
            if e.error == "use_dpop_nonce" && attempt == 1 {
                **nonce = Some(new.to_owned());
                continue;
            }
        }
        return Err(AuthError::Failed(match err {
            Some(e) => format!(
                "the token endpoint refused: {}{}",
                e.error,
                e.error_description
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            ),
            None => format!("the token endpoint answered {}", answer.status),
        }));
    }
}
