//! Where the runtime reads the time: one [`Clock`] for the server (task timestamps and expiry,
//! `requestState` expiry) and the client (cache freshness), so a test can swap in a
//! [`ManualClock`] and move time without sleeping.
//!
//! ```
//! use duomcp::clock::{Clock, ManualClock};
//! use std::time::Duration;
//! let clock = ManualClock::new(1_000);
//! let start = clock.now();
//! clock.advance(Duration::from_secs(2));
//! assert_eq!(clock.now_ms(), 3_000);
//! assert_eq!(clock.now() - start, Duration::from_secs(2));
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A source of the time, wall-clock and monotonic.
pub trait Clock: Send + Sync + 'static {
    /// The current time in milliseconds since the Unix epoch (what the wire writes and what
    /// expiries compare).
    fn now_ms(&self) -> u64;
    /// The current monotonic instant (what freshness is measured with).
    fn now(&self) -> Instant;
}

/// The operating system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }

    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that moves only when told to; clones share the time. [`Default`] reads 0 ms.
#[derive(Debug, Clone)]
pub struct ManualClock {
    ms: Arc<AtomicU64>,
    start: Instant,
    elapsed_nanos: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock reading `start_ms` (its monotonic time starts at the moment it is made).
    pub fn new(start_ms: u64) -> Self {
        ManualClock {
            ms: Arc::new(AtomicU64::new(start_ms)),
            start: Instant::now(),
            elapsed_nanos: Arc::default(),
        }
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        self.ms.fetch_add(by.as_millis() as u64, Ordering::SeqCst);
        let nanos = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        self.elapsed_nanos.fetch_add(nanos, Ordering::SeqCst);
    }

    /// Sets the wall-clock time (the monotonic time does not go back).
    pub fn set(&self, now_ms: u64) {
        self.ms.store(now_ms, Ordering::SeqCst);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new(0)
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.ms.load(Ordering::SeqCst)
    }

    fn now(&self) -> Instant {
        self.start + Duration::from_nanos(self.elapsed_nanos.load(Ordering::SeqCst))
    }
}
