//! End to end over OTLP/gRPC: `duomcp call` → `duomcp serve --http --otlp`, both exporting with
//! `OTEL_EXPORTER_OTLP_PROTOCOL=grpc` to a gRPC trace receiver in this test (the generated tonic
//! `TraceService` server of `opentelemetry-proto`, served over HTTP/2 by hyper); the server's
//! span is the child of the client's, in the trace `TRACEPARENT` names.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp_testkit::otlp::{self, Exported};
use duomcp_testkit::process::{spawn_announced, wait_until};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::process::{Child, Command};
use tonic::codegen::Service as _;

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");
const NAME: &str = "tools/call test_simple_text";

/// Every export request the receiver got.
type Received = Arc<Mutex<Vec<ExportTraceServiceRequest>>>;

#[derive(Clone, Default)]
struct Collector(Received);

#[tonic::codegen::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.0.lock().unwrap().push(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

/// An OTLP/gRPC trace receiver on 127.0.0.1: returns its endpoint and what it got.
async fn receiver() -> (String, Received) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let collector = Collector::default();
    let got = collector.0.clone();
    let grpc = TraceServiceServer::new(collector);
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let grpc = grpc.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let mut grpc = grpc.clone();
                        async move { grpc.call(req).await }
                    },
                );
                let _ =
                    hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
            });
        }
    });
    (format!("http://{addr}"), got)
}

/// Starts `duomcp serve --http` exporting over OTLP/gRPC; returns the MCP URL it prints.
async fn serve(otlp: &str) -> (Child, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--http", "127.0.0.1:0", "--otlp", otlp])
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env("OTEL_METRICS_EXPORTER", "none")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
    let (child, mut urls) = spawn_announced(
        &mut cmd,
        &["serving the reference server at"],
        Duration::from_secs(20),
    )
    .await;
    (child, urls.remove(0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_exported_over_otlp_grpc() {
    let (otlp, got) = receiver().await;
    let (mut server, url) = serve(&otlp).await;

    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent = "00f067aa0ba902b7";
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        Command::new(BIN)
            .args(["call", "test_simple_text", &url])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &otlp)
            .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
            .env("OTEL_METRICS_EXPORTER", "none")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .env("TRACEPARENT", format!("00-{trace}-{parent}-01"))
            .output(),
    )
    .await
    .expect("duomcp call finishes")
    .unwrap();
    assert!(
        out.status.success(),
        "duomcp call: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("simple text response"));

    let wanted: Vec<u8> = (0..16)
        .map(|i| u8::from_str_radix(&trace[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let find = |spans: &[Exported], kind: SpanKind| {
        spans
            .iter()
            .find(|s| s.name == NAME && s.kind == kind as i32 && s.trace_id == wanted)
            .cloned()
    };
    let every = Duration::from_millis(50);
    let what = "the spans never arrived over gRPC";
    let (client, served) = wait_until(what, Duration::from_secs(20), every, || {
        let now = otlp::spans(got.lock().unwrap().iter());
        match (find(&now, SpanKind::Client), find(&now, SpanKind::Server)) {
            (Some(c), Some(s)) => Ok((c, s)),
            _ => Err(otlp::summary(&now)),
        }
    })
    .await;
    assert_eq!(client.service, "duomcp-cli");
    assert_eq!(served.service, "duomcp-serve");
    assert_eq!(
        client.parent_span_id,
        u64::from_str_radix(parent, 16).unwrap().to_be_bytes(),
        "the command's span is the TRACEPARENT's child"
    );
    assert_eq!(
        served.parent_span_id, client.span_id,
        "the server's span is the client's child"
    );

    let _ = server.start_kill();
    let _ = server.wait().await;
}
