//! Several `duomcp serve --http` replicas sharing state (issue 17), with real parts:
//! `redis-server` and HAProxy from Debian's packages (`.ci/run` installs them), started by the
//! test through `duomcp_testkit::cluster`. A missing binary fails the test; nothing skips.
//! Every step is sent to a chosen replica on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use base64::Engine as _;
use duomcp_testkit::cluster::{replicas, Balancer, RedisServer, Replica};
use duomcp_testkit::raw_http::{
    exchange_blocking, last_message, legacy_session, post_request_with,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");
const MODERN: &str = "2026-07-28";

/// One HTTP/1.1 exchange (`Connection: close`): status and body.
fn post(addr: SocketAddr, headers: &[(&str, &str)], body: &Value) -> (u16, String) {
    let text = raw_post(addr, headers, body);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, body.to_owned())
}

/// The whole response, head and body.
fn raw_post(addr: SocketAddr, headers: &[(&str, &str)], body: &Value) -> String {
    let req = post_request_with(addr, headers, &body.to_string());
    exchange_blocking(addr, &req, Duration::from_secs(30))
}

/// A 2026-07-28 `tools/call` of `tool` with elicitation support, plus `extra` params.
fn modern_call(addr: SocketAddr, id: u64, tool: &str, extra: Value) -> Value {
    let mut params = json!({
        "name": tool,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} },
            "io.modelcontextprotocol/clientInfo": { "name": "replicas", "version": "1" }
        }
    });
    if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    let (status, body) = post(
        addr,
        &[
            ("MCP-Protocol-Version", MODERN),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", tool),
        ],
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}),
    );
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// The `requestState` of the elicitation fixture's first round on `addr`.
fn first_round(addr: SocketAddr) -> String {
    let r = modern_call(addr, 1, "test_input_required_result_elicitation", json!({}));
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    r["result"]["requestState"].as_str().unwrap().to_owned()
}

/// The retry of the fixture with `state` and an answer on `addr`.
fn second_round(addr: SocketAddr, state: &str) -> Value {
    modern_call(
        addr,
        2,
        "test_input_required_result_elicitation",
        json!({
            "requestState": state,
            "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}}
        }),
    )
}

fn greeted(r: &Value) -> bool {
    r["result"]["content"][0]["text"] == "Hello, Ada!"
}

/// A keyring file of `keys` (raw bytes each), newest first, removed on drop.
struct KeyFile(PathBuf);

impl KeyFile {
    fn new(tag: &str, keys: &[[u8; 32]]) -> KeyFile {
        let path =
            std::env::temp_dir().join(format!("duomcp-keyring-{tag}-{}.txt", std::process::id()));
        let text: String = keys
            .iter()
            .map(|k| base64::engine::general_purpose::STANDARD.encode(k) + "\n")
            .collect();
        std::fs::write(&path, text).unwrap();
        KeyFile(path)
    }

    fn arg(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for KeyFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn request_state_sealed_on_a_with_an_old_key_opens_on_b_after_a_rotation() {
    let (old, new) = ([1u8; 32], [2u8; 32]);
    let before = KeyFile::new("before", &[old]);
    let rotated = KeyFile::new("rotated", &[new, old]);
    let retired = KeyFile::new("retired", &[new]);
    let a = Replica::start(BIN, "", &["--state-key-file", before.arg()]).unwrap();
    let b = Replica::start(BIN, "", &["--state-key-file", rotated.arg()]).unwrap();
    let c = Replica::start(BIN, "", &["--state-key-file", retired.arg()]).unwrap();

    // Sealed on A with the old key, opened on B, which seals with the new one now.
    let state = first_round(a.addr());
    let done = second_round(b.addr(), &state);
    assert!(greeted(&done), "{done}");

    // C dropped the old key: the state is refused, as a failed integrity check.
    let refused = second_round(c.addr(), &state);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("integrity"),
        "{refused}"
    );

    // B seals with the new key: C opens it, A (old key only) does not.
    let fresh = first_round(b.addr());
    assert_ne!(fresh.split('.').nth(1), state.split('.').nth(1), "key ids");
    assert!(greeted(&second_round(c.addr(), &fresh)));
    assert_eq!(second_round(a.addr(), &fresh)["error"]["code"], -32602);
}

#[test]
fn a_bad_keyring_file_stops_the_server_with_the_line_named() {
    let path = std::env::temp_dir().join(format!("duomcp-badring-{}.txt", std::process::id()));
    std::fs::write(&path, "c2hvcnQ=\n").unwrap();
    let err = Replica::start(BIN, "", &["--state-key-file", path.to_str().unwrap()])
        .err()
        .expect("refused");
    let _ = std::fs::remove_file(&path);
    assert!(err.to_string().contains("line 1"), "{err}");
}

/// Calls per command, without `INFO` itself (the measurement).
fn calls(redis: &RedisServer) -> BTreeMap<String, u64> {
    let mut c = redis.command_calls().unwrap();
    c.remove("info");
    c
}

#[test]
fn replicas_sharing_a_redis_share_the_key_and_modern_calls_touch_redis_zero_times() {
    let redis = RedisServer::start().expect("redis-server (Debian package redis-server)");
    let rs = replicas(BIN, &redis, 3).unwrap();
    let (a, b, c) = (&rs[0], &rs[1], &rs[2]);
    let lb = Balancer::start(&[a.addr(), b.addr(), c.addr()]).expect("haproxy");

    // The key both made at start is one key: a state sealed on A opens on B.
    let state = first_round(a.addr());
    assert!(greeted(&second_round(b.addr(), &state)));
    assert_eq!(redis.command(&["EXISTS", "duomcp:state-key"]).unwrap(), "1");

    // 2026-07-28 traffic through the balancer (round robin over the three) costs Redis
    // nothing: counted with INFO commandstats before and after.
    let before = calls(&redis);
    for i in 0..30 {
        let r = modern_call(lb.addr(), 10 + i, "test_simple_text", json!({}));
        assert_eq!(r["result"]["resultType"], "complete", "{r}");
        // The multi-round-trip flow through the balancer lands its rounds on different
        // replicas and still completes.
        if i % 10 == 0 {
            let state = first_round(lb.addr());
            assert!(greeted(&second_round(lb.addr(), &state)));
        }
    }
    assert_eq!(
        calls(&redis),
        before,
        "modern requests sent commands to Redis"
    );
}

/// Headers of a 2025-11-25 request in session `sid`.
fn legacy_headers(sid: &str) -> [(&str, &str); 2] {
    [
        ("Mcp-Session-Id", sid),
        ("MCP-Protocol-Version", "2025-11-25"),
    ]
}

fn initialize(addr: SocketAddr) -> String {
    legacy_session(addr, json!({"elicitation": {}}), "replicas")
}

/// A 2025-11-25 request in session `sid` on `addr`: status and the JSON-RPC message (the
/// last `data:` of an SSE body, or the JSON body).
fn legacy(addr: SocketAddr, sid: &str, id: u64, method: &str, params: Value) -> (u16, Value) {
    let (status, body) = post(
        addr,
        &legacy_headers(sid),
        &json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}),
    );
    let json = last_message(&body);
    (status, serde_json::from_str(&json).unwrap_or(Value::Null))
}

fn delete(addr: SocketAddr, sid: &str) -> u16 {
    let req = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nMcp-Session-Id: {sid}\r\n\
         MCP-Protocol-Version: 2025-11-25\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.write_all(req.as_bytes()).unwrap();
    let mut buf = Vec::new();
    tcp.read_to_end(&mut buf).unwrap();
    String::from_utf8_lossy(&buf)
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Commands of session lookups and writes (the Lua scripts), and all commands.
fn script_calls(c: &BTreeMap<String, u64>) -> u64 {
    c.get("evalsha").copied().unwrap_or(0) + c.get("eval").copied().unwrap_or(0)
}

#[test]
fn a_session_minted_on_a_serves_on_b_and_c_and_delete_on_c_ends_it_everywhere() {
    let redis = RedisServer::start().expect("redis-server (Debian package redis-server)");
    let rs = replicas(BIN, &redis, 3).unwrap();
    let (a, b, c) = (&rs[0], &rs[1], &rs[2]);

    let sid = initialize(a.addr());
    for (i, r) in [&b, &c, &a, &b].iter().enumerate() {
        let (status, reply) = legacy(
            r.addr(),
            &sid,
            10 + i as u64,
            "tools/call",
            json!({"name": "test_simple_text"}),
        );
        assert_eq!(status, 200, "{reply}");
        assert!(reply["result"]["content"][0]["text"].is_string(), "{reply}");
    }

    // State set on one replica is seen on the others: a subscription made on B, refused
    // nowhere, and the log level set on C (both are in the shared record).
    let (status, reply) = legacy(
        b.addr(),
        &sid,
        20,
        "resources/subscribe",
        json!({"uri": "test://static-text"}),
    );
    assert_eq!(status, 200, "{reply}");
    assert!(reply["result"].is_object(), "{reply}");
    let (status, reply) = legacy(
        c.addr(),
        &sid,
        21,
        "logging/setLevel",
        json!({"level": "error"}),
    );
    assert_eq!(status, 200, "{reply}");
    let key = format!("duomcp:session:{{{sid}}}");
    let record = redis.command(&["HGET", &key, "r"]).unwrap();
    let record: Value = serde_json::from_str(&record).unwrap();
    assert_eq!(record["protocol_version"], "2025-11-25");
    assert_eq!(record["client_info"]["version"], "1");
    assert_eq!(record["log_level"], "error");
    assert_eq!(record["subscriptions"], json!(["test://static-text"]));
    // The session's idle expiry is in Redis (30 min by default).
    let ttl: i64 = redis.command(&["PTTL", &key]).unwrap().parse().unwrap();
    assert!(ttl > 29 * 60 * 1000, "{ttl}");

    // A 2025-11-25 request costs one Redis round trip on a replica holding the session. (B's
    // copy is behind C's setLevel: its next request refreshes it, in the same round trip,
    // reading the record too.)
    let (status, _) = legacy(b.addr(), &sid, 29, "ping", json!({}));
    assert_eq!(status, 200);
    let before = calls(&redis);
    for i in 0..10 {
        let (status, _) = legacy(
            b.addr(),
            &sid,
            30 + i,
            "tools/call",
            json!({"name": "test_simple_text"}),
        );
        assert_eq!(status, 200);
    }
    let after = calls(&redis);
    assert_eq!(
        script_calls(&after) - script_calls(&before),
        10,
        "{before:?} {after:?}"
    );
    // commandstats also counts the commands a script runs inside Redis: the one script per
    // request is PEXPIRE (the idle expiry) and HGET (the record's version), nothing else.
    let grew: BTreeMap<&str, u64> = after
        .iter()
        .map(|(k, v)| (k.as_str(), v - before.get(k).copied().unwrap_or(0)))
        .filter(|(_, d)| *d > 0)
        .collect();
    assert_eq!(
        grew,
        BTreeMap::from([("evalsha", 10), ("hget", 10), ("pexpire", 10)]),
        "{before:?} {after:?}"
    );

    // DELETE on C: 404 on A, B and C after.
    assert_eq!(delete(c.addr(), &sid), 204);
    for r in [&a, &b, &c] {
        let (status, _) = legacy(r.addr(), &sid, 99, "ping", json!({}));
        assert_eq!(status, 404);
    }
    assert_eq!(redis.command(&["EXISTS", &key]).unwrap(), "0");

    // An id nobody minted is unknown everywhere.
    let (status, _) = legacy(a.addr(), "not-a-session", 1, "ping", json!({}));
    assert_eq!(status, 404);
}

#[test]
fn redis_stopped_and_restarted_mid_run() {
    let mut redis = RedisServer::start().expect("redis-server (Debian package redis-server)");
    let state_keys = KeyFile::new("outage", &[[9u8; 32]]);
    let a = Replica::start(BIN, &redis.url(), &["--state-key-file", state_keys.arg()]).unwrap();
    let b = Replica::start(BIN, &redis.url(), &["--state-key-file", state_keys.arg()]).unwrap();
    let sid = initialize(a.addr());

    redis.stop();
    // Stateless 2026-07-28 requests keep working, on both replicas, across them too.
    let state = first_round(a.addr());
    assert!(greeted(&second_round(b.addr(), &state)));
    // A 2025-11-25 request gets 503 / -32603 naming the store, in bounded time.
    let started = std::time::Instant::now();
    let (status, reply) = legacy(
        b.addr(),
        &sid,
        5,
        "tools/call",
        json!({"name": "test_simple_text"}),
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(status, 503, "{reply}");
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("session store"),
        "{reply}"
    );
    let started = std::time::Instant::now();
    let body = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},
        "clientInfo":{"name":"replicas","version":"7"}}});
    let (status, _) = post(a.addr(), &[], &body);
    assert_eq!(status, 503);
    assert!(started.elapsed() < Duration::from_secs(5));

    // Back (empty: no persistence, so the old session is gone): replicas recover by
    // themselves, new sessions work across replicas again.
    redis.restart().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let sid = loop {
        let (status, _) = post(a.addr(), &[], &body);
        if status == 200 {
            break initialize(a.addr());
        }
        assert!(std::time::Instant::now() < deadline, "no recovery");
        std::thread::sleep(Duration::from_millis(200));
    };
    let (status, reply) = legacy(
        b.addr(),
        &sid,
        6,
        "tools/call",
        json!({"name": "test_simple_text"}),
    );
    assert_eq!(status, 200, "{reply}");
}

/// `(id, data)` of every SSE event with data in `body`.
fn sse_events(body: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut id = String::new();
    for line in body.lines() {
        let line = line.trim_end_matches('\r');
        if let Some(v) = line.strip_prefix("id: ") {
            id = v.to_owned();
        } else if let Some(d) = line.strip_prefix("data: ") {
            if !d.trim().is_empty() {
                out.push((id.clone(), d.to_owned()));
            }
        }
    }
    out
}

#[test]
fn a_stream_written_on_a_resumes_on_b_with_every_event_once() {
    let redis = RedisServer::start().expect("redis-server (Debian package redis-server)");
    let a = Replica::start(BIN, &redis.url(), &[]).unwrap();
    let b = Replica::start(BIN, &redis.url(), &[]).unwrap();
    let sid = initialize(a.addr());
    let (status, body) = post(
        a.addr(),
        &legacy_headers(&sid),
        &json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{
            "name":"test_tool_with_progress","_meta":{"progressToken":"p"}}}),
    );
    assert_eq!(status, 200, "{body}");
    let on_a = sse_events(&body);
    assert_eq!(
        on_a.len(),
        4,
        "three progress notifications and the result: {body}"
    );

    // The client lost the connection after the first event: it resumes on B.
    let req = format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\nLast-Event-ID: {}\r\n\
         Connection: close\r\n\r\n",
        on_a[0].0
    );
    let mut tcp = TcpStream::connect(b.addr()).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    tcp.write_all(req.as_bytes()).unwrap();
    let mut buf = Vec::new();
    tcp.read_to_end(&mut buf).unwrap();
    let text = String::from_utf8_lossy(&buf);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let on_b = sse_events(text.split_once("\r\n\r\n").unwrap().1);
    // Event ids compared one by one: nothing lost, nothing twice.
    assert_eq!(on_b, on_a[1..].to_vec());
}
