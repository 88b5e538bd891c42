//! The table of a transport's legacy sessions: creating, finding, sweeping and ending them,
//! and, for sessions shared with other replicas, the router of their answers.

use super::{Activity, HttpSession, LogicalStream, STANDALONE};
use crate::correlation::{Correlation, Limits};
use crate::server::session::{Frame, Session};
use crate::transport::http::routing::Router;
use crate::transport::http::store::EventStore;
use crate::transport::http::SessionStore;
use crate::util::lock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// All legacy sessions of one transport.
pub(crate) struct Sessions {
    map: Mutex<HashMap<Arc<str>, Arc<HttpSession>>>,
    sweeper: std::sync::Once,
    /// Sessions are shared with other replicas (a session store): a session leaving this table
    /// (idle here, evicted, shutdown) is only this replica's copy, and its events stay in the
    /// shared log; only [`Sessions::end`] forgets them.
    shared: bool,
    /// Shared sessions: answers and cancellations meant for another replica's copy pass
    /// through the bus ([`routing`](crate::transport::http::routing)).
    router: Option<Arc<Router>>,
    /// Shared sessions: the store a copy ended here (evicted, idle) is released in, and the
    /// slack of its liveness cache (`HttpConfig::session_touch_interval`, capped).
    release: Option<(Arc<dyn SessionStore>, Duration)>,
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
        router: Option<Arc<Router>>,
        release: Option<(Arc<dyn SessionStore>, Duration)>,
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
    pub(crate) fn router(&self) -> Option<&Arc<Router>> {
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
                let (table, local) = router.table(&id, scope, limits);
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

/// 32 random bytes from the OS as URL-safe base64: visible ASCII, unguessable. `None` when the
/// OS has no randomness to give (then no session is created).
pub(super) fn new_session_id() -> Option<String> {
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
