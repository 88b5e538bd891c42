//! HTTP/2 on the Streamable HTTP endpoint: h2c with prior knowledge next to HTTP/1.1 on one
//! port, and h2 over TLS (ALPN) with a self-signed certificate made here; both revisions, JSON
//! and SSE answers, `subscriptions/listen`, many streams on one connection, the deadline for a
//! connection's first request, and `duomcp serve --http --tls-cert/--tls-key`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::Bytes;
use duomcp::server::{Context, Server};
use duomcp::transport::http::{tls, HttpConfig, StreamableHttp};
use duomcp_testkit::text;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode, Version};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls;

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("timed out")
}

fn server() -> Server {
    Server::builder()
        .tool("plain", || async { "plain" })
        .tool("progress", |ctx: Context| async move {
            for i in 1..=3 {
                ctx.progress(f64::from(i), Some(3.0), None).await;
            }
            "done"
        })
        .build()
}

struct Running {
    addr: SocketAddr,
    http: StreamableHttp,
    server: Server,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn start(config: HttpConfig, tls: Option<Arc<rustls::ServerConfig>>) -> Running {
    let server = server();
    let http = StreamableHttp::with_config(server.clone(), config);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = match tls {
        Some(tls) => tokio::spawn(http.clone().serve_tls(listener, tls)),
        None => tokio::spawn(http.clone().serve(listener)),
    };
    Running {
        addr,
        http,
        server,
        task,
    }
}

/// A certificate for `localhost` and `127.0.0.1`, its key, and a client trusting it.
struct Pki {
    cert_pem: String,
    key_pem: String,
    server: Arc<rustls::ServerConfig>,
    roots: Arc<rustls::RootCertStore>,
}

fn pki() -> Pki {
    let made =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let cert = made.cert.der().clone();
    let key = tls::PrivateKeyDer::Pkcs8(made.signing_key.serialize_der().into());
    let server = tls::server_config(vec![cert.clone()], key).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).unwrap();
    Pki {
        cert_pem: made.cert.pem(),
        key_pem: made.signing_key.serialize_pem(),
        server,
        roots: Arc::new(roots),
    }
}

/// A TLS connection to `addr` offering `alpn`; the protocol the server picked.
async fn tls_connect(
    addr: SocketAddr,
    roots: &Arc<rustls::RootCertStore>,
    alpn: &[&[u8]],
) -> (tokio_rustls::client::TlsStream<TcpStream>, Option<Vec<u8>>) {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots.clone())
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let stream = within(connector.connect(name, tcp)).await.unwrap();
    let picked = stream.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
    (stream, picked)
}

type H2 = hyper::client::conn::http2::SendRequest<Full<Bytes>>;

/// An HTTP/2 client connection on `io` (prior knowledge on cleartext).
async fn h2<I>(io: I) -> H2
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io))
            .await
            .unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    sender
}

async fn h2c(addr: SocketAddr) -> H2 {
    h2(TcpStream::connect(addr).await.unwrap()).await
}

/// A POST to `/mcp` in `era` (a session id for 2025-11-25, the mirrored headers for 2026-07-28).
fn post(body: &Value, era: &str, session: Option<&str>) -> Request<Full<Bytes>> {
    let mut b = Request::post("http://localhost/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", era);
    if era == MODERN {
        b = b.header("mcp-method", body["method"].as_str().unwrap());
        if let Some(name) = body["params"]["name"].as_str() {
            b = b.header("mcp-name", name);
        }
    }
    if let Some(s) = session {
        b = b.header("mcp-session-id", s);
    }
    b.body(Full::new(Bytes::from(body.to_string()))).unwrap()
}

fn meta(progress: Option<&str>) -> Value {
    let mut m = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "h2-test", "version": "1" }
    });
    if let Some(p) = progress {
        m["progressToken"] = json!(p);
    }
    m
}

fn modern_call(id: u64, tool: &str, progress: Option<&str>) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": tool, "_meta": meta(progress) } })
}

fn legacy_call(id: u64, tool: &str, progress: Option<&str>) -> Value {
    let mut params = json!({ "name": tool });
    if let Some(p) = progress {
        params["_meta"] = json!({ "progressToken": p });
    }
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params })
}

async fn send(sender: &mut H2, req: Request<Full<Bytes>>) -> Response<Incoming> {
    within(sender.ready()).await.unwrap();
    within(sender.send_request(req)).await.unwrap()
}

async fn json_body(resp: Response<Incoming>) -> Value {
    assert_eq!(
        resp.headers()["content-type"],
        "application/json",
        "expected a JSON answer"
    );
    let bytes = within(resp.into_body().collect()).await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap()
}

/// The JSON-RPC messages of an SSE body, read event by event.
struct Sse {
    body: Incoming,
    buf: Vec<u8>,
}

impl Sse {
    fn new(resp: Response<Incoming>) -> Self {
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        Sse {
            body: resp.into_body(),
            buf: Vec::new(),
        }
    }

    /// The next event carrying data (comments and priming events are skipped).
    async fn message(&mut self) -> Value {
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.buf.drain(..end + 2).collect();
                let data: Vec<&str> = std::str::from_utf8(&event)
                    .unwrap()
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .filter(|d| !d.is_empty())
                    .collect();
                if !data.is_empty() {
                    return serde_json::from_str(&data.join("\n")).unwrap();
                }
                continue;
            }
            let frame = within(self.body.frame())
                .await
                .expect("the stream ended")
                .unwrap();
            if let Ok(data) = frame.into_data() {
                self.buf.extend_from_slice(&data);
            }
        }
    }

    /// Waits for the stream to end (any further events are ignored).
    async fn end(mut self) {
        while within(self.body.frame()).await.is_some() {}
    }
}

/// A progress call answered as SSE: three progress notifications, then the result.
async fn check_progress_stream(resp: Response<Incoming>, id: u64) {
    assert_eq!(resp.status(), StatusCode::OK);
    let mut sse = Sse::new(resp);
    for i in 1..=3 {
        let note = sse.message().await;
        assert_eq!(note["method"], "notifications/progress", "{note}");
        assert_eq!(note["params"]["progress"], f64::from(i));
    }
    let done = sse.message().await;
    assert_eq!(done["id"], id);
    assert_eq!(text(&done), "done");
    sse.end().await;
}

/// Both revisions over one HTTP/2 connection: JSON answers and SSE answers.
async fn both_eras(sender: &mut H2) {
    // 2026-07-28: stateless calls.
    let resp = send(sender, post(&modern_call(1, "plain", None), MODERN, None)).await;
    assert_eq!(resp.version(), Version::HTTP_2);
    assert_eq!(resp.status(), StatusCode::OK);
    let answer = json_body(resp).await;
    assert_eq!(
        (answer["id"].as_u64(), text(&answer).as_str()),
        (Some(1), "plain")
    );
    let resp = send(
        sender,
        post(&modern_call(2, "progress", Some("p2")), MODERN, None),
    )
    .await;
    check_progress_stream(resp, 2).await;

    // 2025-11-25: a session, then calls in it.
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "h2-test", "version": "1" } } });
    let resp = send(sender, post(&init, LEGACY, None)).await;
    assert_eq!(resp.version(), Version::HTTP_2);
    let session = resp.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let answer = json_body(resp).await;
    assert_eq!(answer["result"]["protocolVersion"], LEGACY);
    let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let resp = send(sender, post(&note, LEGACY, Some(&session))).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let resp = send(
        sender,
        post(&legacy_call(3, "plain", None), LEGACY, Some(&session)),
    )
    .await;
    let answer = json_body(resp).await;
    assert_eq!(
        (answer["id"].as_u64(), text(&answer).as_str()),
        (Some(3), "plain")
    );
    let resp = send(
        sender,
        post(
            &legacy_call(4, "progress", Some("p4")),
            LEGACY,
            Some(&session),
        ),
    )
    .await;
    check_progress_stream(resp, 4).await;
}

/// `subscriptions/listen` on a stream of its own while other streams of the same connection
/// carry calls; a graceful shutdown sends its final response.
async fn listen(running: Running, sender: &mut H2) {
    let body = json!({ "jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen",
        "params": { "notifications": { "toolsListChanged": true }, "_meta": meta(None) } });
    let resp = send(sender, post(&body, MODERN, None)).await;
    assert_eq!(resp.version(), Version::HTTP_2);
    let mut sse = Sse::new(resp);
    let ack = sse.message().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");

    // The connection is not held by the open stream: a call goes through meanwhile.
    let resp = send(sender, post(&modern_call(10, "plain", None), MODERN, None)).await;
    assert_eq!(text(&json_body(resp).await), "plain");

    running.server.add_tool("late", || async { "late" });
    let changed = sse.message().await;
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        9
    );

    running.http.shutdown();
    let last = sse.message().await;
    assert_eq!(last["id"], 9);
    assert_eq!(last["result"]["resultType"], "complete");
    sse.end().await;
    within(running.task).await.unwrap().unwrap();
}

#[tokio::test]
async fn h2c_prior_knowledge_serves_both_eras_with_json_and_sse() {
    let running = start(HttpConfig::default(), None).await;
    let mut sender = h2c(running.addr).await;
    both_eras(&mut sender).await;
}

#[tokio::test]
async fn h2c_carries_subscriptions_listen_next_to_calls() {
    let running = start(HttpConfig::default(), None).await;
    let mut sender = h2c(running.addr).await;
    listen(running, &mut sender).await;
}

#[tokio::test]
async fn http1_and_h2c_share_the_port() {
    let running = start(HttpConfig::default(), None).await;
    let tcp = TcpStream::connect(running.addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(conn);
    let resp = within(sender.send_request(post(&modern_call(1, "plain", None), MODERN, None)))
        .await
        .unwrap();
    assert_eq!(resp.version(), Version::HTTP_11);
    assert_eq!(text(&json_body(resp).await), "plain");
    let mut h2 = h2c(running.addr).await;
    let resp = send(&mut h2, post(&modern_call(2, "plain", None), MODERN, None)).await;
    assert_eq!(resp.version(), Version::HTTP_2);
    assert_eq!(text(&json_body(resp).await), "plain");
}

#[tokio::test]
async fn many_streams_on_one_h2c_connection_are_answered_concurrently() {
    let running = start(HttpConfig::default(), None).await;
    let sender = h2c(running.addr).await;
    let mut calls = tokio::task::JoinSet::new();
    for id in 1..=64u64 {
        let mut sender = sender.clone();
        calls.spawn(async move {
            let tool = if id % 2 == 0 { "plain" } else { "progress" };
            let resp = send(
                &mut sender,
                post(&modern_call(id, tool, None), MODERN, None),
            )
            .await;
            let answer = json_body(resp).await;
            assert_eq!(answer["id"], id);
            id
        });
    }
    let mut seen = Vec::new();
    while let Some(id) = calls.join_next().await {
        seen.push(id.unwrap());
    }
    seen.sort_unstable();
    assert_eq!(seen, (1..=64).collect::<Vec<_>>());
}

#[tokio::test]
async fn tls_with_alpn_h2_serves_both_eras_with_json_and_sse() {
    let pki = pki();
    let running = start(HttpConfig::default(), Some(pki.server.clone())).await;
    let (stream, alpn) = tls_connect(running.addr, &pki.roots, &[b"h2", b"http/1.1"]).await;
    assert_eq!(alpn.as_deref(), Some(&b"h2"[..]));
    let mut sender = h2(stream).await;
    both_eras(&mut sender).await;
}

#[tokio::test]
async fn tls_with_alpn_h2_carries_subscriptions_listen() {
    let pki = pki();
    let running = start(HttpConfig::default(), Some(pki.server.clone())).await;
    let (stream, _) = tls_connect(running.addr, &pki.roots, &[b"h2"]).await;
    let mut sender = h2(stream).await;
    listen(running, &mut sender).await;
}

#[tokio::test]
async fn tls_with_alpn_http11_speaks_http11() {
    let pki = pki();
    let running = start(HttpConfig::default(), Some(pki.server.clone())).await;
    let (stream, alpn) = tls_connect(running.addr, &pki.roots, &[b"http/1.1"]).await;
    assert_eq!(alpn.as_deref(), Some(&b"http/1.1"[..]));
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let resp =
        within(sender.send_request(post(&modern_call(1, "progress", Some("p")), MODERN, None)))
            .await
            .unwrap();
    assert_eq!(resp.version(), Version::HTTP_11);
    check_progress_stream(resp, 1).await;
}

/// Reads until the server closes the connection; panics if it stays open for `limit`.
async fn closed_within(mut io: impl AsyncRead + Unpin, limit: Duration) {
    let mut buf = [0u8; 1024];
    let closed = tokio::time::timeout(limit, async {
        loop {
            match io.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the server kept a silent connection open");
}

#[tokio::test]
async fn a_connection_must_send_its_first_request_within_the_header_timeout() {
    let pki = pki();
    let mut config = HttpConfig::default();
    config.header_read_timeout = Duration::from_millis(300);
    let plain = start(config.clone(), None).await;
    let secure = start(config, Some(pki.server.clone())).await;

    // Half an HTTP/2 preface, then silence.
    let mut tcp = TcpStream::connect(plain.addr).await.unwrap();
    tcp.write_all(b"PRI * HTTP/2.0\r\n").await.unwrap();
    closed_within(tcp, Duration::from_secs(3)).await;
    // Nothing at all.
    closed_within(
        TcpStream::connect(plain.addr).await.unwrap(),
        Duration::from_secs(3),
    )
    .await;
    // An HTTP/2 connection that never opens a stream.
    let mut tcp = TcpStream::connect(plain.addr).await.unwrap();
    tcp.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .unwrap();
    closed_within(tcp, Duration::from_secs(3)).await;
    // No TLS handshake.
    closed_within(
        TcpStream::connect(secure.addr).await.unwrap(),
        Duration::from_secs(3),
    )
    .await;

    // A connection that does send a request in time is served.
    let mut sender = h2c(plain.addr).await;
    let resp = send(
        &mut sender,
        post(&modern_call(1, "plain", None), MODERN, None),
    )
    .await;
    assert_eq!(text(&json_body(resp).await), "plain");
}

#[tokio::test]
async fn pem_files_that_are_not_certificates_are_refused_with_the_path() {
    let dir = std::env::temp_dir().join(format!("duomcp-h2-pem-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let junk = dir.join("junk.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let err = tls::server_config_from_pem_files(&junk, &junk).unwrap_err();
    assert!(err.to_string().contains("junk.pem"), "{err}");
    let pki = pki();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, &pki.cert_pem).unwrap();
    std::fs::write(&key, &pki.key_pem).unwrap();
    assert!(tls::server_config_from_pem_files(&cert, &key).is_ok());
    // A key in the certificate's place.
    assert!(tls::server_config_from_pem_files(&key, &key).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `duomcp serve --http 127.0.0.1:0 --tls-cert … --tls-key …`: the reference server over HTTPS,
/// HTTP/2 by ALPN.
#[tokio::test]
async fn cli_serves_https_with_http2() {
    let pki = pki();
    let dir = std::env::temp_dir().join(format!("duomcp-h2-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, &pki.cert_pem).unwrap();
    std::fs::write(&key, &pki.key_pem).unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_duomcp"))
        .args(["serve", "--http", "127.0.0.1:0", "--tls-cert"])
        .arg(&cert)
        .arg("--tls-key")
        .arg(&key)
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = tokio::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    within(tokio::io::AsyncBufReadExt::read_line(
        &mut stderr,
        &mut line,
    ))
    .await
    .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("https://"))
        .unwrap_or_else(|| panic!("no https URL in {line:?}"));
    let addr: SocketAddr = url
        .trim_start_matches("https://")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    let (stream, alpn) = tls_connect(addr, &pki.roots, &[b"h2", b"http/1.1"]).await;
    assert_eq!(alpn.as_deref(), Some(&b"h2"[..]));
    let mut sender = h2(stream).await;
    let resp = send(
        &mut sender,
        post(&modern_call(1, "test_simple_text", None), MODERN, None),
    )
    .await;
    assert_eq!(resp.version(), Version::HTTP_2);
    let answer = json_body(resp).await;
    assert_eq!(text(&answer), "This is a simple text response for testing.");
    child.start_kill().unwrap();
    child.wait().await.unwrap();

    // A key that is not there: refused before anything listens, naming the file.
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_duomcp"))
        .args(["serve", "--http", "127.0.0.1:0", "--tls-cert"])
        .arg(&cert)
        .arg("--tls-key")
        .arg(dir.join("missing.pem"))
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.pem"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `duomcp serve --tls-cert … --auth-issuer … --card …`: the endpoint behind the auth layer,
/// served over HTTPS with HTTP/2; the challenge's metadata URL and the card's URL say `https`.
#[tokio::test]
async fn cli_serves_https_behind_the_auth_layer_with_an_https_card() {
    let pki = pki();
    let dir = std::env::temp_dir().join(format!("duomcp-h2-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, &pki.cert_pem).unwrap();
    std::fs::write(&key, &pki.key_pem).unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_duomcp"))
        .args(["serve", "--http", "127.0.0.1:0", "--tls-cert"])
        .arg(&cert)
        .arg("--tls-key")
        .arg(&key)
        .args(["--auth-issuer", "https://auth.example.com"])
        .args([
            "--auth-token",
            "full=mcp:conformance:tools:call,mcp:conformance:tools:test_simple_text",
        ])
        .args(["--card", "com.example/reference"])
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = tokio::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    within(tokio::io::AsyncBufReadExt::read_line(
        &mut stderr,
        &mut line,
    ))
    .await
    .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("https://"))
        .unwrap_or_else(|| panic!("no https URL in {line:?}"))
        .to_owned();
    let addr: SocketAddr = url
        .trim_start_matches("https://")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    let (stream, alpn) = tls_connect(addr, &pki.roots, &[b"h2", b"http/1.1"]).await;
    assert_eq!(alpn.as_deref(), Some(&b"h2"[..]));
    let mut sender = h2(stream).await;
    // No token: 401, the metadata at https.
    let resp = send(
        &mut sender,
        post(&modern_call(1, "test_simple_text", None), MODERN, None),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let challenge = resp.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        challenge.contains(&format!(
            "resource_metadata=\"https://{addr}/.well-known/oauth-protected-resource/mcp\""
        )),
        "{challenge}"
    );
    // The token: served, over HTTP/2.
    let mut req = post(&modern_call(2, "test_simple_text", None), MODERN, None);
    req.headers_mut()
        .insert("authorization", "Bearer full".parse().unwrap());
    let resp = send(&mut sender, req).await;
    assert_eq!(resp.version(), Version::HTTP_2);
    assert_eq!(
        text(&json_body(resp).await),
        "This is a simple text response for testing."
    );
    // The card is public, and names the endpoint at https.
    let req = Request::get("http://localhost/mcp/server-card")
        .header("accept", "application/mcp-server-card+json")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let resp = send(&mut sender, req).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let card: Value = serde_json::from_slice(&bytes).unwrap();
    let remote = card["remotes"][0]["url"].as_str().unwrap();
    assert!(remote.starts_with("https://"), "{card}");
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
