//! Developer-experience acceptance checks, in both revisions (every server message validated
//! against the official schema of the revision): input validation names the field in an
//! `isError` result, output that breaks the `outputSchema` is an error, and tools registered or
//! removed at run time reach connected clients as `list_changed`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use duomcp::schema::CallToolResult;
use duomcp::server::{Args, Json, Server, ToolSpec};
use duomcp_testkit::text;
use serde_json::{json, Value};
use support::{modern, Wire, LEGACY, MODERN};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Order {
    /// How many items.
    quantity: u32,
    sku: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Receipt {
    total: u32,
}

fn server() -> Server {
    Server::builder()
        .tool("order", |Args(o): Args<Order>| async move {
            Json(Receipt {
                total: o.quantity * 3 + o.sku.len() as u32,
            })
        })
        .tool(
            ToolSpec::new("liar").output_schema(json!({
                "type": "object",
                "properties": { "total": { "type": "integer" } },
                "required": ["total"]
            })),
            || async {
                let mut r = CallToolResult::new(vec![]);
                r.structured_content = Some(json!({ "total": "many" }));
                r
            },
        )
        .build()
}

/// A connection in `revision`, ready for calls, and the params shaper of that revision.
async fn connect(server: Server, revision: &str) -> Wire {
    let mut w = Wire::in_process(server, revision);
    if revision == LEGACY {
        w.initialize(json!({})).await;
    }
    w
}

fn params(revision: &str, p: Value) -> Value {
    if revision == MODERN {
        modern(p, json!({}))
    } else {
        p
    }
}

#[tokio::test]
async fn bad_input_is_an_is_error_result_naming_the_field_in_both_eras() {
    for revision in [LEGACY, MODERN] {
        let mut w = connect(server(), revision).await;
        let ok = w
            .ok(
                "tools/call",
                params(
                    revision,
                    json!({ "name": "order", "arguments": { "quantity": 2, "sku": "abc" } }),
                ),
            )
            .await;
        assert_eq!(ok["structuredContent"], json!({ "total": 9 }), "{ok}");

        let wrong_type = w
            .ok(
                "tools/call",
                params(
                    revision,
                    json!({ "name": "order", "arguments": { "quantity": "two", "sku": "abc" } }),
                ),
            )
            .await;
        assert_eq!(wrong_type["isError"], true, "{revision}: {wrong_type}");
        assert!(text(&wrong_type).contains("/quantity"), "{wrong_type}");

        let missing = w
            .ok(
                "tools/call",
                params(
                    revision,
                    json!({ "name": "order", "arguments": { "quantity": 1 } }),
                ),
            )
            .await;
        assert_eq!(missing["isError"], true, "{missing}");
        assert!(text(&missing).contains("sku"), "{missing}");
    }
}

#[tokio::test]
async fn output_that_breaks_the_output_schema_is_an_error_in_both_eras() {
    for revision in [LEGACY, MODERN] {
        let mut w = connect(server(), revision).await;
        let e = w
            .err("tools/call", params(revision, json!({ "name": "liar" })))
            .await;
        assert_eq!(e["code"], -32603, "{revision}: {e}");
        let message = e["message"].as_str().unwrap();
        assert!(
            message.contains("liar") && message.contains("outputSchema"),
            "{message}"
        );
    }
}

#[tokio::test]
async fn tools_added_and_removed_at_run_time_are_announced_in_both_eras() {
    // 2025-11-25: on the session's connection.
    let server = server();
    let mut w = connect(server.clone(), LEGACY).await;
    server.add_tool("late", || async { "late" });
    let note = w.recv().await;
    assert_eq!(note["method"], "notifications/tools/list_changed");
    let list = w.ok("tools/list", json!({})).await;
    assert!(list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "late"));
    assert_eq!(
        text(&w.ok("tools/call", json!({ "name": "late" })).await),
        "late"
    );
    assert!(server.remove_tool("late"));
    let note = w.recv().await;
    assert_eq!(note["method"], "notifications/tools/list_changed");
    let e = w.err("tools/call", json!({ "name": "late" })).await;
    assert_eq!(e["code"], -32602);

    // 2026-07-28: on a `subscriptions/listen` stream that asked for it.
    let mut m = connect(server.clone(), MODERN).await;
    m.send(
        json!({ "jsonrpc": "2.0", "id": "listen", "method": "subscriptions/listen",
        "params": modern(json!({ "notifications": { "toolsListChanged": true } }), json!({})) }),
    )
    .await;
    let ack = m.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    server.add_tool("later", || async { "later" });
    let note = m.recv().await;
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    assert_eq!(
        note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen"
    );
    let r = m
        .ok("tools/call", modern(json!({ "name": "later" }), json!({})))
        .await;
    assert_eq!(text(&r), "later");
    assert!(server.remove_tool("later"));
    let note = m.recv().await;
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
}
