//! `requestState` unsealing (2026-07-28 multi-round-trip requests).
//!
//! Two modes. Raw: a fuzzed token is never accepted (none can carry a valid HMAC). Sealed: a
//! state built from fuzzed parts is sealed, then unsealed as it is (it comes back unchanged,
//! or is refused for the reason its method, target, principal or expiry gives), and after a
//! fuzzed change to one byte of the token (always refused).

use arbitrary::{Arbitrary, Unstructured};
use duomcp_proto::request_state::{seal, unseal, SealedState, SealingKey, StateRejection};
use serde_json::{Map, Value};

#[derive(Arbitrary, Debug)]
struct Sealed {
    method: String,
    target: String,
    principal: Option<String>,
    expiry: u64,
    answers: Vec<(String, String)>,
    user: Option<String>,
    rounds: u8,
    /// What the retry asks for: the same method, target and principal, or others.
    ask_method: Option<String>,
    ask_target: Option<String>,
    ask_principal: Option<Option<String>>,
    now: u64,
    tamper: (u16, u8),
}

#[derive(Arbitrary, Debug)]
enum Input {
    Raw(String),
    Sealed(Sealed),
}

/// Input: [`arbitrary`] bytes (a raw token, or the parts of a state).
pub fn request_state(data: &[u8]) {
    let key = SealingKey::from_bytes([42; 32]);
    match Input::arbitrary_take_rest(Unstructured::new(data)) {
        Ok(Input::Raw(token)) => {
            let got = unseal(&key, &token, 0, "tools/call", "t", None);
            assert!(got.is_err(), "a fuzzed token was accepted: {got:?}");
        }
        Ok(Input::Sealed(s)) => {
            let state = SealedState {
                m: s.method,
                t: s.target,
                e: s.expiry,
                p: s.principal,
                r: s.answers
                    .into_iter()
                    .map(|(k, v)| (k, Value::from(v)))
                    .collect::<Map<_, _>>(),
                u: s.user.map(Value::from),
                n: u32::from(s.rounds),
            };
            let token = seal(&key, &state);
            let method = s.ask_method.unwrap_or_else(|| state.m.clone());
            let target = s.ask_target.unwrap_or_else(|| state.t.clone());
            let principal = s.ask_principal.unwrap_or_else(|| state.p.clone());
            let got = unseal(&key, &token, s.now, &method, &target, principal.as_deref());
            let expected = if method != state.m || target != state.t || principal != state.p {
                Err(StateRejection::WrongTarget)
            } else if state.e < s.now {
                Err(StateRejection::Expired)
            } else {
                Ok(state.clone())
            };
            assert_eq!(got, expected);
            let mut bytes = token.clone().into_bytes();
            let at = usize::from(s.tamper.0) % bytes.len();
            bytes[at] = s.tamper.1;
            if bytes != token.as_bytes() {
                if let Ok(changed) = String::from_utf8(bytes) {
                    let got = unseal(&key, &changed, 0, &state.m, &state.t, state.p.as_deref());
                    assert!(got.is_err(), "a changed token was accepted: {changed}");
                }
            }
        }
        Err(_) => {}
    }
}
