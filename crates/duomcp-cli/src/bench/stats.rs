//! Latency samples and the report.

use duomcp::era::Era;
use serde::Serialize;
use std::fmt;
use std::time::Duration;

/// Collected latencies (microseconds) and counts.
#[derive(Default)]
pub(crate) struct Samples {
    pub latencies_us: Vec<u32>,
    pub errors: u64,
}

impl Samples {
    pub fn record(&mut self, latency: Duration, ok: bool) {
        self.latencies_us
            .push(latency.as_micros().min(u32::MAX as u128) as u32);
        if !ok {
            self.errors += 1;
        }
    }

    pub fn merge(&mut self, other: Samples) {
        self.latencies_us.extend(other.latencies_us);
        self.errors += other.errors;
    }
}

/// The outcome of one benchmark run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// A label for the run.
    pub label: String,
    /// "stdio", "http" (HTTP/1.1) or "http2".
    pub transport: &'static str,
    /// The era spoken.
    pub era: Era,
    /// Window (stdio) or connections (HTTP).
    pub concurrency: usize,
    /// HTTP/2: streams in flight on each connection (1 otherwise).
    pub streams: usize,
    /// Payload bytes per request.
    pub payload: usize,
    /// Completed requests in the measured interval.
    pub requests: u64,
    /// Responses that were errors or did not echo the payload.
    pub errors: u64,
    /// Requests per second.
    pub rps: f64,
    /// Latency percentiles in microseconds.
    pub p50_us: u32,
    /// 90th percentile.
    pub p90_us: u32,
    /// 99th percentile.
    pub p99_us: u32,
    /// Slowest request.
    pub max_us: u32,
    /// The server's peak resident set size in KiB, when its pid is known.
    pub server_peak_rss_kib: Option<u64>,
    /// The server's CPU time (user + system) in seconds, when its pid is known.
    pub server_cpu_s: Option<f64>,
    /// stdio: milliseconds from spawning the server to its first answer.
    pub startup_ms: Option<f64>,
}

impl Report {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        label: String,
        transport: &'static str,
        era: Era,
        concurrency: usize,
        payload: usize,
        mut samples: Samples,
        elapsed: Duration,
    ) -> Report {
        samples.latencies_us.sort_unstable();
        let n = samples.latencies_us.len();
        let pct = |p: f64| -> u32 {
            if n == 0 {
                return 0;
            }
            let i = ((p * n as f64).ceil() as usize).clamp(1, n) - 1;
            samples.latencies_us[i]
        };
        Report {
            label,
            transport,
            era,
            concurrency,
            streams: 1,
            payload,
            requests: n as u64,
            errors: samples.errors,
            rps: n as f64 / elapsed.as_secs_f64().max(1e-9),
            p50_us: pct(0.50),
            p90_us: pct(0.90),
            p99_us: pct(0.99),
            max_us: samples.latencies_us.last().copied().unwrap_or(0),
            server_peak_rss_kib: None,
            server_cpu_s: None,
            startup_ms: None,
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let era = match self.era {
            Era::Legacy => "2025-11-25",
            Era::Modern => "2026-07-28",
        };
        let conc = if self.transport == "stdio" {
            "window"
        } else {
            "connections"
        };
        let streams = if self.streams > 1 {
            format!(" × {} streams", self.streams)
        } else {
            String::new()
        };
        writeln!(
            f,
            "{} — {} {era}, {conc} {}{streams}, payload {} B",
            self.label, self.transport, self.concurrency, self.payload
        )?;
        writeln!(
            f,
            "  requests   {:>12}   errors {}",
            self.requests, self.errors
        )?;
        writeln!(f, "  rate       {:>12.0} req/s", self.rps)?;
        writeln!(
            f,
            "  latency    p50 {:.3} ms   p90 {:.3} ms   p99 {:.3} ms   max {:.3} ms",
            self.p50_us as f64 / 1e3,
            self.p90_us as f64 / 1e3,
            self.p99_us as f64 / 1e3,
            self.max_us as f64 / 1e3
        )?;
        if let (Some(rss), Some(cpu)) = (self.server_peak_rss_kib, self.server_cpu_s) {
            writeln!(
                f,
                "  server     peak RSS {:.1} MiB   CPU {cpu:.2} s",
                rss as f64 / 1024.0
            )?;
        }
        if let Some(ms) = self.startup_ms {
            writeln!(f, "  startup    {ms:.1} ms to the first answer")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let mut s = Samples::default();
        for us in 1..=100u64 {
            s.record(Duration::from_micros(us), us != 50);
        }
        let r = Report::new(
            "t".into(),
            "stdio",
            Era::Modern,
            1,
            64,
            s,
            Duration::from_secs(2),
        );
        assert_eq!((r.requests, r.errors), (100, 1));
        assert_eq!((r.p50_us, r.p90_us, r.p99_us, r.max_us), (50, 90, 99, 100));
        assert!((r.rps - 50.0).abs() < 1e-9);
    }
}
