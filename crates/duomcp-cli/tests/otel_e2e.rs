//! End to end, two processes: `duomcp call` → `duomcp serve --http --otlp`, both exporting
//! over OTLP/HTTP to a receiver in this test; the server's span is the child of the client's,
//! in one trace. The same server's `--metrics` text passes `promtool check metrics` (Debian
//! package `prometheus`, installed by `.ci/run`; this test fails without it).

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp_testkit::otlp::{self, Exported};
use duomcp_testkit::process::{spawn_announced, wait_until};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message as _;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");

/// What the receiver got: (path, body).
type Received = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// A minimal OTLP/HTTP receiver: keeps every POST body, answers with an empty (valid)
/// protobuf response.
async fn receiver() -> (String, Received) {
    use http_body_util::{BodyExt as _, Full};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let got: Received = Arc::default();
    let keep = got.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let keep = keep.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let keep = keep.clone();
                        async move {
                            let path = req.uri().path().to_owned();
                            let body = match req.into_body().collect().await {
                                Ok(b) => b.to_bytes().to_vec(),
                                Err(_) => Vec::new(),
                            };
                            keep.lock().unwrap().push((path, body));
                            let mut res = hyper::Response::new(Full::new(bytes::Bytes::new()));
                            res.headers_mut().insert(
                                "content-type",
                                hyper::header::HeaderValue::from_static("application/x-protobuf"),
                            );
                            Ok::<_, std::convert::Infallible>(res)
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (format!("http://{addr}"), got)
}

fn spans(got: &Received) -> Vec<Exported> {
    let requests: Vec<ExportTraceServiceRequest> = got
        .lock()
        .unwrap()
        .iter()
        .filter(|(path, _)| path == "/v1/traces")
        .map(|(_, body)| ExportTraceServiceRequest::decode(body.as_slice()).expect("OTLP protobuf"))
        .collect();
    otlp::spans(&requests)
}

/// Starts `duomcp serve --http` with OTLP export and `/metrics`; returns the MCP URL and the
/// metrics URL, read from what it prints.
async fn serve(otlp: &str) -> (Child, String, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--http", "127.0.0.1:0", "--metrics", "127.0.0.1:0"])
        .args(["--otlp", otlp])
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT");
    let (child, urls) = spawn_announced(
        &mut cmd,
        &["serving the reference server at", "serving metrics at"],
        Duration::from_secs(20),
    )
    .await;
    let [mcp, metrics] = <[String; 2]>::try_from(urls).unwrap();
    (child, mcp, metrics)
}

async fn call(url: &str, otlp: &str, traceparent: Option<&str>) {
    let mut cmd = Command::new(BIN);
    cmd.args(["call", "test_simple_text", url])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", otlp)
        .env_remove("TRACEPARENT");
    if let Some(tp) = traceparent {
        cmd.env("TRACEPARENT", tp);
    }
    let out = tokio::time::timeout(Duration::from_secs(30), cmd.output())
        .await
        .expect("duomcp call finishes")
        .unwrap();
    assert!(
        out.status.success(),
        "duomcp call: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("simple text response"));
}

async fn wait_for(got: &Received, mut done: impl FnMut(&[Exported]) -> bool) -> Vec<Exported> {
    let every = Duration::from_millis(100);
    wait_until(
        "spans never arrived",
        Duration::from_secs(20),
        every,
        || {
            let now = spans(got);
            if done(&now) {
                Ok(now)
            } else {
                Err(otlp::summary(&now))
            }
        },
    )
    .await
}

const NAME: &str = "tools/call test_simple_text";

fn pair(spans: &[Exported], trace: Option<&[u8]>) -> Option<(Exported, Exported)> {
    let client = spans.iter().find(|s| {
        s.name == NAME && s.kind == SpanKind::Client as i32 && trace.is_none_or(|t| s.trace_id == t)
    })?;
    let server = spans.iter().find(|s| {
        s.name == NAME && s.kind == SpanKind::Server as i32 && s.trace_id == client.trace_id
    })?;
    Some((client.clone(), server.clone()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn one_trace_across_duomcp_call_and_duomcp_serve() {
    let (otlp, got) = receiver().await;
    let (mut server, url, metrics_url) = serve(&otlp).await;

    call(&url, &otlp, None).await;
    let exported = wait_for(&got, |s| pair(s, None).is_some()).await;
    let (client, served) = pair(&exported, None).unwrap();
    assert_eq!(client.service, "duomcp-cli");
    assert_eq!(served.service, "duomcp-serve");
    assert_eq!(
        served.trace_id, client.trace_id,
        "one trace id across both processes"
    );
    assert_eq!(
        served.parent_span_id, client.span_id,
        "the server's span is the client's child"
    );
    assert!(
        client.parent_span_id.is_empty(),
        "the command starts the trace"
    );

    // With TRACEPARENT, the command's spans join the caller's trace.
    let trace = "0af7651916cd43dd8448eb211c80319c";
    let parent = "b7ad6b7169203331";
    call(&url, &otlp, Some(&format!("00-{trace}-{parent}-01"))).await;
    let wanted: Vec<u8> = (0..16)
        .map(|i| u8::from_str_radix(&trace[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let exported = wait_for(&got, |s| pair(s, Some(&wanted)).is_some()).await;
    let (client, served) = pair(&exported, Some(&wanted)).unwrap();
    assert_eq!(hex(&client.parent_span_id), parent);
    assert_eq!(served.parent_span_id, client.span_id);

    // The Prometheus text of the same server passes promtool.
    let text = reqwest_like_get(&metrics_url).await;
    assert!(
        text.contains("mcp_server_operation_duration_seconds_count{")
            && text.contains("gen_ai_tool_name=\"test_simple_text\""),
        "{text}"
    );
    promtool_check(&text).await;

    let _ = server.start_kill();
    let _ = server.wait().await;
}

/// `duomcp call` → `duomcp gateway --http --otlp --metrics --audit` → `duomcp serve --otlp`
/// (stdio): one trace through three processes, four spans, each the child of the one before:
/// the command's client span, the gateway's server span, the gateway's client span for the
/// upstream call, the upstream's server span. The gateway's `/metrics` passes promtool and its
/// audit log has the call.
#[tokio::test]
async fn one_trace_through_the_gateway_to_its_upstream() {
    let (otlp, got) = receiver().await;
    let dir = std::env::temp_dir().join(format!("duomcp-gw-audit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let audit = dir.join("audit.jsonl");
    let _ = std::fs::remove_file(&audit);
    let mut cmd = Command::new(BIN);
    cmd.args([
        "gateway",
        "--http",
        "127.0.0.1:0",
        "--metrics",
        "127.0.0.1:0",
    ])
    .args(["--otlp", &otlp, "--audit", audit.to_str().unwrap()])
    .args(["--", BIN, "serve", "--otlp", &otlp])
    .env("OTEL_BSP_SCHEDULE_DELAY", "100")
    .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT");
    let (mut gateway, urls) = spawn_announced(
        &mut cmd,
        &["duomcp gateway: serving at", "serving metrics at"],
        Duration::from_secs(30),
    )
    .await;
    let [url, metrics_url] = <[String; 2]>::try_from(urls).unwrap();

    call(&url, &otlp, None).await;
    let kind = |s: &Exported, service: &str, k: SpanKind| {
        s.name == NAME && s.service == service && s.kind == k as i32
    };
    let chain = |spans: &[Exported]| -> Option<[Exported; 4]> {
        let client = spans
            .iter()
            .find(|s| kind(s, "duomcp-cli", SpanKind::Client))?;
        let child_of = |parent: &Exported, service: &str, k: SpanKind| {
            spans
                .iter()
                .find(|s| kind(s, service, k) && s.parent_span_id == parent.span_id)
                .cloned()
        };
        let served = child_of(client, "duomcp-gateway", SpanKind::Server)?;
        let upstream_call = child_of(&served, "duomcp-gateway", SpanKind::Client)?;
        let upstream = child_of(&upstream_call, "duomcp-serve", SpanKind::Server)?;
        Some([client.clone(), served, upstream_call, upstream])
    };
    let exported = wait_for(&got, |s| chain(s).is_some()).await;
    let spans = chain(&exported).unwrap();
    assert!(
        spans.iter().all(|s| s.trace_id == spans[0].trace_id),
        "one trace across the three processes"
    );

    let text = reqwest_like_get(&metrics_url).await;
    assert!(
        text.contains("mcp_server_operation_duration_seconds_count{")
            && text.contains("gen_ai_tool_name=\"test_simple_text\""),
        "{text}"
    );
    // The per-upstream series, labelled by the upstream's configured name only.
    let calls = text
        .lines()
        .find(|l| {
            l.starts_with("duomcp_gateway_upstream_calls_total{")
                && l.contains("upstream=\"upstream\"")
                && l.contains("outcome=\"ok\"")
                && l.contains("mcp_method_name=\"tools/call\"")
        })
        .unwrap_or_else(|| panic!("no upstream call series: {text}"));
    assert!(calls.ends_with(" 1"), "{calls}");
    assert!(
        text.contains("duomcp_gateway_upstream_call_duration_seconds_count{")
            && text.contains("duomcp_gateway_upstream_held_calls{")
            && text.contains("duomcp_gateway_upstream_isolated_sessions{"),
        "{text}"
    );
    promtool_check(&text).await;
    let lines = std::fs::read_to_string(&audit).unwrap();
    let line: serde_json::Value =
        serde_json::from_str(lines.lines().next().expect("an audit line")).expect("a JSON line");
    assert_eq!(line["tool"], "test_simple_text", "{line}");

    // The upstream's restarts: none yet; its process killed, the gateway restarts it (after
    // 100 ms) and counts one.
    let restarts = |text: &str| -> Option<String> {
        text.lines()
            .find(|l| {
                l.starts_with("duomcp_gateway_upstream_restarts_total{")
                    && l.contains("upstream=\"upstream\"")
            })
            .map(|l| l.rsplit(' ').next().unwrap_or_default().to_owned())
    };
    assert_eq!(restarts(&text).as_deref(), Some("0"), "{text}");
    let pid = gateway.id().unwrap().to_string();
    let children = std::process::Command::new("pgrep")
        .args(["-P", &pid])
        .output()
        .unwrap();
    let children = String::from_utf8_lossy(&children.stdout).to_string();
    let upstream = children
        .split_whitespace()
        .next()
        .expect("the upstream process");
    assert!(std::process::Command::new("kill")
        .args(["-9", upstream])
        .status()
        .unwrap()
        .success());
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let text = loop {
        let text = reqwest_like_get(&metrics_url).await;
        if restarts(&text).as_deref() == Some("1") || std::time::Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(restarts(&text).as_deref(), Some("1"), "{text}");
    promtool_check(&text).await;

    let _ = gateway.start_kill();
    let _ = gateway.wait().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// `GET url` over a plain HTTP/1.1 connection.
async fn reqwest_like_get(url: &str) -> String {
    use http_body_util::{BodyExt as _, Empty};
    let authority = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let stream = tokio::net::TcpStream::connect(&authority).await.unwrap();
    let (mut send, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    let req = hyper::Request::get(url)
        .header("host", authority)
        .body(Empty::<bytes::Bytes>::new())
        .unwrap();
    let res = send.send_request(req).await.unwrap();
    assert_eq!(res.status(), 200);
    let body = res.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(body.to_vec()).unwrap()
}

/// `promtool check metrics` on `text`: must be installed (Debian package `prometheus`).
async fn promtool_check(text: &str) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool is missing: install the Debian package `prometheus` (.ci/run does)");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(text.as_bytes()).await.unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
