//! The live side of tasks: the handlers running as tasks, their cancellation, the channels
//! their input answers arrive on, and the lifecycle rules every status change goes through.

use super::store::{TaskEra, TaskOutcome, TaskRecord};
use super::TaskConfig;
use crate::era::{legacy, modern, ProtocolError};
use crate::jsonrpc;
use crate::server::context::Context;
use crate::server::session::{Frame, Session, Sink};
use crate::server::{HandlerError, ServerEvent};
use crate::util::lock;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use duomcp_schema::{meta, CallToolResult, InputRequest, RequestId, TaskStatus};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::{broadcast, oneshot, watch};
use tokio_util::sync::CancellationToken;

/// A task whose handler runs in this process.
pub(crate) struct LiveTask {
    pub(crate) id: String,
    pub(crate) era: TaskEra,
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

fn first_text(r: &CallToolResult) -> Option<String> {
    r.content.iter().find_map(|c| match c {
        duomcp_schema::ContentBlock::Text(t) => Some(t.text.clone()),
        _ => None,
    })
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
        let era = TaskEra::from(ctx.era());
        let session = ctx.session().cloned();
        let scope = match (&session, era) {
            (Some(s), TaskEra::Legacy) => Some(self.session_scope(s)?),
            _ => None,
        };
        let now = self.now();
        let record = TaskRecord {
            id: id.clone(),
            era,
            principal: ctx.principal().map(|p| p.key()),
            scope,
            method:
                <duomcp_schema::methods::CallTool as duomcp_schema::methods::RequestMethod>::NAME
                    .into(),
            target: target.to_owned(),
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: now,
            last_updated_at_ms: now,
            ttl_ms: Some(self.config.grant_ttl(requested_ttl)),
            poll_interval_ms: Some((self.config.poll_interval.as_millis() as u64).max(1)),
            input_requests: Default::default(),
            client_requests: Default::default(),
            outcome: None,
        };
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

    /// Applies `edit` (which says whether it changed anything) and stamps, wakes and
    /// announces the change. `None` when the task is gone.
    async fn edit<F>(&self, id: &str, edit: F) -> Option<(TaskRecord, bool)>
    where
        F: FnOnce(&mut TaskRecord) -> bool + Send,
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
                    if edit(r) {
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
        let (TaskEra::Legacy, None, Some(owner)) = (record.era, &record.principal, &record.scope)
        else {
            return Ok(());
        };
        let caller = match session {
            Some(s) => Some(self.session_scope(s)?),
            None => None,
        };
        if caller.as_deref() != Some(owner.as_str()) {
            return Err(not_found(id));
        }
        Ok(())
    }

    /// The task `id` as `principal` (a [`Principal::key`](crate::server::Principal::key)) may see
    /// it on a request of `era`; `-32602` otherwise.
    pub(crate) async fn lookup(
        &self,
        id: &str,
        era: TaskEra,
        principal: Option<&str>,
    ) -> Result<TaskRecord, ProtocolError> {
        let store = self.store();
        let Some(record) = store.get(id, self.now()).await else {
            self.reap(id);
            return Err(not_found(id));
        };
        let visible = record.era == era
            && match &record.principal {
                Some(owner) => principal == Some(owner.as_str()),
                None => true,
            };
        if !visible {
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
            .edit(id, move |r| {
                if r.status.is_terminal() {
                    return false;
                }
                r.status = status;
                r.outcome = outcome;
                r.status_message = message;
                r.input_requests.clear();
                true
            })
            .await;
        if let Some(live) = self.take_live(id) {
            live.bump();
            if live_store_shared(&self.store()) {
                self.store().release(id).await;
            }
        }
        r.map(|(record, _)| record)
    }

    /// Records what the handler of `live` returned, in the shape of the task's era.
    pub(crate) async fn complete(
        &self,
        live: &LiveTask,
        result: Result<CallToolResult, HandlerError>,
    ) {
        let value = |r: &CallToolResult| match serde_json::to_value(r) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        let error = |p: &ProtocolError| match live.era {
            TaskEra::Legacy => legacy::error_object(p),
            TaskEra::Modern => modern::error_object(p),
        };
        let (status, outcome, message) = match result {
            // 2025-11-25: a tool error is a failed task (tasks/result still returns the result).
            Ok(r) if r.is_error() && live.era == TaskEra::Legacy => (
                TaskStatus::Failed,
                Some(TaskOutcome::Result(value(&r))),
                Some(first_text(&r).unwrap_or_else(|| "the tool reported an error".into())),
            ),
            // 2026-07-28: `failed` is for JSON-RPC errors only; a tool error completes.
            Ok(r) => (
                TaskStatus::Completed,
                Some(TaskOutcome::Result(value(&r))),
                None,
            ),
            Err(HandlerError::Cancelled) => (
                TaskStatus::Cancelled,
                None,
                Some("The task was cancelled.".into()),
            ),
            Err(HandlerError::Protocol(p)) => {
                let e = error(&p);
                let message = e.message.clone();
                (
                    TaskStatus::Failed,
                    Some(TaskOutcome::Error(e)),
                    Some(message),
                )
            }
            Err(other) => {
                let e = error(&ProtocolError::Internal(other.to_string()));
                let message = e.message.clone();
                (
                    TaskStatus::Failed,
                    Some(TaskOutcome::Error(e)),
                    Some(message),
                )
            }
        };
        tracing::debug!(task = %live.id, status = status.as_str(), "task finished");
        self.finish(&live.id, status, outcome, message).await;
    }

    /// Sets the `statusMessage` of a running task.
    pub(crate) async fn set_status_message(&self, id: &str, message: String) {
        self.edit(id, move |r| {
            if r.status.is_terminal() {
                return false;
            }
            r.status_message = Some(message);
            true
        })
        .await;
    }

    /// `tasks/cancel`: moves a running task to `cancelled` and stops its handler.
    pub(crate) async fn cancel(
        &self,
        id: &str,
        era: TaskEra,
        principal: Option<&str>,
    ) -> Result<Cancelled, ProtocolError> {
        self.lookup(id, era, principal).await?;
        let edited = self
            .edit(id, |r| {
                if r.status.is_terminal() {
                    return false;
                }
                r.status = TaskStatus::Cancelled;
                r.status_message = Some("The task was cancelled by request.".into());
                r.input_requests.clear();
                r.outcome = None;
                true
            })
            .await;
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

    /// 2026-07-28: parks the task in `input_required` with `request` under a fresh key and
    /// waits for `tasks/update` to deliver the answer.
    pub(crate) async fn ask(
        &self,
        live: &Arc<LiveTask>,
        key: &str,
        request: InputRequest,
    ) -> Result<Value, HandlerError> {
        let key = live.mint_key(key);
        let (tx, rx) = oneshot::channel();
        lock(&live.waiters).insert(key.clone(), tx);
        let k = key.clone();
        let parked = self
            .edit(&live.id, move |r| {
                if r.status.is_terminal() {
                    return false;
                }
                r.input_requests.insert(k, request);
                r.status = TaskStatus::InputRequired;
                true
            })
            .await;
        if !parked.is_some_and(|(_, changed)| changed) {
            lock(&live.waiters).remove(&key);
            return Err(HandlerError::Cancelled);
        }
        let answer = tokio::select! {
            a = rx => a.map_err(|_| HandlerError::Cancelled),
            _ = live.cancel.cancelled() => Err(HandlerError::Cancelled),
        };
        lock(&live.waiters).remove(&key);
        answer
    }

    /// `tasks/update`: delivers the answers to outstanding input requests. Keys that are not
    /// outstanding (never issued, answered already, or of a finished task) are ignored.
    pub(crate) async fn answer(&self, id: &str, responses: Map<String, Value>) {
        let mut delivered: Vec<(String, Value)> = Vec::new();
        let out = &mut delivered;
        self.edit(id, move |r| {
            if r.status.is_terminal() {
                return false;
            }
            for (k, v) in responses {
                if r.input_requests.remove(&k).is_some() {
                    out.push((k, v));
                }
            }
            if out.is_empty() {
                return false;
            }
            if r.input_requests.is_empty() && r.status == TaskStatus::InputRequired {
                r.status = TaskStatus::Working;
            }
            true
        })
        .await;
        if delivered.is_empty() {
            return;
        }
        let Some(live) = self.live(id) else {
            // Run by another replica: it takes the answers at its next lease renewal.
            let store = self.store();
            if live_store_shared(&store) {
                let answers: Map<String, Value> = delivered.into_iter().collect();
                if let Err(e) = store.post_answers(id, answers).await {
                    tracing::warn!(task = id, "tasks/update answers not passed on: {e}");
                }
            }
            return;
        };
        deliver(&live, delivered);
    }

    /// 2025-11-25: sends a server→client request for a task through `tasks/result`, with the
    /// related-task `_meta`, keeping the task `input_required` until the client answers.
    pub(crate) async fn client_request(
        &self,
        live: &Arc<LiveTask>,
        method: &str,
        params: &Value,
    ) -> Result<Box<RawValue>, HandlerError> {
        let Some(session) = live.session.clone() else {
            return Err(HandlerError::msg(
                "no session to send a request to the client on",
            ));
        };
        let mut params = params.clone();
        if let Value::Object(p) = &mut params {
            let m = p.entry("_meta").or_insert_with(|| json!({}));
            if let Value::Object(m) = m {
                m.insert(meta::RELATED_TASK.into(), json!({ "taskId": live.id }));
            }
        }
        let mut waiter = session
            .correlation()
            .request()
            .map_err(|e| HandlerError::msg(format!("cannot send {method} to the client: {e}")))?;
        let rid = waiter.id().clone();
        let frame = jsonrpc::encode_request(&rid, method, &params)
            .map_err(|e| HandlerError::msg(e.to_string()))?;
        // In the record too, for a `tasks/result` served by another replica (a shared store).
        let shared = live_store_shared(&self.store());
        let text = shared
            .then(|| String::from_utf8(frame.clone()).ok())
            .flatten();
        lock(&live.outbox).push_back((rid.clone(), frame));
        live.outstanding.fetch_add(1, Ordering::SeqCst);
        let key = rid.to_string();
        let k = key.clone();
        self.edit(&live.id, move |r| {
            let mut changed = false;
            if let Some(text) = text {
                if !r.status.is_terminal() {
                    r.client_requests.insert(k, text);
                    changed = true;
                }
            }
            if r.status == TaskStatus::Working {
                r.status = TaskStatus::InputRequired;
                changed = true;
            }
            changed
        })
        .await;
        live.bump();
        // No timeout: the task waits in `input_required` until answered, cancelled or gone.
        let outcome = tokio::select! {
            a = waiter.recv() => a.map_err(|_| HandlerError::msg("the session closed before the client answered")),
            _ = live.cancel.cancelled() => Err(HandlerError::Cancelled),
        };
        drop(waiter);
        lock(&live.outbox).retain(|(id, _)| id != &rid);
        let last = live.outstanding.fetch_sub(1, Ordering::SeqCst) == 1;
        if last || shared {
            self.edit(&live.id, move |r| {
                let mut changed = r.client_requests.remove(&key).is_some();
                if last && r.status == TaskStatus::InputRequired {
                    r.status = TaskStatus::Working;
                    changed = true;
                }
                changed
            })
            .await;
        }
        match outcome? {
            Ok(raw) => Ok(raw),
            Err(e) => Err(HandlerError::msg(format!(
                "the client answered {method} with error {}: {}",
                e.code, e.message
            ))),
        }
    }

    /// 2025-11-25 `tasks/result`: forwards the task's server→client requests to `sink` until
    /// the task is terminal, then returns it. `None` when the client went away.
    pub(crate) async fn await_terminal(
        &self,
        id: &str,
        principal: Option<&str>,
        sink: &Sink,
    ) -> Result<Option<TaskRecord>, ProtocolError> {
        // Requests of a task run by another replica sent on this stream already.
        let mut sent_here: std::collections::HashSet<String> = Default::default();
        loop {
            let live = self.live(id);
            let mut changes = live.as_ref().map(|l| l.version.subscribe());
            let record = self.lookup(id, TaskEra::Legacy, principal).await?;
            if record.status.is_terminal() {
                return Ok(Some(record));
            }
            if let Some(live) = &live {
                loop {
                    let next = lock(&live.outbox).pop_front();
                    let Some((rid, frame)) = next else { break };
                    if sink.send(frame.clone()).await.is_err() {
                        lock(&live.outbox).push_front((rid, frame));
                        return Ok(None);
                    }
                }
            } else {
                // Run by another replica: its requests are in the record; the client's answers
                // reach the handler there whichever replica they land on.
                sent_here.retain(|rid| record.client_requests.contains_key(rid));
                for (rid, frame) in &record.client_requests {
                    if sent_here.contains(rid) {
                        continue;
                    }
                    if sink.send(frame.clone().into_bytes()).await.is_err() {
                        return Ok(None);
                    }
                    sent_here.insert(rid.clone());
                }
            }
            // Wake on any change; poll now and then so expiry is noticed too.
            let tick = tokio::time::sleep(Duration::from_millis(500));
            match changes.as_mut() {
                Some(rx) => {
                    tokio::select! {
                        _ = rx.changed() => {}
                        _ = tick => {}
                    }
                }
                None => tick.await,
            }
        }
    }

    /// The tasks `principal` may list on a 2025-11-25 session.
    pub(crate) fn legacy_filter(
        &self,
        principal: Option<&str>,
        session: &Arc<Session>,
    ) -> Result<super::TaskFilter, ProtocolError> {
        Ok(match principal {
            Some(p) => super::TaskFilter::Principal(TaskEra::Legacy, p.to_owned()),
            None => super::TaskFilter::Scope(TaskEra::Legacy, self.session_scope(session)?),
        })
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
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::server::tasks::{InMemoryTaskStore, ManualClock, TaskStore};

    fn record(id: &str, principal: Option<&str>, status: TaskStatus) -> TaskRecord {
        TaskRecord {
            id: id.into(),
            era: TaskEra::Modern,
            principal: principal.map(str::to_owned),
            scope: None,
            method: "tools/call".into(),
            target: "t".into(),
            status,
            status_message: None,
            created_at_ms: 0,
            last_updated_at_ms: 0,
            ttl_ms: Some(1000),
            poll_interval_ms: None,
            input_requests: Default::default(),
            client_requests: Default::default(),
            outcome: None,
        }
    }

    async fn runtime() -> TaskRuntime {
        let store = InMemoryTaskStore::new(10);
        store
            .create(record("mine", Some("alice"), TaskStatus::Completed), 0)
            .await
            .unwrap();
        store
            .create(record("open", None, TaskStatus::Completed), 0)
            .await
            .unwrap();
        store
            .create(record("orphan", None, TaskStatus::Working), 0)
            .await
            .unwrap();
        let config = TaskConfig::default()
            .store(store)
            .clock(ManualClock::new(10));
        TaskRuntime::new(config, broadcast::channel(4).0, Default::default())
    }

    #[tokio::test]
    async fn tasks_are_visible_only_to_their_principal_and_era() {
        let rt = runtime().await;
        assert!(rt
            .lookup("mine", TaskEra::Modern, Some("alice"))
            .await
            .is_ok());
        for (who, era) in [
            (Some("mallory"), TaskEra::Modern),
            (None, TaskEra::Modern),
            (Some("alice"), TaskEra::Legacy),
        ] {
            let e = rt.lookup("mine", era, who).await.unwrap_err();
            assert!(
                matches!(&e, ProtocolError::InvalidParams(m) if m.contains("not yours")),
                "{e}"
            );
        }
        // Without a principal the id is a bearer token.
        assert!(rt
            .lookup("open", TaskEra::Modern, Some("anyone"))
            .await
            .is_ok());
        // Foreign callers cannot cancel either, and nothing changes.
        assert!(rt
            .cancel("mine", TaskEra::Modern, Some("mallory"))
            .await
            .is_err());
    }

    #[tokio::test]
    async fn a_running_task_nobody_runs_any_more_fails() {
        let rt = runtime().await;
        let r = rt.lookup("orphan", TaskEra::Modern, None).await.unwrap();
        assert_eq!(r.status, TaskStatus::Failed);
        assert!(matches!(r.outcome, Some(TaskOutcome::Error(ref e)) if e.code == -32603));
    }

    #[tokio::test]
    async fn terminal_tasks_never_change_status() {
        let rt = runtime().await;
        let r = rt
            .finish("mine", TaskStatus::Failed, None, Some("late".into()))
            .await
            .unwrap();
        assert_eq!(r.status, TaskStatus::Completed, "completed stays completed");
        match rt.cancel("open", TaskEra::Modern, None).await.unwrap() {
            Cancelled::AlreadyTerminal(r) => assert_eq!(r.status, TaskStatus::Completed),
            Cancelled::Now(_) => panic!("a finished task cannot be cancelled"),
        }
    }
}
