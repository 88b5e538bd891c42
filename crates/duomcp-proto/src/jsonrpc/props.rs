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
    text(raw.get())
}

fn text(json: &str) -> Value {
    serde_json::from_str(json).unwrap_or(Value::String("<not JSON>".into()))
}

/// What a split `params` says its members are, read back as an object (`None`: not split);
/// `_meta`, which the split reads as its fields, as the object of the fields it found.
fn split_members(p: &Params) -> Option<Map<String, Value>> {
    let mut members: Map<String, Value> =
        p.members()?.map(|(k, v)| (k.to_owned(), text(v))).collect();
    if let Some(fields) = p.meta_fields() {
        let mut meta = Map::new();
        if let Some(v) = fields.protocol_version() {
            meta.insert("io.modelcontextprotocol/protocolVersion".into(), v.into());
        }
        if let Some(t) = fields.progress_token() {
            meta.insert(
                "progressToken".into(),
                serde_json::to_value(t).unwrap_or_default(),
            );
        }
        members.insert("_meta".into(), Value::Object(meta));
    }
    Some(members)
}

proptest! {
    /// Whitespace anywhere between the tokens of `params` (as a peer may pretty-print it): the
    /// decoder still finds the object and each member, exactly as serde_json reads them.
    #[test]
    fn a_split_finds_the_members_between_any_whitespace(params in object(), ws in "[ \t\r\n]{0,3}") {
        let pretty = serde_json::to_string_pretty(&Value::Object(params.clone()))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let line = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{ws}{}{ws}}}"#, pretty.replace('\n', &format!("\n{ws}")));
        match decode(line.as_bytes()) {
            Ok(Incoming::Request(r)) => {
                let p = r.params.ok_or_else(|| TestCaseError::fail("no params"))?;
                prop_assert_eq!(text(p.get()), Value::Object(params.clone()));
                let escaped = params.keys().any(|k| k.contains(['"', '\\']) || k.chars().any(|c| c < ' '));
                match split_members(&p) {
                    Some(members) => prop_assert_eq!(members, params),
                    None => prop_assert!(escaped, "not split: {}", p.get()),
                }
            }
            other => prop_assert!(false, "not the request: {:?}", other),
        }
    }

    #[test]
    fn a_request_reads_back_as_written(id in request_id(), method in ".{0,16}", params in object()) {
        let bytes = encode_request(&id, &method, &params).map_err(|e| TestCaseError::fail(e.to_string()))?;
        match decode(&bytes) {
            Ok(Incoming::Request(r)) => {
                prop_assert_eq!(r.id, id);
                prop_assert_eq!(r.method, method);
                let got = r.params.as_ref().map(|p| text(p.get()));
                prop_assert_eq!(got, Some(Value::Object(params.clone())));
                // The members the decoder found are the object's (names with escapes aside,
                // which it leaves to its reader: then nothing is recorded).
                let p = r.params.as_ref().ok_or_else(|| TestCaseError::fail("no params"))?;
                let escaped = params.keys().any(|k| k.contains(['"', '\\']) || k.chars().any(|c| c < ' '));
                match split_members(p) {
                    Some(members) => prop_assert_eq!(members, params),
                    None => prop_assert!(escaped, "not split: {}", p.get()),
                }
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
                prop_assert_eq!(n.params.as_ref().map(|p| text(p.get())), Some(Value::Object(params)));
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
    /// Split or not, a message decodes to the same thing: on any text near a message, the one
    /// pass that splits `params` and the reading of `params` as one raw value agree on the
    /// kind, the id, the method, the params and the error.
    #[test]
    fn the_split_reading_agrees_with_the_whole_one(bytes in near_message()) {
        let Ok(text) = std::str::from_utf8(&bytes) else { return Ok(()) };
        if text.trim_start().starts_with('[') {
            return Ok(());
        }
        let whole = super::decode::read_whole(text);
        prop_assert_eq!(summary(&decode(&bytes)), summary(&whole));
    }

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

/// Text near a JSON-RPC message: its members (any JSON, or a `params` object with odd members:
/// a repeated `_meta`, an escaped name, spaces) in any order, sometimes cut short.
fn near_message() -> impl Strategy<Value = Vec<u8>> {
    let params = prop_oneof![
        json().prop_map(|v| v.to_string()),
        object().prop_map(|m| Value::Object(m).to_string()),
        Just(r#"{"_meta":{},"_meta":{}}"#.to_owned()),
        Just(r#"{"a\u0041":1,"name":"x"}"#.to_owned()),
        Just(r#"{"name":"x","a\u0041":1}"#.to_owned()),
        Just(" { } ".to_owned()),
        Just(r#"{ "name" : "x" , "_meta" : { "progressToken" : 1 } }"#.to_owned()),
        Just(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","x":[1]},"name":"x"}"#.to_owned()),
        Just(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}"#.to_owned()),
        Just(r#"{"_meta":[1]}"#.to_owned()),
        Just(r#"{"_meta":null,"a":1}"#.to_owned()),
        Just(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026\u002d07-28"}}"#.to_owned()),
    ];
    let member = prop_oneof![
        (
            prop_oneof![
                Just("jsonrpc"),
                Just("id"),
                Just("method"),
                Just("result"),
                Just("error")
            ],
            json()
        )
            .prop_map(|(k, v)| format!("{:?}:{v}", k)),
        params.prop_map(|p| format!(r#""params":{p}"#)),
        Just(r#""jsonrpc":"2.0""#.to_owned()),
        Just(r#""method":"tools/call""#.to_owned()),
        Just(r#""id":7"#.to_owned()),
    ];
    (
        proptest::collection::vec(member, 0..7),
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(|(members, cut, whole)| {
            let text = format!("{{{}}}", members.join(","));
            let end = if whole {
                text.len()
            } else {
                cut.index(text.len() + 1)
            };
            text.as_bytes()[..end].to_vec()
        })
}

/// What a decoding outcome says, comparable.
fn summary(outcome: &Result<Incoming, DecodeError>) -> String {
    match outcome {
        Ok(Incoming::Request(r)) => format!(
            "request {:?} {:?} {:?}",
            r.id,
            r.method,
            r.params.as_ref().map(|p| text(p.get()))
        ),
        Ok(Incoming::Notification(n)) => format!(
            "notification {:?} {:?}",
            n.method,
            n.params.as_ref().map(|p| text(p.get()))
        ),
        Ok(Incoming::Response(r)) => format!(
            "response {:?} {:?}",
            r.id,
            r.outcome.as_ref().map(|raw| parsed(raw))
        ),
        Err(e) => format!("error {:?} {} {}", e.id, e.error.code, e.error.message),
    }
}

#[test]
fn meta_is_read_as_its_fields_wherever_it_and_params_are() {
    let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"a":[1]},"progressToken":"p","x":{}}"#;
    for line in [
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"name":"n","_meta":{meta}}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","params":{{"_meta":{meta},"name":"n"}},"id":1,"method":"m"}}"#),
        format!("{{ \"params\" :\n {{ \"_meta\" : {meta} , \"name\":\"n\" }} \n, \"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\" }} \n"),
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"_meta":{meta},"name":"n"}}  }}"#),
    ] {
        let Ok(Incoming::Request(r)) = decode(line.as_bytes()) else {
            panic!("not a request: {line}")
        };
        let p = r.params.expect("params");
        let members: Vec<_> = p.members().expect("split").collect();
        assert_eq!(members, [("name", r#""n""#)], "{line}");
        let fields = p.meta_fields().expect("`_meta` read");
        assert_eq!(fields.protocol_version(), Some("2026-07-28"));
        assert_eq!(fields.progress_token(), Some(&"p".into()));
        let whole: Value = serde_json::from_str(p.get()).expect("params text is JSON");
        assert_eq!(whole["_meta"]["x"], serde_json::json!({}), "{line}");
        // The validation reads the capabilities from the same text.
        let valid = crate::era::modern::MetaMemo::default()
            .validate_fields(Some(Ok(fields)))
            .expect("valid");
        assert_eq!(&*valid.protocol_version, "2026-07-28");
    }
    // A `_meta` whose fields do not read is left to the params' reader, whole.
    for params in [
        r#"{"_meta":[1]}"#,
        r#"{"_meta":{"progressToken":1.5e400}}"#,
        r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}"#,
    ] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{params}}}"#);
        if let Ok(Incoming::Request(r)) = decode(line.as_bytes()) {
            let p = r.params.expect("params");
            assert!(p.members().is_none() && p.meta_fields().is_none(), "{line}");
            assert_eq!(p.get(), params);
        }
    }
}
