//! The SDK providers, with OTLP export configured by the standard `OTEL_*` variables.

use super::{PrometheusMetrics, Telemetry};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;

/// Why a [`Pipeline`] could not be built.
#[derive(Debug, thiserror::Error)]
#[error("OpenTelemetry: {0}")]
pub struct PipelineError(String);

/// The tracer and meter providers of a process: OTLP export when an endpoint is configured,
/// a Prometheus reader when asked for.
///
/// Traces and metrics are exported over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or the
/// per-signal `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `…_METRICS_ENDPOINT`) is set, or an
/// endpoint is given to [`PipelineBuilder::otlp_endpoint`], unless `OTEL_TRACES_EXPORTER` /
/// `OTEL_METRICS_EXPORTER` is `none`. `OTEL_EXPORTER_OTLP_PROTOCOL` (and the per-signal
/// variants) chooses `http/protobuf` (the default), `http/json` or `grpc` (feature
/// `otel-grpc`); headers, timeouts and compression come from the exporter's own `OTEL_*`
/// variables, the service from `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`, sampling
/// from `OTEL_TRACES_SAMPLER`, the export interval from `OTEL_METRIC_EXPORT_INTERVAL`.
///
/// Spans are exported by the SDK's batch processor (a bounded queue: 2,048 spans by default,
/// `OTEL_BSP_MAX_QUEUE_SIZE`; spans beyond it are dropped, never held).
///
/// ```
/// use duomcp::otel::Pipeline;
/// // No endpoint configured: nothing is exported, the Prometheus reader still works.
/// let pipeline = Pipeline::builder().prometheus(true).build().expect("pipeline");
/// let telemetry = pipeline.telemetry();
/// assert!(pipeline.prometheus().is_some());
/// # let _ = telemetry;
/// pipeline.shutdown();
/// ```
#[derive(Debug)]
pub struct Pipeline {
    tracer: SdkTracerProvider,
    meter: SdkMeterProvider,
    prometheus: Option<PrometheusMetrics>,
}

/// Builds a [`Pipeline`].
#[derive(Debug, Default)]
pub struct PipelineBuilder {
    endpoint: Option<String>,
    prometheus: bool,
    service_name: Option<String>,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

#[derive(Clone, Copy, PartialEq)]
enum Protocol {
    Http,
    Grpc,
}

/// Whether an `OTEL_*_PROTOCOL` variable chooses the protocol (else it is `http/protobuf`,
/// the specification's default, which the exporter would otherwise not pick with `http-json`
/// built in).
fn protocol_chosen(signal: &str) -> bool {
    env(&format!("OTEL_EXPORTER_OTLP_{signal}_PROTOCOL")).is_some()
        || env("OTEL_EXPORTER_OTLP_PROTOCOL").is_some()
}

fn protocol(signal: &str) -> Protocol {
    let var = format!("OTEL_EXPORTER_OTLP_{signal}_PROTOCOL");
    match env(&var)
        .or_else(|| env("OTEL_EXPORTER_OTLP_PROTOCOL"))
        .as_deref()
    {
        Some("grpc") => Protocol::Grpc,
        _ => Protocol::Http,
    }
}

impl PipelineBuilder {
    /// Exports to this OTLP endpoint (as `OTEL_EXPORTER_OTLP_ENDPOINT` would: for HTTP the
    /// base URL, `/v1/traces` and `/v1/metrics` are added).
    pub fn otlp_endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self
    }

    /// Adds a [`PrometheusMetrics`] reader (for a `/metrics` endpoint).
    pub fn prometheus(mut self, on: bool) -> Self {
        self.prometheus = on;
        self
    }

    /// The service name when `OTEL_SERVICE_NAME` does not give one.
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = Some(name.into());
        self
    }

    fn wants(&self, signal: &str) -> bool {
        let exporter = env(&format!("OTEL_{signal}_EXPORTER"));
        if exporter.as_deref() == Some("none") {
            return false;
        }
        self.endpoint.is_some()
            || env("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
            || env(&format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")).is_some()
    }

    fn endpoint_for(&self, path: &str, protocol: Protocol) -> Option<String> {
        let base = self.endpoint.as_deref()?;
        Some(match protocol {
            Protocol::Grpc => base.to_owned(),
            Protocol::Http => format!("{}/{path}", base.trim_end_matches('/')),
        })
    }

    /// Builds the providers (must run inside a Tokio runtime when exporting over gRPC).
    pub fn build(self) -> Result<Pipeline, PipelineError> {
        // The workspace's reqwest is built without a rustls provider (`rustls-no-provider`)
        // when another feature brings rustls: the exporter's client needs ring installed, as
        // duomcp's own HTTP clients do.
        #[cfg(any(feature = "http-client", feature = "auth", feature = "tls"))]
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut resource = Resource::builder();
        if env("OTEL_SERVICE_NAME").is_none() {
            if let Some(name) = &self.service_name {
                resource = resource.with_service_name(name.clone());
            }
        }
        let resource = resource.build();
        let mut tracer = SdkTracerProvider::builder().with_resource(resource.clone());
        if self.wants("TRACES") {
            tracer = tracer.with_batch_exporter(self.span_exporter()?);
        }
        let mut meter = SdkMeterProvider::builder().with_resource(resource);
        if self.wants("METRICS") {
            meter = meter.with_periodic_exporter(self.metric_exporter()?);
        }
        let prometheus = self.prometheus.then(PrometheusMetrics::new);
        if let Some(p) = &prometheus {
            meter = meter.with_reader(p.reader());
        }
        Ok(Pipeline {
            tracer: tracer.build(),
            meter: meter.build(),
            prometheus,
        })
    }

    fn span_exporter(&self) -> Result<opentelemetry_otlp::SpanExporter, PipelineError> {
        use opentelemetry_otlp::WithExportConfig as _;
        let protocol = protocol("TRACES");
        let endpoint = self.endpoint_for("v1/traces", protocol);
        let built = match protocol {
            #[cfg(feature = "otel-grpc")]
            Protocol::Grpc => {
                let b = opentelemetry_otlp::SpanExporter::builder().with_tonic();
                match endpoint {
                    Some(e) => b.with_endpoint(e).build(),
                    None => b.build(),
                }
            }
            #[cfg(not(feature = "otel-grpc"))]
            Protocol::Grpc => return Err(grpc_missing()),
            Protocol::Http => {
                let mut b = opentelemetry_otlp::SpanExporter::builder().with_http();
                if !protocol_chosen("TRACES") {
                    b = b.with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
                }
                match endpoint {
                    Some(e) => b.with_endpoint(e).build(),
                    None => b.build(),
                }
            }
        };
        built.map_err(|e| PipelineError(format!("the OTLP span exporter: {e}")))
    }

    fn metric_exporter(&self) -> Result<opentelemetry_otlp::MetricExporter, PipelineError> {
        use opentelemetry_otlp::WithExportConfig as _;
        let protocol = protocol("METRICS");
        let endpoint = self.endpoint_for("v1/metrics", protocol);
        let built = match protocol {
            #[cfg(feature = "otel-grpc")]
            Protocol::Grpc => {
                let b = opentelemetry_otlp::MetricExporter::builder().with_tonic();
                match endpoint {
                    Some(e) => b.with_endpoint(e).build(),
                    None => b.build(),
                }
            }
            #[cfg(not(feature = "otel-grpc"))]
            Protocol::Grpc => return Err(grpc_missing()),
            Protocol::Http => {
                let mut b = opentelemetry_otlp::MetricExporter::builder().with_http();
                if !protocol_chosen("METRICS") {
                    b = b.with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
                }
                match endpoint {
                    Some(e) => b.with_endpoint(e).build(),
                    None => b.build(),
                }
            }
        };
        built.map_err(|e| PipelineError(format!("the OTLP metric exporter: {e}")))
    }
}

#[cfg(not(feature = "otel-grpc"))]
fn grpc_missing() -> PipelineError {
    PipelineError("OTLP over gRPC needs duomcp's `otel-grpc` feature".into())
}

impl Pipeline {
    /// A pipeline configured by the `OTEL_*` variables alone.
    pub fn from_env() -> Result<Pipeline, PipelineError> {
        Self::builder().build()
    }

    /// Starts a pipeline.
    pub fn builder() -> PipelineBuilder {
        PipelineBuilder::default()
    }

    /// The [`Telemetry`] of servers and clients using this pipeline.
    pub fn telemetry(&self) -> Telemetry {
        Telemetry::new(&self.tracer, &self.meter)
    }

    /// The tracer provider.
    pub fn tracer_provider(&self) -> &SdkTracerProvider {
        &self.tracer
    }

    /// The meter provider.
    pub fn meter_provider(&self) -> &SdkMeterProvider {
        &self.meter
    }

    /// The Prometheus reader, when built with one.
    pub fn prometheus(&self) -> Option<&PrometheusMetrics> {
        self.prometheus.as_ref()
    }

    /// Installs the providers (and the W3C propagators) as `opentelemetry::global`'s, for the
    /// application's own spans.
    pub fn install_global(&self) {
        opentelemetry::global::set_tracer_provider(self.tracer.clone());
        opentelemetry::global::set_meter_provider(self.meter.clone());
        opentelemetry::global::set_text_map_propagator(
            opentelemetry_sdk::propagation::TraceContextPropagator::new(),
        );
    }

    /// Exports what is pending and stops the exporters (call before the process exits).
    pub fn shutdown(&self) {
        if let Err(e) = self.tracer.force_flush() {
            tracing::debug!("OpenTelemetry: flushing spans: {e}");
        }
        if let Err(e) = self.meter.force_flush() {
            tracing::debug!("OpenTelemetry: flushing metrics: {e}");
        }
        let _ = self.tracer.shutdown();
        let _ = self.meter.shutdown();
    }
}
