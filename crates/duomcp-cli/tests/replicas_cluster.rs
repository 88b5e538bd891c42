//! `duomcp serve --http --redis redis+cluster://…` replicas on a real Redis Cluster (three
//! masters with one replica each, started by `duomcp_testkit::cluster::RedisCluster`; Debian
//! packages `redis-server`, `redis-tools`), and HAProxy round robin in front of them: the
//! cross-replica cases of `replicas.rs` and `replicas_bus.rs` that touch each store and the
//! bus, on the cluster. A missing binary fails the test; nothing skips.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp_testkit::cluster::{Balancer, RedisCluster, Replica};
use duomcp_testkit::raw_http::{
    exchange_blocking, last_message, legacy_session, post_request_with,
};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");
const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

/// The cluster and `n` replicas on it, their buses subscribed (the sharded `duomcp:bus`).
fn fleet(n: usize) -> (RedisCluster, Vec<Replica>) {
    let cluster =
        RedisCluster::start().expect("a Redis Cluster (Debian packages redis-server, redis-tools)");
    let url = cluster.url();
    let replicas = (0..n)
        .map(|_| Replica::start(BIN, &url, &[]).unwrap())
        .collect();
    cluster.wait_shard_subscribers("duomcp:bus", n).unwrap();
    (cluster, replicas)
}

fn post(addr: SocketAddr, headers: &[(&str, &str)], body: &Value) -> (u16, String) {
    let req = post_request_with(addr, headers, &body.to_string());
    let text = exchange_blocking(addr, &req, Duration::from_secs(30));
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, body.to_owned())
}

fn session_headers(sid: &str) -> [(&str, &str); 2] {
    [("Mcp-Session-Id", sid), ("MCP-Protocol-Version", LEGACY)]
}

/// A 2025-11-25 request in session `sid` on `addr`: status and the JSON-RPC message.
fn legacy(addr: SocketAddr, sid: &str, id: u64, method: &str, params: Value) -> (u16, Value) {
    let (status, body) = post(
        addr,
        &session_headers(sid),
        &json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}),
    );
    let json = last_message(&body);
    (status, serde_json::from_str(&json).unwrap_or(Value::Null))
}

fn delete(addr: SocketAddr, sid: &str) -> u16 {
    let req = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nMcp-Session-Id: {sid}\r\n\
         MCP-Protocol-Version: {LEGACY}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
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

/// A 2026-07-28 `tools/call` of the elicitation fixture (`state`: the retry with an answer).
fn modern_elicitation(addr: SocketAddr, state: Option<&str>) -> Value {
    let mut params = json!({
        "name": "test_input_required_result_elicitation",
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} },
            "io.modelcontextprotocol/clientInfo": { "name": "replicas-cluster", "version": "1" }
        }
    });
    if let Some(state) = state {
        params["requestState"] = json!(state);
        params["inputResponses"] = json!({
            "user_name": {"action": "accept", "content": {"name": "Ada"}}
        });
    }
    let (status, body) = post(
        addr,
        &[
            ("MCP-Protocol-Version", MODERN),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "test_input_required_result_elicitation"),
        ],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}),
    );
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
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
fn a_session_minted_on_a_serves_everywhere_on_a_cluster_and_delete_on_c_ends_it() {
    let (cluster, rs) = fleet(3);
    let (a, b, c) = (&rs[0], &rs[1], &rs[2]);
    let sid = legacy_session(a.addr(), json!({"elicitation": {}}), "replicas-cluster");
    for (i, r) in [&b, &c, &a].iter().enumerate() {
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
    // State set on B and C is in the one shared record, on its slot's master.
    let (status, _) = legacy(
        b.addr(),
        &sid,
        20,
        "resources/subscribe",
        json!({"uri": "test://static-text"}),
    );
    assert_eq!(status, 200);
    let (status, _) = legacy(
        c.addr(),
        &sid,
        21,
        "logging/setLevel",
        json!({"level": "error"}),
    );
    assert_eq!(status, 200);
    let key = format!("duomcp:session:{{{sid}}}");
    let record: Value =
        serde_json::from_str(&cluster.command_for(&key, &["HGET", &key, "r"]).unwrap()).unwrap();
    assert_eq!(record["log_level"], "error");
    assert_eq!(record["subscriptions"], json!(["test://static-text"]));
    let all = "duomcp:{sessions}:all";
    assert_eq!(cluster.command_for(all, &["ZCARD", all]).unwrap(), "1");

    // DELETE on C: 404 on A, B and C after; the record and the fleet's member are gone.
    assert_eq!(delete(c.addr(), &sid), 204);
    for r in [&a, &b, &c] {
        let (status, _) = legacy(r.addr(), &sid, 99, "ping", json!({}));
        assert_eq!(status, 404);
    }
    assert_eq!(cluster.command_for(&key, &["EXISTS", &key]).unwrap(), "0");
    assert_eq!(cluster.command_for(all, &["ZCARD", all]).unwrap(), "0");
}

#[test]
fn request_state_and_streams_cross_replicas_on_a_cluster() {
    let (_cluster, rs) = fleet(2);
    let (a, b) = (&rs[0], &rs[1]);

    // The replicas share the requestState key kept in the cluster: sealed on A, opened on B.
    let first = modern_elicitation(a.addr(), None);
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap();
    let done = modern_elicitation(b.addr(), Some(state));
    assert_eq!(
        done["result"]["content"][0]["text"], "Hello, Ada!",
        "{done}"
    );

    // A 2025-11-25 stream written on A resumes on B with every event once.
    let sid = legacy_session(a.addr(), json!({}), "replicas-cluster");
    let (status, body) = post(
        a.addr(),
        &session_headers(&sid),
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
    let req = format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: {LEGACY}\r\nLast-Event-ID: {}\r\n\
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
    assert_eq!(on_b, on_a[1..].to_vec());
}

#[test]
fn an_elicitation_asked_on_a_is_answered_through_the_balancer_on_a_cluster() {
    let (_cluster, rs) = fleet(3);
    let lb = Balancer::start(&rs.iter().map(Replica::addr).collect::<Vec<_>>()).unwrap();
    let sid = legacy_session(lb.addr(), json!({"elicitation": {}}), "replicas-cluster");
    // The call runs on A; its answer goes through the balancer, round robin: three answers
    // to three questions land on A, B and C in some order, two of them through the bus.
    let a = rs[0].addr();
    for round in 0..3u64 {
        let call = Stream::open(
            a,
            post_request_with(
                a,
                &session_headers(&sid),
                &json!({"jsonrpc":"2.0","id":10 + round,"method":"tools/call",
                        "params":{"name":"test_elicitation","arguments":{"message":"q"}}})
                .to_string(),
            ),
        );
        let ask = call
            .next(Duration::from_secs(10))
            .expect("elicitation/create");
        assert_eq!(ask["method"], "elicitation/create", "{ask}");
        let name = format!("n{round}");
        let (status, _) = post(
            lb.addr(),
            &session_headers(&sid),
            &json!({"jsonrpc":"2.0","id":ask["id"],"result":{"action":"accept",
                    "content":{"username": name, "email": "x@example.com"}}}),
        );
        assert_eq!(status, 202);
        let done = call.next(Duration::from_secs(10)).expect("the result");
        assert_eq!(done["id"], 10 + round, "{done}");
        let text = done["result"]["content"][0]["text"].as_str().unwrap_or("");
        assert!(text.contains(&format!(r#""username":"{name}""#)), "{done}");
    }
}
