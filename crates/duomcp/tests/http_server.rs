//! The Streamable HTTP server transport, driven over real sockets with a raw HTTP/1.1 client.
//!
//! A small in-test server (plain, progress, eliciting, stepwise and cancellable tools) is served
//! on `127.0.0.1:0`; each test checks status codes, headers and the exact SSE events on the wire.

#![cfg(feature = "http-server")]
// Helpers outside `#[test]` functions fail loudly too: that is what a test helper is for.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::Bytes;
use duomcp::server::{Args, Context, Server, ServerConfig, State, ToolSpec};
use duomcp::transport::http::{
    EventStore, HttpConfig, MemoryEventStore, ResponseMode, StoreError, StoreFuture, StoredEvent,
    StreamableHttp,
};
use duomcp_testkit::text;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

mod http_support;
use http_support::{common_tools, no_args, within, DropFlag, Probe, LEGACY, MODERN};

// ---------------------------------------------------------------------------------------------
// The server under test.

fn test_server(config: ServerConfig, probe: Probe) -> Server {
    common_tools(
        Server::builder()
            .name("http-test")
            .config(config)
            .state(probe),
    )
    .tool(
        no_args("steps"),
        |ctx: Context, State(p): State<Probe>| async move {
            ctx.progress(1.0, None, None).await;
            p.release.notified().await;
            ctx.progress(2.0, None, None).await;
            p.release.notified().await;
            ctx.progress(3.0, None, None).await;
            "steps done"
        },
    )
    .tool(
        no_args("hang_quietly"),
        |State(p): State<Probe>| async move {
            let _flag = DropFlag(p);
            std::future::pending::<&'static str>().await
        },
    )
    .tool(
        no_args("wait_release"),
        |State(p): State<Probe>| async move {
            p.release.notified().await;
            "released"
        },
    )
    .tool(
        ToolSpec::new("region")
            .description("x-mcp-header mirroring")
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "region": { "type": "string", "x-mcp-header": "Region" },
                    "count": { "type": "integer", "x-mcp-header": "Count" }
                },
                "required": ["region"]
            })),
        |Args(v): Args<Value>| async move {
            format!(
                "region={}",
                v.get("region").and_then(Value::as_str).unwrap_or_default()
            )
        },
    )
    .build()
}

/// An [`EventStore`] that tells the test what has been stored: `(stream, seq)` pairs.
struct RecordingStore {
    inner: MemoryEventStore,
    stored: watch::Sender<Vec<(u64, u64)>>,
}

impl EventStore for RecordingStore {
    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        seq: u64,
        message: Bytes,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.inner.append(session, stream, seq, message).await?;
            self.stored.send_modify(|v| v.push((stream, seq)));
            Ok(())
        })
    }

    fn replay_after<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        after: u64,
    ) -> StoreFuture<'a, Result<Vec<StoredEvent>, StoreError>> {
        self.inner.replay_after(session, stream, after)
    }

    fn remove_session<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        self.inner.remove_session(session)
    }
}

/// A server whose event store reports what it stored.
async fn start_recording() -> (Running, watch::Receiver<Vec<(u64, u64)>>) {
    let (tx, rx) = watch::channel(Vec::new());
    let mut config = HttpConfig::default();
    config.event_store = Arc::new(RecordingStore {
        inner: MemoryEventStore::default(),
        stored: tx,
    });
    (start_with(ServerConfig::default(), config).await, rx)
}

async fn stored(rx: &mut watch::Receiver<Vec<(u64, u64)>>, stream: u64, seq: u64) {
    within(rx.wait_for(|v| v.contains(&(stream, seq))))
        .await
        .unwrap();
}

struct Running {
    addr: SocketAddr,
    server: Server,
    http: StreamableHttp,
    probe: Probe,
    task: JoinHandle<std::io::Result<()>>,
}

async fn start_with(server_config: ServerConfig, config: HttpConfig) -> Running {
    let probe = Probe::default();
    let server = test_server(server_config, probe.clone());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let http = StreamableHttp::with_config(server.clone(), config);
    let task = tokio::spawn(http.clone().serve(listener));
    Running {
        addr,
        server,
        http,
        probe,
        task,
    }
}

async fn start() -> Running {
    start_with(ServerConfig::default(), HttpConfig::default()).await
}

// ---------------------------------------------------------------------------------------------
// A raw HTTP/1.1 client.

struct Resp {
    status: StatusCode,
    headers: HeaderMap,
    body: Incoming,
    conn: JoinHandle<()>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn content_type(&self) -> &str {
        self.header("content-type").unwrap_or("")
    }

    async fn bytes(self) -> Bytes {
        within(self.body.collect()).await.unwrap().to_bytes()
    }

    async fn json(self) -> Value {
        let ct = self.content_type().to_owned();
        let bytes = self.bytes().await;
        assert!(
            ct.starts_with("application/json"),
            "expected JSON, got {ct:?}: {}",
            String::from_utf8_lossy(&bytes)
        );
        serde_json::from_slice(&bytes).unwrap()
    }

    fn sse(self) -> Sse {
        assert_eq!(self.status, StatusCode::OK);
        assert_eq!(self.content_type(), "text/event-stream");
        Sse {
            body: Some(self.body),
            buf: Vec::new(),
            conn: self.conn,
        }
    }
}

/// One SSE block as it arrived.
#[derive(Debug, Default, Clone)]
struct Block {
    id: Option<String>,
    data: Option<String>,
    retry: Option<u64>,
    comment: bool,
}

impl Block {
    fn json(&self) -> Value {
        serde_json::from_str(self.data.as_deref().unwrap_or("null")).unwrap()
    }
}

struct Sse {
    body: Option<Incoming>,
    buf: Vec<u8>,
    conn: JoinHandle<()>,
}

impl Sse {
    /// The next block, or `None` at the end of the stream.
    async fn block(&mut self) -> Option<Block> {
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let raw: Vec<u8> = self.buf.drain(..end + 2).collect();
                let text = String::from_utf8(raw).unwrap();
                let mut b = Block::default();
                for line in text.lines() {
                    if line.starts_with(':') {
                        b.comment = true;
                    } else if let Some(v) = line.strip_prefix("id: ") {
                        b.id = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("retry: ") {
                        b.retry = Some(v.parse().unwrap());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        let v = v.strip_prefix(' ').unwrap_or(v);
                        b.data = Some(match b.data.take() {
                            Some(d) => format!("{d}\n{v}"),
                            None => v.to_owned(),
                        });
                    }
                }
                return Some(b);
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
                    assert!(
                        self.buf.is_empty(),
                        "stream ended mid-event: {:?}",
                        String::from_utf8_lossy(&self.buf)
                    );
                    return None;
                }
            }
        }
    }

    /// The next block carrying a message (skipping keep-alives and bare `retry:` fields).
    async fn message(&mut self) -> Block {
        loop {
            let b = self
                .block()
                .await
                .expect("stream ended before the next message");
            if b.data.as_deref().is_some_and(|d| !d.is_empty()) {
                return b;
            }
        }
    }

    /// Asserts the stream ends (after any keep-alives).
    async fn end(&mut self) {
        while let Some(b) = self.block().await {
            assert!(
                b.comment && b.data.is_none(),
                "expected the end of the stream, got {b:?}"
            );
        }
    }

    /// Closes the connection from the client side.
    fn disconnect(mut self) {
        self.body = None;
        self.conn.abort();
    }
}

async fn send(
    addr: SocketAddr,
    method: Method,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> Resp {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    let conn = tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut req = Request::builder()
        .method(method)
        .uri("/mcp")
        .header("host", format!("127.0.0.1:{}", addr.port()));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .unwrap();
    let res = within(sender.send_request(req)).await.unwrap();
    let (parts, body) = res.into_parts();
    Resp {
        status: parts.status,
        headers: parts.headers,
        body,
        conn,
    }
}

const POST_HEADERS: [(&str, &str); 2] = [
    ("accept", "application/json, text/event-stream"),
    ("content-type", "application/json"),
];

/// A POST with the usual `Accept` and `Content-Type` plus `extra` headers.
async fn post(addr: SocketAddr, extra: &[(&str, &str)], body: &Value) -> Resp {
    let headers: Vec<(&str, &str)> = POST_HEADERS
        .iter()
        .copied()
        .chain(extra.iter().copied())
        .collect();
    send(
        addr,
        Method::POST,
        &headers,
        Some(serde_json::to_vec(body).unwrap()),
    )
    .await
}

fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

// ---------------------------------------------------------------------------------------------
// Legacy (2025-11-25) helpers.

/// `initialize` + `notifications/initialized`; the session id.
async fn init(addr: SocketAddr) -> String {
    let params = json!({ "protocolVersion": LEGACY, "capabilities": { "elicitation": {} }, "clientInfo": { "name": "t", "version": "1" } });
    let res = post(addr, &[], &rpc(0, "initialize", params)).await;
    assert_eq!(res.status, StatusCode::OK);
    let sid = res
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let body = res.json().await;
    assert_eq!(body["result"]["protocolVersion"], LEGACY);
    let res = post(
        addr,
        &[("mcp-session-id", &sid), ("mcp-protocol-version", LEGACY)],
        &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    )
    .await;
    assert_eq!(res.status, StatusCode::ACCEPTED);
    assert!(res.bytes().await.is_empty());
    sid
}

async fn legacy_post(addr: SocketAddr, sid: &str, body: &Value) -> Resp {
    post(
        addr,
        &[("mcp-session-id", sid), ("mcp-protocol-version", LEGACY)],
        body,
    )
    .await
}

fn call(id: i64, tool: &str, progress: bool) -> Value {
    let mut params = json!({ "name": tool, "arguments": {} });
    if progress {
        params["_meta"] = json!({ "progressToken": format!("p{id}") });
    }
    rpc(id, "tools/call", params)
}

async fn open_get(addr: SocketAddr, sid: &str, last_event_id: Option<&str>) -> Resp {
    let mut headers = vec![
        ("accept", "text/event-stream"),
        ("mcp-session-id", sid),
        ("mcp-protocol-version", LEGACY),
    ];
    if let Some(id) = last_event_id {
        headers.push(("last-event-id", id));
    }
    send(addr, Method::GET, &headers, None).await
}

// ---------------------------------------------------------------------------------------------
// Modern (2026-07-28) helpers.

fn meta() -> Value {
    json!({ "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} })
}

/// A modern request body (`_meta` added to `params`).
fn modern_rpc(id: i64, method: &str, mut params: Value) -> Value {
    let mut m = meta();
    if let Some(extra) = params.get("_meta").and_then(Value::as_object) {
        for (k, v) in extra {
            m[k] = v.clone();
        }
    }
    params["_meta"] = m;
    rpc(id, method, params)
}

/// POSTs a modern request with the headers a conforming client sends, plus `extra`.
async fn modern_post(addr: SocketAddr, body: &Value, extra: &[(&str, &str)]) -> Resp {
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    let name = body["params"]["name"]
        .as_str()
        .or(body["params"]["uri"].as_str())
        .map(str::to_owned);
    let mut headers: Vec<(&str, &str)> =
        vec![("mcp-protocol-version", MODERN), ("mcp-method", &method)];
    if let Some(n) = &name {
        headers.push(("mcp-name", n));
    }
    headers.extend_from_slice(extra);
    post(addr, &headers, body).await
}

/// POSTs with exactly these MCP headers (besides Accept and Content-Type).
async fn raw_post(addr: SocketAddr, body: &Value, headers: &[(&str, &str)]) -> Resp {
    post(addr, headers, body).await
}

/// A table case: a label, a request body and the headers to send with it.
type Case<'a, L> = (L, Value, Vec<(&'a str, &'a str)>);

fn assert_error(body: &Value, code: i64, id: i64) {
    assert_eq!(body["error"]["code"], code, "unexpected body {body}");
    assert_eq!(body["id"], id, "the error must keep the request id: {body}");
}

// =============================================================================================
// Legacy: sessions.

#[tokio::test]
async fn session_lifecycle_initialize_use_delete_404() {
    let s = start().await;
    let sid = init(s.addr).await;
    assert!(sid.len() >= 32);
    assert!(
        sid.bytes().all(|b| (0x21..=0x7e).contains(&b)),
        "session ids are visible ASCII"
    );
    assert_eq!(s.http.session_count(), 1);

    let res = legacy_post(s.addr, &sid, &rpc(1, "tools/list", json!({}))).await;
    assert_eq!(res.status, StatusCode::OK);
    assert!(
        res.header("mcp-session-id").is_none(),
        "only the initialize response carries the id"
    );
    let body = res.json().await;
    assert!(body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "plain"));

    let del = send(s.addr, Method::DELETE, &[("mcp-session-id", &sid)], None).await;
    assert_eq!(del.status, StatusCode::NO_CONTENT);
    assert_eq!(s.http.session_count(), 0);

    let after = legacy_post(s.addr, &sid, &rpc(2, "tools/list", json!({}))).await;
    assert_eq!(after.status, StatusCode::NOT_FOUND);
    let again = send(s.addr, Method::DELETE, &[("mcp-session-id", &sid)], None).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    let get = open_get(s.addr, &sid, None).await;
    assert_eq!(get.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn requests_without_a_session_are_400_and_unknown_sessions_404() {
    let s = start().await;
    let res = post(s.addr, &[], &rpc(1, "tools/list", json!({}))).await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    let body = res.json().await;
    assert_eq!(body["error"]["code"], -32600);

    let res = post(
        s.addr,
        &[("mcp-session-id", "no-such-session")],
        &rpc(1, "tools/list", json!({})),
    )
    .await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);

    let res = post(
        s.addr,
        &[],
        &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    )
    .await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);

    // An unknown protocol version header is refused.
    let res = post(
        s.addr,
        &[("mcp-protocol-version", "1999-01-01")],
        &rpc(1, "tools/list", json!({})),
    )
    .await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn idle_sessions_expire() {
    let mut config = HttpConfig::default();
    config.session_idle_timeout = Duration::from_millis(100);
    let s = start_with(ServerConfig::default(), config).await;
    let sid = init(s.addr).await;
    assert_eq!(s.http.session_count(), 1);
    within(async {
        while s.http.session_count() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let res = legacy_post(s.addr, &sid, &rpc(1, "tools/list", json!({}))).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_open_stream_keeps_a_session_alive() {
    let mut config = HttpConfig::default();
    config.session_idle_timeout = Duration::from_millis(100);
    let s = start_with(ServerConfig::default(), config).await;
    let sid = init(s.addr).await;
    let mut get = open_get(s.addr, &sid, None).await.sse();
    get.block().await.unwrap(); // priming
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        s.http.session_count(),
        1,
        "a session with an open GET stream is not idle"
    );
    get.disconnect();
}

#[tokio::test]
async fn session_limit_answers_503_when_no_session_is_idle() {
    let mut config = HttpConfig::default();
    config.max_sessions = 1;
    let s = start_with(ServerConfig::default(), config).await;
    let sid = init(s.addr).await;
    // An open GET stream keeps the only session busy: it cannot make room.
    let mut get = open_get(s.addr, &sid, None).await.sse();
    get.block().await.unwrap(); // priming
    let params = json!({ "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } });
    let res = post(s.addr, &[], &rpc(0, "initialize", params.clone())).await;
    assert_eq!(res.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(res.header("mcp-session-id").is_none());
    // Idle again, it gives way to a new session (issue 16, defect 3).
    get.disconnect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let res = post(s.addr, &[], &rpc(0, "initialize", params)).await;
    assert_eq!(res.status, StatusCode::OK);
    assert!(res.header("mcp-session-id").is_some());
    assert_eq!(s.http.session_count(), 1);
}

// =============================================================================================
// Safety: Host / Origin, media types, bad input, limits.

#[tokio::test]
async fn host_and_origin_outside_the_allow_list_are_403() {
    let s = start().await;
    let init_body = rpc(
        0,
        "initialize",
        json!({ "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }),
    );
    let bytes = serde_json::to_vec(&init_body).unwrap();
    let res = send_with_host(s.addr, "evil.example.com", &POST_HEADERS, &bytes).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    let res = send_with_host(
        s.addr,
        &format!("localhost:{}", s.addr.port()),
        &POST_HEADERS,
        &bytes,
    )
    .await;
    assert_eq!(res.status, StatusCode::OK);

    let res = post(
        s.addr,
        &[("origin", "https://evil.example.com")],
        &init_body,
    )
    .await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    let body = res.json().await;
    assert_eq!(body["id"], Value::Null);
    let res = post(s.addr, &[("origin", "http://localhost:5173")], &init_body).await;
    assert_eq!(res.status, StatusCode::OK);
    // GET and DELETE are guarded too.
    let res = send_with_host(
        s.addr,
        "evil.example.com",
        &[("accept", "text/event-stream")],
        b"",
    )
    .await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
}

async fn send_with_host(
    addr: SocketAddr,
    host: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Resp {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    let conn = tokio::spawn(async move {
        let _ = conn.await;
    });
    let method = if body.is_empty() {
        Method::GET
    } else {
        Method::POST
    };
    let mut req = Request::builder()
        .method(method)
        .uri("/mcp")
        .header("host", host);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let res =
        within(sender.send_request(req.body(Full::new(Bytes::copy_from_slice(body))).unwrap()))
            .await
            .unwrap();
    let (parts, body) = res.into_parts();
    Resp {
        status: parts.status,
        headers: parts.headers,
        body,
        conn,
    }
}

#[tokio::test]
async fn media_types_are_negotiated() {
    let s = start().await;
    let body = serde_json::to_vec(&rpc(1, "tools/list", json!({}))).unwrap();
    let res = send(
        s.addr,
        Method::POST,
        &[
            ("accept", "application/json"),
            ("content-type", "application/json"),
        ],
        Some(body.clone()),
    )
    .await;
    assert_eq!(res.status, StatusCode::NOT_ACCEPTABLE);
    let res = send(
        s.addr,
        Method::POST,
        &[("content-type", "application/json")],
        Some(body.clone()),
    )
    .await;
    assert_eq!(res.status, StatusCode::NOT_ACCEPTABLE);
    let res = send(
        s.addr,
        Method::POST,
        &[("accept", "*/*"), ("content-type", "text/plain")],
        Some(body),
    )
    .await;
    assert_eq!(res.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let res = send(s.addr, Method::PUT, &[], None).await;
    assert_eq!(res.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(res.header("allow"), Some("GET, POST, DELETE"));
}

#[tokio::test]
async fn malformed_json_and_batches_are_400_with_a_jsonrpc_error() {
    let s = start().await;
    let res = send(
        s.addr,
        Method::POST,
        &POST_HEADERS,
        Some(b"{\"jsonrpc\": \"2.0\", \"id\": 1,".to_vec()),
    )
    .await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    let body = res.json().await;
    assert_eq!(body["error"]["code"], -32700);
    assert_eq!(body["id"], Value::Null);

    let batch = json!([
        rpc(1, "tools/list", json!({})),
        rpc(2, "tools/list", json!({}))
    ]);
    let res = post(s.addr, &[], &batch).await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    assert_eq!(res.json().await["error"]["code"], -32600);

    let res = send(
        s.addr,
        Method::POST,
        &POST_HEADERS,
        Some(b"\xff\xfe".to_vec()),
    )
    .await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    assert_eq!(res.json().await["error"]["code"], -32700);

    // The server is still healthy.
    init(s.addr).await;
}

#[tokio::test]
async fn bodies_over_the_limit_are_413() {
    let mut server_config = ServerConfig::default();
    server_config.max_message_size = 1024;
    let s = start_with(server_config, HttpConfig::default()).await;
    let big = rpc(1, "tools/list", json!({ "padding": "x".repeat(4096) }));
    let res = post(s.addr, &[], &big).await;
    assert_eq!(res.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(res.json().await["error"]["code"], -32600);
    // Just under the limit is fine.
    init(s.addr).await;
}

#[tokio::test]
async fn concurrent_request_limit_answers_503() {
    let mut config = HttpConfig::default();
    config.max_concurrent_requests = 1;
    let s = start_with(ServerConfig::default(), config).await;
    let blocked = tokio::spawn({
        let addr = s.addr;
        async move {
            modern_post(
                addr,
                &modern_rpc(
                    1,
                    "tools/call",
                    json!({ "name": "wait_release", "arguments": {} }),
                ),
                &[],
            )
            .await
            .json()
            .await
        }
    });
    // Wait until the first request holds the only slot.
    let second = within(async {
        loop {
            let res = modern_post(s.addr, &modern_rpc(2, "tools/list", json!({})), &[]).await;
            if res.status == StatusCode::SERVICE_UNAVAILABLE {
                return res;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_eq!(second.header("retry-after"), Some("1"));
    s.probe.release.notify_one();
    let first = within(blocked).await.unwrap();
    assert_eq!(text(&first["result"]), "released");
    // The slot is free again.
    let res = modern_post(s.addr, &modern_rpc(3, "tools/list", json!({})), &[]).await;
    assert_eq!(res.status, StatusCode::OK);
}

#[tokio::test]
async fn a_waiting_legacy_request_times_out_with_an_error() {
    let mut config = HttpConfig::default();
    config.request_timeout = Some(Duration::from_millis(100));
    let s = start_with(ServerConfig::default(), config).await;
    let sid = init(s.addr).await;
    // It waits, so it leaves the POST for a task of its own; the timeout still applies there.
    let res = legacy_post(s.addr, &sid, &call(7, "hang_quietly", false)).await;
    assert_eq!(res.status, StatusCode::OK);
    let body = res.json().await;
    assert_error(&body, -32603, 7);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("timed out after 100 ms"));
    // One answered at once is unaffected.
    let res = legacy_post(s.addr, &sid, &call(8, "plain", false)).await;
    assert_eq!(text(&res.json().await["result"]), "plain");
}

#[tokio::test]
async fn requests_time_out_with_an_error_and_the_handler_is_cancelled() {
    let mut config = HttpConfig::default();
    config.request_timeout = Some(Duration::from_millis(100));
    let s = start_with(ServerConfig::default(), config).await;
    let res = modern_post(
        s.addr,
        &modern_rpc(
            7,
            "tools/call",
            json!({ "name": "hang_quietly", "arguments": {} }),
        ),
        &[],
    )
    .await;
    assert_eq!(res.status, StatusCode::OK);
    let body = res.json().await;
    assert_error(&body, -32603, 7);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("timed out"));
    assert!(
        s.probe.dropped.load(Ordering::SeqCst),
        "the timed-out handler was torn down"
    );
}

// =============================================================================================
// Legacy: responses and streams.

#[tokio::test]
async fn json_when_the_handler_streams_nothing_and_sse_when_configured() {
    let s = start().await;
    let sid = init(s.addr).await;
    let res = legacy_post(s.addr, &sid, &call(1, "plain", false)).await;
    assert_eq!(res.status, StatusCode::OK);
    let body = res.json().await;
    assert_eq!(text(&body["result"]), "plain");

    let mut config = HttpConfig::default();
    config.response_mode = ResponseMode::AlwaysSse;
    let s = start_with(ServerConfig::default(), config).await;
    let sid = init(s.addr).await;
    let mut sse = legacy_post(s.addr, &sid, &call(1, "plain", false))
        .await
        .sse();
    let priming = sse.block().await.unwrap();
    assert_eq!(priming.id.as_deref(), Some("1-0"));
    let reply = sse.message().await;
    assert_eq!(reply.id.as_deref(), Some("1-1"));
    assert_eq!(text(&reply.json()["result"]), "plain");
    sse.end().await;
}

/// 2026-07-28 in `AlwaysSse`: a handler that finished at its first poll still answers on a
/// stream (the reply as its one event), and one that streams progress first sends it before.
#[tokio::test]
async fn modern_requests_answer_on_a_stream_when_configured_even_when_done_at_once() {
    let mut config = HttpConfig::default();
    config.response_mode = ResponseMode::AlwaysSse;
    let s = start_with(ServerConfig::default(), config).await;
    let body = modern_rpc(1, "tools/call", json!({ "name": "plain" }));
    let mut sse = modern_post(s.addr, &body, &[]).await.sse();
    let reply = sse.message().await;
    assert_eq!(reply.json()["id"], 1);
    assert_eq!(text(&reply.json()["result"]), "plain");
    sse.end().await;

    let body = modern_rpc(
        2,
        "tools/call",
        json!({ "name": "progress", "_meta": { "progressToken": "p" } }),
    );
    let mut sse = modern_post(s.addr, &body, &[]).await.sse();
    let first = sse.message().await.json();
    assert_eq!(first["method"], "notifications/progress", "{first}");
    let mut last = first;
    while last.get("result").is_none() {
        last = sse.message().await.json();
    }
    assert_eq!(last["id"], 2);
    sse.end().await;
}

#[tokio::test]
async fn progress_streams_sse_with_a_priming_event_and_unique_ids() {
    let s = start().await;
    let sid = init(s.addr).await;
    let res = legacy_post(s.addr, &sid, &call(1, "progress", true)).await;
    assert_eq!(res.header("x-accel-buffering"), Some("no"));
    let mut sse = res.sse();
    let priming = sse.block().await.unwrap();
    assert_eq!(priming.id.as_deref(), Some("1-0"));
    assert_eq!(priming.data.as_deref(), Some(""));
    assert_eq!(priming.retry, Some(1000));
    for i in 1..=3 {
        let b = sse.message().await;
        assert_eq!(b.id, Some(format!("1-{i}")));
        let m = b.json();
        assert_eq!(m["method"], "notifications/progress");
        assert_eq!(m["params"]["progress"], f64::from(i));
        assert_eq!(m["params"]["progressToken"], "p1");
    }
    let reply = sse.message().await;
    assert_eq!(reply.id.as_deref(), Some("1-4"));
    assert_eq!(reply.json()["id"], 1);
    assert_eq!(text(&reply.json()["result"]), "done");
    sse.end().await;

    // The next stream of the session has its own number: ids stay unique in the session.
    let mut sse = legacy_post(s.addr, &sid, &call(2, "progress", true))
        .await
        .sse();
    assert_eq!(sse.block().await.unwrap().id.as_deref(), Some("2-0"));
}

#[tokio::test]
async fn get_stream_receives_list_changed_after_add_tool() {
    let s = start().await;
    let sid = init(s.addr).await;
    let mut get = open_get(s.addr, &sid, None).await.sse();
    let priming = get.block().await.unwrap();
    assert_eq!(priming.id.as_deref(), Some("0-0"));
    s.server
        .add_tool(no_args("added_later"), || async { "new" });
    let b = get.message().await;
    assert_eq!(b.id.as_deref(), Some("0-1"));
    assert_eq!(b.json()["method"], "notifications/tools/list_changed");

    // Without a session there is no GET stream; with the modern header neither.
    let res = send(
        s.addr,
        Method::GET,
        &[("accept", "text/event-stream")],
        None,
    )
    .await;
    assert_eq!(res.status, StatusCode::METHOD_NOT_ALLOWED);
    let res = send(
        s.addr,
        Method::GET,
        &[
            ("accept", "text/event-stream"),
            ("mcp-protocol-version", MODERN),
        ],
        None,
    )
    .await;
    assert_eq!(res.status, StatusCode::METHOD_NOT_ALLOWED);

    // DELETE ends the session and its GET stream.
    let del = send(s.addr, Method::DELETE, &[("mcp-session-id", &sid)], None).await;
    assert_eq!(del.status, StatusCode::NO_CONTENT);
    within(get.end()).await;
}

#[tokio::test]
async fn a_message_goes_to_one_stream_only() {
    let s = start().await;
    let sid = init(s.addr).await;
    let mut get = open_get(s.addr, &sid, None).await.sse();
    get.block().await.unwrap();
    // Progress of a request goes on its POST stream, never on the GET stream.
    let mut post_stream = legacy_post(s.addr, &sid, &call(1, "progress", true))
        .await
        .sse();
    post_stream.block().await.unwrap();
    for _ in 0..4 {
        post_stream.message().await;
    }
    s.server.add_tool(no_args("marker"), || async { "m" });
    let first_on_get = get.message().await;
    assert_eq!(
        first_on_get.json()["method"],
        "notifications/tools/list_changed",
        "no progress leaked onto GET"
    );
    assert_eq!(first_on_get.id.as_deref(), Some("0-1"));
}

#[tokio::test]
async fn elicitation_travels_on_the_post_stream_and_the_answer_on_a_post() {
    let s = start().await;
    let sid = init(s.addr).await;
    let mut sse = legacy_post(s.addr, &sid, &call(1, "ask", false))
        .await
        .sse();
    sse.block().await.unwrap(); // priming
    let request = sse.message().await.json();
    assert_eq!(request["method"], "elicitation/create");
    let answer = json!({ "jsonrpc": "2.0", "id": request["id"], "result": { "action": "accept", "content": { "name": "Ada" } } });
    let res = legacy_post(s.addr, &sid, &answer).await;
    assert_eq!(res.status, StatusCode::ACCEPTED);
    let reply = sse.message().await.json();
    assert_eq!(text(&reply["result"]), "Hello Ada");
    sse.end().await;
}

#[tokio::test]
async fn cancelled_notification_cancels_a_legacy_request() {
    let s = start().await;
    let sid = init(s.addr).await;
    let mut sse = legacy_post(s.addr, &sid, &call(5, "hang", true))
        .await
        .sse();
    sse.block().await.unwrap();
    sse.message().await; // progress 0: the handler runs
    let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 5 } });
    assert_eq!(
        legacy_post(s.addr, &sid, &cancel).await.status,
        StatusCode::ACCEPTED
    );
    within(s.probe.dropped_notify.notified()).await;
    // No response follows a cancellation; the stream just ends.
    sse.end().await;
}

#[tokio::test]
async fn resume_with_last_event_id_after_a_dropped_connection() {
    let (s, mut store) = start_recording().await;
    let sid = init(s.addr).await;
    let mut sse = legacy_post(s.addr, &sid, &call(1, "steps", true))
        .await
        .sse();
    assert_eq!(sse.block().await.unwrap().id.as_deref(), Some("1-0"));
    let first = sse.message().await;
    assert_eq!(first.id.as_deref(), Some("1-1"));
    // The connection drops; a disconnect is not a cancellation in this era.
    sse.disconnect();
    // The rest of the stream is produced while nobody is connected (stored), then replayed.
    s.probe.release.notify_one();
    stored(&mut store, 1, 2).await;
    s.probe.release.notify_one();
    stored(&mut store, 1, 4).await;
    assert!(!s.probe.dropped.load(Ordering::SeqCst));
    let mut resumed = open_get(s.addr, &sid, Some("1-1")).await.sse();
    let mut ids = Vec::new();
    let mut messages = Vec::new();
    while let Some(b) = resumed.block().await {
        if let Some(id) = b.id.clone() {
            ids.push(id);
            messages.push(b.json());
        }
    }
    assert_eq!(
        ids,
        ["1-2", "1-3", "1-4"],
        "every event after 1-1, once, in order"
    );
    assert_eq!(messages[0]["params"]["progress"], 2.0);
    assert_eq!(messages[1]["params"]["progress"], 3.0);
    assert_eq!(text(&messages[2]["result"]), "steps done");

    // Resuming from the start of the stream replays it all, and only that stream.
    let mut again = open_get(s.addr, &sid, Some("1-0")).await.sse();
    let mut ids = Vec::new();
    while let Some(b) = again.block().await {
        ids.extend(b.id);
    }
    assert_eq!(ids, ["1-1", "1-2", "1-3", "1-4"]);

    let bad = open_get(s.addr, &sid, Some("garbage")).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn resume_attaches_to_a_live_stream_without_loss_or_duplicates() {
    let (s, mut store) = start_recording().await;
    let sid = init(s.addr).await;
    let mut sse = legacy_post(s.addr, &sid, &call(1, "steps", true))
        .await
        .sse();
    sse.block().await.unwrap();
    assert_eq!(sse.message().await.id.as_deref(), Some("1-1"));
    sse.disconnect();
    // One event is produced while disconnected; the handler then waits again, so the stream is
    // still live when the client comes back: 1-2 is replayed, the rest arrives live.
    s.probe.release.notify_one();
    stored(&mut store, 1, 2).await;
    let mut resumed = open_get(s.addr, &sid, Some("1-1")).await.sse();
    let retry = resumed.block().await.unwrap();
    assert_eq!(retry.retry, Some(1000));
    let replayed = resumed.message().await;
    assert_eq!(replayed.id.as_deref(), Some("1-2"));
    assert_eq!(replayed.json()["params"]["progress"], 2.0);
    s.probe.release.notify_one();
    let ids: Vec<String> = [resumed.message().await, resumed.message().await]
        .into_iter()
        .map(|b| b.id.unwrap())
        .collect();
    assert_eq!(ids, ["1-3", "1-4"]);
    resumed.end().await;
}

#[tokio::test]
async fn close_sse_stream_lets_the_client_poll_for_the_result() {
    let s = start().await;
    let sid = init(s.addr).await;
    let mut sse = legacy_post(s.addr, &sid, &call(1, "poll", true))
        .await
        .sse();
    let priming = sse.block().await.unwrap();
    assert_eq!(
        (priming.id.as_deref(), priming.retry),
        (Some("1-0"), Some(1000))
    );
    let progress = sse.message().await;
    assert_eq!(progress.id.as_deref(), Some("1-1"));
    // The server ends the connection with a retry hint, not the stream.
    let hint = sse.block().await.unwrap();
    assert_eq!(hint.retry, Some(1000));
    assert!(hint.data.is_none());
    sse.end().await;

    let mut resumed = open_get(s.addr, &sid, Some("1-1")).await.sse();
    s.probe.release.notify_one();
    let p2 = resumed.message().await;
    assert_eq!(p2.id.as_deref(), Some("1-2"));
    assert_eq!(p2.json()["params"]["progress"], 2.0);
    let reply = resumed.message().await;
    assert_eq!(reply.id.as_deref(), Some("1-3"));
    assert_eq!(text(&reply.json()["result"]), "polled");
    resumed.end().await;
}

// =============================================================================================
// Modern (2026-07-28).

#[tokio::test]
async fn modern_requests_are_stateless_json() {
    let s = start().await;
    let res = modern_post(
        s.addr,
        &modern_rpc(1, "tools/call", json!({ "name": "plain", "arguments": {} })),
        &[("mcp-session-id", "ignored")],
    )
    .await;
    assert_eq!(res.status, StatusCode::OK);
    assert!(
        res.header("mcp-session-id").is_none(),
        "modern responses never carry a session id"
    );
    let body = res.json().await;
    assert_eq!(body["result"]["resultType"], "complete");
    assert_eq!(text(&body["result"]), "plain");
    assert_eq!(s.http.session_count(), 0);

    let res = modern_post(s.addr, &modern_rpc(2, "server/discover", json!({})), &[]).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.json().await["result"]["supportedVersions"][0], MODERN);

    // A notification is accepted and ignored.
    let n = json!({ "jsonrpc": "2.0", "method": "notifications/whatever", "params": { "_meta": meta() } });
    let res = modern_post(s.addr, &n, &[]).await;
    assert_eq!(res.status, StatusCode::ACCEPTED);
}

#[tokio::test]
async fn modern_get_and_delete_are_405() {
    let s = start().await;
    let res = send(
        s.addr,
        Method::GET,
        &[
            ("accept", "text/event-stream"),
            ("mcp-protocol-version", MODERN),
        ],
        None,
    )
    .await;
    assert_eq!(res.status, StatusCode::METHOD_NOT_ALLOWED);
    let res = send(
        s.addr,
        Method::DELETE,
        &[("mcp-protocol-version", MODERN), ("mcp-session-id", "x")],
        None,
    )
    .await;
    assert_eq!(res.status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn modern_unknown_and_removed_methods_are_404_with_32601() {
    let s = start().await;
    for (id, method) in [
        (1, "no/such/method"),
        (2, "initialize"),
        (3, "ping"),
        (4, "logging/setLevel"),
    ] {
        let res = modern_post(s.addr, &modern_rpc(id, method, json!({})), &[]).await;
        assert_eq!(res.status, StatusCode::NOT_FOUND, "{method}");
        assert_error(&res.json().await, -32601, id);
    }
}

#[tokio::test]
async fn modern_meta_and_version_errors() {
    let s = start().await;
    // No _meta at all (the header says modern): -32602, 400.
    let res = raw_post(
        s.addr,
        &rpc(1, "tools/list", json!({})),
        &[
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/list"),
        ],
    )
    .await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    assert_error(&res.json().await, -32602, 1);

    // Missing clientCapabilities: -32602.
    let body = rpc(
        2,
        "tools/list",
        json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": MODERN } }),
    );
    let res = raw_post(
        s.addr,
        &body,
        &[
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/list"),
        ],
    )
    .await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    assert_error(&res.json().await, -32602, 2);

    // A version nobody speaks, in the header and _meta: -32022 with the supported list.
    let mut body = modern_rpc(3, "tools/list", json!({}));
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let res = raw_post(
        s.addr,
        &body,
        &[
            ("mcp-protocol-version", "v999.0.0"),
            ("mcp-method", "tools/list"),
        ],
    )
    .await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    let err = res.json().await;
    assert_error(&err, -32022, 3);
    assert_eq!(err["error"]["data"]["requested"], "v999.0.0");
    assert!(err["error"]["data"]["supported"]
        .as_array()
        .unwrap()
        .contains(&json!(MODERN)));
}

#[tokio::test]
async fn modern_header_mismatches_are_400_with_32020() {
    let s = start().await;
    let list = modern_rpc(10, "tools/list", json!({}));
    let call_plain = modern_rpc(
        11,
        "tools/call",
        json!({ "name": "plain", "arguments": {} }),
    );
    let cases: Vec<Case<'_, &str>> = vec![
        (
            "Mcp-Method differs",
            list.clone(),
            vec![
                ("mcp-protocol-version", MODERN),
                ("mcp-method", "prompts/list"),
            ],
        ),
        (
            "Mcp-Method missing",
            list.clone(),
            vec![("mcp-protocol-version", MODERN)],
        ),
        (
            "Mcp-Method case differs",
            list.clone(),
            vec![
                ("mcp-protocol-version", MODERN),
                ("mcp-method", "TOOLS/LIST"),
            ],
        ),
        (
            "MCP-Protocol-Version missing",
            list.clone(),
            vec![("mcp-method", "tools/list")],
        ),
        (
            "MCP-Protocol-Version differs from _meta",
            list.clone(),
            vec![
                ("mcp-protocol-version", LEGACY),
                ("mcp-method", "tools/list"),
            ],
        ),
        (
            "Mcp-Name differs",
            call_plain.clone(),
            vec![
                ("mcp-protocol-version", MODERN),
                ("mcp-method", "tools/call"),
                ("mcp-name", "wrong"),
            ],
        ),
        (
            "Mcp-Name missing",
            call_plain.clone(),
            vec![
                ("mcp-protocol-version", MODERN),
                ("mcp-method", "tools/call"),
            ],
        ),
    ];
    for (what, body, headers) in cases {
        let res = raw_post(s.addr, &body, &headers).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{what}");
        let id = body["id"].as_i64().unwrap();
        assert_error(&res.json().await, -32020, id);
    }
    // Whitespace around a value is not a mismatch, nor is the case of a header name.
    let res = raw_post(
        s.addr,
        &call_plain,
        &[
            ("MCP-PROTOCOL-VERSION", MODERN),
            ("Mcp-Method", "tools/call"),
            ("mcp-name", "  plain  "),
        ],
    )
    .await;
    assert_eq!(res.status, StatusCode::OK);
    // The body's _meta makes a request modern even with a legacy header: then they disagree.
    let res = raw_post(
        s.addr,
        &call_plain,
        &[
            ("mcp-protocol-version", LEGACY),
            ("mcp-method", "tools/call"),
            ("mcp-name", "plain"),
        ],
    )
    .await;
    assert_error(&res.json().await, -32020, 11);
}

#[tokio::test]
async fn modern_mcp_name_carries_uris_and_base64() {
    let s = start().await;
    // resources/read: Mcp-Name is the URI (the resource does not exist: a 200 error after the check).
    let read = modern_rpc(1, "resources/read", json!({ "uri": "test://nothing" }));
    let res = raw_post(
        s.addr,
        &read,
        &[
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "resources/read"),
            ("mcp-name", "test://other"),
        ],
    )
    .await;
    assert_error(&res.json().await, -32020, 1);
    let res = raw_post(
        s.addr,
        &read,
        &[
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "resources/read"),
            ("mcp-name", "test://nothing"),
        ],
    )
    .await;
    assert_ne!(res.json().await["error"]["code"], -32020);
    // A base64-encoded name is decoded before the comparison.
    let call_plain = modern_rpc(2, "tools/call", json!({ "name": "plain", "arguments": {} }));
    let res = raw_post(
        s.addr,
        &call_plain,
        &[
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?cGxhaW4=?="),
        ],
    )
    .await;
    assert_eq!(text(&res.json().await["result"]), "plain");
}

#[tokio::test]
async fn modern_mcp_param_headers_are_checked_against_arguments() {
    let s = start().await;
    let call = |id: i64, args: Value| {
        modern_rpc(
            id,
            "tools/call",
            json!({ "name": "region", "arguments": args }),
        )
    };
    let base = [
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "tools/call"),
        ("mcp-name", "region"),
    ];
    let with = |extra: &[(&'static str, &'static str)]| -> Vec<(&'static str, &'static str)> {
        base.iter().copied().chain(extra.iter().copied()).collect()
    };

    let ok = |v: &Value| {
        v["result"]["content"][0]["text"]
            .as_str()
            .map(str::to_owned)
    };
    let res = raw_post(
        s.addr,
        &call(1, json!({ "region": "us-west1" })),
        &with(&[("mcp-param-region", "us-west1")]),
    )
    .await;
    assert_eq!(ok(&res.json().await).as_deref(), Some("region=us-west1"));
    // Base64 of "Hello", as the conformance scenario sends it.
    let res = raw_post(
        s.addr,
        &call(2, json!({ "region": "Hello" })),
        &with(&[("Mcp-Param-Region", "=?base64?SGVsbG8=?=")]),
    )
    .await;
    assert_eq!(ok(&res.json().await).as_deref(), Some("region=Hello"));
    // Without the markers the value is literal.
    let res = raw_post(
        s.addr,
        &call(3, json!({ "region": "SGVsbG8=" })),
        &with(&[("mcp-param-region", "SGVsbG8=")]),
    )
    .await;
    assert_eq!(ok(&res.json().await).as_deref(), Some("region=SGVsbG8="));
    // Integers compare numerically.
    let res = raw_post(
        s.addr,
        &call(4, json!({ "region": "a", "count": 42 })),
        &with(&[("mcp-param-region", "a"), ("mcp-param-count", "42.0")]),
    )
    .await;
    assert_eq!(ok(&res.json().await).as_deref(), Some("region=a"));

    let rejected: Vec<Case<'_, i64>> = vec![
        (
            5,
            json!({ "region": "Hello" }),
            with(&[("mcp-param-region", "=?base64?SGVsbG8?=")]),
        ), // bad padding
        (
            6,
            json!({ "region": "Hello" }),
            with(&[("mcp-param-region", "=?base64?SGVs!!!bG8=?=")]),
        ), // bad characters
        (7, json!({ "region": "us-west1" }), with(&[])), // value in body, no header
        (
            8,
            json!({ "region": "us-west1" }),
            with(&[("mcp-param-region", "eu-north1")]),
        ), // mismatch
        (
            9,
            json!({ "region": "a", "count": 42 }),
            with(&[("mcp-param-region", "a"), ("mcp-param-count", "41")]),
        ),
        (
            10,
            json!({ "region": "a", "count": 42 }),
            with(&[("mcp-param-region", "a")]),
        ), // count header missing
    ];
    for (id, args, headers) in rejected {
        let res = raw_post(s.addr, &call(id, args), &headers).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "case {id}");
        assert_error(&res.json().await, -32020, id);
    }
    // A null or absent value needs no header.
    let res = raw_post(
        s.addr,
        &call(11, json!({ "region": "x", "count": null })),
        &with(&[("mcp-param-region", "x")]),
    )
    .await;
    assert_eq!(res.status, StatusCode::OK);
}

#[tokio::test]
async fn modern_progress_streams_sse_without_event_ids() {
    let s = start().await;
    let body = modern_rpc(
        1,
        "tools/call",
        json!({ "name": "progress", "arguments": {}, "_meta": { "progressToken": "tok" } }),
    );
    let res = modern_post(s.addr, &body, &[]).await;
    assert_eq!(res.header("x-accel-buffering"), Some("no"));
    let mut sse = res.sse();
    for i in 1..=3 {
        let b = sse.message().await;
        assert!(
            b.id.is_none(),
            "modern streams are not resumable: no event ids"
        );
        assert_eq!(b.json()["params"]["progress"], f64::from(i));
        assert_eq!(b.json()["params"]["progressToken"], "tok");
    }
    let reply = sse.message().await.json();
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["result"]["resultType"], "complete");
    sse.end().await;
}

#[tokio::test]
async fn closing_a_modern_stream_cancels_the_handler() {
    let s = start().await;
    let body = modern_rpc(
        1,
        "tools/call",
        json!({ "name": "hang", "arguments": {}, "_meta": { "progressToken": 1 } }),
    );
    let mut sse = modern_post(s.addr, &body, &[]).await.sse();
    sse.message().await; // progress: the handler is running
    assert!(!s.probe.dropped.load(Ordering::SeqCst));
    sse.disconnect();
    within(s.probe.dropped_notify.notified()).await;
    assert!(s.probe.dropped.load(Ordering::SeqCst));
}

#[tokio::test]
async fn a_modern_client_leaving_before_any_byte_cancels_the_handler() {
    let s = start().await;
    let body = serde_json::to_string(&modern_rpc(
        1,
        "tools/call",
        json!({ "name": "hang_quietly", "arguments": {} }),
    ))
    .unwrap();
    let mut tcp = TcpStream::connect(s.addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{}\r\naccept: application/json, text/event-stream\r\ncontent-type: application/json\r\n\
         mcp-protocol-version: {MODERN}\r\nmcp-method: tools/call\r\nmcp-name: hang_quietly\r\ncontent-length: {}\r\n\r\n{body}",
        s.addr.port(),
        body.len()
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    // Nothing comes back while the handler hangs.
    let mut buf = [0u8; 64];
    assert!(
        tokio::time::timeout(Duration::from_millis(100), tcp.read(&mut buf))
            .await
            .is_err()
    );
    drop(tcp);
    within(s.probe.dropped_notify.notified()).await;
}

#[tokio::test]
async fn listen_stream_acknowledges_notifies_and_ends_gracefully_on_shutdown() {
    let mut config = HttpConfig::default();
    config.keep_alive = Some(Duration::from_millis(50));
    let s = start_with(ServerConfig::default(), config).await;
    let body = modern_rpc(
        9,
        "subscriptions/listen",
        json!({ "notifications": { "toolsListChanged": true } }),
    );
    let mut sse = modern_post(s.addr, &body, &[]).await.sse();
    let ack = sse.message().await.json();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["notifications"]["toolsListChanged"], true);
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        9
    );

    // Quiet periods carry keep-alive comments.
    let quiet = sse.block().await.unwrap();
    assert!(
        quiet.comment && quiet.data.is_none(),
        "expected a keep-alive, got {quiet:?}"
    );

    s.server.add_tool(no_args("late"), || async { "late" });
    let changed = sse.message().await.json();
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        9
    );

    // Graceful shutdown: the listen request gets its final response, then the stream ends.
    s.http.shutdown();
    let last = sse.message().await.json();
    assert_eq!(last["id"], 9);
    assert_eq!(last["result"]["resultType"], "complete");
    assert_eq!(
        last["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        9
    );
    sse.end().await;
    within(s.task).await.unwrap().unwrap();
    // And nothing listens any more.
    assert!(TcpStream::connect(s.addr).await.is_err());
}

#[tokio::test]
async fn server_shutdown_stops_serve_http() {
    let s = start().await;
    let sid = init(s.addr).await;
    let mut get = open_get(s.addr, &sid, None).await.sse();
    get.block().await.unwrap();
    s.server.shutdown();
    within(get.end()).await;
    within(s.task).await.unwrap().unwrap();
}

#[tokio::test]
async fn router_mounts_in_an_axum_app() {
    let probe = Probe::default();
    let server = test_server(ServerConfig::default(), probe);
    let mut config = HttpConfig::default();
    config.path = "/api/mcp".into();
    let app = axum::Router::new()
        .merge(StreamableHttp::with_config(server, config).router())
        .route("/health", axum::routing::get(|| async { "ok" }));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = hyper_util::service::TowerToHyperService::new(app);
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let service = service.clone();
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service),
            );
        }
    });
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(conn);
    let body = serde_json::to_vec(&modern_rpc(1, "tools/list", json!({}))).unwrap();
    let req = Request::post("/api/mcp")
        .header("host", format!("localhost:{}", addr.port()))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "tools/list")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let res = within(sender.send_request(req)).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert!(v["result"]["tools"]
        .as_array()
        .is_some_and(|t| !t.is_empty()));
}
