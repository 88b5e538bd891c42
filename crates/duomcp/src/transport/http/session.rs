//! Legacy (2025-11-25) sessions over HTTP: the `Mcp-Session-Id` registry, idle expiry, and the
//! resumable SSE streams of a session.
//!
//! A *logical stream* outlives the HTTP connections that carry it. Each has a number unique in
//! its session (0 is the standalone `GET` stream; POST streams count from 1) and numbers its
//! events from 1 (0 is the priming event). Event ids are `<stream>-<seq>`, so they are unique in
//! the session and name the stream they belong to. A pump task writes every event to the
//! [`EventStore`] and then to the connection attached at the time, if any; a client that
//! reconnects with `Last-Event-ID` is attached again after a replay from the store.

mod follow;
pub(crate) mod sessions;

pub(crate) use follow::follow_remote_stream;

use super::store::EventStore;
use crate::correlation::Correlation;
use crate::server::session::{Frame, Session};
use crate::server::Reply;
use crate::util::lock;
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// The stream number of a session's standalone `GET` stream.
pub(crate) const STANDALONE: u64 = 0;

/// Formats an SSE event id.
pub(crate) fn event_id(stream: u64, seq: u64) -> String {
    format!("{stream}-{seq}")
}

/// Parses an SSE event id made by [`event_id`].
pub(crate) fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.trim().split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

/// What a pump hands the connection attached to its stream.
#[derive(Debug)]
pub(crate) enum Out {
    /// An event to write (SSE id `<stream>-<seq>`).
    Event { seq: u64, message: Bytes },
    /// Write `retry:` and end the connection; the stream goes on (SSE polling).
    Reconnect,
}

struct Conn {
    generation: u64,
    tx: mpsc::Sender<Out>,
}

struct StreamState {
    /// The last sequence number handed out.
    seq: u64,
    conn: Option<Conn>,
    /// No more events will come.
    done: bool,
    /// Events are kept in the store for replay. A standalone stream starts without: until a
    /// `GET` opens it there is no stream to resume, so nothing is stored for it.
    stored: bool,
}

/// One resumable SSE stream of a session.
pub(crate) struct LogicalStream {
    pub id: u64,
    state: tokio::sync::Mutex<StreamState>,
}

/// What [`LogicalStream::attach`] found.
pub(crate) struct Attached {
    /// Stored events after the client's cursor, oldest first.
    pub replay: Vec<(u64, Bytes)>,
    /// The sequence number of the last event handed out before the attach.
    pub last_seq: u64,
    /// `false` when the stream had ended: only the replay will be written.
    pub live: bool,
}

static GENERATION: AtomicU64 = AtomicU64::new(1);

impl LogicalStream {
    fn new(id: u64) -> Arc<Self> {
        Arc::new(LogicalStream {
            id,
            state: tokio::sync::Mutex::new(StreamState {
                seq: 0,
                conn: None,
                done: false,
                stored: id != STANDALONE,
            }),
        })
    }

    /// Numbers `message`, stores it, and writes it to the attached connection (waiting while
    /// that connection is slow). A connection that is gone is detached.
    async fn publish(&self, store: &dyn EventStore, session: &str, message: Bytes) {
        let (seq, conn) = {
            let mut st = self.state.lock().await;
            st.seq += 1;
            let seq = st.seq;
            if !st.stored {
                // Nobody can resume this stream: the event goes to the live connection only.
            } else if let Err(e) = store.append(session, self.id, seq, message.clone()).await {
                tracing::warn!(
                    session,
                    stream = self.id,
                    "event not stored; it cannot be replayed: {e}"
                );
            }
            (seq, st.conn.as_ref().map(|c| (c.generation, c.tx.clone())))
        };
        if let Some((generation, tx)) = conn {
            if tx.send(Out::Event { seq, message }).await.is_err() {
                self.detach(generation).await;
            }
        }
    }

    async fn detach(&self, generation: u64) {
        let mut st = self.state.lock().await;
        if st.conn.as_ref().is_some_and(|c| c.generation == generation) {
            st.conn = None;
        }
    }

    /// Ends the attached connection with a `retry:` hint; the stream itself goes on.
    async fn reconnect_later(&self) {
        let conn = self.state.lock().await.conn.take();
        if let Some(c) = conn {
            let _ = c.tx.send(Out::Reconnect).await;
        }
    }

    /// Marks the stream finished; the attached connection ends once it has written everything.
    async fn finish(&self) {
        let mut st = self.state.lock().await;
        st.done = true;
        st.conn = None;
    }

    /// Attaches a connection (replacing the previous one, which then ends) and reads the events
    /// after `after` from the store. Events handed out later go to `tx`; none is written twice
    /// or skipped, because the pump holds the same lock while it numbers and stores an event.
    pub(crate) async fn attach(
        &self,
        tx: mpsc::Sender<Out>,
        after: Option<u64>,
        store: &dyn EventStore,
        session: &str,
    ) -> Result<Attached, super::store::StoreError> {
        let mut st = self.state.lock().await;
        let replay: Vec<(u64, Bytes)> = match after {
            Some(after) => store
                .replay_after(session, self.id, after)
                .await?
                .into_iter()
                .map(|e| (e.seq, e.message))
                .collect(),
            None => Vec::new(),
        };
        // The client's cursor, or the newest replayed event, may come from another replica's
        // copy of this stream (a standalone stream resumed here after its replica stopped):
        // events numbered from here on follow it, so that no id is handed out twice.
        let cursor = replay
            .iter()
            .map(|(seq, _)| *seq)
            .chain(after)
            .max()
            .unwrap_or(0);
        st.seq = st.seq.max(cursor);
        let live = !st.done;
        if live {
            st.stored = true;
            st.conn = Some(Conn {
                generation: GENERATION.fetch_add(1, Ordering::Relaxed),
                tx,
            });
        }
        Ok(Attached {
            replay,
            last_seq: st.seq,
            live,
        })
    }
}

struct Activity {
    last: Instant,
    /// Requests in flight plus connections open.
    busy: usize,
    /// Messages and connections the session has seen, `initialize` included (saturating).
    uses: u32,
}

/// One legacy session on the HTTP transport.
pub(crate) struct HttpSession {
    pub id: Arc<str>,
    pub core: Arc<Session>,
    /// Fires when the session ends (DELETE, expiry, shutdown).
    pub closing: CancellationToken,
    pub store: Arc<dyn EventStore>,
    streams: Mutex<HashMap<u64, Arc<LogicalStream>>>,
    next_stream: AtomicU64,
    activity: Mutex<Activity>,
    /// `GET` connections open on this session.
    pub get_streams: AtomicUsize,
    /// Of those, connections attached to the standalone stream (where the session's own
    /// notifications go).
    pub standalone_gets: AtomicUsize,
    /// The principal that created the session ([`crate::server::Principal::key`]), if any.
    owner: Mutex<Option<String>>,
    /// OpenTelemetry: counts the session while it lives (empty without `otel`).
    pub telemetry: std::sync::OnceLock<crate::server::telemetry::SessionGuard>,
    /// The version of the shared record this copy reflects (a session store; 0: none).
    pub(crate) version: AtomicU64,
    /// When the session store last said this copy is alive and current (a session store
    /// with a bus: requests within `HttpConfig::session_touch_interval` skip asking again).
    pub(crate) fresh: Freshness,
}

/// Keeps a session from expiring while it lives.
pub(crate) struct Busy(Arc<HttpSession>);

impl Drop for Busy {
    fn drop(&mut self) {
        let mut a = lock(&self.0.activity);
        a.busy -= 1;
        a.last = Instant::now();
    }
}

impl HttpSession {
    /// Binds the session to the principal that created it.
    pub(crate) fn bind_owner(&self, key: Option<String>) {
        *lock(&self.owner) = key;
    }

    /// Whether `key` (the caller's principal) may use this session.
    pub(crate) fn owned_by(&self, key: Option<&str>) -> bool {
        lock(&self.owner).as_deref() == key
    }

    /// The principal the session is bound to.
    pub(crate) fn owner(&self) -> Option<String> {
        lock(&self.owner).clone()
    }

    pub(crate) fn busy(self: &Arc<Self>) -> Busy {
        let mut a = lock(&self.activity);
        a.busy += 1;
        a.uses = a.uses.saturating_add(1);
        a.last = Instant::now();
        Busy(self.clone())
    }

    /// When idle: whether the session never made a request after `initialize`, and since when
    /// it is idle (the eviction order of a full table).
    fn idle_state(&self) -> Option<(bool, Instant)> {
        let a = lock(&self.activity);
        (a.busy == 0).then_some((a.uses <= 1, a.last))
    }

    /// The session's requests in both directions (its [`Session`]'s engine): the client's
    /// requests running, by id, for `notifications/cancelled` and to refuse a reused id.
    pub(crate) fn correlation(&self) -> &Correlation {
        self.core.correlation()
    }

    /// A live stream by number (the standalone stream, or a POST stream still producing).
    pub(crate) fn stream(&self, id: u64) -> Option<Arc<LogicalStream>> {
        lock(&self.streams).get(&id).cloned()
    }

    /// Starts a POST stream: a pump that numbers, stores and forwards the request's messages and
    /// finally its reply, attached to `tx` from the start.
    ///
    /// With a shared event log ([`EventStore::stream_lease`]) and the JSON of the request's id
    /// in `request`, the stream is leased while the request runs, so that a replica resuming
    /// it follows it, and answers the request with an error if this process dies.
    pub(crate) async fn start_request_stream(
        self: &Arc<Self>,
        tx: mpsc::Sender<Out>,
        first: Option<Frame>,
        sink: mpsc::Receiver<Frame>,
        reply: ReplySource,
        request: Option<Vec<u8>>,
    ) -> Arc<LogicalStream> {
        let id = self.next_stream.fetch_add(1, Ordering::Relaxed);
        let stream = LogicalStream::new(id);
        lock(&self.streams).insert(id, stream.clone());
        // A fresh stream cannot fail to attach: nothing to replay.
        let _ = stream.attach(tx, None, &*self.store, &self.id).await;
        let lease = match (self.store.stream_lease(), request) {
            (Some(every), Some(request)) => {
                match self.store.open_stream(&self.id, id, &request).await {
                    Ok(()) => Some(every),
                    Err(e) => {
                        tracing::warn!(session = %self.id, stream = id, "stream not leased: {e}");
                        None
                    }
                }
            }
            _ => None,
        };
        let (session, s) = (self.clone(), stream.clone());
        tokio::spawn(async move {
            match lease {
                Some(every) => {
                    let renew = async {
                        loop {
                            tokio::time::sleep(every).await;
                            if let Err(e) = session.store.renew_stream(&session.id, s.id).await {
                                tracing::warn!(session = %session.id, stream = s.id, "stream lease not renewed: {e}");
                            }
                        }
                    };
                    tokio::select! {
                        () = session.pump_request(&s, first, sink, reply) => {}
                        () = renew => {}
                    }
                    session.store.close_stream(&session.id, s.id).await;
                }
                None => session.pump_request(&s, first, sink, reply).await,
            }
            s.finish().await;
            lock(&session.streams).remove(&s.id);
        });
        stream
    }

    async fn pump_request(
        &self,
        stream: &LogicalStream,
        first: Option<Frame>,
        mut sink: mpsc::Receiver<Frame>,
        reply: ReplySource,
    ) {
        if let Some(frame) = first {
            self.forward(stream, frame).await;
        }
        let reply = match reply {
            ReplySource::Ready(r) => r,
            ReplySource::Pending(mut rx) => loop {
                tokio::select! {
                    biased;
                    frame = sink.recv() => match frame {
                        Some(frame) => self.forward(stream, frame).await,
                        // The handler and its clones are gone: the reply is on its way.
                        None => break rx.await.ok().flatten(),
                    },
                    r = &mut rx => break r.ok().flatten(),
                }
            },
        };
        // Messages the handler sent before returning precede its reply.
        while let Ok(frame) = sink.try_recv() {
            self.forward(stream, frame).await;
        }
        if let Some(reply) = reply {
            stream
                .publish(&*self.store, &self.id, Bytes::from(reply.frame))
                .await;
        }
    }

    async fn forward(&self, stream: &LogicalStream, frame: Frame) {
        if frame.is_empty() {
            // `Context::close_sse_stream`: end the connection, keep the stream.
            stream.reconnect_later().await;
        } else {
            stream
                .publish(&*self.store, &self.id, Bytes::from(frame))
                .await;
        }
    }
}

/// Where a POST stream's final reply comes from.
pub(crate) enum ReplySource {
    /// Still being computed.
    Pending(oneshot::Receiver<Option<Reply>>),
    /// Already known (`None`: the request was cancelled, nothing is sent).
    Ready(Option<Reply>),
}

impl HttpSession {
    async fn pump_standalone(self: Arc<Self>, mut rx: mpsc::Receiver<Frame>) {
        let Some(stream) = self.stream(STANDALONE) else {
            return;
        };
        loop {
            let frame = tokio::select! {
                _ = self.closing.cancelled() => break,
                f = rx.recv() => f,
            };
            match frame {
                Some(f) if !f.is_empty() => {
                    stream.publish(&*self.store, &self.id, Bytes::from(f)).await
                }
                Some(_) => {}
                None => break,
            }
        }
        stream.finish().await;
    }
}

/// When the session store last found a copy alive and current, and the invalidations heard
/// for it (see the [`shared_session`](super::shared_session) module).
#[derive(Default)]
pub(crate) struct Freshness {
    /// Invalidations heard for this session from other replicas.
    heard: AtomicU64,
    noted: Mutex<Option<Noted>>,
}

#[derive(Clone, Copy)]
struct Noted {
    /// When the store was asked (before it answered: the earlier, the safer).
    at: Instant,
    /// `heard` when it was asked.
    heard: u64,
    /// The router's generation when it was asked.
    generation: (u64, u64),
}

impl Freshness {
    /// Another replica changed or ended the session: the next request asks the store.
    pub(crate) fn forget(&self) {
        self.heard.fetch_add(1, Ordering::AcqRel);
    }

    /// Read before asking the store; given back to [`note`](Self::note) with its answer.
    pub(super) fn ticket(&self) -> u64 {
        self.heard.load(Ordering::Acquire)
    }

    /// The store, asked at `at` (with `heard` from [`ticket`](Self::ticket)), found the copy
    /// alive and current.
    pub(super) fn note(&self, at: Instant, heard: u64, generation: (u64, u64)) {
        *lock(&self.noted) = Some(Noted {
            at,
            heard,
            generation,
        });
    }

    /// Whether that answer still holds at `now`: younger than `interval`, nothing heard
    /// since, the same generation.
    pub(super) fn holds(&self, now: Instant, interval: Duration, generation: (u64, u64)) -> bool {
        let Some(n) = *lock(&self.noted) else {
            return false;
        };
        n.heard == self.heard.load(Ordering::Acquire)
            && n.generation == generation
            && now.saturating_duration_since(n.at) < interval
    }
}

#[cfg(test)]
mod tests;
