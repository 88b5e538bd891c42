//! The Prometheus text exposition (format 0.0.4) of the SDK's metrics, read on each scrape.
//!
//! Hand-written on purpose (see the module header of `otel`): a manual reader collects the
//! cumulative state when scraped, and this writes counters, gauges (up-down counters) and
//! histograms as the text format says. Names are the OpenTelemetry names with `.` as `_` and
//! the unit as a suffix (`mcp.server.operation.duration` in `s` is
//! `mcp_server_operation_duration_seconds`); attributes are labels.

use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, Metric, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{InstrumentKind, ManualReader, Pipeline, Temporality};
use std::fmt::Write as _;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// A metric reader for a `/metrics` endpoint: give [`reader`](Self::reader) to the meter
/// provider, and serve [`render`](Self::render) on each scrape.
///
/// ```
/// use duomcp::otel::PrometheusMetrics;
/// use opentelemetry::metrics::MeterProvider as _;
/// use opentelemetry_sdk::metrics::SdkMeterProvider;
///
/// let prometheus = PrometheusMetrics::new();
/// let provider = SdkMeterProvider::builder().with_reader(prometheus.reader()).build();
/// provider.meter("demo").u64_counter("calls").build().add(2, &[]);
/// assert!(prometheus.render().contains("calls_total 2"));
/// ```
#[derive(Clone, Debug)]
pub struct PrometheusMetrics {
    reader: Arc<ManualReader>,
}

impl Default for PrometheusMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl PrometheusMetrics {
    /// A reader with cumulative temporality (what Prometheus expects).
    pub fn new() -> Self {
        PrometheusMetrics {
            reader: Arc::new(
                ManualReader::builder()
                    .with_temporality(Temporality::Cumulative)
                    .build(),
            ),
        }
    }

    /// The reader to register with `SdkMeterProvider::builder().with_reader(…)`.
    pub fn reader(&self) -> impl MetricReader {
        SharedReader(self.reader.clone())
    }

    /// The current metrics in the Prometheus text format (empty before the reader is
    /// registered).
    pub fn render(&self) -> String {
        let mut rm = ResourceMetrics::default();
        if let Err(e) = self.reader.collect(&mut rm) {
            tracing::debug!("prometheus: collect failed: {e}");
        }
        let mut out = String::new();
        for scope in rm.scope_metrics() {
            for metric in scope.metrics() {
                write_metric(&mut out, metric);
            }
        }
        out
    }
}

#[derive(Debug)]
struct SharedReader(Arc<ManualReader>);

impl MetricReader for SharedReader {
    fn register_pipeline(&self, pipeline: Weak<Pipeline>) {
        self.0.register_pipeline(pipeline)
    }
    fn collect(&self, rm: &mut ResourceMetrics) -> OTelSdkResult {
        self.0.collect(rm)
    }
    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }
    fn temporality(&self, kind: InstrumentKind) -> Temporality {
        self.0.temporality(kind)
    }
}

/// `[a-zA-Z_:][a-zA-Z0-9_:]*`: anything else becomes `_`.
fn sanitize(name: &str, out: &mut String) {
    for (i, c) in name.chars().enumerate() {
        let ok = c.is_ascii_alphabetic() || c == '_' || c == ':' || (i > 0 && c.is_ascii_digit());
        out.push(if ok { c } else { '_' });
    }
}

fn unit_suffix(unit: &str) -> Option<&'static str> {
    Some(match unit {
        "s" => "seconds",
        "ms" => "milliseconds",
        "By" => "bytes",
        "1" => "ratio",
        _ => return None,
    })
}

fn family_name(metric: &Metric) -> String {
    let mut name = String::new();
    sanitize(metric.name(), &mut name);
    if let Some(suffix) = unit_suffix(metric.unit()) {
        if !name.ends_with(suffix) {
            name.push('_');
            name.push_str(suffix);
        }
    }
    name
}

fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

fn escape_label(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.as_str().to_owned(),
        other => other.to_string(),
    }
}

/// `{k="v",…}` sorted by key, with `extra` (`le`) last; empty when there are no labels. Sorted
/// because the SDK hands a series' attributes over in the order of whichever measurement it
/// keeps (as recorded or sorted, varying from run to run): one series, one text.
fn labels<'a>(attrs: impl Iterator<Item = &'a KeyValue>, extra: Option<(&str, &str)>) -> String {
    let mut attrs: Vec<&KeyValue> = attrs.collect();
    attrs.sort_by(|a, b| a.key.as_str().cmp(b.key.as_str()));
    let mut out = String::new();
    let mut first = true;
    let mut push = |k: &str, v: &str, out: &mut String| {
        out.push(if first { '{' } else { ',' });
        first = false;
        sanitize(k, out);
        out.push_str("=\"");
        escape_label(v, out);
        out.push('"');
    };
    for kv in attrs {
        push(kv.key.as_str(), &value_text(&kv.value), &mut out);
    }
    if let Some((k, v)) = extra {
        push(k, v, &mut out);
    }
    if !out.is_empty() {
        out.push('}');
    }
    out
}

fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        v.to_string()
    }
}

trait AsF64: Copy {
    fn f(self) -> f64;
}
impl AsF64 for f64 {
    fn f(self) -> f64 {
        self
    }
}
impl AsF64 for u64 {
    fn f(self) -> f64 {
        self as f64
    }
}
impl AsF64 for i64 {
    fn f(self) -> f64 {
        self as f64
    }
}

fn write_metric(out: &mut String, metric: &Metric) {
    let name = family_name(metric);
    match metric.data() {
        AggregatedMetrics::F64(d) => write_data(out, &name, metric.description(), d),
        AggregatedMetrics::U64(d) => write_data(out, &name, metric.description(), d),
        AggregatedMetrics::I64(d) => write_data(out, &name, metric.description(), d),
    }
}

fn header(out: &mut String, name: &str, help: &str, kind: &str) {
    if !help.is_empty() {
        let _ = writeln!(out, "# HELP {name} {}", escape_help(help));
    }
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn write_data<T: AsF64>(out: &mut String, name: &str, help: &str, data: &MetricData<T>) {
    match data {
        MetricData::Gauge(g) => {
            header(out, name, help, "gauge");
            for p in g.data_points() {
                let _ = writeln!(
                    out,
                    "{name}{} {}",
                    labels(p.attributes(), None),
                    number(p.value().f())
                );
            }
        }
        MetricData::Sum(s) if s.is_monotonic() => {
            // The text format (0.0.4) names a counter's family as its samples, `_total`
            // included (OpenMetrics would leave the suffix out of the family's name).
            let name = format!("{}_total", name.strip_suffix("_total").unwrap_or(name));
            header(out, &name, help, "counter");
            for p in s.data_points() {
                let _ = writeln!(
                    out,
                    "{name}{} {}",
                    labels(p.attributes(), None),
                    number(p.value().f())
                );
            }
        }
        MetricData::Sum(s) => {
            header(out, name, help, "gauge");
            for p in s.data_points() {
                let _ = writeln!(
                    out,
                    "{name}{} {}",
                    labels(p.attributes(), None),
                    number(p.value().f())
                );
            }
        }
        MetricData::Histogram(h) => {
            header(out, name, help, "histogram");
            for p in h.data_points() {
                let mut cumulative = 0u64;
                let counts: Vec<u64> = p.bucket_counts().collect();
                for (i, bound) in p.bounds().enumerate() {
                    cumulative += counts.get(i).copied().unwrap_or(0);
                    let le = number(bound);
                    let _ = writeln!(
                        out,
                        "{name}_bucket{} {cumulative}",
                        labels(p.attributes(), Some(("le", &le)))
                    );
                }
                let _ = writeln!(
                    out,
                    "{name}_bucket{} {}",
                    labels(p.attributes(), Some(("le", "+Inf"))),
                    p.count()
                );
                let plain = labels(p.attributes(), None);
                let _ = writeln!(out, "{name}_sum{plain} {}", number(p.sum().f()));
                let _ = writeln!(out, "{name}_count{plain} {}", p.count());
            }
        }
        // Not made by duomcp's instruments (no view asks for them): left out.
        MetricData::ExponentialHistogram(_) => {}
    }
}
