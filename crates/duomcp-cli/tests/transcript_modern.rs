//! Transcript tests of the reference server in the 2026-07-28 era, in-process over an in-memory
//! connection.
//! Every message the server sends is validated against the official 2026-07-28 schema.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use duomcp_testkit::text;
use serde_json::{json, Value};
use support::{meta, modern, Wire, MODERN};

#[tokio::test]
async fn discover_and_complete_results_carry_the_modern_fields() {
    let mut w = Wire::reference(MODERN);
    let d = w.ok("server/discover", modern(json!({}), json!({}))).await;
    assert_eq!(d["supportedVersions"], json!([MODERN]));
    assert_eq!(d["resultType"], "complete");
    assert_eq!(
        d["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "duomcp-reference"
    );
    assert!(d["ttlMs"].is_u64() && d["cacheScope"].is_string());
    for cap in ["tools", "prompts", "resources", "completions"] {
        assert!(d["capabilities"].get(cap).is_some(), "{cap}");
    }
    for method in [
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
    ] {
        let r = w.ok(method, modern(json!({}), json!({}))).await;
        assert_eq!(r["resultType"], "complete", "{method}");
        assert_eq!(r["ttlMs"], 30_000, "{method}");
        assert_eq!(r["cacheScope"], "public", "{method}");
    }
    let r = w
        .ok(
            "resources/read",
            modern(json!({ "uri": "test://static-text" }), json!({})),
        )
        .await;
    assert!(r["ttlMs"].is_u64() && r["cacheScope"].is_string() && r["resultType"] == "complete");
    let r = w
        .ok(
            "tools/call",
            modern(json!({ "name": "test_simple_text" }), json!({})),
        )
        .await;
    assert_eq!(r["resultType"], "complete");
    assert_eq!(text(&r), "This is a simple text response for testing.");
}

#[tokio::test]
async fn meta_is_validated() {
    let mut w = Wire::reference(MODERN);
    let e = w.err("server/discover", json!({})).await;
    assert_eq!(e["code"], -32602, "missing _meta");
    let e = w
        .err(
            "tools/list",
            json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": MODERN } }),
        )
        .await;
    assert_eq!(e["code"], -32602, "missing clientCapabilities");
    let e = w
        .err("tools/list", json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": "v999.0.0", "io.modelcontextprotocol/clientCapabilities": {} } }))
        .await;
    assert_eq!(e["code"], -32022);
    assert_eq!(e["data"]["supported"], json!([MODERN]));
    assert_eq!(e["data"]["requested"], "v999.0.0");
    let mut no_info = meta(json!({}));
    no_info
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientInfo");
    let r = w.ok("tools/list", json!({ "_meta": no_info })).await;
    assert!(r["tools"].is_array(), "clientInfo is optional");
}

#[tokio::test]
async fn removed_and_unknown_methods_are_method_not_found() {
    let mut w = Wire::reference(MODERN);
    for method in [
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "initialize",
        "nope/nothing",
    ] {
        let r = w
            .request(
                method,
                modern(json!({ "uri": "test://x", "level": "info" }), json!({})),
            )
            .await;
        assert_eq!(r["error"]["code"], -32601, "{method}: {r}");
        assert!(r["id"].is_number(), "the id is kept");
    }
}

#[tokio::test]
async fn resource_not_found_is_invalid_params_with_the_uri() {
    let mut w = Wire::reference(MODERN);
    let e = w
        .err(
            "resources/read",
            modern(
                json!({ "uri": "test://nonexistent-resource-for-conformance-testing" }),
                json!({}),
            ),
        )
        .await;
    assert_eq!(e["code"], -32602);
    assert_eq!(
        e["data"]["uri"],
        "test://nonexistent-resource-for-conformance-testing"
    );
}

#[tokio::test]
async fn missing_client_capability_is_32021() {
    let mut w = Wire::reference(MODERN);
    let e = w
        .err(
            "tools/call",
            modern(json!({ "name": "test_missing_capability" }), json!({})),
        )
        .await;
    assert_eq!(e["code"], -32021);
    assert_eq!(e["data"]["requiredCapabilities"], json!({ "sampling": {} }));
}

#[tokio::test]
async fn logs_only_when_asked_and_progress_with_token() {
    let mut w = Wire::reference(MODERN);
    w.ok(
        "tools/call",
        modern(json!({ "name": "test_tool_with_logging" }), json!({})),
    )
    .await;
    assert!(
        w.side.is_empty(),
        "no logLevel, no log messages: {:?}",
        w.side
    );
    let mut params = modern(json!({ "name": "test_tool_with_logging" }), json!({}));
    params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("info");
    params["_meta"]["progressToken"] = json!(7);
    w.ok("tools/call", params).await;
    assert_eq!(
        w.side
            .iter()
            .filter(|m| m["method"] == "notifications/message")
            .count(),
        3
    );
    w.side.clear();
    let mut params = modern(json!({ "name": "test_tool_with_progress" }), json!({}));
    params["_meta"]["progressToken"] = json!(7);
    w.ok("tools/call", params).await;
    let tokens: Vec<&Value> = w
        .side
        .iter()
        .map(|m| &m["params"]["progressToken"])
        .collect();
    assert_eq!(tokens, [&json!(7), &json!(7), &json!(7)]);
}

#[tokio::test]
async fn mrtr_elicitation_round_trip_and_missing_or_wrong_keys() {
    let mut w = Wire::reference(MODERN);
    let caps = json!({ "elicitation": {} });
    let call = modern(
        json!({ "name": "test_input_required_result_elicitation" }),
        caps.clone(),
    );
    let r1 = w.ok("tools/call", call.clone()).await;
    assert_eq!(r1["resultType"], "input_required");
    assert_eq!(
        r1["inputRequests"]["user_name"]["method"],
        "elicitation/create"
    );
    assert!(
        w.side.is_empty(),
        "no server→client requests in the modern era"
    );
    let state = r1["requestState"].as_str().unwrap().to_owned();

    // Wrong key: asked again, not an error.
    let mut retry = call.clone();
    retry["inputResponses"] =
        json!({ "wrong": { "action": "accept", "content": { "name": "x" } } });
    retry["requestState"] = json!(state);
    let again = w.ok("tools/call", retry).await;
    assert_eq!(again["resultType"], "input_required");
    assert!(again["inputRequests"].get("user_name").is_some());

    let mut retry = call.clone();
    retry["inputResponses"] = json!({ "user_name": { "action": "accept", "content": { "name": "Ada" } }, "extra": { "junk": true } });
    retry["requestState"] = json!(state);
    let done = w.ok("tools/call", retry).await;
    assert_eq!(done["resultType"], "complete");
    assert_eq!(text(&done), "Hello, Ada!");
}

#[tokio::test]
async fn mrtr_multi_round_keeps_earlier_answers() {
    let mut w = Wire::reference(MODERN);
    let call = modern(
        json!({ "name": "test_input_required_result_multi_round" }),
        json!({ "elicitation": {} }),
    );
    let r1 = w.ok("tools/call", call.clone()).await;
    assert!(r1["inputRequests"].get("step1").is_some());
    let mut c2 = call.clone();
    c2["inputResponses"] = json!({ "step1": { "action": "accept", "content": { "name": "Ada" } } });
    c2["requestState"] = r1["requestState"].clone();
    let r2 = w.ok("tools/call", c2).await;
    assert_eq!(r2["resultType"], "input_required");
    assert!(r2["inputRequests"].get("step2").is_some());
    assert_ne!(r2["requestState"], r1["requestState"], "state evolves");
    let mut c3 = call.clone();
    c3["inputResponses"] =
        json!({ "step2": { "action": "accept", "content": { "color": "green" } } });
    c3["requestState"] = r2["requestState"].clone();
    let r3 = w.ok("tools/call", c3).await;
    assert_eq!(text(&r3), "Ada likes green");
}

#[tokio::test]
async fn mrtr_multiple_inputs_state_and_tampering() {
    let mut w = Wire::reference(MODERN);
    let caps = json!({ "elicitation": {}, "sampling": {}, "roots": {} });
    let call = modern(
        json!({ "name": "test_input_required_result_multiple_inputs" }),
        caps.clone(),
    );
    let r1 = w.ok("tools/call", call.clone()).await;
    let keys: Vec<&String> = r1["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["user_name", "greeting", "client_roots"]);
    let mut c2 = call.clone();
    c2["inputResponses"] = json!({
        "user_name": { "action": "accept", "content": { "name": "Ada" } },
        "greeting": { "role": "assistant", "content": { "type": "text", "text": "Hi" }, "model": "m" },
        "client_roots": { "roots": [{ "uri": "file:///a" }] }
    });
    c2["requestState"] = r1["requestState"].clone();
    let r2 = w.ok("tools/call", c2).await;
    assert_eq!(text(&r2), "Hi Ada (1 roots)");

    let call = modern(
        json!({ "name": "test_input_required_result_request_state" }),
        caps.clone(),
    );
    let r1 = w.ok("tools/call", call.clone()).await;
    let mut c2 = call.clone();
    c2["inputResponses"] = json!({ "confirm": { "action": "accept", "content": { "ok": true } } });
    c2["requestState"] = r1["requestState"].clone();
    assert!(text(&w.ok("tools/call", c2.clone()).await).contains("state-ok"));

    let mut tampered = r1["requestState"].as_str().unwrap().to_owned().into_bytes();
    let i = tampered.len() / 2;
    tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
    c2["requestState"] = json!(String::from_utf8(tampered).unwrap());
    let e = w.err("tools/call", c2.clone()).await;
    assert_eq!(e["code"], -32602);

    // State issued for one tool is refused by another.
    let other = modern(
        json!({ "name": "test_input_required_result_tampered_state" }),
        caps.clone(),
    );
    let mut replay = other.clone();
    replay["requestState"] = r1["requestState"].clone();
    replay["inputResponses"] =
        json!({ "confirm": { "action": "accept", "content": { "ok": true } } });
    assert_eq!(w.err("tools/call", replay).await["code"], -32602);
}

#[tokio::test]
async fn mrtr_capability_check_and_prompts() {
    let mut w = Wire::reference(MODERN);
    let r = w
        .ok(
            "tools/call",
            modern(
                json!({ "name": "test_input_required_result_capabilities" }),
                json!({ "sampling": {} }),
            ),
        )
        .await;
    let keys: Vec<&String> = r["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["capital_question"], "only what the client declared");

    let get = modern(
        json!({ "name": "test_input_required_result_prompt" }),
        json!({ "elicitation": {} }),
    );
    let r1 = w.ok("prompts/get", get.clone()).await;
    assert_eq!(r1["resultType"], "input_required");
    let mut g2 = get.clone();
    g2["inputResponses"] =
        json!({ "user_context": { "action": "accept", "content": { "context": "tests" } } });
    g2["requestState"] = r1["requestState"].clone();
    let r2 = w.ok("prompts/get", g2).await;
    assert_eq!(r2["resultType"], "complete");
    assert_eq!(
        r2["messages"][0]["content"]["text"],
        "Use this context: tests"
    );
}

#[tokio::test]
async fn listen_acknowledges_then_tags_every_notification() {
    let mut w = Wire::reference(MODERN);
    w.send(
        json!({ "jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen",
        "params": modern(json!({ "notifications": { "toolsListChanged": true } }), json!({})) }),
    )
    .await;
    let ack = w.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );
    assert_eq!(ack["params"]["notifications"]["toolsListChanged"], true);
    w.ok(
        "tools/call",
        modern(json!({ "name": "test_trigger_prompt_change" }), json!({})),
    )
    .await;
    w.ok(
        "tools/call",
        modern(json!({ "name": "test_trigger_tool_change" }), json!({})),
    )
    .await;
    let mut seen = w.side.clone();
    if !seen
        .iter()
        .any(|m| m["method"] == "notifications/tools/list_changed")
    {
        seen.push(w.recv().await);
    }
    assert!(
        !seen
            .iter()
            .any(|m| m["method"] == "notifications/prompts/list_changed"),
        "not asked for: {seen:?}"
    );
    let n = seen
        .iter()
        .find(|m| m["method"] == "notifications/tools/list_changed")
        .unwrap();
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );
    // Cancelling the listen request ends it without a response.
    w.send(json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": "sub-1" } })).await;
    assert_eq!(
        w.ok("tools/list", modern(json!({}), json!({}))).await["resultType"],
        "complete"
    );
}

#[tokio::test]
async fn listen_ends_gracefully_at_end_of_input() {
    let mut w = Wire::reference(MODERN);
    w.send(
        json!({ "jsonrpc": "2.0", "id": 5, "method": "subscriptions/listen",
        "params": modern(json!({ "notifications": { "toolsListChanged": true } }), json!({})) }),
    )
    .await;
    assert_eq!(
        w.recv().await["method"],
        "notifications/subscriptions/acknowledged"
    );
    w.close_input().await;
    let end = w.recv().await;
    assert_eq!(end["id"], 5);
    assert_eq!(end["result"]["resultType"], "complete");
    assert_eq!(
        end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        5
    );
}
