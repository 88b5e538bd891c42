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
}

/// An in-process [`EventStore`], bounded per stream and per session: when a bound is reached
/// the oldest events go first. Events of other sessions are never evicted.
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
/// # });
/// ```
#[derive(Debug)]
pub struct MemoryEventStore {
    max_per_stream: usize,
    max_per_session: usize,
    sessions: Mutex<HashMap<String, SessionLog>>,
}

#[derive(Debug, Default)]
struct SessionLog {
    streams: HashMap<u64, VecDeque<StoredEvent>>,
    /// Stream numbers in the order they were first written to (eviction order).
    order: VecDeque<u64>,
    total: usize,
}

impl Default for MemoryEventStore {
    /// 1,000 events per stream, 10,000 per session.
    fn default() -> Self {
        MemoryEventStore::new(1_000, 10_000)
    }
}

impl MemoryEventStore {
    /// A store keeping at most `max_per_stream` events of one stream and `max_per_session`
    /// events of one session.
    pub fn new(max_per_stream: usize, max_per_session: usize) -> Self {
        MemoryEventStore {
            max_per_stream: max_per_stream.max(1),
            max_per_session: max_per_session.max(1),
            sessions: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, SessionLog>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn append_now(&self, session: &str, stream: u64, event: StoredEvent) {
        let mut sessions = self.lock();
        let log = sessions.entry(session.to_owned()).or_default();
        let events = log.streams.entry(stream).or_insert_with(|| {
            log.order.push_back(stream);
            VecDeque::new()
        });
        events.push_back(event);
        log.total += 1;
        if events.len() > self.max_per_stream {
            events.pop_front();
            log.total -= 1;
        }
        // Over the session bound: drop the oldest events, oldest stream first.
        while log.total > self.max_per_session {
            let Some(&oldest) = log.order.front() else {
                break;
            };
            let events = log.streams.get_mut(&oldest);
            if events.and_then(VecDeque::pop_front).is_some() {
                log.total -= 1;
            }
            if log.streams.get(&oldest).is_none_or(VecDeque::is_empty) {
                log.streams.remove(&oldest);
                log.order.pop_front();
            }
        }
    }

    fn replay_now(&self, session: &str, stream: u64, after: u64) -> Vec<StoredEvent> {
        let sessions = self.lock();
        let Some(events) = sessions
            .get(session)
            .and_then(|log| log.streams.get(&stream))
        else {
            return Vec::new();
        };
        events.iter().filter(|e| e.seq > after).cloned().collect()
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
        self.lock().remove(session);
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
        store.lock().remove("s");
        assert!(seqs(&store, "s", 1, 0).is_empty());
    }
}
