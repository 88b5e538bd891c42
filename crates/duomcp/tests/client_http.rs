//! The Streamable HTTP client transport against our own HTTP server (both eras, forced and
//! detected), with every request recorded by a middleware in front of the server; a stub
//! 2024-11-05 HTTP+SSE server for the fallback.

#![cfg(all(feature = "http-server", feature = "http-client"))]
// Helpers outside `#[test]` functions fail loudly too: that is what a test helper is for.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::Router;
use duomcp::client::auth::{AuthError, AuthFuture, AuthProvider, Challenge};
use duomcp::client::transport::http::default_client;
use duomcp::client::{Client, ClientError, EraChoice, RequestOptions, ServerEvent};
use duomcp::era::Era;
use duomcp::schema::{ElicitResult, PromptMessage, Resource};
use duomcp::server::{Args, Server, ToolSpec};
use duomcp::transport::http::{HttpConfig, ResponseMode, StreamableHttp};
use http::{HeaderMap, Method, StatusCode};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

mod http_support;
use duomcp_testkit::text;
use http_support::{common_tools, no_args, within, Probe, LEGACY, MODERN};

// ---------------------------------------------------------------------------------------------
// The server under test.

fn test_server(probe: Probe) -> Server {
    common_tools(Server::builder().name("client-http-test").state(probe))
        .tool(
            ToolSpec::new("region").description("x-mcp-header mirroring").input_schema(json!({
                "type": "object",
                "properties": {
                    "region": { "type": "string", "x-mcp-header": "Region" },
                    "count": { "type": ["integer", "null"], "x-mcp-header": "Count" },
                    "flag": { "type": "boolean", "x-mcp-header": "Flag" },
                    "query": { "type": "string" }
                },
                "required": ["region"]
            })),
            |Args(v): Args<Value>| async move {
                format!("region={}", v.get("region").and_then(Value::as_str).unwrap_or_default())
            },
        )
        .tool(
            ToolSpec::new("bad_number").description("an invalid annotation").input_schema(json!({
                "type": "object",
                "properties": { "score": { "type": "number", "x-mcp-header": "Score" } }
            })),
            || async { "never" },
        )
        .tool(
            ToolSpec::new("bad_items").description("an unreachable annotation").input_schema(json!({
                "type": "object",
                "properties": { "l": { "type": "array", "items": { "type": "string", "x-mcp-header": "L" } } }
            })),
            || async { "never" },
        )
        .prompt("greeting", || async { PromptMessage::user_text("hi") })
        .resource(Resource::new("file:///notes/ünï code.txt", "notes"), || async {
            "notes".to_owned()
        })
        .build()
}

// ---------------------------------------------------------------------------------------------
// Recording every request, and letting a test answer some itself.

#[derive(Clone, Debug)]
struct Seen {
    method: Method,
    path: String,
    headers: HeaderMap,
    body: Option<Value>,
    at: Instant,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn rpc_method(&self) -> Option<&str> {
        self.body.as_ref()?.get("method")?.as_str()
    }
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Seen>>>);

impl Recorder {
    fn all(&self) -> Vec<Seen> {
        self.0.lock().unwrap().clone()
    }

    fn posts(&self, rpc_method: &str) -> Vec<Seen> {
        self.all()
            .into_iter()
            .filter(|s| s.method == Method::POST && s.rpc_method() == Some(rpc_method))
            .collect()
    }

    fn with_method(&self, method: Method) -> Vec<Seen> {
        self.all()
            .into_iter()
            .filter(|s| s.method == method)
            .collect()
    }
}

/// Answers some requests instead of the server.
type Gate = Arc<dyn Fn(&Seen) -> Option<Response> + Send + Sync>;

async fn record(rec: Recorder, gate: Option<Gate>, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, 16 << 20)
        .await
        .unwrap_or_default();
    let seen = Seen {
        method: parts.method.clone(),
        path: parts.uri.path().to_owned(),
        headers: parts.headers.clone(),
        body: serde_json::from_slice(&bytes).ok(),
        at: Instant::now(),
    };
    rec.0.lock().unwrap().push(seen.clone());
    if let Some(answer) = gate.as_ref().and_then(|g| g(&seen)) {
        return answer;
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// Serves a router on 127.0.0.1:0 with hyper; returns its address.
async fn serve_router(router: Router) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = hyper_util::service::TowerToHyperService::new(router);
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let service = service.clone();
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    addr
}

struct Running {
    url: String,
    server: Server,
    rec: Recorder,
    probe: Probe,
}

async fn start_with(config: HttpConfig, gate: Option<Gate>) -> Running {
    let probe = Probe::default();
    let server = test_server(probe.clone());
    let http = StreamableHttp::with_config(server.clone(), config);
    let rec = Recorder::default();
    let r = rec.clone();
    let router = http
        .router()
        .layer(middleware::from_fn(move |req: Request, next: Next| {
            let (r, g) = (r.clone(), gate.clone());
            async move { record(r, g, req, next).await }
        }));
    let addr = serve_router(router).await;
    Running {
        url: format!("http://{addr}/mcp"),
        server,
        rec,
        probe,
    }
}

async fn start() -> Running {
    start_with(HttpConfig::default(), None).await
}

async fn connect(url: &str, era: EraChoice) -> Client {
    within(
        Client::builder()
            .name("client-http-test")
            .era(era)
            .on_elicit(|_req| async {
                Ok(ElicitResult::accept(Some(
                    serde_json::from_value(json!({ "name": "Ada" })).unwrap(),
                )))
            })
            .connect_http(url),
    )
    .await
    .unwrap()
}

fn progress_collector() -> (RequestOptions, Arc<Mutex<Vec<f64>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let opts = RequestOptions::new().on_progress(move |p| s.lock().unwrap().push(p.progress));
    (opts, seen)
}

// ---------------------------------------------------------------------------------------------
// Both eras.

#[tokio::test]
async fn modern_requests_carry_the_mirrored_headers() {
    let s = start().await;
    let client = connect(&s.url, EraChoice::Auto).await;
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(client.protocol_version(), MODERN);

    assert_eq!(text(&client.call_tool("plain", ()).await.unwrap()), "plain");
    let read = client
        .read_resource("file:///notes/ünï code.txt")
        .await
        .unwrap();
    assert_eq!(read.contents.len(), 1);
    client.get_prompt("greeting", ()).await.unwrap();
    client.close().await.unwrap();

    let all = s.rec.all();
    assert!(
        all.iter().all(|r| r.method == Method::POST),
        "no GET or DELETE in 2026-07-28"
    );
    for r in &all {
        let body = r.body.as_ref().unwrap();
        assert_eq!(
            r.header("accept"),
            Some("application/json, text/event-stream")
        );
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.header("mcp-protocol-version"), Some(MODERN));
        assert_eq!(
            body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            MODERN
        );
        assert_eq!(r.header("mcp-method"), r.rpc_method());
        assert!(r.header("mcp-session-id").is_none());
    }
    assert_eq!(
        s.rec.posts("tools/call")[0].header("mcp-name"),
        Some("plain")
    );
    assert_eq!(
        s.rec.posts("prompts/get")[0].header("mcp-name"),
        Some("greeting")
    );
    let uri = "file:///notes/ünï code.txt";
    let expected = format!("=?base64?{}?=", base64_of(uri));
    assert_eq!(
        s.rec.posts("resources/read")[0].header("mcp-name"),
        Some(expected.as_str())
    );
}

fn base64_of(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[tokio::test]
async fn legacy_sessions_carry_their_id_open_a_get_stream_and_end_with_delete() {
    let s = start().await;
    let client = connect(&s.url, EraChoice::Legacy).await;
    assert_eq!(client.era(), Era::Legacy);
    let mut notes = client.notifications();

    assert_eq!(text(&client.call_tool("plain", ()).await.unwrap()), "plain");
    // A change while connected arrives on the GET stream.
    s.server.add_tool(no_args("late"), || async { "late" });
    let changed = within(async {
        loop {
            match notes.recv().await {
                Some(ServerEvent::ToolsListChanged) => return true,
                Some(_) => continue,
                None => return false,
            }
        }
    })
    .await;
    assert!(changed);
    client.close().await.unwrap();

    let init = &s.rec.posts("initialize")[0];
    assert!(init.header("mcp-session-id").is_none());
    assert!(init.header("mcp-protocol-version").is_none());
    let sid = s.rec.posts("tools/call")[0]
        .header("mcp-session-id")
        .unwrap()
        .to_owned();
    for r in s
        .rec
        .all()
        .iter()
        .filter(|r| r.rpc_method() != Some("initialize"))
    {
        assert_eq!(
            r.header("mcp-session-id"),
            Some(sid.as_str()),
            "{:?} {:?}",
            r.method,
            r.rpc_method()
        );
        assert_eq!(r.header("mcp-protocol-version"), Some(LEGACY));
    }
    let gets = s.rec.with_method(Method::GET);
    assert_eq!(gets[0].header("accept"), Some("text/event-stream"));
    let initialized = &s.rec.posts("notifications/initialized")[0];
    assert!(
        gets[0].at >= initialized.at,
        "the GET stream opens after initialized"
    );
    assert_eq!(s.rec.with_method(Method::DELETE).len(), 1);
}

#[tokio::test]
async fn progress_arrives_over_sse_in_both_eras() {
    for (era, mode) in [
        (EraChoice::Modern, ResponseMode::JsonWhenPossible),
        (EraChoice::Legacy, ResponseMode::JsonWhenPossible),
        (EraChoice::Modern, ResponseMode::AlwaysSse),
        (EraChoice::Legacy, ResponseMode::AlwaysSse),
    ] {
        let mut config = HttpConfig::default();
        config.response_mode = mode;
        let s = start_with(config, None).await;
        let client = connect(&s.url, era).await;
        let (opts, seen) = progress_collector();
        let result = client.call_tool_with("progress", (), opts).await.unwrap();
        assert_eq!(text(&result), "done");
        assert_eq!(*seen.lock().unwrap(), [1.0, 2.0, 3.0], "{era:?} {mode:?}");
        assert_eq!(text(&client.call_tool("plain", ()).await.unwrap()), "plain");
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn elicitation_works_in_both_eras() {
    // 2025-11-25: a server request on the POST stream, answered with a POST; 2026-07-28: an
    // input_required result, and the call retried.
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let s = start().await;
        let client = connect(&s.url, era).await;
        let result = within(client.call_tool("ask", ())).await.unwrap();
        assert_eq!(text(&result), "Hello Ada", "{era:?}");
        let calls = s.rec.posts("tools/call").len();
        match era {
            EraChoice::Modern => assert_eq!(calls, 2, "MRTR retries the call"),
            _ => {
                assert_eq!(calls, 1);
                let answers: Vec<Seen> = s
                    .rec
                    .with_method(Method::POST)
                    .into_iter()
                    .filter(|r| r.body.as_ref().is_some_and(|b| b.get("result").is_some()))
                    .collect();
                assert_eq!(answers.len(), 1, "the elicitation answer is POSTed");
            }
        }
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn subscriptions_deliver_list_changes_in_both_eras() {
    // 2026-07-28: a subscriptions/listen stream; 2025-11-25: the session's GET stream.
    for era in [EraChoice::Modern, EraChoice::Legacy] {
        let s = start().await;
        let client = connect(&s.url, era).await;
        let filter = duomcp::schema::SubscriptionFilter {
            tools_list_changed: Some(true),
            ..Default::default()
        };
        let mut changes = within(client.listen(filter)).await.unwrap();
        s.server.add_tool(no_args("late"), || async { "late" });
        let n = within(changes.next()).await;
        assert!(
            matches!(n, Some(ServerEvent::ToolsListChanged)),
            "{era:?}: {n:?}"
        );
        drop(changes);
        client.close().await.unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// 2025-11-25 sessions.

#[tokio::test]
async fn a_dropped_stream_is_resumed_after_retry_without_loss_or_duplicates() {
    let mut config = HttpConfig::default();
    config.sse_retry = Duration::from_millis(300);
    let s = start_with(config, None).await;
    let client = connect(&s.url, EraChoice::Legacy).await;
    let (opts, seen) = progress_collector();
    let release = s.probe.release.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        release.notify_one();
    });
    let result = within(client.call_tool_with("poll", (), opts))
        .await
        .unwrap();
    assert_eq!(text(&result), "polled");
    assert_eq!(*seen.lock().unwrap(), [1.0, 2.0]);

    let call = &s.rec.posts("tools/call")[0];
    let resumes: Vec<Seen> = s
        .rec
        .with_method(Method::GET)
        .into_iter()
        .filter(|g| g.header("last-event-id").is_some())
        .collect();
    assert_eq!(resumes.len(), 1);
    assert!(resumes[0].at.duration_since(call.at) >= Duration::from_millis(300));
    client.close().await.unwrap();
}

#[tokio::test]
async fn an_expired_session_is_reinitialized_transparently() {
    let s = start().await;
    let client = connect(&s.url, EraChoice::Legacy).await;
    assert_eq!(text(&client.call_tool("plain", ()).await.unwrap()), "plain");
    let sid = s.rec.posts("tools/call")[0]
        .header("mcp-session-id")
        .unwrap()
        .to_owned();
    // The server forgets the session.
    let ended = default_client()
        .unwrap()
        .delete(&s.url)
        .header("mcp-session-id", &sid)
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status(), StatusCode::NO_CONTENT);

    assert_eq!(
        text(&within(client.call_tool("plain", ())).await.unwrap()),
        "plain"
    );
    let inits = s.rec.posts("initialize");
    assert_eq!(inits.len(), 2);
    let calls = s.rec.posts("tools/call");
    assert_eq!(
        calls.len(),
        3,
        "the call is sent again after the new handshake"
    );
    assert_eq!(calls[1].header("mcp-session-id"), Some(sid.as_str()));
    let new_sid = calls[2].header("mcp-session-id").unwrap();
    assert_ne!(new_sid, sid);
    client.close().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// 2026-07-28 specifics.

#[tokio::test]
async fn x_mcp_header_values_are_mirrored_and_invalid_tools_dropped() {
    let s = start().await;
    let client = connect(&s.url, EraChoice::Modern).await;
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(names.contains(&"region".to_owned()));
    assert!(!names.contains(&"bad_number".to_owned()));
    assert!(!names.contains(&"bad_items".to_owned()));

    let result = client
        .call_tool(
            "region",
            json!({ "region": "Hello, 世界", "count": 42, "flag": true, "query": "q" }),
        )
        .await
        .unwrap();
    assert_eq!(text(&result), "region=Hello, 世界");
    let result = client
        .call_tool("region", json!({ "region": "us-west1", "count": null }))
        .await
        .unwrap();
    assert_eq!(text(&result), "region=us-west1");

    let calls = s.rec.posts("tools/call");
    assert_eq!(
        calls[0].header("mcp-param-region"),
        Some("=?base64?SGVsbG8sIOS4lueVjA==?=")
    );
    assert_eq!(calls[0].header("mcp-param-count"), Some("42"));
    assert_eq!(calls[0].header("mcp-param-flag"), Some("true"));
    assert!(calls[0].header("mcp-param-query").is_none());
    assert_eq!(calls[1].header("mcp-param-region"), Some("us-west1"));
    assert!(calls[1].header("mcp-param-count").is_none());
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_header_mismatch_refreshes_the_tool_list_and_retries() {
    let s = start().await;
    let client = connect(&s.url, EraChoice::Modern).await;
    // Never listed: the first call lacks Mcp-Param-Region and is refused with -32020.
    let result = client
        .call_tool("region", json!({ "region": "eu" }))
        .await
        .unwrap();
    assert_eq!(text(&result), "region=eu");
    let calls = s.rec.posts("tools/call");
    assert_eq!(calls.len(), 2);
    assert!(calls[0].header("mcp-param-region").is_none());
    assert_eq!(calls[1].header("mcp-param-region"), Some("eu"));
    assert_eq!(s.rec.posts("tools/list").len(), 1);
    client.close().await.unwrap();
}

#[tokio::test]
async fn dropping_a_modern_call_closes_its_stream_and_cancels_it() {
    let s = start().await;
    let client = connect(&s.url, EraChoice::Modern).await;
    let err = client
        .call_tool_with(
            "hang",
            (),
            RequestOptions::new().timeout(Duration::from_millis(300)),
        )
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    within(async {
        while !s.probe.dropped.load(Ordering::SeqCst) {
            s.probe.dropped_notify.notified().await;
        }
    })
    .await;
    assert!(s.rec.posts("notifications/cancelled").is_empty());
    client.close().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Era detection.

fn empty(status: StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r
}

fn json_response(status: StatusCode, body: Value) -> Response {
    let mut r = Response::new(Body::from(body.to_string()));
    *r.status_mut() = status;
    r.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    r
}

#[tokio::test]
async fn a_4xx_without_a_modern_error_falls_back_to_initialize() {
    // A legacy-only front: server/discover is refused with an empty 400; it offers no GET
    // stream either (405).
    let gate: Gate = Arc::new(|seen: &Seen| {
        if seen.method == Method::GET {
            return Some(empty(StatusCode::METHOD_NOT_ALLOWED));
        }
        (seen.rpc_method() == Some("server/discover")).then(|| empty(StatusCode::BAD_REQUEST))
    });
    let s = start_with(HttpConfig::default(), Some(gate)).await;
    let client = connect(&s.url, EraChoice::Auto).await;
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(text(&client.call_tool("plain", ()).await.unwrap()), "plain");
    client.close().await.unwrap();
    assert_eq!(
        s.rec.with_method(Method::GET).len(),
        1,
        "a 405 is not retried"
    );
}

#[tokio::test]
async fn a_404_carrying_method_not_found_is_a_modern_server() {
    let gate: Gate = Arc::new(|seen: &Seen| {
        (seen.rpc_method() == Some("server/discover")).then(|| {
            json_response(
                StatusCode::NOT_FOUND,
                json!({ "jsonrpc": "2.0", "id": seen.body.as_ref().unwrap()["id"], "error": { "code": -32601, "message": "Method not found" } }),
            )
        })
    });
    let s = start_with(HttpConfig::default(), Some(gate)).await;
    let err = within(Client::builder().connect_http(&s.url))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("2026-07-28"), "{err}");
    assert!(
        s.rec.posts("initialize").is_empty(),
        "no fallback to initialize"
    );
}

#[tokio::test]
async fn an_unsupported_version_is_retried_with_a_supported_one() {
    // The first discover is refused with -32022 naming the very version asked for.
    let refused = Arc::new(AtomicBool::new(false));
    let gate: Gate = Arc::new(move |seen: &Seen| {
        if seen.rpc_method() != Some("server/discover") || refused.swap(true, Ordering::SeqCst) {
            return None;
        }
        Some(json_response(
            StatusCode::BAD_REQUEST,
            json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32022, "message": "Unsupported protocol version", "data": { "supported": [MODERN], "requested": MODERN } } }),
        ))
    });
    let s = start_with(HttpConfig::default(), Some(gate)).await;
    let client = connect(&s.url, EraChoice::Auto).await;
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(s.rec.posts("server/discover").len(), 2);
    assert!(s.rec.posts("initialize").is_empty());
    client.close().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Authorization.

/// Hands out a stale token until challenged, then a good one.
#[derive(Default)]
struct AuthState {
    good: AtomicBool,
    asked: AtomicUsize,
    challenges: Mutex<Vec<(u16, Vec<String>)>>,
}

#[derive(Clone, Default)]
struct TestAuth(Arc<AuthState>);

impl std::ops::Deref for TestAuth {
    type Target = AuthState;
    fn deref(&self) -> &AuthState {
        &self.0
    }
}

impl AuthProvider for TestAuth {
    fn authorization<'a>(
        &'a self,
        _url: &'a str,
    ) -> AuthFuture<'a, Result<Option<String>, AuthError>> {
        Box::pin(async move {
            self.asked.fetch_add(1, Ordering::SeqCst);
            Ok(Some(if self.good.load(Ordering::SeqCst) {
                "Bearer good".to_owned()
            } else {
                "Bearer stale".to_owned()
            }))
        })
    }

    fn on_challenge<'a>(
        &'a self,
        challenge: Challenge<'a>,
    ) -> AuthFuture<'a, Result<bool, AuthError>> {
        Box::pin(async move {
            self.challenges.lock().unwrap().push((
                challenge.status,
                challenge
                    .www_authenticate
                    .iter()
                    .map(|s| (*s).to_owned())
                    .collect(),
            ));
            self.good.store(true, Ordering::SeqCst);
            Ok(true)
        })
    }
}

#[tokio::test]
async fn the_auth_hook_is_asked_on_every_request_and_a_401_is_retried() {
    let gate: Gate = Arc::new(|seen: &Seen| {
        (seen.header("authorization") != Some("Bearer good")).then(|| {
            let mut r = empty(StatusCode::UNAUTHORIZED);
            r.headers_mut().insert(
                "www-authenticate",
                "Bearer resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource\""
                    .parse()
                    .unwrap(),
            );
            r
        })
    });
    let s = start_with(HttpConfig::default(), Some(gate)).await;
    let auth = TestAuth::default();
    let client = within(
        Client::builder()
            .era(EraChoice::Legacy)
            .auth(auth.clone())
            .connect_http(&s.url),
    )
    .await
    .unwrap();
    assert_eq!(text(&client.call_tool("plain", ()).await.unwrap()), "plain");
    client.close().await.unwrap();

    let challenges = auth.challenges.lock().unwrap().clone();
    assert_eq!(challenges.len(), 1);
    assert_eq!(challenges[0].0, 401);
    assert!(challenges[0].1[0].starts_with("Bearer resource_metadata="));
    let all = s.rec.all();
    assert_eq!(auth.asked.load(Ordering::SeqCst), all.len());
    assert_eq!(all[0].header("authorization"), Some("Bearer stale"));
    assert!(all[1..]
        .iter()
        .all(|r| r.header("authorization") == Some("Bearer good")));
    assert!(!s.rec.with_method(Method::GET).is_empty());
    assert!(!s.rec.with_method(Method::DELETE).is_empty());
}

// ---------------------------------------------------------------------------------------------
// Shared pool, and extra headers.

#[tokio::test]
async fn connections_share_a_client_and_send_extra_headers() {
    let s = start().await;
    let pool = default_client().unwrap();
    let a = within(
        Client::builder()
            .http_client(pool.clone())
            .header("x-tenant", "acme")
            .connect_http(&s.url),
    )
    .await
    .unwrap();
    let b = within(Client::builder().http_client(pool).connect_http(&s.url))
        .await
        .unwrap();
    assert_eq!(text(&a.call_tool("plain", ()).await.unwrap()), "plain");
    assert_eq!(text(&b.call_tool("plain", ()).await.unwrap()), "plain");
    let calls = s.rec.posts("tools/call");
    assert_eq!(
        calls
            .iter()
            .filter(|c| c.header("x-tenant") == Some("acme"))
            .count(),
        1
    );
    let bad = Client::builder()
        .header("bad header", "x")
        .connect_http(&s.url)
        .await
        .unwrap_err();
    assert!(matches!(bad, ClientError::InvalidArguments(_)), "{bad}");
}

// ---------------------------------------------------------------------------------------------
// The 2024-11-05 HTTP+SSE transport.

/// A minimal 2024-11-05 server: `GET /sse` opens the stream (first event: `endpoint`), `POST
/// /messages` takes messages (202) and answers on the stream; `POST /sse` is 405.
async fn start_old_server() -> (String, Recorder) {
    type Streams = Arc<Mutex<Option<mpsc::UnboundedSender<String>>>>;
    let stream: Streams = Arc::default();
    let rec = Recorder::default();
    let get_stream = stream.clone();
    let post_stream = stream.clone();
    let router = Router::new()
        .route(
            "/sse",
            axum::routing::get(move || {
                let stream = get_stream.clone();
                async move {
                    let (tx, rx) = mpsc::unbounded_channel::<String>();
                    let _ = tx.send("event: endpoint\ndata: /messages?session=7\n\n".to_owned());
                    *stream.lock().unwrap() = Some(tx);
                    let body = futures_util::stream::unfold(rx, |mut rx| async move {
                        let chunk = rx.recv().await?;
                        Some((Ok::<_, std::convert::Infallible>(chunk), rx))
                    });
                    let mut r = Response::new(Body::from_stream(body));
                    r.headers_mut()
                        .insert("content-type", "text/event-stream".parse().unwrap());
                    r
                }
            })
            .post(|| async { empty(StatusCode::METHOD_NOT_ALLOWED) }),
        )
        .route(
            "/messages",
            axum::routing::post(move |body: axum::body::Bytes| {
                let stream = post_stream.clone();
                async move {
                    let msg: Value = serde_json::from_slice(&body).unwrap();
                    let reply = match msg["method"].as_str() {
                        Some("initialize") => Some(json!({
                            "protocolVersion": "2024-11-05",
                            "capabilities": { "tools": {} },
                            "serverInfo": { "name": "old", "version": "1" }
                        })),
                        Some("tools/list") => Some(json!({ "tools": [
                            { "name": "echo", "inputSchema": { "type": "object" } }
                        ] })),
                        Some("tools/call") => Some(json!({
                            "content": [{ "type": "text", "text": "old echo" }]
                        })),
                        _ => None,
                    };
                    if let (Some(result), Some(id)) = (reply, msg.get("id")) {
                        let frame = json!({ "jsonrpc": "2.0", "id": id, "result": result });
                        if let Some(tx) = &*stream.lock().unwrap() {
                            let _ = tx.send(format!("event: message\ndata: {frame}\n\n"));
                        }
                    }
                    empty(StatusCode::ACCEPTED)
                }
            }),
        );
    let r = rec.clone();
    let router = router.layer(middleware::from_fn(move |req: Request, next: Next| {
        let r = r.clone();
        async move { record(r, None, req, next).await }
    }));
    let addr = serve_router(router).await;
    (format!("http://{addr}/sse"), rec)
}

#[tokio::test]
async fn servers_of_the_2024_11_05_transport_are_reached_through_their_sse_stream() {
    let (url, rec) = start_old_server().await;
    let client = connect(&url, EraChoice::Auto).await;
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.protocol_version(), "2024-11-05");
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools[0].name, "echo");
    assert_eq!(
        text(&client.call_tool("echo", ()).await.unwrap()),
        "old echo"
    );
    client.close().await.unwrap();

    let posted: Vec<String> = rec
        .with_method(Method::POST)
        .into_iter()
        .filter(|r| r.path == "/messages")
        .filter_map(|r| r.rpc_method().map(str::to_owned))
        .collect();
    assert_eq!(
        posted,
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call"
        ]
    );
}

#[tokio::test]
async fn the_exchange_hook_sees_each_request_with_its_headers_and_json_rpc_id() {
    use duomcp::client::transport::http::HttpExchange;
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let s = start().await;
        let seen: Arc<Mutex<Vec<HttpExchange>>> = Arc::default();
        let sink = seen.clone();
        let client = within(
            Client::builder()
                .era(era)
                .header("Authorization", "Bearer t0ken")
                .on_http_exchange(move |x| sink.lock().unwrap().push(x.clone()))
                .connect_http(&s.url),
        )
        .await
        .unwrap();
        let sent = Arc::new(Mutex::new(Vec::new()));
        let ids = sent.clone();
        let opts = RequestOptions::new().on_sent(move |id| ids.lock().unwrap().push(id.clone()));
        let result = client
            .request(
                "tools/call",
                json!({ "name": "plain", "arguments": {} }),
                opts,
            )
            .await
            .unwrap();
        assert_eq!(result["content"][0]["text"], "plain", "{era:?}");
        let id = {
            let sent = sent.lock().unwrap();
            assert_eq!(sent.len(), 1, "{era:?}");
            sent[0].clone()
        };
        let seen = seen.lock().unwrap().clone();
        let call = seen
            .iter()
            .find(|x| x.message_id.as_ref() == Some(&id))
            .unwrap_or_else(|| panic!("{era:?}: no exchange for {id:?} in {seen:?}"));
        assert_eq!(call.method, Method::POST);
        assert_eq!(call.url, s.url);
        assert_eq!(call.status, StatusCode::OK);
        assert_eq!(call.message_method.as_deref(), Some("tools/call"));
        assert_eq!(call.request_headers["mcp-method"], "tools/call");
        assert_eq!(call.request_headers["authorization"], "Bearer t0ken");
        assert!(
            call.response_headers.contains_key("content-type"),
            "{call:?}"
        );
        // The handshake went through it too.
        let first = seen[0].message_method.as_deref();
        assert!(
            matches!(first, Some("initialize" | "server/discover")),
            "{era:?}: {first:?}"
        );
        client.close().await.unwrap();
    }
}
