//! `duomcp serve --http --limit KEY=VALUE`: the Streamable HTTP limits of the reference server,
//! changed from the command line (the table of every limit is LIMITS.md at the repository root).
//!
//! Durations are `500ms`, `2s` or `5m`; sizes are bytes, or with `K`/`M` (KiB, MiB).
//!
//! ```
//! use duomcp::transport::http::HttpConfig;
//! let mut config = HttpConfig::default();
//! duomcp_cli::limits::apply(&mut config, &["body-timeout=2s".into(), "max-sessions=50".into()]).unwrap();
//! assert_eq!(config.body_timeout, Some(std::time::Duration::from_secs(2)));
//! assert_eq!(config.max_sessions, 50);
//! assert!(duomcp_cli::limits::apply(&mut config, &["no-such=1".into()]).is_err());
//! ```

use duomcp::transport::http::{HttpConfig, MemoryEventStore, Rate};
use std::sync::Arc;
use std::time::Duration;

/// The keys `--limit` takes, with what they set.
pub const KEYS: &[(&str, &str)] = &[
    ("header-timeout", "HttpConfig::header_read_timeout"),
    ("body-timeout", "HttpConfig::body_timeout (0: none)"),
    (
        "body-bytes-in-flight",
        "HttpConfig::max_body_bytes_in_flight",
    ),
    ("max-sessions", "HttpConfig::max_sessions"),
    (
        "max-fleet-sessions",
        "HttpConfig::max_fleet_sessions (replicas sharing a session store)",
    ),
    ("session-idle-timeout", "HttpConfig::session_idle_timeout"),
    (
        "session-touch-interval",
        "HttpConfig::session_touch_interval (0: every request asks)",
    ),
    (
        "session-handshake-timeout",
        "HttpConfig::session_handshake_timeout",
    ),
    ("max-requests", "HttpConfig::max_concurrent_requests"),
    ("max-listen-streams", "HttpConfig::max_listen_streams"),
    ("max-streams", "HttpConfig::max_streams"),
    (
        "max-streams-per-session",
        "HttpConfig::max_streams_per_session",
    ),
    ("max-client-data", "HttpConfig::max_client_data"),
    ("request-timeout", "HttpConfig::request_timeout (0: none)"),
    (
        "events-per-stream",
        "MemoryEventStore, events kept per stream",
    ),
    (
        "events-per-session",
        "MemoryEventStore, events kept per session",
    ),
    ("event-log-bytes", "MemoryEventStore::max_bytes"),
    (
        "principal-requests",
        "HttpConfig::max_requests_per_principal",
    ),
    (
        "principal-rate",
        "HttpConfig::principal_rate, requests/s (0: none)",
    ),
    ("principal-burst", "HttpConfig::principal_rate, burst"),
    ("peer-rate", "HttpConfig::peer_rate, requests/s (0: none)"),
    ("peer-burst", "HttpConfig::peer_rate, burst"),
    (
        "limit-loopback-peers",
        "HttpConfig::limit_loopback_peers (true/false)",
    ),
    ("max-principals", "HttpConfig::max_principals"),
];

fn count(v: &str) -> Result<u32, String> {
    v.trim()
        .parse()
        .map_err(|_| format!("`{v}` is not a count (0 to 4294967295)"))
}

/// Sets the per-second rate of `rate` (0: no limit), keeping its burst.
fn set_rate(rate: &mut Option<Rate>, default: Rate, per_second: u32) {
    let burst = rate.unwrap_or(default).burst;
    *rate = (per_second > 0).then_some(Rate::new(per_second, burst));
}

/// Sets the burst of `rate`, keeping its per-second rate (no effect when not limited).
fn set_burst(rate: &mut Option<Rate>, burst: u32) {
    if let Some(r) = rate {
        *r = Rate::new(r.per_second, burst);
    }
}

fn duration(v: &str) -> Result<Duration, String> {
    let v = v.trim();
    let (digits, unit) = v.split_at(v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len()));
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{v}` is not a duration (like 500ms, 2s, 5m)"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" | "" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        _ => Err(format!("`{v}` is not a duration (like 500ms, 2s, 5m)")),
    }
}

fn size(v: &str) -> Result<usize, String> {
    let v = v.trim();
    let (digits, unit) = v.split_at(v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len()));
    let n: usize = digits
        .parse()
        .map_err(|_| format!("`{v}` is not a size (like 4096, 64K, 16M)"))?;
    let factor = match unit {
        "" => 1,
        "K" | "k" => 1024,
        "M" | "m" => 1024 * 1024,
        _ => return Err(format!("`{v}` is not a size (like 4096, 64K, 16M)")),
    };
    Ok(n.saturating_mul(factor))
}

fn optional(d: Duration) -> Option<Duration> {
    (!d.is_zero()).then_some(d)
}

/// Applies `KEY=VALUE` settings to `config`; an unknown key or a bad value is an error naming it.
pub fn apply(config: &mut HttpConfig, settings: &[String]) -> Result<(), String> {
    let mut events = (1_000usize, 10_000usize, None::<usize>);
    let mut store_changed = false;
    for setting in settings {
        let Some((key, value)) = setting.split_once('=') else {
            return Err(format!("--limit {setting}: expected KEY=VALUE"));
        };
        let bad = |e: String| format!("--limit {key}: {e}");
        match key.trim() {
            "header-timeout" => config.header_read_timeout = duration(value).map_err(bad)?,
            "body-timeout" => config.body_timeout = optional(duration(value).map_err(bad)?),
            "body-bytes-in-flight" => config.max_body_bytes_in_flight = size(value).map_err(bad)?,
            "max-sessions" => config.max_sessions = size(value).map_err(bad)?,
            "max-fleet-sessions" => config.max_fleet_sessions = size(value).map_err(bad)?,
            "session-idle-timeout" => config.session_idle_timeout = duration(value).map_err(bad)?,
            "session-touch-interval" => {
                config.session_touch_interval = duration(value).map_err(bad)?
            }
            "session-handshake-timeout" => {
                config.session_handshake_timeout = duration(value).map_err(bad)?
            }
            "max-requests" => config.max_concurrent_requests = size(value).map_err(bad)?,
            "max-listen-streams" => config.max_listen_streams = size(value).map_err(bad)?,
            "max-streams" => config.max_streams = size(value).map_err(bad)?,
            "max-streams-per-session" => {
                config.max_streams_per_session = size(value).map_err(bad)?
            }
            "max-client-data" => config.max_client_data = size(value).map_err(bad)?,
            "request-timeout" => config.request_timeout = optional(duration(value).map_err(bad)?),
            "events-per-stream" => {
                events.0 = size(value).map_err(bad)?;
                store_changed = true;
            }
            "events-per-session" => {
                events.1 = size(value).map_err(bad)?;
                store_changed = true;
            }
            "event-log-bytes" => {
                events.2 = Some(size(value).map_err(bad)?);
                store_changed = true;
            }
            "principal-requests" => config.max_requests_per_principal = size(value).map_err(bad)?,
            "principal-rate" => set_rate(
                &mut config.principal_rate,
                Rate::new(100, 200),
                count(value).map_err(bad)?,
            ),
            "principal-burst" => set_burst(&mut config.principal_rate, count(value).map_err(bad)?),
            "peer-rate" => set_rate(
                &mut config.peer_rate,
                Rate::new(1000, 2000),
                count(value).map_err(bad)?,
            ),
            "peer-burst" => set_burst(&mut config.peer_rate, count(value).map_err(bad)?),
            "limit-loopback-peers" => {
                config.limit_loopback_peers = match value.trim() {
                    "true" => true,
                    "false" => false,
                    v => return Err(bad(format!("`{v}` is not true or false"))),
                }
            }
            "max-principals" => config.max_principals = size(value).map_err(bad)?,
            other => {
                let known: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
                return Err(format!(
                    "--limit {other}: unknown limit (known: {})",
                    known.join(", ")
                ));
            }
        }
    }
    if store_changed {
        let mut store = MemoryEventStore::new(events.0, events.1);
        if let Some(bytes) = events.2 {
            store = store.max_bytes(bytes);
        }
        config.event_store = Arc::new(store);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_durations_and_sizes() {
        assert_eq!(duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(duration("3m"), Ok(Duration::from_secs(180)));
        assert!(duration("2h").is_err());
        assert_eq!(size("64K"), Ok(65536));
        assert_eq!(size("2M"), Ok(2 << 20));
        assert!(size("x").is_err());
    }

    #[test]
    fn sets_the_fairness_limits() {
        let mut config = HttpConfig::default();
        let settings: Vec<String> = [
            "principal-rate=5",
            "principal-burst=7",
            "peer-rate=0",
            "limit-loopback-peers=true",
            "max-principals=9",
            "principal-requests=3",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        apply(&mut config, &settings).unwrap();
        assert_eq!(config.principal_rate, Some(Rate::new(5, 7)));
        assert_eq!(config.peer_rate, None);
        assert!(config.limit_loopback_peers);
        assert_eq!(config.max_principals, 9);
        assert_eq!(config.max_requests_per_principal, 3);
        assert!(apply(&mut config, &["limit-loopback-peers=maybe".into()]).is_err());
    }
}
