//! `duomcp serve --auth-*` and SEP-2350's scope challenges on the server, against the real
//! binary over real HTTP, in both revisions. The fixture is the contract of the conformance
//! suite's `sep-2350-server-scope-challenge` scenario: requests without a token behave as
//! without auth; the opaque token `mcp-conformance-scope-low` holds only
//! `mcp:conformance:baseline` and is answered `403` with one `insufficient_scope` challenge
//! naming every scope the operation needs (the template's scope naming the id read) and the
//! protected-resource metadata; `mcp-conformance-scope-full` holds them all and is served.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::Bytes;
use duomcp::auth::WwwAuthenticate;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");
const LOW: &str = "mcp-conformance-scope-low";
const FULL: &str = "mcp-conformance-scope-full";
const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

/// `duomcp serve --http 127.0.0.1:0 ARGS`: its `host:port`, and the child (killed on drop).
struct Served {
    child: std::process::Child,
    addr: String,
}

impl Served {
    fn start(args: &[&str]) -> Served {
        let mut child = Command::new(BIN)
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        let addr = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("http://"))
            .and_then(|w| w.strip_suffix("/mcp"))
            .unwrap_or_else(|| panic!("no URL in {line:?}"))
            .to_owned();
        std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = stderr.read_to_string(&mut rest);
        });
        Served { child, addr }
    }

    /// The conformance fixture: static tokens, anonymous callers holding every scope.
    fn fixture(extra: &[&str]) -> Served {
        let full = duomcp_cli::reference::FIXTURE_SCOPES
            .iter()
            .flat_map(|(_, _, s)| s.iter())
            .map(|s| s.replace("{id}", "123"))
            .collect::<Vec<_>>()
            .join(" ");
        let mut args = vec![
            "--auth-issuer".to_owned(),
            "http://127.0.0.1:9/".to_owned(),
            "--auth-token".to_owned(),
            format!("{LOW}=mcp:conformance:baseline"),
            "--auth-token".to_owned(),
            format!("{FULL}={full}"),
        ];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        Served::start(&args.iter().map(String::as_str).collect::<Vec<_>>())
    }

    fn metadata_url(&self) -> String {
        format!(
            "http://{}/.well-known/oauth-protected-resource/mcp",
            self.addr
        )
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Answer {
    status: u16,
    headers: hyper::HeaderMap,
    body: Value,
}

impl Answer {
    fn challenge(&self) -> WwwAuthenticate {
        let v = self
            .headers
            .get("www-authenticate")
            .unwrap_or_else(|| panic!("no challenge ({}): {}", self.status, self.body))
            .to_str()
            .unwrap();
        WwwAuthenticate::parse_all(v).remove(0)
    }

    fn challenged_scopes(&self) -> Vec<String> {
        self.challenge()
            .param("scope")
            .unwrap_or_default()
            .split(' ')
            .map(str::to_owned)
            .collect()
    }
}

/// One request over a fresh HTTP/1.1 connection; an SSE body is read to its first message.
async fn send(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> Answer {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut req = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let bytes = body.map(|b| b.to_string()).unwrap_or_default();
    let res = tx
        .send_request(req.body(Full::new(Bytes::from(bytes))).unwrap())
        .await
        .unwrap();
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    let sse = headers
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let mut body = res.into_body();
    let mut text = String::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.unwrap().into_data() {
            text.push_str(&String::from_utf8_lossy(&data));
        }
        if sse && text.lines().any(|l| l.starts_with("data:")) && text.contains("\n\n") {
            break;
        }
    }
    let json = if sse {
        text.lines()
            .find_map(|l| l.strip_prefix("data:"))
            .map_or(Value::Null, |d| serde_json::from_str(d.trim()).unwrap())
    } else if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    Answer {
        status,
        headers,
        body: json,
    }
}

/// A 2026-07-28 request (stateless: `_meta` and the mirrored headers), with `token` if any.
async fn modern(addr: &str, token: Option<&str>, method: &str, params: Value) -> Answer {
    let name = params["name"]
        .as_str()
        .or(params["uri"].as_str())
        .unwrap_or_default()
        .to_owned();
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", MODERN),
        ("mcp-method", method),
        ("mcp-name", name.as_str()),
    ];
    if let Some(b) = &bearer {
        headers.push(("authorization", b));
    }
    send(addr, "POST", "/mcp", &headers, Some(body)).await
}

/// A 2025-11-25 session opened with `token` (if any): its id.
async fn legacy_session(addr: &str, token: Option<&str>) -> String {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    if let Some(b) = &bearer {
        headers.push(("authorization", b));
    }
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": { "name": "t", "version": "1" } } });
    let a = send(addr, "POST", "/mcp", &headers, Some(init)).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let session = a.headers["mcp-session-id"].to_str().unwrap().to_owned();
    headers.push(("mcp-session-id", &session));
    headers.push(("mcp-protocol-version", LEGACY));
    let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    assert_eq!(
        send(addr, "POST", "/mcp", &headers, Some(note))
            .await
            .status,
        202
    );
    session
}

/// A request in the 2025-11-25 session `session`.
async fn legacy(
    addr: &str,
    session: &str,
    token: Option<&str>,
    method: &str,
    params: Value,
) -> Answer {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", LEGACY),
        ("mcp-session-id", session),
    ];
    if let Some(b) = &bearer {
        headers.push(("authorization", b));
    }
    let body = json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params });
    send(addr, "POST", "/mcp", &headers, Some(body)).await
}

/// One of the scenario's operations: method, params, the scopes challenged, and a check of
/// the result.
type Operation = (&'static str, Value, [&'static str; 2], fn(&Value) -> bool);

/// The scenario's four operations.
fn operations() -> Vec<Operation> {
    vec![
        (
            "tools/call",
            json!({ "name": "test_simple_text", "arguments": {} }),
            [
                "mcp:conformance:tools:call",
                "mcp:conformance:tools:test_simple_text",
            ],
            |r| r["content"][0]["type"] == "text",
        ),
        (
            "resources/read",
            json!({ "uri": "test://static-text" }),
            [
                "mcp:conformance:resources:read",
                "mcp:conformance:resources:static",
            ],
            |r| r["contents"][0]["uri"] == "test://static-text",
        ),
        (
            "resources/read",
            json!({ "uri": "test://template/123/data" }),
            [
                "mcp:conformance:resources:read",
                "mcp:conformance:resources:template:123",
            ],
            |r| {
                r["contents"][0]["uri"] == "test://template/123/data"
                    && r["contents"][0]["text"].as_str().unwrap().contains("123")
            },
        ),
        (
            "prompts/get",
            json!({ "name": "test_simple_prompt" }),
            [
                "mcp:conformance:prompts:get",
                "mcp:conformance:prompts:test_simple_prompt",
            ],
            |r| r["messages"][0]["role"] == "user",
        ),
    ]
}

fn assert_insufficient(a: &Answer, scopes: &[&str], metadata: &str, what: &str) {
    assert_eq!(a.status, 403, "{what}: {}", a.body);
    let c = a.challenge();
    assert!(c.is("Bearer"), "{what}");
    assert_eq!(c.param("error"), Some("insufficient_scope"), "{what}");
    assert_eq!(c.param("resource_metadata"), Some(metadata), "{what}");
    assert_eq!(
        a.challenged_scopes(),
        scopes,
        "{what}: all in one challenge"
    );
}

#[tokio::test]
async fn the_scope_challenge_fixture_in_2026_07_28() {
    let s = Served::fixture(&["--auth-anonymous"]);
    for (method, params, scopes, ok) in operations() {
        let what = format!("{method} {params}");
        let a = modern(&s.addr, Some(LOW), method, params.clone()).await;
        assert_insufficient(&a, &scopes, &s.metadata_url(), &what);
        let a = modern(&s.addr, Some(FULL), method, params.clone()).await;
        assert_eq!(a.status, 200, "{what}: {}", a.body);
        assert!(ok(&a.body["result"]), "{what}: {}", a.body);
        // Unauthenticated behaviour unchanged: the suite's other scenarios run as before.
        let a = modern(&s.addr, None, method, params).await;
        assert_eq!(a.status, 200, "{what}: {}", a.body);
        assert!(ok(&a.body["result"]), "{what}: {}", a.body);
    }
    // Another id needs its own template scope: the full token holds template:123 only.
    let a = modern(
        &s.addr,
        Some(FULL),
        "resources/read",
        json!({ "uri": "test://template/456/data" }),
    )
    .await;
    assert_eq!(a.status, 403, "{}", a.body);
    assert_eq!(
        a.challenged_scopes(),
        [
            "mcp:conformance:resources:read",
            "mcp:conformance:resources:template:456"
        ]
    );
    // What needs no scope is served to the low token.
    let a = modern(
        &s.addr,
        Some(LOW),
        "tools/call",
        json!({ "name": "test_image_content", "arguments": {} }),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
}

#[tokio::test]
async fn the_scope_challenge_fixture_in_2025_11_25() {
    let s = Served::fixture(&["--auth-anonymous"]);
    let low = legacy_session(&s.addr, Some(LOW)).await;
    let full = legacy_session(&s.addr, Some(FULL)).await;
    for (method, params, scopes, ok) in operations() {
        let what = format!("{method} {params}");
        let a = legacy(&s.addr, &low, Some(LOW), method, params.clone()).await;
        assert_insufficient(&a, &scopes, &s.metadata_url(), &what);
        let a = legacy(&s.addr, &full, Some(FULL), method, params).await;
        assert_eq!(a.status, 200, "{what}: {}", a.body);
        assert!(ok(&a.body["result"]), "{what}: {}", a.body);
    }
    // A session is its token's: the full token cannot borrow the low one's session or the
    // reverse (each principal its own).
    let a = legacy(
        &s.addr,
        &low,
        Some(FULL),
        "tools/call",
        json!({ "name": "test_simple_text", "arguments": {} }),
    )
    .await;
    assert_ne!(a.status, 200, "{}", a.body);
}

#[tokio::test]
async fn two_tenants_at_once_each_get_what_their_token_holds() {
    let s = Served::fixture(&["--auth-anonymous"]);
    let call = json!({ "name": "test_simple_text", "arguments": {} });
    let mut low = Vec::new();
    let mut full = Vec::new();
    for _ in 0..8 {
        low.push(modern(&s.addr, Some(LOW), "tools/call", call.clone()));
        full.push(modern(&s.addr, Some(FULL), "tools/call", call.clone()));
    }
    let (low, full) = tokio::join!(
        futures_util::future::join_all(low),
        futures_util::future::join_all(full)
    );
    assert!(low.iter().all(|a| a.status == 403));
    assert!(full.iter().all(|a| a.status == 200
        && a.body["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("simple text"))));
}

#[tokio::test]
async fn an_anonymous_caller_holding_less_is_asked_for_a_token() {
    let s = Served::fixture(&["--auth-anonymous", "mcp:conformance:tools:call"]);
    let a = modern(
        &s.addr,
        None,
        "tools/call",
        json!({ "name": "test_simple_text", "arguments": {} }),
    )
    .await;
    assert_eq!(a.status, 401, "{}", a.body);
    let c = a.challenge();
    assert_eq!(c.param("error"), None);
    assert_eq!(
        c.param("resource_metadata"),
        Some(s.metadata_url().as_str())
    );
    assert_eq!(
        a.challenged_scopes(),
        [
            "mcp:conformance:tools:call",
            "mcp:conformance:tools:test_simple_text"
        ]
    );
    // What needs no scope is served to it.
    let a = modern(
        &s.addr,
        None,
        "tools/call",
        json!({ "name": "test_image_content", "arguments": {} }),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    // A bad token is refused, never taken as anonymous.
    let a = modern(
        &s.addr,
        Some("not-a-fixture-token"),
        "tools/call",
        json!({ "name": "test_image_content", "arguments": {} }),
    )
    .await;
    assert_eq!(a.status, 401);
    assert_eq!(a.challenge().param("error"), Some("invalid_token"));
}

#[tokio::test]
async fn without_anonymous_access_a_token_is_required_and_the_metadata_is_public() {
    let s = Served::fixture(&[]);
    let a = modern(
        &s.addr,
        None,
        "tools/call",
        json!({ "name": "test_image_content", "arguments": {} }),
    )
    .await;
    assert_eq!(a.status, 401);
    assert!(a.challenge().param("resource_metadata").is_some());
    let a = send(
        &s.addr,
        "GET",
        "/.well-known/oauth-protected-resource/mcp",
        &[],
        None,
    )
    .await;
    assert_eq!(a.status, 200);
    assert_eq!(a.body["resource"], format!("http://{}/mcp", s.addr));
    assert_eq!(
        a.body["authorization_servers"],
        json!(["http://127.0.0.1:9/"])
    );
    let supported = a.body["scopes_supported"].as_array().unwrap();
    assert!(supported.contains(&json!("mcp:conformance:tools:call")));
    assert!(
        !supported.iter().any(|s| s.as_str().unwrap().contains('{')),
        "a template scope is no scope: {supported:?}"
    );
    let unique: std::collections::HashSet<_> = supported.iter().collect();
    assert_eq!(
        unique.len(),
        supported.len(),
        "each scope once: {supported:?}"
    );
}

#[tokio::test]
async fn without_auth_options_nothing_needs_a_scope() {
    let s = Served::start(&[]);
    for (method, params, _, ok) in operations() {
        let a = modern(&s.addr, None, method, params.clone()).await;
        assert_eq!(a.status, 200, "{method} {params}: {}", a.body);
        assert!(ok(&a.body["result"]));
    }
}

#[test]
fn bad_auth_arguments_stop_the_server_with_the_reason() {
    for (args, says) in [
        (
            vec![
                "--auth-issuer",
                "http://127.0.0.1:9/",
                "--auth-token",
                "no-equals",
            ],
            "TOKEN=SCOPES",
        ),
        (
            vec![
                "--auth-issuer",
                "http://127.0.0.1:9/",
                "--auth-token",
                "a b=c",
            ],
            "not a bearer token",
        ),
        (vec!["--auth-token", "t=s"], "--auth-issuer"),
        (vec!["--auth-anonymous"], "--auth-issuer"),
    ] {
        let o = Command::new(BIN)
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?}: served anyway");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}
