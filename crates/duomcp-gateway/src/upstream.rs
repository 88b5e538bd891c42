//! One server behind the gateway: its connections (a URL upstream: one pooled upstream
//! session per distinct set of client capabilities; a stdio upstream: its one process), the
//! calls in flight on each, and where the upstream's requests and notifications during a call
//! are routed.

use crate::config::{Isolation, UpstreamConfig};
use crate::names::{Naming, ToolFilter};
use duomcp::auth::OAuthClient;
use duomcp::client::transport::ProcessOptions;
use duomcp::client::{Client, ClientError, InputError, ServerEvent};
use duomcp::server::{ClientSession, Context};
use duomcp_schema::{
    ClientCapabilities, ElicitationCapability, InputRequest, JsonObject, LoggingLevel,
    LoggingMessageNotificationParams, ProgressNotificationParams, RootsCapability,
    SamplingCapability,
};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{mpsc, oneshot, Notify, OnceCell, Semaphore};

/// Distinct client capability sets with a session of their own, per URL upstream (a stdio
/// upstream has one session); further sets share the session that declares everything.
pub const MAX_POOLED_SESSIONS: usize = 8;

/// What an upstream sends during one of the gateway's calls to it.
pub(crate) enum Event {
    /// A request for input (elicitation, sampling, roots), answered through `reply`.
    Input {
        request: Box<InputRequest>,
        reply: oneshot::Sender<Result<Value, String>>,
    },
    /// A log message (boxed, as every payload is: the channel's blocks of slots, allocated for
    /// every call, stay small).
    Log(Box<LoggingMessageNotificationParams>),
    /// Progress of the call.
    Progress(Box<ProgressNotificationParams>),
}

/// The calls in flight on one upstream session, newest last, and where what the upstream sends
/// during them goes.
///
/// An upstream's request for input does not go through this table: each call answers its own
/// (see `bridge::start`). A log message names no call (in 2025-11-25, nor over stdio in
/// 2026-07-28), so it goes to a call only when that call is the one
/// it can belong to: the only call in flight on the session when the message is routed, the
/// calls that ended counted until every message received before their result is routed (see
/// `sweep`, which the routing task runs as soon as a call ends while a call whose client takes
/// log messages is in flight, or such a call starts). A 2026-07-28 upstream logs only for a
/// request that names a level, so there only the calls whose clients take log messages count
/// (`scoped_logs`). When several calls that could have sent it run at
/// once the message is not any one client's to see, and is dropped (traced at debug level):
/// under concurrency a client may miss log messages, but never gets another client's. A
/// relayed 2026-07-28 call that asks for neither log messages nor progress is not in the table
/// at all (`bridge::start`): such an upstream logs only for requests that name a level, so no
/// message can be that call's.
#[derive(Default)]
pub(crate) struct Routes {
    next: AtomicU64,
    active: Mutex<Vec<Route>>,
    /// Wakes the routing task to forget the calls that ended.
    ended: Notify,
    /// The routing task is gone (the connection closed): an ended call is forgotten at once.
    orphaned: AtomicBool,
    /// The upstream speaks 2026-07-28, whose log messages are request-scoped: it sends them
    /// only for a request that named a log level, so only calls whose client takes log
    /// messages (and whose request to the upstream therefore names one) can own one. A call
    /// in flight that asked for none (progress only, or held for its client's input) does not
    /// make another call's messages ambiguous.
    scoped_logs: AtomicBool,
}

/// One call in the route table.
struct Route {
    id: u64,
    tx: mpsc::Sender<Event>,
    state: RouteState,
    /// The call's client takes log messages.
    logs: bool,
}

/// Calls that ended and are not swept yet after which the routing task sweeps even when no
/// call in flight takes log messages (which otherwise waits: a sweep only matters to them).
const SWEEP_AFTER: usize = 64;

#[derive(Clone, Copy, PartialEq, Eq)]
enum RouteState {
    /// The call runs.
    Live,
    /// The call has its result (or was abandoned); log messages received before it may still
    /// be on their way to the routing task.
    Ended,
    /// Ended before the routing task began a sweep: forgotten once the sweep has routed every
    /// message received so far.
    Sweeping,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Leaves the route table when the call ends (or is abandoned).
pub(crate) struct RouteGuard {
    routes: Arc<Routes>,
    id: u64,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        let routes = &self.routes;
        let mut active = lock(&routes.active);
        if routes.orphaned.load(Ordering::Acquire) {
            active.retain(|r| r.id != self.id);
            return;
        }
        if let Some(r) = active.iter_mut().find(|r| r.id == self.id) {
            r.state = RouteState::Ended;
        }
        // A sweep matters only to a call whose client takes log messages (its messages count
        // the ended calls until then); else one comes after `SWEEP_AFTER` calls.
        let wanted = active.iter().any(|r| r.state == RouteState::Live && r.logs)
            || active
                .iter()
                .filter(|r| r.state != RouteState::Live)
                .count()
                >= SWEEP_AFTER;
        drop(active);
        if wanted {
            // One stored permit at most: the wake-ups of calls ending together make one sweep.
            routes.ended.notify_one();
        }
    }
}

impl Routes {
    /// Enters a call; `logs`: its client takes log messages.
    pub(crate) fn enter(self: &Arc<Self>, tx: mpsc::Sender<Event>, logs: bool) -> RouteGuard {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut active = lock(&self.active);
        // Calls that ended before this one may still be in the table (no call that takes
        // log messages was in flight to want them swept): swept now, before this call's
        // request has even gone upstream.
        let stale = logs && active.iter().any(|r| r.state != RouteState::Live);
        active.push(Route {
            id,
            tx,
            state: RouteState::Live,
            logs,
        });
        drop(active);
        if stale {
            self.ended.notify_one();
        }
        RouteGuard {
            routes: self.clone(),
            id,
        }
    }

    /// The call a log message routed now belongs to: the only one in the table (a call that
    /// ended stays in it until the messages received before its result are routed).
    fn log_owner(&self) -> Result<Option<mpsc::Sender<Event>>, usize> {
        let scoped = self.scoped_logs.load(Ordering::Relaxed);
        let active = lock(&self.active);
        let mut owners = active.iter().filter(|r| !scoped || r.logs);
        match (owners.next(), owners.next()) {
            (None, _) => Ok(None),
            (Some(only), None) => Ok(Some(only.tx.clone())),
            (Some(_), Some(_)) => Err(2 + owners.count()),
        }
    }

    /// Whether no call is in flight on the session.
    pub(crate) fn is_idle(&self) -> bool {
        lock(&self.active)
            .iter()
            .all(|r| r.state != RouteState::Live)
    }

    /// The routing task's side of forgetting ended calls: marks the calls that ended so far,
    /// runs `drain` (which routes every notification received so far, so every one received
    /// before their results), then forgets the marked calls.
    fn sweep(&self, drain: impl FnOnce()) {
        let mut any = false;
        for r in lock(&self.active).iter_mut() {
            if r.state == RouteState::Ended {
                r.state = RouteState::Sweeping;
                any = true;
            }
        }
        if !any {
            return;
        }
        drain();
        lock(&self.active).retain(|r| r.state != RouteState::Sweeping);
    }

    /// The routing task ended: ended calls are forgotten now, and from now on at once.
    fn orphan(&self) {
        let mut active = lock(&self.active);
        self.orphaned.store(true, Ordering::Release);
        active.retain(|r| r.state == RouteState::Live);
    }
}

/// Calls of one upstream session waiting at once for the log messages received before their
/// result to be routed (`Session::routed_so_far`); a further one waits for room.
pub const MAX_WAITING_FLUSHES: usize = 256;

/// One connection to the upstream, with the calls in flight on it.
pub(crate) struct Session {
    pub client: Client,
    pub routes: Arc<Routes>,
    /// To the task routing the connection's notifications: "route everything received so far,
    /// then answer".
    flushes: mpsc::Sender<oneshot::Sender<()>>,
    /// Its upstream's count of the restarts of sessions let go: this one's are added when it
    /// goes (see [`Upstream::restarts`]).
    retired_restarts: Arc<AtomicU64>,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.retired_restarts
            .fetch_add(self.client.restarts(), Ordering::Relaxed);
    }
}

impl Session {
    /// Returns once every notification the connection received before now has been routed (a
    /// log message to the call it belongs to). The client's engine reads the connection in
    /// order and queues a notification before it reads what follows, so when a call has its
    /// result, the log messages the upstream sent before it are queued: this routes them,
    /// exactly, without waiting for more.
    pub(crate) async fn routed_so_far(&self) {
        let (done, routed) = oneshot::channel();
        if self.flushes.send(done).await.is_ok() {
            // An error: the routing task ended (the connection closed); nothing more comes.
            let _ = routed.await;
        }
    }
}

/// The capabilities a pooled session declares upstream.
#[derive(Clone, Default)]
pub(crate) struct CapSet {
    elicitation: Option<ElicitationCapability>,
    sampling: Option<SamplingCapability>,
    roots: Option<RootsCapability>,
}

impl CapSet {
    /// Everything the gateway can relay.
    pub(crate) fn all() -> Self {
        CapSet {
            elicitation: Some(ElicitationCapability {
                form: Some(JsonObject::new()),
                url: Some(JsonObject::new()),
                ..Default::default()
            }),
            sampling: Some(SamplingCapability {
                tools: Some(JsonObject::new()),
                context: Some(JsonObject::new()),
                ..Default::default()
            }),
            roots: Some(RootsCapability::default()),
        }
    }

    /// What a downstream client declared (the part an upstream can see).
    pub(crate) fn of(caps: &ClientCapabilities) -> Self {
        CapSet {
            elicitation: caps.elicitation.clone(),
            sampling: caps.sampling.clone(),
            roots: caps.roots.clone().map(|mut r| {
                // The gateway does not relay roots/list_changed.
                r.list_changed = None;
                r
            }),
        }
    }

    fn key(&self) -> String {
        let part = |v: Option<Value>| v.map(|v| v.to_string()).unwrap_or_default();
        format!(
            "{}|{}|{}",
            part(
                self.elicitation
                    .as_ref()
                    .and_then(|c| serde_json::to_value(c).ok())
            ),
            part(
                self.sampling
                    .as_ref()
                    .and_then(|c| serde_json::to_value(c).ok())
            ),
            part(
                self.roots
                    .as_ref()
                    .and_then(|c| serde_json::to_value(c).ok())
            ),
        )
    }
}

/// A server behind the gateway.
pub struct Upstream {
    /// Its configuration.
    pub config: UpstreamConfig,
    /// How its names and URIs look to clients.
    pub naming: Naming,
    /// Which of its tools are served.
    pub filter: ToolFilter,
    default: OnceCell<Arc<Session>>,
    pool: Mutex<HashMap<String, Arc<OnceCell<Arc<Session>>>>>,
    /// `isolation` other than `"shared"`: sessions of their own, bounded.
    isolated: Mutex<Vec<IsolatedSession>>,
    limit: Arc<Semaphore>,
    /// Each principal's share of `limit` (see [`Upstream::permit`]).
    shares: Mutex<HashMap<String, Arc<Semaphore>>>,
    notice: Notice,
    /// Restarts of its sessions that were let go (see [`Upstream::restarts`]).
    retired_restarts: Arc<AtomicU64>,
    /// `[upstream.oauth]`: the gateway's own OAuth client, shared by every pooled session
    /// (one token for all); the error says why it could not be built.
    oauth: Result<Option<OAuthClient>, String>,
    /// The gateway's telemetry: each upstream call is a client span.
    telemetry: Traced,
    /// Its calls counted and timed (feature `otel`, with telemetry).
    #[cfg(feature = "otel")]
    metrics: Option<Arc<crate::metrics::UpstreamMetrics>>,
}

/// The gateway's telemetry, for the upstream clients (feature `otel`; nothing without it).
#[cfg(feature = "otel")]
pub(crate) type Traced = Option<duomcp::otel::Telemetry>;
/// The gateway's telemetry, for the upstream clients (feature `otel`; nothing without it).
#[cfg(not(feature = "otel"))]
pub(crate) type Traced = NoTelemetry;

/// No telemetry: the gateway built without the feature `otel`.
#[cfg(not(feature = "otel"))]
#[derive(Clone, Default)]
pub(crate) struct NoTelemetry;

/// What the gateway does with an upstream's connection-wide notifications (list changes,
/// resource updates).
pub(crate) type Notice = Arc<dyn Fn(&ServerEvent) + Send + Sync>;

impl Upstream {
    pub(crate) fn new(config: UpstreamConfig, naming: Naming, notice: Notice) -> Self {
        let filter = ToolFilter::new(config.allow_tools.clone(), config.deny_tools.clone());
        let limit = Arc::new(Semaphore::new(config.concurrency()));
        let oauth = config
            .oauth
            .as_ref()
            .map(|o| o.client(&config.name))
            .transpose();
        Upstream {
            config,
            naming,
            filter,
            default: OnceCell::new(),
            pool: Mutex::new(HashMap::new()),
            isolated: Mutex::new(Vec::new()),
            limit,
            shares: Mutex::new(HashMap::new()),
            notice,
            retired_restarts: Arc::new(AtomicU64::new(0)),
            oauth,
            telemetry: Traced::default(),
            #[cfg(feature = "otel")]
            metrics: None,
        }
    }

    /// Records each call to the upstream as a client span (feature `otel`).
    #[cfg(feature = "otel")]
    pub(crate) fn with_telemetry(
        mut self,
        telemetry: Traced,
        metrics: Option<Arc<crate::metrics::UpstreamMetrics>>,
    ) -> Self {
        self.telemetry = telemetry;
        self.metrics = metrics;
        self
    }

    /// Counts and times one call of `method` (feature `otel`, with telemetry; else nothing).
    pub(crate) fn record<T>(
        &self,
        method: &str,
        took: std::time::Duration,
        outcome: &Result<T, duomcp::server::HandlerError>,
        is_error: impl FnOnce(&T) -> bool,
    ) {
        #[cfg(feature = "otel")]
        if let Some(m) = &self.metrics {
            use crate::metrics::Outcome;
            let outcome = match outcome {
                Ok(v) if is_error(v) => Outcome::Error,
                Ok(_) => Outcome::Ok,
                Err(duomcp::server::HandlerError::InputRequired(_)) => Outcome::InputRequired,
                Err(_) => Outcome::Error,
            };
            m.record(self.name(), method, took, outcome);
        }
        #[cfg(not(feature = "otel"))]
        let _ = (method, took, outcome, is_error);
    }

    /// The upstream's name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// The session declaring every capability the gateway relays (lists are read on it),
    /// connected at first use.
    pub(crate) async fn main_session(&self) -> Result<Arc<Session>, ClientError> {
        self.default
            .get_or_try_init(|| self.connect(CapSet::all()))
            .await
            .cloned()
    }

    /// The connected client of the main session, for listing and health checks.
    pub async fn client(&self) -> Result<Client, ClientError> {
        Ok(self.main_session().await?.client.clone())
    }

    /// The pooled session for a client with these capabilities.
    ///
    /// Connected already (every call but the first), it is returned without awaiting anything;
    /// connecting is boxed. Inline, a connection's future would be part of every call's
    /// future (some 2 KB of the 3 KB the server boxes for each call).
    pub(crate) async fn session_for(&self, ctx: &Context) -> Result<Arc<Session>, ClientError> {
        let caps = ctx.client_capabilities();
        let slot = match self.isolated_key(ctx) {
            Some((key, client)) => self.isolated_slot(key, client)?,
            None => self.slot(caps),
        };
        let cell = match &slot {
            Slot::Main => &self.default,
            Slot::Pooled(cell) => &**cell,
        };
        if let Some(session) = cell.get() {
            return Ok(session.clone());
        }
        let set = match slot {
            Slot::Main => CapSet::all(),
            Slot::Pooled(_) => CapSet::of(caps),
        };
        // (A session of the isolation pool declares what its client declared: one client, or
        // the clients of one principal with the same capabilities, see `isolated_key`.)
        Box::pin(cell.get_or_try_init(|| self.connect(set)))
            .await
            .cloned()
    }

    /// The isolation pool's key for the client of `ctx` (with its client session, when the
    /// key is that session's), or `None` when it shares (see [`Isolation`]).
    fn isolated_key(&self, ctx: &Context) -> Option<(String, Option<ClientSession>)> {
        let principal = || {
            ctx.principal()
                .filter(|p| **p != duomcp::server::Principal::local())
                .map(|p| format!("p\u{1f}{}", p.key()))
        };
        let session = || {
            ctx.client_session()
                .map(|s| (format!("s\u{1f}{}", s.key()), Some(s)))
        };
        let (who, client) = match self.config.isolation {
            Isolation::Shared => return None,
            Isolation::Principal => principal().map(|k| (k, None)).or_else(session)?,
            Isolation::Client => session().or_else(|| principal().map(|k| (k, None)))?,
        };
        Some((
            format!("{who}\u{1f}{}", CapSet::of(ctx.client_capabilities()).key()),
            client,
        ))
    }

    /// The isolation pool's session for `key`: found, or a new one (ending the least
    /// recently used idle one when the pool is full); an error when every one is busy.
    fn isolated_slot(
        &self,
        key: String,
        client: Option<ClientSession>,
    ) -> Result<Slot, ClientError> {
        let mut pool = lock(&self.isolated);
        // Sessions of clients that ended go first.
        let mut ended = Vec::new();
        pool.retain(|e| {
            let alive = e.client.as_ref().is_none_or(ClientSession::is_alive);
            if !alive {
                ended.push(e.cell.clone());
            }
            alive
        });
        let now = std::time::Instant::now();
        let found = pool.iter_mut().find(|e| {
            e.key == key
                && match (&e.client, &client) {
                    (Some(a), Some(b)) => a.same(b),
                    (None, None) => true,
                    _ => false,
                }
        });
        let cell = match found {
            Some(e) => {
                e.used = now;
                e.cell.clone()
            }
            None => {
                if pool.len() >= self.config.isolated_sessions() {
                    let idle = pool
                        .iter()
                        .enumerate()
                        .filter(|(_, e)| e.cell.get().is_none_or(|s| s.routes.is_idle()))
                        .min_by_key(|(_, e)| e.used)
                        .map(|(i, _)| i);
                    let Some(i) = idle else {
                        drop(pool);
                        close_all(ended);
                        tracing::warn!(upstream = %self.name(), "isolation pool full: every session is busy; call refused");
                        return Err(ClientError::Protocol(format!(
                            "every one of its {} isolated sessions is busy; try again later",
                            self.config.isolated_sessions()
                        )));
                    };
                    ended.push(pool.swap_remove(i).cell);
                }
                let cell = Arc::new(OnceCell::new());
                pool.push(IsolatedSession {
                    key,
                    client,
                    cell: cell.clone(),
                    used: now,
                });
                cell
            }
        };
        drop(pool);
        close_all(ended);
        Ok(Slot::Pooled(cell))
    }

    /// Upstream sessions of the isolation pool now.
    pub fn isolated_sessions(&self) -> usize {
        lock(&self.isolated).len()
    }

    /// Which session serves a client with these capabilities.
    fn slot(&self, caps: &ClientCapabilities) -> Slot {
        // A stdio upstream is one process with one state (what one call changes, the next
        // sees): every client shares it; the gateway checks each client's capabilities
        // itself when the upstream asks for input.
        if self.config.command.is_some() {
            return Slot::Main;
        }
        let set = CapSet::of(caps);
        let key = set.key();
        if key == CapSet::all().key() {
            return Slot::Main;
        }
        let mut pool = lock(&self.pool);
        match pool.get(&key) {
            Some(cell) => Slot::Pooled(cell.clone()),
            None if pool.len() < MAX_POOLED_SESSIONS => {
                let cell = Arc::new(OnceCell::new());
                pool.insert(key, cell.clone());
                Slot::Pooled(cell)
            }
            None => {
                tracing::debug!(upstream = %self.name(), "session pool full; using the main session");
                Slot::Main
            }
        }
    }

    async fn connect(&self, caps: CapSet) -> Result<Arc<Session>, ClientError> {
        let oauth = self.oauth.clone().map_err(ClientError::Protocol)?;
        // Boxed: a connection's future (handshake, process start) is large and rare; inline,
        // it would be part of every call's future, copied on every call.
        let telemetry = self.telemetry.clone();
        Box::pin(connect(
            &self.config,
            caps,
            self.notice.clone(),
            oauth,
            telemetry,
            self.retired_restarts.clone(),
        ))
        .await
    }

    /// Its sessions connected so far.
    fn sessions(&self) -> Vec<Arc<Session>> {
        let mut out: Vec<Arc<Session>> = self.default.get().cloned().into_iter().collect();
        out.extend(lock(&self.pool).values().filter_map(|c| c.get().cloned()));
        out.extend(
            lock(&self.isolated)
                .iter()
                .filter_map(|i| i.cell.get().cloned()),
        );
        out
    }

    /// Whether no call of a client is in flight on it (none holds a slot of its concurrency
    /// limit, and no session has a call in its route table).
    fn idle(&self) -> bool {
        self.limit.available_permits() >= self.config.concurrency()
            && self.sessions().iter().all(|s| s.routes.is_idle())
    }

    /// A reload removed or replaced it: its sessions close once the calls in flight on them
    /// have ended (checked every 100 ms), or after its call timeout, whichever comes first.
    pub(crate) fn retire(self: Arc<Self>) {
        tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + self.config.timeout();
            while !self.idle() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            for session in self.sessions() {
                let _ = session.client.close().await;
            }
            tracing::info!(upstream = %self.name(), "retired (the configuration was reloaded)");
        });
    }

    /// How many times its connections were made again (a stdio process restarted after it
    /// died, an HTTP session the upstream forgot), over the gateway's life: its sessions' counts
    /// ([`Client::restarts`]), those of sessions let go included (once they have closed).
    pub fn restarts(&self) -> u64 {
        self.retired_restarts.load(Ordering::Relaxed)
            + self
                .sessions()
                .iter()
                .map(|s| s.client.restarts())
                .sum::<u64>()
    }

    /// Waits for a free slot under the upstream's concurrency limit, and under `owner`'s share
    /// of it (`max_concurrency_per_principal`), so that one principal's slow calls never take
    /// every slot: its share is waited for first, holding nothing of the others'.
    pub(crate) async fn permit(&self, owner: Option<&str>) -> Option<Permit> {
        let Some(owner) = owner else {
            let global = self.limit.clone().acquire_owned().await.ok()?;
            return Some(Permit {
                _own: None,
                _global: global,
            });
        };
        let share = {
            let mut shares = lock(&self.shares);
            if shares.len() >= MAX_SHARES {
                // Only shares nobody holds or waits for are forgotten: the map is bounded by
                // the calls in flight (which the server bounds).
                shares.retain(|_, s| Arc::strong_count(s) > 1);
            }
            shares
                .entry(owner.to_owned())
                .or_insert_with(|| {
                    Arc::new(Semaphore::new(self.config.concurrency_per_principal()))
                })
                .clone()
        };
        let own = share.acquire_owned().await.ok()?;
        let global = self.limit.clone().acquire_owned().await.ok()?;
        Some(Permit {
            _own: Some(own),
            _global: global,
        })
    }

    /// Calls of `owner` running on this upstream now (holding a slot).
    pub fn running_for(&self, owner: &str) -> usize {
        let cap = self.config.concurrency_per_principal();
        lock(&self.shares)
            .get(owner)
            .map_or(0, |s| cap.saturating_sub(s.available_permits()))
    }
}

/// One upstream session of the isolation pool (see [`Isolation`]).
struct IsolatedSession {
    key: String,
    /// The client session it is for (`Isolation::Client`, or a client without a principal).
    client: Option<ClientSession>,
    cell: Arc<OnceCell<Arc<Session>>>,
    used: std::time::Instant,
}

/// Closes the upstream sessions of the isolation pool that were let go (a stdio upstream's
/// process ends).
fn close_all(cells: Vec<Arc<OnceCell<Arc<Session>>>>) {
    for cell in cells {
        if let Some(session) = cell.get().cloned() {
            tokio::spawn(async move {
                let _ = session.client.close().await;
            });
        }
    }
}

/// Principals whose share of an upstream's concurrency is remembered before the idle ones are
/// forgotten (a share in use is never forgotten).
const MAX_SHARES: usize = 1024;

/// A slot under an upstream's concurrency limit and under its principal's share of it.
pub(crate) struct Permit {
    _own: Option<tokio::sync::OwnedSemaphorePermit>,
    _global: tokio::sync::OwnedSemaphorePermit,
}

/// Where [`Upstream::session_for`] finds a client's session.
enum Slot {
    /// The main session (every client of a stdio upstream; a client that can do everything).
    Main,
    /// A pooled one, for clients declaring the same capabilities.
    Pooled(Arc<OnceCell<Arc<Session>>>),
}

/// Connects one session declaring `caps`, its input handlers routed to the calls in flight.
async fn connect(
    config: &UpstreamConfig,
    caps: CapSet,
    notice: Notice,
    oauth: Option<OAuthClient>,
    telemetry: Traced,
    retired_restarts: Arc<AtomicU64>,
) -> Result<Arc<Session>, ClientError> {
    let routes = Arc::new(Routes::default());
    let mut b = Client::builder()
        .name("duomcp-gateway")
        .version(env!("CARGO_PKG_VERSION"))
        .era(config.era)
        .request_timeout(config.timeout())
        // The downstream client caches, not the gateway (list_changed re-syncs the lists).
        .cache(false);
    // Each upstream call a client span, child of the client's request (whose context the
    // server's handler runs in), its trace context sent on.
    #[cfg(feature = "otel")]
    if let Some(t) = telemetry {
        b = b.telemetry(t);
    }
    #[cfg(not(feature = "otel"))]
    let NoTelemetry = telemetry;
    // The capabilities are declared for the whole session, but a request for input is only
    // ever answered by the call it belongs to (`bridge::start` gives each call its own
    // answerer, `RequestOptions::on_input`). One that belongs to no call the gateway can name
    // (a 2025-11-25 upstream's request over stdio or its GET stream while several calls are in
    // flight, or with none) reaches no client: the upstream gets an error, and it is traced.
    let asks = caps.elicitation.is_some() || caps.sampling.is_some();
    if let Some(cap) = caps.elicitation {
        let name = config.name.clone();
        b = b.on_elicit_with(cap, move |_| unattributed(&name, "elicitation/create"));
    }
    if let Some(cap) = caps.sampling {
        let name = config.name.clone();
        b = b.on_sample_with(cap, move |_| unattributed(&name, "sampling/createMessage"));
    }
    if caps.roots.is_some() {
        let name = config.name.clone();
        b = b.on_roots(move || unattributed(&name, "roots/list"));
    }
    // A 2025-11-25 upstream may ask for input as a task the client runs (task-augmented
    // `elicitation/create` or `sampling/createMessage`, then `tasks/get` and `tasks/result`):
    // the gateway hosts such tasks, each one's question asked of the call it belongs to, as
    // any other request for input is.
    if asks {
        b = b.host_tasks(true);
    }
    let client = match (&config.command, config.http_url()) {
        (Some(command), _) => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(&config.args).envs(&config.env);
            if let Some(dir) = &config.cwd {
                cmd.current_dir(dir);
            }
            let mut options = ProcessOptions {
                max_restarts: config.max_restarts.unwrap_or(5),
                // A line an upstream wrote that is not a message belongs to no client's call:
                // it is logged, never quoted to the client whose call fails next.
                quote_stray_lines: false,
                ..Default::default()
            };
            if let Some(ms) = config.restart_backoff_ms {
                options.restart_backoff = std::time::Duration::from_millis(ms);
            }
            b.process_options(options).connect_stdio(cmd).await?
        }
        (None, Some(url)) => {
            for (k, v) in &config.headers {
                b = b.header(k.clone(), v.clone());
            }
            if let Some(oauth) = oauth {
                b = b.auth(oauth);
            }
            match &config.unix {
                #[cfg(unix)]
                Some(socket) => b.connect_unix(socket, url).await?,
                #[cfg(not(unix))]
                Some(_) => {
                    return Err(ClientError::Protocol(format!(
                        "upstream `{}`: Unix domain sockets are not supported on this platform",
                        config.name
                    )))
                }
                None => b.connect_http(url).await?,
            }
        }
        (None, None) => {
            return Err(ClientError::Protocol(format!(
                "upstream `{}` has neither a command nor a URL",
                config.name
            )))
        }
    };
    // A 2025-11-25 upstream logs at the session's level, unset until the client sets it (a
    // request's own level is 2026-07-28): every message comes to the gateway, whose server
    // passes on what each client asked for.
    routes
        .scoped_logs
        .store(client.era() == duomcp::era::Era::Modern, Ordering::Relaxed);
    if client.era() == duomcp::era::Era::Legacy && client.server_capabilities().logging.is_some() {
        if let Err(e) = client.set_log_level(LoggingLevel::Debug).await {
            tracing::debug!(upstream = %config.name, "logging/setLevel failed: {e}");
        }
    }
    let mut notes = client.notifications();
    let (flushes, mut flush_requests) = mpsc::channel::<oneshot::Sender<()>>(MAX_WAITING_FLUSHES);
    let r = routes.clone();
    let name = config.name.clone();
    tokio::spawn(async move {
        let route = |n: ServerEvent| match n {
            // A log message goes to the call it belongs to, when only one can be its (see
            // `Routes`).
            ServerEvent::Log(p) => match r.log_owner() {
                Ok(Some(tx)) => {
                    let _ = tx.try_send(Event::Log(Box::new(p)));
                }
                Ok(None) => {}
                Err(calls) => tracing::debug!(
                    upstream = %name,
                    calls,
                    "a log message during several calls at once belongs to no one call; dropped"
                ),
            },
            other => notice(&other),
        };
        loop {
            tokio::select! {
                // A call has its result: what came before it is queued already.
                biased;
                Some(done) = flush_requests.recv() => {
                    while let Some(n) = notes.try_recv() {
                        route(n);
                    }
                    let _ = done.send(());
                }
                () = r.ended.notified() => r.sweep(|| {
                    while let Some(n) = notes.try_recv() {
                        route(n);
                    }
                }),
                n = notes.recv() => match n {
                    Some(n) => route(n),
                    None => break,
                },
            }
        }
        r.orphan();
    });
    Ok(Arc::new(Session {
        client,
        routes,
        flushes,
        retired_restarts,
    }))
}

/// The answer to an upstream's request for input that belongs to no call the gateway can name.
fn unattributed<T>(
    upstream: &str,
    method: &'static str,
) -> std::future::Ready<Result<T, InputError>> {
    tracing::warn!(
        upstream,
        method,
        "refused an upstream request for input that belongs to no one call (several calls that \
         could have asked, or none, in flight on its session)"
    );
    std::future::ready(Err(InputError::new(format!(
        "the gateway cannot tell which call this {method} belongs to (several calls that could \
         have asked, or none, are in flight on this session); it is not relayed to any client"
    ))))
}
