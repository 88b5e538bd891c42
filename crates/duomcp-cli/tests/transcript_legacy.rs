//! Transcript tests of the reference server in the 2025-11-25 era, in-process over an in-memory
//! connection (and the real binary over stdio).
//! Every message the server sends is validated against the official 2025-11-25 schema.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use duomcp_testkit::text;
use serde_json::{json, Value};
use support::{Wire, LEGACY};

async fn ready() -> Wire {
    let mut w = Wire::reference(LEGACY);
    w.initialize(json!({})).await;
    w
}

#[tokio::test]
async fn initialize_negotiates_and_advertises_what_is_registered() {
    let mut w = Wire::reference(LEGACY);
    let r = w
        .ok("initialize", json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }))
        .await;
    assert_eq!(r["protocolVersion"], "2025-06-18");
    assert_eq!(r["serverInfo"]["name"], "duomcp-reference");
    assert!(r["instructions"].is_string());
    for cap in ["tools", "prompts", "resources", "logging", "completions"] {
        assert!(
            r["capabilities"].get(cap).is_some(),
            "missing capability {cap}: {r}"
        );
    }
    assert_eq!(r["capabilities"]["resources"]["subscribe"], true);
    assert!(
        r.get("resultType").is_none(),
        "legacy results carry no resultType"
    );

    let mut w = Wire::reference(LEGACY);
    let r = w.ok("initialize", json!({ "protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } })).await;
    assert_eq!(
        r["protocolVersion"], LEGACY,
        "an unknown version is answered with our latest"
    );
}

#[tokio::test]
async fn requests_before_initialize_are_rejected_but_ping_works() {
    let mut w = Wire::reference(LEGACY);
    assert_eq!(w.ok("ping", json!({})).await, json!({}));
    let e = w.err("tools/list", json!({})).await;
    assert_eq!(e["code"], -32600);
    w.initialize(json!({})).await;
    let e = w.err("initialize", json!({ "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } })).await;
    assert_eq!(e["code"], -32600, "a second initialize is refused");
}

#[tokio::test]
async fn tools_list_and_every_content_fixture() {
    let mut w = ready().await;
    let list = w.ok("tools/list", json!({})).await;
    let tools = list["tools"].as_array().unwrap();
    assert!(tools.len() >= 20);
    for t in tools {
        assert!(
            t["description"].is_string() && t["inputSchema"]["type"] == "object",
            "{t}"
        );
    }
    let schema = &tools
        .iter()
        .find(|t| t["name"] == "json_schema_2020_12_tool")
        .unwrap()["inputSchema"];
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["$defs"]["address"]["$anchor"], "addressDef");

    let r = w
        .ok("tools/call", json!({ "name": "test_simple_text" }))
        .await;
    assert_eq!(text(&r), "This is a simple text response for testing.");
    let r = w
        .ok(
            "tools/call",
            json!({ "name": "test_image_content", "arguments": {} }),
        )
        .await;
    assert_eq!(
        (
            r["content"][0]["type"].as_str(),
            r["content"][0]["mimeType"].as_str()
        ),
        (Some("image"), Some("image/png"))
    );
    let r = w
        .ok("tools/call", json!({ "name": "test_audio_content" }))
        .await;
    assert_eq!(r["content"][0]["mimeType"], "audio/wav");
    let r = w
        .ok("tools/call", json!({ "name": "test_embedded_resource" }))
        .await;
    assert_eq!(
        r["content"][0]["resource"]["uri"],
        "test://embedded-resource"
    );
    let r = w
        .ok(
            "tools/call",
            json!({ "name": "test_multiple_content_types" }),
        )
        .await;
    let kinds: Vec<&str> = r["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["text", "image", "resource"]);
    let r = w
        .ok("tools/call", json!({ "name": "test_error_handling" }))
        .await;
    assert_eq!(r["isError"], true);
    assert_eq!(
        text(&r),
        "This tool intentionally returns an error for testing"
    );
}

#[tokio::test]
async fn tool_errors_unknown_tools_and_invalid_arguments() {
    let mut w = ready().await;
    let e = w.err("tools/call", json!({ "name": "no_such_tool" })).await;
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap().contains("no_such_tool"));
    // Schema violation: an isError result naming the problem (SEP-1303), not an RPC error.
    let r = w
        .ok(
            "tools/call",
            json!({ "name": "test_sampling", "arguments": { "prompt": 42 } }),
        )
        .await;
    assert_eq!(r["isError"], true);
    assert!(text(&r).contains("prompt"), "{r}");
    let r = w
        .ok(
            "tools/call",
            json!({ "name": "json_schema_2020_12_tool", "arguments": { "name": "x", "bogus": 1 } }),
        )
        .await;
    assert_eq!(
        r["isError"], true,
        "additionalProperties:false is enforced: {r}"
    );
    let e = w.err("tools/call", json!({ "arguments": {} })).await;
    assert_eq!(e["code"], -32602);
    assert!(
        e["message"].as_str().unwrap().contains("name"),
        "the missing field is named: {e}"
    );
    let e = w
        .err("tools/list", json!({ "cursor": "not-a-cursor" }))
        .await;
    assert_eq!(e["code"], -32602);
    let e = w.err("no/such/method", json!({})).await;
    assert_eq!(e["code"], -32601);
}

#[tokio::test]
async fn logging_is_off_until_set_level_and_then_filtered() {
    let mut w = ready().await;
    w.ok("tools/call", json!({ "name": "test_tool_with_logging" }))
        .await;
    assert!(
        w.side.is_empty(),
        "no notifications/message before logging/setLevel: {:?}",
        w.side
    );
    assert_eq!(
        w.ok("logging/setLevel", json!({ "level": "error" })).await,
        json!({})
    );
    w.ok("tools/call", json!({ "name": "test_tool_with_logging" }))
        .await;
    assert!(w.side.is_empty(), "info messages are below error");
    w.ok("logging/setLevel", json!({ "level": "debug" })).await;
    w.ok("tools/call", json!({ "name": "test_tool_with_logging" }))
        .await;
    let logs: Vec<&Value> = w
        .side
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .collect();
    assert_eq!(logs.len(), 3);
    assert_eq!(logs[0]["params"]["data"], "Tool execution started");
    let e = w.err("logging/setLevel", json!({ "level": "loud" })).await;
    assert_eq!(e["code"], -32602);
}

#[tokio::test]
async fn progress_carries_the_token() {
    let mut w = ready().await;
    w.ok(
        "tools/call",
        json!({ "name": "test_tool_with_progress", "_meta": { "progressToken": "p-1" } }),
    )
    .await;
    let progress: Vec<f64> = w
        .side
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], "p-1");
            m["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    assert_eq!(progress, [0.0, 50.0, 100.0]);
    w.side.clear();
    w.ok("tools/call", json!({ "name": "test_tool_with_progress" }))
        .await;
    assert!(w.side.is_empty(), "no token, no progress");
}

#[tokio::test]
async fn prompts() {
    let mut w = ready().await;
    let list = w.ok("prompts/list", json!({})).await;
    let with_args = list["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "test_prompt_with_arguments")
        .unwrap()
        .clone();
    assert_eq!(with_args["arguments"].as_array().unwrap().len(), 2);
    assert_eq!(with_args["arguments"][0]["required"], true);
    let r = w
        .ok("prompts/get", json!({ "name": "test_simple_prompt" }))
        .await;
    assert_eq!(
        r["messages"][0]["content"]["text"],
        "This is a simple prompt for testing."
    );
    let r = w.ok("prompts/get", json!({ "name": "test_prompt_with_arguments", "arguments": { "arg1": "hello", "arg2": "world" } })).await;
    assert_eq!(
        r["messages"][0]["content"]["text"],
        "Prompt with arguments: arg1='hello', arg2='world'"
    );
    let e = w
        .err(
            "prompts/get",
            json!({ "name": "test_prompt_with_arguments", "arguments": { "arg1": "x" } }),
        )
        .await;
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap().contains("arg2"));
    let r = w.ok("prompts/get", json!({ "name": "test_prompt_with_embedded_resource", "arguments": { "resourceUri": "test://example-resource" } })).await;
    assert_eq!(
        r["messages"][0]["content"]["resource"]["uri"],
        "test://example-resource"
    );
    let r = w
        .ok("prompts/get", json!({ "name": "test_prompt_with_image" }))
        .await;
    assert_eq!(r["messages"][0]["content"]["type"], "image");
    let e = w.err("prompts/get", json!({ "name": "nope" })).await;
    assert_eq!(e["code"], -32602);
}

#[tokio::test]
async fn resources_templates_and_subscriptions() {
    let mut w = ready().await;
    let list = w.ok("resources/list", json!({})).await;
    assert!(list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["description"].is_string()));
    let r = w
        .ok("resources/read", json!({ "uri": "test://static-text" }))
        .await;
    assert_eq!(
        r["contents"][0]["text"],
        "This is the content of the static text resource."
    );
    assert_eq!(r["contents"][0]["mimeType"], "text/plain");
    let r = w
        .ok("resources/read", json!({ "uri": "test://static-binary" }))
        .await;
    assert!(r["contents"][0]["blob"].is_string());
    let t = w.ok("resources/templates/list", json!({})).await;
    assert_eq!(
        t["resourceTemplates"][0]["uriTemplate"],
        "test://template/{id}/data"
    );
    let r = w
        .ok(
            "resources/read",
            json!({ "uri": "test://template/123/data" }),
        )
        .await;
    let data: Value = serde_json::from_str(r["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(data["id"], "123");
    let e = w
        .err("resources/read", json!({ "uri": "test://missing" }))
        .await;
    assert_eq!(e["code"], -32002, "legacy resource-not-found code");
    assert_eq!(e["data"]["uri"], "test://missing");
    assert_eq!(
        w.ok(
            "resources/subscribe",
            json!({ "uri": "test://watched-resource" })
        )
        .await,
        json!({})
    );
    assert_eq!(
        w.ok(
            "resources/unsubscribe",
            json!({ "uri": "test://watched-resource" })
        )
        .await,
        json!({})
    );
}

#[tokio::test]
async fn completion() {
    let mut w = ready().await;
    let r = w
        .ok("completion/complete", json!({ "ref": { "type": "ref/prompt", "name": "test_prompt_with_arguments" }, "argument": { "name": "arg1", "value": "par" } }))
        .await;
    assert_eq!(r["completion"]["values"], json!(["paris", "park", "party"]));
}

#[tokio::test]
async fn server_requests_elicitation_and_sampling_round_trip() {
    let mut w = Wire::reference(LEGACY);
    w.initialize(json!({ "elicitation": {}, "sampling": {} }))
        .await;
    w.send(json!({ "jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": { "name": "test_elicitation", "arguments": { "message": "Who?" } } }))
        .await;
    let req = w.recv().await;
    assert_eq!(req["method"], "elicitation/create");
    assert_eq!(req["params"]["message"], "Who?");
    w.send(json!({ "jsonrpc": "2.0", "id": req["id"], "result": { "action": "accept", "content": { "username": "ada", "email": "a@b" } } }))
        .await;
    let r = w.response_to(&json!(10)).await;
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("ada"),
        "{r}"
    );

    w.send(json!({ "jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": { "name": "test_sampling", "arguments": { "prompt": "2+2?" } } }))
        .await;
    let req = w.recv().await;
    assert_eq!(req["method"], "sampling/createMessage");
    assert_eq!(req["params"]["maxTokens"], 100);
    w.send(json!({ "jsonrpc": "2.0", "id": req["id"], "result": { "role": "assistant", "content": { "type": "text", "text": "4" }, "model": "m" } }))
        .await;
    let r = w.response_to(&json!(11)).await;
    assert_eq!(r["result"]["content"][0]["text"], "LLM response: 4");
}

#[tokio::test]
async fn elicitation_without_the_capability_is_an_error_not_a_request() {
    let mut w = ready().await;
    let r = w
        .request(
            "tools/call",
            json!({ "name": "test_elicitation", "arguments": { "message": "x" } }),
        )
        .await;
    assert!(r.get("error").is_some(), "{r}");
    assert!(
        w.side.is_empty(),
        "no elicitation/create was sent: {:?}",
        w.side
    );
}

#[tokio::test]
async fn cancellation_sends_no_result() {
    let mut w = ready().await;
    w.send(json!({ "jsonrpc": "2.0", "id": "slow", "method": "tools/call", "params": { "name": "test_tool_with_logging" } })).await;
    w.send(json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": "slow", "reason": "changed my mind" } }))
        .await;
    // The next response must be the ping's: the cancelled call never answers.
    let ping = w.ok("ping", json!({})).await;
    assert_eq!(ping, json!({}));
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    w.send(json!({ "jsonrpc": "2.0", "id": "after", "method": "ping" }))
        .await;
    let next = w.recv().await;
    assert_eq!(
        next["id"], "after",
        "the cancelled request must not be answered: {next}"
    );
    assert!(
        !w.side.iter().any(|m| m["id"] == "slow"),
        "the cancelled request was answered: {:?}",
        w.side
    );
}

#[tokio::test]
async fn list_changed_reaches_the_connection() {
    let mut w = ready().await;
    w.ok("tools/call", json!({ "name": "test_trigger_tool_change" }))
        .await;
    let note = if let Some(n) = w
        .side
        .iter()
        .find(|m| m["method"] == "notifications/tools/list_changed")
    {
        n.clone()
    } else {
        w.recv().await
    };
    assert_eq!(note["method"], "notifications/tools/list_changed");
    let list = w.ok("tools/list", json!({})).await;
    assert!(list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "test_dynamic_tool"));
}

#[tokio::test]
async fn the_real_binary_speaks_stdio_and_exits_on_eof() {
    let mut w = Wire::spawn_binary(LEGACY);
    w.initialize(json!({})).await;
    let r = w
        .ok("tools/call", json!({ "name": "test_simple_text" }))
        .await;
    assert_eq!(text(&r), "This is a simple text response for testing.");
    w.close_input().await;
    assert!(w.recv_opt().await.is_none(), "stdout ends after stdin EOF");
}

#[tokio::test]
async fn pipelined_initialize_and_call_are_served_in_order() {
    let messages = [
        json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } }),
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "test_simple_text" } }),
    ];
    // Three lines in one write (on a byte pipe: the stdio framing), then three messages sent
    // without waiting (on an in-memory connection).
    for one_write in [true, false] {
        let mut w = if one_write {
            let mut batch = Vec::new();
            for msg in &messages {
                batch.extend(serde_json::to_vec(msg).unwrap());
                batch.push(b'\n');
            }
            let mut w = Wire::in_process_lines(duomcp_cli::reference::server(), LEGACY);
            w.send_raw(&batch).await;
            w
        } else {
            let mut w = Wire::reference(LEGACY);
            for msg in &messages {
                w.send(msg.clone()).await;
            }
            w
        };
        let first = w.recv().await;
        assert_eq!(first["id"], 1, "{one_write}");
        let second = w.recv().await;
        assert_eq!(second["id"], 2, "{one_write}");
        assert_eq!(
            text(&second["result"]),
            "This is a simple text response for testing.",
            "{second}"
        );
    }
}
