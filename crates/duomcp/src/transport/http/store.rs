//! The SSE event log that makes legacy (2025-11-25) streams resumable with `Last-Event-ID`.
//!
//! Every message the server sends on a legacy SSE stream is appended here before it is written
//! to the connection. A client that lost the connection reconnects with `GET` and the id of the
//! last event it saw, and the transport replays what followed **on that stream only**.

use bytes::Bytes;
use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

pub use crate::common::StoreFuture;

/// Why an [`EventStore`] operation failed.
///
/// A failed append only costs resumability (the live connection still gets the event); a failed
/// replay answers the resuming `GET` with `500`.
#[derive(Debug, thiserror::Error)]
#[error("event store: {0}")]
pub struct StoreError(#[source] pub Box<dyn std::error::Error + Send + Sync>);

/// One stored SSE event: its sequence number within its stream and the JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// Position in the stream, starting at 1 (0 is the priming event, which is not stored).
    pub seq: u64,
    /// The encoded JSON-RPC message (no SSE framing).
    pub message: Bytes,
}

/// Where legacy SSE events are kept for replay. Implement it to share the log between replicas
/// (for example in Redis); [`MemoryEventStore`] is the default.
///
/// Streams are identified by the session id and a stream number unique within the session;
/// events by their sequence number within the stream. The transport appends events of one
/// stream in order, one at a time.
///
/// ```
/// use duomcp::transport::http::{EventStore, MemoryEventStore};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = MemoryEventStore::new(100, 1000);
/// store.append("session-a", 1, 1, "first".into()).await.unwrap();
/// store.append("session-a", 1, 2, "second".into()).await.unwrap();
/// let after_first = store.replay_after("session-a", 1, 1).await.unwrap();
/// assert_eq!(after_first.len(), 1);
/// assert_eq!(after_first[0].message, "second");
/// # });
/// ```
pub trait EventStore: Send + Sync + 'static {
    /// Records event `seq` of `stream` in `session`.
    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        seq: u64,
        message: Bytes,
    ) -> StoreFuture<'a, Result<(), StoreError>>;

    /// The events of `stream` with a sequence number greater than `after`, oldest first. Events
    /// evicted by the store's limits are simply missing.
    fn replay_after<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        after: u64,
    ) -> StoreFuture<'a, Result<Vec<StoredEvent>, StoreError>>;

    /// Forgets everything about `session` (it was deleted or expired).
    fn remove_session<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()>;

    /// `Some(every)` when other replicas share this log and may resume streams this process
    /// writes (default `None`). Then a POST stream is opened with
    /// [`open_stream`](Self::open_stream) (a lease on it, naming its request), renewed with
    /// [`renew_stream`](Self::renew_stream) every `every` while its request runs, and closed
    /// with [`close_stream`](Self::close_stream) after its last event; a replica resuming it
    /// follows it through [`stream_state`](Self::stream_state).
    fn stream_lease(&self) -> Option<std::time::Duration> {
        None
    }

    /// Leases `stream` for this process; `request` is the JSON of its request's id.
    fn open_stream<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        request: &'a [u8],
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let _ = (session, stream, request);
        Box::pin(async { Ok(()) })
    }

    /// Renews this process's lease on `stream`.
    fn renew_stream<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let _ = (session, stream);
        Box::pin(async { Ok(()) })
    }

    /// Marks `stream` finished: every event it will have is stored.
    fn close_stream<'a>(&'a self, session: &'a str, stream: u64) -> StoreFuture<'a, ()> {
        let _ = (session, stream);
        Box::pin(async {})
    }

    /// Whether `stream` is finished, still written by a live process, or lost (its lease
    /// lapsed before it was closed). Default: finished.
    fn stream_state<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
    ) -> StoreFuture<'a, Result<StreamState, StoreError>> {
        let _ = (session, stream);
        Box::pin(async { Ok(StreamState::Finished) })
    }
}

/// What [`EventStore::stream_state`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamState {
    /// Closed, or never opened: the stored events are all there will be.
    Finished,
    /// Its writer holds the lease: more events may follow.
    Running,
    /// Its writer stopped renewing the lease before closing it (the replica died). Holds the
    /// JSON of the lost request's id.
    Lost(Bytes),
}

/// An in-process [`EventStore`], bounded per stream and per session (in events) and over all
/// sessions (in bytes): when a bound is reached the oldest events go first. The per-stream and
/// per-session bounds only ever evict events of that stream or session; the global byte
/// budget evicts the oldest events of any session.
///
/// ```
/// use duomcp::transport::http::{EventStore, MemoryEventStore};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = MemoryEventStore::new(2, 10);
/// for seq in 1..=3 {
///     store.append("s", 7, seq, format!("m{seq}").into()).await.unwrap();
/// }
/// let kept: Vec<u64> = store.replay_after("s", 7, 0).await.unwrap().iter().map(|e| e.seq).collect();
/// assert_eq!(kept, [2, 3]); // only two per stream
///
/// let small = MemoryEventStore::new(100, 100).max_bytes(10);
/// small.append("a", 1, 1, "123456".into()).await.unwrap();
/// small.append("b", 1, 1, "123456".into()).await.unwrap(); // evicts a's event
/// assert!(small.replay_after("a", 1, 0).await.unwrap().is_empty());
/// assert_eq!(small.bytes(), 6);
/// # });
/// ```
#[derive(Debug)]
pub struct MemoryEventStore {
    max_per_stream: usize,
    max_per_session: usize,
    max_bytes: usize,
    inner: Mutex<Logs>,
}

#[derive(Debug, Default)]
struct Logs {
    sessions: HashMap<String, SessionLog>,
    /// Every stored event in append order, by (stamp, session, stream): the eviction order of
    /// the byte budget. Entries whose event is gone already are skipped (and compacted).
    order: VecDeque<(u64, std::sync::Arc<str>, u64)>,
    /// Bytes of messages stored, over all sessions.
    bytes: usize,
    /// Events stored, over all sessions.
    events: usize,
    next_stamp: u64,
}

#[derive(Debug, Default)]
struct SessionLog {
    streams: HashMap<u64, VecDeque<(u64, StoredEvent)>>,
    /// Stream numbers in the order they were first written to (eviction order).
    order: VecDeque<u64>,
    total: usize,
}

impl Default for MemoryEventStore {
    /// 1,000 events per stream, 10,000 per session, 64 MiB over all sessions.
    fn default() -> Self {
        MemoryEventStore::new(1_000, 10_000)
    }
}

impl MemoryEventStore {
    /// A store keeping at most `max_per_stream` events of one stream and `max_per_session`
    /// events of one session, and 64 MiB of messages in all (see [`max_bytes`](Self::max_bytes)).
    pub fn new(max_per_stream: usize, max_per_session: usize) -> Self {
        MemoryEventStore {
            max_per_stream: max_per_stream.max(1),
            max_per_session: max_per_session.max(1),
            max_bytes: 64 * 1024 * 1024,
            inner: Mutex::default(),
        }
    }

    /// Sets the byte budget over all sessions (message bytes; default 64 MiB). An event that
    /// alone exceeds it is not stored (it is still delivered live).
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// Message bytes stored now, over all sessions.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    fn lock(&self) -> MutexGuard<'_, Logs> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn append_now(&self, session: &str, stream: u64, event: StoredEvent) {
        let size = event.message.len();
        if size > self.max_bytes {
            return;
        }
        let mut logs = self.lock();
        let logs = &mut *logs;
        let stamp = logs.next_stamp;
        logs.next_stamp += 1;
        let log = logs.sessions.entry(session.to_owned()).or_default();
        let events = log.streams.entry(stream).or_insert_with(|| {
            log.order.push_back(stream);
            VecDeque::new()
        });
        events.push_back((stamp, event));
        log.total += 1;
        logs.bytes += size;
        logs.events += 1;
        logs.order
            .push_back((stamp, std::sync::Arc::from(session), stream));
        let mut freed = (0usize, 0usize);
        if events.len() > self.max_per_stream {
            if let Some((_, e)) = events.pop_front() {
                log.total -= 1;
                freed.0 += e.message.len();
                freed.1 += 1;
            }
        }
        // Over the session bound: drop the oldest events, oldest stream first.
        while log.total > self.max_per_session {
            let Some(&oldest) = log.order.front() else {
                break;
            };
            if let Some((_, e)) = log.streams.get_mut(&oldest).and_then(VecDeque::pop_front) {
                log.total -= 1;
                freed.0 += e.message.len();
                freed.1 += 1;
            }
            if log.streams.get(&oldest).is_none_or(VecDeque::is_empty) {
                log.streams.remove(&oldest);
                log.order.pop_front();
            }
        }
        logs.bytes -= freed.0;
        logs.events -= freed.1;
        // Over the global budget: drop the oldest events of any session.
        while logs.bytes > self.max_bytes {
            let Some((stamp, session, stream)) = logs.order.pop_front() else {
                break;
            };
            logs.evict(stamp, &session, stream);
        }
        // Entries of events evicted by the other bounds pile up: compact now and then.
        if logs.order.len() > 2 * logs.events + 64 {
            let sessions = &logs.sessions;
            logs.order.retain(|(stamp, session, stream)| {
                sessions
                    .get(&**session)
                    .and_then(|l| l.streams.get(stream))
                    .is_some_and(|events| events.iter().any(|(s, _)| s == stamp))
            });
        }
    }

    fn replay_now(&self, session: &str, stream: u64, after: u64) -> Vec<StoredEvent> {
        let logs = self.lock();
        let Some(events) = logs
            .sessions
            .get(session)
            .and_then(|log| log.streams.get(&stream))
        else {
            return Vec::new();
        };
        events
            .iter()
            .filter(|(_, e)| e.seq > after)
            .map(|(_, e)| e.clone())
            .collect()
    }

    fn remove_now(&self, session: &str) {
        let mut logs = self.lock();
        if let Some(log) = logs.sessions.remove(session) {
            for (_, e) in log.streams.values().flatten() {
                logs.bytes -= e.message.len();
                logs.events -= 1;
            }
        }
    }
}

impl Logs {
    /// Drops the event stamped `stamp` if it is still the oldest of its stream.
    fn evict(&mut self, stamp: u64, session: &str, stream: u64) {
        let Some(log) = self.sessions.get_mut(session) else {
            return;
        };
        let Some(events) = log.streams.get_mut(&stream) else {
            return;
        };
        if events.front().is_some_and(|(s, _)| *s == stamp) {
            if let Some((_, e)) = events.pop_front() {
                log.total -= 1;
                self.bytes -= e.message.len();
                self.events -= 1;
            }
        }
        if events.is_empty() {
            log.streams.remove(&stream);
            log.order.retain(|s| *s != stream);
        }
        if log.streams.is_empty() {
            self.sessions.remove(session);
        }
    }
}

impl EventStore for MemoryEventStore {
    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        seq: u64,
        message: Bytes,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        self.append_now(session, stream, StoredEvent { seq, message });
        Box::pin(std::future::ready(Ok(())))
    }

    fn replay_after<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        after: u64,
    ) -> StoreFuture<'a, Result<Vec<StoredEvent>, StoreError>> {
        let events = self.replay_now(session, stream, after);
        Box::pin(std::future::ready(Ok(events)))
    }

    fn remove_session<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        self.remove_now(session);
        Box::pin(std::future::ready(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seqs(store: &MemoryEventStore, session: &str, stream: u64, after: u64) -> Vec<u64> {
        store
            .replay_now(session, stream, after)
            .iter()
            .map(|e| e.seq)
            .collect()
    }

    #[test]
    fn replays_only_the_named_stream_after_the_cursor() {
        let store = MemoryEventStore::new(10, 100);
        for seq in 1..=3 {
            store.append_now(
                "s",
                1,
                StoredEvent {
                    seq,
                    message: Bytes::from_static(b"a"),
                },
            );
            store.append_now(
                "s",
                2,
                StoredEvent {
                    seq,
                    message: Bytes::from_static(b"b"),
                },
            );
        }
        assert_eq!(seqs(&store, "s", 1, 1), [2, 3]);
        assert_eq!(seqs(&store, "s", 2, 0), [1, 2, 3]);
        assert!(seqs(&store, "other", 1, 0).is_empty());
    }

    #[test]
    fn session_bound_evicts_the_oldest_stream_first() {
        let store = MemoryEventStore::new(10, 4);
        for seq in 1..=3 {
            store.append_now(
                "s",
                1,
                StoredEvent {
                    seq,
                    message: Bytes::new(),
                },
            );
        }
        for seq in 1..=2 {
            store.append_now(
                "s",
                2,
                StoredEvent {
                    seq,
                    message: Bytes::new(),
                },
            );
        }
        assert_eq!(seqs(&store, "s", 1, 0), [2, 3]);
        assert_eq!(seqs(&store, "s", 2, 0), [1, 2]);
        // Another session is untouched by this one's bound.
        store.append_now(
            "t",
            1,
            StoredEvent {
                seq: 1,
                message: Bytes::new(),
            },
        );
        assert_eq!(seqs(&store, "t", 1, 0), [1]);
    }

    #[test]
    fn remove_session_forgets_everything() {
        let store = MemoryEventStore::default();
        store.append_now(
            "s",
            1,
            StoredEvent {
                seq: 1,
                message: Bytes::new(),
            },
        );
        store.remove_now("s");
        assert!(seqs(&store, "s", 1, 0).is_empty());
        assert_eq!(store.bytes(), 0);
    }

    #[test]
    fn global_byte_budget_evicts_the_oldest_events_of_any_session() {
        let store = MemoryEventStore::new(100, 100).max_bytes(100);
        let ten = Bytes::from_static(b"0123456789");
        for seq in 1..=8 {
            for session in ["a", "b"] {
                store.append_now(
                    session,
                    1,
                    StoredEvent {
                        seq,
                        message: ten.clone(),
                    },
                );
            }
        }
        assert!(store.bytes() <= 100, "{}", store.bytes());
        assert_eq!(store.bytes(), 100);
        // The oldest went first, from both sessions alike.
        assert_eq!(seqs(&store, "a", 1, 0), [4, 5, 6, 7, 8]);
        assert_eq!(seqs(&store, "b", 1, 0), [4, 5, 6, 7, 8]);
        // Evictions by the per-stream bound are counted too, and the order stays compact.
        let small = MemoryEventStore::new(1, 100).max_bytes(1000);
        for seq in 1..=10_000 {
            small.append_now(
                "s",
                1,
                StoredEvent {
                    seq,
                    message: ten.clone(),
                },
            );
        }
        assert_eq!(small.bytes(), 10);
        assert!(small.lock().order.len() < 200);
        // A single event over the whole budget is not kept.
        let tiny = MemoryEventStore::new(10, 10).max_bytes(5);
        tiny.append_now(
            "s",
            1,
            StoredEvent {
                seq: 1,
                message: ten,
            },
        );
        assert_eq!(tiny.bytes(), 0);
    }
}
