//! Sealing `requestState` for the 2026-07-28 multi-round-trip flow (MRTR).
//!
//! `requestState` travels through the client and comes back on the retry, so it is
//! attacker-controlled. The server seals it with HMAC-SHA256 and binds it to the method, the
//! target (tool or prompt name with a digest of its arguments, resource URI), the principal
//! and an expiry. The payload also carries the answers of earlier rounds, so a handler sees
//! every answer it has been given, not just the latest round's, and how many rounds there
//! were (bounded by the server's `max_input_rounds`).
//!
//! A token is `v2.KEYID.PAYLOAD.TAG`: `KEYID` names the key of the [`Keyring`](crate::keyring::Keyring) that sealed it
//! (the ring's newest), so a replica holding older keys behind a newer one still opens it.
//!
//! Pure functions: the time is passed in (`now_ms`, milliseconds since the Unix epoch, to
//! [`unseal`]; the expiry is a field of [`SealedState`]), and keys are bytes passed in
//! ([`SealingKey::from_bytes`]); a random key is the runtime's to make
//! (`duomcp::server::SealingKeyExt::random`).
//!
//! ```
//! use duomcp_proto::request_state::{seal, unseal, SealedState, SealingKey, StateRejection};
//! let key = SealingKey::from_bytes([7; 32]);
//! let state = SealedState {
//!     m: "tools/call".into(),
//!     t: "t".into(),
//!     e: 1_000,
//!     p: None,
//!     r: Default::default(),
//!     u: Some(3.into()),
//!     n: 1,
//! };
//! let token = seal(&key, &state);
//! assert_eq!(unseal(&key, &token, 999, "tools/call", "t", None), Ok(state));
//! assert_eq!(
//!     unseal(&key, &token, 1_001, "tools/call", "t", None),
//!     Err(StateRejection::Expired)
//! );
//! ```

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::Sha256;

const VERSION_TAG: &str = "v2";

/// A 256-bit key for sealing `requestState`. Replicas that share traffic must share the key.
///
/// `duomcp` adds `random()` (the operating system's generator) with its
/// `duomcp::server::SealingKeyExt`; this crate makes keys from bytes only.
#[derive(Clone)]
pub struct SealingKey([u8; 32]);

impl SealingKey {
    /// A key from fixed bytes (configuration shared by several replicas).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        SealingKey(bytes)
    }

    /// A key from key material of any length (a keyring file's line: at least 32 bytes):
    /// 32 bytes are the key as they are; other lengths are hashed to 32 with SHA-256.
    pub fn derive(material: &[u8]) -> Self {
        use sha2::Digest as _;
        match <[u8; 32]>::try_from(material) {
            Ok(k) => SealingKey(k),
            Err(_) => SealingKey(Sha256::digest(material).into()),
        }
    }

    /// The key's id in sealed states: 8 URL-safe characters from a hash of the key (the key
    /// cannot be recovered from it).
    pub fn id(&self) -> String {
        use sha2::Digest as _;
        let mut h = Sha256::new();
        h.update(b"duomcp requestState key id\0");
        h.update(self.0);
        URL_SAFE_NO_PAD.encode(&h.finalize()[..6])
    }

    /// The key's bytes, standard base64 (to keep it in a shared store).
    pub fn to_base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.0)
    }

    fn mac(&self) -> Hmac<Sha256> {
        // HMAC accepts keys of any length, so this cannot fail.
        match Hmac::<Sha256>::new_from_slice(&self.0) {
            Ok(m) => m,
            Err(_) => unreachable_mac(),
        }
    }
}

#[cold]
fn unreachable_mac() -> Hmac<Sha256> {
    // `new_from_slice` only fails for fixed-size-key MACs; HMAC is not one.
    <Hmac<Sha256> as hmac::digest::KeyInit>::new(&Default::default())
}

impl std::fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealingKey(..)")
    }
}

/// What a sealed `requestState` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SealedState {
    /// Method the state belongs to.
    pub m: String,
    /// Target: tool or prompt name, or resource URI.
    pub t: String,
    /// Expiry, milliseconds since the Unix epoch.
    pub e: u64,
    /// Principal the state was issued to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<String>,
    /// Answers collected in earlier rounds, by input key.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub r: Map<String, Value>,
    /// The handler's own state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub u: Option<Value>,
    /// Rounds of input so far: 1 for the state of the first `InputRequiredResult`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub n: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Keys that seal and open: one [`SealingKey`], or a [`Keyring`](crate::keyring::Keyring).
pub trait Keys {
    /// The key that seals now, with its id.
    fn sealing(&self) -> (String, SealingKey);
    /// The key named `id`, if held.
    fn opening(&self, id: &str) -> Option<SealingKey>;
}

impl Keys for SealingKey {
    fn sealing(&self) -> (String, SealingKey) {
        (self.id(), self.clone())
    }
    fn opening(&self, id: &str) -> Option<SealingKey> {
        (self.id() == id).then(|| self.clone())
    }
}

fn mac_of(key: &SealingKey, id: &str, payload: &str) -> Hmac<Sha256> {
    let mut mac = key.mac();
    mac.update(VERSION_TAG.as_bytes());
    mac.update(b".");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(payload.as_bytes());
    mac
}

/// `state` sealed with the sealing key of `keys`: `v2.KEYID.PAYLOAD.TAG`, where `PAYLOAD` is
/// the URL-safe base64 of the state's JSON and `TAG` the HMAC-SHA256 of `v2.KEYID.PAYLOAD`.
pub fn seal(keys: &impl Keys, state: &SealedState) -> String {
    let json = serde_json::to_vec(state).unwrap_or_default();
    let payload = URL_SAFE_NO_PAD.encode(json);
    let (id, key) = keys.sealing();
    let tag = URL_SAFE_NO_PAD.encode(mac_of(&key, &id, &payload).finalize().into_bytes());
    format!("{VERSION_TAG}.{id}.{payload}.{tag}")
}

/// Why a `requestState` was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateRejection {
    /// Not a token of this format (parts, version, base64 or payload).
    Malformed,
    /// The tag does not verify, or no key of the ring has the token's key id.
    BadSignature,
    /// Sealed for another method, target or principal.
    WrongTarget,
    /// Its expiry is before the time given.
    Expired,
}

impl StateRejection {
    /// The text the refusal is reported with (after `Invalid params: `).
    pub fn message(self) -> &'static str {
        match self {
            StateRejection::Malformed => "requestState is malformed",
            StateRejection::BadSignature => "requestState failed its integrity check",
            StateRejection::WrongTarget => "requestState was issued for another request",
            StateRejection::Expired => "requestState has expired",
        }
    }
}

/// The state `token` holds, if one of `keys` sealed it, it was sealed for `method`, `target`
/// and `principal`, and its expiry is not before `now_ms` (milliseconds since the Unix epoch,
/// the caller's clock).
pub fn unseal(
    keys: &impl Keys,
    token: &str,
    now_ms: u64,
    method: &str,
    target: &str,
    principal: Option<&str>,
) -> Result<SealedState, StateRejection> {
    let mut parts = token.split('.');
    let (Some(tag_v), Some(id), Some(payload), Some(tag), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return Err(StateRejection::Malformed);
    };
    if tag_v != VERSION_TAG {
        return Err(StateRejection::Malformed);
    }
    let tag = URL_SAFE_NO_PAD
        .decode(tag)
        .map_err(|_| StateRejection::Malformed)?;
    // A key this replica does not hold (retired, or another deployment's) is a failed check.
    let key = keys.opening(id).ok_or(StateRejection::BadSignature)?;
    mac_of(&key, id, payload)
        .verify_slice(&tag)
        .map_err(|_| StateRejection::BadSignature)?;
    let json = URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|_| StateRejection::Malformed)?;
    let state: SealedState =
        serde_json::from_slice(&json).map_err(|_| StateRejection::Malformed)?;
    if state.m != method || state.t != target || state.p.as_deref() != principal {
        return Err(StateRejection::WrongTarget);
    }
    if state.e < now_ms {
        return Err(StateRejection::Expired);
    }
    Ok(state)
}

/// The target a `tools/call` or `prompts/get` state is sealed to: the tool's or prompt's name
/// and a SHA-256 digest of its arguments (without `_meta`, keys sorted at every depth, so key
/// order does not matter). A retry with other arguments then fails the target check: the MRTR
/// text says servers SHOULD bind the state to the salient parameters of the request, and the
/// arguments are what its answers were given for (a confirmation for `a.txt` is not one for
/// `/etc/important`). (`resources/read` has one salient parameter, its URI, which is the
/// target as it is.)
pub fn bind_arguments(tool: &str, arguments: Option<&Value>) -> String {
    use sha2::Digest as _;
    let mut text = Vec::new();
    match arguments {
        Some(Value::Object(map)) => canonical_object(map, true, &mut text),
        Some(other) => canonical(other, &mut text),
        None => text.extend_from_slice(b"{}"),
    }
    let digest = Sha256::digest(&text);
    format!("{tool}#{}", URL_SAFE_NO_PAD.encode(digest))
}

/// JSON text of `v` with object keys sorted at every depth.
fn canonical(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Object(map) => canonical_object(map, false, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical(item, out);
            }
            out.push(b']');
        }
        scalar => {
            // Scalars always serialize.
            let _ = serde_json::to_writer(&mut *out, scalar);
        }
    }
}

/// An object's canonical text (keys sorted), without its `_meta` member when `skip_meta`.
/// Read in place: nothing of the object is copied.
fn canonical_object(map: &Map<String, Value>, skip_meta: bool, out: &mut Vec<u8>) {
    let mut members: Vec<(&String, &Value)> = map
        .iter()
        .filter(|(k, _)| !(skip_meta && k.as_str() == "_meta"))
        .collect();
    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push(b'{');
    for (i, (k, value)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        // A string always serializes.
        let _ = serde_json::to_writer(&mut *out, k.as_str());
        out.push(b':');
        canonical(value, out);
    }
    out.push(b'}');
}

#[cfg(test)]
mod props;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyring::Keyring;

    fn state() -> SealedState {
        SealedState {
            m: "tools/call".into(),
            t: "t".into(),
            e: 1_000,
            p: None,
            r: Map::new(),
            u: Some(Value::from(3)),
            n: 2,
        }
    }

    #[test]
    fn the_canonical_text_sorts_keys_at_every_depth_and_drops_only_the_top_meta() {
        let v = serde_json::json!({
            "b": [{"d": 1, "c": "x\"y"}, [2, {"f": true, "e": null}]],
            "a": {"_meta": {"z": 1}, "y": 2.5},
            "_meta": {"progressToken": 1}
        });
        let Value::Object(map) = &v else {
            unreachable!()
        };
        let mut text = Vec::new();
        canonical_object(map, true, &mut text);
        assert_eq!(
            String::from_utf8(text).unwrap(),
            r#"{"a":{"_meta":{"z":1},"y":2.5},"b":[{"c":"x\"y","d":1},[2,{"e":null,"f":true}]]}"#
        );
    }

    #[test]
    fn arguments_are_bound_whatever_their_key_order_and_meta() {
        let a = serde_json::json!({"target": "a.txt", "opts": {"x": 1, "y": [1, 2]}});
        let reordered = serde_json::json!({"opts": {"y": [1, 2], "x": 1}, "target": "a.txt", "_meta": {"k": 1}});
        let other = serde_json::json!({"target": "/etc/important", "opts": {"x": 1, "y": [1, 2]}});
        assert_eq!(
            bind_arguments("t", Some(&a)),
            bind_arguments("t", Some(&reordered))
        );
        assert_ne!(
            bind_arguments("t", Some(&a)),
            bind_arguments("t", Some(&other))
        );
        assert_ne!(bind_arguments("t", Some(&a)), bind_arguments("u", Some(&a)));
        assert_eq!(
            bind_arguments("t", None),
            bind_arguments("t", Some(&serde_json::json!({})))
        );
        // A state sealed for one set of arguments is refused for another.
        let key = SealingKey::from_bytes([7; 32]);
        let mut sealed = state();
        sealed.t = bind_arguments("t", Some(&a));
        let token = seal(&key, &sealed);
        let again = bind_arguments("t", Some(&reordered));
        assert!(unseal(&key, &token, 0, "tools/call", &again, None).is_ok());
        let swapped = bind_arguments("t", Some(&other));
        assert_eq!(
            unseal(&key, &token, 0, "tools/call", &swapped, None),
            Err(StateRejection::WrongTarget)
        );
    }

    #[test]
    fn an_older_key_of_the_ring_opens_what_it_sealed() {
        let old = SealingKey::from_bytes([1; 32]);
        let new = SealingKey::from_bytes([2; 32]);
        let before = Keyring::from(old.clone());
        let token = seal(&before, &state());
        assert!(token.starts_with(&format!("v2.{}.", old.id())));
        let rotated = Keyring::new(new.clone(), vec![old.clone()]);
        assert_eq!(
            unseal(&rotated, &token, 0, "tools/call", "t", None),
            Ok(state())
        );
        // The rotated ring seals with the new key, which the old ring does not hold.
        let fresh = seal(&rotated, &state());
        assert!(fresh.starts_with(&format!("v2.{}.", new.id())));
        assert_eq!(
            unseal(&before, &fresh, 0, "tools/call", "t", None),
            Err(StateRejection::BadSignature)
        );
        // Once the old key leaves the ring, its states no longer open.
        let retired = Keyring::from(new);
        assert_eq!(
            unseal(&retired, &token, 0, "tools/call", "t", None),
            Err(StateRejection::BadSignature)
        );
        // Naming a held key does not help a token sealed by another.
        let forged = token.replacen(&old.id(), &rotated.newest_id(), 1);
        assert_eq!(
            unseal(&rotated, &forged, 0, "tools/call", "t", None),
            Err(StateRejection::BadSignature)
        );
    }

    /// The token's text is a wire format: replicas of different versions open each other's.
    #[test]
    fn the_sealed_text_is_fixed() {
        let key = SealingKey::from_bytes([7; 32]);
        let mut sealed = state();
        sealed.p = Some("alice".into());
        sealed.r.insert("k".into(), Value::from("yes"));
        // Also computed outside Rust: HMAC-SHA256 with the key over `v2.KEYID.PAYLOAD`.
        let token = "v2.OuF6w86J.\
            eyJtIjoidG9vbHMvY2FsbCIsInQiOiJ0IiwiZSI6MTAwMCwicCI6ImFsaWNlIiwiciI6eyJrIjoieWVzIn0sInUiOjMsIm4iOjJ9.\
            D3Mk-zADU7x35bCZeMdYZdSYMTYV8zZoLesGH4U2JeM";
        assert_eq!(seal(&key, &sealed), token);
        assert_eq!(
            unseal(&key, token, 1_000, "tools/call", "t", Some("alice")),
            Ok(sealed)
        );
    }

    #[test]
    fn round_trips_and_refuses_tampering() {
        let key = SealingKey::from_bytes([7; 32]);
        let token = seal(&key, &state());
        assert_eq!(
            unseal(&key, &token, 999, "tools/call", "t", None),
            Ok(state())
        );
        assert_eq!(
            unseal(&key, &token, 1_001, "tools/call", "t", None),
            Err(StateRejection::Expired)
        );
        assert_eq!(
            unseal(&key, &token, 0, "prompts/get", "t", None),
            Err(StateRejection::WrongTarget)
        );
        assert_eq!(
            unseal(&key, &token, 0, "tools/call", "t", Some("mallory")),
            Err(StateRejection::WrongTarget)
        );
        let other = SealingKey::from_bytes([8; 32]);
        assert_eq!(
            unseal(&other, &token, 0, "tools/call", "t", None),
            Err(StateRejection::BadSignature)
        );
        let mut bytes = token.clone().into_bytes();
        bytes[5] ^= 1;
        let tampered = String::from_utf8(bytes).unwrap();
        assert!(unseal(&key, &tampered, 0, "tools/call", "t", None).is_err());
        assert_eq!(
            unseal(&key, "garbage", 0, "tools/call", "t", None),
            Err(StateRejection::Malformed)
        );
    }
}
