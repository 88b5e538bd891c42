//! Transcript tests of 2025-11-25 (core) tasks: creation, polling, `tasks/result`, listing,
//! cancellation, ttl and input through `tasks/result`. Every server message is validated
//! against the official 2025-11-25 schema.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use duomcp::clock::ManualClock;
use duomcp::schema::TaskSupport;
use duomcp::server::tasks::TaskConfig;
use duomcp::server::{Args, Context, HandlerError, Server, ServerConfig, ToolSpec};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::{Wire, LEGACY};

const RELATED: &str = "io.modelcontextprotocol/related-task";

async fn reference() -> Wire {
    let mut w = Wire::reference(LEGACY);
    w.initialize(json!({ "elicitation": {} })).await;
    w
}

/// Creates a task and returns its id.
async fn create(w: &mut Wire, tool: &str, args: Value, task: Value) -> String {
    let r = w
        .ok(
            "tools/call",
            json!({ "name": tool, "arguments": args, "task": task }),
        )
        .await;
    assert_eq!(r["task"]["status"], "working", "{r}");
    assert!(
        r.get("content").is_none(),
        "a CreateTaskResult carries no result: {r}"
    );
    r["task"]["taskId"].as_str().unwrap().to_owned()
}

async fn get(w: &mut Wire, id: &str) -> Value {
    w.ok("tasks/get", json!({ "taskId": id })).await
}

async fn wait_for(w: &mut Wire, id: &str, done: impl Fn(&str) -> bool) -> Value {
    for _ in 0..200 {
        let t = get(w, id).await;
        if done(t["status"].as_str().unwrap_or_default()) {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("task {id} never reached the awaited status")
}

fn terminal(s: &str) -> bool {
    matches!(s, "completed" | "failed" | "cancelled")
}

#[tokio::test]
async fn capabilities_and_tool_execution_are_advertised() {
    let mut w = Wire::reference(LEGACY);
    let init = w.initialize(json!({})).await;
    assert_eq!(
        init["capabilities"]["tasks"],
        json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } })
    );
    let tools = w.ok("tools/list", json!({})).await;
    let support = |name: &str| {
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["execution"]["taskSupport"].clone())
            .unwrap()
    };
    assert_eq!(support("slow_compute"), "optional");
    assert_eq!(support("failing_job"), "required");
    assert_eq!(support("greet"), Value::Null);
}

#[tokio::test]
async fn a_task_is_created_polled_and_its_result_returned_exactly() {
    let mut w = reference().await;
    let r = w
        .ok(
            "tools/call",
            json!({ "name": "slow_compute", "arguments": { "seconds": 0.2, "label": "x" }, "task": { "ttl": 60000 } }),
        )
        .await;
    let task = &r["task"];
    assert_eq!(task["status"], "working");
    assert_eq!(task["ttl"], 60000, "the requested ttl is granted");
    assert_eq!(task["pollInterval"], 500);
    assert!(task["createdAt"].as_str().unwrap().ends_with('Z'));
    let id = task["taskId"].as_str().unwrap().to_owned();
    assert!(id.len() >= 22, "128 random bits: {id}");

    let t = get(&mut w, &id).await;
    assert_eq!(t["taskId"], id.as_str());
    assert!(
        t.get("_meta").is_none(),
        "tasks/get carries no related-task meta"
    );

    // tasks/result blocks until the task is terminal, then returns exactly the tool result.
    let result = w.ok("tasks/result", json!({ "taskId": id })).await;
    assert_eq!(result["content"][0]["text"], "Computed x in 0.2s");
    assert_eq!(result["_meta"][RELATED]["taskId"], id.as_str());
    let t = get(&mut w, &id).await;
    assert_eq!(t["status"], "completed");
    assert!(t["lastUpdatedAt"].as_str().unwrap() >= t["createdAt"].as_str().unwrap());

    // The optional status notification went to this session, without related-task meta.
    let status: Vec<&Value> = w
        .side
        .iter()
        .filter(|m| m["method"] == "notifications/tasks/status")
        .collect();
    assert!(status
        .iter()
        .any(|n| n["params"]["status"] == "completed" && n["params"]["taskId"] == id.as_str()));
    assert!(status.iter().all(|n| n["params"].get("_meta").is_none()));
}

#[tokio::test]
async fn task_support_misuse_is_method_not_found() {
    let mut w = reference().await;
    let e = w
        .err(
            "tools/call",
            json!({ "name": "greet", "arguments": { "name": "A" }, "task": {} }),
        )
        .await;
    assert_eq!(e["code"], -32601, "forbidden tool as a task: {e}");
    let e = w
        .err(
            "tools/call",
            json!({ "name": "failing_job", "arguments": {} }),
        )
        .await;
    assert_eq!(e["code"], -32601, "required tool without a task: {e}");
    let e = w
        .err(
            "tools/call",
            json!({ "name": "slow_compute", "arguments": { "seconds": 0 }, "task": { "ttl": -5 } }),
        )
        .await;
    assert_eq!(e["code"], -32602, "a negative ttl: {e}");
    // An optional tool without a task runs inline.
    let r = w
        .ok(
            "tools/call",
            json!({ "name": "slow_compute", "arguments": { "seconds": 0 } }),
        )
        .await;
    assert_eq!(r["content"][0]["text"], "Computed job in 0s");
}

#[tokio::test]
async fn a_tool_error_fails_the_task_and_tasks_result_returns_the_tool_result() {
    let mut w = reference().await;
    let id = create(&mut w, "failing_job", json!({}), json!({})).await;
    let result = w.ok("tasks/result", json!({ "taskId": id })).await;
    assert_eq!(result["isError"], true);
    assert_eq!(result["_meta"][RELATED]["taskId"], id.as_str());
    let t = get(&mut w, &id).await;
    assert_eq!(t["status"], "failed", "2025-11-25: isError means failed");
    assert!(t["statusMessage"]
        .as_str()
        .unwrap()
        .contains("failing_job failed"));
}

#[tokio::test]
async fn a_protocol_error_is_what_tasks_result_returns() {
    let mut w = reference().await;
    let id = create(&mut w, "protocol_error_job", json!({}), json!({})).await;
    let e = w.err("tasks/result", json!({ "taskId": id })).await;
    assert_eq!(e["code"], -32603, "{e}");
    let t = get(&mut w, &id).await;
    assert_eq!(t["status"], "failed");
    assert!(t["statusMessage"].is_string());
}

#[tokio::test]
async fn elicitation_reaches_the_client_through_tasks_result() {
    let mut w = reference().await;
    let id = create(
        &mut w,
        "confirm_delete",
        json!({ "filename": "a.txt" }),
        json!({ "ttl": 30000 }),
    )
    .await;
    let t = wait_for(&mut w, &id, |s| s == "input_required").await;
    assert_eq!(t["status"], "input_required");
    // The requestor calls tasks/result: the elicitation arrives on that stream.
    w.send(json!({ "jsonrpc": "2.0", "id": "res-1", "method": "tasks/result", "params": { "taskId": id } }))
        .await;
    let request = loop {
        let m = w.recv().await;
        if m["method"] == "elicitation/create" {
            break m;
        }
        w.side.push(m);
    };
    assert_eq!(request["params"]["_meta"][RELATED]["taskId"], id.as_str());
    assert_eq!(request["params"]["message"], "Delete a.txt?");
    w.send(json!({ "jsonrpc": "2.0", "id": request["id"], "result": { "action": "accept", "content": { "confirm": true } } }))
        .await;
    let reply = w.response_to(&json!("res-1")).await;
    assert_eq!(
        reply["result"]["content"][0]["text"], "Deleted a.txt",
        "{reply}"
    );
    assert_eq!(get(&mut w, &id).await["status"], "completed");
    let statuses: Vec<&str> = w
        .side
        .iter()
        .filter(|m| {
            m["method"] == "notifications/tasks/status" && m["params"]["taskId"] == id.as_str()
        })
        .filter_map(|m| m["params"]["status"].as_str())
        .collect();
    assert!(statuses.contains(&"input_required"), "{statuses:?}");
    assert!(
        statuses.contains(&"working"),
        "input_required goes back to working: {statuses:?}"
    );
}

#[tokio::test]
async fn cancelling_moves_to_cancelled_and_terminal_tasks_refuse_it() {
    let mut w = reference().await;
    let id = create(&mut w, "slow_compute", json!({ "seconds": 60 }), json!({})).await;
    let t = w.ok("tasks/cancel", json!({ "taskId": id })).await;
    assert_eq!(
        t["status"], "cancelled",
        "the task is cancelled before the answer: {t}"
    );
    assert!(t.get("_meta").is_none());
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(get(&mut w, &id).await["status"], "cancelled");
    let e = w.err("tasks/cancel", json!({ "taskId": id })).await;
    assert_eq!(e["code"], -32602);
    assert!(
        e["message"].as_str().unwrap().contains("'cancelled'"),
        "{e}"
    );
    let e = w.err("tasks/result", json!({ "taskId": id })).await;
    assert_eq!(e["code"], -32602, "a cancelled task has no result: {e}");

    let done = create(&mut w, "slow_compute", json!({ "seconds": 0 }), json!({})).await;
    wait_for(&mut w, &done, terminal).await;
    let e = w.err("tasks/cancel", json!({ "taskId": done })).await;
    assert_eq!(e["code"], -32602, "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("'completed'"),
        "{e}"
    );
}

#[tokio::test]
async fn cancel_and_completion_race_to_one_final_status() {
    let mut w = reference().await;
    for _ in 0..10 {
        let id = create(&mut w, "slow_compute", json!({ "seconds": 0 }), json!({})).await;
        let r = w.request("tasks/cancel", json!({ "taskId": id })).await;
        let expected = if r.get("result").is_some() {
            "cancelled"
        } else {
            assert_eq!(r["error"]["code"], -32602, "{r}");
            "completed"
        };
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert_eq!(
            get(&mut w, &id).await["status"],
            expected,
            "the loser changes nothing"
        );
    }
}

#[tokio::test]
async fn unknown_and_tampered_ids_are_invalid_params() {
    let mut w = reference().await;
    let id = create(&mut w, "slow_compute", json!({ "seconds": 30 }), json!({})).await;
    let mut tampered = id.clone().into_bytes();
    tampered[3] = if tampered[3] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    for bad in [tampered.as_str(), "", "tasks-conformance-nonexistent-12345"] {
        for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
            let e = w.err(method, json!({ "taskId": bad })).await;
            assert_eq!(e["code"], -32602, "{method} {bad:?}: {e}");
        }
    }
    let e = w.err("tasks/get", json!({})).await;
    assert_eq!(e["code"], -32602, "missing taskId");
    let e = w.err("tasks/update", json!({ "taskId": id })).await;
    assert_eq!(e["code"], -32601, "tasks/update is 2026-07-28 only");
    w.ok("tasks/cancel", json!({ "taskId": id })).await;
}

fn paged_server(clock: Option<ManualClock>) -> Server {
    let mut config = ServerConfig::default();
    config.page_size = 2;
    let mut tasks = TaskConfig::default()
        .default_ttl(Duration::from_secs(60))
        .max_ttl(Duration::from_secs(600))
        .poll_interval(Duration::from_millis(100));
    if let Some(c) = clock {
        tasks = tasks.clock(c);
    }
    Server::builder()
        .config(config)
        .tasks(tasks)
        .tool(
            ToolSpec::new("wait").long_running(),
            |ctx: Context| async move {
                ctx.cancelled().await;
                "never"
            },
        )
        .build()
}

#[tokio::test]
async fn tasks_list_pages_in_creation_order_for_the_caller() {
    let server = paged_server(None);
    let mut w = Wire::in_process(server.clone(), LEGACY);
    w.initialize(json!({})).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(create(&mut w, "wait", json!({}), json!({ "ttl": 999_999_999 })).await);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let page1 = w.ok("tasks/list", json!({})).await;
    assert_eq!(page1["tasks"].as_array().unwrap().len(), 2);
    assert_eq!(
        page1["tasks"][0]["ttl"], 600_000,
        "the ttl is clamped to max_ttl"
    );
    let cursor = page1["nextCursor"].as_str().unwrap();
    let page2 = w.ok("tasks/list", json!({ "cursor": cursor })).await;
    assert_eq!(page2["tasks"].as_array().unwrap().len(), 1);
    assert!(page2.get("nextCursor").is_none());
    let listed: Vec<&str> = page1["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .chain(page2["tasks"].as_array().unwrap())
        .map(|t| t["taskId"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        ids.iter().map(String::as_str).collect::<Vec<_>>(),
        "creation order"
    );
    let e = w
        .err("tasks/list", json!({ "cursor": "not-a-cursor" }))
        .await;
    assert_eq!(e["code"], -32602);

    // Tasks are bound to the caller (over stdio, the local user), not to one session: another
    // session of the same user lists them too. (Without any principal they would be scoped to
    // the session that created them.)
    let mut other = Wire::in_process(server, LEGACY);
    other.initialize(json!({})).await;
    let same = other.ok("tasks/list", json!({})).await;
    assert_eq!(same["tasks"], page1["tasks"]);
    for id in &ids {
        w.ok("tasks/cancel", json!({ "taskId": id })).await;
    }
}

#[tokio::test]
async fn tasks_expire_after_their_ttl_and_stop_running() {
    let clock = ManualClock::new(1_700_000_000_000);
    let stopped = Arc::new(AtomicBool::new(false));
    struct Flag(Arc<AtomicBool>);
    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let flag = stopped.clone();
    let server = Server::builder()
        .tasks(TaskConfig::default().clock(clock.clone()))
        .tool(
            ToolSpec::new("hold").task_support(TaskSupport::Required),
            move || {
                let flag = Flag(flag.clone());
                async move {
                    let _flag = flag;
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    "late"
                }
            },
        )
        .build();
    let mut w = Wire::in_process(server, LEGACY);
    w.initialize(json!({})).await;
    let id = create(&mut w, "hold", json!({}), json!({ "ttl": 1000 })).await;
    assert_eq!(
        get(&mut w, &id).await["createdAt"],
        "2023-11-14T22:13:20.000Z"
    );
    clock.advance(Duration::from_millis(999));
    assert_eq!(
        get(&mut w, &id).await["status"],
        "working",
        "not before its ttl"
    );
    clock.advance(Duration::from_millis(1));
    let e = w.err("tasks/get", json!({ "taskId": id })).await;
    assert_eq!(e["code"], -32602, "expired: {e}");
    let e = w.err("tasks/result", json!({ "taskId": id })).await;
    assert_eq!(e["code"], -32602);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        stopped.load(Ordering::SeqCst),
        "the expired task's handler was stopped"
    );
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Steps {
    n: u32,
}

#[tokio::test]
async fn progress_of_a_task_carries_the_related_task() {
    let server = Server::builder()
        .tool(
            ToolSpec::new("steps").long_running(),
            |ctx: Context, Args(Steps { n }): Args<Steps>| async move {
                for i in 0..n {
                    ctx.progress(f64::from(i), Some(f64::from(n)), None).await;
                }
                ctx.set_task_status(format!("{n} steps done")).await;
                Ok::<_, HandlerError>(format!(
                    "{n} steps on task {}",
                    ctx.task_id().unwrap_or("-")
                ))
            },
        )
        .build();
    let mut w = Wire::in_process(server, LEGACY);
    w.initialize(json!({})).await;
    let r = w
        .ok(
            "tools/call",
            json!({ "name": "steps", "arguments": { "n": 3 }, "task": {}, "_meta": { "progressToken": "p1" } }),
        )
        .await;
    let id = r["task"]["taskId"].as_str().unwrap().to_owned();
    let result = w.ok("tasks/result", json!({ "taskId": id })).await;
    assert_eq!(
        result["content"][0]["text"],
        format!("3 steps on task {id}")
    );
    let progress: Vec<&Value> = w
        .side
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{:?}", w.side);
    assert!(progress.iter().all(|p| p["params"]["progressToken"] == "p1"
        && p["params"]["_meta"][RELATED]["taskId"] == id.as_str()));
}
