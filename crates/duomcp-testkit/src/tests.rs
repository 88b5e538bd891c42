#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{json, Value};

use super::WireValidator;

fn legacy() -> WireValidator {
    WireValidator::for_revision("2025-11-25")
}

fn modern() -> WireValidator {
    WireValidator::for_revision("2026-07-28")
}

fn rmeta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

#[track_caller]
fn assert_err_mentions(r: Result<(), String>, needles: &[&str]) {
    let e = r.expect_err("expected a validation error");
    for n in needles {
        assert!(e.contains(n), "error {e:?} does not mention {n:?}");
    }
}

#[test]
fn revisions() {
    assert_eq!(legacy().revision(), "2025-11-25");
    assert_eq!(modern().revision(), "2026-07-28");
    assert!(WireValidator::try_for_revision("2025-06-18").is_none());
    assert!(std::panic::catch_unwind(|| WireValidator::for_revision("1999-01-01")).is_err());
}

#[test]
fn validate_message_legacy() {
    let v = legacy();
    assert!(v
        .validate_message(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .is_ok());
    assert!(v
        .validate_message(&json!({"jsonrpc": "2.0", "id": 1, "result": {}}))
        .is_ok());
    assert_err_mentions(
        v.validate_message(
            &json!({"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}}),
        ),
        &["JSONRPCMessage", "JSONRPCErrorResponse", "/error/code"],
    );
    assert_err_mentions(
        v.validate_message(&json!({"jsonrpc": "2.0", "id": 1})),
        &["JSONRPCMessage"],
    );
}

#[test]
fn validate_message_modern() {
    let v = modern();
    let ok = json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}});
    assert!(v.validate_message(&ok).is_ok());
    assert_err_mentions(
        v.validate_message(&json!({"jsonrpc": "2.0", "id": 1, "result": {}})),
        &[
            "2026-07-28",
            "JSONRPCResultResponse",
            "/result",
            "resultType",
        ],
    );
    // the same message is fine in 2025-11-25
    assert!(legacy()
        .validate_message(&json!({"jsonrpc": "2.0", "id": 1, "result": {}}))
        .is_ok());
}

#[test]
fn validate_result_legacy() {
    let v = legacy();
    assert!(v
        .validate_result(
            "tools/call",
            &json!({"content": [{"type": "text", "text": "x"}]})
        )
        .is_ok());
    assert_err_mentions(
        v.validate_result("tools/call", &json!({"content": [{"type": "text"}]})),
        &["tools/call", "CallToolResult", "/content/0"],
    );
    assert!(v.validate_result("ping", &json!({})).is_ok());
    assert!(v
        .validate_result("logging/setLevel", &json!({"_meta": {}}))
        .is_ok());
    let init = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}});
    assert!(v.validate_result("initialize", &init).is_ok());
    assert_err_mentions(
        v.validate_result(
            "initialize",
            &json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
        ),
        &["InitializeResult", "serverInfo"],
    );
    let task = json!({"taskId": "t", "status": "working", "createdAt": "a", "lastUpdatedAt": "b", "ttl": null});
    assert!(v.validate_result("tasks/get", &task).is_ok());
    assert!(
        v.validate_result("tools/call", &json!({"task": task}))
            .is_ok(),
        "task-augmented call"
    );
    assert_err_mentions(
        v.validate_result("tasks/list", &json!({"tasks": [{}]})),
        &["ListTasksResult", "/tasks/0"],
    );
    assert_err_mentions(
        v.validate_result("server/discover", &json!({})),
        &["does not exist in 2025-11-25"],
    );
    assert!(v
        .validate_result("vendor/custom", &json!({"anything": 1}))
        .is_ok());
}

#[test]
fn validate_result_modern() {
    let v = modern();
    let tools = json!({"tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"});
    assert!(v.validate_result("tools/list", &tools).is_ok());
    assert_err_mentions(
        v.validate_result(
            "tools/list",
            &json!({"tools": [], "resultType": "complete"}),
        ),
        &["ListToolsResult", "ttlMs"],
    );
    let ir =
        json!({"resultType": "input_required", "inputRequests": {"a": {"method": "roots/list"}}});
    assert!(v.validate_result("tools/call", &ir).is_ok());
    assert_err_mentions(
        v.validate_result("tools/list", &ir),
        &["not allowed for tools/list"],
    );
    assert_err_mentions(
        v.validate_result(
            "tools/call",
            &json!({"content": [], "resultType": "partial"}),
        ),
        &["unrecognized resultType"],
    );
    let task = json!({"resultType": "task", "taskId": "t", "status": "working", "createdAt": "a",
                      "lastUpdatedAt": "a", "ttlMs": null});
    assert!(v.validate_result("tools/call", &task).is_ok());
    assert_err_mentions(
        v.validate_result("tools/call", &json!({"resultType": "task", "taskId": "t"})),
        &["ext-tasks CreateTaskResult"],
    );
    let discover = json!({"supportedVersions": ["2026-07-28"], "capabilities": {}, "resultType": "complete",
                          "ttlMs": 1000, "cacheScope": "public"});
    assert!(v.validate_result("server/discover", &discover).is_ok());
    let listen =
        json!({"resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": 1}});
    assert!(v.validate_result("subscriptions/listen", &listen).is_ok());
    assert_err_mentions(
        v.validate_result("subscriptions/listen", &json!({"resultType": "complete"})),
        &["SubscriptionsListenResult", "_meta"],
    );
    let detailed = json!({"resultType": "complete", "taskId": "t", "status": "completed", "createdAt": "a",
                          "lastUpdatedAt": "b", "ttlMs": 5, "result": {"content": []}});
    assert!(v.validate_result("tasks/get", &detailed).is_ok());
    assert!(v
        .validate_result("tasks/update", &json!({"resultType": "complete"}))
        .is_ok());
    assert_err_mentions(
        v.validate_result("ping", &json!({"resultType": "complete"})),
        &["does not exist in 2026-07-28"],
    );
}

#[test]
fn validate_server_message_legacy() {
    let v = legacy();
    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                          "params": {"progressToken": 1, "progress": 5}});
    assert!(v.validate_server_message(&progress, None).is_ok());
    assert_err_mentions(
        v.validate_server_message(
            &json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": 1}}),
            None,
        ),
        &["ServerNotification", "LoggingMessageNotification", "level"],
    );
    let sampling = json!({"jsonrpc": "2.0", "id": 4, "method": "sampling/createMessage",
                          "params": {"messages": [], "maxTokens": 10}});
    assert!(v.validate_server_message(&sampling, None).is_ok());
    assert_err_mentions(
        v.validate_server_message(
            &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "x"}}),
            None,
        ),
        &["ServerRequest"],
    );
    let resp = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": []}});
    assert!(v.validate_server_message(&resp, Some("tools/call")).is_ok());
    assert_err_mentions(
        v.validate_server_message(
            &json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": {}}}),
            Some("tools/list"),
        ),
        &["ListToolsResult", "/tools"],
    );
}

#[test]
fn validate_server_message_modern() {
    let v = modern();
    let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                     "params": {"notifications": {"toolsListChanged": true},
                                "_meta": {"io.modelcontextprotocol/subscriptionId": 7}}});
    assert!(v.validate_server_message(&ack, None).is_ok());
    let tasks = json!({"jsonrpc": "2.0", "method": "notifications/tasks", "params": {
        "taskId": "t", "status": "working", "createdAt": "a", "lastUpdatedAt": "b", "ttlMs": null}});
    assert!(v.validate_server_message(&tasks, None).is_ok());
    assert_err_mentions(
        v.validate_server_message(
            &json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": {}}),
            None,
        ),
        &["not a 2026-07-28 server notification"],
    );
    assert_err_mentions(
        v.validate_server_message(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "roots/list"}),
            None,
        ),
        &["must not send JSON-RPC requests"],
    );
    let resp =
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "resultType": "complete"}});
    assert!(v.validate_server_message(&resp, Some("tools/call")).is_ok());
    assert!(v.validate_server_message(&resp, None).is_ok());
    assert_err_mentions(
        v.validate_server_message(
            &json!({"jsonrpc": "2.0", "id": 1, "result": {"contents": [], "resultType": "complete"}}),
            Some("resources/read"),
        ),
        &["ReadResourceResult", "ttlMs"],
    );
}

#[test]
fn validate_client_message_legacy() {
    let v = legacy();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}});
    assert!(v.validate_client_message(&init, None).is_ok());
    assert_err_mentions(
        v.validate_client_message(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}}}),
            None,
        ),
        &["ClientRequest", "InitializeRequest", "clientInfo"],
    );
    assert!(v
        .validate_client_message(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            None
        )
        .is_ok());
    let answer = json!({"jsonrpc": "2.0", "id": "s1", "result": {"role": "assistant",
        "content": {"type": "text", "text": "hi"}, "model": "m"}});
    assert!(v
        .validate_client_message(&answer, Some("sampling/createMessage"))
        .is_ok());
    assert_err_mentions(
        v.validate_client_message(
            &json!({"jsonrpc": "2.0", "id": "e1", "result": {"action": "maybe"}}),
            Some("elicitation/create"),
        ),
        &["ElicitResult", "/action"],
    );
}

#[test]
fn validate_client_message_modern() {
    let v = modern();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "_meta": rmeta()}});
    assert!(v.validate_client_message(&call, None).is_ok());
    assert_err_mentions(
        v.validate_client_message(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}),
            None,
        ),
        &["ClientRequest", "CallToolRequest", "_meta"],
    );
    assert_err_mentions(
        v.validate_client_message(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
            None,
        ),
        &["ClientRequest"],
    );
    let get = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"taskId": "t"}});
    assert!(v.validate_client_message(&get, None).is_ok());
    assert_err_mentions(
        v.validate_client_message(&json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/update", "params": {"taskId": "t"}}), None),
        &["ext-tasks UpdateTaskRequest", "inputResponses"],
    );
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    assert!(v.validate_client_message(&cancel, None).is_ok());
    assert_err_mentions(
        v.validate_client_message(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}),
            None,
        ),
        &["ClientNotification", "requestId"],
    );
    assert_err_mentions(
        v.validate_client_message(
            &json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}}),
            None,
        ),
        &["must not send JSON-RPC responses"],
    );
}

#[test]
fn validate_definition_reaches_ext_tasks() {
    let v = modern();
    assert!(v
        .validate_definition("TasksExtensionCapability", &json!({}))
        .is_ok());
    assert!(v
        .validate_definition("TasksExtensionCapability", &json!({"x": 1}))
        .is_err());
    assert_err_mentions(
        v.validate_definition("NoSuchThing", &json!({})),
        &["no definition NoSuchThing"],
    );
    assert!(legacy()
        .validate_definition("Task", &json!({"taskId": "t"}))
        .is_err());
}

#[test]
fn validators_are_shared_across_threads() {
    let handles: Vec<_> = (0..4)
        .map(|i| {
            std::thread::spawn(move || {
                let v = if i % 2 == 0 { legacy() } else { modern() };
                v.validate_message(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": i}}))
            })
        })
        .collect();
    for h in handles {
        assert!(h.join().expect("thread").is_ok());
    }
}

#[test]
fn error_strings_are_specific() {
    let m = modern();
    assert_err_mentions(
        m.validate_result(
            "tools/call",
            &json!({"content": [{"type": "text"}], "resultType": "complete"}),
        ),
        &[
            "result of tools/call",
            "2026-07-28 CallToolResult",
            "at /content/0",
            "closest match",
            "\"text\" is a required property",
        ],
    );
    assert_err_mentions(
        legacy().validate_server_message(
            &json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": 1}}),
            None,
        ),
        &[
            "ServerNotification",
            "2025-11-25 LoggingMessageNotification",
            "at /params",
            "\"level\" is a required property",
        ],
    );
}
