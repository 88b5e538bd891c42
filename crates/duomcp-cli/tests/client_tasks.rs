//! The client's task support against the reference server (in-process over an in-memory
//! connection, with every message recorded, and over Streamable HTTP), in both eras:
//! transparent `call_tool`, the explicit task API, cancellation, polling, foreign ids, and
//! tasks the client hosts (2025-11-25, against a scripted server).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::client::{
    Client, ClientBuilder, ClientError, EraChoice, RequestOptions, TaskInfo, TaskStart,
};
use duomcp::schema::{CreateMessageResult, ElicitResult, TaskStatus};
use duomcp::server::tasks::TaskConfig;
use duomcp::server::{Server, ToolSpec};
use duomcp::transport::http::StreamableHttp;
use duomcp::transport::memory::{self, Connection, MemoryTransport, Side, Tap};
use duomcp_testkit::text;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

const EXT: &str = "io.modelcontextprotocol/tasks";
const BOTH: [EraChoice; 2] = [EraChoice::Legacy, EraChoice::Modern];

/// Every message that crossed the in-memory connection's tap: (when, sent by the client,
/// message).
#[derive(Clone)]
struct Log(Tap);

impl Log {
    fn all(&self) -> Vec<(Duration, bool, Value)> {
        self.0
            .messages()
            .iter()
            .map(|t| (t.at, t.from == Side::Client, t.json()))
            .collect()
    }

    /// Requests the client sent with `method`, with the time they crossed.
    fn sent(&self, method: &str) -> Vec<(Duration, Value)> {
        self.all()
            .into_iter()
            .filter(|(_, c, v)| *c && v["method"] == method && v.get("id").is_some())
            .map(|(t, _, v)| (t, v))
            .collect()
    }

    /// Requests the server sent with `method`.
    fn server_sent(&self, method: &str) -> Vec<Value> {
        self.0
            .from(Side::Server)
            .into_iter()
            .filter(|v| v["method"] == method)
            .collect()
    }

    /// The id of the task a `tools/call` created (either era).
    fn created_task(&self) -> Option<String> {
        self.0.from(Side::Server).iter().find_map(|v| {
            let r = v.get("result")?;
            r["task"]["taskId"]
                .as_str()
                .or_else(|| (r["resultType"] == "task").then(|| r["taskId"].as_str())?)
                .map(str::to_owned)
        })
    }
}

/// Connects `builder` to `server` in-process, over a tapped in-memory connection.
async fn connect(server: Server, builder: ClientBuilder) -> (Client, Log) {
    let (client, tap) = memory::connect_with(builder, server).await.unwrap();
    (client, Log(tap))
}

fn reference() -> Server {
    duomcp_cli::reference::server()
}

/// A client that accepts every form: `confirm: true` for confirmations, `Ada` for names.
fn builder(era: EraChoice) -> ClientBuilder {
    Client::builder()
        .name("tasks-test")
        .era(era)
        .on_elicit(|req| async move {
            let message = serde_json::to_value(&req).unwrap()["message"].clone();
            let content = if message.as_str().unwrap_or_default().contains("name") {
                json!({ "name": "Ada" })
            } else {
                json!({ "confirm": true })
            };
            Ok(ElicitResult::accept(Some(
                serde_json::from_value(content).unwrap(),
            )))
        })
}

/// Collects the statuses `on_task_status` reports.
fn recorder() -> (RequestOptions, Arc<Mutex<Vec<TaskInfo>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let opts = RequestOptions::new().on_task_status(move |t| s.lock().unwrap().push(t.clone()));
    (opts, seen)
}

fn statuses(seen: &Mutex<Vec<TaskInfo>>) -> Vec<TaskStatus> {
    seen.lock().unwrap().iter().map(|t| t.status).collect()
}

#[tokio::test]
async fn legacy_required_tools_run_as_tasks_and_return_the_underlying_result() {
    let (client, log) = connect(reference(), builder(EraChoice::Legacy)).await;
    let (opts, seen) = recorder();
    let r = client
        .call_tool_with("failing_job", json!({}), opts)
        .await
        .unwrap();
    // A tool error fails the task; tasks/result returns the tool result itself.
    assert!(r.is_error(), "{r:?}");
    assert!(text(&r).contains("failing_job failed"), "{r:?}");
    let calls = log.sent("tools/call");
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].1["params"]["task"],
        json!({}),
        "a required tool is task-augmented"
    );
    let id = log.created_task().unwrap();
    assert!(!log.sent("tasks/get").is_empty(), "the task was polled");
    let results = log.sent("tasks/result");
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].1["params"]["taskId"], id.as_str());
    assert_eq!(
        statuses(&seen).first(),
        Some(&TaskStatus::Working),
        "the creation is reported"
    );
    assert_eq!(statuses(&seen).last(), Some(&TaskStatus::Failed));
}

#[tokio::test]
async fn legacy_optional_tools_run_as_tasks_only_when_asked() {
    let (client, log) = connect(reference(), builder(EraChoice::Legacy)).await;
    let args = json!({ "seconds": 0.1, "label": "x" });
    let r = client
        .call_tool("slow_compute", args.clone())
        .await
        .unwrap();
    assert_eq!(text(&r), "Computed x in 0.1s");
    assert!(log.sent("tools/call")[0].1["params"].get("task").is_none());
    assert!(log.sent("tasks/get").is_empty());

    let opts = RequestOptions::new().task_ttl(Duration::from_secs(120));
    let r = client
        .call_tool_with("slow_compute", args, opts)
        .await
        .unwrap();
    assert_eq!(
        text(&r),
        "Computed x in 0.1s",
        "exactly the underlying result"
    );
    assert_eq!(
        log.sent("tools/call")[1].1["params"]["task"],
        json!({ "ttl": 120_000 })
    );
    assert!(log.created_task().is_some());
    assert_eq!(log.sent("tasks/result").len(), 1);
}

#[tokio::test]
async fn legacy_task_input_reaches_the_handlers_through_tasks_result() {
    let (client, log) = connect(reference(), builder(EraChoice::Legacy)).await;
    let (opts, seen) = recorder();
    let r = client
        .call_tool_with(
            "confirm_delete",
            json!({ "filename": "a.txt" }),
            opts.as_task(),
        )
        .await
        .unwrap();
    assert_eq!(text(&r), "Deleted a.txt");
    let id = log.created_task().unwrap();
    let asked = log.server_sent("elicitation/create");
    assert_eq!(asked.len(), 1);
    assert_eq!(
        asked[0]["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str(),
        "the server's request names the task"
    );
    let s = statuses(&seen);
    assert!(s.contains(&TaskStatus::InputRequired), "{s:?}");
    assert_eq!(s.last(), Some(&TaskStatus::Completed), "{s:?}");
}

#[tokio::test]
async fn modern_tasks_are_polled_and_input_is_sent_with_tasks_update() {
    let (client, log) = connect(reference(), builder(EraChoice::Modern)).await;
    let (opts, seen) = recorder();
    let r = client
        .call_tool_with("confirm_delete", json!({ "filename": "b.txt" }), opts)
        .await
        .unwrap();
    assert_eq!(text(&r), "Deleted b.txt");
    let call = &log.sent("tools/call")[0].1;
    assert!(
        call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
            .get(EXT)
            .is_some(),
        "the extension is declared on tools/call: {call}"
    );
    let id = log.created_task().expect("the server made it a task");
    let updates = log.sent("tasks/update");
    assert_eq!(updates.len(), 1, "one input round");
    let u = &updates[0].1["params"];
    assert_eq!(u["taskId"], id.as_str());
    assert_eq!(u["inputResponses"]["confirm"]["action"], "accept");
    assert_eq!(u["inputResponses"]["confirm"]["content"]["confirm"], true);
    let s = statuses(&seen);
    assert!(s.contains(&TaskStatus::InputRequired), "{s:?}");
    assert_eq!(s.last(), Some(&TaskStatus::Completed));
}

#[tokio::test]
async fn input_before_a_deferred_task_and_inside_a_task_both_reach_the_handler() {
    for era in BOTH {
        let (client, log) = connect(reference(), builder(era)).await;
        let r = client
            .call_tool("test_tool_with_task", json!({}))
            .await
            .unwrap();
        let id = log.created_task().expect("it ended as a task");
        assert_eq!(
            text(&r),
            format!("Hello, Ada! (finished as task {id})"),
            "{era:?}"
        );
        match era {
            // 2026-07-28: an MRTR round (a retried tools/call) before the task exists.
            EraChoice::Modern => assert_eq!(log.sent("tools/call").len(), 2),
            // 2025-11-25: a task from the start; the question comes through tasks/result.
            _ => assert_eq!(log.server_sent("elicitation/create").len(), 1),
        }
    }
}

#[tokio::test]
async fn modern_task_errors_and_tool_errors_keep_their_shape() {
    let (client, _) = connect(reference(), builder(EraChoice::Modern)).await;
    // A tool error completes the task with an isError result.
    let r = client.call_tool("failing_job", json!({})).await.unwrap();
    assert!(r.is_error());
    // A crash fails the task with a JSON-RPC error, reported as the call's error.
    let e = client
        .call_tool("protocol_error_job", json!({}))
        .await
        .unwrap_err();
    assert_eq!(e.rpc_error().map(|e| e.code), Some(-32603), "{e}");
}

/// 2025-11-25: a task's progress notifications carry the `tools/call`'s progress token until
/// the task ends, long after `CreateTaskResult` came back; they all reach the call's callback.
#[tokio::test]
async fn legacy_task_progress_reaches_the_callback_after_the_task_was_created() {
    let server = Server::builder()
        .tasks(TaskConfig::default().poll_interval(Duration::from_millis(50)))
        .tool(
            ToolSpec::new("render").long_running(),
            |ctx: duomcp::server::Context| async move {
                // Well after the CreateTaskResult has been answered.
                tokio::time::sleep(Duration::from_millis(200)).await;
                for i in 1..=3 {
                    ctx.progress(f64::from(i), Some(3.0), None).await;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                "rendered"
            },
        )
        .build();
    let (client, log) = connect(server, builder(EraChoice::Legacy)).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let opts = RequestOptions::new()
        .as_task()
        .on_progress(move |p| sink.lock().unwrap().push(p.progress));
    let r = client.call_tool_with("render", (), opts).await.unwrap();
    assert_eq!(text(&r), "rendered");
    assert!(log.created_task().is_some(), "the call ran as a task");
    let calls = log.sent("tools/call");
    assert!(
        !calls[0].1["params"]["_meta"]["progressToken"].is_null(),
        "the call asks for progress: {}",
        calls[0].1
    );
    assert_eq!(*seen.lock().unwrap(), vec![1.0, 2.0, 3.0]);
}

#[tokio::test]
async fn the_poll_interval_is_honoured_in_both_eras() {
    for era in BOTH {
        let server = Server::builder()
            .tasks(TaskConfig::default().poll_interval(Duration::from_millis(150)))
            .tool(ToolSpec::new("nap").long_running(), || async {
                tokio::time::sleep(Duration::from_millis(900)).await;
                "rested"
            })
            .build();
        let (client, log) = connect(server, builder(era)).await;
        let r = client
            .call_tool_with("nap", (), RequestOptions::new().as_task())
            .await
            .unwrap();
        assert_eq!(text(&r), "rested");
        let created = log
            .all()
            .iter()
            .find(|(_, c, v)| !*c && v.get("result").is_some_and(|r| r.get("content").is_none()))
            .map(|(t, _, _)| *t)
            .unwrap();
        let gets: Vec<Duration> = log.sent("tasks/get").into_iter().map(|(t, _)| t).collect();
        // 900 ms at 150 ms: about six polls (the client's own default would make two).
        assert!(
            (4..=8).contains(&gets.len()),
            "{era:?}: {} polls in 900 ms at 150 ms",
            gets.len()
        );
        let mut previous = created;
        for t in gets {
            let gap = t - previous;
            assert!(
                gap >= Duration::from_millis(140),
                "{era:?}: polled after {gap:?}"
            );
            previous = t;
        }
    }
}

#[tokio::test]
async fn dropping_the_call_cancels_the_task() {
    for era in BOTH {
        let (client, log) = connect(reference(), builder(era)).await;
        let call = client.call_tool_with(
            "slow_compute",
            json!({ "seconds": 30 }),
            RequestOptions::new().as_task(),
        );
        let r = tokio::time::timeout(Duration::from_millis(800), call).await;
        assert!(r.is_err(), "{era:?}: the call was abandoned");
        let id = log.created_task().expect("a task was created");
        let mut cancelled = false;
        for _ in 0..100 {
            cancelled = log
                .sent("tasks/cancel")
                .iter()
                .any(|(_, v)| v["params"]["taskId"] == id.as_str());
            if cancelled {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(cancelled, "{era:?}: tasks/cancel was sent");
        let call_id = log.sent("tools/call")[0].1["id"].clone();
        let cancelled_call = log.all().iter().any(|(_, c, v)| {
            *c && v["method"] == "notifications/cancelled" && v["params"]["requestId"] == call_id
        });
        assert!(!cancelled_call, "notifications/cancelled is not for tasks");
        let mut status = None;
        for _ in 0..50 {
            status = Some(client.get_task(&id).await.unwrap().status);
            if status == Some(TaskStatus::Cancelled) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(status, Some(TaskStatus::Cancelled), "{era:?}");
    }
}

#[tokio::test]
async fn the_call_timeout_bounds_the_whole_task_and_cancels_it() {
    for era in BOTH {
        let (client, log) = connect(reference(), builder(era)).await;
        let started = Instant::now();
        let e = client
            .call_tool_with(
                "slow_compute",
                json!({ "seconds": 30 }),
                RequestOptions::new()
                    .as_task()
                    .timeout(Duration::from_millis(700)),
            )
            .await
            .unwrap_err();
        assert!(e.is_timeout(), "{era:?}: {e}");
        assert!(started.elapsed() < Duration::from_secs(3), "{era:?}");
        let id = log.created_task().expect("a task was created");
        let mut status = None;
        for _ in 0..100 {
            status = Some(client.get_task(&id).await.unwrap().status);
            if status == Some(TaskStatus::Cancelled) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(status, Some(TaskStatus::Cancelled), "{era:?}");
        assert!(log
            .sent("tasks/cancel")
            .iter()
            .any(|(_, v)| v["params"]["taskId"] == id.as_str()));
    }
}

#[tokio::test]
async fn the_explicit_api_starts_watches_and_collects_a_task() {
    for era in BOTH {
        let (client, _) = connect(reference(), builder(era)).await;
        let started = client
            .start_tool_task(
                "slow_compute",
                json!({ "seconds": 1, "label": "w" }),
                RequestOptions::new(),
            )
            .await
            .unwrap();
        let TaskStart::Task(task) = started else {
            panic!("{era:?}: expected a task")
        };
        assert!(!task.id().is_empty());
        let mut states = Vec::new();
        let mut watch = task.watch();
        while let Some(s) = watch.next().await {
            states.push(s.unwrap().status);
        }
        assert_eq!(
            states,
            vec![TaskStatus::Working, TaskStatus::Completed],
            "{era:?}"
        );
        let r = task.result().await.unwrap();
        assert_eq!(text(&r), "Computed w in 1s", "{era:?}");
        match era {
            EraChoice::Legacy => {
                let all = client.list_all_tasks().await.unwrap();
                assert!(all.iter().any(|t| t.task_id == task.id()));
                assert!(matches!(
                    task.update(Default::default()).await,
                    Err(ClientError::Unsupported(_))
                ));
            }
            _ => assert!(matches!(
                client.list_tasks(None).await,
                Err(ClientError::Unsupported(_))
            )),
        }
    }
}

#[tokio::test]
async fn the_explicit_api_answers_input_requests_with_update() {
    let (client, _) = connect(reference(), builder(EraChoice::Modern)).await;
    let TaskStart::Task(task) = client
        .start_tool_task(
            "confirm_delete",
            json!({ "filename": "c.txt" }),
            RequestOptions::new(),
        )
        .await
        .unwrap()
    else {
        panic!("expected a task")
    };
    let mut watch = task.watch();
    let waiting = loop {
        let s = watch.next().await.unwrap().unwrap();
        if s.status == TaskStatus::InputRequired {
            break s;
        }
    };
    let requests = waiting.input_requests.unwrap();
    assert!(requests.contains_key("confirm"), "{requests:?}");
    let mut answers = serde_json::Map::new();
    answers.insert(
        "confirm".into(),
        json!({ "action": "accept", "content": { "confirm": false } }),
    );
    task.update(answers).await.unwrap();
    let r = task.result().await.unwrap();
    assert_eq!(
        text(&r),
        "Kept c.txt",
        "our answer, not the handler's, was used"
    );
}

#[tokio::test]
async fn cancel_racing_completion_ends_in_one_consistent_state() {
    for era in BOTH {
        let (client, _) = connect(reference(), builder(era)).await;
        for _ in 0..8 {
            let TaskStart::Task(task) = client
                .start_tool_task(
                    "slow_compute",
                    json!({ "seconds": 0 }),
                    RequestOptions::new(),
                )
                .await
                .unwrap()
            else {
                panic!("expected a task")
            };
            let status = task.cancel().await.unwrap();
            assert!(
                matches!(status, TaskStatus::Cancelled | TaskStatus::Completed),
                "{era:?}: {status:?}"
            );
            tokio::time::sleep(Duration::from_millis(30)).await;
            assert_eq!(task.get().await.unwrap().status, status, "{era:?}");
            match (status, task.result().await) {
                (TaskStatus::Cancelled, Err(ClientError::TaskCancelled { task_id })) => {
                    assert_eq!(task_id, task.id())
                }
                (TaskStatus::Completed, Ok(r)) => assert_eq!(text(&r), "Computed job in 0s"),
                (s, other) => panic!("{era:?}: {s:?} but result {other:?}"),
            }
        }
    }
}

async fn serve_http() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(StreamableHttp::new(reference()).serve(listener));
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_tasks_with_input_work_in_both_eras() {
    let url = serve_http().await;
    for era in BOTH {
        let client = builder(era).connect_http(&url).await.unwrap();
        let (opts, seen) = recorder();
        let r = client
            .call_tool_with(
                "confirm_delete",
                json!({ "filename": "h.txt" }),
                opts.as_task(),
            )
            .await
            .unwrap();
        assert_eq!(text(&r), "Deleted h.txt", "{era:?}");
        let s = statuses(&seen);
        assert_eq!(s.first(), Some(&TaskStatus::Working), "{era:?}: {s:?}");
        assert!(s.contains(&TaskStatus::InputRequired), "{era:?}: {s:?}");
        assert_eq!(s.last(), Some(&TaskStatus::Completed), "{era:?}: {s:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampered_and_foreign_task_ids_are_invalid_params() {
    let url = serve_http().await;
    let legacy = builder(EraChoice::Legacy).connect_http(&url).await.unwrap();
    let modern = builder(EraChoice::Modern).connect_http(&url).await.unwrap();
    let mut ids = Vec::new();
    for client in [&legacy, &modern] {
        let TaskStart::Task(task) = client
            .start_tool_task(
                "slow_compute",
                json!({ "seconds": 30 }),
                RequestOptions::new(),
            )
            .await
            .unwrap()
        else {
            panic!("expected a task")
        };
        ids.push(task.id().to_owned());
    }
    let code = |r: Result<TaskInfo, ClientError>| r.unwrap_err().rpc_error().map(|e| e.code);
    // Foreign: a task of the other era is not visible.
    assert_eq!(code(modern.get_task(&ids[0]).await), Some(-32602));
    assert_eq!(code(legacy.get_task(&ids[1]).await), Some(-32602));
    for (client, id) in [(&legacy, &ids[0]), (&modern, &ids[1])] {
        let tampered: String = id.chars().rev().collect();
        assert_eq!(code(client.get_task(&tampered).await), Some(-32602));
        let e = client.cancel_task(&tampered).await.unwrap_err();
        assert_eq!(e.rpc_error().map(|e| e.code), Some(-32602), "{e}");
        assert_eq!(client.cancel_task(id).await.unwrap(), TaskStatus::Cancelled);
    }
}

// ---------------------------------------------------------------------------------------------
// Tasks hosted by the client (2025-11-25), driven by a scripted server.

struct Script {
    end: Connection,
    next_id: i64,
}

impl Script {
    async fn send(&mut self, v: Value) {
        self.end.send_json(&v).await.unwrap();
    }

    async fn recv(&mut self) -> Value {
        let message = tokio::time::timeout(Duration::from_secs(5), self.end.recv())
            .await
            .expect("the client answers")
            .expect("the client is connected");
        serde_json::from_slice(&message).unwrap()
    }

    /// Sends a request to the client and returns its response (other messages are skipped).
    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        loop {
            let m = self.recv().await;
            if m["id"] == id && m.get("method").is_none() {
                return m;
            }
        }
    }
}

/// A client built from `b`, connected to a script that plays a 2025-11-25 server; returns the
/// capabilities the client declared.
async fn scripted(b: ClientBuilder) -> (Client, Script, Value) {
    let (client_end, script_end) = Connection::memory();
    let connecting = tokio::spawn(
        b.era(EraChoice::Legacy)
            .connect_transport(MemoryTransport::new(client_end)),
    );
    let mut s = Script {
        end: script_end,
        next_id: 100,
    };
    let init = s.recv().await;
    assert_eq!(init["method"], "initialize");
    let caps = init["params"]["capabilities"].clone();
    s.send(json!({ "jsonrpc": "2.0", "id": init["id"], "result": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "serverInfo": { "name": "script", "version": "1" } } }))
        .await;
    assert_eq!(s.recv().await["method"], "notifications/initialized");
    let client = connecting.await.unwrap().unwrap();
    (client, s, caps)
}

#[tokio::test]
async fn the_client_hosts_task_augmented_elicitation_and_sampling() {
    let b = Client::builder()
        .on_elicit(|_| async {
            Ok(ElicitResult::accept(Some(
                serde_json::from_value(json!({ "ok": true })).unwrap(),
            )))
        })
        .on_sample(|_| async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok(CreateMessageResult::assistant_text("m", "late"))
        })
        .host_tasks(true);
    let (_client, mut s, caps) = scripted(b).await;
    assert_eq!(
        caps["tasks"],
        json!({ "list": {}, "cancel": {}, "requests": {
            "sampling": { "createMessage": {} }, "elicitation": { "create": {} } } })
    );

    let form = json!({ "message": "Proceed?", "requestedSchema": { "type": "object",
        "properties": { "ok": { "type": "boolean" } } } });
    // Without `task`: answered directly.
    let plain = s.request("elicitation/create", form.clone()).await;
    assert_eq!(plain["result"]["action"], "accept", "{plain}");

    let mut augmented = form.clone();
    augmented["task"] = json!({ "ttl": 60_000 });
    let created = s.request("elicitation/create", augmented).await;
    let task = &created["result"]["task"];
    assert_eq!(task["status"], "working", "{created}");
    assert_eq!(task["ttl"], 60_000);
    assert!(task["createdAt"].as_str().unwrap().ends_with('Z'));
    let id = task["taskId"].as_str().unwrap().to_owned();
    let mut done = Value::Null;
    for _ in 0..100 {
        done = s.request("tasks/get", json!({ "taskId": id })).await["result"].clone();
        if done["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(done["status"], "completed", "{done}");
    let r = s.request("tasks/result", json!({ "taskId": id })).await;
    assert_eq!(r["result"]["action"], "accept", "{r}");
    assert_eq!(r["result"]["content"]["ok"], true);
    assert_eq!(
        r["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str()
    );
    let e = s.request("tasks/cancel", json!({ "taskId": id })).await;
    assert_eq!(e["error"]["code"], -32602, "a finished task: {e}");

    let sample = json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": "hi" } }],
        "maxTokens": 10, "task": {} });
    let created = s.request("sampling/createMessage", sample).await;
    let sid = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let listed = s.request("tasks/list", json!({})).await;
    let listed: Vec<&str> = listed["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["taskId"].as_str().unwrap())
        .collect();
    assert_eq!(listed, vec![id.as_str(), sid.as_str()], "in creation order");
    let c = s.request("tasks/cancel", json!({ "taskId": sid })).await;
    assert_eq!(c["result"]["status"], "cancelled", "{c}");
    let g = s.request("tasks/get", json!({ "taskId": sid })).await;
    assert_eq!(g["result"]["status"], "cancelled", "terminal is final: {g}");
    let r = s.request("tasks/result", json!({ "taskId": sid })).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");

    let tampered: String = id.chars().rev().collect();
    for bad in [tampered.as_str(), "nope"] {
        for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
            let e = s.request(method, json!({ "taskId": bad })).await;
            assert_eq!(e["error"]["code"], -32602, "{method} {bad}: {e}");
        }
    }
    let e = s.request("tasks/list", json!({ "cursor": "x" })).await;
    assert_eq!(e["error"]["code"], -32602, "bad cursor: {e}");

    // A task is kept for its ttl only.
    let mut short = form.clone();
    short["task"] = json!({ "ttl": 50 });
    let created = s.request("elicitation/create", short).await;
    assert_eq!(created["result"]["task"]["ttl"], 50, "{created}");
    let eid = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    tokio::time::sleep(Duration::from_millis(80)).await;
    let e = s.request("tasks/get", json!({ "taskId": eid })).await;
    assert_eq!(e["error"]["code"], -32602, "expired: {e}");
}

#[tokio::test]
async fn a_client_that_hosts_no_tasks_declares_none_and_answers_plainly() {
    let b = Client::builder().on_elicit(|_| async { Ok(ElicitResult::decline()) });
    let (_client, mut s, caps) = scripted(b).await;
    assert!(caps.get("tasks").is_none(), "{caps}");
    let r = s
        .request(
            "elicitation/create",
            json!({ "message": "?", "requestedSchema": { "type": "object", "properties": {} },
                "task": {} }),
        )
        .await;
    assert_eq!(r["result"]["action"], "decline", "{r}");
    let e = s.request("tasks/get", json!({ "taskId": "x" })).await;
    assert_eq!(e["error"]["code"], -32601, "{e}");
}

#[tokio::test]
async fn duomcp_call_runs_a_task_tool_and_shows_its_status() {
    let bin = env!("CARGO_BIN_EXE_duomcp");
    for era in ["legacy", "modern"] {
        let o = tokio::process::Command::new(bin)
            .args(["call", "failing_job", "--era", era, "--", bin, "serve"])
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .unwrap();
        let (out, err) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        // The tool's own error (a result with isError), not a refusal of the call.
        assert!(out.contains("failing_job failed"), "{era}: {out}\n{err}");
        assert!(err.contains("the tool reported an error"), "{era}: {err}");
        assert!(err.contains(": working"), "{era}: {err}");
        let last = if era == "legacy" {
            ": failed"
        } else {
            ": completed"
        };
        assert!(err.contains(last), "{era}: {err}");
    }
}

/// A task's handler asks a second question while its first is still unanswered (its user may
/// answer them in any order, or only once it has seen both): the client asks it at once, while
/// the first is still with its user, and each answer reaches the server when it is given.
/// (The client used to wait for every answer of what it had seen before it polled the task
/// again, so the second question waited for the first answer: a gateway relaying the task
/// showed its client one question of two.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_asked_while_another_waits_for_its_answer_is_asked_at_once() {
    use duomcp::schema::{ElicitRequestFormParams, ElicitRequestParams};
    let ask = |message: &str| {
        let schema = json!({ "type": "object", "properties": { "ok": { "type": "boolean" } } });
        ElicitRequestParams::Form(ElicitRequestFormParams::new(
            message.to_owned(),
            serde_json::from_value(schema).unwrap(),
        ))
    };
    let server = Server::builder()
        .tasks(TaskConfig::default().poll_interval(Duration::from_millis(50)))
        .tool(
            ToolSpec::new("two_questions").long_running(),
            move |ctx: duomcp::server::Context| async move {
                let (a, b) = tokio::join!(ctx.elicit("first", ask("first")), async {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    ctx.elicit("second", ask("second")).await
                });
                let (a, b) = (a?, b?);
                Ok::<_, duomcp::server::HandlerError>(format!(
                    "{} {}",
                    a.content.is_some(),
                    b.content.is_some()
                ))
            },
        )
        .build();
    // The user answers the first question only once the second has been asked (or after 5 s).
    let second_asked = Arc::new(tokio::sync::Notify::new());
    let seen_second = Arc::new(Mutex::new(None::<bool>));
    let (asked, seen) = (second_asked.clone(), seen_second.clone());
    let b = Client::builder()
        .name("tasks-test")
        .era(EraChoice::Modern)
        .on_elicit(move |req| {
            let (asked, seen) = (asked.clone(), seen.clone());
            async move {
                let message = serde_json::to_value(&req).unwrap()["message"].clone();
                if message == "second" {
                    asked.notify_one();
                } else {
                    let waited = tokio::time::timeout(Duration::from_secs(5), asked.notified());
                    *seen.lock().unwrap() = Some(waited.await.is_ok());
                }
                Ok(ElicitResult::accept(Some(
                    serde_json::from_value(json!({ "ok": true })).unwrap(),
                )))
            }
        });
    let (client, log) = connect(server, b).await;
    let t0 = Instant::now();
    let r = client
        .call_tool_with("two_questions", (), RequestOptions::new().as_task())
        .await
        .unwrap();
    assert_eq!(text(&r), "true true");
    assert!(log.created_task().is_some(), "the call ran as a task");
    assert_eq!(
        *seen_second.lock().unwrap(),
        Some(true),
        "the second question was asked while the first waited for its answer"
    );
    assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
    // Each answer went to the server as it was given: the second's first (the first's with it
    // at the latest, when both were given together).
    let updates = log.sent("tasks/update");
    let keys: Vec<Vec<String>> = updates
        .iter()
        .map(|(_, u)| {
            u["params"]["inputResponses"]
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(keys.concat().len(), 2, "{keys:?}");
    assert!(
        keys.first()
            .is_some_and(|k| k.contains(&"second".to_owned())),
        "{keys:?}"
    );
}
