//! Standard Webhooks signatures, as the MCP Events extension's webhook delivery uses them
//! (experimental, feature `events`): the secret (`whsec_…`), signing, and verifying a delivery
//! on the receiving end.
//!
//! A delivery carries `webhook-id`, `webhook-timestamp` (Unix seconds) and
//! `webhook-signature`: `v1,<base64 HMAC-SHA256(secret, id + "." + timestamp + "." + body)>`,
//! several space-separated while a secret is being rotated; the events extension adds
//! `X-MCP-Subscription-Id` so that a receiver can pick the secret before reading the body.
//!
//! ```
//! use duomcp::webhook::{Secret, Signed};
//!
//! // The client makes the secret and hands it over in `events/subscribe`.
//! let secret = Secret::generate();
//! let text = secret.expose();
//! assert!(text.starts_with("whsec_"));
//!
//! // The server signs each delivery...
//! let body = br#"{"eventId":"evt_1","name":"demo.tick","timestamp":"2026-12-07T00:00:00Z","data":{}}"#;
//! let signature = secret.sign("evt_1", 1_765_000_000, body);
//!
//! // ...and the receiver checks it against the raw body, within five minutes of its clock.
//! let receiver = Secret::parse(&text).expect("a whsec_ secret");
//! let signed = Signed { id: "evt_1", timestamp: "1765000000", signature: &signature };
//! assert!(receiver.verify(&signed, body, 1_765_000_010).is_ok());
//! assert!(receiver.verify(&signed, b"{}", 1_765_000_010).is_err());
//! assert!(receiver.verify(&signed, body, 1_765_009_999).is_err()); // too old
//! ```
//!
//! With feature `http-server`, `duomcp::webhook::receiver` is the receiving end as an HTTP
//! endpoint: secrets by subscription id, the verification challenge, retries dropped,
//! deliveries handed over a bounded channel.
//!
//! Written here rather than taken from the `standardwebhooks` crate, which does the same in a
//! similar amount of code but brings a second `base64` (0.21) and `time` into the tree; the
//! tests check these signatures against that crate.

#[cfg(feature = "http-server")]
pub mod receiver;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The header carrying the delivery's id (the `eventId` for an event).
pub const ID: &str = "webhook-id";
/// The header carrying the delivery's time, in Unix seconds.
pub const TIMESTAMP: &str = "webhook-timestamp";
/// The header carrying the signatures (`v1,<base64>`, space-separated).
pub const SIGNATURE: &str = "webhook-signature";
/// The events extension's header naming the subscription a delivery belongs to.
pub const SUBSCRIPTION_ID: &str = "x-mcp-subscription-id";
/// How far a delivery's timestamp may be from the receiver's clock (five minutes).
pub const TOLERANCE_SECS: i64 = 300;

const PREFIX: &str = "whsec_";
/// The bounds of a secret's decoded length, in bytes.
const MIN_BYTES: usize = 24;
const MAX_BYTES: usize = 64;

/// A Standard Webhooks signing secret: `whsec_` and the base64 of 24 to 64 random bytes.
/// Its `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    bytes: Vec<u8>,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(whsec_…)")
    }
}

/// Why a text is not a `whsec_` secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// It does not start with `whsec_`.
    #[error("a webhook secret starts with `whsec_`")]
    Prefix,
    /// What follows is not base64.
    #[error("a webhook secret is `whsec_` and base64")]
    Base64,
    /// It decodes to fewer than 24 or more than 64 bytes.
    #[error("a webhook secret holds 24 to 64 bytes, not {0}")]
    Length(usize),
}

/// Why a delivery did not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// `webhook-timestamp` is not a number of seconds.
    #[error("webhook-timestamp is not a Unix time")]
    BadTimestamp,
    /// `webhook-timestamp` is more than [`TOLERANCE_SECS`] from the receiver's clock.
    #[error("webhook-timestamp is more than five minutes from now")]
    Stale,
    /// No `v1` signature in the header matches.
    #[error("no webhook-signature matches")]
    Mismatch,
}

/// The signature headers of a delivery, as received.
#[derive(Debug, Clone, Copy)]
pub struct Signed<'a> {
    /// `webhook-id`.
    pub id: &'a str,
    /// `webhook-timestamp`.
    pub timestamp: &'a str,
    /// `webhook-signature`.
    pub signature: &'a str,
}

impl Secret {
    /// A new secret of 32 bytes from the operating system's random source.
    pub fn generate() -> Secret {
        let mut bytes = vec![0u8; 32];
        // Without an operating-system random source the secret is left empty, which no server
        // accepts (`whsec_` of 0 bytes): better than a guessable one. The same source makes
        // the server's session ids.
        if getrandom::fill(&mut bytes).is_err() {
            bytes.clear();
        }
        Secret { bytes }
    }

    /// Reads `whsec_<base64>`, checking the decoded length (24 to 64 bytes).
    pub fn parse(text: &str) -> Result<Secret, SecretError> {
        let b64 = text.strip_prefix(PREFIX).ok_or(SecretError::Prefix)?;
        let bytes = STANDARD.decode(b64).map_err(|_| SecretError::Base64)?;
        if !(MIN_BYTES..=MAX_BYTES).contains(&bytes.len()) {
            return Err(SecretError::Length(bytes.len()));
        }
        Ok(Secret { bytes })
    }

    /// The secret as text, `whsec_<base64>`: what a client sends in `events/subscribe` and a
    /// receiver is configured with. Keep it out of logs.
    pub fn expose(&self) -> String {
        format!("{PREFIX}{}", STANDARD.encode(&self.bytes))
    }

    fn mac(&self, id: &str, timestamp: &str, body: &[u8]) -> Hmac<Sha256> {
        // HMAC takes a key of any length.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.bytes)
            .unwrap_or_else(|_| <Hmac<Sha256> as Mac>::new(&Default::default()));
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.as_bytes());
        mac.update(b".");
        mac.update(body);
        mac
    }

    /// The `webhook-signature` value for a delivery: `v1,<base64>`.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let tag = self.mac(id, &timestamp.to_string(), body).finalize();
        format!("v1,{}", STANDARD.encode(tag.into_bytes()))
    }

    /// Checks a delivery: its timestamp within [`TOLERANCE_SECS`] of `now` (Unix seconds), and
    /// one of its `v1` signatures made with this secret over `id`, the timestamp and the raw
    /// `body` (compared in constant time).
    pub fn verify(&self, signed: &Signed<'_>, body: &[u8], now: i64) -> Result<(), VerifyError> {
        let at: i64 = signed
            .timestamp
            .trim()
            .parse()
            .map_err(|_| VerifyError::BadTimestamp)?;
        if at.abs_diff(now) > TOLERANCE_SECS.unsigned_abs() {
            return Err(VerifyError::Stale);
        }
        for candidate in signed.signature.split(' ') {
            let Some(b64) = candidate.strip_prefix("v1,") else {
                continue;
            };
            let Ok(tag) = STANDARD.decode(b64) else {
                continue;
            };
            if self
                .mac(signed.id, signed.timestamp.trim(), body)
                .verify_slice(&tag)
                .is_ok()
            {
                return Ok(());
            }
        }
        Err(VerifyError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_whsec_base64_of_24_to_64_bytes() {
        let s = Secret::generate();
        assert_eq!(Secret::parse(&s.expose()).as_ref(), Ok(&s));
        assert_ne!(Secret::generate(), s);
        assert_eq!(Secret::parse("abc").unwrap_err(), SecretError::Prefix);
        assert_eq!(Secret::parse("whsec_!!").unwrap_err(), SecretError::Base64);
        let short = format!("whsec_{}", STANDARD.encode([1u8; 23]));
        assert_eq!(Secret::parse(&short).unwrap_err(), SecretError::Length(23));
        let long = format!("whsec_{}", STANDARD.encode([1u8; 65]));
        assert_eq!(Secret::parse(&long).unwrap_err(), SecretError::Length(65));
        assert!(Secret::parse(&format!("whsec_{}", STANDARD.encode([1u8; 24]))).is_ok());
        assert!(!format!("{s:?}").contains(&s.expose()[6..]));
    }

    #[test]
    fn a_signature_covers_id_timestamp_and_body_and_rotation_lists_several() {
        let (a, b) = (Secret::generate(), Secret::generate());
        let body = b"{\"x\":1}";
        let sig = a.sign("msg_1", 1000, body);
        let ok = |id, ts, sig: &str, body: &[u8]| {
            a.verify(
                &Signed {
                    id,
                    timestamp: ts,
                    signature: sig,
                },
                body,
                1010,
            )
        };
        assert_eq!(ok("msg_1", "1000", &sig, body), Ok(()));
        assert_eq!(ok("msg_2", "1000", &sig, body), Err(VerifyError::Mismatch));
        assert_eq!(ok("msg_1", "1001", &sig, body), Err(VerifyError::Mismatch));
        assert_eq!(ok("msg_1", "1000", &sig, b"{}"), Err(VerifyError::Mismatch));
        assert_eq!(
            ok("msg_1", "soon", &sig, body),
            Err(VerifyError::BadTimestamp)
        );
        assert_eq!(ok("msg_1", "100", &sig, body), Err(VerifyError::Stale));
        // Rotation: the old and the new secret's signatures side by side.
        let both = format!("{} {}", b.sign("msg_1", 1000, body), sig);
        assert_eq!(ok("msg_1", "1000", &both, body), Ok(()));
        assert_eq!(
            ok("msg_1", "1000", &b.sign("msg_1", 1000, body), body),
            Err(VerifyError::Mismatch)
        );
        assert_eq!(
            ok("msg_1", "1000", "v2,abc v1,!!", body),
            Err(VerifyError::Mismatch)
        );
    }

    #[test]
    fn the_standard_webhooks_library_agrees_both_ways() {
        let secret = Secret::generate();
        let theirs = standardwebhooks::Webhook::new(&secret.expose()).expect("their parser");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs() as i64;
        let body = br#"{"eventId":"evt_9","name":"n","data":{"a":[1,2]}}"#;
        let mut headers = http::HeaderMap::new();
        headers.insert(ID, "evt_9".parse().expect("header"));
        headers.insert(TIMESTAMP, now.to_string().parse().expect("header"));
        let ours = secret.sign("evt_9", now, body);
        headers.insert(SIGNATURE, ours.parse().expect("header"));
        theirs
            .verify(body, &headers)
            .expect("they verify our signature");
        let tampered = br#"{"eventId":"evt_9","name":"n","data":{"a":[1,3]}}"#;
        assert!(theirs.verify(tampered, &headers).is_err());
        let signed_by_them = theirs.sign("evt_9", now, body).expect("they sign");
        let ts = now.to_string();
        let signed = Signed {
            id: "evt_9",
            timestamp: &ts,
            signature: &signed_by_them,
        };
        assert_eq!(secret.verify(&signed, body, now), Ok(()));
        assert_eq!(ours, signed_by_them);
    }
}
