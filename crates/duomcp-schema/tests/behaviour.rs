//! Typed behaviour: union discrimination, constructors, conversions, and rejection of
//! invalid input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;

use duomcp_schema::methods::{self, NotificationMethod, RequestMethod};
use duomcp_schema::tasks::ext;
use duomcp_schema::*;
use serde_json::{json, Value};

fn de<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, serde_json::Error> {
    serde_json::from_value(v)
}

fn ser<T: serde::Serialize>(t: &T) -> Value {
    serde_json::to_value(t).expect("serialise")
}

// ---------- negative cases ----------

#[test]
fn wrong_content_type_tag_is_rejected() {
    assert!(
        de::<ContentBlock>(json!({"type": "video", "data": "x", "mimeType": "video/mp4"})).is_err()
    );
    assert!(de::<ContentBlock>(json!({"text": "no tag"})).is_err());
    // tool_use is only a sampling block
    assert!(
        de::<ContentBlock>(json!({"type": "tool_use", "id": "1", "name": "n", "input": {}}))
            .is_err()
    );
    // resource_link is not a sampling block
    let link = json!({"type": "resource_link", "uri": "file:///a", "name": "a"});
    assert!(de::<SamplingMessageContentBlock>(link.clone()).is_err());
    assert!(de::<ContentBlock>(link).is_ok());
    assert!(de::<CompleteReference>(json!({"type": "ref/tool", "name": "x"})).is_err());
}

#[test]
fn unknown_result_type_is_rejected() {
    assert!(de::<ResultType>(json!("partial")).is_err());
    assert!(de::<CallToolResult>(json!({"content": [], "resultType": "partial"})).is_err());
    assert!(de::<ListToolsResult>(json!({"tools": [], "resultType": "Complete"})).is_err());
    assert!(de::<EmptyResult>(json!({"resultType": 1})).is_err());
    assert_eq!(
        de::<ResultType>(json!("input_required")).unwrap(),
        ResultType::InputRequired
    );
    assert_eq!(de::<ResultType>(json!("task")).unwrap(), ResultType::Task);
}

#[test]
fn null_ids_are_rejected() {
    assert!(de::<RequestId>(Value::Null).is_err());
    assert!(de::<ProgressToken>(Value::Null).is_err());
    assert!(de::<RequestId>(json!(true)).is_err());
    assert!(de::<RequestId>(json!(1.5)).is_err());
    assert_eq!(
        de::<RequestId>(json!(1.0)).unwrap(),
        RequestId::Number(serde_json::Number::from_f64(1.0).unwrap())
    );
    let req = json!({"jsonrpc": "2.0", "id": null, "method": "tools/list"});
    assert!(de::<JsonRpcRequest>(req.clone()).is_err());
    assert!(
        de::<JsonRpcMessage>(req).is_err(),
        "a request with a null id is not a notification"
    );
    assert!(
        de::<JsonRpcResultResponse>(json!({"jsonrpc": "2.0", "id": null, "result": {}})).is_err()
    );
    // error responses may lack an id; `null` is read as absent and not written back
    let err = de::<JsonRpcErrorResponse>(
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "p"}}),
    )
    .unwrap();
    assert_eq!(err.id, None);
    assert_eq!(
        ser(&err),
        json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "p"}})
    );
}

#[test]
fn invalid_envelopes_are_rejected() {
    assert!(de::<JsonRpcMessage>(json!({"jsonrpc": "1.0", "id": 1, "method": "x"})).is_err());
    assert!(
        de::<JsonRpcMessage>(json!({"id": 1, "method": "x"})).is_err(),
        "jsonrpc is required"
    );
    assert!(de::<JsonRpcMessage>(json!({"jsonrpc": "2.0", "id": 1})).is_err());
    assert!(de::<JsonRpcMessage>(json!([1, 2])).is_err());
    assert!(de::<JsonRpcResponse>(json!({"jsonrpc": "2.0", "method": "x"})).is_err());
    assert!(de::<ClientRequest>(json!({"jsonrpc": "2.0", "id": 1, "method": "nope"})).is_err());
    assert!(de::<ServerRequest>(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}})
    )
    .is_err());
}

#[test]
fn invalid_enum_values_are_rejected() {
    assert!(de::<Role>(json!("system")).is_err());
    assert!(de::<LoggingLevel>(json!("fatal")).is_err());
    assert!(de::<TaskStatus>(json!("running")).is_err());
    assert!(de::<CacheScope>(json!("shared")).is_err());
    assert!(de::<ElicitResult>(json!({"action": "maybe"})).is_err());
    assert!(de::<ElicitRequestUrlParams>(
        json!({"mode": "form", "message": "m", "url": "https://x"})
    )
    .is_err());
    assert!(de::<ElicitRequestFormParams>(json!({"mode": "url", "message": "m", "requestedSchema": {"type": "object", "properties": {}}})).is_err());
    assert!(de::<ElicitRequestedSchema>(json!({"type": "array", "properties": {}})).is_err());
    assert!(de::<PrimitiveSchemaDefinition>(json!({"type": "object"})).is_err());
    assert!(de::<PrimitiveSchemaDefinition>(json!({"title": "no type"})).is_err());
}

// ---------- discrimination of untagged unions ----------

#[test]
fn resource_contents_pick_text_or_blob() {
    let t = de::<ResourceContents>(json!({"uri": "file:///a", "text": "x"})).unwrap();
    assert!(matches!(t, ResourceContents::Text(ref c) if c.text == "x"));
    let b = de::<ResourceContents>(json!({"uri": "file:///a", "blob": "AA==", "mimeType": "a/b"}))
        .unwrap();
    assert!(matches!(b, ResourceContents::Blob(ref c) if c.blob == "AA=="));
    assert_eq!(b.mime_type(), Some("a/b"));
    assert_eq!(b.uri(), "file:///a");
    assert!(de::<ResourceContents>(json!({"uri": "file:///a"})).is_err());
    // an empty text is still text
    let e = de::<ResourceContents>(json!({"uri": "u", "text": ""})).unwrap();
    assert!(matches!(e, ResourceContents::Text(_)));
}

#[test]
fn elicit_params_default_to_form_mode() {
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
    let p = de::<ElicitRequestParams>(json!({"message": "m", "requestedSchema": schema})).unwrap();
    let ElicitRequestParams::Form(form) = &p else {
        panic!("expected form")
    };
    assert_eq!(form.mode, None);
    assert!(matches!(
        form.requested_schema.properties["name"],
        PrimitiveSchemaDefinition::String(_)
    ));
    let p = de::<ElicitRequestParams>(
        json!({"mode": "form", "message": "m", "requestedSchema": schema}),
    )
    .unwrap();
    assert!(matches!(p, ElicitRequestParams::Form(ref f) if f.mode == Some(FormModeTag)));
    let p = de::<ElicitRequestParams>(
        json!({"mode": "url", "message": "m", "url": "https://x", "elicitationId": "e"}),
    )
    .unwrap();
    assert!(
        matches!(p, ElicitRequestParams::Url(ref u) if u.elicitation_id.as_deref() == Some("e"))
    );
    assert_eq!(p.message(), "m");
    assert!(de::<ElicitRequestParams>(json!({"mode": "popup", "message": "m"})).is_err());
    assert!(
        de::<ElicitRequestParams>(json!({"mode": "url", "message": "m"})).is_err(),
        "url is required"
    );
}

#[test]
fn primitive_schemas_are_classified() {
    let cases = [
        (json!({"type": "string"}), "String"),
        (json!({"type": "integer", "minimum": 1}), "Number"),
        (json!({"type": "number"}), "Number"),
        (json!({"type": "boolean"}), "Boolean"),
        (json!({"type": "string", "enum": ["a"]}), "UntitledSingle"),
        (
            json!({"type": "string", "enum": ["a"], "enumNames": ["A"]}),
            "Legacy",
        ),
        (
            json!({"type": "string", "oneOf": [{"const": "a", "title": "A"}]}),
            "TitledSingle",
        ),
        (
            json!({"type": "array", "items": {"type": "string", "enum": ["a"]}}),
            "UntitledMulti",
        ),
        (
            json!({"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}}),
            "TitledMulti",
        ),
    ];
    for (v, want) in cases {
        let got = match de::<PrimitiveSchemaDefinition>(v.clone()).unwrap() {
            PrimitiveSchemaDefinition::String(_) => "String",
            PrimitiveSchemaDefinition::Number(_) => "Number",
            PrimitiveSchemaDefinition::Boolean(_) => "Boolean",
            PrimitiveSchemaDefinition::UntitledSingleSelectEnum(_) => "UntitledSingle",
            PrimitiveSchemaDefinition::LegacyTitledEnum(_) => "Legacy",
            PrimitiveSchemaDefinition::TitledSingleSelectEnum(_) => "TitledSingle",
            PrimitiveSchemaDefinition::UntitledMultiSelectEnum(_) => "UntitledMulti",
            PrimitiveSchemaDefinition::TitledMultiSelectEnum(_) => "TitledMulti",
        };
        assert_eq!(got, want, "{v}");
    }
    assert!(de::<EnumSchema>(json!({"type": "string"})).is_err());
    assert!(de::<SingleSelectEnumSchema>(
        json!({"type": "array", "items": {"type": "string", "enum": []}})
    )
    .is_err());
    assert!(de::<MultiSelectEnumSchema>(json!({"type": "string", "enum": []})).is_err());
}

#[test]
fn input_responses_are_told_apart() {
    let r = de::<InputResponse>(json!({"action": "accept", "content": {"a": 1}})).unwrap();
    assert!(matches!(r, InputResponse::Elicit(_)));
    let r = de::<InputResponse>(
        json!({"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}),
    )
    .unwrap();
    assert!(matches!(r, InputResponse::CreateMessage(_)));
    let r = de::<InputResponse>(json!({"roots": []})).unwrap();
    assert!(matches!(r, InputResponse::ListRoots(_)));
    assert!(de::<InputResponse>(json!({"content": "x"})).is_err());
    // a sampling result missing `model` is not mistaken for anything else
    assert!(de::<InputResponse>(
        json!({"role": "assistant", "content": {"type": "text", "text": "x"}})
    )
    .is_err());
}

#[test]
fn input_requests_are_tagged_on_method() {
    let elicit = InputRequest::elicit(ElicitRequestUrlParams::new(
        "Sign in",
        "https://example.com",
    ));
    assert_eq!(
        ser(&elicit),
        json!({"method": "elicitation/create", "params": {"mode": "url", "message": "Sign in", "url": "https://example.com"}})
    );
    assert_eq!(
        ser(&InputRequest::list_roots()),
        json!({"method": "roots/list"})
    );
    let sample = InputRequest::sample(CreateMessageRequestParams::new(
        vec![SamplingMessage::user_text("hi")],
        10,
    ));
    assert_eq!(
        ser(&sample),
        json!({"method": "sampling/createMessage", "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10}})
    );
    assert_eq!(de::<InputRequest>(ser(&sample)).unwrap(), sample);
    assert!(de::<InputRequest>(json!({"method": "tools/call", "params": {"name": "x"}})).is_err());
    assert!(de::<InputRequest>(json!({"method": "elicitation/create"})).is_err());
    assert!(de::<InputRequest>(json!({"params": {}})).is_err());
}

#[test]
fn mrtr_results_dispatch_on_result_type() {
    let r: MrtrResult<CallToolResult> =
        de(json!({"resultType": "input_required", "requestState": "s"})).unwrap();
    assert!(
        matches!(r, MrtrResult::InputRequired(ref i) if i.request_state.as_deref() == Some("s"))
    );
    let r: MrtrResult<CallToolResult> =
        de(json!({"content": [], "resultType": "complete"})).unwrap();
    assert!(matches!(r, MrtrResult::Complete(_)));
    let r: MrtrResult<CallToolResult> = de(json!({"content": []})).unwrap();
    assert!(
        matches!(r, MrtrResult::Complete(_)),
        "absent resultType means complete"
    );
    let task = ser(&ext::ExtCreateTaskResult::working(
        "t1",
        "2026-08-01T00:00:00Z",
        Some(1000),
    ));
    assert_eq!(task["resultType"], "task");
    let r: MrtrResult<CallToolResult> = de(task).unwrap();
    assert!(matches!(r, MrtrResult::Task(ref t) if t.task_id == "t1"));
}

#[test]
fn sampling_content_single_or_array() {
    let m =
        de::<SamplingMessage>(json!({"role": "user", "content": {"type": "text", "text": "a"}}))
            .unwrap();
    assert!(matches!(m.content, SamplingContent::Single(_)));
    assert_eq!(m.content.blocks().len(), 1);
    let m = de::<SamplingMessage>(json!({"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "tool_result", "toolUseId": "1", "content": []}]})).unwrap();
    assert!(matches!(m.content, SamplingContent::Multiple(ref v) if v.len() == 2));
    assert!(de::<SamplingMessage>(json!({"role": "user", "content": "text"})).is_err());
}

#[test]
fn message_unions_classify() {
    let m = de::<JsonRpcMessage>(json!({"jsonrpc": "2.0", "id": "a", "method": "ping"})).unwrap();
    assert!(matches!(m, JsonRpcMessage::Request(_)));
    assert_eq!(m.method(), Some("ping"));
    let m = de::<JsonRpcMessage>(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .unwrap();
    assert!(matches!(m, JsonRpcMessage::Notification(_)));
    let m = de::<JsonRpcMessage>(json!({"jsonrpc": "2.0", "id": 3, "result": {}})).unwrap();
    assert_eq!(m.id(), Some(&RequestId::from(3)));
    assert!(matches!(
        m.into_response(),
        Some(JsonRpcResponse::Result(_))
    ));
    let m = de::<JsonRpcMessage>(
        json!({"jsonrpc": "2.0", "id": 3, "error": {"code": 1, "message": "m"}}),
    )
    .unwrap();
    assert!(matches!(m, JsonRpcMessage::Error(_)));

    let req =
        JsonRpcRequest::typed::<methods::CallTool>(7, &CallToolRequestParams::new("echo", None))
            .unwrap();
    let typed = ClientRequest::try_from(req).unwrap();
    assert!(
        matches!(typed, ClientRequest::CallTool(ref r) if r.params.as_ref().unwrap().name == "echo")
    );
    assert_eq!(typed.id(), &RequestId::from(7));
    assert_eq!(typed.method(), "tools/call");

    let n = de::<ServerNotification>(json!({"jsonrpc": "2.0", "method": "notifications/tasks", "params": {
        "taskId": "t", "status": "working", "createdAt": "a", "lastUpdatedAt": "b", "ttlMs": null}})).unwrap();
    assert!(matches!(n, ServerNotification::Tasks(_)));

    let r = de::<ServerResult>(
        json!({"tools": [], "resultType": "complete", "ttlMs": 1, "cacheScope": "public"}),
    )
    .unwrap();
    assert!(matches!(r, ServerResult::ListTools(_)));
    let r =
        de::<ServerResult>(json!({"resultType": "input_required", "requestState": "x"})).unwrap();
    assert!(matches!(r, ServerResult::InputRequired(_)));
    let r = de::<ServerResult>(json!({"taskId": "t", "status": "completed", "createdAt": "a", "lastUpdatedAt": "b", "ttlMs": 5, "result": {}})).unwrap();
    assert!(matches!(r, ServerResult::DetailedTask(_)));
    let r = de::<ServerResult>(json!({"taskId": "t", "status": "completed", "createdAt": "a", "lastUpdatedAt": "b", "ttl": 5})).unwrap();
    assert!(matches!(r, ServerResult::Task(_)));
    let r = de::<ServerResult>(json!({})).unwrap();
    assert!(matches!(r, ServerResult::Empty(_)));
    let r = de::<ClientResult>(json!({"action": "cancel"})).unwrap();
    assert!(matches!(r, ClientResult::Elicit(_)));
}

// ---------- ids, levels, numbers ----------

#[test]
fn request_ids_display_distinctly_and_hash() {
    let n = RequestId::from(92);
    let s = RequestId::from("92");
    assert_eq!(n.to_string(), "92");
    assert_eq!(s.to_string(), "\"92\"");
    assert_ne!(n, s);
    let set: HashSet<RequestId> = [n.clone(), s.clone(), RequestId::from(92u64)]
        .into_iter()
        .collect();
    assert_eq!(set.len(), 2);
    assert_eq!(RequestId::from("a\"b").to_string(), r#""a\"b""#);
    assert_eq!(n.as_i64(), Some(92));
    assert_eq!(s.as_str(), Some("92"));
    assert_eq!(ser(&ProgressToken::from("p")), json!("p"));
    assert_eq!(
        de::<RequestId>(json!(u64::MAX)).unwrap(),
        RequestId::from(u64::MAX)
    );
}

#[test]
fn logging_levels_are_ordered_by_severity() {
    assert!(LoggingLevel::Debug < LoggingLevel::Info);
    assert!(LoggingLevel::Warning < LoggingLevel::Error);
    assert!(LoggingLevel::Alert < LoggingLevel::Emergency);
    let mut sorted = LoggingLevel::ALL;
    sorted.sort();
    assert_eq!(sorted, LoggingLevel::ALL);
    assert_eq!(
        "notice".parse::<LoggingLevel>().unwrap(),
        LoggingLevel::Notice
    );
    assert!("loud".parse::<LoggingLevel>().is_err());
    for l in LoggingLevel::ALL {
        assert_eq!(ser(&l), json!(l.as_str()));
    }
}

#[test]
fn integral_floats_are_written_as_integers() {
    let p = ProgressNotificationParams::new(ProgressToken::from(1), 50.0, Some(100.0));
    assert_eq!(
        ser(&p),
        json!({"progressToken": 1, "progress": 50, "total": 100})
    );
    let p = ProgressNotificationParams::new(ProgressToken::from(1), 0.5, None);
    assert_eq!(ser(&p), json!({"progressToken": 1, "progress": 0.5}));
}

// ---------- constructors ----------

#[test]
fn constructors_build_the_expected_json() {
    assert_eq!(
        ser(&CallToolResult::text("hi")),
        json!({"content": [{"type": "text", "text": "hi"}]})
    );
    assert_eq!(
        ser(&CallToolResult::error_text("bad")),
        json!({"content": [{"type": "text", "text": "bad"}], "isError": true})
    );
    let s = CallToolResult::structured(json!({"a": 1}));
    assert_eq!(s.structured_content, Some(json!({"a": 1})));
    assert_eq!(s.content[0].as_text(), Some(r#"{"a":1}"#));
    assert!(CallToolResult::error_text("x").is_error());
    assert_eq!(
        ser(&ContentBlock::image("AA==", "image/png")),
        json!({"type": "image", "data": "AA==", "mimeType": "image/png"})
    );
    assert_eq!(
        ser(&ContentBlock::resource(ResourceContents::text(
            "file:///a",
            "x"
        ))),
        json!({"type": "resource", "resource": {"uri": "file:///a", "text": "x"}})
    );
    let tool = Tool::new("echo", serde_json::Map::new()).with_description("Echo");
    assert_eq!(
        ser(&tool),
        json!({"name": "echo", "description": "Echo", "inputSchema": {"type": "object"}})
    );
    assert_eq!(
        ser(&Resource::new("file:///a", "a")),
        json!({"uri": "file:///a", "name": "a"})
    );
    assert_eq!(
        ser(&Prompt::new("p").with_argument(PromptArgument::new("x").required())),
        json!({"name": "p", "arguments": [{"name": "x", "required": true}]})
    );
    assert_eq!(
        ser(&PromptMessage::user_text("hi")),
        json!({"role": "user", "content": {"type": "text", "text": "hi"}})
    );
    assert_eq!(
        ser(&Implementation::new("n", "1")),
        json!({"name": "n", "version": "1"})
    );
    assert_eq!(
        ser(&EmptyResult::complete()),
        json!({"resultType": "complete"})
    );
    let ir = InputRequiredResult::new()
        .with_input_request("roots", InputRequest::list_roots())
        .with_request_state("s");
    assert_eq!(
        ser(&ir),
        json!({"inputRequests": {"roots": {"method": "roots/list"}}, "requestState": "s", "resultType": "input_required"})
    );
    let form = ElicitRequestFormParams::new(
        "Who?",
        ElicitRequestedSchema::default()
            .with_property("name", StringSchema::new(), true)
            .with_property("age", NumberSchema::new(NumberSchemaType::Integer), false),
    );
    assert_eq!(
        ser(&form),
        json!({"message": "Who?", "requestedSchema": {"type": "object", "properties": {
            "name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name"]}})
    );
    assert_eq!(ser(&ElicitResult::decline()), json!({"action": "decline"}));
    assert_eq!(
        ser(&ListRootsResult::new(vec![
            Root::new("file:///r").with_name("R")
        ])),
        json!({"roots": [{"uri": "file:///r", "name": "R"}]})
    );
    assert_eq!(
        ser(&CompleteResult::new(vec!["a".into()])),
        json!({"completion": {"values": ["a"]}})
    );
}

#[test]
fn form_properties_keep_their_order() {
    let v = json!({"type": "object", "properties": {"z": {"type": "string"}, "a": {"type": "boolean"}, "m": {"type": "number"}}});
    let s = de::<ElicitRequestedSchema>(v).unwrap();
    let keys: Vec<&str> = s.properties.keys().map(String::as_str).collect();
    assert_eq!(keys, ["z", "a", "m"]);
    let out = serde_json::to_string(&s).unwrap();
    assert!(out.find("\"z\"").unwrap() < out.find("\"a\"").unwrap());
}

#[test]
fn tasks_keep_null_ttl() {
    let t = Task::new("t", TaskStatus::Working, "a", "b", None);
    assert_eq!(ser(&t)["ttl"], Value::Null);
    assert!(ser(&t).as_object().unwrap().contains_key("ttl"));
    assert!(TaskStatus::Cancelled.is_terminal());
    assert!(!TaskStatus::InputRequired.is_terminal());
    let done = ext::DetailedTask::new("t", TaskStatus::Working, "a", "b", None)
        .completed(jsonrpc::to_object(&CallToolResult::text("ok")).unwrap());
    assert_eq!(done.status, TaskStatus::Completed);
    let inner: CallToolResult = done.result_as().unwrap().unwrap();
    assert_eq!(inner.content[0].as_text(), Some("ok"));
    assert_eq!(ser(&done)["ttlMs"], Value::Null);
    let failed = ext::DetailedTask::new("t", TaskStatus::Working, "a", "b", Some(5))
        .failed(ErrorObject::internal_error("boom"));
    assert_eq!(ser(&failed)["error"]["code"], -32603);
}

// ---------- errors, meta, methods, versions ----------

#[test]
fn error_helpers_use_the_right_codes() {
    assert_eq!(error_code::PARSE_ERROR, -32700);
    assert_eq!(error_code::INVALID_REQUEST, -32600);
    assert_eq!(error_code::METHOD_NOT_FOUND, -32601);
    assert_eq!(error_code::INVALID_PARAMS, -32602);
    assert_eq!(error_code::INTERNAL_ERROR, -32603);
    assert_eq!(error_code::RESOURCE_NOT_FOUND, -32002);
    assert_eq!(error_code::URL_ELICITATION_REQUIRED, -32042);
    assert_eq!(error_code::HEADER_MISMATCH, -32020);
    assert_eq!(error_code::MISSING_REQUIRED_CLIENT_CAPABILITY, -32021);
    assert_eq!(error_code::UNSUPPORTED_PROTOCOL_VERSION, -32022);

    let e =
        ErrorObject::unsupported_protocol_version("nope", vec!["2026-07-28".into()], "1999-01-01");
    assert_eq!(e.code, -32022);
    let data: UnsupportedProtocolVersionErrorData = e.data_as().unwrap().unwrap();
    assert_eq!(data.requested, "1999-01-01");
    let caps =
        ClientCapabilities::default().with_extension(ext::EXTENSION_ID, serde_json::Map::new());
    let e = ErrorObject::missing_required_client_capability("need tasks", caps);
    let data: MissingRequiredClientCapabilityErrorData = e.data_as().unwrap().unwrap();
    assert!(data.required_capabilities.has_extension(ext::EXTENSION_ID));
    let e = ErrorObject::url_elicitation_required(
        "go",
        vec![ElicitRequestUrlParams::new("m", "https://x")],
    );
    assert_eq!(ser(&e)["data"]["elicitations"][0]["mode"], "url");
    assert_eq!(
        ErrorObject::resource_not_found("file:///x").data,
        Some(json!({"uri": "file:///x"}))
    );
    assert_eq!(
        ErrorObject::method_not_found("x").to_string(),
        "x (code -32601)"
    );
    assert!(ErrorObject::new(1, "m").data_as::<Value>().is_none());
    let resp = JsonRpcErrorResponse::new(Some(1.into()), ErrorObject::header_mismatch("h"));
    assert_eq!(
        ser(&resp),
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32020, "message": "h"}})
    );
}

#[test]
fn request_meta_converts_to_and_from_meta() {
    let meta: Meta = serde_json::from_value(json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
        "io.modelcontextprotocol/logLevel": "warning",
        "progressToken": 5,
        "traceparent": "00-abc"
    }))
    .unwrap();
    let view = RequestMeta::from_meta(&meta).unwrap();
    assert_eq!(
        view.protocol_version.as_deref(),
        Some(version::LATEST_MODERN)
    );
    assert!(view
        .client_capabilities
        .as_ref()
        .unwrap()
        .sampling
        .is_some());
    assert_eq!(view.log_level, Some(LoggingLevel::Warning));
    assert_eq!(view.progress_token, Some(ProgressToken::from(5)));
    assert_eq!(view.extra.get(meta::TRACEPARENT), Some(&json!("00-abc")));
    let back: Meta = view.into();
    assert_eq!(back, meta);
    assert!(RequestMeta::try_from(
        serde_json::from_value::<Meta>(json!({"io.modelcontextprotocol/logLevel": "loud"}))
            .unwrap()
    )
    .is_err());

    let mut params = CallToolRequestParams::new("t", None);
    params.set_meta_value(meta::PROTOCOL_VERSION, json!("2026-07-28"));
    params.set_meta_value(meta::CLIENT_CAPABILITIES, json!({}));
    assert_eq!(
        params.request_meta().unwrap().protocol_version.as_deref(),
        Some("2026-07-28")
    );
    assert_eq!(
        params.meta_value(meta::CLIENT_CAPABILITIES),
        Some(&json!({}))
    );

    let mut result = CallToolResult::text("x");
    result.set_meta_value(meta::SERVER_INFO, ser(&Implementation::new("s", "1")));
    assert_eq!(result.result_meta().unwrap().server_info.unwrap().name, "s");
    result.set_result_type(Some(ResultType::Complete));
    assert_eq!(
        HasResultType::result_type(&result),
        Some(ResultType::Complete)
    );

    let rm = ResultMeta {
        subscription_id: Some(42.into()),
        ..Default::default()
    };
    assert_eq!(
        Meta::from(rm),
        serde_json::from_value::<Meta>(json!({"io.modelcontextprotocol/subscriptionId": 42}))
            .unwrap()
    );
    assert_eq!(meta::PROGRESS_TOKEN, "progressToken");
    assert_eq!(meta::RELATED_TASK, "io.modelcontextprotocol/related-task");
    assert_eq!(
        meta::MODEL_IMMEDIATE_RESPONSE,
        "io.modelcontextprotocol/model-immediate-response"
    );
}

#[test]
fn method_names_are_unique_and_typed() {
    let requests = [
        methods::Initialize::NAME,
        methods::Ping::NAME,
        methods::Discover::NAME,
        methods::ListTools::NAME,
        methods::CallTool::NAME,
        methods::ListPrompts::NAME,
        methods::GetPrompt::NAME,
        methods::ListResources::NAME,
        methods::ListResourceTemplates::NAME,
        methods::ReadResource::NAME,
        methods::Subscribe::NAME,
        methods::Unsubscribe::NAME,
        methods::Complete::NAME,
        methods::SetLevel::NAME,
        methods::SubscriptionsListen::NAME,
        methods::CreateMessage::NAME,
        methods::Elicit::NAME,
        methods::ListRoots::NAME,
        methods::GetTask::NAME,
        methods::GetTaskPayload::NAME,
        methods::ListTasks::NAME,
        methods::CancelTask::NAME,
        methods::UpdateTask::NAME,
    ];
    let notifications = [
        methods::Initialized::NAME,
        methods::Cancelled::NAME,
        methods::Progress::NAME,
        methods::LoggingMessage::NAME,
        methods::ResourceUpdated::NAME,
        methods::ResourceListChanged::NAME,
        methods::ToolListChanged::NAME,
        methods::PromptListChanged::NAME,
        methods::RootsListChanged::NAME,
        methods::ElicitationComplete::NAME,
        methods::TaskStatus::NAME,
        methods::SubscriptionsAcknowledged::NAME,
        methods::Tasks::NAME,
    ];
    let all: HashSet<&str> = requests
        .iter()
        .chain(notifications.iter())
        .copied()
        .collect();
    assert_eq!(all.len(), requests.len() + notifications.len());
    assert_eq!(methods::Discover::NAME, "server/discover");
    assert_eq!(methods::GetTaskPayload::NAME, "tasks/result");
    assert_eq!(methods::Tasks::NAME, "notifications/tasks");
    assert_eq!(methods::ext::GetTask::NAME, methods::GetTask::NAME);
    assert!(methods::ext::is_tasks_method("tasks/update"));
    assert!(methods::MRTR_METHODS.contains(&"resources/read"));

    // typed params/results go through the untyped envelopes
    let n = JsonRpcNotification::typed::<methods::Progress>(&ProgressNotificationParams::new(
        1.into(),
        1.0,
        None,
    ))
    .unwrap();
    assert_eq!(n.method, "notifications/progress");
    let p: <methods::Progress as NotificationMethod>::Params = n.params_as().unwrap();
    assert_eq!(p.progress, 1.0);
    let r = JsonRpcRequest::new(1, methods::ListTools::NAME, None);
    let params: <methods::ListTools as RequestMethod>::Params = r.params_as().unwrap();
    assert_eq!(params, PaginatedRequestParams::default());
    let resp = JsonRpcResultResponse::typed(1, &ListToolsResult::new(vec![])).unwrap();
    let back: <methods::ListTools as RequestMethod>::Result = resp.result_as().unwrap();
    assert!(back.tools.is_empty());
}

#[test]
fn versions_are_classified() {
    assert_eq!(version::LATEST_MODERN, "2026-07-28");
    assert_eq!(version::LATEST_LEGACY, "2025-11-25");
    assert_eq!(version::LEGACY_VERSIONS[0], version::LATEST_LEGACY);
    assert!(version::is_modern("2026-07-28"));
    assert!(!version::is_modern("2025-11-25"));
    assert!(version::is_legacy("2024-11-05"));
    assert!(!version::is_legacy("2026-07-28"));
    assert!(!version::is_known("2099-01-01"));
}

#[test]
fn capabilities_keep_extensions_and_extras() {
    let v = json!({"tools": {"listChanged": true, "x-new": 1}, "extensions": {"io.modelcontextprotocol/tasks": {}}, "x-top": {}});
    let caps = de::<ServerCapabilities>(v.clone()).unwrap();
    assert!(caps.has_extension(ext::EXTENSION_ID));
    assert_eq!(caps.tools.as_ref().unwrap().extra["x-new"], 1);
    assert_eq!(ser(&caps), v);
    let client = de::<ClientCapabilities>(json!({"elicitation": {}})).unwrap();
    assert_eq!(client.elicitation, Some(ElicitationCapability::default()));
}
