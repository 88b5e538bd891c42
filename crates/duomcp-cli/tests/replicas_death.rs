//! Tasks across replicas and replicas that die (issue 17): three `duomcp serve --http --redis`
//! replicas sharing a real `redis-server` (`duomcp_testkit::cluster`), every step sent to a
//! chosen replica on purpose, a replica killed with `kill -9` where the test says so. A missing
//! binary fails the test; nothing skips.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp_testkit::cluster::{self, RedisServer, Replica};
use duomcp_testkit::raw_http::{last_message, legacy_session, post_request_with};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");
const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";
const EXT: &str = "io.modelcontextprotocol/tasks";

fn redis() -> RedisServer {
    RedisServer::start().expect("redis-server (Debian package redis-server)")
}

fn replicas(redis: &RedisServer, n: usize) -> Vec<Replica> {
    cluster::replicas(BIN, redis, n).unwrap()
}

/// Writes one POST and returns the connection, positioned at the response head's end, and the
/// head.
fn send(
    addr: SocketAddr,
    headers: &[(&str, &str)],
    body: &Value,
) -> (BufReader<TcpStream>, String) {
    let req = post_request_with(addr, headers, &body.to_string());
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    tcp.write_all(&req).unwrap();
    read_head(tcp)
}

fn read_head(tcp: TcpStream) -> (BufReader<TcpStream>, String) {
    let mut r = BufReader::new(tcp);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    (r, head)
}

fn status(head: &str) -> u16 {
    head.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// The rest of a response: the JSON body, or the last `data:` of an SSE body.
fn message(mut r: BufReader<TcpStream>) -> Value {
    let mut body = String::new();
    r.read_to_string(&mut body).unwrap();
    let json = last_message(&body);
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"))
}

/// One SSE event: its id and data (chunked transfer framing lines are skipped: they never
/// start with a field name).
fn next_event(r: &mut BufReader<TcpStream>) -> Option<(String, Value)> {
    let (mut id, mut data) = (None, None);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if let Some(v) = line.strip_prefix("id:") {
            id = Some(v.trim().to_owned());
        } else if let Some(v) = line.strip_prefix("data:") {
            if !v.trim().is_empty() {
                data = serde_json::from_str::<Value>(v.trim()).ok();
            }
        } else if line.is_empty() {
            if let (Some(i), Some(d)) = (&id, &data) {
                return Some((i.clone(), d.clone()));
            }
            id = None;
            data = None;
        }
    }
}

/// A 2026-07-28 request declaring the tasks extension.
fn modern(addr: SocketAddr, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {}, "extensions": { EXT: {} } },
        "io.modelcontextprotocol/clientInfo": { "name": "replicas-death", "version": "1" }
    });
    let mut headers = vec![("MCP-Protocol-Version", MODERN), ("Mcp-Method", method)];
    let name = params["name"]
        .as_str()
        .or(params["taskId"].as_str())
        .map(str::to_owned);
    if let Some(n) = &name {
        headers.push(("Mcp-Name", n));
    }
    let (r, head) = send(
        addr,
        &headers,
        &json!({"jsonrpc":"2.0","id":1,"method":method,"params":params}),
    );
    let m = message(r);
    assert_eq!(status(&head), 200, "{head}{m}");
    m.get("result")
        .cloned()
        .unwrap_or_else(|| panic!("{method}: {m}"))
}

fn modern_task(addr: SocketAddr, tool: &str, args: Value) -> String {
    let r = modern(addr, "tools/call", json!({"name": tool, "arguments": args}));
    assert_eq!(r["resultType"], "task", "{r}");
    assert_eq!(r["status"], "working", "{r}");
    r["taskId"].as_str().unwrap().to_owned()
}

fn modern_get(addr: SocketAddr, id: &str) -> Value {
    modern(addr, "tasks/get", json!({"taskId": id}))
}

/// Polls `tasks/get` on `addr` until `done`, for at most `within`.
fn wait_for(addr: SocketAddr, id: &str, within: Duration, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let t = modern_get(addr, id);
        if done(&t) {
            return t;
        }
        assert!(Instant::now() < deadline, "task {id} never got there: {t}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether the replica running task `id` still holds its lease.
fn leased(redis: &RedisServer, id: &str) -> bool {
    redis
        .command(&["EXISTS", &format!("duomcp:task:{{{id}}}:lease")])
        .unwrap()
        == "1"
}

fn wait_unleased(redis: &RedisServer, id: &str, within: Duration) -> Duration {
    let t0 = Instant::now();
    while leased(redis, id) {
        assert!(
            t0.elapsed() < within,
            "task {id} still leased after {within:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    t0.elapsed()
}

fn initialize(addr: SocketAddr) -> String {
    legacy_session(addr, json!({"elicitation": {}}), "replicas-death")
}

/// A 2025-11-25 request in session `sid`; returns the connection after the head.
fn legacy_send(addr: SocketAddr, sid: &str, body: &Value) -> (BufReader<TcpStream>, String) {
    send(
        addr,
        &[("Mcp-Session-Id", sid), ("MCP-Protocol-Version", LEGACY)],
        body,
    )
}

fn legacy(addr: SocketAddr, sid: &str, id: u64, method: &str, params: Value) -> Value {
    let (r, head) = legacy_send(
        addr,
        sid,
        &json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}),
    );
    assert_eq!(status(&head), 200, "{head}");
    message(r)
}

/// `GET` resuming after `last_event_id` on `addr`.
fn resume(addr: SocketAddr, sid: &str, last_event_id: &str) -> BufReader<TcpStream> {
    let req = format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: {LEGACY}\r\nLast-Event-ID: {last_event_id}\r\n\
         Connection: close\r\n\r\n"
    );
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    tcp.write_all(req.as_bytes()).unwrap();
    let (r, head) = read_head(tcp);
    assert_eq!(status(&head), 200, "{head}");
    r
}

#[test]
fn a_modern_task_created_on_a_is_read_on_b_cancelled_via_c_and_stops_on_a() {
    let redis = redis();
    let rs = replicas(&redis, 3);
    let (a, b, c) = (rs[0].addr(), rs[1].addr(), rs[2].addr());

    let id = modern_task(a, "slow_compute", json!({"seconds": 60}));
    assert_eq!(modern_get(b, &id)["status"], "working");
    assert!(
        leased(&redis, &id),
        "A holds the lease while it runs the task"
    );

    let cancelled = modern(c, "tasks/cancel", json!({"taskId": id}));
    assert!(cancelled.get("error").is_none(), "{cancelled}");
    let t = modern_get(b, &id);
    assert_eq!(t["status"], "cancelled", "{t}");
    // A read the cancellation at a lease renewal and stopped the handler (which drops the
    // lease): within one renewal interval (1 s) and a margin.
    let took = wait_unleased(&redis, &id, Duration::from_secs(3));
    eprintln!("cancellation reached A in {took:?}");
    assert_eq!(modern_get(a, &id)["status"], "cancelled");
}

#[test]
fn a_modern_task_on_a_takes_its_input_through_b_and_completes_for_c() {
    let redis = redis();
    let rs = replicas(&redis, 3);
    let (a, b, c) = (rs[0].addr(), rs[1].addr(), rs[2].addr());

    let id = modern_task(a, "confirm_delete", json!({"filename": "notes.txt"}));
    let t = wait_for(c, &id, Duration::from_secs(10), |t| {
        t["status"] == "input_required"
    });
    let key = t["inputRequests"]
        .as_object()
        .and_then(|m| m.keys().next().cloned())
        .unwrap_or_else(|| panic!("no input request: {t}"));
    let ack = modern(
        b,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key: {"action": "accept", "content": {"confirm": true}}}}),
    );
    assert!(ack.get("error").is_none(), "{ack}");
    let t = wait_for(c, &id, Duration::from_secs(10), |t| {
        t["status"] == "completed"
    });
    assert_eq!(
        t["result"]["content"][0]["text"], "Deleted notes.txt",
        "{t}"
    );
}

#[test]
fn a_legacy_task_created_on_a_gives_its_result_via_b_and_is_cancelled_via_c() {
    let redis = redis();
    let rs = replicas(&redis, 3);
    let (a, b, c) = (rs[0].addr(), rs[1].addr(), rs[2].addr());
    let sid = initialize(a);

    let create = |seconds: f64| {
        let r = legacy(
            a,
            &sid,
            2,
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": seconds, "label": "x"}, "task": {"ttl": 60000}}),
        );
        assert_eq!(r["result"]["task"]["status"], "working", "{r}");
        r["result"]["task"]["taskId"].as_str().unwrap().to_owned()
    };

    // Result via B: tasks/result on B waits for A to finish it.
    let quick = create(1.0);
    let got = legacy(c, &sid, 3, "tasks/get", json!({"taskId": quick}));
    assert_eq!(got["result"]["status"], "working", "{got}");
    let result = legacy(b, &sid, 4, "tasks/result", json!({"taskId": quick}));
    assert_eq!(
        result["result"]["content"][0]["text"], "Computed x in 1s",
        "{result}"
    );

    // Cancelled via C, seen cancelled via B, stopped on A.
    let slow = create(60.0);
    assert!(leased(&redis, &slow));
    let cancelled = legacy(c, &sid, 5, "tasks/cancel", json!({"taskId": slow}));
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    let got = legacy(b, &sid, 6, "tasks/get", json!({"taskId": slow}));
    assert_eq!(got["result"]["status"], "cancelled", "{got}");
    wait_unleased(&redis, &slow, Duration::from_secs(3));

    // The task belongs to the session, on every replica: another session does not see it.
    let other = initialize(b);
    let foreign = legacy(b, &other, 7, "tasks/get", json!({"taskId": slow}));
    assert_eq!(foreign["error"]["code"], -32602, "{foreign}");
}

#[test]
fn a_legacy_task_on_a_asks_through_tasks_result_on_b_and_is_answered_via_c() {
    let redis = redis();
    let rs = replicas(&redis, 3);
    let (a, b, c) = (rs[0].addr(), rs[1].addr(), rs[2].addr());
    let sid = initialize(a);

    let r = legacy(
        a,
        &sid,
        2,
        "tools/call",
        json!({"name": "confirm_delete", "arguments": {"filename": "notes.txt"}, "task": {"ttl": 60000}}),
    );
    let id = r["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {r}"))
        .to_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut n = 10;
    loop {
        n += 1;
        let got = legacy(c, &sid, n, "tasks/get", json!({"taskId": id}));
        if got["result"]["status"] == "input_required" {
            break;
        }
        assert!(Instant::now() < deadline, "not input_required: {got}");
        std::thread::sleep(Duration::from_millis(50));
    }

    // tasks/result on B, which does not run the task: A's elicitation comes on its stream.
    let (mut on_b, head) = legacy_send(
        b,
        &sid,
        &json!({"jsonrpc":"2.0","id":50,"method":"tasks/result","params":{"taskId": id}}),
    );
    assert_eq!(status(&head), 200, "{head}");
    let (_, ask) = next_event(&mut on_b).expect("the elicitation on B's tasks/result stream");
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(
        ask["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str(),
        "{ask}"
    );
    // The answer lands on C; it reaches the handler on A, and B's stream ends with the result.
    let (_, head) = legacy_send(
        c,
        &sid,
        &json!({"jsonrpc":"2.0","id":ask["id"],"result":{"action":"accept","content":{"confirm":true}}}),
    );
    assert_eq!(status(&head), 202, "{head}");
    let result = loop {
        let (_, m) = next_event(&mut on_b).expect("the task's result on B's stream");
        if m["id"] == 50 {
            break m;
        }
        assert_ne!(m["method"], "elicitation/create", "asked twice: {m}");
    };
    assert_eq!(
        result["result"]["content"][0]["text"], "Deleted notes.txt",
        "{result}"
    );
}

#[test]
fn a_task_on_a_killed_replica_ends_failed_within_the_lease() {
    let redis = redis();
    let mut rs = replicas(&redis, 2);
    let b = rs[1].addr();

    let id = modern_task(rs[0].addr(), "slow_compute", json!({"seconds": 60}));
    assert_eq!(modern_get(b, &id)["status"], "working");
    rs[0].kill();
    let killed = Instant::now();
    // The lease is 5 s; B fails the task at the first look after it lapsed.
    let t = wait_for(b, &id, Duration::from_secs(8), |t| t["status"] != "working");
    let took = killed.elapsed();
    eprintln!("the task of the killed replica ended failed after {took:?}");
    assert_eq!(t["status"], "failed", "{t}");
    let message = t["statusMessage"].as_str().unwrap_or_default();
    assert!(message.contains("stopped renewing its lease"), "{t}");
    assert_eq!(t["error"]["code"], -32603, "{t}");
    assert!(
        took >= Duration::from_secs(3),
        "failed before the lease could lapse: {took:?}"
    );
    // Terminal for good: it stays failed.
    assert_eq!(modern_get(b, &id)["status"], "failed");
}

/// Starts `multi_input` (two elicitations at once) on `addr` as an SSE stream and reads its two
/// events.
fn two_elicitations(addr: SocketAddr, sid: &str) -> (BufReader<TcpStream>, Vec<(String, Value)>) {
    let (mut r, head) = legacy_send(
        addr,
        sid,
        &json!({"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"multi_input","arguments":{}}}),
    );
    assert_eq!(status(&head), 200, "{head}");
    assert!(
        header(&head, "content-type").is_some_and(|c| c.starts_with("text/event-stream")),
        "{head}"
    );
    let events: Vec<_> = (0..2)
        .map(|_| next_event(&mut r).expect("an event"))
        .collect();
    for (_, e) in &events {
        assert_eq!(e["method"], "elicitation/create", "{e}");
    }
    (r, events)
}

/// The id of the event before `id` (`STREAM-SEQ`): where a client that saw none resumes from.
fn before(id: &str) -> String {
    let (stream, seq) = id.split_once('-').unwrap();
    format!("{stream}-{}", seq.parse::<u64>().unwrap() - 1)
}

#[test]
fn a_stream_resumed_on_b_after_a_was_killed_replays_every_event_then_an_error() {
    let redis = redis();
    let mut rs = replicas(&redis, 2);
    let b = rs[1].addr();
    let sid = initialize(rs[0].addr());

    let (conn, seen) = two_elicitations(rs[0].addr(), &sid);
    drop(conn);
    rs[0].kill();
    let killed = Instant::now();

    let mut r = resume(b, &sid, &before(&seen[0].0));
    let replayed: Vec<_> = (0..2)
        .map(|_| next_event(&mut r).expect("a replayed event"))
        .collect();
    // Every event appended before the death, once, in order: ids and messages one by one.
    for (i, (got, want)) in replayed.iter().zip(&seen).enumerate() {
        assert_eq!(got.0, want.0, "event {i}: id");
        assert_eq!(got.1, want.1, "event {i}: message");
    }
    // Then, once A's lease lapsed, the lost request's answer: an error, not a hang.
    let (error_id, error) = next_event(&mut r).expect("the error for the lost request");
    let took = killed.elapsed();
    eprintln!("the lost request was answered after {took:?}");
    assert_eq!(error["id"], 42, "{error}");
    assert_eq!(error["error"]["code"], -32603, "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("lease lapsed")),
        "{error}"
    );
    assert_eq!(
        error_id,
        format!("{}-3", seen[0].0.split_once('-').unwrap().0)
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    // The stream is over; resuming it again replays the same three events and ends.
    let mut again = resume(b, &sid, &before(&seen[0].0));
    let all: Vec<_> = std::iter::from_fn(|| next_event(&mut again)).collect();
    assert_eq!(all.len(), 3, "{all:?}");
    assert_eq!(all[2].1, error);
}

#[test]
fn a_live_stream_resumed_on_b_follows_a_until_the_response() {
    let redis = redis();
    let rs = replicas(&redis, 2);
    let (a, b) = (rs[0].addr(), rs[1].addr());
    let sid = initialize(a);

    let (conn, seen) = two_elicitations(a, &sid);
    drop(conn);
    // Resume on B after the first event while A still runs the call.
    let mut r = resume(b, &sid, &seen[0].0);
    let second = next_event(&mut r).expect("the second event");
    assert_eq!(second, seen[1]);

    // Answer both elicitations on A (which holds them); B follows A's new events.
    for (_, e) in &seen {
        let message = e["params"]["message"].as_str().unwrap_or_default();
        let content = if message.contains("name") {
            json!({"name": "Ada"})
        } else {
            json!({"confirm": true})
        };
        let (_, head) = legacy_send(
            a,
            &sid,
            &json!({"jsonrpc":"2.0","id":e["id"],"result":{"action":"accept","content":content}}),
        );
        assert_eq!(status(&head), 202, "{head}");
    }
    let t0 = Instant::now();
    let (id, response) = next_event(&mut r).expect("the response, through B");
    eprintln!(
        "B delivered A's response {:?} after the answers",
        t0.elapsed()
    );
    assert_eq!(response["id"], 42, "{response}");
    let text = response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.starts_with("Hello, Ada"), "{response}");
    assert_eq!(id, format!("{}-3", seen[0].0.split_once('-').unwrap().0));
    // And B ends the connection once the stream is finished.
    assert!(next_event(&mut r).is_none());
}
