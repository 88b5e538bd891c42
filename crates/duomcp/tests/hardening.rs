//! Regression tests of issue 16's defects and of the limits in LIMITS.md, against the Streamable
//! HTTP transport served in-process on 127.0.0.1:0 and spoken to with raw HTTP/1.1 (so that
//! malformed requests — repeated `Host`, absolute-form targets, bodies that stop short — can be
//! sent as they are). The memory side of the defects is measured on a spawned `duomcp serve`
//! in `crates/duomcp-cli/tests/hardening_http.rs`.
#![cfg(feature = "http-server")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::schema::{ElicitRequestFormParams, ElicitRequestParams, Resource, ResourceTemplate};
use duomcp::server::{Args, Context, HandlerError, PromptSpec, Server, ServerConfig, ToolSpec};
use duomcp::transport::http::{HttpConfig, MemoryEventStore, ServeOptions, StreamableHttp};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use duomcp_testkit::raw_http::{self, parse, post_request, Raw};

const MODERN: &str = "2026-07-28";

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("timed out")
}

fn server() -> Server {
    Server::builder()
        .name("hardening")
        .config({
            let mut c = ServerConfig::default();
            c.max_subscriptions = 3;
            c.max_input_rounds = 3;
            c.max_request_state_bytes = 4096;
            c
        })
        .resource(Resource::new("test://watched", "watched"), || async {
            "watched".to_owned()
        })
        .resource_template(
            ResourceTemplate::new("test://item/{id}", "item"),
            || async { "item".to_owned() },
        )
        .tool(
            ToolSpec::new("delete").input_schema(json!({
                "type": "object",
                "properties": { "target": { "type": "string" } },
                "required": ["target"]
            })),
            |ctx: Context, Args(a): Args<Value>| async move {
                let schema = serde_json::from_value(json!({
                    "type": "object", "properties": { "ok": { "type": "boolean" } }
                }))
                .unwrap_or_default();
                let params =
                    ElicitRequestParams::Form(ElicitRequestFormParams::new("Delete it?", schema));
                ctx.elicit("confirm", params).await?;
                Ok::<_, HandlerError>(format!("deleted {}", a["target"].as_str().unwrap_or("")))
            },
        )
        .prompt(
            PromptSpec::new("confirm_prompt").argument("target", "what to confirm", true),
            |ctx: Context, Args(a): Args<Value>| async move {
                ctx.elicit("confirm", confirm_params()).await?;
                Ok::<_, HandlerError>(format!("confirmed {}", a["target"].as_str().unwrap_or("")))
            },
        )
        .resource_template(
            ResourceTemplate::new("test://secret/{id}", "secret"),
            |ctx: Context, Args(a): Args<Value>| async move {
                ctx.elicit("confirm", confirm_params()).await?;
                Ok::<_, HandlerError>(format!("secret {}", a["id"].as_str().unwrap_or("")))
            },
        )
        .tool("plain", || async { "plain" })
        .tool("wait", || async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            "never"
        })
        .build()
}

fn confirm_params() -> ElicitRequestParams {
    let schema = serde_json::from_value(json!({
        "type": "object", "properties": { "ok": { "type": "boolean" } }
    }))
    .unwrap_or_default();
    ElicitRequestParams::Form(ElicitRequestFormParams::new("Go ahead?", schema))
}

async fn start(config: HttpConfig) -> (SocketAddr, StreamableHttp) {
    start_with(server(), config).await
}

async fn start_with(server: Server, config: HttpConfig) -> (SocketAddr, StreamableHttp) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let http = StreamableHttp::with_config(server, config);
    tokio::spawn(http.clone().serve(listener));
    (addr, http)
}

/// Sends `request` as is and reads the response until the server closes (requests say
/// `Connection: close`).
async fn exchange(addr: SocketAddr, request: &[u8]) -> Raw {
    raw_http::exchange(addr, request, Duration::from_secs(20)).await
}

async fn post(addr: SocketAddr, extra: &[&str], body: &Value) -> Raw {
    exchange(addr, &post_request(addr, extra, &body.to_string())).await
}

fn initialize_body(version: &str, capabilities: Value) -> Value {
    json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion": version, "capabilities": capabilities,
        "clientInfo": {"name":"hardening","version":"0"}}})
}

/// A new legacy session; its id.
async fn initialize(addr: SocketAddr) -> String {
    let res = post(addr, &[], &initialize_body("2025-11-25", json!({}))).await;
    assert_eq!(res.status, 200, "{res:?}");
    res.header("mcp-session-id").expect("a session id")
}

async fn legacy_call(addr: SocketAddr, sid: &str, method: &str, params: Value) -> Raw {
    let session = format!("Mcp-Session-Id: {sid}");
    post(
        addr,
        &[&session, "MCP-Protocol-Version: 2025-11-25"],
        &json!({"jsonrpc":"2.0","id":2,"method":method,"params":params}),
    )
    .await
}

fn modern_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": MODERN,
           "io.modelcontextprotocol/clientCapabilities": {}})
}

async fn modern_call(addr: SocketAddr, method: &str, mut params: Value) -> Raw {
    params["_meta"] = modern_meta();
    let mut headers = vec![
        "MCP-Protocol-Version: 2026-07-28".to_owned(),
        format!("Mcp-Method: {method}"),
    ];
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        headers.push(format!("Mcp-Name: {name}"));
    }
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    post(
        addr,
        &headers,
        &json!({"jsonrpc":"2.0","id":7,"method":method,"params":params}),
    )
    .await
}

// ---------------------------------------------------------------------------------------------
// 11, 12: the request's authority (RFC 9112 §3.2, §3.2.2).

#[tokio::test]
async fn defect_11_two_host_headers_are_400() {
    let (addr, _http) = start(HttpConfig::default()).await;
    let host2 = format!("Host: {addr}");
    let init = initialize_body("2025-11-25", json!({})).to_string();
    let res = exchange(addr, &post_request(addr, &[&host2], &init)).await;
    assert_eq!(res.status, 400, "{res:?}");
    assert_eq!(res.code(), -32600);
    assert!(res.body.contains("more than one Host"), "{}", res.body);
    assert!(res.header("mcp-session-id").is_none());
    // The same request with one Host header is served.
    let res = exchange(addr, &post_request(addr, &[], &init)).await;
    assert_eq!(res.status, 200, "{res:?}");
}

#[tokio::test]
async fn defect_12_absolute_form_target_is_checked_instead_of_host() {
    let (addr, _http) = start(HttpConfig::default()).await;
    let body = initialize_body("2025-11-25", json!({})).to_string();
    let absolute = |authority: &str, host: &str| {
        format!(
            "POST http://{authority}/mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    // A foreign authority in the target, an allowed Host: refused.
    let res = exchange(addr, absolute("evil.example", &addr.to_string()).as_bytes()).await;
    assert_eq!(res.status, 403, "{res:?}");
    assert_eq!(res.code(), -32600);
    // An allowed authority in the target wins over a foreign Host.
    let res = exchange(addr, absolute(&addr.to_string(), "evil.example").as_bytes()).await;
    assert_eq!(res.status, 200, "{res:?}");
    assert!(res.header("mcp-session-id").is_some());
}

// ---------------------------------------------------------------------------------------------
// 8, 9: arrays are never messages; 2025-03-26 is not offered.

#[tokio::test]
async fn defect_8_json_arrays_are_not_read_as_messages_or_meta() {
    let (addr, _http) = start(HttpConfig::default()).await;
    let sid = initialize(addr).await;
    let session = format!("Mcp-Session-Id: {sid}");
    // A request written as an array, positionally.
    let array = json!(["2.0", 1, "tools/call", {"name": "plain"}]);
    let res = post(addr, &[&session], &array).await;
    assert_eq!(res.status, 400, "{res:?}");
    assert_eq!(res.code(), -32600);
    assert!(res.body.contains("batch"), "{}", res.body);
    let res = post(addr, &[], &json!(["2.0", 1, "ping"])).await;
    assert_eq!(res.status, 400);
    assert_eq!(res.code(), -32600);
    // `_meta` as an array is not a `_meta` naming a version.
    let body = json!({"jsonrpc":"2.0","id":3,"method":"tools/call",
        "params":{"name":"plain","_meta":[MODERN, {}]}});
    let res = post(
        addr,
        &[
            "MCP-Protocol-Version: 2026-07-28",
            "Mcp-Method: tools/call",
            "Mcp-Name: plain",
        ],
        &body,
    )
    .await;
    assert_eq!(res.status, 400, "{res:?}");
    assert_eq!(res.code(), -32602);
    // The same request with an object `_meta` is answered.
    let res = modern_call(addr, "tools/call", json!({"name":"plain"})).await;
    assert_eq!(res.status, 200, "{res:?}");
    assert_eq!(res.json()["result"]["content"][0]["text"], "plain");
    // Typed params are objects at every depth: `capabilities` as an array is refused.
    let res = post(
        addr,
        &[],
        &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":[{}],"clientInfo":["n","1"]}}),
    )
    .await;
    assert_eq!(res.code(), -32602, "{res:?}");
}

#[tokio::test]
async fn defect_9_2025_03_26_is_not_offered_and_batches_are_refused() {
    let (addr, _http) = start(HttpConfig::default()).await;
    let res = post(addr, &[], &initialize_body("2025-03-26", json!({}))).await;
    assert_eq!(res.status, 200, "{res:?}");
    assert_eq!(res.json()["result"]["protocolVersion"], "2025-11-25");
    // Revisions still offered are agreed to as asked.
    let res = post(addr, &[], &initialize_body("2025-06-18", json!({}))).await;
    assert_eq!(res.json()["result"]["protocolVersion"], "2025-06-18");
    // A batch (what 2025-03-26 would allow) is an invalid request, not a partial execution.
    let sid = res.header("mcp-session-id").unwrap();
    let session = format!("Mcp-Session-Id: {sid}");
    let batch =
        json!([{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]);
    let res = post(addr, &[&session], &batch).await;
    assert_eq!(res.status, 400);
    assert_eq!(res.code(), -32600);
}

// ---------------------------------------------------------------------------------------------
// 1: request bodies.

/// Headers announcing `declared` bytes, then `sent` of them; the connection stays open.
async fn partial_body(addr: SocketAddr, declared: usize, sent: usize) -> TcpStream {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {declared}\r\n\r\n"
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(&vec![b' '; sent]).await.unwrap();
    tcp
}

async fn read_all(mut tcp: TcpStream) -> Raw {
    let mut buf = Vec::new();
    within(tcp.read_to_end(&mut buf)).await.unwrap();
    parse(&buf)
}

#[tokio::test]
async fn defect_1_a_body_that_stops_short_is_408_after_the_body_deadline() {
    let mut config = HttpConfig::default();
    config.body_timeout = Some(Duration::from_millis(800));
    let (addr, _http) = start(config).await;
    let started = Instant::now();
    let tcp = partial_body(addr, 4000, 3999).await;
    let res = read_all(tcp).await;
    let took = started.elapsed();
    assert_eq!(res.status, 408, "{res:?}");
    assert_eq!(res.code(), -32600);
    assert_eq!(res.header("connection").as_deref(), Some("close"));
    assert!(
        took >= Duration::from_millis(700) && took < Duration::from_secs(10),
        "answered after {took:?}"
    );
}

#[tokio::test]
async fn limit_body_bytes_in_flight_refuses_bodies_beyond_the_budget_with_503() {
    let mut config = HttpConfig::default();
    config.max_body_bytes_in_flight = 300 * 1024;
    config.body_timeout = Some(Duration::from_secs(5));
    let (addr, _http) = start(config).await;
    // Two bodies of 100 KiB fit (their bytes are reserved from the start)...
    let a = partial_body(addr, 100 * 1024, 10).await;
    let b = partial_body(addr, 100 * 1024, 10).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    // ...a third of 150 KiB does not.
    let c = partial_body(addr, 150 * 1024, 10).await;
    let res = read_all(c).await;
    assert_eq!(res.status, 503, "{res:?}");
    assert_eq!(res.code(), -32603);
    assert_eq!(res.header("retry-after").as_deref(), Some("1"));
    drop((a, b));
    // Their reservations come back when they end: a small request passes again.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let res = post(addr, &[], &initialize_body("2025-11-25", json!({}))).await;
    assert_eq!(res.status, 200, "{res:?}");
}

#[tokio::test]
async fn limit_message_size_is_413_before_the_body_is_read() {
    let server = Server::builder()
        .config({
            let mut c = ServerConfig::default();
            c.max_message_size = 1000;
            c
        })
        .build();
    let (addr, _http) = start_with(server, HttpConfig::default()).await;
    // Announced too large: refused at once, without waiting for the bytes.
    let tcp = partial_body(addr, 5000, 0).await;
    let res = read_all(tcp).await;
    assert_eq!(res.status, 413, "{res:?}");
    assert_eq!(res.code(), -32600);
}

// ---------------------------------------------------------------------------------------------
// 2: listen streams.

async fn open_listen(addr: SocketAddr) -> (u16, TcpStream, String) {
    let body = json!({"jsonrpc":"2.0","id":9,"method":"subscriptions/listen","params":{
        "notifications":{"toolsListChanged":true}, "_meta": modern_meta()}})
    .to_string();
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\n\r\n{body}",
        body.len()
    );
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(req.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let n = within(tcp.read(&mut buf)).await.unwrap();
    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, tcp, text)
}

#[tokio::test]
async fn defect_2_listen_streams_have_their_own_cap_and_leave_requests_alone() {
    let mut config = HttpConfig::default();
    config.max_listen_streams = 4;
    config.max_concurrent_requests = 2;
    let (addr, _http) = start(config).await;
    let mut open = Vec::new();
    for _ in 0..4 {
        let (status, tcp, head) = open_listen(addr).await;
        assert_eq!(status, 200, "{head}");
        open.push(tcp);
    }
    // The fifth listen stream is refused...
    let (status, _tcp, text) = open_listen(addr).await;
    assert_eq!(status, 503, "{text}");
    assert!(text.contains("-32603"), "{text}");
    assert!(text.contains("subscriptions/listen"), "{text}");
    // ...while requests of both revisions, with two request permits only, are served.
    let res = modern_call(addr, "tools/call", json!({"name":"plain"})).await;
    assert_eq!(res.status, 200, "{res:?}");
    let sid = initialize(addr).await;
    let res = legacy_call(addr, &sid, "tools/call", json!({"name":"plain"})).await;
    assert_eq!(res.status, 200, "{res:?}");
    // A closed listen stream gives its place back.
    drop(open.pop());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, _tcp, text) = open_listen(addr).await;
    assert_eq!(status, 200, "{text}");
}

#[tokio::test]
async fn limit_concurrent_requests_is_503() {
    let mut config = HttpConfig::default();
    config.max_concurrent_requests = 1;
    let (addr, _http) = start(config).await;
    // One request that waits holds the only permit (its connection stays open).
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{
        "name":"wait","_meta":modern_meta()}})
    .to_string();
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: wait\r\n\r\n{body}",
        body.len()
    );
    let mut waiting = TcpStream::connect(addr).await.unwrap();
    waiting.write_all(req.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let res = modern_call(addr, "tools/call", json!({"name":"plain"})).await;
    assert_eq!(res.status, 503, "{res:?}");
    assert_eq!(res.code(), -32603);
    drop(waiting);
}

// ---------------------------------------------------------------------------------------------
// 3: the session table.

#[tokio::test]
async fn defect_3_a_session_flood_evicts_unused_sessions_not_active_ones() {
    let mut config = HttpConfig::default();
    config.max_sessions = 20;
    let (addr, http) = start(config).await;
    // An established client: initialized, then a request.
    let sid = initialize(addr).await;
    let session = format!("Mcp-Session-Id: {sid}");
    let res = post(
        addr,
        &[&session],
        &json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    )
    .await;
    assert_eq!(res.status, 202);
    // A flood of sessions that only initialize: every one is served, none is refused.
    let mut flood = Vec::new();
    for _ in 0..100 {
        flood.push(initialize(addr).await);
    }
    assert_eq!(http.session_count(), 20);
    // The established session survived; the oldest flood sessions made room.
    let res = legacy_call(addr, &sid, "tools/list", json!({})).await;
    assert_eq!(res.status, 200, "{res:?}");
    let res = legacy_call(addr, &flood[0], "tools/list", json!({})).await;
    assert_eq!(res.status, 404, "{res:?}");
    let res = legacy_call(addr, &flood[99], "tools/list", json!({})).await;
    assert_eq!(res.status, 200, "{res:?}");
}

#[tokio::test]
async fn limit_sessions_is_503_only_when_every_session_is_busy() {
    let mut config = HttpConfig::default();
    config.max_sessions = 2;
    let (addr, _http) = start(config).await;
    // Two sessions, each holding a request open (busy, so not evictable).
    let mut held = Vec::new();
    for _ in 0..2 {
        let sid = initialize(addr).await;
        let body = json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"wait"}})
            .to_string();
        let req = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
             Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n{body}",
            body.len()
        );
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(req.as_bytes()).await.unwrap();
        held.push(tcp);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let res = post(addr, &[], &initialize_body("2025-11-25", json!({}))).await;
    assert_eq!(res.status, 503, "{res:?}");
    assert_eq!(res.code(), -32603);
    assert!(res.body.contains("too many sessions"), "{}", res.body);
}

#[tokio::test]
async fn defect_3_sessions_that_never_come_back_expire_after_the_handshake_timeout() {
    let mut config = HttpConfig::default();
    config.session_handshake_timeout = Duration::from_millis(400);
    let (addr, http) = start(config).await;
    let used = initialize(addr).await;
    let res = legacy_call(addr, &used, "tools/list", json!({})).await;
    assert_eq!(res.status, 200);
    let unused = initialize(addr).await;
    within(async {
        while http.session_count() > 1 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert_eq!(
        legacy_call(addr, &unused, "tools/list", json!({}))
            .await
            .status,
        404
    );
    // The session that made a request is kept (its idle timeout is 30 minutes).
    assert_eq!(
        legacy_call(addr, &used, "tools/list", json!({}))
            .await
            .status,
        200
    );
}

// ---------------------------------------------------------------------------------------------
// 4: the event log.

#[tokio::test]
async fn defect_4_no_events_are_stored_for_sessions_without_a_get_stream() {
    let store = Arc::new(MemoryEventStore::default());
    let mut config = HttpConfig::default();
    config.event_store = store.clone();
    let server = server();
    let (addr, _http) = start_with(server.clone(), config).await;
    let mut sessions = Vec::new();
    for _ in 0..50 {
        let sid = initialize(addr).await;
        let session = format!("Mcp-Session-Id: {sid}");
        post(
            addr,
            &[&session],
            &json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        )
        .await;
        sessions.push(sid);
    }
    for i in 0..20 {
        server.add_tool(format!("t{i}"), || async { "x" });
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        store.bytes(),
        0,
        "events were stored for sessions nobody can resume"
    );
    // A session with a GET stream has its events stored (they can be replayed).
    let mut get = TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n",
        sessions[0]
    );
    get.write_all(req.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 1024];
    let n = within(get.read(&mut buf)).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    server.add_tool("after_get", || async { "x" });
    within(async {
        while store.bytes() == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let one_event = store.bytes();
    assert!(one_event < 1000, "{one_event}");
}

// ---------------------------------------------------------------------------------------------
// 5: what a session keeps of its client.

#[tokio::test]
async fn defect_5_initialize_with_oversize_client_data_is_refused() {
    let (addr, http) = start(HttpConfig::default()).await;
    let big = "x".repeat(100 * 1024);
    let res = post(
        addr,
        &[],
        &initialize_body("2025-11-25", json!({"experimental": {"blob": big}})),
    )
    .await;
    assert_eq!(res.status, 400, "{res:?}");
    assert_eq!(res.code(), -32602);
    assert!(res.body.contains("65536"), "{}", res.body);
    assert!(res.header("mcp-session-id").is_none());
    assert_eq!(http.session_count(), 0);
    // Within the bound it is accepted.
    let fits = "x".repeat(10 * 1024);
    let res = post(
        addr,
        &[],
        &initialize_body("2025-11-25", json!({"experimental": {"blob": fits}})),
    )
    .await;
    assert_eq!(res.status, 200, "{res:?}");
    assert_eq!(http.session_count(), 1);
}

// ---------------------------------------------------------------------------------------------
// 13: the serve helper for applications that embed the router.

#[tokio::test]
async fn defect_13_the_serve_helper_closes_connections_that_do_not_finish_their_headers() {
    let mcp = StreamableHttp::new(server());
    let app = axum::Router::new()
        .route("/health", axum::routing::get(|| async { "ok" }))
        .merge(mcp.router());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut options = ServeOptions::default();
    options.header_read_timeout = Duration::from_millis(500);
    tokio::spawn(duomcp::transport::http::serve_with(
        listener,
        app,
        options,
        std::future::pending(),
    ));
    // The application's routes and the MCP endpoint are served.
    let res = exchange(
        addr,
        format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await;
    assert_eq!((res.status, res.body.as_str()), (200, "ok"));
    assert_eq!(
        post(addr, &[], &initialize_body("2025-11-25", json!({})))
            .await
            .status,
        200
    );
    // Slowloris: headers that never end. The server closes the connection.
    let started = Instant::now();
    let mut slow = TcpStream::connect(addr).await.unwrap();
    slow.write_all(format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ").as_bytes())
        .await
        .unwrap();
    let mut buf = Vec::new();
    within(slow.read_to_end(&mut buf)).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    // An idle connection that never sends anything is closed too.
    let started = Instant::now();
    let mut idle = TcpStream::connect(addr).await.unwrap();
    let mut buf = Vec::new();
    within(idle.read_to_end(&mut buf)).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
}

// ---------------------------------------------------------------------------------------------
// 6: resource subscriptions.

#[tokio::test]
async fn defect_6_subscriptions_are_validated_and_bounded_per_session() {
    let (addr, _http) = start(HttpConfig::default()).await;
    let sid = initialize(addr).await;
    let sub = |uri: String| {
        let sid = sid.clone();
        async move { legacy_call(addr, &sid, "resources/subscribe", json!({ "uri": uri })).await }
    };
    // A registered resource and template matches are accepted.
    let res = sub("test://watched".into()).await;
    assert_eq!(res.status, 200, "{res:?}");
    assert_eq!(res.json()["result"], json!({}));
    assert!(sub("test://item/1".into()).await.json()["result"].is_object());
    // Not served: -32002; not a URI, or too long: -32602.
    assert_eq!(sub("test://nothing-here".into()).await.code(), -32002);
    assert_eq!(sub("no scheme at all".into()).await.code(), -32602);
    let long = format!("test://item/{}", "x".repeat(1024 * 1024));
    let res = sub(long).await;
    assert_eq!(res.code(), -32602);
    assert!(res.body.contains("8192"), "{}", res.body);
    // The third is the last one a session may hold (max_subscriptions = 3)...
    assert!(sub("test://item/2".into()).await.json()["result"].is_object());
    let res = sub("test://item/3".into()).await;
    assert_eq!(res.code(), -32602, "{res:?}");
    assert!(res.body.contains("unsubscribe"), "{}", res.body);
    // ...subscribing again to one it holds is fine, and unsubscribing makes room.
    assert!(sub("test://item/2".into()).await.json()["result"].is_object());
    let res = legacy_call(
        addr,
        &sid,
        "resources/unsubscribe",
        json!({"uri":"test://item/2"}),
    )
    .await;
    assert_eq!(res.status, 200);
    assert!(sub("test://item/3".into()).await.json()["result"].is_object());
}

#[tokio::test]
async fn limit_listen_resource_subscriptions_are_bounded() {
    let (addr, _http) = start(HttpConfig::default()).await;
    let uris: Vec<String> = (0..4).map(|i| format!("test://item/{i}")).collect();
    let res = modern_call(
        addr,
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": uris}}),
    )
    .await;
    assert_eq!(res.code(), -32602, "{res:?}");
}

// ---------------------------------------------------------------------------------------------
// 10: requestState is bound to the tool's arguments.

#[tokio::test]
async fn defect_10_request_state_is_refused_for_other_arguments() {
    let (addr, _http) = start(HttpConfig::default()).await;
    let caps = json!({"elicitation": {"form": {}}});
    let call = |arguments: Value, extra: Value| {
        let caps = caps.clone();
        async move {
            let mut params = json!({"name": "delete", "arguments": arguments});
            if let (Value::Object(p), Value::Object(e)) = (&mut params, extra) {
                p.extend(e);
            }
            params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": caps});
            post(
                addr,
                &[
                    "MCP-Protocol-Version: 2026-07-28",
                    "Mcp-Method: tools/call",
                    "Mcp-Name: delete",
                ],
                &json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":params}),
            )
            .await
        }
    };
    let first = call(json!({"target": "a.txt"}), json!({})).await;
    let result = first.json()["result"].clone();
    assert_eq!(result["resultType"], "input_required", "{}", first.body);
    let state = result["requestState"].as_str().unwrap().to_owned();
    let answer = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    // The same arguments (in another key order of `_meta`-free arguments) complete.
    let ok = call(
        json!({"target": "a.txt"}),
        json!({"requestState": state, "inputResponses": answer}),
    )
    .await;
    assert_eq!(
        ok.json()["result"]["content"][0]["text"],
        "deleted a.txt",
        "{}",
        ok.body
    );
    // Other arguments with the same state are refused.
    let swapped = call(
        json!({"target": "/etc/important"}),
        json!({"requestState": state, "inputResponses": answer}),
    )
    .await;
    assert_eq!(swapped.code(), -32602, "{}", swapped.body);
    assert!(
        swapped.body.contains("issued for another request"),
        "{}",
        swapped.body
    );
}

// ---------------------------------------------------------------------------------------------
// MRTR: requestState bound to the salient params of prompts/get and resources/read; rounds and
// state size bounded (the fixture has max_input_rounds = 3, max_request_state_bytes = 4096).

/// A 2026-07-28 request of a method that may ask for input, from a client that can elicit.
async fn mrtr_call(addr: SocketAddr, method: &str, mut params: Value) -> Raw {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}});
    let name = params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let headers = [
        "MCP-Protocol-Version: 2026-07-28".to_owned(),
        format!("Mcp-Method: {method}"),
        format!("Mcp-Name: {name}"),
    ];
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    let body = json!({"jsonrpc":"2.0","id":3,"method":method,"params":params});
    post(addr, &headers, &body).await
}

/// `params` with a retry's `requestState` and `inputResponses`.
fn retry(mut params: Value, state: &str, answers: Value) -> Value {
    params["requestState"] = json!(state);
    params["inputResponses"] = answers;
    params
}

/// The `requestState` of an `InputRequiredResult`.
fn state_of(res: &Raw) -> String {
    let result = &res.json()["result"];
    assert_eq!(result["resultType"], "input_required", "{}", res.body);
    result["requestState"].as_str().unwrap().to_owned()
}

fn accepted() -> Value {
    json!({"confirm": {"action": "accept", "content": {"ok": true}}})
}

fn assert_refused(res: &Raw, why: &str) {
    assert_eq!(res.status, 200, "{res:?}");
    assert_eq!(res.code(), -32602, "{}", res.body);
    assert!(res.body.contains(why), "{}", res.body);
}

#[tokio::test]
async fn limit_request_state_is_bound_to_the_prompt_and_its_arguments() {
    let (addr, _http) = start(HttpConfig::default()).await;
    let get = |arguments: Value| json!({"name": "confirm_prompt", "arguments": arguments});
    let first = mrtr_call(addr, "prompts/get", get(json!({"target": "a.txt"}))).await;
    let state = state_of(&first);
    // The same arguments, in another key order, complete.
    let same = json!({"target": "a.txt", "unused": {"y": 2, "x": 1}});
    let reordered = json!({"unused": {"x": 1, "y": 2}, "target": "a.txt"});
    let first = mrtr_call(addr, "prompts/get", get(same)).await;
    let state2 = state_of(&first);
    let ok = mrtr_call(
        addr,
        "prompts/get",
        retry(get(reordered), &state2, accepted()),
    )
    .await;
    let text = &ok.json()["result"]["messages"][0]["content"]["text"];
    assert_eq!(text, "confirmed a.txt", "{}", ok.body);
    // Other arguments with the first state are refused...
    let other = retry(get(json!({"target": "/etc/important"})), &state, accepted());
    let res = mrtr_call(addr, "prompts/get", other).await;
    assert_refused(&res, "issued for another request");
    // ...and so is the state of a prompt on a tool with the same name and arguments.
    let call = json!({"name": "confirm_prompt", "arguments": {"target": "a.txt"}});
    let res = mrtr_call(addr, "tools/call", retry(call, &state, accepted())).await;
    assert_eq!(res.code(), -32602, "{}", res.body);
}

#[tokio::test]
async fn limit_request_state_is_bound_to_the_resource_uri() {
    let (addr, _http) = start(HttpConfig::default()).await;
    let read = |uri: &str| json!({"uri": uri});
    let first = mrtr_call(addr, "resources/read", read("test://secret/1")).await;
    let state = state_of(&first);
    let res = mrtr_call(
        addr,
        "resources/read",
        retry(read("test://secret/2"), &state, accepted()),
    )
    .await;
    assert_refused(&res, "issued for another request");
    let ok = mrtr_call(
        addr,
        "resources/read",
        retry(read("test://secret/1"), &state, accepted()),
    )
    .await;
    assert_eq!(
        ok.json()["result"]["contents"][0]["text"],
        "secret 1",
        "{}",
        ok.body
    );
}

#[tokio::test]
async fn limit_input_rounds_are_bounded() {
    let (addr, _http) = start(HttpConfig::default()).await;
    let call = json!({"name": "delete", "arguments": {"target": "a.txt"}});
    // An answer of the wrong shape is asked for again: rounds 1, 2 and 3...
    let mut res = mrtr_call(addr, "tools/call", call.clone()).await;
    let wrong = json!({"confirm": "not an ElicitResult"});
    for _ in 0..2 {
        let state = state_of(&res);
        res = mrtr_call(
            addr,
            "tools/call",
            retry(call.clone(), &state, wrong.clone()),
        )
        .await;
    }
    let state = state_of(&res);
    // ...and a fourth is refused.
    let res = mrtr_call(addr, "tools/call", retry(call.clone(), &state, wrong)).await;
    assert_refused(&res, "more than 3 rounds of input");
    // The third round's state still completes with a proper answer.
    let ok = mrtr_call(addr, "tools/call", retry(call, &state, accepted())).await;
    assert_eq!(
        ok.json()["result"]["content"][0]["text"],
        "deleted a.txt",
        "{}",
        ok.body
    );
}

#[tokio::test]
async fn limit_request_state_size_is_bounded() {
    let (addr, _http) = start(HttpConfig::default()).await;
    let call = json!({"name": "delete", "arguments": {"target": "a.txt"}});
    // A requestState longer than the bound is refused before it is checked.
    let long = format!("v1.{}.x", "A".repeat(5000));
    let res = mrtr_call(addr, "tools/call", retry(call.clone(), &long, json!({}))).await;
    assert_refused(&res, "requestState is longer than 4096 bytes");
    // Answers that would seal into a longer state end the request instead of growing it.
    let first = mrtr_call(addr, "tools/call", call.clone()).await;
    let state = state_of(&first);
    let bulky = json!({"junk": "x".repeat(5000)});
    let res = mrtr_call(addr, "tools/call", retry(call, &state, bulky)).await;
    assert_refused(&res, "requestState longer than 4096 bytes");
}
