//! Per-upstream instruments (feature `otel`), on the meter of the gateway's telemetry: calls
//! and their outcome, call latency, calls held for their client, the isolation pool's size,
//! restarts.
//! Their one label of the gateway's own is the upstream's name, which only the configuration
//! sets (never a client): the series are bounded by the upstreams configured.

use crate::Shared;
use opentelemetry::metrics::{Counter, Histogram, Meter, ObservableCounter, ObservableGauge};
use opentelemetry::KeyValue;
use std::sync::Weak;
use std::time::Duration;

/// The instruments of one gateway.
pub(crate) struct UpstreamMetrics {
    calls: Counter<u64>,
    duration: Histogram<f64>,
    _held: ObservableGauge<u64>,
    _isolated: ObservableGauge<u64>,
    _restarts: ObservableCounter<u64>,
}

/// How a call to an upstream ended, as counted.
#[derive(Clone, Copy)]
pub(crate) enum Outcome {
    Ok,
    /// The upstream's result says `isError`, or the call failed.
    Error,
    /// Held for its client's input (a round for a 2026-07-28 client).
    InputRequired,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::InputRequired => "input_required",
        }
    }
}

impl UpstreamMetrics {
    /// The instruments, on `meter`; the gauges read the gateway's upstreams and held calls
    /// when collected.
    pub(crate) fn new(meter: &Meter, shared: Weak<Shared>) -> Self {
        let calls = meter
            .u64_counter("duomcp.gateway.upstream.calls")
            .with_unit("{call}")
            .with_description("Calls the gateway made to an upstream, by outcome")
            .build();
        let duration = meter
            .f64_histogram("duomcp.gateway.upstream.call.duration")
            .with_unit("s")
            .with_description("How long a call to an upstream took, as the gateway saw it")
            .with_boundaries(vec![
                0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0,
            ])
            .build();
        let held = {
            let shared = shared.clone();
            meter
                .u64_observable_gauge("duomcp.gateway.upstream.held_calls")
                .with_unit("{call}")
                .with_description("Upstream calls held for their client's input")
                .with_callback(move |obs| {
                    let Some(shared) = shared.upgrade() else {
                        return;
                    };
                    for u in shared.upstreams().iter() {
                        let n = shared.holds.held_for(u.name());
                        obs.observe(n as u64, &[KeyValue::new("upstream", u.name().to_owned())]);
                    }
                })
                .build()
        };
        let restarts = {
            let shared = shared.clone();
            meter
                .u64_observable_counter("duomcp.gateway.upstream.restarts")
                .with_unit("{restart}")
                .with_description(
                    "Times an upstream's connection was made again (a stdio process restarted \
                     after it died, an HTTP session the upstream forgot)",
                )
                .with_callback(move |obs| {
                    let Some(shared) = shared.upgrade() else {
                        return;
                    };
                    for u in shared.upstreams().iter() {
                        obs.observe(
                            u.restarts(),
                            &[KeyValue::new("upstream", u.name().to_owned())],
                        );
                    }
                })
                .build()
        };
        let isolated = meter
            .u64_observable_gauge("duomcp.gateway.upstream.isolated_sessions")
            .with_unit("{session}")
            .with_description("Upstream sessions of the isolation pool")
            .with_callback(move |obs| {
                let Some(shared) = shared.upgrade() else {
                    return;
                };
                for u in shared.upstreams().iter() {
                    obs.observe(
                        u.isolated_sessions() as u64,
                        &[KeyValue::new("upstream", u.name().to_owned())],
                    );
                }
            })
            .build();
        UpstreamMetrics {
            calls,
            duration,
            _held: held,
            _isolated: isolated,
            _restarts: restarts,
        }
    }

    /// Counts one call of `method` to `upstream`.
    pub(crate) fn record(&self, upstream: &str, method: &str, took: Duration, outcome: Outcome) {
        let attrs = [
            KeyValue::new("upstream", upstream.to_owned()),
            KeyValue::new("mcp.method.name", method.to_owned()),
            KeyValue::new("outcome", outcome.as_str()),
        ];
        self.calls.add(1, &attrs);
        self.duration.record(took.as_secs_f64(), &attrs[..2]);
    }
}
