//! Client-side signing (JWS compact form with ring): `private_key_jwt` assertions and DPoP
//! proofs; PKCE and random values.

use crate::client::auth::AuthError;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, RsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// `n` random bytes, base64url without padding.
pub(crate) fn random_b64(n: usize) -> Result<String, AuthError> {
    let mut buf = vec![0u8; n];
    getrandom::fill(&mut buf)
        .map_err(|e| AuthError::Failed(format!("no randomness from the operating system: {e}")))?;
    Ok(URL_SAFE_NO_PAD.encode(buf))
}

/// base64url(SHA-256(`text`)): the PKCE `S256` challenge and the DPoP `ath`.
pub(crate) fn s256(text: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(text.as_bytes()))
}

/// A PKCE verifier (43 characters from 32 random bytes) and its `S256` challenge.
pub(crate) struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

impl Pkce {
    pub fn new() -> Result<Pkce, AuthError> {
        let verifier = random_b64(32)?;
        let challenge = s256(&verifier);
        Ok(Pkce {
            verifier,
            challenge,
        })
    }
}

pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A private key for signing JWTs: ES256 (P-256) or RS256.
#[derive(Clone)]
pub struct SigningKey {
    kind: Kind,
}

#[derive(Clone)]
enum Kind {
    Ec(Arc<EcdsaKeyPair>),
    Rsa(Arc<RsaKeyPair>),
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey({})", self.alg())
    }
}

fn pem_body(pem: &str) -> Result<(String, Vec<u8>), AuthError> {
    let mut label = String::new();
    let mut b64 = String::new();
    for line in pem.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("-----BEGIN ") {
            label = rest.trim_end_matches('-').to_owned();
        } else if line.starts_with("-----END ") {
            break;
        } else if !line.is_empty() && !label.is_empty() {
            b64.push_str(line);
        }
    }
    if label.is_empty() {
        return Err(AuthError::Failed("the private key is not PEM".into()));
    }
    let der = STANDARD
        .decode(b64)
        .map_err(|_| AuthError::Failed("the private key's PEM body is not base64".into()))?;
    Ok((label, der))
}

impl SigningKey {
    /// A fresh P-256 key (for DPoP).
    pub fn generate_es256() -> Result<SigningKey, AuthError> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| AuthError::Failed("cannot generate a P-256 key".into()))?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .map_err(|_| AuthError::Failed("cannot load the generated key".into()))?;
        Ok(SigningKey {
            kind: Kind::Ec(Arc::new(pair)),
        })
    }

    /// A key from a PKCS#8 PEM document (`-----BEGIN PRIVATE KEY-----`): P-256 for ES256, or
    /// RSA for RS256.
    ///
    /// ```
    /// let err = duomcp::auth::SigningKey::from_pkcs8_pem("not a key").unwrap_err();
    /// assert!(err.to_string().contains("PEM"));
    /// ```
    pub fn from_pkcs8_pem(pem: &str) -> Result<SigningKey, AuthError> {
        let (label, der) = pem_body(pem)?;
        if label != "PRIVATE KEY" {
            return Err(AuthError::Failed(format!(
                "the private key must be PKCS#8 (`BEGIN PRIVATE KEY`), not `{label}`"
            )));
        }
        let rng = SystemRandom::new();
        if let Ok(pair) = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng) {
            return Ok(SigningKey {
                kind: Kind::Ec(Arc::new(pair)),
            });
        }
        if let Ok(pair) = RsaKeyPair::from_pkcs8(&der) {
            return Ok(SigningKey {
                kind: Kind::Rsa(Arc::new(pair)),
            });
        }
        Err(AuthError::Failed(
            "the private key is neither a P-256 nor an RSA PKCS#8 key".into(),
        ))
    }

    /// `ES256` or `RS256`.
    pub fn alg(&self) -> &'static str {
        match self.kind {
            Kind::Ec(_) => "ES256",
            Kind::Rsa(_) => "RS256",
        }
    }

    /// The public key as a JWK (EC keys only; `None` for RSA).
    pub(crate) fn public_jwk(&self) -> Option<Value> {
        match &self.kind {
            Kind::Ec(pair) => {
                let p = pair.public_key().as_ref();
                // Uncompressed point: 0x04 || x || y.
                let (x, y) = (p.get(1..33)?, p.get(33..65)?);
                Some(json!({
                    "kty": "EC",
                    "crv": "P-256",
                    "x": URL_SAFE_NO_PAD.encode(x),
                    "y": URL_SAFE_NO_PAD.encode(y),
                }))
            }
            Kind::Rsa(_) => None,
        }
    }

    /// The RFC 7638 thumbprint of the public JWK.
    #[allow(dead_code)]
    pub(crate) fn thumbprint(&self) -> Option<String> {
        let jwk = self.public_jwk()?;
        let canonical = format!(
            r#"{{"crv":"{}","kty":"{}","x":"{}","y":"{}"}}"#,
            jwk["crv"].as_str()?,
            jwk["kty"].as_str()?,
            jwk["x"].as_str()?,
            jwk["y"].as_str()?
        );
        Some(URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes())))
    }

    /// Signs a JWT with `header` (to which `alg` is added) and `claims`.
    pub(crate) fn sign(&self, mut header: Value, claims: &Value) -> Result<String, AuthError> {
        header["alg"] = json!(self.alg());
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let rng = SystemRandom::new();
        let sig = match &self.kind {
            Kind::Ec(pair) => pair
                .sign(&rng, input.as_bytes())
                .map_err(|_| AuthError::Failed("signing failed".into()))?
                .as_ref()
                .to_vec(),
            Kind::Rsa(pair) => {
                let mut sig = vec![0u8; pair.public().modulus_len()];
                pair.sign(
                    &ring::signature::RSA_PKCS1_SHA256,
                    &rng,
                    input.as_bytes(),
                    &mut sig,
                )
                .map_err(|_| AuthError::Failed("signing failed".into()))?;
                sig
            }
        };
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig)))
    }
}

/// A DPoP proof (RFC 9449 §4) for `method url`, bound to `access_token` when given.
pub(crate) fn dpop_proof(
    key: &SigningKey,
    method: &str,
    url: &str,
    access_token: Option<&str>,
    nonce: Option<&str>,
) -> Result<String, AuthError> {
    let Some(jwk) = key.public_jwk() else {
        return Err(AuthError::Failed("DPoP needs an EC key".into()));
    };
    // `htu` is the URL without query and fragment.
    let htu = url.split(['?', '#']).next().unwrap_or(url);
    let mut claims = json!({
        "jti": random_b64(16)?,
        "htm": method,
        "htu": htu,
        "iat": now_secs(),
    });
    if let Some(token) = access_token {
        claims["ath"] = json!(s256(token));
    }
    if let Some(n) = nonce {
        claims["nonce"] = json!(n);
    }
    key.sign(json!({ "typ": "dpop+jwt", "jwk": jwk }), &claims)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_challenge_is_s256_of_the_verifier() {
        let p = Pkce::new().unwrap();
        assert_eq!(p.verifier.len(), 43);
        assert_eq!(p.challenge, s256(&p.verifier));
        // RFC 7636 appendix B.
        assert_eq!(
            s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        assert_ne!(Pkce::new().unwrap().verifier, p.verifier);
    }

    #[test]
    fn es256_signatures_verify_with_the_public_jwk() {
        let key = SigningKey::generate_es256().unwrap();
        let jwt = key
            .sign(
                json!({"typ": "JWT"}),
                &json!({"sub": "x", "exp": now_secs() + 60}),
            )
            .unwrap();
        let jwk: jsonwebtoken::jwk::Jwk =
            serde_json::from_value(key.public_jwk().unwrap()).unwrap();
        let dk = jsonwebtoken::DecodingKey::from_jwk(&jwk).unwrap();
        let mut v = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
        v.validate_aud = false;
        v.required_spec_claims.clear();
        assert!(jsonwebtoken::decode::<Value>(&jwt, &dk, &v).is_ok());
        let proof = dpop_proof(&key, "POST", "https://x/mcp?q=1", Some("tok"), Some("n")).unwrap();
        let claims: Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(proof.split('.').nth(1).unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(claims["htu"], "https://x/mcp");
        assert_eq!(claims["ath"], s256("tok"));
        assert_eq!(claims["nonce"], "n");
        assert_eq!(key.thumbprint().unwrap().len(), 43);
    }

    #[test]
    fn pem_errors_are_reported() {
        assert!(SigningKey::from_pkcs8_pem(
            "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----"
        )
        .is_err());
        assert!(SigningKey::from_pkcs8_pem(
            "-----BEGIN PRIVATE KEY-----\n!!!\n-----END PRIVATE KEY-----"
        )
        .is_err());
        assert!(SigningKey::from_pkcs8_pem(
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"
        )
        .is_err());
    }
}
