//! OpenTelemetry for MCP (feature `otel`): traces and metrics by the OpenTelemetry semantic
//! conventions for the Model Context Protocol, W3C trace context carried in `_meta` (and in
//! HTTP headers), a Prometheus text endpoint and an audit log of tool calls.
//!
//! What is emitted, once a [`Telemetry`] is given to
//! [`ServerBuilder::telemetry`](crate::server::ServerBuilder::telemetry) or
//! [`ClientBuilder::telemetry`]:
//!
//! * a **server span** per request (kind `SERVER`, named `{mcp.method.name} {target}`, the
//!   target being the tool or prompt name), with `mcp.method.name`, `mcp.protocol.version`,
//!   `mcp.session.id`, `jsonrpc.request.id`, `gen_ai.tool.name` / `gen_ai.prompt.name`,
//!   `gen_ai.operation.name`, `mcp.resource.uri`, `network.transport`, and on failure
//!   `error.type` (the JSON-RPC code, or `tool_error` for an `isError` result),
//!   `rpc.response.status_code` and an `ERROR` status. Its parent is the context in
//!   `params._meta` (`traceparent`, `tracestate`, `baggage`), else the HTTP `traceparent`
//!   header; a header context that differs from `_meta`'s is recorded as a link;
//! * a **client span** per outgoing request (kind `CLIENT`), whose context is injected into the
//!   request's `_meta` (and sent as HTTP headers); the rounds of a multi-round-trip request
//!   link each to the round before; a server→client request (2025-11-25 elicitation, sampling,
//!   roots) is a client span of the server, child of the call that made it;
//! * tasks: the handler of a task keeps its call's context; `tasks/get`, `tasks/result`,
//!   `tasks/cancel` and `tasks/update` spans link to the `tools/call` span that created the task;
//! * metrics: `mcp.server.operation.duration`, `mcp.client.operation.duration`,
//!   `mcp.server.session.duration`, `mcp.client.session.duration` (histograms, seconds, by
//!   method, tool or prompt, `error.type`), and the up-down counters
//!   `duomcp.server.requests.active`, `duomcp.server.sessions.active`,
//!   `duomcp.server.listen_streams.active` and `duomcp.server.tasks` (by `duomcp.task.status`);
//!   with the `redis` feature, the counters `duomcp.bus.messages.published` and
//!   `duomcp.bus.messages.received` (the replicas' bus, this process's side);
//! * an [`AuditLog`] line per tool call, when one is configured.
//!
//! Turning it on: [`Pipeline::from_env`] builds the SDK providers from the standard `OTEL_*`
//! variables (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_PROTOCOL` `grpc` |
//! `http/protobuf` | `http/json`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_TRACES_SAMPLER`, `OTEL_METRIC_EXPORT_INTERVAL`, the per-signal variants …), with an
//! optional Prometheus reader ([`PrometheusMetrics`]); [`Telemetry::new`] takes any tracer and
//! meter provider (the SDK's in-memory exporters in tests).
//!
//! ```
//! use duomcp::otel::Telemetry;
//! use duomcp::server::Server;
//! use opentelemetry_sdk::metrics::SdkMeterProvider;
//! use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
//!
//! let spans = InMemorySpanExporter::default();
//! let tracer = SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build();
//! let meter = SdkMeterProvider::builder().build();
//! let server = Server::builder()
//!     .tool("hi", || async { "hi" })
//!     .telemetry(Telemetry::new(&tracer, &meter))
//!     .build();
//! # let _ = server;
//! ```
//!
//! **Why these crates.** `opentelemetry` (the API) and `opentelemetry_sdk` are the project's own
//! crates, the only maintained implementation for Rust; default features off, `trace` and
//! `metrics` only (no logs signal). `opentelemetry-otlp` exports over HTTP with `http-proto`
//! and `http-json` through its blocking `reqwest` client: reqwest 0.13 is the one the
//! workspace's HTTP client already uses (one copy in the tree), and the blocking client fits the
//! SDK's batch processor and periodic reader, which run on threads of their own (no async
//! runtime feature needed). gRPC (`tonic`) is the separate feature `otel-grpc`, since it brings
//! its own stack. Spans are made through the OpenTelemetry API directly rather than by
//! `tracing-opentelemetry`: the existing `mcp.request` tracing span stays as it is for logs,
//! and the OpenTelemetry span needs what a tracing layer cannot give it without a subscriber
//! and a global registry: a parent taken from `_meta`, links, kind and status by the
//! conventions, and no cost at all for a server without telemetry. The Prometheus text is
//! written here from the SDK's manual reader ([`PrometheusMetrics`]): the project's Prometheus
//! exporter (`opentelemetry-prometheus`) is discontinued and tied to the `prometheus` crate
//! and protobuf, and the text format of counters, gauges and histograms is a few dozen lines.

//!
#![cfg_attr(
    feature = "client",
    doc = "[`ClientBuilder::telemetry`]: crate::client::ClientBuilder::telemetry"
)]
#![cfg_attr(
    not(feature = "client"),
    doc = "[`ClientBuilder::telemetry`]: crate#features"
)]

mod audit;
pub(crate) mod client;
mod names;
pub(crate) mod outcome;
mod pipeline;
mod prometheus;
mod propagation;
pub(crate) mod server;

pub use audit::{AuditLog, AuditTarget};
pub use pipeline::{Pipeline, PipelineBuilder, PipelineError};
pub use prometheus::PrometheusMetrics;

pub(crate) use client::ClientCall;
#[cfg(feature = "client")]
pub(crate) use client::IncomingCall;
pub(crate) use propagation::HeaderContext;
pub(crate) use server::ServerCall;

use opentelemetry::global::BoxedTracer;
use opentelemetry::metrics::{Histogram, Meter, MeterProvider, UpDownCounter};
use opentelemetry::trace::{SpanContext, Tracer, TracerProvider};
use opentelemetry::InstrumentationScope;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// Runs `work` with `cx` as the current context, or unwrapped when there is none (no context
/// switch per poll without telemetry). The one wrapper of the server's and the client's spans.
#[inline]
pub(crate) fn in_context<F: std::future::Future>(
    cx: Option<opentelemetry::Context>,
    work: F,
) -> impl std::future::Future<Output = F::Output> {
    use futures_util::future::Either;
    use opentelemetry::context::FutureExt as _;
    match cx {
        Some(cx) => Either::Left(work.with_context(cx)),
        None => Either::Right(work),
    }
}

/// The tasks whose creating span is remembered for links (oldest forgotten first).
const MAX_TASK_LINKS: usize = 10_000;

/// Bucket boundaries (seconds) the conventions recommend for the MCP duration histograms.
const DURATION_BUCKETS: &[f64] = &[
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Where a server or client sends its spans, metrics and audit lines. Cheap to clone.
///
/// Give it to [`ServerBuilder::telemetry`](crate::server::ServerBuilder::telemetry) and
/// [`ClientBuilder::telemetry`]; without it nothing is measured and nothing is allocated for
/// telemetry.
///
#[cfg_attr(
    feature = "client",
    doc = "[`ClientBuilder::telemetry`]: crate::client::ClientBuilder::telemetry"
)]
#[cfg_attr(
    not(feature = "client"),
    doc = "[`ClientBuilder::telemetry`]: crate#features"
)]
#[derive(Clone)]
pub struct Telemetry {
    pub(crate) tracer: Arc<BoxedTracer>,
    pub(crate) m: Arc<Instruments>,
    pub(crate) audit: Option<Arc<AuditLog>>,
    pub(crate) tasks: Arc<TaskLinks>,
    meter: Meter,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("audit", &self.audit.is_some())
            .finish_non_exhaustive()
    }
}

/// The instruments, made once per [`Telemetry`].
pub(crate) struct Instruments {
    pub server_duration: Histogram<f64>,
    pub client_duration: Histogram<f64>,
    pub server_session: Histogram<f64>,
    #[cfg(feature = "client")]
    pub client_session: Histogram<f64>,
    pub active_requests: UpDownCounter<i64>,
    pub active_sessions: UpDownCounter<i64>,
    pub listen_streams: UpDownCounter<i64>,
    pub tasks: UpDownCounter<i64>,
}

impl Instruments {
    fn new(meter: &Meter) -> Self {
        let seconds = |name: &'static str, what: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(what)
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build()
        };
        let gauge = |name: &'static str, what: &'static str| {
            meter
                .i64_up_down_counter(name)
                .with_unit("{item}")
                .with_description(what)
                .build()
        };
        Instruments {
            server_duration: seconds(
                names::SERVER_OPERATION_DURATION,
                "MCP request duration as observed on the receiver",
            ),
            client_duration: seconds(
                names::CLIENT_OPERATION_DURATION,
                "MCP request duration as observed on the sender",
            ),
            server_session: seconds(
                names::SERVER_SESSION_DURATION,
                "The duration of the MCP session as observed on the MCP server",
            ),
            #[cfg(feature = "client")]
            client_session: seconds(
                names::CLIENT_SESSION_DURATION,
                "The duration of the MCP session as observed on the MCP client",
            ),
            active_requests: gauge(
                names::ACTIVE_REQUESTS,
                "MCP requests the server is answering",
            ),
            active_sessions: gauge(names::ACTIVE_SESSIONS, "MCP sessions open on the server"),
            listen_streams: gauge(
                names::LISTEN_STREAMS,
                "subscriptions/listen and 2025-11-25 GET streams open on the server",
            ),
            tasks: gauge(names::TASKS, "tasks held by the server, by status"),
        }
    }

    /// The bus counters of this process's Redis buses ([`BusCounts`](crate::redis::BusCounts)),
    /// read when the metrics are collected (no label: one series each).
    #[cfg(feature = "redis")]
    fn bus_counters(meter: &Meter) {
        let counter = |name: &'static str, what: &'static str, read: fn() -> u64| {
            meter
                .u64_observable_counter(name)
                .with_unit("{message}")
                .with_description(what)
                .with_callback(move |o| o.observe(read(), &[]))
                .build()
        };
        counter(
            names::BUS_PUBLISHED,
            "messages this process published on the replicas' Redis bus",
            || crate::common::bus_counts::BusCounts::current().published,
        );
        counter(
            names::BUS_RECEIVED,
            "messages from other replicas this process received on the Redis bus",
            || crate::common::bus_counts::BusCounts::current().received,
        );
    }
}

impl Telemetry {
    /// Telemetry through these providers (an SDK provider, or the in-memory ones in tests).
    pub fn new<T, S, M>(tracer_provider: &T, meter_provider: &M) -> Self
    where
        T: TracerProvider<Tracer = S>,
        S: Tracer + Send + Sync + 'static,
        S::Span: Send + Sync + 'static,
        M: MeterProvider,
    {
        let scope = scope();
        let tracer = BoxedTracer::new(Box::new(tracer_provider.tracer_with_scope(scope.clone())));
        let meter = meter_provider.meter_with_scope(scope);
        #[cfg(feature = "redis")]
        Instruments::bus_counters(&meter);
        Telemetry {
            tracer: Arc::new(tracer),
            m: Arc::new(Instruments::new(&meter)),
            audit: None,
            tasks: Arc::default(),
            meter,
        }
    }

    /// Telemetry through the global providers (`opentelemetry::global`), as installed by
    /// [`Pipeline::install_global`] or by the application.
    pub fn global() -> Self {
        let scope = scope();
        let meter = opentelemetry::global::meter_with_scope(scope.clone());
        #[cfg(feature = "redis")]
        Instruments::bus_counters(&meter);
        Telemetry {
            tracer: Arc::new(opentelemetry::global::tracer_provider().tracer_with_scope(scope)),
            m: Arc::new(Instruments::new(&meter)),
            audit: None,
            tasks: Arc::default(),
            meter,
        }
    }

    /// The meter of the MCP instruments, for an application's own (exported with them, to the
    /// same places).
    ///
    /// ```
    /// let t = duomcp::otel::Telemetry::global();
    /// let jobs = t.meter().u64_counter("myapp.jobs").build();
    /// jobs.add(1, &[]);
    /// ```
    pub fn meter(&self) -> &Meter {
        &self.meter
    }

    /// Writes an audit line per tool call (server side) to `audit`.
    pub fn with_audit(mut self, audit: AuditLog) -> Self {
        self.audit = Some(Arc::new(audit));
        self
    }
}

fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("duomcp")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}

/// The span that created each task, for the links of the task's later requests. Bounded: the
/// oldest entries go first.
#[derive(Default)]
pub(crate) struct TaskLinks {
    inner: Mutex<(HashMap<String, SpanContext>, VecDeque<String>)>,
}

impl TaskLinks {
    pub(crate) fn put(&self, task: &str, cx: SpanContext) {
        if !cx.is_valid() {
            return;
        }
        let mut g = crate::util::lock(&self.inner);
        let (map, order) = &mut *g;
        if map.insert(task.to_owned(), cx).is_none() {
            order.push_back(task.to_owned());
        }
        while order.len() > MAX_TASK_LINKS {
            if let Some(old) = order.pop_front() {
                map.remove(&old);
            }
        }
    }

    pub(crate) fn get(&self, task: &str) -> Option<SpanContext> {
        crate::util::lock(&self.inner).0.get(task).cloned()
    }
}
