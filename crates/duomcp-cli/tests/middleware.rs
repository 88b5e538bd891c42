//! MCP-level middleware (`ServerBuilder::layer`): order, short-circuits, tower's own layers, in
//! both eras and on stdio, Streamable HTTP and `Server::respond`. Every message the server sends
//! over stdio is validated against the official schema of the revision under test.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use duomcp::era::Era;
use duomcp::era::ProtocolError;
use duomcp::server::middleware::{layer_fn, Layer, McpRequest, McpResponse, McpService, Service};
use duomcp::server::{Args, Server, ServerBuilder, ToolSpec};
use duomcp::transport::http::StreamableHttp;
use serde_json::{json, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use support::{modern, Wire, LEGACY, MODERN};

type Log = Arc<Mutex<Vec<String>>>;
type BoxFut<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Records `name>in method target era` on the way in and `name<out ok|error` on the way out.
#[derive(Clone)]
struct Record<S> {
    name: &'static str,
    log: Log,
    inner: S,
}

impl<S> Service<McpRequest> for Record<S>
where
    S: Service<McpRequest, Response = McpResponse> + Send,
    S::Future: Send + 'static,
{
    type Response = McpResponse;
    type Error = S::Error;
    type Future = BoxFut<Result<McpResponse, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: McpRequest) -> Self::Future {
        let era = match req.era() {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        };
        self.log.lock().unwrap().push(format!(
            "{}>in {} {} {era}",
            self.name,
            req.method(),
            req.target().unwrap_or("-")
        ));
        let (name, log) = (self.name, self.log.clone());
        let fut = self.inner.call(req);
        Box::pin(async move {
            let res = fut.await;
            let outcome = match &res {
                Ok(r) if r.is_tool_error() => "isError",
                Ok(r) if r.is_ok() => "ok",
                Ok(_) => "error",
                Err(_) => "failed",
            };
            log.lock().unwrap().push(format!("{name}<out {outcome}"));
            res
        })
    }
}

fn record(name: &'static str, log: &Log) -> impl Layer<McpService, Service = Record<McpService>> {
    let log = log.clone();
    layer_fn(move |inner| Record {
        name,
        log: log.clone(),
        inner,
    })
}

/// Refuses `tools/call` of `secret` with an invalid-params error, without calling the tool.
#[derive(Clone)]
struct Guard<S>(S);

impl<S> Service<McpRequest> for Guard<S>
where
    S: Service<McpRequest, Response = McpResponse> + Send,
    S::Future: Send + 'static,
{
    type Response = McpResponse;
    type Error = S::Error;
    type Future = BoxFut<Result<McpResponse, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: McpRequest) -> Self::Future {
        if req.method() == "tools/call" && req.target() == Some("secret") {
            return Box::pin(async {
                Ok(McpResponse::error(ProtocolError::InvalidParams(
                    "Invalid params: `secret` is not for you".into(),
                )))
            });
        }
        Box::pin(self.0.call(req))
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Text {
    text: String,
}

fn tools(builder: ServerBuilder, secret_ran: Arc<AtomicBool>) -> ServerBuilder {
    builder
        .tool("echo", |Args(t): Args<Text>| async move { t.text })
        .tool(
            ToolSpec::new("secret").input_schema(json!({ "type": "object" })),
            move || {
                let ran = secret_ran.clone();
                async move {
                    ran.store(true, Ordering::SeqCst);
                    "the secret"
                }
            },
        )
        .tool(
            ToolSpec::new("fails").input_schema(json!({ "type": "object" })),
            || async { Err::<String, _>(duomcp::server::HandlerError::msg("it failed")) },
        )
}

fn take(log: &Log) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap())
}

#[tokio::test]
async fn outer_layer_runs_first_in_and_last_out_in_both_eras() {
    let log: Log = Arc::default();
    // Added later = outer.
    let server = tools(Server::builder(), Arc::default())
        .layer(record("inner", &log))
        .layer(record("outer", &log))
        .build();

    let mut legacy = Wire::in_process(server.clone(), LEGACY);
    legacy.initialize(json!({})).await;
    assert_eq!(
        take(&log),
        [
            "outer>in initialize - legacy",
            "inner>in initialize - legacy",
            "inner<out ok",
            "outer<out ok"
        ]
    );
    let r = legacy
        .ok(
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "hi" } }),
        )
        .await;
    assert_eq!(r["content"][0]["text"], "hi");
    assert_eq!(
        take(&log),
        [
            "outer>in tools/call echo legacy",
            "inner>in tools/call echo legacy",
            "inner<out ok",
            "outer<out ok"
        ]
    );
    let r = legacy.ok("tools/call", json!({ "name": "fails" })).await;
    assert_eq!(r["isError"], true);
    assert_eq!(
        take(&log),
        [
            "outer>in tools/call fails legacy",
            "inner>in tools/call fails legacy",
            "inner<out isError",
            "outer<out isError"
        ]
    );

    let mut modern_wire = Wire::in_process(server, MODERN);
    let e = modern_wire
        .err("tools/call", modern(json!({ "name": "nope" }), json!({})))
        .await;
    assert_eq!(e["code"], -32602);
    assert_eq!(
        take(&log),
        [
            "outer>in tools/call nope modern",
            "inner>in tools/call nope modern",
            "inner<out error",
            "outer<out error"
        ]
    );
}

#[tokio::test]
async fn a_layer_can_refuse_with_an_error_shaped_for_each_era() {
    let ran = Arc::new(AtomicBool::new(false));
    let server = tools(Server::builder(), ran.clone())
        .layer(layer_fn(Guard))
        .build();

    // 2025-11-25: the Wire validates the error response against that revision's schema.
    let mut legacy = Wire::in_process(server.clone(), LEGACY);
    legacy.initialize(json!({})).await;
    let e = legacy.err("tools/call", json!({ "name": "secret" })).await;
    assert_eq!(e["code"], -32602);
    assert_eq!(e["message"], "Invalid params: `secret` is not for you");
    // Other calls pass through.
    let r = legacy
        .ok(
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "x" } }),
        )
        .await;
    assert_eq!(r["content"][0]["text"], "x");

    // 2026-07-28, validated against the 2026-07-28 schema.
    let mut modern_wire = Wire::in_process(server.clone(), MODERN);
    let e = modern_wire
        .err("tools/call", modern(json!({ "name": "secret" }), json!({})))
        .await;
    assert_eq!(e["code"], -32602);
    assert_eq!(e["message"], "Invalid params: `secret` is not for you");

    // `Server::respond` (no connection) goes through the same stack.
    let request = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": modern(json!({ "name": "secret" }), json!({})) });
    let out = server
        .respond(&serde_json::to_vec(&request).unwrap())
        .await
        .unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["id"], 7);
    assert_eq!(v["error"]["code"], -32602);

    assert!(
        !ran.load(Ordering::SeqCst),
        "the refused tool must not have run"
    );
}

#[tokio::test]
async fn layers_apply_over_streamable_http() {
    use bytes::Bytes;
    use http_body_util::{BodyExt, Full};
    use hyper_util::rt::TokioIo;

    let log: Log = Arc::default();
    let ran = Arc::new(AtomicBool::new(false));
    let server = tools(Server::builder(), ran.clone())
        .layer(layer_fn(Guard))
        .layer(record("rec", &log))
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(StreamableHttp::new(server).serve(listener));

    let post = |name: &'static str| async move {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .unwrap();
        tokio::spawn(conn);
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": modern(json!({ "name": name, "arguments": { "text": "via http" } }), json!({})) });
        let req = hyper::Request::post("/mcp")
            .header("host", format!("127.0.0.1:{}", addr.port()))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", "tools/call")
            .header("mcp-name", name)
            .body(Full::new(Bytes::from(serde_json::to_vec(&body).unwrap())))
            .unwrap();
        let res = tokio::time::timeout(Duration::from_secs(10), sender.send_request(req))
            .await
            .unwrap()
            .unwrap();
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice::<Value>(&bytes)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&bytes)))
    };

    let ok = post("echo").await;
    assert_eq!(ok["result"]["content"][0]["text"], "via http", "{ok}");
    let refused = post("secret").await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(!ran.load(Ordering::SeqCst));
    assert_eq!(
        take(&log),
        [
            "rec>in tools/call echo modern",
            "rec<out ok",
            "rec>in tools/call secret modern",
            "rec<out error"
        ]
    );
}

#[tokio::test]
async fn towers_timeout_layer_answers_with_an_error_and_drops_the_handler() {
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let server = Server::builder()
        .tool("quick", || async { "quick" })
        .tool("stuck", move || {
            let flag = flag.clone();
            async move {
                struct OnDrop(Arc<AtomicBool>);
                impl Drop for OnDrop {
                    fn drop(&mut self) {
                        self.0.store(true, Ordering::SeqCst);
                    }
                }
                let _guard = OnDrop(flag);
                tokio::time::sleep(Duration::from_secs(30)).await;
                "never"
            }
        })
        .layer(tower::timeout::TimeoutLayer::new(Duration::from_millis(
            150,
        )))
        .build();
    for revision in [LEGACY, MODERN] {
        let mut wire = Wire::in_process(server.clone(), revision);
        let params = |name: &str| {
            if revision == LEGACY {
                json!({ "name": name })
            } else {
                modern(json!({ "name": name }), json!({}))
            }
        };
        if revision == LEGACY {
            wire.initialize(json!({})).await;
        }
        let r = wire.ok("tools/call", params("quick")).await;
        assert_eq!(r["content"][0]["text"], "quick");
        let started = Instant::now();
        let e = wire.err("tools/call", params("stuck")).await;
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(e["code"], -32603, "{e}");
        assert!(e["message"].as_str().unwrap().contains("timed out"), "{e}");
        assert!(
            dropped.swap(false, Ordering::SeqCst),
            "the handler was not dropped"
        );
    }
}

#[tokio::test]
async fn towers_concurrency_limit_layer_serialises_calls() {
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (r, p) = (running.clone(), peak.clone());
    let server = Server::builder()
        .tool("work", move || {
            let (running, peak) = (r.clone(), p.clone());
            async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(50)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                "done"
            }
        })
        .layer(tower::limit::ConcurrencyLimitLayer::new(1))
        .build();
    let mut wire = Wire::in_process(server, MODERN);
    for id in 1..=4 {
        wire.send(json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": modern(json!({ "name": "work" }), json!({})) }))
            .await;
    }
    let mut answered = Vec::new();
    for _ in 1..=4 {
        let msg = wire.recv().await;
        assert_eq!(msg["result"]["content"][0]["text"], "done", "{msg}");
        answered.push(msg["id"].as_i64().unwrap());
    }
    answered.sort_unstable();
    assert_eq!(answered, [1, 2, 3, 4]);
    assert_eq!(peak.load(Ordering::SeqCst), 1, "calls overlapped");
}
