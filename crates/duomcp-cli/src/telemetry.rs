//! OpenTelemetry in the `duomcp` command (feature `otel`, on by default).
//!
//! * `duomcp serve --otlp ENDPOINT` exports the server's spans and metrics over OTLP
//!   (`OTEL_EXPORTER_OTLP_PROTOCOL` chooses `http/protobuf`, the default, `http/json` or
//!   `grpc`; every other `OTEL_*` variable applies; `OTEL_EXPORTER_OTLP_ENDPOINT` alone turns
//!   export on too), `--metrics ADDR` serves the Prometheus text at `http://ADDR/metrics` on a
//!   listener of its own, `--audit FILE` (`-` for stderr) writes a JSON line per tool call.
//! * Every client command runs in a client span per request and sends its trace context in
//!   `_meta` (and HTTP headers), so the server's spans are its children. A `TRACEPARENT`
//!   variable (W3C `traceparent` value) makes the command's spans children of that context;
//!   `OTEL_EXPORTER_OTLP_ENDPOINT` exports them.

#[cfg(feature = "otel")]
use duomcp::otel::Pipeline;
use duomcp::server::ServerBuilder;

/// The `serve` options for telemetry.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct ServeArgs {
    /// Export the server's traces and metrics over OTLP to ENDPOINT, the collector's base URL
    /// (`http://127.0.0.1:4318` for OTLP/HTTP; with `OTEL_EXPORTER_OTLP_PROTOCOL=grpc`,
    /// `http://127.0.0.1:4317`). The `OTEL_*` variables configure the rest.
    #[arg(long, value_name = "ENDPOINT")]
    pub otlp: Option<String>,
    /// Serve the metrics in the Prometheus text format at `http://ADDR/metrics` (its own
    /// listener, e.g. `127.0.0.1:9464`).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// Write one JSON line per tool call (time, principal, tool, outcome, duration, request
    /// id) to FILE, appended; `-` writes to stderr.
    #[arg(long, value_name = "FILE")]
    pub audit: Option<String>,
    /// With `--audit`: also record the arguments of calls to TOOL (repeatable).
    #[arg(long = "audit-arguments", value_name = "TOOL", requires = "audit")]
    pub audit_arguments: Vec<String>,
}

/// What runs for the server's telemetry; dropping it exports what is pending.
#[derive(Default)]
pub struct Running {
    #[cfg(feature = "otel")]
    pipeline: Option<Pipeline>,
}

impl Drop for Running {
    fn drop(&mut self) {
        #[cfg(feature = "otel")]
        if let Some(p) = self.pipeline.take() {
            p.shutdown();
        }
    }
}

#[cfg(feature = "otel")]
fn otlp_env_set() -> bool {
    [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()))
}

/// The telemetry a server records with, when asked for (feature `otel`; never without it).
#[cfg(feature = "otel")]
pub type Recorder = duomcp::otel::Telemetry;
/// The telemetry a server records with, when asked for (feature `otel`; never without it).
#[cfg(not(feature = "otel"))]
pub type Recorder = std::convert::Infallible;

impl ServeArgs {
    /// Gives the server its telemetry (when any option or `OTEL_EXPORTER_OTLP_ENDPOINT` asks
    /// for it) and starts the `/metrics` listener.
    pub async fn apply(&self, builder: ServerBuilder) -> Result<(ServerBuilder, Running), String> {
        let (telemetry, running) = self.start("duomcp-serve").await?;
        #[cfg(feature = "otel")]
        let builder = match telemetry {
            Some(t) => builder.telemetry(t),
            None => builder,
        };
        #[cfg(not(feature = "otel"))]
        let None = telemetry;
        Ok((builder, running))
    }

    /// The telemetry `service` records with (`None` when no option or
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` asks for any), the `/metrics` listener started.
    pub async fn start(&self, service: &str) -> Result<(Option<Recorder>, Running), String> {
        #[cfg(feature = "otel")]
        {
            let wanted = self.otlp.is_some()
                || self.metrics.is_some()
                || self.audit.is_some()
                || otlp_env_set();
            if !wanted {
                return Ok((None, Running::default()));
            }
            let mut p = Pipeline::builder()
                .service_name(service.to_owned())
                .prometheus(self.metrics.is_some());
            if let Some(endpoint) = &self.otlp {
                p = p.otlp_endpoint(endpoint.clone());
            }
            let pipeline = p.build().map_err(|e| e.to_string())?;
            let mut telemetry = pipeline.telemetry();
            if let Some(target) = &self.audit {
                let target = if target == "-" {
                    duomcp::otel::AuditTarget::Stderr
                } else {
                    duomcp::otel::AuditTarget::File(target.into())
                };
                let mut audit = duomcp::otel::AuditLog::open(&target)
                    .map_err(|e| format!("cannot open the audit log: {e}"))?;
                for tool in &self.audit_arguments {
                    audit = audit.with_arguments(tool.clone());
                }
                telemetry = telemetry.with_audit(audit);
            }
            if let (Some(addr), Some(prometheus)) = (&self.metrics, pipeline.prometheus()) {
                metrics_endpoint(addr, prometheus.clone()).await?;
            }
            Ok((
                Some(telemetry),
                Running {
                    pipeline: Some(pipeline),
                },
            ))
        }
        #[cfg(not(feature = "otel"))]
        {
            let _ = service;
            if self.otlp.is_some() || self.metrics.is_some() || self.audit.is_some() {
                return Err("this duomcp was built without the `otel` feature".into());
            }
            Ok((None, Running::default()))
        }
    }
}

/// Serves `GET /metrics` (and nothing else) on `addr`, in the background.
#[cfg(feature = "otel")]
async fn metrics_endpoint(
    addr: &str,
    prometheus: duomcp::otel::PrometheusMetrics,
) -> Result<(), String> {
    use http_body_util::Full;
    use hyper::body::Bytes;
    use hyper::{Response, StatusCode};
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen for /metrics on {addr}: {e}"))?;
    if let Ok(local) = listener.local_addr() {
        eprintln!("duomcp: serving metrics at http://{local}/metrics");
    }
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let prometheus = prometheus.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: hyper::Request<_>| {
                    let prometheus = prometheus.clone();
                    async move {
                        let res = if req.uri().path() == "/metrics" {
                            // Collecting takes locks, never the network: fine on this thread.
                            Response::builder()
                                .header("content-type", "text/plain; version=0.0.4; charset=utf-8")
                                .body(Full::new(Bytes::from(prometheus.render())))
                        } else {
                            Response::builder()
                                .status(StatusCode::NOT_FOUND)
                                .body(Full::new(Bytes::from_static(b"not found\n")))
                        };
                        res
                    }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let conn = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(std::time::Duration::from_secs(10))
                    .serve_connection(io, service);
                // Bounded: a scraper that never finishes its request is dropped.
                let _ = tokio::time::timeout(std::time::Duration::from_secs(60), conn).await;
            });
        }
    });
    Ok(())
}

#[cfg(feature = "otel")]
static CLIENT: std::sync::OnceLock<Option<Pipeline>> = std::sync::OnceLock::new();

/// Gives a client command's builder its telemetry: its spans carry the trace context to the
/// server (and are exported when `OTEL_EXPORTER_OTLP_ENDPOINT` is set).
pub fn client(builder: duomcp::client::ClientBuilder) -> duomcp::client::ClientBuilder {
    #[cfg(feature = "otel")]
    {
        let pipeline =
            CLIENT.get_or_init(
                || match Pipeline::builder().service_name("duomcp-cli").build() {
                    Ok(p) => Some(p),
                    Err(e) => {
                        tracing::warn!("{e}");
                        None
                    }
                },
            );
        if let Some(p) = pipeline {
            return builder.telemetry(p.telemetry());
        }
    }
    builder
}

/// Runs a client command in the context of `TRACEPARENT` (when set), then exports its spans.
pub async fn run_client<F: std::future::Future>(work: F) -> F::Output {
    #[cfg(feature = "otel")]
    {
        use opentelemetry::context::FutureExt as _;
        use opentelemetry::propagation::TextMapPropagator as _;
        let mut carrier = std::collections::HashMap::new();
        for (var, key) in [("TRACEPARENT", "traceparent"), ("TRACESTATE", "tracestate")] {
            if let Ok(v) = std::env::var(var) {
                carrier.insert(key.to_owned(), v);
            }
        }
        let cx = opentelemetry_sdk::propagation::TraceContextPropagator::new().extract(&carrier);
        let out = work.with_context(cx).await;
        if let Some(Some(p)) = CLIENT.get() {
            p.shutdown();
        }
        out
    }
    #[cfg(not(feature = "otel"))]
    work.await
}
