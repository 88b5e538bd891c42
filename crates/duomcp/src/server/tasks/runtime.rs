//! The live side of tasks: the handlers running as tasks, their cancellation, the channels
//! their input answers arrive on. The lifecycle rules every status change goes through are
//! `duomcp_proto::tasks` (applied inside the store's atomic edits); what differs between the
//! revisions is in `runtime/legacy.rs` and `runtime/modern.rs`.

mod legacy;
mod modern;

use super::store::{TaskOutcome, TaskRecord};
use super::TaskConfig;
use crate::era::Era;
use crate::era::ProtocolError;
use crate::server::context::Context;
use crate::server::session::{Frame, Session};
use crate::server::{HandlerError, ServerEvent};
use crate::util::lock;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use duomcp_schema::{CallToolResult, RequestId, TaskStatus};
use serde_json::Value;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::{broadcast, oneshot, watch};
use tokio_util::sync::CancellationToken;

/// A task whose handler runs in this process.
pub(crate) struct LiveTask {
    pub(crate) id: String,
    pub(crate) era: Era,
    /// Fires on `tasks/cancel` and on expiry; the handler is dropped at its next await.
    pub(crate) cancel: CancellationToken,
    /// The 2025-11-25 session the task was created in (server→client requests go through it).
    pub(crate) session: Option<Arc<Session>>,
    /// Bumped on every change a waiter may care about (status, outbox).
    version: watch::Sender<u64>,
    /// 2026-07-28: where the answer to each outstanding input request goes.
    waiters: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    /// 2026-07-28: every input key issued, so none is ever reused.
    used_keys: Mutex<HashSet<String>>,
    /// 2025-11-25: server→client requests waiting for a `tasks/result` stream.
    outbox: Mutex<VecDeque<(RequestId, Frame)>>,
    /// 2025-11-25: server→client requests awaiting an answer.
    outstanding: AtomicUsize,
    /// Fires once the task has left this runtime (finished, cancelled, reaped): ends its
    /// lease renewal.
    done: CancellationToken,
}

impl LiveTask {
    fn bump(&self) {
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// A key for an input request, unique over the task's lifetime.
    fn mint_key(&self, wanted: &str) -> String {
        let mut used = lock(&self.used_keys);
        let mut key = wanted.to_owned();
        let mut n = 1;
        while used.contains(&key) {
            n += 1;
            key = format!("{wanted}-{n}");
        }
        used.insert(key.clone());
        key
    }
}

/// What [`Context::detach`] needs to turn a running call into a task.
pub(crate) struct DetachHook {
    /// The tool name.
    pub target: String,
    /// Where the new task (or why it could not be created) goes.
    pub tx: oneshot::Sender<Result<TaskRecord, ProtocolError>>,
}

/// How a `tasks/cancel` went.
pub(crate) enum Cancelled {
    /// The task is now `cancelled`.
    Now(TaskRecord),
    /// The task had already finished; nothing changed.
    AlreadyTerminal(TaskRecord),
}

/// Tasks of one server: the store plus the handlers running here.
pub(crate) struct TaskRuntime {
    config: TaskConfig,
    /// The store in force: `config.store` until a transport installs a shared one
    /// ([`replace_store`](Self::replace_store)).
    store: std::sync::RwLock<Arc<dyn super::TaskStore>>,
    live: Mutex<HashMap<String, Arc<LiveTask>>>,
    scopes: Mutex<Vec<(Weak<Session>, String)>>,
    events: broadcast::Sender<ServerEvent>,
    /// The bus to other replicas, once attached: task status reaches their listen streams.
    bus: crate::server::BusSlot,
    /// OpenTelemetry: task links and the tasks-by-status counter (empty without `otel`).
    telemetry: crate::server::telemetry::Slot,
}

/// `-32602` for a task the caller may not see, whatever the reason (unknown, expired, foreign):
/// the answer reveals nothing about other callers' tasks.
pub(crate) fn not_found(id: &str) -> ProtocolError {
    ProtocolError::InvalidParams(format!(
        "Failed to retrieve task: no task {id:?} (unknown, expired, or not yours)"
    ))
}

fn random_token(bytes: usize) -> Result<String, ProtocolError> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| {
        ProtocolError::Internal(format!("Internal error: no randomness for a task id ({e})"))
    })?;
    Ok(URL_SAFE_NO_PAD.encode(buf))
}

impl TaskRuntime {
    pub(crate) fn new(
        config: TaskConfig,
        events: broadcast::Sender<ServerEvent>,
        bus: crate::server::BusSlot,
    ) -> Self {
        TaskRuntime {
            store: std::sync::RwLock::new(config.store.clone()),
            config,
            live: Mutex::default(),
            scopes: Mutex::default(),
            events,
            bus,
            telemetry: Default::default(),
        }
    }

    /// Reports task creations and status changes to `telemetry`.
    pub(crate) fn with_telemetry(mut self, telemetry: crate::server::telemetry::Slot) -> Self {
        self.telemetry = telemetry;
        self
    }

    /// The store in force.
    pub(crate) fn store(&self) -> Arc<dyn super::TaskStore> {
        match self.store.read() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Installs `store` (a store shared with other replicas), in place of the configured one.
    /// Tasks already running keep their records in the old store.
    #[cfg(feature = "http-server")]
    pub(crate) fn replace_store(&self, store: Arc<dyn super::TaskStore>) {
        match self.store.write() {
            Ok(mut s) => *s = store,
            Err(poisoned) => *poisoned.into_inner() = store,
        }
    }

    /// Removes `id` from the tasks running here, ending its lease renewal.
    fn take_live(&self, id: &str) -> Option<Arc<LiveTask>> {
        let live = lock(&self.live).remove(id);
        if let Some(l) = &live {
            l.done.cancel();
        }
        live
    }

    pub(crate) fn now(&self) -> u64 {
        self.config.clock.now_ms()
    }

    pub(crate) fn live(&self, id: &str) -> Option<Arc<LiveTask>> {
        lock(&self.live).get(id).cloned()
    }

    /// A random name for a 2025-11-25 session, stable while the session lives.
    pub(crate) fn session_scope(&self, session: &Arc<Session>) -> Result<String, ProtocolError> {
        // A session shared by replicas has a name all of them agree on.
        if let Some(scope) = session.scope() {
            return Ok(scope.to_owned());
        }
        let mut scopes = lock(&self.scopes);
        scopes.retain(|(w, _)| w.strong_count() > 0);
        if let Some((_, s)) = scopes
            .iter()
            .find(|(w, _)| std::ptr::eq(w.as_ptr(), Arc::as_ptr(session)))
        {
            return Ok(s.clone());
        }
        let scope = random_token(12)?;
        scopes.push((Arc::downgrade(session), scope.clone()));
        Ok(scope)
    }

    fn emit(&self, record: &TaskRecord) {
        let event = ServerEvent::TaskChanged(Arc::new(record.clone()));
        crate::server::publish_event(&self.bus, &event);
        // Nobody listening is fine.
        let _ = self.events.send(event);
    }

    /// Creates a `working` task for the call `ctx` serves and binds `ctx` to it.
    ///
    /// The record is stored before this returns, so a `tasks/get` for the id resolves as soon
    /// as the client sees it.
    pub(crate) async fn start(
        &self,
        ctx: &Context,
        target: &str,
        requested_ttl: Option<u64>,
    ) -> Result<TaskRecord, ProtocolError> {
        let id = random_token(16)?;
        let era = ctx.era();
        let session = ctx.session().cloned();
        let scope = match &session {
            Some(s) if era.wire().scoped_by_session() => Some(self.session_scope(s)?),
            _ => None,
        };
        let now = self.now();
        let method =
            <duomcp_schema::methods::CallTool as duomcp_schema::methods::RequestMethod>::NAME;
        let ttl = Some(self.config.grant_ttl(requested_ttl));
        let mut record = TaskRecord::working(id.clone(), era, method, target, now, ttl);
        record.principal = ctx.principal().map(|p| p.key());
        record.scope = scope;
        record.poll_interval_ms = Some((self.config.poll_interval.as_millis() as u64).max(1));
        let (version, _) = watch::channel(0);
        let live = Arc::new(LiveTask {
            id: id.clone(),
            era,
            cancel: ctx.cancel_token().clone(),
            session,
            version,
            waiters: Mutex::default(),
            used_keys: Mutex::default(),
            outbox: Mutex::default(),
            outstanding: AtomicUsize::new(0),
            done: CancellationToken::new(),
        });
        lock(&self.live).insert(id.clone(), live.clone());
        let store = self.store();
        if let Err(e) = store.create(record.clone(), now).await {
            self.take_live(&id);
            return Err(ProtocolError::Internal(format!(
                "Internal error: the task could not be created: {e}"
            )));
        }
        if let Some(every) = store.lease_interval() {
            tokio::spawn(renew_lease(
                store,
                live.clone(),
                every,
                self.config.clock.clone(),
            ));
        }
        tracing::debug!(task = %id, tool = target, "task created");
        crate::server::telemetry::task_created(&self.telemetry, &id);
        ctx.bind_task(live);
        Ok(record)
    }

    /// Applies `edit` at the time it is given (the edit says whether it changed anything) and
    /// stamps, wakes and announces the change. `None` when the task is gone.
    async fn edit<F>(&self, id: &str, edit: F) -> Option<(TaskRecord, bool)>
    where
        F: FnOnce(&mut TaskRecord, u64) -> bool + Send,
    {
        let now = self.now();
        let mut changed = false;
        let flag = &mut changed;
        let mut moved = None;
        let statuses = &mut moved;
        let record = self
            .store()
            .update(
                id,
                now,
                Box::new(move |r: &mut TaskRecord| {
                    let before = r.status;
                    if edit(r, now) {
                        r.last_updated_at_ms = now;
                        *flag = true;
                        *statuses = Some((before, r.status));
                    }
                }),
            )
            .await?;
        if let Some((from, to)) = moved {
            crate::server::telemetry::task_moved(&self.telemetry, from.as_str(), to.as_str());
        }
        if changed {
            if let Some(live) = self.live(id) {
                live.bump();
            }
            self.emit(&record);
        }
        Some((record, changed))
    }

    /// Stops the handler of a task that is no longer in the store (expired or deleted).
    fn reap(&self, id: &str) {
        if let Some(live) = self.take_live(id) {
            tracing::debug!(task = %id, "task expired while running; cancelling it");
            live.cancel.cancel();
            live.bump();
        }
    }

    /// A 2025-11-25 task created without a principal belongs to the session that created it:
    /// any other session is told it does not exist (`-32602`, as for an unknown id). Tasks with
    /// a principal are checked by [`lookup`](Self::lookup).
    pub(crate) async fn check_session(
        &self,
        id: &str,
        session: Option<&Arc<Session>>,
    ) -> Result<(), ProtocolError> {
        let Some(record) = self.store().get(id, self.now()).await else {
            // Unknown: `lookup` says so.
            return Ok(());
        };
        let Some(owner) = record.session_owner() else {
            return Ok(());
        };
        let caller = match session {
            Some(s) => Some(self.session_scope(s)?),
            None => None,
        };
        if caller.as_deref() != Some(owner) {
            return Err(not_found(id));
        }
        Ok(())
    }

    /// The task `id` as `principal` (a [`Principal::key`](crate::server::Principal::key)) may see
    /// it on a request of `era`; `-32602` otherwise.
    pub(crate) async fn lookup(
        &self,
        id: &str,
        era: Era,
        principal: Option<&str>,
    ) -> Result<TaskRecord, ProtocolError> {
        let store = self.store();
        let Some(record) = store.get(id, self.now()).await else {
            self.reap(id);
            return Err(not_found(id));
        };
        if !record.visible_to(era, principal) {
            return Err(not_found(id));
        }
        if !record.status.is_terminal() && self.live(id).is_none() {
            // Shared store: another replica runs it while it holds the lease.
            let shared = store.lease_interval().is_some();
            if shared && store.lease_held(id).await {
                return Ok(record);
            }
            // Nothing runs it any more (its replica died, or a persistent store outlived its
            // process): it cannot progress, so it failed.
            let message = if shared {
                "the replica running the task stopped renewing its lease (it stopped, or lost \
                 Redis), so the task was lost"
            } else {
                "the server lost the task (it was restarted while the task ran)"
            };
            let error = duomcp_schema::ErrorObject {
                code: duomcp_schema::error_code::INTERNAL_ERROR,
                message: message.into(),
                data: None,
            };
            if let Some(r) = self
                .finish(
                    id,
                    TaskStatus::Failed,
                    Some(TaskOutcome::Error(error.clone())),
                    Some(error.message),
                )
                .await
            {
                return Ok(r);
            }
            return Err(not_found(id));
        }
        Ok(record)
    }

    /// Moves a task to a terminal status, unless it is terminal already (then nothing
    /// changes: a cancelled task stays cancelled even if its handler finishes).
    pub(crate) async fn finish(
        &self,
        id: &str,
        status: TaskStatus,
        outcome: Option<TaskOutcome>,
        message: Option<String>,
    ) -> Option<TaskRecord> {
        let r = self
            .edit(id, move |r, now| r.finish(status, outcome, message, now))
            .await;
        if let Some(live) = self.take_live(id) {
            live.bump();
            if live_store_shared(&self.store()) {
                self.store().release(id).await;
            }
        }
        r.map(|(record, _)| record)
    }

    /// Records what the handler of `live` returned, as the task's era says it ends
    /// ([`duomcp_proto::tasks::ending`]).
    pub(crate) async fn complete(
        &self,
        live: &LiveTask,
        result: Result<CallToolResult, HandlerError>,
    ) {
        let (status, outcome, message) = duomcp_proto::tasks::ending(live.era, result);
        tracing::debug!(task = %live.id, status = status.as_str(), "task finished");
        self.finish(&live.id, status, outcome, message).await;
    }

    /// Sets the `statusMessage` of a running task.
    pub(crate) async fn set_status_message(&self, id: &str, message: String) {
        self.edit(id, move |r, now| r.set_message(message, now))
            .await;
    }

    /// `tasks/cancel`: moves a running task to `cancelled` and stops its handler.
    pub(crate) async fn cancel(
        &self,
        id: &str,
        era: Era,
        principal: Option<&str>,
    ) -> Result<Cancelled, ProtocolError> {
        self.lookup(id, era, principal).await?;
        let edited = self.edit(id, |r, now| r.cancel(now)).await;
        let Some((record, changed)) = edited else {
            return Err(not_found(id));
        };
        if !changed {
            return Ok(Cancelled::AlreadyTerminal(record));
        }
        // Run elsewhere: its replica reads the record at its next lease renewal and stops it.
        if let Some(live) = self.take_live(id) {
            live.cancel.cancel();
            live.bump();
        }
        Ok(Cancelled::Now(record))
    }
}

fn live_store_shared(store: &Arc<dyn super::TaskStore>) -> bool {
    store.lease_interval().is_some()
}

/// Hands input answers to the waiting handler of `live`.
fn deliver(live: &LiveTask, answers: impl IntoIterator<Item = (String, Value)>) {
    let mut waiters = lock(&live.waiters);
    for (k, v) in answers {
        if let Some(tx) = waiters.remove(&k) {
            // The handler may have been cancelled meanwhile; then nobody needs it.
            let _ = tx.send(v);
        }
    }
}

/// While `live` runs here: renews its lease every `every` (every [`ANSWER_POLL`] while it
/// waits for input) and reads its record, stopping the handler when another replica ended the
/// task (`tasks/cancel` there, or its lease found lapsed) and delivering `tasks/update`
/// answers posted on other replicas. A failed renewal is retried at the next tick; if they
/// keep failing for the lease's ttl, other replicas fail the task.
async fn renew_lease(
    store: Arc<dyn super::TaskStore>,
    live: Arc<LiveTask>,
    every: Duration,
    clock: Arc<dyn super::Clock>,
) {
    loop {
        let wait = if lock(&live.waiters).is_empty() {
            every
        } else {
            every.min(ANSWER_POLL)
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = live.done.cancelled() => return,
        }
        match store.renew(&live.id, clock.now_ms()).await {
            Ok(renewal) => {
                let ended = renewal
                    .record
                    .as_ref()
                    .is_none_or(|r| r.status.is_terminal());
                if ended {
                    tracing::debug!(task = %live.id, "task ended on another replica; stopping it");
                    live.cancel.cancel();
                    live.bump();
                    return;
                }
                if !renewal.answers.is_empty() {
                    deliver(&live, renewal.answers);
                }
            }
            Err(e) => tracing::warn!(task = %live.id, "task lease not renewed: {e}"),
        }
    }
}

/// How often a task waiting for input looks for answers posted on other replicas.
const ANSWER_POLL: Duration = Duration::from_millis(100);

#[cfg(test)]
mod tests;
