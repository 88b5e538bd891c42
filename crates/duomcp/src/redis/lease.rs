//! Leases: how replicas tell a running task or stream whose replica died from one still
//! running elsewhere.
//!
//! The replica running a task (or writing a 2025-11-25 POST stream) holds a lease on it: a
//! Redis key `SET … PX ttl` naming the replica ([`holder`]), renewed every
//! [`Lease::every`] while the work runs and deleted when it ends. A replica killed mid-work
//! stops renewing; [`Lease::ttl`] later the key is gone, and whichever replica looks next
//! ends the work for good (the task `failed`, the stream answered with an error). So the
//! bound on noticing a death is the ttl (default 5 s), plus the looking replica's next look.

use super::{Redis, RedisError};
use std::sync::OnceLock;
use std::time::Duration;

const RELEASE: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
"#;

/// How long a lease lasts unrenewed, and how often its holder renews it.
///
/// ```
/// use duomcp::redis::Lease;
/// use std::time::Duration;
/// let lease = Lease::default();
/// assert_eq!(lease.ttl, Duration::from_secs(5));
/// assert_eq!(lease.every, Duration::from_secs(1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Lease {
    /// A lease not renewed for this long has lapsed: its holder is taken for dead
    /// (default 5 s).
    pub ttl: Duration,
    /// How often the holder renews it (default 1 s; kept below `ttl`).
    pub every: Duration,
}

impl Default for Lease {
    fn default() -> Self {
        Lease {
            ttl: Duration::from_secs(5),
            every: Duration::from_secs(1),
        }
    }
}

impl Lease {
    /// A lease of `ttl`, renewed every `every` (clamped to at most half the ttl, at least 1 ms).
    pub fn new(ttl: Duration, every: Duration) -> Self {
        let ttl = ttl.max(Duration::from_millis(2));
        Lease {
            ttl,
            every: every.clamp(Duration::from_millis(1), ttl / 2),
        }
    }

    pub(crate) fn ttl_ms(&self) -> u64 {
        u64::try_from(self.ttl.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }
}

/// This process's name as a lease holder (random, made once).
pub(crate) fn holder() -> &'static str {
    use crate::server::SealingKeyExt as _;
    static HOLDER: OnceLock<String> = OnceLock::new();
    HOLDER.get_or_init(|| crate::server::SealingKey::random().id())
}

/// Takes or renews the lease `key` for this process.
pub(crate) async fn hold(redis: &Redis, key: &str, lease: Lease) -> Result<(), RedisError> {
    let key = key.to_owned();
    redis
        .run("lease", |mut c| async move {
            ::redis::cmd("SET")
                .arg(&key)
                .arg(holder())
                .arg("PX")
                .arg(lease.ttl_ms())
                .query_async::<()>(&mut c)
                .await
        })
        .await
}

/// Whether some process holds the lease `key`.
pub(crate) async fn held(redis: &Redis, key: &str) -> Result<bool, RedisError> {
    let key = key.to_owned();
    redis
        .run("lease", |mut c| async move {
            ::redis::cmd("EXISTS")
                .arg(&key)
                .query_async::<i64>(&mut c)
                .await
        })
        .await
        .map(|n| n > 0)
}

/// Drops the lease `key` if this process holds it.
pub(crate) async fn release(redis: &Redis, key: &str) -> Result<(), RedisError> {
    let script = ::redis::Script::new(RELEASE);
    let mut call = script.prepare_invoke();
    call.key(key).arg(holder());
    redis
        .run("lease", |mut c| async move {
            call.invoke_async::<i64>(&mut c).await
        })
        .await
        .map(drop)
}
