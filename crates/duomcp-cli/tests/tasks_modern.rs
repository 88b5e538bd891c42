//! Transcript tests of 2026-07-28 tasks (extension `io.modelcontextprotocol/tasks`): negotiation
//! per request, server-directed creation, `tasks/get` / `tasks/update` / `tasks/cancel`, input
//! requests, MRTR before a task, ttl, and `notifications/tasks` on `subscriptions/listen`.
//! Every server message is validated against the 2026-07-28 and ext-tasks schemas.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use duomcp::clock::ManualClock;
use duomcp::schema::TaskSupport;
use duomcp::server::tasks::TaskConfig;
use duomcp::server::{Context, Server, ToolSpec};
use serde_json::{json, Value};
use std::time::Duration;
use support::{modern, Wire, MODERN};

const EXT: &str = "io.modelcontextprotocol/tasks";

fn with_tasks() -> Value {
    json!({ "elicitation": {}, "extensions": { EXT: {} } })
}

async fn call(w: &mut Wire, tool: &str, args: Value) -> Value {
    w.ok(
        "tools/call",
        modern(json!({ "name": tool, "arguments": args }), with_tasks()),
    )
    .await
}

async fn create(w: &mut Wire, tool: &str, args: Value) -> String {
    let r = call(w, tool, args).await;
    assert_eq!(r["resultType"], "task", "{r}");
    r["taskId"].as_str().unwrap().to_owned()
}

async fn get(w: &mut Wire, id: &str) -> Value {
    let t = w
        .ok("tasks/get", modern(json!({ "taskId": id }), with_tasks()))
        .await;
    assert_eq!(t["resultType"], "complete", "{t}");
    t
}

async fn wait_for(w: &mut Wire, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..300 {
        let t = get(w, id).await;
        if done(&t) {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("task {id} never reached the awaited state")
}

fn terminal(t: &Value) -> bool {
    matches!(
        t["status"].as_str(),
        Some("completed" | "failed" | "cancelled")
    )
}

async fn update(w: &mut Wire, id: &str, responses: Value) -> Value {
    w.ok(
        "tasks/update",
        modern(
            json!({ "taskId": id, "inputResponses": responses }),
            with_tasks(),
        ),
    )
    .await
}

async fn cancel(w: &mut Wire, id: &str) -> Value {
    w.ok(
        "tasks/cancel",
        modern(json!({ "taskId": id }), with_tasks()),
    )
    .await
}

fn is_ack(v: &Value) -> bool {
    v["resultType"] == "complete"
        && ["taskId", "status", "result", "error", "inputRequests"]
            .iter()
            .all(|k| v.get(*k).is_none())
}

#[tokio::test]
async fn the_extension_is_advertised_and_tools_list_has_no_task_support() {
    let mut w = Wire::reference(MODERN);
    let d = w.ok("server/discover", modern(json!({}), json!({}))).await;
    assert_eq!(d["capabilities"]["extensions"][EXT], json!({}));
    assert!(
        d["capabilities"].get("tasks").is_none(),
        "no 2025-11-25 tasks slot"
    );
    let tools = w.ok("tools/list", modern(json!({}), json!({}))).await;
    assert!(tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t.get("execution").is_none()));
}

#[tokio::test]
async fn without_the_extension_there_are_no_tasks() {
    let mut w = Wire::reference(MODERN);
    let r = w
        .ok(
            "tools/call",
            modern(
                json!({ "name": "slow_compute", "arguments": { "seconds": 0 } }),
                json!({}),
            ),
        )
        .await;
    assert_eq!(
        r["resultType"], "complete",
        "an optional tool runs inline: {r}"
    );
    assert!(r.get("taskId").is_none());
    let e = w
        .err(
            "tools/call",
            modern(json!({ "name": "failing_job", "arguments": {} }), json!({})),
        )
        .await;
    assert_eq!(e["code"], -32021, "{e}");
    assert_eq!(
        e["data"]["requiredCapabilities"]["extensions"][EXT],
        json!({})
    );
    for (method, params) in [
        ("tasks/get", json!({ "taskId": "x" })),
        (
            "tasks/update",
            json!({ "taskId": "x", "inputResponses": {} }),
        ),
        ("tasks/cancel", json!({ "taskId": "x" })),
        (
            "subscriptions/listen",
            json!({ "notifications": { "taskIds": ["x"] } }),
        ),
    ] {
        let e = w.err(method, modern(params, json!({}))).await;
        assert_eq!(e["code"], -32021, "{method}: {e}");
    }
    for method in ["tasks/result", "tasks/list"] {
        let e = w
            .err(method, modern(json!({ "taskId": "x" }), with_tasks()))
            .await;
        assert_eq!(e["code"], -32601, "{method} is removed: {e}");
    }
}

#[tokio::test]
async fn a_task_is_created_flat_and_completes_with_the_inlined_result() {
    let mut w = Wire::reference(MODERN);
    // A legacy `task` hint is tolerated and never promotes a sync tool.
    let r = w
        .ok(
            "tools/call",
            modern(
                json!({ "name": "greet", "arguments": { "name": "Ada" }, "task": { "ttl": 1000 } }),
                with_tasks(),
            ),
        )
        .await;
    assert_eq!(r["resultType"], "complete");
    assert_eq!(r["content"][0]["text"], "Hello, Ada!");

    let r = call(
        &mut w,
        "slow_compute",
        json!({ "seconds": 0.2, "label": "m" }),
    )
    .await;
    assert_eq!(r["resultType"], "task");
    assert_eq!(r["status"], "working");
    assert!(r["ttlMs"].as_u64().unwrap() > 0 && r["pollIntervalMs"] == 500);
    for absent in [
        "task",
        "ttl",
        "pollInterval",
        "requestState",
        "result",
        "inputRequests",
    ] {
        assert!(r.get(absent).is_none(), "{absent} in {r}");
    }
    assert!(r["_meta"]["io.modelcontextprotocol/serverInfo"].is_object());
    let id = r["taskId"].as_str().unwrap();
    // Durable before the answer: an immediate tasks/get resolves.
    let t = get(&mut w, id).await;
    assert_eq!(t["taskId"], id);
    let t = wait_for(&mut w, id, terminal).await;
    assert_eq!(t["status"], "completed");
    assert_eq!(t["result"]["content"][0]["text"], "Computed m in 0.2s");
    assert!(
        t["result"].get("_meta").is_none(),
        "no related-task meta on the inlined result"
    );
    assert!(t.get("error").is_none() && t.get("requestState").is_none());
}

#[tokio::test]
async fn tool_errors_complete_and_protocol_errors_fail() {
    let mut w = Wire::reference(MODERN);
    let id = create(&mut w, "failing_job", json!({})).await;
    let t = wait_for(&mut w, &id, terminal).await;
    assert_eq!(t["status"], "completed", "{t}");
    assert_eq!(t["result"]["isError"], true);

    let id = create(&mut w, "protocol_error_job", json!({})).await;
    let t = wait_for(&mut w, &id, terminal).await;
    assert_eq!(t["status"], "failed", "{t}");
    assert_eq!(t["error"]["code"], -32603);
    assert!(t.get("result").is_none());
    assert!(t["statusMessage"].is_string());
}

#[tokio::test]
async fn input_requests_are_answered_with_tasks_update() {
    let mut w = Wire::reference(MODERN);
    let id = create(&mut w, "confirm_delete", json!({ "filename": "b.txt" })).await;
    let t = wait_for(&mut w, &id, |t| t["status"] == "input_required").await;
    let requests = t["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests["confirm"]["method"], "elicitation/create");
    assert_eq!(requests["confirm"]["params"]["message"], "Delete b.txt?");

    // Unknown keys are ignored (acked, nothing changes).
    let ack = update(&mut w, &id, json!({ "unknown-key": { "ignored": true } })).await;
    assert!(is_ack(&ack), "{ack}");
    assert_eq!(get(&mut w, &id).await["status"], "input_required");

    // An answer of the wrong shape is not used: the task asks again, under a new key.
    let ack = update(&mut w, &id, json!({ "confirm": { "bogus": 1 } })).await;
    assert!(is_ack(&ack));
    let t = wait_for(&mut w, &id, |t| {
        t["inputRequests"].get("confirm-2").is_some()
    })
    .await;
    assert!(
        t["inputRequests"].get("confirm").is_none(),
        "keys are never reused: {t}"
    );

    let ack = update(
        &mut w,
        &id,
        json!({ "confirm-2": { "action": "accept", "content": { "confirm": true } } }),
    )
    .await;
    assert!(is_ack(&ack));
    let t = wait_for(&mut w, &id, terminal).await;
    assert_eq!(t["status"], "completed");
    assert_eq!(t["result"]["content"][0]["text"], "Deleted b.txt");
    // Answering again after the fact changes nothing.
    let ack = update(&mut w, &id, json!({ "confirm-2": { "action": "decline" } })).await;
    assert!(is_ack(&ack));
    assert_eq!(get(&mut w, &id).await["status"], "completed");
}

#[tokio::test]
async fn partial_answers_keep_the_task_waiting_for_the_rest() {
    let mut w = Wire::reference(MODERN);
    let id = create(&mut w, "multi_input", json!({})).await;
    let t = wait_for(&mut w, &id, |t| {
        t["inputRequests"].as_object().is_some_and(|r| r.len() == 2)
    })
    .await;
    assert_eq!(t["status"], "input_required");
    update(
        &mut w,
        &id,
        json!({ "name": { "action": "accept", "content": { "name": "Lin" } } }),
    )
    .await;
    let t = get(&mut w, &id).await;
    assert_eq!(
        t["status"], "input_required",
        "one answer is still missing: {t}"
    );
    let keys: Vec<&String> = t["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["confirm"]);
    update(
        &mut w,
        &id,
        json!({ "confirm": { "action": "accept", "content": { "confirm": true } } }),
    )
    .await;
    let t = wait_for(&mut w, &id, terminal).await;
    assert_eq!(
        t["result"]["content"][0]["text"],
        "Hello, Lin (confirmed: true)"
    );
}

#[tokio::test]
async fn cancellation_is_acknowledged_and_idempotent() {
    let mut w = Wire::reference(MODERN);
    let id = create(&mut w, "slow_compute", json!({ "seconds": 60 })).await;
    assert!(is_ack(&cancel(&mut w, &id).await));
    let t = wait_for(&mut w, &id, terminal).await;
    assert_eq!(t["status"], "cancelled");
    assert!(
        is_ack(&cancel(&mut w, &id).await),
        "cancelling a finished task is acked too"
    );

    // A task parked on input: cancel, then a late answer is ignored.
    let id = create(&mut w, "confirm_delete", json!({ "filename": "c.txt" })).await;
    wait_for(&mut w, &id, |t| t["status"] == "input_required").await;
    cancel(&mut w, &id).await;
    update(
        &mut w,
        &id,
        json!({ "confirm": { "action": "accept", "content": { "confirm": true } } }),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let t = get(&mut w, &id).await;
    assert_eq!(t["status"], "cancelled");
    assert!(t.get("inputRequests").is_none() && t.get("result").is_none());

    let e = w
        .err(
            "tasks/cancel",
            modern(json!({ "taskId": "nope" }), with_tasks()),
        )
        .await;
    assert_eq!(e["code"], -32602);
}

#[tokio::test]
async fn cancel_racing_completion_settles_once() {
    let mut w = Wire::reference(MODERN);
    for _ in 0..10 {
        let id = create(&mut w, "slow_compute", json!({ "seconds": 0 })).await;
        assert!(is_ack(&cancel(&mut w, &id).await));
        let first = wait_for(&mut w, &id, terminal).await;
        assert!(
            first["status"] == "cancelled" || first["status"] == "completed",
            "{first}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(
            get(&mut w, &id).await["status"],
            first["status"],
            "terminal is final"
        );
    }
}

#[tokio::test]
async fn unknown_and_tampered_ids_are_invalid_params() {
    let mut w = Wire::reference(MODERN);
    let id = create(&mut w, "slow_compute", json!({ "seconds": 30 })).await;
    let tampered: String = id.chars().rev().collect();
    for bad in [tampered.as_str(), "tasks-conformance-nonexistent-12345"] {
        let e = w
            .err("tasks/get", modern(json!({ "taskId": bad }), with_tasks()))
            .await;
        assert_eq!(e["code"], -32602, "{e}");
        let e = w
            .err(
                "tasks/update",
                modern(json!({ "taskId": bad, "inputResponses": {} }), with_tasks()),
            )
            .await;
        assert_eq!(e["code"], -32602, "{e}");
    }
    let e = w
        .err(
            "tasks/update",
            modern(json!({ "taskId": id }), with_tasks()),
        )
        .await;
    assert_eq!(e["code"], -32602, "inputResponses is required: {e}");
    cancel(&mut w, &id).await;
}

#[tokio::test]
async fn mrtr_rounds_come_before_the_task_when_the_tool_defers_it() {
    let mut w = Wire::reference(MODERN);
    let r1 = call(&mut w, "test_tool_with_task", json!({})).await;
    assert_eq!(r1["resultType"], "input_required", "{r1}");
    assert!(r1.get("taskId").is_none());
    assert!(r1["inputRequests"]["user_name"].is_object());
    let r2 = w
        .ok(
            "tools/call",
            modern(
                json!({
                    "name": "test_tool_with_task",
                    "arguments": {},
                    "inputResponses": { "user_name": { "action": "accept", "content": { "name": "Alice" } } },
                    "requestState": r1["requestState"],
                }),
                with_tasks(),
            ),
        )
        .await;
    assert_eq!(r2["resultType"], "task", "{r2}");
    assert!(r2.get("requestState").is_none() && r2.get("inputRequests").is_none());
    let id = r2["taskId"].as_str().unwrap();
    let t = wait_for(&mut w, id, terminal).await;
    let text = t["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Hello, Alice!") && text.contains(id),
        "{text}"
    );

    // A client without the extension cannot use a task-only tool at all.
    let e = w
        .err(
            "tools/call",
            modern(
                json!({ "name": "test_tool_with_task", "arguments": {} }),
                json!({ "elicitation": {} }),
            ),
        )
        .await;
    assert_eq!(e["code"], -32021);
}

#[tokio::test]
async fn listen_streams_get_notifications_for_the_task_ids_they_name() {
    let mut w = Wire::reference(MODERN);
    let id = create(&mut w, "confirm_delete", json!({ "filename": "d.txt" })).await;
    w.send(json!({
        "jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": modern(json!({ "notifications": { "taskIds": [id, "not-a-task"] } }), with_tasks()),
    }))
    .await;
    let ack = w.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([id]),
        "only real tasks are honoured"
    );
    // Wait until the task parks, then answer it; both changes are pushed.
    wait_for(&mut w, &id, |t| t["status"] == "input_required").await;
    update(
        &mut w,
        &id,
        json!({ "confirm": { "action": "accept", "content": { "confirm": false } } }),
    )
    .await;
    let done = loop {
        let n = w.recv().await;
        if n["method"] == "notifications/tasks" && n["params"]["status"] == "completed" {
            break n;
        }
        w.side.push(n);
    };
    assert_eq!(done["params"]["taskId"], id.as_str());
    assert_eq!(done["params"]["result"]["content"][0]["text"], "Kept d.txt");
    assert_eq!(
        done["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-1"
    );
    let side: Vec<&Value> = w
        .side
        .iter()
        .filter(|m| m["method"] == "notifications/tasks")
        .collect();
    assert!(
        side.iter().any(|n| n["params"]["status"] == "working"),
        "the answer moved it back to working first: {side:?}"
    );
}

#[tokio::test]
async fn tasks_expire_after_their_ttl() {
    let clock = ManualClock::new(1_000_000);
    let server = Server::builder()
        .tasks(
            TaskConfig::default()
                .clock(clock.clone())
                .default_ttl(Duration::from_secs(10)),
        )
        .tool(
            ToolSpec::new("wait").task_support(TaskSupport::Required),
            |ctx: Context| async move {
                ctx.cancelled().await;
                "never"
            },
        )
        .build();
    let mut w = Wire::in_process(server, MODERN);
    let r = call(&mut w, "wait", json!({})).await;
    assert_eq!(r["ttlMs"], 10_000);
    let id = r["taskId"].as_str().unwrap();
    clock.advance(Duration::from_millis(9_999));
    assert_eq!(
        get(&mut w, id).await["status"],
        "working",
        "kept for its whole ttl"
    );
    clock.advance(Duration::from_millis(1));
    let e = w
        .err("tasks/get", modern(json!({ "taskId": id }), with_tasks()))
        .await;
    assert_eq!(e["code"], -32602, "{e}");
}

#[tokio::test]
async fn tasks_of_the_other_era_are_foreign() {
    // One server, two connections: a 2025-11-25 session and 2026-07-28 requests.
    let server = duomcp_cli::reference::server();
    let mut old = Wire::in_process(server.clone(), support::LEGACY);
    old.initialize(json!({})).await;
    let mut new = Wire::in_process(server, MODERN);
    let r = old
        .ok(
            "tools/call",
            json!({ "name": "slow_compute", "arguments": { "seconds": 30 }, "task": {} }),
        )
        .await;
    let legacy_id = r["task"]["taskId"].as_str().unwrap().to_owned();
    let modern_id = create(&mut new, "slow_compute", json!({ "seconds": 30 })).await;
    for method in ["tasks/get", "tasks/cancel"] {
        let e = new
            .err(method, modern(json!({ "taskId": legacy_id }), with_tasks()))
            .await;
        assert_eq!(e["code"], -32602, "{method} of a 2025-11-25 task: {e}");
    }
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let e = old.err(method, json!({ "taskId": modern_id })).await;
        assert_eq!(e["code"], -32602, "{method} of a 2026-07-28 task: {e}");
    }
    // Both still run, untouched by the foreign attempts.
    assert_eq!(get(&mut new, &modern_id).await["status"], "working");
    let t = old.ok("tasks/get", json!({ "taskId": legacy_id })).await;
    assert_eq!(t["status"], "working");
    cancel(&mut new, &modern_id).await;
    old.ok("tasks/cancel", json!({ "taskId": legacy_id })).await;
}

#[tokio::test]
async fn progress_in_a_task_becomes_its_status_message() {
    // 2026-07-28 tasks carry no notifications: `Context::progress` shows when polled.
    let server = Server::builder()
        .tool(
            ToolSpec::new("steps").task_support(TaskSupport::Required),
            |ctx: Context| async move {
                ctx.progress(1.0, Some(3.0), None).await;
                tokio::time::sleep(Duration::from_millis(300)).await;
                ctx.progress(2.0, Some(3.0), Some("almost there".into()))
                    .await;
                tokio::time::sleep(Duration::from_millis(300)).await;
                "done"
            },
        )
        .build();
    let mut w = Wire::in_process(server, MODERN);
    let id = create(&mut w, "steps", json!({})).await;
    let t = wait_for(&mut w, &id, |t| t["statusMessage"] == "1/3").await;
    assert_eq!(t["status"], "working", "{t}");
    let t = wait_for(&mut w, &id, |t| t["statusMessage"] == "almost there").await;
    assert_eq!(t["status"], "working", "{t}");
    let t = wait_for(&mut w, &id, terminal).await;
    assert_eq!(t["status"], "completed", "{t}");
    assert_eq!(t["result"]["content"][0]["text"], "done");
    assert!(
        w.side
            .iter()
            .all(|m| m["method"] != "notifications/progress"),
        "no progress notifications: {:?}",
        w.side
    );
}
