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

pub(crate) use follow::follow_remote_stream;

use super::store::EventStore;
use crate::correlation::{Correlation, Limits};
use crate::server::session::{Frame, Session};
use crate::server::Reply;
use crate::util::lock;
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
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
        let replay = match after {
            Some(after) => store
                .replay_after(session, self.id, after)
                .await?
                .into_iter()
                .map(|e| (e.seq, e.message))
                .collect(),
            None => Vec::new(),
        };
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
    pub(crate) fresh: super::shared_session::Freshness,
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

/// All legacy sessions of one transport.
pub(crate) struct Sessions {
    map: Mutex<HashMap<Arc<str>, Arc<HttpSession>>>,
    sweeper: std::sync::Once,
    /// Sessions are shared with other replicas (a session store): a session leaving this table
    /// (idle here, evicted, shutdown) is only this replica's copy, and its events stay in the
    /// shared log; only [`Sessions::end`] forgets them.
    shared: bool,
    /// Shared sessions: answers and cancellations meant for another replica's copy pass
    /// through the bus ([`super::routing`]).
    router: Option<Arc<super::routing::Router>>,
    /// Shared sessions: the store a copy ended here (evicted, idle) is released in, and the
    /// slack of its liveness cache (`HttpConfig::session_touch_interval`, capped).
    release: Option<(Arc<dyn super::SessionStore>, Duration)>,
    /// Releases waiting for the store's answer (at most [`MAX_RELEASES`]).
    releasing: Arc<AtomicUsize>,
}

/// Releases in the session store waiting for its answer at once (each within the store's
/// operation deadline, 2 s for Redis): while the store is slow or down, a copy ended beyond
/// them is not released, and its record expires on its own (handshake or idle timeout).
const MAX_RELEASES: usize = 256;

/// Why a session could not be created.
pub(crate) enum CreateError {
    /// `max_sessions` are alive and none of them is idle.
    TooMany,
    /// The OS gave no randomness for the id.
    NoRandomness,
}

impl Sessions {
    /// Sessions of one process (`None`), or shared with other replicas through a session
    /// store, with the router of their answers and cancellations.
    /// `release`: the session store, and how long a replica may serve a session without
    /// touching it there (see [`release`](Self::release)).
    pub(crate) fn new(
        router: Option<Arc<super::routing::Router>>,
        release: Option<(Arc<dyn super::SessionStore>, Duration)>,
    ) -> Self {
        Sessions {
            map: Mutex::default(),
            sweeper: std::sync::Once::new(),
            shared: router.is_some(),
            router,
            release,
            releasing: Arc::default(),
        }
    }

    /// Shared sessions: this replica ended its copy of `id`, idle since `since` (evicted from
    /// a full table, or idle past its handshake or idle timeout). The session ends in the
    /// store too, so that every replica answers `404`, unless another replica used it since
    /// (`SessionStore::release`); the store's answer is not waited for.
    fn release(&self, id: &Arc<str>, since: Instant) {
        let Some((store, slack)) = &self.release else {
            return;
        };
        if self.releasing.fetch_add(1, Ordering::AcqRel) >= MAX_RELEASES {
            self.releasing.fetch_sub(1, Ordering::AcqRel);
            tracing::warn!(
                session = %id,
                "session not released in the store: {MAX_RELEASES} releases wait for it already; \
                 its record expires on its own"
            );
            return;
        }
        let quiet = since.elapsed().saturating_add(*slack);
        let (store, id, releasing) = (store.clone(), id.clone(), self.releasing.clone());
        tokio::spawn(async move {
            match store.release(&id, quiet).await {
                Ok(gone) => tracing::debug!(session = %id, gone, "session released in the store"),
                Err(e) => tracing::warn!(session = %id, "session not released in the store: {e}"),
            }
            releasing.fetch_sub(1, Ordering::AcqRel);
        });
    }

    pub(crate) fn len(&self) -> usize {
        lock(&self.map).len()
    }

    /// The router of shared sessions' answers and invalidations (a session store only).
    pub(crate) fn router(&self) -> Option<&Arc<super::routing::Router>> {
        self.router.as_ref()
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<HttpSession>> {
        lock(&self.map).get(id).cloned()
    }

    /// The idle session to end so that a new one fits: the least recently used of those that
    /// never made a request after `initialize`, else the least recently used idle one.
    /// With the time since which it is idle.
    fn eviction_candidate(
        map: &HashMap<Arc<str>, Arc<HttpSession>>,
    ) -> Option<(Arc<str>, Instant)> {
        map.values()
            .filter_map(|s| s.idle_state().map(|(fresh, last)| (!fresh, last, &s.id)))
            .min_by_key(|(used, last, _)| (*used, *last))
            .map(|(_, last, id)| (id.clone(), last))
    }

    /// Makes room for one more session when `max` are alive, by ending an idle one.
    fn make_room(&self, max: usize) -> Result<(), CreateError> {
        let (victim, since) = {
            let map = lock(&self.map);
            if map.len() < max {
                return Ok(());
            }
            Self::eviction_candidate(&map).ok_or(CreateError::TooMany)?
        };
        tracing::debug!(session = %victim, "session table full; ending the least recently used idle session");
        if self.remove(&victim).is_some() {
            self.release(&victim, since);
        }
        Ok(())
    }

    /// Creates a session with a fresh random id and starts its standalone stream's pump. When
    /// `max` sessions are alive, the least recently used idle one is ended to make room.
    pub(crate) fn create(
        &self,
        max: usize,
        parent: &CancellationToken,
        store: Arc<dyn EventStore>,
        limits: Limits,
    ) -> Result<Arc<HttpSession>, CreateError> {
        let id = new_session_id().ok_or(CreateError::NoRandomness)?;
        self.insert_new(id, max, parent, store, limits)
    }

    /// A local copy of session `id`, minted by another replica (its record is in the session
    /// store); the caller restores its state.
    pub(crate) fn adopt(
        &self,
        id: &str,
        max: usize,
        parent: &CancellationToken,
        store: Arc<dyn EventStore>,
        limits: Limits,
    ) -> Result<Arc<HttpSession>, CreateError> {
        if let Some(s) = self.get(id) {
            return Ok(s);
        }
        self.insert_new(id.to_owned(), max, parent, store, limits)
    }

    fn insert_new(
        &self,
        id: String,
        max: usize,
        parent: &CancellationToken,
        store: Arc<dyn EventStore>,
        limits: Limits,
    ) -> Result<Arc<HttpSession>, CreateError> {
        self.make_room(max)?;
        let (unrelated_tx, unrelated_rx) = mpsc::channel::<Frame>(256);
        // Shared sessions: tasks are scoped, and answers routed, by a name every replica
        // derives alike; server→client ids carry this replica's prefix.
        let scope = self.shared.then(|| shared_scope(&id));
        let (correlation, routed) = match (&self.router, &scope) {
            (Some(router), Some(scope)) => {
                let (table, local) = router.table(scope, limits);
                let c = Correlation::with_table(router.prefix(), table);
                (c, Some((router, scope, local)))
            }
            _ => (Correlation::new("s-", limits), None),
        };
        let session = Arc::new(HttpSession {
            id: Arc::from(id),
            core: Session::new(unrelated_tx, correlation),
            closing: parent.child_token(),
            store,
            streams: Mutex::new(HashMap::from([(
                STANDALONE,
                LogicalStream::new(STANDALONE),
            )])),
            // Shared sessions: each replica numbers its streams from its own random base, so
            // that streams of one session written by two replicas never share a number.
            next_stream: AtomicU64::new(if self.shared { stream_base() } else { 1 }),
            activity: Mutex::new(Activity {
                last: Instant::now(),
                busy: 0,
                uses: 0,
            }),
            get_streams: AtomicUsize::new(0),
            standalone_gets: AtomicUsize::new(0),
            owner: Mutex::new(None),
            telemetry: Default::default(),
            version: AtomicU64::new(0),
            fresh: Default::default(),
        });
        if let Some(scope) = &scope {
            session.core.set_scope(scope.clone());
        }
        loop {
            let mut map = lock(&self.map);
            if let Some(existing) = map.get(&session.id) {
                // Adopted by a concurrent request meanwhile: use that copy.
                return Ok(existing.clone());
            }
            if map.len() < max {
                map.insert(session.id.clone(), session.clone());
                break;
            }
            // Another `initialize` took the room meanwhile: make some again.
            drop(map);
            self.make_room(max)?;
        }
        if let Some((router, scope, local)) = routed {
            // In the table now: answers and notifications for it may come from other replicas.
            router.bind(scope, &local, &session);
        }
        let s = session.clone();
        tokio::spawn(async move { s.pump_standalone(unrelated_rx).await });
        Ok(session)
    }

    /// Ends a session here: its streams close, its requests are cancelled, its events
    /// forgotten (only [`end`](Self::end) forgets them when sessions are shared).
    pub(crate) fn remove(&self, id: &str) -> Option<Arc<HttpSession>> {
        let session = lock(&self.map).remove(id)?;
        session.closing.cancel();
        // Its running requests are cancelled; handlers waiting for the client's answers end.
        session.correlation().close();
        if !self.shared {
            let s = session.clone();
            tokio::spawn(async move { s.store.remove_session(&s.id).await });
        }
        Some(session)
    }

    /// Ends a session everywhere (`DELETE`): as [`remove`](Self::remove), and its events are
    /// forgotten even when shared.
    pub(crate) fn end(&self, id: &str) -> Option<Arc<HttpSession>> {
        let session = self.remove(id)?;
        if self.shared {
            let s = session.clone();
            tokio::spawn(async move { s.store.remove_session(&s.id).await });
        }
        Some(session)
    }

    /// Ends every session (transport shutdown).
    pub(crate) fn remove_all(&self) {
        let ids: Vec<Arc<str>> = lock(&self.map).keys().cloned().collect();
        for id in ids {
            self.remove(&id);
        }
    }

    /// Cancels every in-flight legacy request (end of the shutdown grace period).
    pub(crate) fn cancel_all_requests(&self) {
        for session in lock(&self.map).values() {
            session.correlation().cancel_running();
        }
    }

    /// Starts the idle-session sweeper once (it needs a runtime, so not at construction):
    /// sessions idle for `idle` end, and so do those idle for `handshake` that never made a
    /// request after `initialize`.
    pub(crate) fn start_sweeper(
        self: &Arc<Self>,
        idle: Duration,
        handshake: Duration,
        closing: CancellationToken,
    ) {
        self.sweeper.call_once(|| {
            let weak: Weak<Sessions> = Arc::downgrade(self);
            let every =
                (idle.min(handshake) / 4).clamp(Duration::from_millis(10), Duration::from_secs(60));
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        _ = closing.cancelled() => return,
                        _ = tokio::time::sleep(every) => {}
                    }
                    let Some(sessions) = weak.upgrade() else {
                        return;
                    };
                    let expired: Vec<(Arc<str>, Instant)> = lock(&sessions.map)
                        .values()
                        .filter_map(|s| {
                            let (fresh, since) = s.idle_state()?;
                            let d = since.elapsed();
                            (d >= idle || (fresh && d >= handshake)).then(|| (s.id.clone(), since))
                        })
                        .collect();
                    for (id, since) in expired {
                        tracing::debug!(session = %id, "idle session expired");
                        if sessions.remove(&id).is_some() {
                            sessions.release(&id, since);
                        }
                    }
                }
            });
        });
    }
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

/// 32 random bytes from the OS as URL-safe base64: visible ASCII, unguessable. `None` when the
/// OS has no randomness to give (then no session is created).
fn new_session_id() -> Option<String> {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;
    let mut bytes = [0u8; 32];
    match getrandom::fill(&mut bytes) {
        Ok(()) => Some(URL_SAFE_NO_PAD.encode(bytes)),
        Err(e) => {
            tracing::error!("getrandom failed, no session id can be minted: {e}");
            None
        }
    }
}

/// A random first stream number (below 2^52, so that event ids stay exact in JavaScript).
fn stream_base() -> u64 {
    let mut b = [0u8; 4];
    match getrandom::fill(&mut b) {
        Ok(()) => (u64::from(u32::from_le_bytes(b)) << 20) | 1,
        Err(_) => 1,
    }
}

/// The task scope of shared session `id`: a digest, so that task records do not carry the id.
fn shared_scope(id: &str) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(id.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest[..18])
}

#[cfg(test)]
mod tests;
