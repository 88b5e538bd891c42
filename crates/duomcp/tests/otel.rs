//! OpenTelemetry (feature `otel`): spans, their names, kinds, attributes and parent/child links,
//! and metric points, read back from the SDK's in-memory exporters.
//!
//! Client and server each get their own providers, exporting into one in-memory span exporter,
//! so a test sees both sides of every request as a backend would.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::client::{Client, EraChoice, RequestOptions};
use duomcp::otel::{AuditLog, PrometheusMetrics, Telemetry};
use duomcp::schema::{ElicitRequestFormParams, ElicitResult, TaskSupport};
use duomcp::server::{Context, HandlerError, Server, ToolSpec};
use duomcp::transport::http::StreamableHttp;
use opentelemetry::trace::{SpanKind, Status};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One side's providers, exporting spans into a shared exporter.
struct Side {
    tracer: SdkTracerProvider,
    meter: SdkMeterProvider,
    metrics: InMemoryMetricExporter,
}

impl Side {
    fn new(spans: &InMemorySpanExporter) -> Self {
        let metrics = InMemoryMetricExporter::default();
        Side {
            tracer: SdkTracerProvider::builder()
                .with_simple_exporter(spans.clone())
                .build(),
            meter: SdkMeterProvider::builder()
                .with_reader(PeriodicReader::builder(metrics.clone()).build())
                .build(),
            metrics,
        }
    }

    fn telemetry(&self) -> Telemetry {
        Telemetry::new(&self.tracer, &self.meter)
    }
}

fn schema() -> serde_json::Value {
    json!({ "type": "object", "properties": {} })
}

/// `greet` (ok), `broken` (isError), `ask` (elicits), `slow` (a task when the client can take one).
fn server(t: Telemetry) -> Server {
    Server::builder()
        .tool(ToolSpec::new("greet").input_schema(schema()), || async {
            "hello"
        })
        .tool(ToolSpec::new("broken").input_schema(schema()), || async {
            Err::<String, _>(anyhow_like("it broke"))
        })
        .tool(
            ToolSpec::new("ask").input_schema(schema()),
            |ctx: Context| async move {
                let form = ElicitRequestFormParams::new(
                    "Name?".to_owned(),
                    serde_json::from_value(json!({
                        "type": "object", "properties": { "name": { "type": "string" } }
                    }))
                    .unwrap(),
                );
                let answer = ctx.elicit("name", form.into()).await?;
                Ok::<_, HandlerError>(format!("got {:?}", answer.content))
            },
        )
        .tool(
            ToolSpec::new("slow")
                .input_schema(schema())
                .task_support(TaskSupport::Required),
            || async {
                tokio::time::sleep(Duration::from_millis(50)).await;
                "slow done"
            },
        )
        .telemetry(t)
        .build()
}

fn anyhow_like(message: &str) -> String {
    message.to_owned()
}

fn client_builder(t: Telemetry, era: EraChoice) -> duomcp::client::ClientBuilder {
    Client::builder()
        .era(era)
        .telemetry(t)
        .on_elicit(|_| async {
            Ok(ElicitResult::accept(
                serde_json::from_value(json!({ "name": "Ada" })).unwrap(),
            ))
        })
}

fn attr<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn attr_str(span: &SpanData, key: &str) -> Option<String> {
    attr(span, key).map(|v| v.as_str().into_owned())
}

fn find<'a>(spans: &'a [SpanData], name: &str, kind: SpanKind) -> Vec<&'a SpanData> {
    spans
        .iter()
        .filter(|s| s.name == name && s.span_kind == kind)
        .collect()
}

fn one<'a>(spans: &'a [SpanData], name: &str, kind: SpanKind) -> &'a SpanData {
    let found = find(spans, name, kind.clone());
    assert_eq!(
        found.len(),
        1,
        "one {kind:?} span {name:?} expected in {:?}",
        spans
            .iter()
            .map(|s| (s.name.as_ref(), &s.span_kind))
            .collect::<Vec<_>>()
    );
    found[0]
}

fn is_child(child: &SpanData, parent: &SpanData) {
    assert_eq!(
        child.span_context.trace_id(),
        parent.span_context.trace_id(),
        "{} and {} share a trace",
        child.name,
        parent.name
    );
    assert_eq!(
        child.parent_span_id,
        parent.span_context.span_id(),
        "{} is a child of {}",
        child.name,
        parent.name
    );
}

/// The tool-call spans of both sides: names, kinds, attributes, parent/child.
fn check_tool_calls(spans: &[SpanData], version: &str, transport: &str) {
    let client = one(spans, "tools/call greet", SpanKind::Client);
    let server = one(spans, "tools/call greet", SpanKind::Server);
    is_child(server, client);
    for s in [client, server] {
        assert_eq!(
            attr_str(s, "mcp.method.name").as_deref(),
            Some("tools/call")
        );
        assert_eq!(attr_str(s, "gen_ai.tool.name").as_deref(), Some("greet"));
        assert_eq!(
            attr_str(s, "gen_ai.operation.name").as_deref(),
            Some("execute_tool")
        );
        assert_eq!(
            attr_str(s, "mcp.protocol.version").as_deref(),
            Some(version)
        );
        assert_eq!(attr_str(s, "network.transport").as_deref(), Some(transport));
        assert!(attr(s, "jsonrpc.request.id").is_some());
        assert!(attr(s, "error.type").is_none());
        assert_eq!(s.status, Status::Unset);
    }
    assert_eq!(
        attr_str(client, "jsonrpc.request.id"),
        attr_str(server, "jsonrpc.request.id")
    );
    // A tool error: `error.type` is `tool_error` and the status is an error, on both sides.
    let client = one(spans, "tools/call broken", SpanKind::Client);
    let server = one(spans, "tools/call broken", SpanKind::Server);
    is_child(server, client);
    for s in [client, server] {
        assert_eq!(attr_str(s, "error.type").as_deref(), Some("tool_error"));
        assert!(matches!(s.status, Status::Error { .. }), "{:?}", s.status);
    }
    // A protocol error (unknown tool): the JSON-RPC code.
    let server = one(spans, "tools/call nope", SpanKind::Server);
    assert_eq!(attr_str(server, "error.type").as_deref(), Some("-32602"));
    assert_eq!(
        attr_str(server, "rpc.response.status_code").as_deref(),
        Some("-32602")
    );
    assert!(matches!(server.status, Status::Error { .. }));
    let client = one(spans, "tools/call nope", SpanKind::Client);
    assert_eq!(attr_str(client, "error.type").as_deref(), Some("-32602"));
}

async fn run_calls(client: &Client) {
    let ok = client.call_tool("greet", json!({})).await.unwrap();
    assert_ne!(ok.is_error, Some(true));
    let broken = client.call_tool("broken", json!({})).await.unwrap();
    assert_eq!(broken.is_error, Some(true));
    assert!(client.call_tool("nope", json!({})).await.is_err());
}

async fn stdio_run(era: EraChoice, version: &str) {
    let spans = InMemorySpanExporter::default();
    let (server_side, client_side) = (Side::new(&spans), Side::new(&spans));
    let (transport, _serving) = duomcp::transport::memory::pair(server(server_side.telemetry()));
    let client = client_builder(client_side.telemetry(), era)
        .connect_transport(transport)
        .await
        .unwrap();
    run_calls(&client).await;
    let spans = spans.get_finished_spans().unwrap();
    check_tool_calls(&spans, version, "pipe");
}

#[tokio::test]
async fn tools_call_spans_over_stdio_in_2026_07_28() {
    stdio_run(EraChoice::Modern, "2026-07-28").await;
}

#[tokio::test]
async fn tools_call_spans_over_stdio_in_2025_11_25() {
    stdio_run(EraChoice::Legacy, "2025-11-25").await;
}

async fn http_server(t: Telemetry) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let http = StreamableHttp::new(server(t));
    tokio::spawn(async move { http.serve(listener).await });
    format!("http://{addr}/mcp")
}

async fn http_run(era: EraChoice, version: &str) -> Vec<SpanData> {
    let spans = InMemorySpanExporter::default();
    let (server_side, client_side) = (Side::new(&spans), Side::new(&spans));
    let url = http_server(server_side.telemetry()).await;
    let client = client_builder(client_side.telemetry(), era)
        .connect_http(&url)
        .await
        .unwrap();
    run_calls(&client).await;
    let spans = spans.get_finished_spans().unwrap();
    check_tool_calls(&spans, version, "tcp");
    let server = one(&spans, "tools/call greet", SpanKind::Server);
    assert_eq!(
        attr_str(server, "network.protocol.name").as_deref(),
        Some("http")
    );
    spans
}

#[tokio::test]
async fn tools_call_spans_over_http_in_2026_07_28() {
    let spans = http_run(EraChoice::Modern, "2026-07-28").await;
    let server = one(&spans, "tools/call greet", SpanKind::Server);
    assert!(
        attr(server, "mcp.session.id").is_none(),
        "2026-07-28 has no session"
    );
}

#[tokio::test]
async fn tools_call_spans_over_http_in_2025_11_25() {
    let spans = http_run(EraChoice::Legacy, "2025-11-25").await;
    let server = one(&spans, "tools/call greet", SpanKind::Server);
    let session = attr_str(server, "mcp.session.id").expect("the Mcp-Session-Id");
    assert!(!session.is_empty());
}

/// The `traceparent` HTTP header alone parents the server span (a client that does not write
/// `_meta`).
#[tokio::test]
async fn the_http_traceparent_header_parents_the_server_span() {
    let spans = InMemorySpanExporter::default();
    let server_side = Side::new(&spans);
    let url = http_server(server_side.telemetry()).await;
    let body = json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"greet","_meta":{
        "io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{}}}});
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent = "00f067aa0ba902b7";
    let stream =
        tokio::net::TcpStream::connect(url.trim_start_matches("http://").trim_end_matches("/mcp"))
            .await
            .unwrap();
    let (mut send, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    let req = http::Request::post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "greet")
        .header("traceparent", format!("00-{trace}-{parent}-01"))
        .body(http_body_util::Full::new(bytes::Bytes::from(
            body.to_string(),
        )))
        .unwrap();
    let res = send.send_request(req).await.unwrap();
    assert_eq!(res.status(), 200);
    use http_body_util::BodyExt as _;
    let _ = res.into_body().collect().await.unwrap();
    let spans = spans.get_finished_spans().unwrap();
    let server = one(&spans, "tools/call greet", SpanKind::Server);
    assert_eq!(server.span_context.trace_id().to_string(), trace);
    assert_eq!(server.parent_span_id.to_string(), parent);
    assert_eq!(attr_str(server, "jsonrpc.request.id").as_deref(), Some("7"));
}

/// A 2026-07-28 MRTR round: two requests, each a client span with its server span as child;
/// the second round links to the first.
#[tokio::test]
async fn an_mrtr_round_is_two_linked_requests() {
    let spans = InMemorySpanExporter::default();
    let (server_side, client_side) = (Side::new(&spans), Side::new(&spans));
    let (transport, _serving) = duomcp::transport::memory::pair(server(server_side.telemetry()));
    let client = client_builder(client_side.telemetry(), EraChoice::Modern)
        .connect_transport(transport)
        .await
        .unwrap();
    let result = client.call_tool("ask", json!({})).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let spans = spans.get_finished_spans().unwrap();
    let clients = find(&spans, "tools/call ask", SpanKind::Client);
    let servers = find(&spans, "tools/call ask", SpanKind::Server);
    assert_eq!((clients.len(), servers.len()), (2, 2), "two rounds");
    let by_id = |s: &&SpanData| attr_str(s, "jsonrpc.request.id");
    let (mut clients, mut servers) = (clients.clone(), servers.clone());
    clients.sort_by_key(by_id);
    servers.sort_by_key(by_id);
    for (c, s) in clients.iter().zip(&servers) {
        is_child(s, c);
    }
    let (first, second) = (clients[0], clients[1]);
    assert!(first.start_time <= second.start_time);
    let (first, second) = if first.links.links.is_empty() {
        (first, second)
    } else {
        (second, first)
    };
    assert_eq!(
        second.links.links.len(),
        1,
        "the later round links to the earlier"
    );
    assert_eq!(
        second.links.links[0].span_context.span_id(),
        first.span_context.span_id()
    );
}

/// A 2025-11-25 server→client elicitation: the server's `elicitation/create` client span is a
/// child of its `tools/call` span, and the client's server span of that request its child.
#[tokio::test]
async fn a_legacy_elicitation_is_a_child_of_its_call() {
    let spans = InMemorySpanExporter::default();
    let (server_side, client_side) = (Side::new(&spans), Side::new(&spans));
    let (transport, _serving) = duomcp::transport::memory::pair(server(server_side.telemetry()));
    let client = client_builder(client_side.telemetry(), EraChoice::Legacy)
        .connect_transport(transport)
        .await
        .unwrap();
    let result = client.call_tool("ask", json!({})).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let spans = spans.get_finished_spans().unwrap();
    let call_client = one(&spans, "tools/call ask", SpanKind::Client);
    let call_server = one(&spans, "tools/call ask", SpanKind::Server);
    let elicit_server_side = one(&spans, "elicitation/create", SpanKind::Client);
    let elicit_client_side = one(&spans, "elicitation/create", SpanKind::Server);
    is_child(call_server, call_client);
    is_child(elicit_server_side, call_server);
    is_child(elicit_client_side, elicit_server_side);
    assert_eq!(
        attr_str(elicit_server_side, "mcp.method.name").as_deref(),
        Some("elicitation/create")
    );
}

/// A task: the polls are in the caller's trace and link to the `tools/call` span that created
/// the task.
#[tokio::test]
async fn task_polls_link_to_the_call_that_created_the_task() {
    for era in [EraChoice::Modern, EraChoice::Legacy] {
        let spans = InMemorySpanExporter::default();
        let (server_side, client_side) = (Side::new(&spans), Side::new(&spans));
        let (transport, _serving) =
            duomcp::transport::memory::pair(server(server_side.telemetry()));
        let client = client_builder(client_side.telemetry(), era)
            .connect_transport(transport)
            .await
            .unwrap();
        let _ = client.list_tools(None).await.unwrap();
        let result = client
            .call_tool_with("slow", json!({}), RequestOptions::new().as_task())
            .await
            .unwrap();
        assert_ne!(result.is_error, Some(true), "{result:?}");
        let spans = spans.get_finished_spans().unwrap();
        let call = one(&spans, "tools/call slow", SpanKind::Server);
        let polls: Vec<_> = spans
            .iter()
            .filter(|s| s.span_kind == SpanKind::Server && s.name.starts_with("tasks/"))
            .collect();
        assert!(!polls.is_empty(), "{era:?}: the client polled the task");
        // The tasks-by-status gauge: the task went from working to completed.
        server_side.meter.force_flush().unwrap();
        assert_eq!(task_gauge(&server_side.metrics, "completed"), 1, "{era:?}");
        assert_eq!(task_gauge(&server_side.metrics, "working"), 0, "{era:?}");
        for poll in polls {
            assert!(attr(poll, "duomcp.task.id").is_some());
            assert_eq!(
                poll.links.links.len(),
                1,
                "{era:?}: {} links to its call",
                poll.name
            );
            assert_eq!(
                poll.links.links[0].span_context.span_id(),
                call.span_context.span_id()
            );
        }
    }
}

/// The `duomcp.server.tasks` value for one status, from the last export.
fn task_gauge(exporter: &InMemoryMetricExporter, status: &str) -> i64 {
    let batches = exporter.get_finished_metrics().unwrap();
    let last = batches.last().expect("an export");
    let wanted = KeyValue::new("duomcp.task.status", status.to_owned());
    let mut value = 0;
    for scope in last.scope_metrics() {
        for metric in scope
            .metrics()
            .filter(|m| m.name() == "duomcp.server.tasks")
        {
            if let AggregatedMetrics::I64(MetricData::Sum(sum)) = metric.data() {
                for p in sum.data_points() {
                    if p.attributes().any(|a| *a == wanted) {
                        value += p.value();
                    }
                }
            }
        }
    }
    value
}

fn histogram_counts(exporter: &InMemoryMetricExporter, name: &str, wanted: &[KeyValue]) -> u64 {
    let mut total = 0;
    let batches = exporter.get_finished_metrics().unwrap();
    // Cumulative: the last export holds the totals.
    let Some(last) = batches.last() else { return 0 };
    for scope in last.scope_metrics() {
        for metric in scope.metrics() {
            if metric.name() != name {
                continue;
            }
            if let AggregatedMetrics::F64(MetricData::Histogram(h)) = metric.data() {
                for p in h.data_points() {
                    let attrs: Vec<_> = p.attributes().collect();
                    if wanted.iter().all(|w| attrs.contains(&w)) {
                        total += p.count();
                    }
                }
            }
        }
    }
    total
}

/// Metric points for a run of calls with known outcomes: 3 ok, 2 tool errors, 1 protocol
/// error, on both sides.
#[tokio::test]
async fn operation_duration_counts_calls_by_tool_and_outcome() {
    let spans = InMemorySpanExporter::default();
    let (server_side, client_side) = (Side::new(&spans), Side::new(&spans));
    let (transport, _serving) = duomcp::transport::memory::pair(server(server_side.telemetry()));
    let client = client_builder(client_side.telemetry(), EraChoice::Modern)
        .connect_transport(transport)
        .await
        .unwrap();
    for _ in 0..3 {
        client.call_tool("greet", json!({})).await.unwrap();
    }
    for _ in 0..2 {
        client.call_tool("broken", json!({})).await.unwrap();
    }
    assert!(client.call_tool("nope", json!({})).await.is_err());
    server_side.meter.force_flush().unwrap();
    client_side.meter.force_flush().unwrap();
    let tool = |t: &str| KeyValue::new("gen_ai.tool.name", t.to_owned());
    let method = KeyValue::new("mcp.method.name", "tools/call");
    // The server labels a tool it does not have `_OTHER` (a client cannot make one series
    // per name); the client labels what it called.
    for (side, name, unknown) in [
        (&server_side, "mcp.server.operation.duration", "_OTHER"),
        (&client_side, "mcp.client.operation.duration", "nope"),
    ] {
        let m = &side.metrics;
        assert_eq!(
            histogram_counts(m, name, &[method.clone(), tool("greet")]),
            3,
            "{name}"
        );
        // No `error.type` on the successful ones.
        let ok_points = {
            let batches = m.get_finished_metrics().unwrap();
            let last = batches.last().unwrap();
            let mut with_error = 0;
            for scope in last.scope_metrics() {
                for metric in scope.metrics().filter(|x| x.name() == name) {
                    if let AggregatedMetrics::F64(MetricData::Histogram(h)) = metric.data() {
                        for p in h.data_points() {
                            let a: Vec<_> = p.attributes().collect();
                            if a.contains(&&tool("greet"))
                                && a.iter().any(|kv| kv.key.as_str() == "error.type")
                            {
                                with_error += 1;
                            }
                        }
                    }
                }
            }
            with_error
        };
        assert_eq!(ok_points, 0, "{name}: successful calls carry no error.type");
        assert_eq!(
            histogram_counts(
                m,
                name,
                &[tool("broken"), KeyValue::new("error.type", "tool_error")]
            ),
            2,
            "{name}"
        );
        assert_eq!(
            histogram_counts(
                m,
                name,
                &[tool(unknown), KeyValue::new("error.type", "-32602")]
            ),
            1,
            "{name}"
        );
    }
}

/// The server's up-down counters: nothing in flight after the calls, one session open while
/// the connection lives.
#[tokio::test]
async fn prometheus_text_has_the_histograms_and_gauges() {
    let spans = InMemorySpanExporter::default();
    let prometheus = PrometheusMetrics::new();
    let meter = SdkMeterProvider::builder()
        .with_reader(prometheus.reader())
        .build();
    let tracer = SdkTracerProvider::builder()
        .with_simple_exporter(spans.clone())
        .build();
    let (transport, _serving) =
        duomcp::transport::memory::pair(server(Telemetry::new(&tracer, &meter)));
    let client = Client::builder()
        .era(EraChoice::Legacy)
        .connect_transport(transport)
        .await
        .unwrap();
    client.call_tool("greet", json!({})).await.unwrap();
    client.call_tool("broken", json!({})).await.unwrap();
    let text = prometheus.render();
    assert!(
        text.contains("# TYPE mcp_server_operation_duration_seconds histogram"),
        "{text}"
    );
    assert!(
        text.contains(
            "mcp_server_operation_duration_seconds_count{gen_ai_tool_name=\"greet\",mcp_method_name=\"tools/call\""
        ),
        "{text}"
    );
    assert!(text.contains("le=\"+Inf\""), "{text}");
    assert!(text.contains("duomcp_server_requests_active 0"), "{text}");
    assert!(text.contains("duomcp_server_sessions_active 1"), "{text}");
    // The replicas' bus counters (feature `redis`), one series each, whether a bus runs or not.
    if cfg!(feature = "redis") {
        assert!(
            text.contains("# TYPE duomcp_bus_messages_received_total counter"),
            "{text}"
        );
        assert!(
            text.contains("duomcp_bus_messages_published_total "),
            "{text}"
        );
    }
    drop(client);
}

/// Issue 32 item 6: names a client makes up (tools, methods) are not label values; 2,000 of
/// them leave the scrape with a handful of series while the registered tool keeps its own.
#[tokio::test]
async fn unknown_tool_names_and_methods_do_not_become_label_values() {
    let prometheus = PrometheusMetrics::new();
    let meter = SdkMeterProvider::builder()
        .with_reader(prometheus.reader())
        .build();
    let tracer = SdkTracerProvider::builder().build();
    let (transport, _serving) =
        duomcp::transport::memory::pair(server(Telemetry::new(&tracer, &meter)));
    let client = Client::builder()
        .era(EraChoice::Legacy)
        .connect_transport(transport)
        .await
        .unwrap();
    client.call_tool("greet", json!({})).await.unwrap();
    for i in 0..2000 {
        let _ = client.call_tool(&format!("made-up-{i}"), json!({})).await;
    }
    for i in 0..50 {
        let _ = client
            .request_raw(
                &format!("made/up/{i}"),
                serde_json::Map::new(),
                duomcp::client::RequestOptions::new(),
            )
            .await;
    }
    let text = prometheus.render();
    let series = text
        .lines()
        .filter(|l| l.starts_with("mcp_server_operation_duration_seconds_count"))
        .count();
    eprintln!("scrape: {} bytes, {series} operation series", text.len());
    assert!(
        !text.contains("made-up"),
        "an unknown tool became a label value"
    );
    assert!(
        !text.contains("made/up"),
        "an unknown method became a label value"
    );
    assert!(text.contains("gen_ai_tool_name=\"_OTHER\""), "{text}");
    assert!(text.contains("gen_ai_tool_name=\"greet\""), "{text}");
    assert!(series <= 10, "{series} series");
    assert!(text.len() < 64 * 1024, "{} bytes", text.len());
    drop(client);
}

/// A writer the test can read back.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The audit log: one JSON line per tool call, arguments only for the tools that ask for them,
/// never a token.
#[tokio::test]
async fn the_audit_log_has_a_line_per_tool_call() {
    let spans = InMemorySpanExporter::default();
    let side = Side::new(&spans);
    let buffer = Buffer::default();
    let audit = AuditLog::to_writer(buffer.clone()).with_arguments("greet");
    let (transport, _serving) =
        duomcp::transport::memory::pair(server(side.telemetry().with_audit(audit)));
    let client = Client::builder()
        .era(EraChoice::Modern)
        .connect_transport(transport)
        .await
        .unwrap();
    client
        .call_tool("greet", json!({ "who": "Ada" }))
        .await
        .unwrap();
    client
        .call_tool("broken", json!({ "secret": "x" }))
        .await
        .unwrap();
    let _ = client.list_tools(None).await.unwrap();
    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "tool calls only: {text}");
    assert_eq!(lines[0]["tool"], "greet");
    assert_eq!(lines[0]["outcome"], "ok");
    assert_eq!(lines[0]["arguments"], json!({ "who": "Ada" }));
    assert_eq!(lines[0]["subject"], Principal_local_subject());
    assert!(lines[0]["time"].as_str().unwrap().ends_with('Z'));
    assert!(lines[0]["duration_ms"].as_f64().unwrap() >= 0.0);
    assert!(lines[0]["request_id"].is_string());
    assert_eq!(lines[1]["tool"], "broken");
    assert_eq!(lines[1]["outcome"], "tool_error");
    assert!(
        lines[1].get("arguments").is_none(),
        "arguments are opt-in per tool"
    );
    assert!(!text.contains("secret"));
}

#[allow(non_snake_case)]
fn Principal_local_subject() -> serde_json::Value {
    match duomcp::server::Principal::local().subject() {
        Some(s) => json!(s),
        None => serde_json::Value::Null,
    }
}
