//! Property tests of the codec: what the encoders write, [`decode`] reads back as it was, and
//! no input makes [`decode`] panic.

use super::*;
use crate::strategies::{json, object};
use proptest::prelude::*;
use serde_json::{Map, Value};

fn request_id() -> impl Strategy<Value = RequestId> {
    prop_oneof![
        any::<i64>().prop_map(RequestId::from),
        any::<u64>().prop_map(RequestId::from),
        ".{0,12}".prop_map(RequestId::from),
    ]
}

fn parsed(raw: &serde_json::value::RawValue) -> Value {
    serde_json::from_str(raw.get()).unwrap_or(Value::String("<not JSON>".into()))
}

proptest! {
    #[test]
    fn a_request_reads_back_as_written(id in request_id(), method in ".{0,16}", params in object()) {
        let bytes = encode_request(&id, &method, &params).map_err(|e| TestCaseError::fail(e.to_string()))?;
        match decode(&bytes) {
            Ok(Incoming::Request(r)) => {
                prop_assert_eq!(r.id, id);
                prop_assert_eq!(r.method, method);
                let got = r.params.as_deref().map(parsed);
                prop_assert_eq!(got, Some(Value::Object(params)));
            }
            other => prop_assert!(false, "not the request: {:?}", other),
        }
    }

    #[test]
    fn a_notification_reads_back_as_written(method in ".{0,16}", params in object()) {
        let bytes = encode_notification(&method, &params).map_err(|e| TestCaseError::fail(e.to_string()))?;
        match decode(&bytes) {
            Ok(Incoming::Notification(n)) => {
                prop_assert_eq!(n.method, method);
                prop_assert_eq!(n.params.as_deref().map(parsed), Some(Value::Object(params)));
            }
            other => prop_assert!(false, "not the notification: {:?}", other),
        }
    }

    /// MCP results are objects. (`"result":null` is refused as a response with neither
    /// `result` nor `error`: the envelope reads a `null` member as absent.)
    #[test]
    fn a_result_reads_back_as_written(id in request_id(), result in object().prop_map(Value::Object)) {
        let bytes = encode_result(&id, &result).map_err(|e| TestCaseError::fail(e.to_string()))?;
        match decode(&bytes) {
            Ok(Incoming::Response(r)) => {
                prop_assert_eq!(r.id, id);
                match r.outcome {
                    Ok(raw) => prop_assert_eq!(parsed(&raw), result),
                    Err(e) => prop_assert!(false, "an error: {:?}", e),
                }
            }
            other => prop_assert!(false, "not the response: {:?}", other),
        }
    }

    #[test]
    fn an_error_reads_back_as_written(
        id in request_id(),
        code in any::<i32>(),
        message in ".{0,20}",
        data in proptest::option::of(json()),
    ) {
        let sent = ErrorObject { code, message, data };
        match decode(&encode_error(Some(&id), &sent)) {
            Ok(Incoming::Response(r)) => {
                prop_assert_eq!(r.id, id);
                match r.outcome {
                    Err(e) => {
                        prop_assert_eq!(e.code, sent.code);
                        prop_assert_eq!(&e.message, &sent.message);
                        // `"data":null` reads back as no `data`, the same thing in JSON-RPC.
                        let data = sent.data.clone().filter(|d| !d.is_null());
                        prop_assert_eq!(&e.data, &data);
                    }
                    Ok(raw) => prop_assert!(false, "a result: {}", raw.get()),
                }
            }
            other => prop_assert!(false, "not the response: {:?}", other),
        }
        // Without an id (it could not be read), the error is not a message anyone awaits.
        let unanswerable = decode(&encode_error(None, &sent));
        prop_assert!(unanswerable.is_err());
    }

    /// Any bytes: an answer or an error object, never a panic; an error keeps a JSON-RPC code.
    #[test]
    fn any_bytes_decode_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        if let Err(e) = decode(&bytes) {
            prop_assert!([-32700, -32600, -32602].contains(&e.error.code), "{:?}", e.error);
        }
    }

    /// Text that looks like JSON-RPC (its members shuffled, cut, mistyped) reaches deeper
    /// than random bytes do; still no panic, and the id of an accepted message is usable.
    #[test]
    fn near_messages_decode_without_panic(
        members in proptest::collection::vec(
            (prop_oneof![Just("jsonrpc"), Just("id"), Just("method"), Just("params"),
                         Just("result"), Just("error")], json()),
            0..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let object: Map<String, Value> =
            members.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        let text = Value::Object(object).to_string();
        let cut = cut.index(text.len() + 1);
        if let Some(prefix) = text.get(..cut) {
            let _ = decode(prefix.as_bytes());
        }
        let _ = decode(text.as_bytes());
    }
}
