//! Answers, cancellations and notifications of a shared 2025-11-25 session that reach another
//! replica than the one they are for.
//!
//! A handler on replica A that calls `ctx.elicit()` (or sampling, roots) waits in A's copy of
//! the session's correlation engine; the client's answer is a POST that may land on B. The
//! client's `notifications/cancelled` for a request running on A may land on B too. Each copy
//! of a shared session therefore has a `RoutedTable`: its `complete` and `cancel` try this
//! replica's entries first (no bus message when the answer is for this replica, the common case
//! behind sticky or lucky routing), and on a miss publish [`BusMessage::Reply`] /
//! [`BusMessage::Cancel`] with the session's shared scope (a digest of its id). Every replica's
//! [`Router`] hears them and hands them to its copy of that session, whose local entries only
//! are tried (a miss there is dropped, never published again).
//!
//! A session's own notifications (a 2025-11-25 task's progress and logs, which go on the
//! session's `GET` stream) made on a replica where no `GET` stream of the session is open are
//! published too ([`BusMessage::Notify`]); a replica whose copy has one open sends them there.
//!
//! Server→client request ids of a shared session carry the replica's own prefix (`s-<8 hex>-`),
//! so that the ids two replicas hand out for one session never clash; when the bus has inboxes
//! ([`Bus::inbox`](crate::server::bus::Bus::inbox): Redis), the prefix also names this
//! replica's (`s-<8 hex>-<16 hex>-`), and an answer that lands elsewhere is sent to that inbox
//! alone ([`Bus::publish_to`](crate::server::bus::Bus::publish_to)), not to every replica.
//! A forged id naming another inbox reaches that replica's table only, which drops it as it
//! drops any answer it does not wait for.
//!
//! The router also hears [`BusMessage::Invalidate`] (a session's record changed or it ended on
//! another replica), makes this replica's copy forget that it found the session alive
//! recently ([`Freshness`](super::shared_session::Freshness)), then confirms it
//! ([`BusMessage::InvalidateAck`]); the publishing router ([`Router::invalidate`]) waits for
//! a confirmation from every other replica its message reached, or else for the freshness
//! lease to run out (the confirmations go to the publisher's inbox alone when its bus has one,
//! [`Bus::inbox`](crate::server::bus::Bus::inbox)). It also says when invalidations may have been missed
//! ([`Router::generation`]: the bus not listening, a new subscription, or messages lost by
//! this receiver falling behind), so that none is trusted.
//!
//! **Targeted.** With a session store that tracks which replicas hold a copy of each session
//! ([`SessionStore::holders`]: `RedisSessionStore` named by the bus inbox, as
//! `HttpConfig::redis` sets it up), a message about one session goes to those replicas'
//! inboxes alone ([`Bus::publish_to`](crate::server::bus::Bus::publish_to)), not to every
//! replica, so the bus work of a replica follows the sessions it serves, not the size of the
//! fleet: an invalidation to the replicas that may trust a copy of the session
//! ([`Holders::caching`](super::Holders::caching), read from the store after the change, so
//! that none is left out; a replica that served one request of the session holds no trusted
//! copy and is not told), a cancellation to every replica that touched the session, a
//! session notification to the replica holding its `GET` stream
//! ([`SessionStore::hold_stream`]; one that no longer has it publishes it to every replica,
//! once). Without such a store, or when the store fails or reports more than
//! [`MAX_HOLDERS`](super::MAX_HOLDERS), the message is broadcast as before.
//!
//! **Early cancellations.** A `notifications/cancelled` may reach a replica before the
//! request it cancels was admitted (the balancer sent the two POSTs to two replicas, and the
//! cancellation won). Each router remembers such a cancellation for [`EARLY_CANCEL_TTL`]
//! (at most [`MAX_EARLY_CANCELS`]); a request admitted meanwhile under that id in that session
//! is cancelled at once.
//!
//! Bounds: the router's map has one entry per live session copy of this transport (at most
//! `HttpConfig::max_sessions`; an entry goes when its copy closes); invalidations awaiting
//! confirmation at most [`MAX_AWAITED`] (more wait out the lease); messages are bounded by the
//! bus (`BusBounds::max_message_bytes`: a larger answer is dropped with a warning there, and
//! the waiting handler times out as if the client had not answered).

use super::session::HttpSession;
use crate::correlation::{Limits, LocalTable, Outcome, Refused, Table, Ticket};
use crate::jsonrpc::RequestId;
use crate::server::bus::{BusAnswer, BusMessage};
use crate::server::BusSlot;
use crate::transport::http::SessionStore;
use crate::util::lock;
use std::collections::HashMap;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio_util::sync::CancellationToken;

/// This replica's copy of one shared session, as the router knows it.
struct Entry {
    table: Weak<LocalTable<Outcome>>,
    session: Weak<HttpSession>,
}

/// At most this many invalidations of one transport wait for confirmations at a time; more
/// wait out the freshness lease instead.
pub(crate) const MAX_AWAITED: usize = 1024;

/// How long a cancellation of a request not (yet) running here is remembered.
pub(crate) const EARLY_CANCEL_TTL: Duration = Duration::from_secs(5);

/// Cancellations remembered at most per transport (the oldest go first).
pub(crate) const MAX_EARLY_CANCELS: usize = 256;

/// Session notifications waiting to be sent to another replica, at most (per transport); and
/// sessions whose stream holder is remembered, at most.
pub(crate) const MAX_RELAYED: usize = 1024;

/// How long a closing transport's router still takes what is routed to it (see
/// `Router::follow_stream`).
const HANDOVER: Duration = Duration::from_secs(2);

/// How long the replica holding a session's `GET` stream is taken as known without asking the
/// store again (a stream that moved meanwhile gets the notification through the old holder,
/// which publishes it to every replica).
const STREAM_HOLDER_TTL: Duration = Duration::from_secs(1);

/// A session notification for another replica: (session id, its scope, the message).
type Relayed = (Arc<str>, Arc<str>, String);

/// A cancellation that found no running request: (when, session scope, request id).
type Early = (std::time::Instant, Arc<str>, RequestId);

/// An invalidation waiting for the other replicas to confirm it.
#[derive(Default)]
struct Awaited {
    /// The routers that confirmed (each once).
    from: Vec<u64>,
    confirmed: Arc<Notify>,
}

/// One transport's end of reply routing: its shared sessions' tables by scope.
pub(crate) struct Router {
    bus: BusSlot,
    /// This router's id in confirmations.
    origin: u64,
    /// This replica's invalidations awaiting confirmation, by their `ack`.
    awaited: Mutex<HashMap<u64, Awaited>>,
    /// This replica's prefix for server→client request ids (`s-<8 hex>-`, or
    /// `s-<8 hex>-<16 hex>-` when the bus has inboxes: the second part is this replica's).
    prefix: Arc<str>,
    tables: Mutex<HashMap<Arc<str>, Entry>>,
    /// Where the replicas holding each session are known, and the cancellation window (the
    /// session idle timeout: a copy running a request touched the session within it).
    store: Option<(Arc<dyn SessionStore>, Duration)>,
    /// Cancellations that came before their request ([`EARLY_CANCEL_TTL`]).
    early: Mutex<VecDeque<Early>>,
    /// Session notifications on their way to another replica (made on first use).
    notes: OnceLock<mpsc::Sender<Relayed>>,
    /// Set once the task receiving from the bus runs.
    listening: OnceLock<()>,
    /// While that task runs.
    hearing: AtomicBool,
    /// Times that task found it lost messages (falling behind): every freshness is forgotten.
    flushes: AtomicU64,
    closing: CancellationToken,
}

impl Router {
    /// A router publishing on (and, once a session needs it, listening to) the server's bus.
    #[cfg(test)]
    pub(crate) fn new(bus: BusSlot, closing: CancellationToken) -> Arc<Self> {
        Self::with_store(bus, closing, None)
    }

    /// As [`new`](Self::new), targeting its messages at the replicas `store` says hold a
    /// session (with the session idle timeout).
    pub(crate) fn with_store(
        bus: BusSlot,
        closing: CancellationToken,
        store: Option<(Arc<dyn SessionStore>, Duration)>,
    ) -> Arc<Self> {
        let origin = crate::server::bus::origin_id();
        // With an inbox (the bus is attached before the transport's router is made), the ids
        // say where their answers go.
        let prefix = match bus.get().and_then(|b| b.inbox()) {
            Some(inbox) => format!("s-{:08x}-{inbox:016x}-", origin as u32),
            None => format!("s-{:08x}-", origin as u32),
        };
        let router = Arc::new(Router {
            bus,
            origin,
            awaited: Mutex::default(),
            prefix: Arc::from(prefix),
            tables: Mutex::default(),
            store,
            early: Mutex::default(),
            notes: OnceLock::new(),
            listening: OnceLock::new(),
            hearing: AtomicBool::new(false),
            flushes: AtomicU64::new(0),
            closing,
        });
        // A router that listens from the start confirms the others' invalidations even
        // before this replica serves a session.
        router.ensure_listening();
        router
    }

    /// The table of a copy of the session scoped `scope`, and its local half (for
    /// [`bind`](Self::bind), once the copy is in the session table).
    pub(crate) fn table(
        self: &Arc<Self>,
        id: &str,
        scope: &str,
        limits: Limits,
    ) -> (RoutedTable, Arc<LocalTable<Outcome>>) {
        self.ensure_listening();
        let local = Arc::new(LocalTable::new(limits));
        let table = RoutedTable {
            local: local.clone(),
            id: Arc::from(id),
            scope: Arc::from(scope),
            router: self.clone(),
        };
        (table, local)
    }

    /// The prefix of this replica's server→client request ids.
    pub(crate) fn prefix(&self) -> String {
        self.prefix.to_string()
    }

    /// Registers the copy `session` (scoped `scope`, its table made with
    /// [`table`](Self::table)) for routing, and gives its own notifications their way: to its
    /// `GET` stream when one is open here (or no bus is attached), else to the other replicas
    /// (the one holding the stream sends it).
    pub(crate) fn bind(
        self: &Arc<Self>,
        scope: &str,
        local: &Arc<LocalTable<Outcome>>,
        session: &Arc<HttpSession>,
    ) {
        self.register(scope, local, Arc::downgrade(session));
        let weak = Arc::downgrade(session);
        let router = Arc::downgrade(self);
        let scope: Arc<str> = Arc::from(scope);
        let id: Arc<str> = Arc::from(&*session.id);
        session.core.set_relay(Box::new(move |frame| {
            let Some(s) = weak.upgrade() else { return };
            let elsewhere = router.upgrade().filter(|r| r.bus.get().is_some());
            let Some(router) = elsewhere.filter(|_| s.standalone_gets.load(Ordering::Relaxed) == 0)
            else {
                // Its GET stream is here (or there is no other replica to ask).
                let _ = s.core.unrelated.try_send(frame);
                return;
            };
            match String::from_utf8(frame) {
                Ok(message) => router.notify_elsewhere(&id, &scope, message),
                Err(_) => tracing::warn!("a session notification is not UTF-8; dropped"),
            }
        }));
    }

    /// Sends a notification of session `id` to the replica holding its `GET` stream (as the
    /// store knows it), or to every replica when that is not known.
    fn notify_elsewhere(self: &Arc<Self>, id: &Arc<str>, scope: &Arc<str>, message: String) {
        let Some((store, idle)) = self.store.clone() else {
            self.publish(BusMessage::Notify {
                session: scope.to_string(),
                message,
                targeted: false,
            });
            return;
        };
        // In order: one task per router sends them, asking the store where a session's
        // stream is at most once per `STREAM_HOLDER_TTL`.
        let notes = self.notes.get_or_init(|| {
            let (tx, mut rx) = mpsc::channel::<Relayed>(MAX_RELAYED);
            let router = Arc::downgrade(self);
            tokio::spawn(async move {
                let mut known: HashMap<Arc<str>, (std::time::Instant, Option<u64>)> =
                    HashMap::new();
                while let Some((id, scope, message)) = rx.recv().await {
                    let Some(router) = router.upgrade() else {
                        return;
                    };
                    let now = std::time::Instant::now();
                    let holder = match known.get(&id) {
                        Some((at, h)) if now.duration_since(*at) < STREAM_HOLDER_TTL => *h,
                        _ => {
                            let fresh = match store.holders(&id, idle).await {
                                Ok(Some(h)) => h.stream.filter(other_than(router.inbox())),
                                _ => None,
                            };
                            // No holder just now, but one a moment ago: the stream is moving
                            // (a restart); the last holder hands it on (`follow_stream`).
                            let moving = known.get(&id).and_then(|(at, h)| {
                                h.filter(|_| now.duration_since(*at) < 3 * STREAM_HOLDER_TTL)
                            });
                            if known.len() >= MAX_RELAYED {
                                known.clear();
                            }
                            if fresh.is_some() || moving.is_none() {
                                known.insert(id, (now, fresh));
                            }
                            fresh.or(moving)
                        }
                    };
                    let message = BusMessage::Notify {
                        session: scope.to_string(),
                        message,
                        targeted: holder.is_some(),
                    };
                    match (holder, router.bus.get()) {
                        (Some(to), Some(bus)) => bus.publish_to(to, message),
                        _ => {
                            router.publish(message);
                        }
                    }
                }
            });
            tx
        });
        if notes
            .try_send((id.clone(), scope.clone(), message))
            .is_err()
        {
            tracing::warn!(
                "a session notification for another replica dropped: {MAX_RELAYED} wait already"
            );
        }
    }

    /// Hands a notification of `session` (sent here as its stream's holder, which this replica
    /// no longer is) to the replica holding the stream now: asked of the store a few times
    /// within [`HANDOVER`] (a stream ended here by a restart is resumed elsewhere within
    /// milliseconds), sent here if the stream comes back here meanwhile, else to every replica.
    fn follow_stream(&self, session: Arc<HttpSession>, scope: String, message: String) {
        let Some((store, idle)) = self.store.clone() else {
            self.publish(BusMessage::Notify {
                session: scope,
                message,
                targeted: false,
            });
            return;
        };
        let (bus, me) = (self.bus.clone(), self.inbox());
        tokio::spawn(async move {
            let untargeted = |message: String| BusMessage::Notify {
                session: scope.clone(),
                message,
                targeted: false,
            };
            for wait in [0, 20, 50, 100, 200, 400] {
                tokio::time::sleep(Duration::from_millis(wait)).await;
                if session.standalone_gets.load(Ordering::Relaxed) > 0 {
                    let _ = session.core.unrelated.try_send(message.into_bytes());
                    return;
                }
                if let (Ok(Some(h)), Some(bus)) =
                    (store.holders(&session.id, idle).await, bus.get())
                {
                    if let Some(to) = h.stream.filter(other_than(me)) {
                        bus.publish_to(to, untargeted(message));
                        return;
                    }
                }
            }
            if let Some(bus) = bus.get() {
                bus.publish(untargeted(message));
            }
        });
    }

    /// This replica's inbox on the bus, when it has one.
    fn inbox(&self) -> Option<u64> {
        self.bus.get().and_then(|b| b.inbox())
    }

    /// Sends a cancellation of request `request` of session `id` (not running here) to the
    /// replicas holding the session, or to every replica when they are not known.
    fn cancel_elsewhere(self: &Arc<Self>, id: &Arc<str>, scope: &Arc<str>, request: &RequestId) {
        let message = BusMessage::Cancel {
            session: scope.to_string(),
            id: request.clone(),
        };
        let Some((store, idle)) = self.store.clone() else {
            self.publish(message);
            return;
        };
        let (router, id) = (self.clone(), id.clone());
        tokio::spawn(async move {
            let me = router.inbox();
            match (store.holders(&id, idle).await, router.bus.get()) {
                (Ok(Some(h)), Some(bus)) => {
                    for to in h.replicas.into_iter().filter(other_than(me)) {
                        bus.publish_to(to, message.clone());
                    }
                }
                _ => {
                    router.publish(message);
                }
            }
        });
    }

    /// Remembers a cancellation that found no running request (see the module's
    /// documentation).
    fn remember_cancel(&self, scope: &str, request: &RequestId) {
        let now = std::time::Instant::now();
        let mut early = lock(&self.early);
        while early
            .front()
            .is_some_and(|(at, _, _)| now.duration_since(*at) >= EARLY_CANCEL_TTL)
        {
            early.pop_front();
        }
        if early.len() >= MAX_EARLY_CANCELS {
            early.pop_front();
        }
        early.push_back((now, Arc::from(scope), request.clone()));
    }

    /// Whether request `request` of session `scope` was cancelled before it was admitted here
    /// (forgotten once asked).
    fn cancelled_early(&self, scope: &str, request: &RequestId) -> bool {
        let mut early = lock(&self.early);
        if early.is_empty() {
            return false;
        }
        let now = std::time::Instant::now();
        match early.iter().position(|(at, s, r)| {
            now.duration_since(*at) < EARLY_CANCEL_TTL && &**s == scope && r == request
        }) {
            Some(i) => {
                early.remove(i);
                true
            }
            None => false,
        }
    }

    fn register(&self, scope: &str, local: &Arc<LocalTable<Outcome>>, session: Weak<HttpSession>) {
        // A newer copy of the session replaces an older one still closing.
        lock(&self.tables).insert(
            Arc::from(scope),
            Entry {
                table: Arc::downgrade(local),
                session,
            },
        );
    }

    fn local(&self, scope: &str) -> Option<Arc<LocalTable<Outcome>>> {
        lock(&self.tables)
            .get(scope)
            .and_then(|e| e.table.upgrade())
    }

    fn session(&self, scope: &str) -> Option<Arc<HttpSession>> {
        lock(&self.tables)
            .get(scope)
            .and_then(|e| e.session.upgrade())
    }

    fn unregister(&self, scope: &Arc<str>, local: &Arc<LocalTable<Outcome>>) {
        let mut tables = lock(&self.tables);
        if tables
            .get(scope)
            .is_some_and(|e| std::ptr::eq(e.table.as_ptr(), Arc::as_ptr(local)))
        {
            tables.remove(scope);
        }
    }

    /// Publishes an answer that reached this replica for a server→client request `id` it did
    /// not make: to the inbox the id names (`s-<8 hex>-<16 hex>-…`), else to every replica.
    fn publish_reply(&self, id: &RequestId, message: BusMessage) -> bool {
        match (self.bus.get(), reply_inbox(id)) {
            (Some(bus), Some(to)) => {
                bus.publish_to(to, message);
                true
            }
            _ => self.publish(message),
        }
    }

    fn publish(&self, message: BusMessage) -> bool {
        match self.bus.get() {
            Some(bus) => {
                bus.publish(message);
                true
            }
            None => false,
        }
    }

    /// Tells the other replicas that session `scope` changed or ended (call it once the
    /// session store has the change), and returns once none of them can still trust its
    /// copy: when every other replica the message reached confirmed that its copy forgot
    /// ([`BusMessage::InvalidateAck`]), or else once `lease` (the longest a copy trusts a
    /// freshness, counted from before the store answered it) has passed since the call.
    /// `true` when confirmed (or there is no bus: nobody caches then), `false` when the lease
    /// was waited out.
    pub(crate) async fn invalidate(
        self: &Arc<Self>,
        id: &str,
        scope: &str,
        lease: Duration,
    ) -> bool {
        let until = tokio::time::Instant::now() + lease;
        let Some(bus) = self.bus.get() else {
            return true;
        };
        self.ensure_listening();
        // The replicas that may trust a copy: those that touched the session with a copy in
        // hand (or saved it) within the lease (twice, for touches whose answer was still on
        // its way), read after the change.
        let holders = match &self.store {
            Some((store, _)) => store
                .holders(id, lease.saturating_mul(2))
                .await
                .ok()
                .flatten(),
            None => None,
        };
        // Confirmations arrive only through this replica's own subscription: it must hold
        // from before the message is published until the last confirmation is in.
        let heard = self.generation();
        let ack = crate::server::bus::origin_id();
        let confirmed = self.await_confirmations(ack);
        let message = BusMessage::Invalidate {
            session: scope.to_owned(),
            ack: confirmed.is_some().then_some(ack),
            reply_to: bus.inbox(),
        };
        let reached = match holders {
            Some(h) => {
                let me = bus.inbox();
                let sends = h
                    .caching
                    .into_iter()
                    .filter(other_than(me))
                    .map(|to| bus.publish_sent_to(to, message.clone()));
                futures_util::future::join_all(sends)
                    .await
                    .into_iter()
                    .try_fold(0usize, |sum, n| n.map(|n| sum + n))
            }
            None => bus.publish_sent(message).await,
        };
        let done = match (heard, reached, confirmed) {
            (Some(g), Some(others), Some(notify)) => {
                tokio::time::timeout_at(until, self.confirmations(ack, others, &notify))
                    .await
                    .is_ok()
                    && self.generation() == Some(g)
            }
            _ => false,
        };
        lock(&self.awaited).remove(&ack);
        if !done {
            tokio::time::sleep_until(until).await;
        }
        done
    }

    /// Registers invalidation `ack` as awaiting confirmations; `None` when too many do.
    fn await_confirmations(&self, ack: u64) -> Option<Arc<Notify>> {
        let mut awaited = lock(&self.awaited);
        if awaited.len() >= MAX_AWAITED {
            return None;
        }
        Some(awaited.entry(ack).or_default().confirmed.clone())
    }

    /// Resolves once `needed` routers confirmed invalidation `ack`.
    async fn confirmations(&self, ack: u64, needed: usize, notify: &Notify) {
        loop {
            let woken = notify.notified();
            let mut woken = std::pin::pin!(woken);
            woken.as_mut().enable();
            let have = lock(&self.awaited).get(&ack).map_or(0, |a| a.from.len());
            if have >= needed {
                return;
            }
            woken.await;
        }
    }

    /// While every invalidation published by the other replicas is heard here: the bus's
    /// subscription number and this receiver's flush count, both of which must be unchanged
    /// for a freshness noted under them to hold. `None` (nothing may be trusted) without a bus,
    /// while its subscription is down, or before this router listens.
    pub(crate) fn generation(&self) -> Option<(u64, u64)> {
        if !self.hearing.load(Ordering::Acquire) {
            return None;
        }
        let bus = self.bus.get()?.listening()?;
        Some((bus, self.flushes.load(Ordering::Acquire)))
    }

    /// Starts the task that takes what other replicas route here (once a bus is
    /// attached; it ends with the transport, or when the router is gone).
    pub(crate) fn ensure_listening(self: &Arc<Self>) {
        if self.listening.get().is_some() {
            return;
        }
        let Some(bus) = self.bus.get() else { return };
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        if self.listening.set(()).is_err() {
            return;
        }
        let mut rx = bus.subscribe();
        let weak = Arc::downgrade(self);
        let closing = self.closing.clone();
        self.hearing.store(true, Ordering::Release);
        tokio::spawn(async move {
            let mut missed = 0;
            // Closing, the router trusts no freshness any more but goes on taking what is
            // routed here for `HANDOVER`: a notification sent here for a stream this replica
            // just ended finds where the stream went.
            let hearing_weak = weak.clone();
            let ended = async move {
                closing.cancelled().await;
                if let Some(router) = hearing_weak.upgrade() {
                    router.hearing.store(false, Ordering::Release);
                }
                tokio::time::sleep(HANDOVER).await;
            };
            let mut ended = std::pin::pin!(ended);
            loop {
                let message = tokio::select! {
                    () = &mut ended => break,
                    m = rx.recv() => m,
                };
                let Some(router) = weak.upgrade() else { return };
                let Some(message) = message else { break };
                if rx.missed() != missed {
                    // Invalidations may be among the lost: trust no freshness noted before.
                    missed = rx.missed();
                    router.flushes.fetch_add(1, Ordering::AcqRel);
                }
                router.deliver(&message);
            }
            if let Some(router) = weak.upgrade() {
                router.hearing.store(false, Ordering::Release);
            }
        });
    }

    /// Hands an answer, a cancellation or a notification from another replica to this
    /// replica's copy of its session; `true` when something here took it.
    pub(crate) fn deliver(&self, message: &BusMessage) -> bool {
        match message {
            BusMessage::Reply {
                session,
                id,
                answer,
            } => {
                let Some(local) = self.local(session) else {
                    return false;
                };
                let Some(outcome) = answer.outcome() else {
                    tracing::warn!(id = %id, "a routed answer's result is not JSON; dropped");
                    return false;
                };
                local.try_complete(id, outcome).unwrap_or(false)
            }
            BusMessage::Cancel { session, id } => {
                let cancelled = self
                    .local(session)
                    .is_some_and(|local| Table::<Outcome>::cancel(&*local, id));
                if !cancelled {
                    // Its request may not be admitted here yet.
                    self.remember_cancel(session, id);
                }
                cancelled
            }
            BusMessage::Notify {
                session,
                message,
                targeted,
            } => match self.session(session) {
                // Only a copy whose GET stream is open here sends it (others have no client).
                Some(s) if s.standalone_gets.load(Ordering::Relaxed) > 0 => s
                    .core
                    .unrelated
                    .try_send(message.clone().into_bytes())
                    .is_ok(),
                // Sent here as the stream's holder, which it no longer is: to where the stream
                // went (see `follow_stream`).
                Some(s) if *targeted => {
                    self.follow_stream(s, session.clone(), message.clone());
                    false
                }
                _ if *targeted => {
                    self.publish(BusMessage::Notify {
                        session: session.clone(),
                        message: message.clone(),
                        targeted: false,
                    });
                    false
                }
                _ => false,
            },
            BusMessage::Invalidate {
                session,
                ack,
                reply_to,
            } => {
                let copy = self.session(session);
                if let Some(s) = &copy {
                    s.fresh.forget();
                }
                // Confirmed whether or not this replica has a copy: the publisher counts
                // every replica its message reached. To the publisher alone when it said
                // where (so N replicas' confirmations cost N messages, not N per replica).
                if let Some(ack) = *ack {
                    let confirm = BusMessage::InvalidateAck {
                        ack,
                        from: self.origin,
                    };
                    match (reply_to, self.bus.get()) {
                        (Some(to), Some(bus)) => bus.publish_to(*to, confirm),
                        _ => {
                            self.publish(confirm);
                        }
                    }
                }
                copy.is_some()
            }
            BusMessage::InvalidateAck { ack, from } => {
                let mut awaited = lock(&self.awaited);
                let Some(a) = awaited.get_mut(ack) else {
                    return false;
                };
                // Bounded: no more routers confirm one invalidation than could be awaited.
                if !a.from.contains(from) && a.from.len() < MAX_AWAITED {
                    a.from.push(*from);
                    a.confirmed.notify_waiters();
                }
                true
            }
            _ => false,
        }
    }
}

/// A holder other than this replica (`me`: its inbox, when it has one).
fn other_than(me: Option<u64>) -> impl Fn(&u64) -> bool {
    move |holder| Some(*holder) != me
}

/// The inbox a server→client request id names (`s-<8 hex>-<16 hex>-N`: made by a router whose
/// bus has inboxes); `None` for any other id (the answer is then broadcast).
fn reply_inbox(id: &RequestId) -> Option<u64> {
    let RequestId::String(s) = id else {
        return None;
    };
    let (_, rest) = s.strip_prefix("s-")?.split_once('-')?;
    let (inbox, _) = rest.split_once('-')?;
    if inbox.len() != 16 {
        return None;
    }
    u64::from_str_radix(inbox, 16).ok()
}

/// A shared session copy's [`Table`]: this replica's entries, and the misses of `complete` and
/// `cancel` passed on through the bus (see the [module documentation](self)).
pub(crate) struct RoutedTable {
    local: Arc<LocalTable<Outcome>>,
    /// The session's id (asked of the store, never put on the bus).
    id: Arc<str>,
    scope: Arc<str>,
    router: Arc<Router>,
}

impl Table<Outcome> for RoutedTable {
    fn insert_pending(
        &self,
        id: RequestId,
        answer: oneshot::Sender<Outcome>,
    ) -> Result<(), Refused> {
        self.local.insert_pending(id, answer)
    }

    fn complete(&self, id: &RequestId, answer: Outcome) -> bool {
        match self.local.try_complete(id, answer) {
            Ok(delivered) => delivered,
            Err(answer) => self.router.publish_reply(
                id,
                BusMessage::Reply {
                    session: self.scope.to_string(),
                    id: id.clone(),
                    answer: BusAnswer::from(&answer),
                },
            ),
        }
    }

    fn forget(&self, id: &RequestId) {
        self.local.forget(id)
    }

    fn insert_running(&self, id: RequestId, cancel: CancellationToken) -> Result<Ticket, Refused> {
        let early = self.router.cancelled_early(&self.scope, &id);
        let ticket = self.local.insert_running(id, cancel.clone())?;
        if early {
            cancel.cancel();
        }
        Ok(ticket)
    }

    fn is_running(&self, id: &RequestId) -> bool {
        self.local.is_running(id)
    }

    fn finish(&self, id: &RequestId, ticket: Ticket) {
        self.local.finish(id, ticket)
    }

    fn cancel(&self, id: &RequestId) -> bool {
        if self.local.cancel(id) {
            return true;
        }
        if self.router.bus.get().is_none() {
            return false;
        }
        // Running on another replica, or not admitted yet (here or there).
        self.router.remember_cancel(&self.scope, id);
        self.router.cancel_elsewhere(&self.id, &self.scope, id);
        true
    }

    fn cancel_running(&self) {
        self.local.cancel_running()
    }

    fn close(&self) {
        self.local.close();
        self.router.unregister(&self.scope, &self.local);
    }

    fn counts(&self) -> (usize, usize) {
        self.local.counts()
    }
}

impl Drop for RoutedTable {
    fn drop(&mut self) {
        self.router.unregister(&self.scope, &self.local);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::correlation::Correlation;
    use crate::server::bus::{Bus, LocalBus};
    use serde_json::value::RawValue;
    use std::time::Duration;

    /// An engine over a routed table of session `scope`, registered as a copy would be.
    fn engine(router: &Arc<Router>, scope: &str) -> Correlation {
        let (table, local) = router.table(scope, scope, Limits::default());
        router.register(scope, &local, Weak::new());
        Correlation::with_table(router.prefix(), table)
    }

    fn router(hub: &LocalBus) -> Arc<Router> {
        let slot = BusSlot::default();
        let member: Arc<dyn Bus> = Arc::new(hub.member());
        let _ = slot.set(member);
        Router::new(slot, CancellationToken::new())
    }

    #[tokio::test]
    async fn an_answer_or_a_cancellation_reaching_another_replica_reaches_this_one() {
        let hub = LocalBus::new(16);
        let (ra, rb) = (router(&hub), router(&hub));
        assert_ne!(ra.prefix(), rb.prefix());
        let (a, b, other) = (engine(&ra, "sc"), engine(&rb, "sc"), engine(&rb, "other"));

        // A waits; the answer reaches B, which has no such request: it goes through the bus.
        let waiter = a.request().unwrap();
        let id = waiter.id().clone();
        assert!(id.to_string().contains(&*ra.prefix), "{id}");
        let answer = RawValue::from_string(r#"{"action":"decline"}"#.into()).unwrap();
        assert!(b.complete(&id, Ok(answer)));
        let never = CancellationToken::new();
        let got = waiter.wait(Duration::from_secs(5), &never).await.unwrap();
        assert_eq!(got.unwrap().get(), r#"{"action":"decline"}"#);

        // A request running on A is cancelled through B; another session's is not.
        let token = CancellationToken::new();
        let _running = a.admit(RequestId::from(4), token.clone()).unwrap();
        let untouched = CancellationToken::new();
        let _o = other.admit(RequestId::from(4), untouched.clone()).unwrap();
        assert!(b.cancel(&RequestId::from(4)));
        tokio::time::timeout(Duration::from_secs(5), token.cancelled())
            .await
            .unwrap();
        assert!(!untouched.is_cancelled());

        // An answer for this replica stays here: nothing is published.
        let mut heard = hub.member().subscribe();
        let waiter = b.request().unwrap();
        let id = waiter.id().clone();
        assert!(b.complete(&id, Ok(RawValue::from_string("{}".into()).unwrap())));
        assert!(waiter.wait(Duration::from_secs(1), &never).await.is_ok());
        assert!(heard.try_recv().is_none());
    }

    #[tokio::test]
    async fn an_invalidation_returns_once_every_other_replica_confirmed_else_after_the_lease() {
        let hub = LocalBus::new(16);
        let (ra, _rb, _rc) = (router(&hub), router(&hub), router(&hub));
        // Both other routers confirm: well before a long lease.
        let started = std::time::Instant::now();
        let confirmed = tokio::time::timeout(
            Duration::from_secs(20),
            ra.invalidate("sid", "sc", Duration::from_secs(60)),
        )
        .await
        .expect("confirmed before the lease");
        assert!(confirmed);
        assert!(started.elapsed() < Duration::from_secs(20));
        assert!(lock(&ra.awaited).is_empty(), "nothing left awaiting");

        // A member that hears but never confirms (a replica without confirmations, or one
        // whose router is gone): the lease is waited out, in full.
        let _silent = hub.member();
        let lease = Duration::from_millis(300);
        let started = std::time::Instant::now();
        assert!(!ra.invalidate("sid", "sc", lease).await);
        assert!(started.elapsed() >= lease);
        assert!(lock(&ra.awaited).is_empty());

        // No bus: nobody caches, nothing to wait for.
        let alone = Router::new(BusSlot::default(), CancellationToken::new());
        let started = std::time::Instant::now();
        assert!(alone.invalidate("sid", "sc", Duration::from_secs(60)).await);
        assert!(started.elapsed() < Duration::from_secs(20));
    }

    #[tokio::test]
    async fn the_generation_holds_while_the_bus_listens_and_moves_when_messages_were_lost() {
        let slot = BusSlot::default();
        let idle = Router::new(slot, CancellationToken::new());
        assert_eq!(idle.generation(), None, "no bus: nothing may be trusted");

        let hub = LocalBus::new(1);
        let ra = router(&hub);
        assert_eq!(ra.generation(), Some((0, 0)), "listening from the start");
        // Three messages into a queue of one before the router reads: two are lost.
        let other = hub.member();
        for _ in 0..3 {
            other.publish(BusMessage::Invalidate {
                session: "elsewhere".into(),
                ack: None,
                reply_to: None,
            });
        }
        tokio::time::timeout(Duration::from_secs(5), async {
            while ra.generation() != Some((0, 1)) {
                tokio::task::yield_now().await;
            }
        })
        .await
        .unwrap();
        // Closing the transport: the router hears nothing more.
        ra.closing.cancel();
        tokio::time::timeout(Duration::from_secs(5), async {
            while ra.generation().is_some() {
                tokio::task::yield_now().await;
            }
        })
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn a_closed_copy_leaves_the_routing_map_and_a_routed_miss_is_not_published_again() {
        let hub = LocalBus::new(16);
        let ra = router(&hub);
        let a = engine(&ra, "sc");
        assert_eq!(lock(&ra.tables).len(), 1);
        // Nobody waits under this id here: delivered to nobody, nothing published.
        let mut heard = hub.member().subscribe();
        let message = BusMessage::Reply {
            session: "sc".into(),
            id: RequestId::from(1),
            answer: BusAnswer::Result("{}".into()),
        };
        assert!(!ra.deliver(&message));
        assert!(heard.try_recv().is_none());
        a.close();
        assert!(lock(&ra.tables).is_empty());
        assert!(!ra.deliver(&message));
    }

    /// A member of `hub` with an inbox (its number), noting what it sends to one replica.
    struct Addressed {
        member: crate::server::bus::LocalBusMember,
        inbox: u64,
        sent_to: Arc<Mutex<Vec<(u64, String)>>>,
    }

    impl Bus for Addressed {
        fn publish(&self, message: BusMessage) {
            self.member.publish(message);
        }
        fn subscribe(&self) -> crate::server::bus::BusReceiver {
            self.member.subscribe()
        }
        fn publish_sent(&self, message: BusMessage) -> crate::server::bus::BusSent<'_> {
            self.member.publish_sent(message)
        }
        fn listening(&self) -> Option<u64> {
            self.member.listening()
        }
        fn inbox(&self) -> Option<u64> {
            Some(self.inbox)
        }
        fn publish_to(&self, to: u64, message: BusMessage) {
            let kind = serde_json::to_value(&message).unwrap()["kind"].to_string();
            lock(&self.sent_to).push((to, kind));
            // The hub cannot address one member: every one hears it.
            self.member.publish(message);
        }
    }

    #[tokio::test]
    async fn an_answer_reaching_another_replica_goes_to_the_inbox_its_id_names() {
        let hub = LocalBus::new(16);
        let sent_to = Arc::new(Mutex::new(Vec::new()));
        let addressed = |inbox: u64| {
            let slot = BusSlot::default();
            let bus: Arc<dyn Bus> = Arc::new(Addressed {
                member: hub.member(),
                inbox,
                sent_to: sent_to.clone(),
            });
            let _ = slot.set(bus);
            Router::new(slot, CancellationToken::new())
        };
        let (ra, rb) = (addressed(0xa1), addressed(0xb2));
        let (a, b) = (engine(&ra, "sc"), engine(&rb, "sc"));
        let waiter = a.request().unwrap();
        let id = waiter.id().clone();
        assert!(id.to_string().contains("-00000000000000a1-"), "{id}");
        assert_eq!(reply_inbox(&id), Some(0xa1));
        let answer = RawValue::from_string(r#"{"action":"decline"}"#.into()).unwrap();
        assert!(b.complete(&id, Ok(answer)));
        let never = CancellationToken::new();
        let got = waiter.wait(Duration::from_secs(5), &never).await.unwrap();
        assert_eq!(got.unwrap().get(), r#"{"action":"decline"}"#);
        assert_eq!(lock(&sent_to).clone(), [(0xa1, "\"reply\"".to_owned())]);
        // Ids of another shape (no inbox in them) are broadcast.
        for other in [
            RequestId::from(7),
            RequestId::String("s-0badc0de-3".into()),
            RequestId::String("s-0badc0de-xyz-3".into()),
            RequestId::String("s-0badc0de-00000000000000zz-3".into()),
        ] {
            assert_eq!(reply_inbox(&other), None, "{other}");
        }
    }

    #[tokio::test]
    async fn the_confirmations_of_an_invalidation_go_to_its_publisher_alone() {
        let hub = LocalBus::new(16);
        let sent_to = Arc::new(Mutex::new(Vec::new()));
        let addressed = |inbox: u64| {
            let slot = BusSlot::default();
            let bus: Arc<dyn Bus> = Arc::new(Addressed {
                member: hub.member(),
                inbox,
                sent_to: sent_to.clone(),
            });
            let _ = slot.set(bus);
            Router::new(slot, CancellationToken::new())
        };
        let (ra, _rb, _rc) = (addressed(1), addressed(2), addressed(3));
        let confirmed = tokio::time::timeout(
            Duration::from_secs(20),
            ra.invalidate("sid", "sc", Duration::from_secs(60)),
        )
        .await
        .expect("confirmed before the lease");
        assert!(confirmed);
        // B and C each sent their confirmation to A's inbox, and nothing else to anyone.
        let sent = lock(&sent_to).clone();
        assert_eq!(
            sent,
            vec![(1, "\"invalidate_ack\"".to_owned()); 2],
            "{sent:?}"
        );
    }
}
