//! Several `duomcp serve --http` replicas sharing state (issue 17), with real parts:
//! `redis-server` and HAProxy from Debian's packages (`.ci/run` installs them), started by the
//! test through `duomcp_testkit::cluster`. A missing binary fails the test; nothing skips.
//! Every step is sent to a chosen replica on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use base64::Engine as _;
use duomcp_testkit::cluster::{replicas, replicas_with, Balancer, RedisServer, Replica};
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
/// A session copy found alive and current is trusted for 30 s without asking Redis (1 s by
/// default): long enough that only an invalidation through the bus can make a replica ask
/// again within a test.
const TRUST_30S: &[&str] = &["--limit", "session-touch-interval=30s"];

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

/// The commands called between two [`calls`] snapshots, with their counts.
fn grown<'a>(
    before: &BTreeMap<String, u64>,
    after: &'a BTreeMap<String, u64>,
) -> BTreeMap<&'a str, u64> {
    after
        .iter()
        .map(|(k, v)| (k.as_str(), v - before.get(k).copied().unwrap_or(0)))
        .filter(|(_, d)| *d > 0)
        .collect()
}

/// A `tools/call` of `test_simple_text` in session `sid` on `addr`: its status.
fn simple(addr: SocketAddr, sid: &str, id: u64) -> u16 {
    legacy(
        addr,
        sid,
        id,
        "tools/call",
        json!({"name": "test_simple_text"}),
    )
    .0
}

#[test]
fn a_copy_found_alive_within_the_interval_costs_redis_nothing_and_the_idle_expiry_still_holds() {
    let redis = RedisServer::start().expect("redis-server (Debian package redis-server)");
    // Idle timeout 2 s, touch interval 300 ms.
    let extra = [
        "--limit",
        "session-idle-timeout=2s",
        "--limit",
        "session-touch-interval=300ms",
    ];
    let rs = replicas_with(BIN, &redis, 2, &extra).unwrap();
    let (a, b) = (&rs[0], &rs[1]);
    let sid = initialize(b.addr());
    let key = format!("duomcp:session:{{{sid}}}");

    // Requests on A for 3 s, longer than the idle timeout: A asks Redis about once per
    // interval (each time extending the idle expiry), and not for the requests in between.
    let before = calls(&redis);
    let started = std::time::Instant::now();
    let mut requests = 0;
    while started.elapsed() < Duration::from_secs(3) {
        requests += 1;
        assert_eq!(simple(a.addr(), &sid, requests), 200);
        // The expiry was extended at most one interval ago (slack: the time since).
        let ttl: i64 = redis.command(&["PTTL", &key]).unwrap().parse().unwrap();
        assert!(
            ttl > 2000 - 300 - 250,
            "PTTL {ttl} ms after {requests} requests"
        );
        std::thread::sleep(Duration::from_millis(30));
    }
    let after = calls(&redis);
    let asked = script_calls(&after) - script_calls(&before);
    assert!(
        (5..=16).contains(&asked),
        "{asked} lookups in Redis for {requests} requests over 3 s with a 300 ms interval"
    );
    assert!(
        requests >= 3 * asked,
        "{requests} requests, {asked} lookups"
    );
    // B served nothing meanwhile: the session lived on A's touches alone, past its idle time.
    assert_eq!(simple(b.addr(), &sid, 1000), 200);
}

#[test]
fn delete_on_c_is_404_on_the_very_next_request_on_a_whose_copy_was_fresh() {
    let redis = RedisServer::start().expect("redis-server (Debian package redis-server)");
    let rs = replicas_with(BIN, &redis, 3, TRUST_30S).unwrap();
    let (a, b, c) = (&rs[0], &rs[1], &rs[2]);
    // Many times over: the invalidation must win the race with the client every time.
    for round in 0..20 {
        let sid = initialize(b.addr());
        // A adopts the session (asking Redis), asks once more as its copy is new, then trusts
        // it: the third request costs Redis nothing.
        assert_eq!(simple(a.addr(), &sid, 1), 200);
        assert_eq!(simple(a.addr(), &sid, 2), 200);
        let before = calls(&redis);
        assert_eq!(simple(a.addr(), &sid, 3), 200);
        assert_eq!(
            calls(&redis),
            before,
            "round {round}: A's copy was not fresh"
        );

        // Confirmed by A and B, not the 30 s interval waited out.
        let deleting = std::time::Instant::now();
        assert_eq!(delete(c.addr(), &sid), 204, "round {round}");
        assert!(
            deleting.elapsed() < Duration::from_secs(10),
            "round {round}: DELETE took {:?}",
            deleting.elapsed()
        );
        let (status, reply) = legacy(a.addr(), &sid, 4, "ping", json!({}));
        assert_eq!(status, 404, "round {round}: {reply}");
        assert_eq!(simple(b.addr(), &sid, 5), 404, "round {round}");
    }
}

/// Log notifications in the answer of `test_tool_with_logging` (three `info` messages) in
/// session `sid` on `addr`.
fn logs(addr: SocketAddr, sid: &str, id: u64) -> usize {
    let (status, body) = post(
        addr,
        &legacy_headers(sid),
        &json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
                "params":{"name":"test_tool_with_logging"}}),
    );
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("Tool with logging executed successfully"),
        "{body}"
    );
    body.matches("notifications/message").count()
}

#[test]
fn set_level_through_b_is_seen_by_a_on_its_next_request_though_its_copy_was_fresh() {
    let redis = RedisServer::start().expect("redis-server (Debian package redis-server)");
    let rs = replicas_with(BIN, &redis, 2, TRUST_30S).unwrap();
    let (a, b) = (&rs[0], &rs[1]);
    let sid = initialize(a.addr());
    // A session lookup is the touch script, the only user of HMGET and HGET here (a streamed
    // answer's events go to the shared event log: other commands; no session is released):
    // one HMGET, and one HGET when it reads the record.
    let lookups = || {
        let c = calls(&redis);
        c.get("hmget").copied().unwrap_or(0) + c.get("hget").copied().unwrap_or(0)
    };
    // No level set: no log messages. A's copy is current (it wrote the record): no lookup.
    let before = lookups();
    assert_eq!(logs(a.addr(), &sid, 1), 0);
    assert_eq!(lookups(), before, "A's copy was not fresh");

    for (id, level, expected) in [(10, "debug", 3), (20, "error", 0), (30, "info", 3)] {
        let (status, reply) = legacy(
            b.addr(),
            &sid,
            id,
            "logging/setLevel",
            json!({"level": level}),
        );
        assert_eq!(status, 200, "{reply}");
        // A's next request sees the new level (it asks Redis, told by B's invalidation, and
        // reads the record: HMGET and HGET)...
        let before = lookups();
        assert_eq!(logs(a.addr(), &sid, id + 1), expected, "level {level}");
        assert_eq!(lookups() - before, 2, "level {level}");
        // ...and the one after trusts its copy again.
        let before = lookups();
        assert_eq!(logs(a.addr(), &sid, id + 2), expected, "level {level}");
        assert_eq!(lookups(), before, "level {level}: A asked Redis again");
    }
}

#[test]
fn with_the_bus_down_no_copy_is_trusted_and_once_it_is_back_delete_elsewhere_is_still_404() {
    let redis = RedisServer::start().expect("redis-server (Debian package redis-server)");
    // 4 s: long enough for the trusted steps below, short enough for the DELETE made while
    // the bus is down, which cannot be confirmed and waits the interval out.
    let rs = replicas_with(BIN, &redis, 3, &["--limit", "session-touch-interval=4s"]).unwrap();
    let (a, b, c) = (&rs[0], &rs[1], &rs[2]);
    let sid = initialize(b.addr());
    for id in 1..=3 {
        assert_eq!(simple(a.addr(), &sid, id), 200);
    }

    // The bus goes down, Redis staying up: the default user may no longer use any channel
    // (its subscriptions are closed, SUBSCRIBE and PUBLISH are refused).
    assert_eq!(
        redis
            .command(&["ACL", "SETUSER", "default", "resetchannels"])
            .unwrap(),
        "OK"
    );
    redis.wait_bus_subscribers(0).unwrap();
    // A notices (its subscription ended): from then on every request asks Redis.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let mut id = 10;
    loop {
        let before = calls(&redis);
        id += 1;
        assert_eq!(simple(a.addr(), &sid, id), 200);
        if script_calls(&calls(&redis)) > script_calls(&before) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "A trusted its copy with the bus down"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let before = calls(&redis);
    for i in 0..5 {
        assert_eq!(simple(a.addr(), &sid, 100 + i), 200);
    }
    assert_eq!(script_calls(&calls(&redis)) - script_calls(&before), 5);
    // DELETE on C: its invalidation cannot be published, so it waits out the interval (no
    // copy anywhere can still trust its freshness then); A asks Redis, so 404 all the same.
    let deleting = std::time::Instant::now();
    assert_eq!(delete(c.addr(), &sid), 204);
    assert!(deleting.elapsed() >= Duration::from_secs(4));
    assert_eq!(simple(a.addr(), &sid, 200), 404);

    // The bus comes back: every replica subscribes again by itself, and A's freshness from
    // before is void (a new subscription); copies are trusted again and invalidations reach
    // them: DELETE on C is 404 on A at once.
    assert_eq!(
        redis
            .command(&["ACL", "SETUSER", "default", "allchannels"])
            .unwrap(),
        "OK"
    );
    redis.wait_bus_subscribers(3).unwrap();
    let sid = initialize(b.addr());
    for id in 1..=2 {
        assert_eq!(simple(a.addr(), &sid, id), 200);
    }
    let before = calls(&redis);
    assert_eq!(simple(a.addr(), &sid, 3), 200);
    assert_eq!(
        calls(&redis),
        before,
        "A's copy was not trusted after the bus came back"
    );
    // Confirmed by A and B: no waiting out the interval.
    let deleting = std::time::Instant::now();
    assert_eq!(delete(c.addr(), &sid), 204);
    assert!(deleting.elapsed() < Duration::from_secs(4));
    assert_eq!(simple(a.addr(), &sid, 4), 404);
}

#[test]
fn a_session_minted_on_a_serves_on_b_and_c_and_delete_on_c_ends_it_everywhere() {
    let redis = RedisServer::start().expect("redis-server (Debian package redis-server)");
    let rs = replicas_with(BIN, &redis, 3, TRUST_30S).unwrap();
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

    // A 2025-11-25 request costs at most one Redis round trip, and none on a replica whose
    // copy Redis found alive and current within the touch interval. B's copy is behind C's
    // setLevel (C's invalidation, through the bus, made B forget its copy was current): its
    // next request asks, in one round trip, reading the record too.
    let before = calls(&redis);
    let (status, _) = legacy(b.addr(), &sid, 29, "ping", json!({}));
    assert_eq!(status, 200);
    let asked = calls(&redis);
    // commandstats also counts the commands a script runs inside Redis: the one script is
    // PEXPIRE (the idle expiry), TIME, HMGET (last touch, by whom, the version), HSET (this
    // touch), HSET + PEXPIRE (B among the session's holders, to whom alone messages about
    // the session go), ZADD + PTTL + PEXPIRE (the fleet's set of sessions,
    // `max-fleet-sessions`) and HGET (the record, which changed).
    assert_eq!(
        grown(&before, &asked),
        BTreeMap::from([
            ("evalsha", 1),
            ("hget", 1),
            ("hmget", 1),
            ("hset", 2),
            ("pexpire", 3),
            ("pttl", 1),
            ("time", 1),
            ("zadd", 1),
        ]),
        "{before:?} {asked:?}"
    );
    // Then B's copy is current: the next requests cost Redis nothing.
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
        grown(&asked, &after),
        BTreeMap::new(),
        "{asked:?} {after:?}"
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
    // B may trust its copy now (once its bus is subscribed again, or it asks Redis each
    // time): either way a DELETE on A is 404 on B right after.
    assert_eq!(simple(b.addr(), &sid, 7), 200);
    redis.wait_bus_subscribers(2).unwrap();
    assert_eq!(simple(b.addr(), &sid, 8), 200);
    assert_eq!(delete(a.addr(), &sid), 204);
    assert_eq!(simple(b.addr(), &sid, 9), 404);
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
