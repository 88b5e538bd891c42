//! The counts of the replicas' Redis bus (feature `redis`), here so that `otel` reads them
//! without importing `redis` (ARCHITECTURE.md); public as `duomcp::redis::BusCounts`.

use std::sync::atomic::{AtomicU64, Ordering};

/// Messages published and received by this process's `RedisBus`es since it started (one
/// replica is one process, usually with one bus): for a benchmark, a log line, or a metric
/// (with the `otel` feature they are the counters `duomcp.bus.messages.published` and
/// `duomcp.bus.messages.received`, `duomcp_bus_messages_published_total` and
/// `duomcp_bus_messages_received_total` in the Prometheus text).
///
/// ```
/// let now = duomcp::redis::BusCounts::current();
/// assert!(duomcp::redis::BusCounts::current().received >= now.received);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BusCounts {
    /// Messages Redis accepted from this process (`PUBLISH`/`SPUBLISH` answered): to every
    /// replica or to one replica's inbox alike.
    pub published: u64,
    /// Messages from other replicas received and decoded (this bus's own, which a message to
    /// every replica brings back, are not counted; nor are those dropped on arrival).
    pub received: u64,
}

pub(crate) static PUBLISHED: AtomicU64 = AtomicU64::new(0);
pub(crate) static RECEIVED: AtomicU64 = AtomicU64::new(0);

impl BusCounts {
    /// The counts now.
    pub fn current() -> Self {
        BusCounts {
            published: PUBLISHED.load(Ordering::Relaxed),
            received: RECEIVED.load(Ordering::Relaxed),
        }
    }
}
