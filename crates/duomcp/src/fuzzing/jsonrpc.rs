//! JSON-RPC decode, both revisions: the envelope ([`decode`]), then the typed message unions
//! of the schema crate (which cover 2025-11-25 and 2026-07-28 alike).
//!
//! Oracles: an accepted message is a JSON object; encoding what was decoded and decoding it
//! again gives the same message; a typed request or notification survives
//! serialize → deserialize unchanged.

use crate::jsonrpc::{
    decode, encode_error, encode_notification, encode_request, encode_result, Incoming,
};
use duomcp_schema::{ClientNotification, ClientRequest, ServerNotification, ServerRequest};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// Feeds one message to the decoder.
pub fn jsonrpc_decode(data: &[u8]) {
    let Ok(msg) = decode(data) else { return };
    let value: Value = serde_json::from_slice(data).expect("decode accepted invalid JSON");
    assert!(value.is_object(), "decode accepted a non-object: {value}");
    match msg {
        Incoming::Request(r) => {
            let params = r.params.as_ref().map(|p| p.get().to_owned());
            if let Some(p) = &r.params {
                let p = serde_json::value::RawValue::from_string(p.get().to_owned())
                    .expect("params are JSON");
                let again = encode_request(&r.id, &r.method, &p).expect("encodes");
                let Ok(Incoming::Request(r2)) = decode(&again) else {
                    panic!("re-encoded request does not decode as one")
                };
                assert_eq!((&r2.id, &r2.method), (&r.id, &r.method));
                assert_eq!(r2.params.as_ref().map(|p| p.get().to_owned()), params);
            }
            typed_round_trip::<ClientRequest>(&value);
            typed_round_trip::<ServerRequest>(&value);
        }
        Incoming::Notification(n) => {
            if let Some(p) = &n.params {
                let p = serde_json::value::RawValue::from_string(p.get().to_owned())
                    .expect("params are JSON");
                let again = encode_notification(&n.method, &p).expect("encodes");
                let Ok(Incoming::Notification(n2)) = decode(&again) else {
                    panic!("re-encoded notification does not decode as one")
                };
                assert_eq!(n2.method, n.method);
                assert_eq!(
                    n2.params.as_ref().map(|p| p.get()),
                    Some(p.get()),
                    "params changed"
                );
            }
            typed_round_trip::<ClientNotification>(&value);
            typed_round_trip::<ServerNotification>(&value);
        }
        Incoming::Response(r) => {
            let again = match &r.outcome {
                Ok(result) => encode_result(&r.id, result).expect("encodes"),
                Err(e) => encode_error(Some(&r.id), e),
            };
            let Ok(Incoming::Response(r2)) = decode(&again) else {
                panic!("re-encoded response does not decode as one")
            };
            assert_eq!(r2.id, r.id);
            match (&r.outcome, &r2.outcome) {
                (Ok(a), Ok(b)) => assert_eq!(a.get(), b.get()),
                (Err(a), Err(b)) => assert_eq!(a, b),
                _ => panic!("a response changed from result to error"),
            }
        }
    }
}

/// When `value` reads as a `T`, writing it and reading it again gives the same `T`.
fn typed_round_trip<T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug>(value: &Value) {
    let Ok(typed) = serde_json::from_value::<T>(value.clone()) else {
        return;
    };
    let written = serde_json::to_value(&typed).expect("a typed message serializes");
    let again: T = serde_json::from_value(written.clone())
        .unwrap_or_else(|e| panic!("{written} does not read back: {e}"));
    assert_eq!(again, typed, "typed round trip changed the message");
}
