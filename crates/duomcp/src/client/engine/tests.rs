use super::*;

fn meta_of(w: &WithMeta<'_>) -> Value {
    let body = serde_json::to_value(w).unwrap_or_default();
    body.get("_meta").cloned().unwrap_or(Value::Null)
}

#[test]
fn meta_keys_win_in_order_caller_options_envelope_progress() {
    let mut params = Map::new();
    params.insert("name".into(), json!("echo"));
    let caller = json!({
        "a": 1,
        "b": 1,
        (meta::PROTOCOL_VERSION): "caller",
        (meta::PROGRESS_TOKEN): "caller",
    });
    let options = json!({ "b": 2, (meta::CLIENT_CAPABILITIES): { "x": {} } });
    let (Value::Object(caller), Value::Object(options)) = (caller, options) else {
        unreachable!()
    };
    let info = Implementation::new("c", "1");
    let envelope = Envelope {
        protocol_version: Some("2026-07-28"),
        client_capabilities: None,
        client_info: Some(&info),
        client_info_json: None,
        log_level: Some(LoggingLevel::Debug),
    };
    let token: ProgressToken = serde_json::from_value(json!(7)).unwrap();
    let w = WithMeta {
        params: &params,
        caller: &caller,
        options: &options,
        envelope: &envelope,
        progress: Some(&token),
    };
    let body = serde_json::to_string(&w).unwrap_or_default();
    // One entry per key, never two.
    assert_eq!(body.matches(meta::PROTOCOL_VERSION).count(), 1, "{body}");
    assert_eq!(body.matches(meta::PROGRESS_TOKEN).count(), 1, "{body}");
    assert_eq!(body.matches("\"b\"").count(), 1, "{body}");
    assert_eq!(
        meta_of(&w),
        json!({
            "a": 1,
            "b": 2,
            (meta::CLIENT_CAPABILITIES): { "x": {} },
            (meta::PROTOCOL_VERSION): "2026-07-28",
            (meta::CLIENT_INFO): { "name": "c", "version": "1" },
            (meta::LOG_LEVEL): "debug",
            (meta::PROGRESS_TOKEN): 7,
        })
    );
    assert_eq!(serde_json::to_value(&w).unwrap_or_default()["name"], "echo");
    // The client info serialized once is written as the struct would be.
    let json = serde_json::value::to_raw_value(&info).unwrap();
    let rendered = Envelope {
        protocol_version: Some("2026-07-28"),
        client_capabilities: None,
        client_info: None,
        client_info_json: Some(&json),
        log_level: Some(LoggingLevel::Debug),
    };
    let w2 = WithMeta {
        envelope: &rendered,
        ..w
    };
    assert_eq!(serde_json::to_string(&w2).unwrap_or_default(), body);
}

#[test]
fn no_meta_when_nothing_to_say() {
    let params = Map::new();
    let empty = Map::new();
    let envelope = Envelope::default();
    let w = WithMeta {
        params: &params,
        caller: &empty,
        options: &empty,
        envelope: &envelope,
        progress: None,
    };
    assert_eq!(serde_json::to_string(&w).unwrap_or_default(), "{}");
}
