//! The message bus between `duomcp serve --http --redis` replicas (issue 17): a change made on
//! one replica reaches the listen streams and session streams of the others, and named
//! registry changes run on every replica. Real parts: `redis-server` (Debian package), started
//! through `duomcp_testkit::cluster`; a missing binary fails the test. Every step is sent to
//! a chosen replica on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp_testkit::cluster::{replicas, replicas_with, RedisServer};
use duomcp_testkit::raw_http::{exchange_blocking, legacy_session, post_request_with};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");
const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

fn redis() -> RedisServer {
    RedisServer::start().expect("redis-server (Debian package redis-server)")
}

fn request(addr: SocketAddr, headers: &[(&str, &str)], body: &Value) -> Vec<u8> {
    post_request_with(addr, headers, &body.to_string())
}

/// One HTTP/1.1 exchange: the whole response, head and body.
fn exchange(addr: SocketAddr, headers: &[(&str, &str)], body: &Value) -> String {
    exchange_blocking(addr, &request(addr, headers, body), Duration::from_secs(30))
}

/// The JSON-RPC message of a response, JSON or one SSE event carrying it.
fn message(raw: &str) -> Value {
    let body = raw.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    if let Ok(v) = serde_json::from_str(body) {
        return v;
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("id").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC response in {raw}"))
}

fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "replicas-bus", "version": "1" }
    })
}

/// A 2026-07-28 request `method` with `params` (its `_meta` added).
fn modern(addr: SocketAddr, id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = modern_meta();
    let name = params["name"].as_str().map(str::to_owned);
    let mut headers = vec![("MCP-Protocol-Version", MODERN), ("Mcp-Method", method)];
    if let Some(n) = &name {
        headers.push(("Mcp-Name", n));
    }
    let raw = exchange(
        addr,
        &headers,
        &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
    );
    message(&raw)
}

fn names(list: &Value, key: &str) -> Vec<String> {
    list["result"][key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {list}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// An open SSE response whose events a thread reads into a channel.
struct Stream {
    rx: mpsc::Receiver<Value>,
    _tcp: TcpStream,
}

impl Stream {
    fn open(addr: SocketAddr, raw_request: impl AsRef<[u8]>) -> Stream {
        let tcp = TcpStream::connect(addr).unwrap();
        let mut w = tcp.try_clone().unwrap();
        w.write_all(raw_request.as_ref()).unwrap();
        let (tx, rx) = mpsc::channel();
        let r = tcp.try_clone().unwrap();
        r.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(r).lines() {
                let Ok(line) = line else { return };
                if let Some(d) = line.strip_prefix("data:") {
                    if let Ok(v) = serde_json::from_str::<Value>(d.trim()) {
                        if tx.send(v).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Stream { rx, _tcp: tcp }
    }

    fn next(&self, within: Duration) -> Option<Value> {
        self.rx.recv_timeout(within).ok()
    }
}

fn publishes(redis: &RedisServer) -> u64 {
    redis
        .command_calls()
        .unwrap()
        .get("publish")
        .copied()
        .unwrap_or(0)
}

#[test]
fn listen_on_b_sees_a_tool_change_made_on_a_within_200_ms_and_every_replica_lists_it() {
    let redis = redis();
    let rs = replicas(BIN, &redis, 3).unwrap();
    let (a, b, c) = (&rs[0], &rs[1], &rs[2]);

    for r in [&a, &b, &c] {
        let list = modern(r.addr(), 1, "tools/list", json!({}));
        assert!(!names(&list, "tools").contains(&"test_dynamic_tool".to_owned()));
    }

    // A listen stream on B.
    let mut params =
        json!({ "notifications": { "toolsListChanged": true, "promptsListChanged": true } });
    params["_meta"] = modern_meta();
    let listen = Stream::open(
        b.addr(),
        request(
            b.addr(),
            &[
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", "subscriptions/listen"),
            ],
            &json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": params}),
        ),
    );
    let ack = listen.next(Duration::from_secs(5)).expect("acknowledged");
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );

    // The change is made on A; B's stream hears of it, measured from A's answer.
    let before = publishes(&redis);
    let r = modern(
        a.addr(),
        2,
        "tools/call",
        json!({ "name": "test_trigger_tool_change" }),
    );
    let answered = Instant::now();
    assert_eq!(r["result"]["content"][0]["text"], "tools changed", "{r}");
    let note = listen
        .next(Duration::from_secs(2))
        .expect("list_changed on B");
    let latency = answered.elapsed();
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    assert_eq!(
        note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        9
    );
    eprintln!("listen on B saw A's tool change {latency:?} after A answered");
    assert!(latency < Duration::from_millis(200), "{latency:?}");
    // One change, one message on the bus.
    assert_eq!(publishes(&redis) - before, 1);
    // Not told twice.
    assert!(listen.next(Duration::from_millis(300)).is_none());

    // Every replica applied the change with its own code: the new tool lists and runs on each.
    for (i, r) in [&a, &b, &c].into_iter().enumerate() {
        let list = modern(r.addr(), 10 + i as u64, "tools/list", json!({}));
        assert!(
            names(&list, "tools").contains(&"test_dynamic_tool".to_owned()),
            "{list}"
        );
        let call = modern(
            r.addr(),
            20 + i as u64,
            "tools/call",
            json!({ "name": "test_dynamic_tool" }),
        );
        assert_eq!(call["result"]["content"][0]["text"], "dynamic", "{call}");
    }

    // A prompt change made on C reaches B's stream too.
    let r = modern(
        c.addr(),
        30,
        "tools/call",
        json!({ "name": "test_trigger_prompt_change" }),
    );
    let answered = Instant::now();
    assert_eq!(r["result"]["content"][0]["text"], "prompts changed", "{r}");
    let note = listen
        .next(Duration::from_secs(2))
        .expect("list_changed on B");
    let latency = answered.elapsed();
    assert_eq!(
        note["method"], "notifications/prompts/list_changed",
        "{note}"
    );
    eprintln!("listen on B saw C's prompt change {latency:?} after C answered");
    assert!(latency < Duration::from_millis(200), "{latency:?}");
    // A applies it from the bus too, on its own time (B's stream may be told first): within
    // the same 200 ms of C's answer.
    let mut id = 31;
    loop {
        let list = modern(a.addr(), id, "prompts/list", json!({}));
        if names(&list, "prompts").contains(&"test_dynamic_prompt".to_owned()) {
            break;
        }
        assert!(
            answered.elapsed() < Duration::from_millis(200),
            "A does not list C's prompt {:?} after C answered: {list}",
            answered.elapsed()
        );
        id += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn the_get_stream_on_b_receives_the_list_changed_produced_on_a_once() {
    let redis = redis();
    let rs = replicas(BIN, &redis, 2).unwrap();
    let (a, b) = (&rs[0], &rs[1]);

    // The session is minted on A; its standalone GET stream is opened on B.
    let sid = legacy_session(a.addr(), json!({}), "replicas-bus");
    let headers = session_headers(&sid);
    let get = get_stream(b.addr(), &sid);
    // The stream is attached once B answered a request of the session (it adopted the copy).
    std::thread::sleep(Duration::from_millis(300));

    // The change is made on A (a request of the same session, sent to A).
    let r = message(&exchange(
        a.addr(),
        &headers,
        &json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_trigger_tool_change"}}),
    ));
    let answered = Instant::now();
    assert_eq!(r["result"]["content"][0]["text"], "tools changed", "{r}");
    let note = get
        .next(Duration::from_secs(2))
        .expect("list_changed on B's GET stream");
    eprintln!(
        "the GET stream on B saw A's change {:?} after A answered",
        answered.elapsed()
    );
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    assert!(get.next(Duration::from_millis(300)).is_none(), "told twice");

    // Listing on B (the session's request landing there) shows the new tool.
    let list = message(&exchange(
        b.addr(),
        &headers,
        &json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}),
    ));
    assert!(
        names(&list, "tools").contains(&"test_dynamic_tool".to_owned()),
        "{list}"
    );
}

#[test]
fn the_bus_subscribes_again_by_itself_when_redis_comes_back() {
    let mut redis = redis();
    let rs = replicas(BIN, &redis, 2).unwrap();
    let (a, b) = (&rs[0], &rs[1]);

    // Redis goes away and comes back: both buses subscribe again without help.
    redis.stop();
    std::thread::sleep(Duration::from_millis(500));
    redis.restart().unwrap();
    redis.wait_bus_subscribers(2).unwrap();

    let r = modern(
        a.addr(),
        1,
        "tools/call",
        json!({ "name": "test_trigger_tool_change" }),
    );
    assert_eq!(r["result"]["content"][0]["text"], "tools changed", "{r}");
    // B applied A's change, published after the reconnection.
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let list = modern(b.addr(), 2, "tools/list", json!({}));
        if names(&list, "tools").contains(&"test_dynamic_tool".to_owned()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "B never applied the change: {list}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A 2025-11-25 session minted on `addr` by a client that takes elicitation and sampling.
fn session(addr: SocketAddr) -> String {
    legacy_session(
        addr,
        json!({"elicitation": {}, "sampling": {}}),
        "replicas-bus",
    )
}

/// The standalone `GET` stream of session `sid`, opened on `addr`.
fn get_stream(addr: SocketAddr, sid: &str) -> Stream {
    Stream::open(
        addr,
        format!(
            "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\
             Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: {LEGACY}\r\n\r\n"
        ),
    )
}

fn session_headers(sid: &str) -> [(&str, &str); 2] {
    [("Mcp-Session-Id", sid), ("MCP-Protocol-Version", LEGACY)]
}

/// A `tools/call` of `tool` in session `sid` on `addr`, its SSE events read as they come.
fn call_stream(addr: SocketAddr, sid: &str, id: u64, tool: &str, args: Value) -> Stream {
    Stream::open(
        addr,
        request(
            addr,
            &session_headers(sid),
            &json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
                    "params":{"name": tool, "arguments": args}}),
        ),
    )
}

/// The next message of `stream`: a server→client request `method`.
fn asked(stream: &Stream, method: &str) -> Value {
    let m = stream
        .next(Duration::from_secs(10))
        .unwrap_or_else(|| panic!("no {method} came"));
    assert_eq!(m["method"], method, "{m}");
    m
}

/// POSTs the client's answer `result` to the server→client request `asked` on `addr`.
fn answer(addr: SocketAddr, sid: &str, asked: &Value, result: Value) {
    let raw = exchange(
        addr,
        &session_headers(sid),
        &json!({"jsonrpc":"2.0","id":asked["id"],"result":result}),
    );
    assert!(raw.starts_with("HTTP/1.1 202"), "{raw}");
}

fn tool_text(m: &Value) -> String {
    m["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text result: {m}"))
        .to_owned()
}

#[test]
fn an_elicitation_asked_on_a_is_answered_through_b_and_two_replicas_ids_never_clash() {
    let redis = redis();
    let rs = replicas(BIN, &redis, 3).unwrap();
    let (a, b, c) = (&rs[0], &rs[1], &rs[2]);
    let sid = session(c.addr());

    // Handlers on A and on B of one session ask at the same time.
    let on_a = call_stream(
        a.addr(),
        &sid,
        10,
        "test_elicitation",
        json!({"message": "from A"}),
    );
    let on_b = call_stream(
        b.addr(),
        &sid,
        11,
        "test_elicitation",
        json!({"message": "from B"}),
    );
    let ask_a = asked(&on_a, "elicitation/create");
    let ask_b = asked(&on_b, "elicitation/create");
    assert_eq!(ask_a["params"]["message"], "from A", "{ask_a}");
    assert_ne!(ask_a["id"], ask_b["id"], "two replicas used one id");

    // The answers cross: A's question is answered on B, B's on A; each reaches its handler.
    let before = publishes(&redis);
    let content = |name: &str| json!({"action": "accept", "content": {"username": name, "email": format!("{name}@example.com")}});
    answer(b.addr(), &sid, &ask_a, content("ada"));
    answer(a.addr(), &sid, &ask_b, content("bob"));
    let done_a = on_a.next(Duration::from_secs(10)).expect("A's result");
    let done_b = on_b.next(Duration::from_secs(10)).expect("B's result");
    assert_eq!(done_a["id"], 10, "{done_a}");
    assert!(
        tool_text(&done_a).contains(r#""username":"ada""#),
        "{done_a}"
    );
    assert_eq!(done_b["id"], 11, "{done_b}");
    assert!(
        tool_text(&done_b).contains(r#""username":"bob""#),
        "{done_b}"
    );
    // One bus message per answer that landed elsewhere.
    assert_eq!(publishes(&redis) - before, 2);

    // An answer landing where its handler waits takes no bus message.
    let on_a = call_stream(
        a.addr(),
        &sid,
        12,
        "test_elicitation",
        json!({"message": "again"}),
    );
    let ask = asked(&on_a, "elicitation/create");
    let before = publishes(&redis);
    answer(a.addr(), &sid, &ask, content("cy"));
    let done = on_a.next(Duration::from_secs(10)).expect("the result");
    assert!(tool_text(&done).contains(r#""username":"cy""#), "{done}");
    assert_eq!(publishes(&redis), before);
}

#[test]
fn a_sampling_request_on_a_is_answered_through_b() {
    let redis = redis();
    let rs = replicas(BIN, &redis, 2).unwrap();
    let (a, b) = (&rs[0], &rs[1]);
    let sid = session(a.addr());

    let on_a = call_stream(
        a.addr(),
        &sid,
        5,
        "test_sampling",
        json!({"prompt": "Say hi"}),
    );
    let ask = asked(&on_a, "sampling/createMessage");
    assert_eq!(
        ask["params"]["messages"][0]["content"]["text"], "Say hi",
        "{ask}"
    );
    answer(
        b.addr(),
        &sid,
        &ask,
        json!({"role": "assistant", "content": {"type": "text", "text": "hi from B's client"},
               "model": "test-model", "stopReason": "endTurn"}),
    );
    let done = on_a.next(Duration::from_secs(10)).expect("the result");
    assert_eq!(done["id"], 5, "{done}");
    assert_eq!(
        tool_text(&done),
        "LLM response: hi from B's client",
        "{done}"
    );
}

#[test]
fn a_roots_request_on_a_is_answered_through_b() {
    let redis = redis();
    let rs = replicas(BIN, &redis, 2).unwrap();
    let (a, b) = (&rs[0], &rs[1]);
    let sid = legacy_session(a.addr(), json!({"roots": {}}), "replicas-bus");

    let on_a = call_stream(
        a.addr(),
        &sid,
        6,
        "test_input_required_result_list_roots",
        json!({}),
    );
    let ask = asked(&on_a, "roots/list");
    answer(
        b.addr(),
        &sid,
        &ask,
        json!({"roots": [{"uri": "file:///work/b", "name": "B's client root"}]}),
    );
    let done = on_a.next(Duration::from_secs(10)).expect("the result");
    assert_eq!(done["id"], 6, "{done}");
    assert_eq!(tool_text(&done), "Client roots: file:///work/b", "{done}");
}

#[test]
fn a_request_running_on_a_is_cancelled_through_b() {
    let redis = redis();
    let rs = replicas(BIN, &redis, 2).unwrap();
    let (a, b) = (&rs[0], &rs[1]);
    let sid = session(b.addr());

    // A's handler waits for an answer that will not come.
    let on_a = call_stream(
        a.addr(),
        &sid,
        20,
        "test_elicitation",
        json!({"message": "never answered"}),
    );
    asked(&on_a, "elicitation/create");
    assert!(on_a.next(Duration::from_millis(300)).is_none());

    // The client gives up; its notification lands on B.
    let raw = exchange(
        b.addr(),
        &session_headers(&sid),
        &json!({"jsonrpc":"2.0","method":"notifications/cancelled",
                "params":{"requestId": 20, "reason": "changed my mind"}}),
    );
    assert!(raw.starts_with("HTTP/1.1 202"), "{raw}");
    // A's request ends: its stream closes with no response (a cancelled request gets none).
    let t0 = Instant::now();
    let after = on_a.next(Duration::from_secs(15));
    assert!(
        after.is_none(),
        "a message after the cancellation: {after:?}"
    );
    let took = t0.elapsed();
    eprintln!("A's cancelled request ended {took:?} after B took the notification");
    assert!(took < Duration::from_secs(5), "{took:?}");

    // The session goes on: the id is free again on A.
    let r = message(&exchange(
        a.addr(),
        &session_headers(&sid),
        &json!({"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"test_simple_text"}}),
    ));
    assert_eq!(r["id"], 20, "{r}");
    assert!(r["result"]["content"][0]["text"].is_string(), "{r}");
}

/// Two replicas sharing a Redis, a 2025-11-25 session minted on A with its `GET` stream held
/// on B, and a task of the session (`slow_compute`, 0.5 s) started on A with `params` merged
/// into its `tools/call` params. The Redis server and the replicas live as long as the value.
struct TaskOnAWatchedFromB {
    _redis: RedisServer,
    _replicas: Vec<duomcp_testkit::cluster::Replica>,
    get: Stream,
    task: String,
}

fn task_on_a_watched_from_b(params: Value) -> TaskOnAWatchedFromB {
    let redis = redis();
    let rs = replicas(BIN, &redis, 2).unwrap();
    let (a, b) = (&rs[0], &rs[1]);
    let sid = session(a.addr());
    let get = get_stream(b.addr(), &sid);
    std::thread::sleep(Duration::from_millis(300));

    let mut call = json!({"name": "slow_compute", "arguments": {"seconds": 0.5, "label": "x"},
                          "task": {"ttl": 60000}});
    for (k, v) in params.as_object().into_iter().flatten() {
        call[k] = v.clone();
    }
    let r = message(&exchange(
        a.addr(),
        &session_headers(&sid),
        &json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params": call}),
    ));
    let task = r["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {r}"))
        .to_owned();
    TaskOnAWatchedFromB {
        _redis: redis,
        _replicas: rs,
        get,
        task,
    }
}

#[test]
fn the_get_stream_on_b_receives_the_status_of_a_task_running_on_a() {
    // A task of the session runs on A; B's GET stream hears how it ended.
    let t = task_on_a_watched_from_b(json!({}));
    let (get, task) = (&t.get, &t.task);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let note = get
            .next(deadline.saturating_duration_since(Instant::now()))
            .expect("the task's status on B's GET stream");
        assert_eq!(note["method"], "notifications/tasks/status", "{note}");
        assert_eq!(note["params"]["taskId"], task.as_str(), "{note}");
        if note["params"]["status"] == "completed" {
            break;
        }
    }
}

#[test]
fn the_progress_of_a_task_running_on_a_reaches_the_get_stream_on_b_once() {
    // A task of the session runs on A, which holds no GET stream of it; it reports progress.
    let t = task_on_a_watched_from_b(json!({"_meta": {"progressToken": "tp"}}));
    let (get, task) = (&t.get, &t.task);
    // B's GET stream gets both progress notifications, once each, tied to the task.
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while let Some(note) = get.next(deadline.saturating_duration_since(Instant::now())) {
        let done = note["method"] == "notifications/tasks/status"
            && note["params"]["status"] == "completed";
        seen.push(note);
        if done {
            break;
        }
    }
    while let Some(late) = get.next(Duration::from_millis(300)) {
        seen.push(late);
    }
    let progress: Vec<&Value> = seen
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 2, "{seen:?}");
    for (p, want) in progress.iter().zip([0.0, 0.5]) {
        assert_eq!(p["params"]["progressToken"], "tp", "{p}");
        assert_eq!(p["params"]["progress"], want, "{p}");
        assert_eq!(
            p["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
            task.as_str(),
            "{p}"
        );
    }
}

/// Every message on the replicas' bus channels (`duomcp:bus` and each inbox
/// `duomcp:bus:<16 hex>`), read by a real `redis-cli --csv psubscribe` beside the replicas:
/// (channel, message kind), in order.
struct BusTap {
    child: std::process::Child,
    rx: mpsc::Receiver<(String, String)>,
    seen: Vec<(String, String)>,
}

impl BusTap {
    fn start(redis: &RedisServer) -> BusTap {
        let mut child = std::process::Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &redis.addr().port().to_string()])
            .args(["--csv", "psubscribe", "duomcp:bus*"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("redis-cli (Debian package redis-tools)");
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { return };
                // "pmessage","duomcp:bus*","CHANNEL","{\"o\":…,\"m\":{\"kind\":\"KIND\",…}}"
                let fields: Vec<&str> = line.splitn(4, "\",\"").collect();
                let [kind0, _, channel, payload] = fields[..] else {
                    continue;
                };
                if kind0 != "\"pmessage" {
                    continue;
                }
                let kind = payload
                    .split_once("kind\\\":\\\"")
                    .and_then(|(_, rest)| rest.split_once("\\\""))
                    .map_or("?", |(k, _)| k);
                if tx.send((channel.to_owned(), kind.to_owned())).is_err() {
                    return;
                }
            }
        });
        // The subscription holds before anything is published.
        let deadline = Instant::now() + Duration::from_secs(10);
        while redis.command(&["PUBSUB", "NUMPAT"]).unwrap().trim() != "1" {
            assert!(Instant::now() < deadline, "redis-cli did not subscribe");
            std::thread::sleep(Duration::from_millis(20));
        }
        BusTap {
            child,
            rx,
            seen: Vec::new(),
        }
    }

    /// What was published until the bus has been quiet for `quiet`.
    fn settle(&mut self, quiet: Duration) -> Vec<(String, String)> {
        while let Ok(m) = self.rx.recv_timeout(quiet) {
            self.seen.push(m);
        }
        std::mem::take(&mut self.seen)
    }
}

impl Drop for BusTap {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The raw answer to `DELETE` of session `sid` on `addr`.
fn delete(addr: SocketAddr, sid: &str) -> String {
    exchange_blocking(
        addr,
        format!(
            "DELETE /mcp HTTP/1.1\r\nHost: {addr}\r\nMcp-Session-Id: {sid}\r\n\
             MCP-Protocol-Version: {LEGACY}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
        Duration::from_secs(10),
    )
}

/// The `result` of a 2025-11-25 request `method` with `params` in session `sid` on `addr`.
fn legacy(addr: SocketAddr, sid: &str, id: u64, method: &str, params: Value) -> Value {
    let r = message(&exchange(
        addr,
        &session_headers(sid),
        &json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}),
    ));
    assert!(r.get("result").is_some(), "{method}: {r}");
    r
}

#[test]
fn a_session_change_is_announced_to_the_replicas_holding_the_session_alone() {
    // Three replicas; the session is used on A and twice on B (whose copy, restored at the
    // first request, is trusted from the second on), once on C (restored, trusted by nobody:
    // its next request asks Redis anyway).
    let redis = redis();
    let rs = replicas(BIN, &redis, 3).unwrap();
    let (a, b, c) = (&rs[0], &rs[1], &rs[2]);
    let sid = session(a.addr());
    legacy(a.addr(), &sid, 1, "tools/list", json!({}));
    legacy(b.addr(), &sid, 2, "tools/list", json!({}));
    legacy(b.addr(), &sid, 3, "tools/list", json!({}));
    legacy(c.addr(), &sid, 4, "tools/list", json!({}));
    let mut tap = BusTap::start(&redis);

    // A changes the session's record: only B hears the invalidation (C holds no trusted
    // copy), and only A the answer.
    legacy(
        a.addr(),
        &sid,
        3,
        "logging/setLevel",
        json!({"level": "debug"}),
    );
    let seen = tap.settle(Duration::from_millis(700));
    let kinds = |k: &str| {
        seen.iter()
            .filter(|(_, kind)| kind == k)
            .collect::<Vec<_>>()
    };
    assert_eq!(kinds("invalidate").len(), 1, "{seen:?}");
    assert_eq!(
        kinds("invalidate_ack").len(),
        1,
        "B alone confirms: {seen:?}"
    );
    assert!(
        seen.iter().all(|(channel, _)| channel != "duomcp:bus"),
        "nothing for every replica: {seen:?}"
    );
    assert_ne!(kinds("invalidate")[0].0, kinds("invalidate_ack")[0].0);

    // DELETE on B ends it on A and C too; only A, which may trust its copy, is told.
    let raw = delete(b.addr(), &sid);
    assert!(raw.starts_with("HTTP/1.1 204"), "{raw}");
    for r in [a, c] {
        let raw = exchange(
            r.addr(),
            &session_headers(&sid),
            &json!({"jsonrpc":"2.0","id":9,"method":"tools/list"}),
        );
        assert!(raw.starts_with("HTTP/1.1 404"), "{raw}");
    }
    let seen = tap.settle(Duration::from_millis(700));
    let invalidations: Vec<_> = seen.iter().filter(|(_, k)| k == "invalidate").collect();
    assert_eq!(invalidations.len(), 1, "to A alone: {seen:?}");
    assert_eq!(
        invalidations[0].0,
        kinds("invalidate_ack")[0].0,
        "A's inbox (where B's confirmation went before)"
    );
}

#[test]
fn a_replica_whose_first_request_changed_the_session_is_told_when_it_ends_elsewhere() {
    // C's first request of the session is `logging/setLevel`: it restores the session and
    // saves the record, and then trusts its copy (no touch for the touch interval). The store counts it
    // among the copies to tell: a DELETE on B reaches it, and its next request is 404.
    // A touch interval of 10 s: a copy is trusted that long, and a change that is not
    // confirmed waits that long, far from what a loaded machine takes to confirm one.
    let redis = redis();
    let rs = replicas_with(BIN, &redis, 3, &["--limit", "session-touch-interval=10s"]).unwrap();
    let (a, b, c) = (&rs[0], &rs[1], &rs[2]);
    let sid = session(a.addr());
    legacy(
        c.addr(),
        &sid,
        1,
        "logging/setLevel",
        json!({"level": "error"}),
    );
    let mut tap = BusTap::start(&redis);
    let t0 = Instant::now();
    let raw = delete(b.addr(), &sid);
    assert!(raw.starts_with("HTTP/1.1 204"), "{raw}");
    // Confirmed by A and C at once: the tap, which receives every message too, is not
    // counted as a replica whose confirmation must come (else B waits out the interval).
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(5), "{took:?}");
    for r in [c, a] {
        let raw = exchange(
            r.addr(),
            &session_headers(&sid),
            &json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
        );
        assert!(raw.starts_with("HTTP/1.1 404"), "{raw}");
    }
    let seen = tap.settle(Duration::from_millis(700));
    let mut told: Vec<&str> = seen
        .iter()
        .filter(|(_, k)| k == "invalidate")
        .map(|(ch, _)| ch.as_str())
        .collect();
    told.sort();
    told.dedup();
    assert_eq!(
        told.len(),
        2,
        "A and C, the copies that may be trusted: {seen:?}"
    );

    // Again without the tap: C, told, does not serve the session from its copy within the
    // touch interval.
    drop(tap);
    let sid = session(a.addr());
    legacy(
        c.addr(),
        &sid,
        1,
        "logging/setLevel",
        json!({"level": "error"}),
    );
    let t0 = Instant::now();
    let raw = delete(b.addr(), &sid);
    assert!(raw.starts_with("HTTP/1.1 204"), "{raw}");
    let raw = exchange(
        c.addr(),
        &session_headers(&sid),
        &json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
    );
    let took = t0.elapsed();
    assert!(raw.starts_with("HTTP/1.1 404"), "{took:?}: {raw}");
    assert!(
        took < Duration::from_secs(5),
        "the DELETE was not confirmed: {took:?}"
    );
}

#[test]
fn a_cancellation_goes_to_the_replicas_holding_the_session_and_may_come_before_its_request() {
    // Four replicas: the session is minted on A, used once on B and once on C (which trust
    // no copy of it: no invalidation would reach them, but a request may run there), never
    // on D.
    let redis = redis();
    let rs = replicas(BIN, &redis, 4).unwrap();
    let (a, b, c) = (&rs[0], &rs[1], &rs[2]);
    let sid = session(a.addr());
    legacy(b.addr(), &sid, 1, "tools/list", json!({}));
    legacy(c.addr(), &sid, 2, "tools/list", json!({}));
    let mut tap = BusTap::start(&redis);

    // The cancellation of request 30 lands on B before the request reaches C.
    let raw = exchange(
        b.addr(),
        &session_headers(&sid),
        &json!({"jsonrpc":"2.0","method":"notifications/cancelled",
                "params":{"requestId": 30, "reason": "never mind"}}),
    );
    assert!(raw.starts_with("HTTP/1.1 202"), "{raw}");
    // Sent after the 202, once the holders are read: a loaded machine may take a while.
    let seen = tap.settle(Duration::from_millis(1500));
    let mut cancels: Vec<&str> = seen
        .iter()
        .filter(|(_, k)| k == "cancel")
        .map(|(ch, _)| ch.as_str())
        .collect();
    cancels.sort();
    let sent = cancels.len();
    cancels.dedup();
    assert_eq!(
        (sent, cancels.len()),
        (2, 2),
        "to A and C, one each (D holds nothing of the session): {seen:?}"
    );
    assert!(seen.iter().all(|(ch, _)| ch != "duomcp:bus"), "{seen:?}");

    // Then the request comes to C: it is cancelled as soon as it is admitted (no response,
    // long before its 10 s).
    let t0 = Instant::now();
    let on_c = call_stream(
        c.addr(),
        &sid,
        30,
        "test_elicitation",
        json!({"message": "cancelled before it began"}),
    );
    let got = on_c.next(Duration::from_secs(15));
    assert!(
        got.as_ref()
            .is_none_or(|m| m["method"] == "elicitation/create"),
        "{got:?}"
    );
    while let Some(m) = on_c.next(Duration::from_secs(15)) {
        assert!(m.get("result").is_none(), "a response: {m}");
    }
    assert!(t0.elapsed() < Duration::from_secs(8), "{:?}", t0.elapsed());
}

#[test]
fn a_notification_reaches_the_replica_holding_the_get_stream_alone_and_is_heard_once() {
    // Three replicas; the session's GET stream is open on A, then on B too; a task of the
    // session runs on C and reports progress.
    let redis = redis();
    let rs = replicas(BIN, &redis, 3).unwrap();
    let (a, b, c) = (&rs[0], &rs[1], &rs[2]);
    let sid = session(c.addr());
    let get_a = get_stream(a.addr(), &sid);
    std::thread::sleep(Duration::from_millis(300));
    let get_b = get_stream(b.addr(), &sid);
    std::thread::sleep(Duration::from_millis(300));
    let mut tap = BusTap::start(&redis);
    let r = legacy(
        c.addr(),
        &sid,
        2,
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": 0.5, "label": "x"},
               "task": {"ttl": 60000}, "_meta": {"progressToken": "tp"}}),
    );
    assert!(r["result"]["task"]["taskId"].is_string(), "{r}");
    std::thread::sleep(Duration::from_secs(2));
    let heard = |s: &Stream| {
        let mut v = Vec::new();
        while let Some(m) = s.next(Duration::from_millis(300)) {
            v.push(m);
        }
        v.into_iter()
            .filter(|m| m["method"] == "notifications/progress")
            .collect::<Vec<_>>()
    };
    let (on_a, on_b) = (heard(&get_a), heard(&get_b));
    assert_eq!(
        on_a.len() + on_b.len(),
        2,
        "once each: A {on_a:?} B {on_b:?}"
    );
    assert_eq!(on_b.len(), 2, "on the stream opened last: {on_b:?}");
    let seen = tap.settle(Duration::from_millis(300));
    let notes: Vec<_> = seen.iter().filter(|(_, k)| k == "notify").collect();
    assert_eq!(notes.len(), 2, "{seen:?}");
    assert!(notes.iter().all(|(ch, _)| ch != "duomcp:bus"), "{seen:?}");
}

#[test]
fn a_request_id_in_flight_on_a_is_refused_on_b_when_ids_are_claimed_fleet_wide() {
    let redis = redis();
    // Without claims (the default), B runs a request whose id A runs already: only the
    // replica running it knows the id.
    {
        let rs = replicas(BIN, &redis, 2).unwrap();
        let (a, b) = (&rs[0], &rs[1]);
        let sid = session(a.addr());
        let on_a = call_stream(
            a.addr(),
            &sid,
            40,
            "test_elicitation",
            json!({"message": "1"}),
        );
        asked(&on_a, "elicitation/create");
        let on_b = call_stream(
            b.addr(),
            &sid,
            40,
            "test_elicitation",
            json!({"message": "2"}),
        );
        asked(&on_b, "elicitation/create");
    }
    // With `--fleet-request-ids`, B refuses it while A's runs, and takes it once A's ended.
    let rs = replicas_with(BIN, &redis, 2, &["--fleet-request-ids"]).unwrap();
    let (a, b) = (&rs[0], &rs[1]);
    let sid = session(a.addr());
    let on_a = call_stream(
        a.addr(),
        &sid,
        40,
        "test_elicitation",
        json!({"message": "1"}),
    );
    asked(&on_a, "elicitation/create");
    let raw = exchange(
        b.addr(),
        &session_headers(&sid),
        &json!({"jsonrpc":"2.0","id":40,"method":"tools/call",
                "params":{"name":"test_elicitation","arguments":{"message":"2"}}}),
    );
    assert!(raw.starts_with("HTTP/1.1 400"), "{raw}");
    let refused = message(&raw);
    assert_eq!(refused["id"], 40, "{refused}");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    // A claim holds in its session only: another client's session runs id 40 on B at the
    // same time.
    let other_client = session(b.addr());
    let on_b = call_stream(
        b.addr(),
        &other_client,
        40,
        "test_elicitation",
        json!({"message": "another client's"}),
    );
    asked(&on_b, "elicitation/create");
    // Another id runs on B meanwhile; the same id on A is refused there as before.
    let other = message(&exchange(
        b.addr(),
        &session_headers(&sid),
        &json!({"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"test_simple_text"}}),
    ));
    assert!(other["result"]["content"][0]["text"].is_string(), "{other}");
    // A's request ends (cancelled); its claim goes, and the id is free on B.
    let raw = exchange(
        a.addr(),
        &session_headers(&sid),
        &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId": 40}}),
    );
    assert!(raw.starts_with("HTTP/1.1 202"), "{raw}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = message(&exchange(
            b.addr(),
            &session_headers(&sid),
            &json!({"jsonrpc":"2.0","id":40,"method":"tools/call","params":{"name":"test_simple_text"}}),
        ));
        if r.get("result").is_some() {
            break;
        }
        assert_eq!(r["error"]["code"], -32600, "{r}");
        assert!(Instant::now() < deadline, "id 40 still claimed: {r}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The other client's request ends too (cancelled); then every claim is released.
    let raw = exchange(
        b.addr(),
        &session_headers(&other_client),
        &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId": 40}}),
    );
    assert!(raw.starts_with("HTTP/1.1 202"), "{raw}");
    drop(on_b);
    std::thread::sleep(Duration::from_millis(300));
    let left = redis.command(&["KEYS", "duomcp:session:*:req:*"]).unwrap();
    assert!(left.trim().is_empty(), "claims left: {left}");
}
