//! The events extension (experimental, feature `events`): `events/list`, `events/poll` and
//! `events/stream` in both revisions, over Streamable HTTP (a raw HTTP/1.1 client on a real
//! socket) and over stdio (the connection loop on a byte pipe). Cursors, `maxEvents`, stale and
//! forged cursors, the error codes, heartbeats, cancellation, two tenants with different
//! arguments at once, and the stream caps.

#![cfg(all(feature = "events", feature = "http-server"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::Bytes;
use duomcp::jsonrpc::ErrorObject;
use duomcp::server::events::{Delivery, EventType, EventsConfig};
use duomcp::server::Server;
use duomcp::transport::http::StreamableHttp;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";
const SUB: &str = "io.modelcontextprotocol/subscriptionId";

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("timed out")
}

fn config() -> EventsConfig {
    let mut c = EventsConfig::default();
    c.ring = 8;
    c.heartbeat = Duration::from_millis(300);
    c.max_streams_per_caller = 2;
    c.max_streams = 5;
    c
}

/// Two event types: orders (filtered by shop, poll and push) and a poll-only audit log.
// ANCHOR: declare
fn server() -> Server {
    Server::builder()
        .name("events-test")
        .event(
            EventType::new("order.created")
                .description("An order")
                .input_schema(json!({
                    "type": "object",
                    "properties": { "shop": { "type": "string" } },
                    "additionalProperties": false
                }))
                .payload_schema(json!({ "type": "object" }))
                .filter(|args, data| match args.get("shop") {
                    Some(shop) => data.get("shop") == Some(shop),
                    None => true,
                }),
        )
        .event(EventType::new("audit.entry").delivery([Delivery::Poll]))
        .events_config(config())
        .build()
}
// ANCHOR_END: declare

// ---------------------------------------------------------------------------------------------
// A raw HTTP/1.1 client.

struct Running {
    addr: SocketAddr,
    server: Server,
    _task: JoinHandle<std::io::Result<()>>,
}

async fn start() -> Running {
    let server = server();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let http = StreamableHttp::new(server.clone());
    let task = tokio::spawn(http.serve(listener));
    Running {
        addr,
        server,
        _task: task,
    }
}

struct Resp {
    status: StatusCode,
    content_type: String,
    session: Option<String>,
    body: Incoming,
    conn: JoinHandle<()>,
}

impl Resp {
    async fn json(self) -> Value {
        let bytes = within(self.body.collect()).await.unwrap().to_bytes();
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        // A JSON body, or the last message of an SSE body.
        let msg = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .rfind(|d| !d.trim().is_empty())
            .map_or(text.as_str(), str::trim)
            .to_owned();
        serde_json::from_str(&msg).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    fn sse(self) -> Sse {
        assert_eq!(self.status, StatusCode::OK);
        assert_eq!(self.content_type, "text/event-stream");
        Sse {
            body: Some(self.body),
            buf: Vec::new(),
            conn: self.conn,
        }
    }
}

struct Sse {
    body: Option<Incoming>,
    buf: Vec<u8>,
    conn: JoinHandle<()>,
}

impl Sse {
    /// The next JSON-RPC message, or `None` at the end of the stream.
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let raw: Vec<u8> = self.buf.drain(..end + 2).collect();
                let text = String::from_utf8(raw).unwrap();
                let data: String = text
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(|d| d.strip_prefix(' ').unwrap_or(d))
                    .collect();
                if data.trim().is_empty() {
                    continue;
                }
                return Some(serde_json::from_str(&data).unwrap());
            }
            let body = self.body.as_mut()?;
            match within(body.frame()).await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
                Some(Err(e)) => panic!("stream error: {e}"),
                None => {
                    self.body = None;
                    return None;
                }
            }
        }
    }

    async fn message(&mut self) -> Value {
        self.next().await.expect("the stream ended")
    }

    fn disconnect(mut self) {
        self.body = None;
        self.conn.abort();
    }
}

async fn post(addr: SocketAddr, headers: &[(&str, &str)], body: &Value) -> Resp {
    post_from(None, addr, headers, body).await
}

/// As [`post`], from the source address `from` (another loopback address: another peer).
async fn post_from(
    from: Option<std::net::IpAddr>,
    addr: SocketAddr,
    headers: &[(&str, &str)],
    body: &Value,
) -> Resp {
    let tcp = match from {
        None => TcpStream::connect(addr).await.unwrap(),
        Some(ip) => {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind(SocketAddr::new(ip, 0)).unwrap();
            socket.connect(addr).await.unwrap()
        }
    };
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    let conn = tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut req = Request::builder()
        .method(Method::POST)
        .uri("/mcp")
        .header("host", format!("127.0.0.1:{}", addr.port()))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req
        .body(Full::new(Bytes::from(serde_json::to_vec(body).unwrap())))
        .unwrap();
    let res = within(sender.send_request(req)).await.unwrap();
    let (parts, body) = res.into_parts();
    let header = |n: &str| {
        parts
            .headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    Resp {
        status: parts.status,
        content_type: header("content-type").unwrap_or_default(),
        session: header("mcp-session-id"),
        body,
        conn,
    }
}

fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// A client of one revision over HTTP: a 2025-11-25 session, or 2026-07-28 requests with
/// `_meta`.
struct Http {
    addr: SocketAddr,
    session: Option<String>,
    /// The source address (`None`: the system's choice, 127.0.0.1).
    from: Option<std::net::IpAddr>,
}

impl Http {
    async fn legacy(addr: SocketAddr) -> (Http, Value) {
        let init = rpc(
            0,
            "initialize",
            json!({ "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }),
        );
        let res = post(addr, &[], &init).await;
        let sid = res.session.clone().expect("a session");
        let result = res.json().await["result"].clone();
        let done = post(
            addr,
            &[("mcp-session-id", &sid), ("mcp-protocol-version", LEGACY)],
            &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        )
        .await;
        assert_eq!(done.status, StatusCode::ACCEPTED);
        (
            Http {
                addr,
                session: Some(sid),
                from: None,
            },
            result,
        )
    }

    fn modern(addr: SocketAddr) -> Http {
        Http {
            addr,
            session: None,
            from: None,
        }
    }

    async fn send(&self, id: i64, method: &str, mut params: Value) -> Resp {
        match &self.session {
            Some(sid) => {
                let headers = [
                    ("mcp-session-id", sid.as_str()),
                    ("mcp-protocol-version", LEGACY),
                ];
                post(self.addr, &headers, &rpc(id, method, params)).await
            }
            None => {
                params["_meta"] = json!({
                    "io.modelcontextprotocol/protocolVersion": MODERN,
                    "io.modelcontextprotocol/clientCapabilities": {}
                });
                let headers = [("mcp-protocol-version", MODERN), ("mcp-method", method)];
                post_from(self.from, self.addr, &headers, &rpc(id, method, params)).await
            }
        }
    }

    /// The whole answer to a request.
    async fn call(&self, id: i64, method: &str, params: Value) -> Value {
        let v = self.send(id, method, params).await.json().await;
        assert_eq!(v["id"], id, "{v}");
        v
    }

    async fn result(&self, id: i64, method: &str, params: Value) -> Value {
        let v = self.call(id, method, params).await;
        assert!(v.get("error").is_none(), "{v}");
        v["result"].clone()
    }

    async fn cancel(&self, id: i64) {
        let sid = self.session.as_deref().expect("a session");
        let note = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": id } });
        let headers = [("mcp-session-id", sid), ("mcp-protocol-version", LEGACY)];
        let res = post(self.addr, &headers, &note).await;
        assert_eq!(res.status, StatusCode::ACCEPTED);
    }
}

async fn both(addr: SocketAddr) -> Vec<(&'static str, Http)> {
    vec![
        ("2025-11-25", Http::legacy(addr).await.0),
        ("2026-07-28", Http::modern(addr)),
    ]
}

/// The position a cursor names (a test may look inside; clients may not).
fn pos(cursor: &Value) -> u64 {
    cursor
        .as_str()
        .and_then(|c| c.rsplit('.').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a cursor: {cursor}"))
}

// ---------------------------------------------------------------------------------------------
// Poll, list and capabilities over HTTP.

#[tokio::test]
async fn capability_and_list_in_both_revisions() {
    let s = start().await;
    let (_, init) = Http::legacy(s.addr).await;
    assert_eq!(
        init["capabilities"]["events"],
        json!({ "listChanged": false })
    );
    let discover = Http::modern(s.addr)
        .result(1, "server/discover", json!({}))
        .await;
    assert_eq!(
        discover["capabilities"]["events"],
        json!({ "listChanged": false })
    );

    for (era, c) in both(s.addr).await {
        let list = c.result(2, "events/list", json!({})).await;
        let events = list["events"].as_array().unwrap();
        assert_eq!(events.len(), 2, "{era}: {list}");
        assert_eq!(events[0]["name"], "audit.entry");
        assert_eq!(events[0]["delivery"], json!(["poll"]));
        assert_eq!(events[1]["name"], "order.created");
        assert_eq!(events[1]["delivery"], json!(["poll", "push"]));
        assert_eq!(events[1]["description"], "An order");
        assert_eq!(
            events[1]["inputSchema"]["properties"]["shop"]["type"],
            "string"
        );
        assert!(events[1]["payloadSchema"].is_object());
        assert!(list.get("nextCursor").is_none());
        let bad = c
            .call(3, "events/list", json!({ "cursor": "not a cursor" }))
            .await;
        assert_eq!(bad["error"]["code"], -32602, "{era}: {bad}");
    }
}

#[tokio::test]
async fn a_server_without_event_types_has_neither_capability_nor_methods() {
    let server = Server::builder().tool("t", || async { "t" }).build();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(StreamableHttp::new(server).serve(listener));
    let (c, init) = Http::legacy(addr).await;
    assert!(init["capabilities"].get("events").is_none(), "{init}");
    let v = c.call(1, "events/list", json!({})).await;
    assert_eq!(v["error"]["code"], -32601, "{v}");
}

#[tokio::test]
async fn poll_from_now_then_exactly_the_new_matching_events_with_growing_cursors() {
    let s = start().await;
    for (era, c) in both(s.addr).await {
        let shop_a = json!({ "shop": "a" });
        let first = c
            .result(
                1,
                "events/poll",
                json!({ "name": "order.created", "arguments": shop_a, "cursor": null }),
            )
            .await;
        assert_eq!(first["events"], json!([]), "{era}");
        assert_eq!(first["truncated"], false);
        assert_eq!(first["hasMore"], false);
        assert!(first["nextPollMs"].as_u64().unwrap() > 0);
        let c0 = first["cursor"].clone();

        // ANCHOR: emit
        let events = s.server.events();
        events
            .emit("order.created", json!({ "shop": "a", "n": 1 }))
            .unwrap();
        events
            .emit("order.created", json!({ "shop": "b", "n": 2 }))
            .unwrap();
        let id3 = events
            .emit_with_id(
                "order.created",
                format!("upstream-{era}"),
                json!({ "shop": "a", "n": 3 }),
            )
            .unwrap();
        // ANCHOR_END: emit
        assert_eq!(id3, format!("upstream-{era}"));

        let p = json!({ "name": "order.created", "arguments": shop_a, "cursor": c0 });
        let second = c.result(2, "events/poll", p).await;
        let got = second["events"].as_array().unwrap();
        assert_eq!(got.len(), 2, "{era}: {second}");
        assert_eq!(got[0]["data"], json!({ "shop": "a", "n": 1 }));
        assert_eq!(got[0]["name"], "order.created");
        assert!(got[0]["timestamp"].as_str().unwrap().ends_with('Z'));
        assert!(got[0]["eventId"].is_string());
        assert_eq!(got[1]["data"]["n"], 3);
        assert_eq!(got[1]["eventId"], format!("upstream-{era}"));
        assert_eq!(second["truncated"], false);
        assert_eq!(second["hasMore"], false);
        let c1 = second["cursor"].clone();
        assert!(pos(&c1) > pos(&c0), "{c0} {c1}");

        // Nothing new: nothing, the same position.
        let p = json!({ "name": "order.created", "arguments": shop_a, "cursor": c1 });
        let third = c.result(3, "events/poll", p).await;
        assert_eq!(third["events"], json!([]));
        assert_eq!(pos(&third["cursor"]), pos(&c1));

        // maxEvents: one at a time, hasMore until drained, cursors growing.
        let p =
            json!({ "name": "order.created", "arguments": shop_a, "cursor": c0, "maxEvents": 1 });
        let one = c.result(4, "events/poll", p).await;
        assert_eq!(one["events"].as_array().unwrap().len(), 1, "{one}");
        assert_eq!(one["events"][0]["data"]["n"], 1);
        assert_eq!(one["hasMore"], true);
        let p = json!({ "name": "order.created", "arguments": shop_a, "cursor": one["cursor"], "maxEvents": 1 });
        let two = c.result(5, "events/poll", p).await;
        assert_eq!(two["events"][0]["data"]["n"], 3, "{two}");
        assert_eq!(two["hasMore"], false);
        assert!(pos(&two["cursor"]) > pos(&one["cursor"]));

        // Without arguments every shop matches.
        let p = json!({ "name": "order.created", "cursor": c0 });
        let all = c.result(6, "events/poll", p).await;
        assert_eq!(all["events"].as_array().unwrap().len(), 3, "{all}");
    }
}

#[tokio::test]
async fn errors_and_hostile_cursors() {
    let s = start().await;
    for (era, c) in both(s.addr).await {
        let code = |v: &Value| v["error"]["code"].as_i64().unwrap_or(0);
        let v = c
            .call(
                1,
                "events/poll",
                json!({ "name": "no.such", "cursor": null }),
            )
            .await;
        assert_eq!(code(&v), -32011, "{era}: {v}");
        let v = c
            .call(
                2,
                "events/poll",
                json!({ "name": "order.created", "arguments": { "shop": 5 }, "cursor": null }),
            )
            .await;
        assert_eq!(code(&v), -32602, "{era}: {v}");
        let v = c
            .call(
                3,
                "events/poll",
                json!({ "name": "order.created", "arguments": { "other": 1 }, "cursor": null }),
            )
            .await;
        assert_eq!(code(&v), -32602, "{era}: {v}");
        let v = c.call(4, "events/poll", json!({ "cursor": null })).await;
        assert_eq!(code(&v), -32602, "{era}: {v}");
        let v = c
            .call(
                5,
                "events/stream",
                json!({ "name": "audit.entry", "cursor": null }),
            )
            .await;
        assert_eq!(code(&v), -32014, "{era}: {v}");
        assert_eq!(v["error"]["data"]["value"], "push");

        // Forged cursors: never read, -32602.
        for forged in [
            "",
            "garbage",
            "E.0.1",
            "Ezzzzzzzz.1.1",
            "E00000000.1.99999999999999999999",
        ] {
            let v = c
                .call(
                    6,
                    "events/poll",
                    json!({ "name": "order.created", "cursor": forged }),
                )
                .await;
            assert_eq!(code(&v), -32602, "{era}: {forged}: {v}");
        }
        // Another type's cursor is not a cursor of this one.
        let audit = c
            .result(
                7,
                "events/poll",
                json!({ "name": "audit.entry", "cursor": null }),
            )
            .await;
        let v = c
            .call(
                8,
                "events/poll",
                json!({ "name": "order.created", "cursor": audit["cursor"] }),
            )
            .await;
        assert_eq!(code(&v), -32602, "{era}: {v}");
        // A position ahead of the ring is forged too.
        let now = c
            .result(
                9,
                "events/poll",
                json!({ "name": "order.created", "cursor": null }),
            )
            .await;
        let cursor = now["cursor"].as_str().unwrap();
        let (head, n) = cursor.rsplit_once('.').unwrap();
        let ahead = format!("{head}.{}", n.parse::<u64>().unwrap() + 5);
        let v = c
            .call(
                10,
                "events/poll",
                json!({ "name": "order.created", "cursor": ahead }),
            )
            .await;
        assert_eq!(code(&v), -32602, "{era}: {v}");
        // A cursor of another server instance: a gap, this type's events only.
        s.server
            .events()
            .emit("audit.entry", json!({ "secret": era }))
            .unwrap();
        s.server
            .events()
            .emit("order.created", json!({ "shop": "z" }))
            .unwrap();
        let other = format!("E00000000.{}", cursor.split('.').nth(1).unwrap());
        let other = format!("{other}.0");
        let v = c
            .result(
                11,
                "events/poll",
                json!({ "name": "order.created", "cursor": other }),
            )
            .await;
        assert_eq!(v["truncated"], true, "{era}: {v}");
        for e in v["events"].as_array().unwrap() {
            assert_eq!(e["name"], "order.created", "{v}");
            assert!(e["data"].get("secret").is_none());
        }
    }
}

#[tokio::test]
async fn a_cursor_older_than_the_ring_is_truncated() {
    let s = start().await;
    for (era, c) in both(s.addr).await {
        let p = json!({ "name": "order.created", "cursor": null });
        let c0 = c.result(1, "events/poll", p).await["cursor"].clone();
        // The ring keeps 8.
        for n in 0..20 {
            s.server
                .events()
                .emit("order.created", json!({ "shop": "a", "n": n }))
                .unwrap();
        }
        let p = json!({ "name": "order.created", "cursor": c0 });
        let v = c.result(2, "events/poll", p).await;
        assert_eq!(v["truncated"], true, "{era}: {v}");
        let got = v["events"].as_array().unwrap();
        assert_eq!(got.len(), 8);
        assert_eq!(got[0]["data"]["n"], 12);
        assert_eq!(got[7]["data"]["n"], 19);
        // maxAgeMs: 0 leaves nothing to replay, and says so.
        let p = json!({ "name": "order.created", "cursor": c0, "maxAgeMs": 0 });
        tokio::time::sleep(Duration::from_millis(5)).await;
        let v = c.result(3, "events/poll", p).await;
        assert_eq!(v["events"], json!([]), "{era}: {v}");
        assert_eq!(v["truncated"], true);
    }
}

// ---------------------------------------------------------------------------------------------
// Push over HTTP.

#[tokio::test]
async fn push_over_http_2026_07_28_events_heartbeats_and_disconnect() {
    let s = start().await;
    let c = Http::modern(s.addr);
    let mut sse = c
        .send(
            41,
            "events/stream",
            json!({ "name": "order.created", "arguments": { "shop": "a" }, "cursor": null }),
        )
        .await
        .sse();
    let active = sse.message().await;
    assert_eq!(active["method"], "notifications/events/active", "{active}");
    assert_eq!(active["params"]["truncated"], false);
    assert_eq!(active["params"]["_meta"][SUB], 41);
    let start = active["params"]["cursor"].clone();

    s.server
        .events()
        .emit("order.created", json!({ "shop": "b" }))
        .unwrap();
    s.server
        .events()
        .emit("order.created", json!({ "shop": "a", "n": 1 }))
        .unwrap();
    let ev = sse.message().await;
    assert_eq!(ev["method"], "notifications/events/event", "{ev}");
    assert_eq!(ev["params"]["data"], json!({ "shop": "a", "n": 1 }));
    assert_eq!(ev["params"]["_meta"][SUB], 41);
    assert!(pos(&ev["params"]["cursor"]) > pos(&start));

    // Quiet: a heartbeat with the cursor.
    let hb = sse.message().await;
    assert_eq!(hb["method"], "notifications/events/heartbeat", "{hb}");
    assert_eq!(hb["params"]["cursor"], ev["params"]["cursor"]);
    assert_eq!(hb["params"]["_meta"][SUB], 41);

    // Disconnecting ends the stream and frees its slot: two more (the cap per caller) open.
    sse.disconnect();
    let mut open = Vec::new();
    for id in 0..2 {
        let p = json!({ "name": "order.created", "cursor": null });
        let mut again = None;
        // The server notices the disconnect within a moment.
        for _ in 0..50 {
            let res = c.send(50 + id, "events/stream", p.clone()).await;
            if res.content_type == "text/event-stream" {
                again = Some(res.sse());
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut again = again.expect("a stream after the disconnect");
        assert_eq!(
            again.message().await["method"],
            "notifications/events/active"
        );
        open.push(again);
    }
}

#[tokio::test]
async fn push_over_http_2025_11_25_replays_from_a_cursor_and_stops_on_cancel() {
    let s = start().await;
    let (c, _) = Http::legacy(s.addr).await;
    let p = json!({ "name": "order.created", "cursor": null });
    let c0 = c.result(1, "events/poll", p).await["cursor"].clone();
    s.server
        .events()
        .emit("order.created", json!({ "shop": "a", "n": 1 }))
        .unwrap();
    let mut sse = c
        .send(
            7,
            "events/stream",
            json!({ "name": "order.created", "cursor": c0 }),
        )
        .await
        .sse();
    let active = sse.message().await;
    assert_eq!(active["method"], "notifications/events/active");
    assert_eq!(active["params"]["_meta"][SUB], 7);
    // The replay from the cursor, then what comes.
    let ev = sse.message().await;
    assert_eq!(ev["params"]["data"]["n"], 1, "{ev}");
    s.server
        .events()
        .emit("order.created", json!({ "shop": "a", "n": 2 }))
        .unwrap();
    let ev = sse.message().await;
    assert_eq!(ev["params"]["data"]["n"], 2, "{ev}");
    let hb = sse.message().await;
    assert_eq!(hb["method"], "notifications/events/heartbeat", "{hb}");

    c.cancel(7).await;
    // The stream ends with no response (a cancelled request is not answered).
    while let Some(m) = sse.next().await {
        assert_ne!(m["method"], "notifications/events/event", "{m}");
        assert!(m.get("result").is_none(), "{m}");
    }
}

#[tokio::test]
async fn two_tenants_each_get_only_their_own_matches() {
    let s = start().await;
    let (legacy, _) = Http::legacy(s.addr).await;
    let modern = Http::modern(s.addr);
    let mut a = modern
        .send(
            1,
            "events/stream",
            json!({ "name": "order.created", "arguments": { "shop": "a" }, "cursor": null }),
        )
        .await
        .sse();
    let mut b = legacy
        .send(
            1,
            "events/stream",
            json!({ "name": "order.created", "arguments": { "shop": "b" }, "cursor": null }),
        )
        .await
        .sse();
    assert_eq!(a.message().await["method"], "notifications/events/active");
    assert_eq!(b.message().await["method"], "notifications/events/active");
    for (shop, n) in [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5)] {
        s.server
            .events()
            .emit("order.created", json!({ "shop": shop, "n": n }))
            .unwrap();
    }
    let mut got_a = Vec::new();
    while got_a.len() < 2 {
        let m = a.message().await;
        if m["method"] == "notifications/events/event" {
            got_a.push(m["params"]["data"].clone());
        }
    }
    let mut got_b = Vec::new();
    while got_b.len() < 2 {
        let m = b.message().await;
        if m["method"] == "notifications/events/event" {
            got_b.push(m["params"]["data"].clone());
        }
    }
    assert_eq!(
        got_a,
        vec![
            json!({ "shop": "a", "n": 1 }),
            json!({ "shop": "a", "n": 3 })
        ]
    );
    assert_eq!(
        got_b,
        vec![
            json!({ "shop": "b", "n": 2 }),
            json!({ "shop": "b", "n": 5 })
        ]
    );
    // And nothing else reaches either before the next heartbeat.
    for sse in [&mut a, &mut b] {
        let m = sse.message().await;
        assert_eq!(m["method"], "notifications/events/heartbeat", "{m}");
    }
}

#[tokio::test]
async fn a_client_opening_too_many_streams_gets_the_limit_error() {
    let s = start().await;
    // 2026-07-28 without a principal: the anonymous callers' quota (2).
    let modern = Http::modern(s.addr);
    let p = json!({ "name": "order.created", "cursor": null });
    let mut held = Vec::new();
    for id in 0..2 {
        let mut sse = modern.send(id, "events/stream", p.clone()).await.sse();
        assert_eq!(sse.message().await["method"], "notifications/events/active");
        held.push(sse);
    }
    let refused = modern.call(9, "events/stream", p.clone()).await;
    assert_eq!(refused["error"]["code"], -32013, "{refused}");
    assert_eq!(refused["error"]["data"]["limit"], "streamsPerCaller");
    assert_eq!(refused["error"]["data"]["max"], 2);
    // Polling still works meanwhile.
    modern.result(10, "events/poll", p.clone()).await;

    // 2025-11-25: each session has its own quota, within the server's (5).
    let (one, _) = Http::legacy(s.addr).await;
    for id in 0..2 {
        let mut sse = one.send(id, "events/stream", p.clone()).await.sse();
        assert_eq!(sse.message().await["method"], "notifications/events/active");
        held.push(sse);
    }
    let refused = one.call(9, "events/stream", p.clone()).await;
    assert_eq!(refused["error"]["code"], -32013, "{refused}");
    // Closing a 2025-11-25 stream's connection ends it too, and frees its slot.
    held.pop().unwrap().disconnect();
    let mut again = None;
    for _ in 0..50 {
        let res = one.send(10, "events/stream", p.clone()).await;
        if res.content_type == "text/event-stream" {
            again = Some(res.sse());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut again = again.expect("a stream after the disconnect");
    assert_eq!(
        again.message().await["method"],
        "notifications/events/active"
    );
    held.push(again);
    let (two, _) = Http::legacy(s.addr).await;
    let mut sse = two.send(1, "events/stream", p.clone()).await.sse();
    assert_eq!(sse.message().await["method"], "notifications/events/active");
    held.push(sse);
    // Five open: the server's bound.
    let refused = two.call(2, "events/stream", p.clone()).await;
    assert_eq!(refused["error"]["code"], -32013, "{refused}");
    assert_eq!(refused["error"]["data"]["limit"], "streams");
    assert_eq!(refused["error"]["data"]["max"], 5);
}

#[tokio::test]
async fn anonymous_peers_each_have_their_own_stream_quota() {
    let s = start().await;
    let p = json!({ "name": "order.created", "cursor": null });
    // Peer 127.0.0.1 holds its quota (2) of 2026-07-28 streams without a principal...
    let here = Http::modern(s.addr);
    let mut held = Vec::new();
    for id in 0..2 {
        let mut sse = here.send(id, "events/stream", p.clone()).await.sse();
        assert_eq!(sse.message().await["method"], "notifications/events/active");
        held.push(sse);
    }
    let refused = here.call(9, "events/stream", p.clone()).await;
    assert_eq!(
        refused["error"]["data"]["limit"], "streamsPerCaller",
        "{refused}"
    );
    // ...and peer 127.0.0.2 still gets its own: one peer does not starve the others.
    let mut there = Http::modern(s.addr);
    there.from = Some("127.0.0.2".parse().unwrap());
    for id in 0..2 {
        let mut sse = there.send(id, "events/stream", p.clone()).await.sse();
        assert_eq!(sse.message().await["method"], "notifications/events/active");
        held.push(sse);
    }
    let refused = there.call(9, "events/stream", p.clone()).await;
    assert_eq!(
        refused["error"]["data"]["limit"], "streamsPerCaller",
        "{refused}"
    );
}

/// The next message that is not a heartbeat.
async fn next_not_heartbeat(sse: &mut Sse) -> Value {
    loop {
        let m = sse.message().await;
        if m["method"] != "notifications/events/heartbeat" {
            return m;
        }
    }
}

#[tokio::test]
async fn errors_gaps_and_terminations_reach_the_streams_in_both_revisions() {
    let s = start().await;
    let events = s.server.events();
    for (i, (era, c)) in both(s.addr).await.into_iter().enumerate() {
        let id = 60 + i64::try_from(i).unwrap();
        let p = json!({ "name": "order.created", "arguments": { "shop": "a" }, "cursor": null });
        let mut sse = c.send(id, "events/stream", p).await.sse();
        let active = sse.message().await;
        assert_eq!(active["params"]["truncated"], false, "{era}: {active}");
        let before_gap = active["params"]["cursor"].clone();

        // A recoverable error: told, and the stream goes on.
        let told = events
            .report_error("order.created", ErrorObject::new(-32603, "upstream 503"))
            .unwrap();
        assert_eq!(told, 1, "{era}");
        let e = next_not_heartbeat(&mut sse).await;
        assert_eq!(e["method"], "notifications/events/error", "{era}: {e}");
        assert_eq!(e["params"]["error"]["code"], -32603);
        assert_eq!(e["params"]["error"]["message"], "upstream 503");
        assert_eq!(e["params"]["_meta"][SUB], id);
        events
            .emit("order.created", json!({ "shop": "a", "n": 1 }))
            .unwrap();
        let ev = next_not_heartbeat(&mut sse).await;
        assert_eq!(ev["method"], "notifications/events/event", "{era}: {ev}");

        // A gap: `active` again, truncated, with a cursor past it; a poll from before it is
        // told too.
        events.gap("order.created").unwrap();
        let again = next_not_heartbeat(&mut sse).await;
        assert_eq!(
            again["method"], "notifications/events/active",
            "{era}: {again}"
        );
        assert_eq!(again["params"]["truncated"], true, "{era}: {again}");
        assert!(pos(&again["params"]["cursor"]) > pos(&ev["params"]["cursor"]));
        let polled = c
            .result(
                id + 10,
                "events/poll",
                json!({ "name": "order.created", "cursor": before_gap }),
            )
            .await;
        assert_eq!(polled["truncated"], true, "{era}: {polled}");
        let from_now = c
            .result(
                id + 20,
                "events/poll",
                json!({ "name": "order.created", "cursor": again["params"]["cursor"] }),
            )
            .await;
        assert_eq!(from_now["truncated"], false, "{era}: {from_now}");

        // Terminated: told, then the stream's final result, then its end.
        let ended = events
            .terminate("order.created", ErrorObject::new(-32012, "access revoked"))
            .unwrap();
        assert_eq!(ended, 1, "{era}");
        let t = next_not_heartbeat(&mut sse).await;
        assert_eq!(t["method"], "notifications/events/terminated", "{era}: {t}");
        assert_eq!(t["params"]["error"]["code"], -32012);
        assert_eq!(t["params"]["_meta"][SUB], id);
        let last = next_not_heartbeat(&mut sse).await;
        assert_eq!(last["id"], id, "{era}: {last}");
        assert!(last["result"]["_meta"].is_object(), "{era}: {last}");
        assert!(sse.next().await.is_none(), "{era}: the stream ends");
    }
    // An unknown type is said so.
    assert!(events
        .report_error("nope", ErrorObject::new(-32603, "x"))
        .is_err());
    assert!(events.gap("nope").is_err());
}

#[tokio::test]
async fn a_busy_stream_still_gets_heartbeats_and_no_sse_comments_in_both_revisions() {
    // Transport keep-alives every 50 ms: an events stream keeps itself alive with heartbeats
    // (data frames with the cursor) instead.
    let server = server();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut config = duomcp::transport::http::HttpConfig::default();
    config.keep_alive = Some(Duration::from_millis(50));
    tokio::spawn(StreamableHttp::with_config(server.clone(), config).serve(listener));
    for (i, (era, c)) in both(addr).await.into_iter().enumerate() {
        let id = 80 + i64::try_from(i).unwrap();
        let p = json!({ "name": "order.created", "cursor": null });
        let res = c.send(id, "events/stream", p).await;
        assert_eq!(res.content_type, "text/event-stream", "{era}");
        let mut body = res.body;
        // An occurrence every 50 ms for 1 s: busier than the heartbeat (300 ms).
        let emitter = {
            let server = server.clone();
            tokio::spawn(async move {
                for n in 0..20 {
                    server
                        .events()
                        .emit("order.created", json!({ "n": n }))
                        .unwrap();
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
        };
        let mut raw = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_millis(1500);
        while let Ok(Some(Ok(frame))) = tokio::time::timeout_at(deadline, body.frame()).await {
            if let Ok(data) = frame.into_data() {
                raw.extend_from_slice(&data);
            }
        }
        emitter.await.unwrap();
        let text = String::from_utf8(raw).unwrap();
        assert!(
            !text.lines().any(|l| l.starts_with(':')),
            "{era}: no SSE comment on an events stream: {text}"
        );
        let events = text.matches("notifications/events/event").count();
        let beats = text.matches("notifications/events/heartbeat").count();
        assert!(events >= 5, "{era}: {events} events");
        assert!(beats >= 2, "{era}: {beats} heartbeats while busy: {text}");
    }
}

// ---------------------------------------------------------------------------------------------
// stdio.

struct Stdio {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    read: BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
    modern: bool,
}

impl Stdio {
    async fn open(server: Server, modern: bool) -> Stdio {
        let (client, server_end) = tokio::io::duplex(64 * 1024);
        let (r, w) = tokio::io::split(server_end);
        tokio::spawn(server.serve_connection(r, w));
        let (read, write) = tokio::io::split(client);
        let mut c = Stdio {
            write,
            read: BufReader::new(read),
            modern,
        };
        if !modern {
            c.send(&rpc(
                0,
                "initialize",
                json!({ "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }),
            ))
            .await;
            let init = c.recv().await;
            assert_eq!(
                init["result"]["capabilities"]["events"],
                json!({ "listChanged": false })
            );
            c.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
                .await;
        }
        c
    }

    async fn send(&mut self, v: &Value) {
        let mut line = serde_json::to_vec(v).unwrap();
        line.push(b'\n');
        self.write.write_all(&line).await.unwrap();
    }

    async fn request(&mut self, id: i64, method: &str, mut params: Value) {
        if self.modern {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {}
            });
        }
        self.send(&rpc(id, method, params)).await;
    }

    async fn recv(&mut self) -> Value {
        let mut line = String::new();
        let n = within(self.read.read_line(&mut line)).await.unwrap();
        assert!(n > 0, "the connection ended");
        serde_json::from_str(&line).unwrap()
    }

    /// The answer to `id`, skipping notifications (returned too).
    async fn answer(&mut self, id: i64) -> (Value, Vec<Value>) {
        let mut notes = Vec::new();
        loop {
            let m = self.recv().await;
            if m["id"] == id && m.get("method").is_none() {
                return (m, notes);
            }
            notes.push(m);
        }
    }
}

#[tokio::test]
async fn stdio_in_both_revisions_poll_and_push() {
    for modern in [false, true] {
        let server = server();
        let mut c = Stdio::open(server.clone(), modern).await;
        c.request(1, "events/list", json!({})).await;
        let (list, _) = c.answer(1).await;
        assert_eq!(
            list["result"]["events"].as_array().unwrap().len(),
            2,
            "{list}"
        );

        c.request(
            2,
            "events/poll",
            json!({ "name": "order.created", "arguments": { "shop": "a" }, "cursor": null }),
        )
        .await;
        let (first, _) = c.answer(2).await;
        let c0 = first["result"]["cursor"].clone();
        assert_eq!(first["result"]["events"], json!([]));

        // A push stream for shop b, then events.
        c.request(
            3,
            "events/stream",
            json!({ "name": "order.created", "arguments": { "shop": "b" }, "cursor": null }),
        )
        .await;
        let active = c.recv().await;
        assert_eq!(active["method"], "notifications/events/active", "{active}");
        assert_eq!(active["params"]["_meta"][SUB], 3);
        server
            .events()
            .emit("order.created", json!({ "shop": "a", "n": 1 }))
            .unwrap();
        server
            .events()
            .emit("order.created", json!({ "shop": "b", "n": 2 }))
            .unwrap();
        let ev = c.recv().await;
        assert_eq!(ev["method"], "notifications/events/event", "{ev}");
        assert_eq!(ev["params"]["data"]["n"], 2);
        assert_eq!(ev["params"]["_meta"][SUB], 3);

        // Poll meanwhile on the same connection: shop a's only.
        c.request(
            4,
            "events/poll",
            json!({ "name": "order.created", "arguments": { "shop": "a" }, "cursor": c0 }),
        )
        .await;
        let (second, notes) = c.answer(4).await;
        assert!(notes
            .iter()
            .all(|n| n["method"] == "notifications/events/heartbeat"));
        let got = second["result"]["events"].as_array().unwrap();
        assert_eq!(got.len(), 1, "{second}");
        assert_eq!(got[0]["data"]["n"], 1);
        assert!(pos(&second["result"]["cursor"]) > pos(&c0));

        // A heartbeat in the quiet.
        let hb = c.recv().await;
        assert_eq!(hb["method"], "notifications/events/heartbeat", "{hb}");
        assert_eq!(hb["params"]["cursor"], ev["params"]["cursor"]);

        // Cancelled: no more events for it.
        c.send(&json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 3 } }))
            .await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        server
            .events()
            .emit("order.created", json!({ "shop": "b", "n": 3 }))
            .unwrap();
        c.request(5, "events/list", json!({})).await;
        let (_, notes) = c.answer(5).await;
        for n in notes {
            assert_ne!(n["method"], "notifications/events/event", "{n}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        c.request(6, "events/list", json!({})).await;
        let (_, notes) = c.answer(6).await;
        assert!(notes.is_empty(), "nothing after the cancel: {notes:?}");
    }
}

#[tokio::test]
async fn events_list_is_paginated_like_tools_list() {
    let mut config = duomcp::server::ServerConfig::default();
    config.page_size = 1;
    let server = Server::builder()
        .config(config)
        .event(EventType::new("one"))
        .event(EventType::new("two"))
        .event(EventType::new("three"))
        .build();
    for modern in [false, true] {
        let mut c = Stdio::open(server.clone(), modern).await;
        let mut names = Vec::new();
        let mut cursor = Value::Null;
        for id in 1..10 {
            let params = match &cursor {
                Value::Null => json!({}),
                c => json!({ "cursor": c }),
            };
            c.request(id, "events/list", params).await;
            let (page, _) = c.answer(id).await;
            let events = page["result"]["events"].as_array().unwrap();
            assert_eq!(events.len(), 1, "{page}");
            names.push(events[0]["name"].as_str().unwrap().to_owned());
            cursor = page["result"]["nextCursor"].clone();
            if cursor.is_null() {
                break;
            }
        }
        assert_eq!(names, ["one", "three", "two"]);
    }
}

#[tokio::test]
async fn a_poll_returns_at_most_the_servers_bound_whatever_max_events_asks() {
    let mut config = config();
    config.max_events_per_poll = 3;
    let server = Server::builder()
        .event(EventType::new("tick"))
        .events_config(config)
        .build();
    for modern in [false, true] {
        let mut c = Stdio::open(server.clone(), modern).await;
        c.request(1, "events/poll", json!({ "name": "tick", "cursor": null }))
            .await;
        let (first, _) = c.answer(1).await;
        for n in 0..5 {
            server.events().emit("tick", json!({ "n": n })).unwrap();
        }
        let p = json!({ "name": "tick", "cursor": first["result"]["cursor"], "maxEvents": 1000 });
        c.request(2, "events/poll", p).await;
        let (page, _) = c.answer(2).await;
        assert_eq!(
            page["result"]["events"].as_array().unwrap().len(),
            3,
            "{page}"
        );
        assert_eq!(page["result"]["hasMore"], true);
        let p = json!({ "name": "tick", "cursor": page["result"]["cursor"], "maxEvents": 1000 });
        c.request(3, "events/poll", p).await;
        let (rest, _) = c.answer(3).await;
        assert_eq!(
            rest["result"]["events"].as_array().unwrap().len(),
            2,
            "{rest}"
        );
        assert_eq!(rest["result"]["events"][0]["data"]["n"], 3);
        assert_eq!(rest["result"]["hasMore"], false);
        for bad in [json!(0), json!(-1), json!("3"), json!(1.5)] {
            let p =
                json!({ "name": "tick", "cursor": first["result"]["cursor"], "maxEvents": bad });
            c.request(4, "events/poll", p).await;
            let (refused, _) = c.answer(4).await;
            assert_eq!(refused["error"]["code"], -32602, "{bad}: {refused}");
        }
    }
}
