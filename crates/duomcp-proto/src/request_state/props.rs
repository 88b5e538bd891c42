//! Property tests of the sealed `requestState`: [`unseal`] ∘ [`seal`] is the identity under the
//! same keys, a token changed in any one byte is refused, no string makes [`unseal`] panic, and
//! a key rotated out of the ring no longer opens what it sealed.

use super::*;
use crate::keyring::Keyring;
use crate::strategies::{any_json, json};
use proptest::prelude::*;

/// A state as the server seals it. `u` is never a bare `null`: `Some(Value::Null)` is written
/// as `"u":null` and read back as `None` (no handler state), which the server treats alike.
fn sealed_state() -> impl Strategy<Value = SealedState> {
    (
        ".{0,12}",
        ".{0,24}",
        any::<u64>(),
        proptest::option::of(".{0,12}"),
        proptest::collection::btree_map(".{0,6}", json(), 0..4),
        proptest::option::of(
            json().prop_filter("a bare null reads back as none", |v| !v.is_null()),
        ),
        any::<u32>(),
    )
        .prop_map(|(m, t, e, p, r, u, n)| SealedState {
            m,
            t,
            e,
            p,
            r: r.into_iter().collect(),
            u,
            n,
        })
}

fn key() -> impl Strategy<Value = SealingKey> {
    any::<[u8; 32]>().prop_map(SealingKey::from_bytes)
}

/// A ring: the sealing key and up to three older ones.
fn ring() -> impl Strategy<Value = Keyring> {
    (key(), proptest::collection::vec(key(), 0..4))
        .prop_map(|(newest, older)| Keyring::new(newest, older))
}

/// Text shaped like a token (`v2`, a dot-separated part count near four, base64-ish parts),
/// which reaches further into [`unseal`] than random text does.
fn near_token() -> impl Strategy<Value = String> {
    (
        prop_oneof![Just("v2".to_owned()), "v[0-9]", ".{0,3}"],
        proptest::collection::vec("[A-Za-z0-9_=+/.-]{0,48}", 0..5),
    )
        .prop_map(|(v, parts)| {
            std::iter::once(v)
                .chain(parts)
                .collect::<Vec<_>>()
                .join(".")
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// What one ring seals, the same ring opens as it was, up to its expiry and for its own
    /// method, target and principal only.
    #[test]
    fn unseal_of_seal_is_the_state(
        keys in ring(),
        state in sealed_state(),
        before in any::<u64>(),
        after in 1..=u64::MAX,
        other in ".{1,8}",
    ) {
        let token = seal(&keys, &state);
        prop_assert!(token.starts_with(&format!("v2.{}.", keys.newest_id())), "{}", token);
        let now = before.min(state.e);
        let p = state.p.as_deref();
        prop_assert_eq!(unseal(&keys, &token, now, &state.m, &state.t, p), Ok(state.clone()));
        // A single key opens what a ring it leads sealed, and the other way round.
        let (_, newest) = keys.sealing();
        prop_assert_eq!(unseal(&newest, &token, now, &state.m, &state.t, p), Ok(state.clone()));
        let by_key = seal(&newest, &state);
        prop_assert_eq!(unseal(&keys, &by_key, now, &state.m, &state.t, p), Ok(state.clone()));

        if let Some(late) = state.e.checked_add(after) {
            prop_assert_eq!(
                unseal(&keys, &token, late, &state.m, &state.t, p),
                Err(StateRejection::Expired)
            );
        }
        let method = format!("{}{other}", state.m);
        let target = format!("{}{other}", state.t);
        let principal = format!("{}{other}", p.unwrap_or_default());
        prop_assert_eq!(
            unseal(&keys, &token, now, &method, &state.t, p),
            Err(StateRejection::WrongTarget)
        );
        prop_assert_eq!(
            unseal(&keys, &token, now, &state.m, &target, p),
            Err(StateRejection::WrongTarget)
        );
        prop_assert_eq!(
            unseal(&keys, &token, now, &state.m, &state.t, Some(&principal)),
            Err(StateRejection::WrongTarget)
        );
        if p.is_some() {
            prop_assert_eq!(
                unseal(&keys, &token, now, &state.m, &state.t, None),
                Err(StateRejection::WrongTarget)
            );
        }
    }

    /// Any change of one byte (to any other byte that leaves the token text) is refused.
    #[test]
    fn a_token_changed_in_one_byte_is_refused(
        keys in ring(),
        state in sealed_state(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let token = seal(&keys, &state);
        let mut bytes = token.clone().into_bytes();
        let at = at.index(bytes.len());
        prop_assume!(bytes[at] != byte);
        bytes[at] = byte;
        if let Ok(changed) = String::from_utf8(bytes) {
            let got = unseal(&keys, &changed, 0, &state.m, &state.t, state.p.as_deref());
            prop_assert!(got.is_err(), "accepted after a change at {}: {}", at, changed);
        }
    }

    /// Any string: refused (a forged tag cannot verify), never a panic.
    #[test]
    fn unsealing_any_string_is_refused_without_panic(
        keys in ring(),
        token in prop_oneof![".{0,96}", near_token()],
        now in any::<u64>(),
    ) {
        let got = unseal(&keys, &token, now, "tools/call", "t", None);
        prop_assert!(got.is_err(), "{:?}", got);
        let one = keys.sealing().1;
        prop_assert!(unseal(&one, &token, now, "tools/call", "t", None).is_err());
    }

    /// A valid token's payload replaced by any JSON, re-tagged with the right key: a state of
    /// the wrong shape is `Malformed`, never a panic.
    #[test]
    fn any_payload_under_a_valid_tag_unseals_without_panic(key in key(), payload in any_json()) {
        let id = key.id();
        let payload = URL_SAFE_NO_PAD.encode(payload.to_string());
        let tag = URL_SAFE_NO_PAD.encode(mac_of(&key, &id, &payload).finalize().into_bytes());
        let token = format!("v2.{id}.{payload}.{tag}");
        match unseal(&key, &token, 0, "tools/call", "t", None) {
            Ok(state) => prop_assert_eq!((state.m.as_str(), state.t.as_str()), ("tools/call", "t")),
            Err(e) => prop_assert!(
                matches!(
                    e,
                    StateRejection::Malformed | StateRejection::WrongTarget | StateRejection::Expired
                ),
                "{:?}", e
            ),
        }
    }

    /// Rotation: the ring with a new key in front still opens what the old key sealed and seals
    /// with the new one; once the old key leaves the ring, its states are refused as a failed
    /// check, and naming a held key's id does not help a token another key sealed.
    #[test]
    fn a_key_rotated_out_is_refused(old in key(), new in key(), state in sealed_state()) {
        prop_assume!(old.id() != new.id());
        let (m, t, p, now) = (state.m.clone(), state.t.clone(), state.p.clone(), 0);
        let before = Keyring::from(old.clone());
        let token = seal(&before, &state);
        let rotated = Keyring::new(new.clone(), vec![old.clone()]);
        prop_assert_eq!(unseal(&rotated, &token, now, &m, &t, p.as_deref()), Ok(state.clone()));
        let fresh = seal(&rotated, &state);
        prop_assert!(fresh.starts_with(&format!("v2.{}.", new.id())), "{}", fresh);
        prop_assert_eq!(
            unseal(&before, &fresh, now, &m, &t, p.as_deref()),
            Err(StateRejection::BadSignature)
        );
        let retired = Keyring::from(new.clone());
        prop_assert_eq!(
            unseal(&retired, &token, now, &m, &t, p.as_deref()),
            Err(StateRejection::BadSignature)
        );
        let forged = token.replacen(&old.id(), &new.id(), 1);
        prop_assert_eq!(
            unseal(&rotated, &forged, now, &m, &t, p.as_deref()),
            Err(StateRejection::BadSignature)
        );
    }

    /// The argument binding does not depend on key order or the top-level `_meta`, and
    /// `bind_arguments` takes any JSON without panic.
    #[test]
    fn arguments_bind_whatever_their_key_order(
        tool in ".{0,8}",
        members in proptest::collection::btree_map(".{0,6}", json(), 0..5),
        meta in json(),
        any in any_json(),
    ) {
        let forward: Map<String, Value> = members.clone().into_iter().collect();
        let mut backward: Map<String, Value> = members.into_iter().rev().collect();
        backward.insert("_meta".into(), meta);
        prop_assert_eq!(
            bind_arguments(&tool, Some(&Value::Object(forward))),
            bind_arguments(&tool, Some(&Value::Object(backward)))
        );
        let _ = bind_arguments(&tool, Some(&any));
    }
}
