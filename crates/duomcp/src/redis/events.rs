//! [`RedisEventStore`]: the legacy SSE event log in Redis, so that a stream started on one
//! replica resumes with `Last-Event-ID` on another.
//!
//! Per stream, a list of `SEQ MESSAGE` entries in append order; per session, the list of its
//! streams in the order they were first written (the eviction order) and a count of its
//! events. An append is one Lua script (one round trip, atomic): push, trim the stream to its
//! bound, evict the session's oldest events past the session bound, refresh the TTLs. Keys
//! share the session id as a hash tag (`{SESSION}`), so the script touches one slot.
//!
//! A POST stream whose request still runs is leased ([`Lease`]) by the replica writing it:
//! `…:N:lease` (renewed while the request runs) and `…:N:req` (the request id, deleted once
//! the stream's last event is stored). A replica resuming the stream follows the log while the
//! lease holds; a stream whose lease lapsed before it was closed lost its writer, and the
//! resuming replica ends it with a JSON-RPC error for its request.

use super::lease::{self, Lease};
use super::{Redis, RedisError};
use crate::transport::http::{EventStore, StoreError, StoreFuture, StoredEvent, StreamState};
use bytes::Bytes;
use std::time::Duration;

const APPEND: &str = r#"
local stream, index, count = KEYS[1], KEYS[2], KEYS[3]
local per_stream, per_session, ttl = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if redis.call('EXISTS', stream) == 0 then redis.call('RPUSH', index, stream) end
redis.call('RPUSH', stream, ARGV[1])
local total = redis.call('INCR', count)
if redis.call('LLEN', stream) > per_stream then
  redis.call('LPOP', stream)
  total = redis.call('DECR', count)
end
while total > per_session do
  local oldest = redis.call('LINDEX', index, 0)
  if not oldest then break end
  if redis.call('LPOP', oldest) then total = redis.call('DECR', count) end
  if redis.call('LLEN', oldest) == 0 then redis.call('LPOP', index) end
end
redis.call('PEXPIRE', stream, ttl)
redis.call('PEXPIRE', index, ttl)
redis.call('PEXPIRE', count, ttl)
return total
"#;

const REMOVE: &str = r#"
for _, stream in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do redis.call('DEL', stream) end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
"#;

/// An [`EventStore`] in Redis, bounded per stream and per session (in events) and in time
/// (a TTL refreshed by every append); the total is bounded by Redis's own `maxmemory`.
///
/// ```no_run
/// use duomcp::redis::{Redis, RedisEventStore};
/// use duomcp::transport::http::HttpConfig;
/// use std::sync::Arc;
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let redis = Redis::connect("redis://127.0.0.1:6379/").unwrap();
/// let mut config = HttpConfig::default();
/// config.event_store = Arc::new(RedisEventStore::new(redis));
/// # });
/// ```
pub struct RedisEventStore {
    redis: Redis,
    max_per_stream: usize,
    max_per_session: usize,
    ttl: Duration,
    lease: Lease,
    append: ::redis::Script,
    remove: ::redis::Script,
}

impl std::fmt::Debug for RedisEventStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisEventStore")
            .field("max_per_stream", &self.max_per_stream)
            .field("max_per_session", &self.max_per_session)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl RedisEventStore {
    /// 1,000 events per stream, 10,000 per session, kept 1 h after the session's last event
    /// (the bounds of [`MemoryEventStore`](crate::transport::http::MemoryEventStore)).
    pub fn new(redis: Redis) -> Self {
        RedisEventStore {
            redis,
            max_per_stream: 1_000,
            max_per_session: 10_000,
            ttl: Duration::from_secs(3600),
            lease: Lease::default(),
            append: ::redis::Script::new(APPEND),
            remove: ::redis::Script::new(REMOVE),
        }
    }

    /// Sets the bounds per stream and per session (at least 1 each).
    pub fn bounds(mut self, per_stream: usize, per_session: usize) -> Self {
        self.max_per_stream = per_stream.max(1);
        self.max_per_session = per_session.max(1);
        self
    }

    /// Sets how long a session's events are kept after its last append (at least 1 ms).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl.max(Duration::from_millis(1));
        self
    }

    /// Sets the lease of streams being written (default [`Lease::default`]).
    pub fn lease(mut self, lease: Lease) -> Self {
        self.lease = lease;
        self
    }

    fn lease_key(&self, session: &str, stream: u64) -> String {
        format!("{}ev:{{{session}}}:{stream}:lease", self.redis.prefix())
    }

    fn request_key(&self, session: &str, stream: u64) -> String {
        format!("{}ev:{{{session}}}:{stream}:req", self.redis.prefix())
    }

    fn ttl_ms(&self) -> u64 {
        u64::try_from(self.ttl.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    fn stream_key(&self, session: &str, stream: u64) -> String {
        format!("{}ev:{{{session}}}:{stream}", self.redis.prefix())
    }

    fn index_key(&self, session: &str) -> String {
        format!("{}ev:{{{session}}}:streams", self.redis.prefix())
    }

    fn count_key(&self, session: &str) -> String {
        format!("{}ev:{{{session}}}:count", self.redis.prefix())
    }

    async fn append_now(
        &self,
        session: &str,
        stream: u64,
        seq: u64,
        message: Bytes,
    ) -> Result<(), RedisError> {
        let mut entry = Vec::with_capacity(message.len() + 21);
        entry.extend_from_slice(seq.to_string().as_bytes());
        entry.push(b' ');
        entry.extend_from_slice(&message);
        let mut call = self.append.prepare_invoke();
        call.key(self.stream_key(session, stream))
            .key(self.index_key(session))
            .key(self.count_key(session))
            .arg(entry)
            .arg(self.max_per_stream)
            .arg(self.max_per_session)
            .arg(u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX));
        self.redis
            .run("event log", |mut c| async move {
                call.invoke_async::<i64>(&mut c).await
            })
            .await
            .map(drop)
    }

    async fn replay_now(
        &self,
        session: &str,
        stream: u64,
        after: u64,
    ) -> Result<Vec<StoredEvent>, RedisError> {
        let key = self.stream_key(session, stream);
        let entries: Vec<Vec<u8>> = self
            .redis
            .run("event log", |mut c| async move {
                ::redis::cmd("LRANGE")
                    .arg(&key)
                    .arg(0)
                    .arg(-1)
                    .query_async(&mut c)
                    .await
            })
            .await?;
        Ok(entries
            .into_iter()
            .filter_map(|entry| parse_entry(&entry))
            .filter(|e| e.seq > after)
            .collect())
    }
}

/// `SEQ MESSAGE` back into an event; entries of another shape (not written by this store) are
/// skipped.
fn parse_entry(entry: &[u8]) -> Option<StoredEvent> {
    let space = memchr::memchr(b' ', entry)?;
    let seq = std::str::from_utf8(&entry[..space]).ok()?.parse().ok()?;
    Some(StoredEvent {
        seq,
        message: Bytes::copy_from_slice(&entry[space + 1..]),
    })
}

fn store_error(e: RedisError) -> StoreError {
    StoreError(Box::new(e))
}

impl EventStore for RedisEventStore {
    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        seq: u64,
        message: Bytes,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.append_now(session, stream, seq, message)
                .await
                .map_err(store_error)
        })
    }

    fn replay_after<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        after: u64,
    ) -> StoreFuture<'a, Result<Vec<StoredEvent>, StoreError>> {
        Box::pin(async move {
            self.replay_now(session, stream, after)
                .await
                .map_err(store_error)
        })
    }

    fn remove_session<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut call = self.remove.prepare_invoke();
            call.key(self.index_key(session))
                .key(self.count_key(session));
            let removed = self
                .redis
                .run("event log", |mut c| async move {
                    call.invoke_async::<i64>(&mut c).await
                })
                .await;
            if let Err(e) = removed {
                // The TTL removes them later.
                tracing::warn!(session, error = %e, "events of an ended session not removed");
            }
        })
    }

    fn stream_lease(&self) -> Option<Duration> {
        Some(self.lease.every)
    }

    fn open_stream<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        request: &'a [u8],
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let (req, lease_key) = (
                self.request_key(session, stream),
                self.lease_key(session, stream),
            );
            let (ttl, lease_ttl) = (self.ttl_ms(), self.lease.ttl_ms());
            self.redis
                .run("event log", |mut c| async move {
                    ::redis::pipe()
                        .atomic()
                        .cmd("SET")
                        .arg(&lease_key)
                        .arg(lease::holder())
                        .arg("PX")
                        .arg(lease_ttl)
                        .ignore()
                        .cmd("SET")
                        .arg(&req)
                        .arg(request)
                        .arg("PX")
                        .arg(ttl)
                        .ignore()
                        .query_async::<()>(&mut c)
                        .await
                })
                .await
                .map_err(store_error)
        })
    }

    fn renew_stream<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            lease::hold(&self.redis, &self.lease_key(session, stream), self.lease)
                .await
                .map_err(store_error)
        })
    }

    fn close_stream<'a>(&'a self, session: &'a str, stream: u64) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let (req, lease_key) = (
                self.request_key(session, stream),
                self.lease_key(session, stream),
            );
            let closed = self
                .redis
                .run("event log", |mut c| async move {
                    ::redis::pipe()
                        .atomic()
                        .cmd("DEL")
                        .arg(&req)
                        .arg(&lease_key)
                        .ignore()
                        .query_async::<()>(&mut c)
                        .await
                })
                .await;
            if let Err(e) = closed {
                // Resumers see the stream lost once its lease lapses.
                tracing::warn!(session, stream, "stream not closed in the event log: {e}");
            }
        })
    }

    fn stream_state<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
    ) -> StoreFuture<'a, Result<StreamState, StoreError>> {
        Box::pin(async move {
            let (req, lease_key) = (
                self.request_key(session, stream),
                self.lease_key(session, stream),
            );
            let (request, leased): (Option<Vec<u8>>, i64) = self
                .redis
                .run("event log", |mut c| async move {
                    ::redis::pipe()
                        .cmd("GET")
                        .arg(&req)
                        .cmd("EXISTS")
                        .arg(&lease_key)
                        .query_async(&mut c)
                        .await
                })
                .await
                .map_err(store_error)?;
            Ok(match request {
                None => StreamState::Finished,
                Some(_) if leased > 0 => StreamState::Running,
                Some(id) => StreamState::Lost(Bytes::from(id)),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::parse_entry;

    #[test]
    fn entries_parse_back_and_foreign_ones_are_skipped() {
        let e = parse_entry(b"12 {\"a\": 1}").unwrap();
        assert_eq!(e.seq, 12);
        assert_eq!(e.message, "{\"a\": 1}");
        assert!(parse_entry(b"nonsense").is_none());
        assert!(parse_entry(b"x y").is_none());
    }
}
