//! Stand-ins for authorization tests: signing keys, a JWT-issuing authorization server, and
//! helpers to serve routers on 127.0.0.1:0.

#![allow(dead_code)]

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// A test RSA key (PKCS#1 DER) with its public modulus and exponent; test use only.
pub const RSA_DER_B64: &str = include_str!("rsa_der.b64");
pub const RSA_N: &str = include_str!("rsa_n.b64");
pub const RSA_E: &str = "AQAB";

/// A signing key and its public JWK.
#[derive(Clone)]
pub struct SigningKey {
    pub kid: String,
    pub alg: Algorithm,
    pub encoding: EncodingKey,
    pub jwk: Value,
}

impl SigningKey {
    /// A fresh P-256 key.
    pub fn es256(kid: &str) -> SigningKey {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let public = pair.public_key().as_ref();
        let (x, y) = (&public[1..33], &public[33..65]);
        SigningKey {
            kid: kid.to_owned(),
            alg: Algorithm::ES256,
            encoding: EncodingKey::from_ec_der(pkcs8.as_ref()),
            jwk: json!({
                "kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
                "x": URL_SAFE_NO_PAD.encode(x), "y": URL_SAFE_NO_PAD.encode(y),
            }),
        }
    }

    /// The fixed test RSA key.
    pub fn rs256(kid: &str) -> SigningKey {
        let der = STANDARD.decode(RSA_DER_B64.trim()).unwrap();
        SigningKey {
            kid: kid.to_owned(),
            alg: Algorithm::RS256,
            encoding: EncodingKey::from_rsa_der(&der),
            jwk: json!({ "kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": RSA_N.trim(), "e": RSA_E }),
        }
    }

    /// Signs `claims` (with this key's `kid`).
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        header.typ = Some("at+jwt".into());
        jsonwebtoken::encode(&header, claims, &self.encoding).unwrap()
    }
}

pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// An authorization server stand-in that publishes metadata and a JWKS (which tests may
/// rotate) and counts JWKS fetches.
#[derive(Clone)]
pub struct KeyServer {
    pub jwks: Arc<Mutex<Value>>,
    pub fetches: Arc<Mutex<usize>>,
}

impl KeyServer {
    pub fn new(keys: &[&SigningKey]) -> KeyServer {
        KeyServer {
            jwks: Arc::new(Mutex::new(jwks(keys))),
            fetches: Arc::new(Mutex::new(0)),
        }
    }

    pub fn set_keys(&self, keys: &[&SigningKey]) {
        *self.jwks.lock().unwrap() = jwks(keys);
    }

    pub fn fetch_count(&self) -> usize {
        *self.fetches.lock().unwrap()
    }

    /// Routes: `/.well-known/oauth-authorization-server` naming `issuer`, and `/jwks`.
    pub fn router(&self, issuer: String) -> axum::Router {
        let (jwks, fetches) = (self.jwks.clone(), self.fetches.clone());
        let meta = json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("{issuer}/token"),
            "jwks_uri": format!("{issuer}/jwks"),
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
        });
        axum::Router::new()
            .route(
                "/.well-known/oauth-authorization-server",
                axum::routing::get(move || {
                    let meta = meta.clone();
                    async move { json_response(meta) }
                }),
            )
            .route(
                "/jwks",
                axum::routing::get(move || {
                    let (jwks, fetches) = (jwks.clone(), fetches.clone());
                    async move {
                        *fetches.lock().unwrap() += 1;
                        let doc = jwks.lock().unwrap().clone();
                        json_response(doc)
                    }
                }),
            )
    }
}

pub fn jwks(keys: &[&SigningKey]) -> Value {
    json!({ "keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>() })
}

pub fn json_response(v: Value) -> axum::response::Response {
    let mut res = axum::response::Response::new(axum::body::Body::from(v.to_string()));
    res.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    res
}

/// Binds 127.0.0.1:0 and returns the listener and its base URL.
pub async fn bind() -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    (listener, url)
}

/// Serves `router` on `listener` in the background (HTTP/1.1), until the test ends.
pub fn serve(listener: tokio::net::TcpListener, router: axum::Router) {
    let service = hyper_util::service::TowerToHyperService::new(router);
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let service = service.clone();
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
}
