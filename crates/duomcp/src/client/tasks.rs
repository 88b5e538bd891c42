//! Tasks from the client's side, in both eras.
//!
//! * **Requesting** (both eras): [`Client::call_tool`] handles a task in place of a result by
//!   polling it and returning the tool's result, so callers need not know tasks exist. In
//!   2025-11-25 the client asks for a task (`params.task`) when the tool's
//!   `execution.taskSupport` is `"required"`, or `"optional"` and the caller opted in with
//!   [`RequestOptions::as_task`]; it polls `tasks/get` at the server's `pollInterval` and reads
//!   the result with `tasks/result`, on whose stream the server's elicitation and sampling
//!   requests for the task arrive (answered by the registered handlers). In 2026-07-28 the
//!   client declares the extension `io.modelcontextprotocol/tasks` on `tools/call` and
//!   `tasks/*`; on `resultType: "task"` it polls `tasks/get` at `pollIntervalMs`, answers the
//!   `inputRequests` of an `input_required` task with the handlers and `tasks/update`, and
//!   returns the inlined result (or error). Dropping the call's future cancels the task
//!   (`tasks/cancel`).
//! * **Explicit** API: [`Client::start_tool_task`] returns a [`TaskHandle`] to
//!   [`get`](TaskHandle::get), [`watch`](TaskHandle::watch), [`update`](TaskHandle::update),
//!   [`result`](TaskHandle::result) or [`cancel`](TaskHandle::cancel);
//!   [`Client::list_tasks`] pages `tasks/list` (2025-11-25).
//! * **Hosting** (2025-11-25): with [`ClientBuilder::host_tasks`](super::ClientBuilder::host_tasks),
//!   a server's task-augmented `elicitation/create` or `sampling/createMessage` runs as a task
//!   on the client, which serves the server's `tasks/get`, `tasks/result`, `tasks/list` and
//!   `tasks/cancel` for it.
//!
//! (Over 800 lines, about 250 of them docs: the client's task handling is one state machine
//! for both eras; splitting it by era is left for later.)
//!
//! **Why this file matches on the era** (the one client module besides `client/era/` that
//! does, as `server/tasks/` is on the server's side): a [`TaskHandle`] outlives the call that
//! made it and carries the era of its task; the two revisions' tasks differ in every step of
//! the state machine (how a task is asked for and recognised, which status ends it, where
//! its result comes from: `tasks/result` or the inlined result, how input is answered:
//! the server's requests or `tasks/update`, whether cancelling is final or cooperative, and
//! hosting exists only in 2025-11-25), so the step is matched on `(era, status)` in one
//! place rather than spread over an adapter surface each method would grow by two arms.

use super::engine::Inner;
use super::error::ClientError;
use super::handlers::{HandlerCall, Handlers};
use super::options::{InputFn, RequestOptions};
use super::{decode, object, Client};
use crate::era::Era;
use crate::jsonrpc::{self, error_code, ErrorObject};
use crate::util::lock;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use duomcp_schema::tasks::ext::DetailedTask;
use duomcp_schema::{
    meta, CallToolResult, ClientTasksCapability, ClientTasksElicitationCapability,
    ClientTasksRequestsCapability, ClientTasksSamplingCapability, InputRequest, InputRequests,
    JsonObject, ListTasksResult, Task, TaskStatus, TaskSupport, Tool,
};
use futures_util::stream::{FuturesUnordered, StreamExt as _};
use futures_util::FutureExt as _;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::AbortHandle;

pub(crate) use duomcp_schema::tasks::ext::EXTENSION_ID;

const CALL: &str = "tools/call";
const GET: &str = "tasks/get";
const RESULT: &str = "tasks/result";
const LIST: &str = "tasks/list";
const CANCEL: &str = "tasks/cancel";
const UPDATE: &str = "tasks/update";

/// How often to poll when the server suggests no interval.
const DEFAULT_POLL: Duration = Duration::from_millis(500);
/// Polling bounds, whatever the server suggests.
const MIN_POLL: Duration = Duration::from_millis(5);
const MAX_POLL: Duration = Duration::from_secs(30);
/// Upper bound on pages fetched by [`Client::list_all_tasks`].
const MAX_PAGES: usize = 10_000;

/// The requests that carry the tasks extension in their capabilities (2026-07-28).
pub(crate) fn declares_extension(method: &str) -> bool {
    method == CALL || method.starts_with("tasks/")
}

fn id_params(id: &str) -> Map<String, Value> {
    let mut p = Map::new();
    p.insert("taskId".into(), json!(id));
    p
}

fn millis(v: i64) -> Duration {
    Duration::from_millis(u64::try_from(v).unwrap_or(0))
}

fn poll_interval(suggested: Option<Duration>) -> Duration {
    suggested.unwrap_or(DEFAULT_POLL).clamp(MIN_POLL, MAX_POLL)
}

/// The options of one request made on behalf of a task call: its timeout, nothing else (the
/// call's progress token and `_meta` belong to the original `tools/call`).
fn per_request(opts: &RequestOptions) -> RequestOptions {
    RequestOptions {
        timeout: opts.timeout,
        log_level: opts.log_level,
        // 2025-11-25: the server's requests on a `tasks/result` stream are the task's.
        on_input: opts.on_input.clone(),
        ..RequestOptions::default()
    }
}

fn task_metadata(opts: &RequestOptions) -> Value {
    match opts.task_ttl {
        Some(ttl) => json!({ "ttl": u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX) }),
        None => json!({}),
    }
}

fn is_invalid_params(e: &ClientError) -> bool {
    e.rpc_error()
        .is_some_and(|r| r.code == error_code::INVALID_PARAMS)
}

/// A task as one `tasks/get` (or the creating call) saw it, in either era.
///
/// ```
/// # async fn run(task: duomcp::client::TaskHandle) -> Result<(), duomcp::client::ClientError> {
/// let info = task.get().await?;
/// println!("{} is {} ({:?})", info.task_id, info.status.as_str(), info.status_message);
/// if let Some(every) = info.poll_interval {
///     tokio::time::sleep(every).await;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TaskInfo {
    /// The task's id.
    pub task_id: String,
    /// Its status.
    pub status: TaskStatus,
    /// What the server says about the status, if anything.
    pub status_message: Option<String>,
    /// When it was created (ISO 8601).
    pub created_at: String,
    /// When its status last changed (ISO 8601).
    pub last_updated_at: String,
    /// How long the server keeps it after creation (`None`: unlimited).
    pub ttl: Option<Duration>,
    /// How often the server suggests polling.
    pub poll_interval: Option<Duration>,
    /// 2026-07-28, `input_required`: what the task waits for, keyed for
    /// [`TaskHandle::update`].
    pub input_requests: Option<InputRequests>,
    /// The task object exactly as the server sent it (2026-07-28 `completed` tasks carry
    /// `result`, `failed` ones `error`).
    pub raw: Value,
}

impl TaskInfo {
    fn parse(era: Era, raw: Value) -> Result<Self, ClientError> {
        let bad = |e: serde_json::Error| ClientError::Protocol(format!("malformed task: {e}"));
        match era {
            Era::Legacy => {
                let t: Task = serde_json::from_value(raw.clone()).map_err(bad)?;
                Ok(TaskInfo {
                    task_id: t.task_id,
                    status: t.status,
                    status_message: t.status_message,
                    created_at: t.created_at,
                    last_updated_at: t.last_updated_at,
                    ttl: t.ttl.map(millis),
                    poll_interval: t.poll_interval.map(millis),
                    input_requests: None,
                    raw,
                })
            }
            Era::Modern => {
                let t: DetailedTask = serde_json::from_value(raw.clone()).map_err(bad)?;
                Ok(TaskInfo {
                    task_id: t.task_id,
                    status: t.status,
                    status_message: t.status_message,
                    created_at: t.created_at,
                    last_updated_at: t.last_updated_at,
                    ttl: t.ttl_ms.map(millis),
                    poll_interval: t.poll_interval_ms.map(millis),
                    input_requests: t.input_requests,
                    raw,
                })
            }
        }
    }
}

/// What [`Client::start_tool_task`] started: a task, or (when the server chose to answer at
/// once, as a 2026-07-28 server may) the result itself.
///
/// ```no_run
/// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
/// use duomcp::client::{RequestOptions, TaskStart};
/// let result = match client.start_tool_task("slow_compute", serde_json::json!({ "seconds": 3 }), RequestOptions::new()).await? {
///     TaskStart::Task(task) => task.result().await?,
///     TaskStart::Completed(result) => *result,
/// };
/// # let _ = result;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub enum TaskStart {
    /// The call runs as a task.
    Task(TaskHandle),
    /// The server answered without a task (boxed: a result is much larger than a handle).
    Completed(Box<CallToolResult>),
}

/// A task on the server: poll it, watch it, answer it, wait for its result or cancel it.
/// Cheap to clone. Made by [`Client::start_tool_task`] or, for a known id, [`Client::task`].
///
/// ```no_run
/// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
/// use duomcp::client::{RequestOptions, TaskStart};
/// let started = client
///     .start_tool_task("slow_compute", serde_json::json!({ "seconds": 5 }), RequestOptions::new())
///     .await?;
/// let TaskStart::Task(task) = started else { return Ok(()) };
/// println!("started task {}", task.id());
/// let result = task.result().await?;
/// println!("{:?}", result.content);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct TaskHandle {
    client: Client,
    id: String,
    era: Era,
}

impl std::fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskHandle")
            .field("id", &self.id)
            .field("era", &self.era)
            .finish()
    }
}

/// Sends `tasks/cancel` when dropped while armed: a task call abandoned before its task ended.
struct CancelOnDrop {
    inner: Option<Arc<Inner>>,
    id: String,
}

impl CancelOnDrop {
    fn disarm(&mut self) {
        self.inner = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(inner) = self.inner.take() else {
            return;
        };
        if inner.closed_reason().is_some() {
            return;
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let id = std::mem::take(&mut self.id);
            handle.spawn(async move {
                match inner
                    .request(CANCEL, id_params(&id), &RequestOptions::default())
                    .await
                {
                    Ok(_) => tracing::debug!(task = %id, "cancelled an abandoned task"),
                    Err(e) => {
                        tracing::debug!(task = %id, "could not cancel an abandoned task: {e}")
                    }
                }
            });
        }
    }
}

impl TaskHandle {
    /// The task's id.
    ///
    /// ```no_run
    /// # fn run(client: duomcp::client::Client) {
    /// let task = client.task("b3Bh");
    /// assert_eq!(task.id(), "b3Bh");
    /// # }
    /// ```
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The era of the task (that of the connection).
    ///
    /// ```no_run
    /// # fn run(task: duomcp::client::TaskHandle) {
    /// println!("a {} task", task.era());
    /// # }
    /// ```
    pub fn era(&self) -> Era {
        self.era
    }

    /// The task's current state (`tasks/get`). An unknown, expired or foreign id fails with
    /// the server's `-32602`.
    ///
    /// ```no_run
    /// # async fn run(task: duomcp::client::TaskHandle) -> Result<(), duomcp::client::ClientError> {
    /// let info = task.get().await?;
    /// println!("{}", info.status.as_str());
    /// # Ok(()) }
    /// ```
    pub async fn get(&self) -> Result<TaskInfo, ClientError> {
        self.get_with(&RequestOptions::default()).await
    }

    async fn get_with(&self, opts: &RequestOptions) -> Result<TaskInfo, ClientError> {
        let v = self
            .client
            .inner
            .request(GET, id_params(&self.id), &per_request(opts))
            .await?;
        TaskInfo::parse(self.era, v)
    }

    /// A stream of the task's states: the first, then each change (status, message or input
    /// requests), polled at the server's interval, ending after a terminal state.
    ///
    /// ```no_run
    /// # async fn run(task: duomcp::client::TaskHandle) -> Result<(), duomcp::client::ClientError> {
    /// let mut states = task.watch();
    /// while let Some(state) = states.next().await {
    ///     let state = state?;
    ///     eprintln!("{}: {}", state.task_id, state.status.as_str());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn watch(&self) -> TaskWatch {
        TaskWatch {
            handle: self.clone(),
            last: None,
            interval: DEFAULT_POLL,
            first: true,
            done: false,
        }
    }

    /// 2026-07-28: answers the task's input requests (`tasks/update`), keyed as in
    /// [`TaskInfo::input_requests`]. Unsupported in 2025-11-25, where the server's own
    /// requests reach the handlers.
    ///
    /// ```no_run
    /// # async fn run(task: duomcp::client::TaskHandle) -> Result<(), duomcp::client::ClientError> {
    /// let mut answers = serde_json::Map::new();
    /// answers.insert("confirm".into(), serde_json::json!({ "action": "accept", "content": { "confirm": true } }));
    /// task.update(answers).await?;
    /// # Ok(()) }
    /// ```
    pub async fn update(&self, responses: Map<String, Value>) -> Result<(), ClientError> {
        self.update_with(responses, &RequestOptions::default())
            .await
    }

    async fn update_with(
        &self,
        responses: Map<String, Value>,
        opts: &RequestOptions,
    ) -> Result<(), ClientError> {
        if self.era != Era::Modern {
            return Err(ClientError::Unsupported(
                "tasks/update exists only in 2026-07-28".into(),
            ));
        }
        let mut params = id_params(&self.id);
        params.insert("inputResponses".into(), Value::Object(responses));
        self.client
            .inner
            .request(UPDATE, params, &per_request(opts))
            .await
            .map(drop)
    }

    /// Waits for the task's result, as [`Client::call_tool`] does: polls at the server's
    /// interval, answers input requests with the handlers, and returns the tool's result (a
    /// JSON-RPC error of the task as [`ClientError::Rpc`], a cancelled task as
    /// [`ClientError::TaskCancelled`]). Dropping the future cancels the task.
    ///
    /// ```no_run
    /// # async fn run(task: duomcp::client::TaskHandle) -> Result<(), duomcp::client::ClientError> {
    /// let result = task.result().await?;
    /// println!("{:?}", result.content);
    /// # Ok(()) }
    /// ```
    pub async fn result(&self) -> Result<CallToolResult, ClientError> {
        self.result_with(RequestOptions::default()).await
    }

    /// [`result`](Self::result) with options (per-request timeout, status callback).
    ///
    /// ```no_run
    /// # async fn run(task: duomcp::client::TaskHandle) -> Result<(), duomcp::client::ClientError> {
    /// use duomcp::client::RequestOptions;
    /// let opts = RequestOptions::new().on_task_status(|t| eprintln!("{}", t.status.as_str()));
    /// let result = task.result_with(opts).await?;
    /// # let _ = result;
    /// # Ok(()) }
    /// ```
    pub async fn result_with(
        &self,
        options: RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        let info = self.get_with(&options).await?;
        let v = self.drive(&options, info).await?;
        decode(CALL, v)
    }

    /// Cancels the task (`tasks/cancel`) and returns the status it ended in: `cancelled`, or
    /// `completed` / `failed` when it finished first (a 2025-11-25 server refuses to cancel a
    /// finished task; a 2026-07-28 cancellation is cooperative, so this polls until the task
    /// is terminal).
    ///
    /// ```no_run
    /// # async fn run(task: duomcp::client::TaskHandle) -> Result<(), duomcp::client::ClientError> {
    /// let status = task.cancel().await?;
    /// assert!(status.is_terminal());
    /// # Ok(()) }
    /// ```
    pub async fn cancel(&self) -> Result<TaskStatus, ClientError> {
        let inner = &self.client.inner;
        let sent = inner
            .request(CANCEL, id_params(&self.id), &RequestOptions::default())
            .await;
        match self.era {
            Era::Legacy => match sent {
                Ok(v) => Ok(TaskInfo::parse(Era::Legacy, v)?.status),
                // Refused: finished already (or unknown, which the get reports).
                Err(e) if is_invalid_params(&e) => {
                    let info = self.get().await?;
                    if info.status.is_terminal() {
                        Ok(info.status)
                    } else {
                        Err(e)
                    }
                }
                Err(e) => Err(e),
            },
            Era::Modern => {
                sent?;
                let limit = inner.config.request_timeout;
                let started = tokio::time::Instant::now();
                loop {
                    let info = self.get().await?;
                    if info.status.is_terminal() {
                        return Ok(info.status);
                    }
                    if started.elapsed() >= limit {
                        return Err(ClientError::Timeout {
                            method: CANCEL.into(),
                            after: started.elapsed(),
                        });
                    }
                    tokio::time::sleep(poll_interval(info.poll_interval)).await;
                }
            }
        }
    }

    /// Polls the task until it ends and returns the raw result. Cancels the task if abandoned:
    /// dropped, past the call's own timeout ([`RequestOptions::timeout`] or the `max_total` of
    /// [`RequestOptions::reset_timeout_on_progress`], counted from here; the client-wide
    /// request timeout bounds each request only), or failed for a reason other than the task
    /// ending.
    async fn drive(&self, opts: &RequestOptions, info: TaskInfo) -> Result<Value, ClientError> {
        let mut guard = CancelOnDrop {
            inner: Some(self.client.inner.clone()),
            id: self.id.clone(),
        };
        let limit = match (opts.timeout, opts.max_total) {
            (Some(t), Some(m)) => Some(t.max(m)),
            (t, m) => t.or(m),
        };
        let Some(limit) = limit else {
            return self.poll_to_end(opts, info, &mut guard).await;
        };
        let started = tokio::time::Instant::now();
        match tokio::time::timeout(limit, self.poll_to_end(opts, info, &mut guard)).await {
            Ok(outcome) => outcome,
            Err(_) => {
                tracing::debug!(task = %self.id, "the task outlived the call's timeout; cancelling it");
                Err(ClientError::Timeout {
                    method: CALL.into(),
                    after: started.elapsed(),
                })
            }
        }
    }

    async fn poll_to_end(
        &self,
        opts: &RequestOptions,
        mut info: TaskInfo,
        guard: &mut CancelOnDrop,
    ) -> Result<Value, ClientError> {
        let mut interval = poll_interval(info.poll_interval);
        let mut reported: Option<(TaskStatus, Option<String>)> = None;
        let mut answered: HashSet<String> = HashSet::new();
        // 2026-07-28: input requests being answered. The task is polled on meanwhile, so a
        // request that appears while others wait for their answers is asked at once (its
        // handler may be waiting on all of them together), and each answer goes to the server
        // as soon as it is given.
        let mut asked: HashSet<String> = HashSet::new();
        let mut answering: FuturesUnordered<Answering<'_>> = FuturesUnordered::new();
        let mut rounds = 0;
        loop {
            if let Some(f) = &opts.on_task_status {
                let key = (info.status, info.status_message.clone());
                if reported.as_ref() != Some(&key) {
                    f(&info);
                    reported = Some(key);
                }
            }
            if info.status.is_terminal() {
                guard.disarm();
            }
            if info.poll_interval.is_some() {
                interval = poll_interval(info.poll_interval);
            }
            match (self.era, info.status) {
                (_, TaskStatus::Cancelled) => {
                    return Err(ClientError::TaskCancelled {
                        task_id: self.id.clone(),
                    })
                }
                // 2025-11-25: `tasks/result` blocks until the end, and carries the server's
                // requests for the task meanwhile (the handlers answer them).
                (Era::Legacy, TaskStatus::InputRequired)
                | (Era::Legacy, TaskStatus::Completed)
                | (Era::Legacy, TaskStatus::Failed) => {
                    let sent = self
                        .client
                        .inner
                        .request(RESULT, id_params(&self.id), &per_request(opts))
                        .await;
                    match sent {
                        Ok(v) => {
                            guard.disarm();
                            // The result came before a terminal status was seen: report it.
                            if let (Some(f), false) =
                                (&opts.on_task_status, info.status.is_terminal())
                            {
                                if let Ok(last) = self.get_with(opts).await {
                                    f(&last);
                                }
                            }
                            return Ok(v);
                        }
                        // The task's own JSON-RPC error (or the refusal of a task that ended
                        // without a result): what the call ends with.
                        Err(ClientError::Rpc { method, error }) => {
                            let now = match info.status.is_terminal() {
                                true => Some(info.status),
                                false => self.get_with(opts).await.ok().map(|i| i.status),
                            };
                            return match now {
                                Some(TaskStatus::Cancelled) => {
                                    guard.disarm();
                                    Err(ClientError::TaskCancelled {
                                        task_id: self.id.clone(),
                                    })
                                }
                                Some(s) if s.is_terminal() => {
                                    guard.disarm();
                                    Err(ClientError::Rpc {
                                        method: CALL.into(),
                                        error,
                                    })
                                }
                                _ => Err(ClientError::Rpc { method, error }),
                            };
                        }
                        // Still running past the request timeout: keep polling.
                        Err(ClientError::Timeout { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
                (Era::Modern, TaskStatus::Completed) => {
                    return match info.raw.get("result") {
                        Some(Value::Object(r)) => Ok(Value::Object(r.clone())),
                        _ => Err(ClientError::Protocol(format!(
                            "task {} is completed without a result",
                            self.id
                        ))),
                    }
                }
                (Era::Modern, TaskStatus::Failed) => {
                    let error: ErrorObject = info
                        .raw
                        .get("error")
                        .and_then(|e| serde_json::from_value(e.clone()).ok())
                        .ok_or_else(|| {
                            ClientError::Protocol(format!(
                                "task {} failed without an error",
                                self.id
                            ))
                        })?;
                    return Err(ClientError::Rpc {
                        method: CALL.into(),
                        error,
                    });
                }
                (Era::Modern, TaskStatus::InputRequired) => {
                    let new: Vec<(&String, &Value)> = match info.raw.get("inputRequests") {
                        Some(Value::Object(requests)) => requests
                            .iter()
                            .filter(|(k, _)| !answered.contains(*k) && !asked.contains(*k))
                            .collect(),
                        _ => Vec::new(),
                    };
                    if !new.is_empty() {
                        if rounds >= self.client.inner.config.max_input_rounds {
                            return Err(ClientError::TooManyInputRounds {
                                method: CALL.into(),
                                rounds,
                            });
                        }
                        rounds += 1;
                        tracing::debug!(task = %self.id, inputs = new.len(), "answering the task's input requests");
                        for (key, raw) in new {
                            asked.insert(key.clone());
                            answering.push(self.answer(key.clone(), raw.clone(), opts));
                        }
                    }
                }
                (_, TaskStatus::Working) => {}
            }
            // The next poll, or sooner the answers given meanwhile (together when several are).
            let first = if answering.is_empty() {
                tokio::time::sleep(interval).await;
                None
            } else {
                tokio::select! {
                    biased;
                    Some(done) = answering.next() => Some(done),
                    () = tokio::time::sleep(interval) => None,
                }
            };
            if let Some(first) = first {
                let mut responses = Map::new();
                let mut ready = Some(first);
                while let Some((key, answer)) = ready {
                    asked.remove(&key);
                    answered.insert(key.clone());
                    responses.insert(key, answer?);
                    ready = answering.next().now_or_never().flatten();
                }
                self.update_with(responses, opts).await?;
            }
            info = self.get_with(opts).await?;
        }
    }

    /// Answers one of the task's input requests (2026-07-28) with the call's own answerer of
    /// input requests, else the client's handlers.
    fn answer<'a>(&'a self, key: String, raw: Value, opts: &'a RequestOptions) -> Answering<'a> {
        Box::pin(async move {
            let answer = match serde_json::from_value::<InputRequest>(raw) {
                Ok(request) => {
                    self.client
                        .inner
                        .answer_input(request, opts.on_input.as_ref())
                        .await
                }
                Err(e) => Err(ClientError::Protocol(format!("input request `{key}`: {e}"))),
            };
            (key, answer)
        })
    }
}

/// One input request of a task being answered: its key, and the answer.
type Answering<'a> =
    Pin<Box<dyn Future<Output = (String, Result<Value, ClientError>)> + Send + 'a>>;

/// The states of a task, from [`TaskHandle::watch`]. Ends after a terminal state or an error.
///
/// ```no_run
/// # async fn run(task: duomcp::client::TaskHandle) {
/// let mut states = task.watch();
/// while let Some(Ok(state)) = states.next().await {
///     println!("{}", state.status.as_str());
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct TaskWatch {
    handle: TaskHandle,
    last: Option<TaskInfo>,
    interval: Duration,
    first: bool,
    done: bool,
}

impl TaskWatch {
    /// The next state that differs from the last one; `None` once the task has ended.
    ///
    /// ```no_run
    /// # async fn run(task: duomcp::client::TaskHandle) -> Result<(), duomcp::client::ClientError> {
    /// let first = task.watch().next().await.transpose()?;
    /// # let _ = first;
    /// # Ok(()) }
    /// ```
    pub async fn next(&mut self) -> Option<Result<TaskInfo, ClientError>> {
        loop {
            if self.done {
                return None;
            }
            if !self.first {
                tokio::time::sleep(self.interval).await;
            }
            self.first = false;
            let info = match self.handle.get().await {
                Ok(info) => info,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            if info.poll_interval.is_some() {
                self.interval = poll_interval(info.poll_interval);
            }
            self.done = info.status.is_terminal();
            let changed = self.last.as_ref().is_none_or(|l| {
                l.status != info.status
                    || l.status_message != info.status_message
                    || l.raw.get("inputRequests") != info.raw.get("inputRequests")
            });
            if changed {
                self.last = Some(info.clone());
                return Some(Ok(info));
            }
        }
    }
}

impl Client {
    /// 2025-11-25: adds `params.task` when the tool runs as a task (see the module docs).
    /// Returns whether it did.
    pub(super) async fn augment_for_task(
        &self,
        name: &str,
        params: &mut Map<String, Value>,
        opts: &RequestOptions,
    ) -> bool {
        if self.era() != Era::Legacy {
            return false;
        }
        let offered = self.inner.with_negotiated(|n| {
            n.and_then(|n| n.capabilities.tasks.as_ref())
                .and_then(|t| t.requests.as_ref())
                .and_then(|r| r.tools.as_ref())
                .and_then(|t| t.call.as_ref())
                .is_some()
        });
        if !offered {
            return false;
        }
        let support = match self.inner.tasks.support(name) {
            Some(s) => s,
            None => {
                // The tool's taskSupport is in its listing.
                // Boxed: once per tool, and it would weigh on every call's future.
                if let Err(e) = Box::pin(self.list_all_tools()).await {
                    tracing::debug!("could not list the tools to learn their task support: {e}");
                }
                self.inner.tasks.support(name).unwrap_or_default()
            }
        };
        let wanted = match support {
            TaskSupport::Required => true,
            TaskSupport::Optional => opts.as_task,
            TaskSupport::Forbidden => false,
        };
        if wanted {
            params.insert("task".into(), task_metadata(opts));
        }
        wanted
    }

    /// Tells a task apart from a result: `Err` carries the task.
    fn classify(
        &self,
        value: Value,
        augmented: bool,
    ) -> Result<Result<Value, (TaskHandle, TaskInfo)>, ClientError> {
        let era = self.era();
        let task = match era {
            Era::Legacy if augmented && value.get("content").is_none() => match value.get("task") {
                Some(t @ Value::Object(_)) => Some(t.clone()),
                _ => None,
            },
            Era::Modern if value.get("resultType").and_then(Value::as_str) == Some("task") => {
                Some(value.clone())
            }
            _ => None,
        };
        let Some(task) = task else {
            return Ok(Ok(value));
        };
        let info = TaskInfo::parse(era, task)?;
        tracing::debug!(task = %info.task_id, "the call runs as a task");
        let handle = TaskHandle {
            client: self.clone(),
            id: info.task_id.clone(),
            era,
        };
        Ok(Err((handle, info)))
    }

    /// The result of a `tools/call`, polling the task when the server answered with one.
    pub(super) async fn settle_task(
        &self,
        value: Value,
        augmented: bool,
        opts: &RequestOptions,
    ) -> Result<Value, ClientError> {
        match self.classify(value, augmented)? {
            Ok(v) => Ok(v),
            // Boxed: following a task is rare next to a result, and large.
            Err((handle, info)) => Box::pin(handle.drive(opts, info)).await,
        }
    }

    /// Starts a tool call as a task and returns its handle without waiting for the result.
    /// In 2025-11-25 the call asks for a task (`params.task`, with
    /// [`RequestOptions::task_ttl`] if given); in 2026-07-28 the server decides, and may
    /// answer at once ([`TaskStart::Completed`]). Input the server asks for before the task
    /// starts (2026-07-28 MRTR rounds) is gathered with the handlers.
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// use duomcp::client::{RequestOptions, TaskStart};
    /// match client.start_tool_task("slow_compute", serde_json::json!({ "seconds": 3 }), RequestOptions::new()).await? {
    ///     TaskStart::Task(task) => println!("running as task {}", task.id()),
    ///     TaskStart::Completed(result) => println!("done at once: {:?}", result.content),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn start_tool_task(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: RequestOptions,
    ) -> Result<TaskStart, ClientError> {
        let arguments = serde_json::to_value(arguments)
            .map_err(|e| ClientError::InvalidArguments(e.to_string()))?;
        let mut params = Map::new();
        params.insert("name".into(), json!(name));
        let arguments = object(CALL, arguments)?;
        if !arguments.is_empty() {
            params.insert("arguments".into(), Value::Object(arguments));
        }
        let legacy = self.era() == Era::Legacy;
        if legacy {
            params.insert("task".into(), task_metadata(&options));
        }
        let value = self.inner.call(CALL, params, &options).await?;
        match self.classify(value, legacy)? {
            Ok(v) => {
                let result: CallToolResult = decode(CALL, v)?;
                self.inner.tools.check(name, &result)?;
                Ok(TaskStart::Completed(Box::new(result)))
            }
            Err((handle, _)) => Ok(TaskStart::Task(handle)),
        }
    }

    /// A handle on the task `task_id` of this connection (no request is sent).
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// let status = client.task("a-task-id-from-earlier").get().await?.status;
    /// # let _ = status;
    /// # Ok(()) }
    /// ```
    pub fn task(&self, task_id: impl Into<String>) -> TaskHandle {
        TaskHandle {
            client: self.clone(),
            id: task_id.into(),
            era: self.era(),
        }
    }

    /// The state of the task `task_id` (`tasks/get`).
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// let info = client.get_task("a-task-id").await?;
    /// println!("{}", info.status.as_str());
    /// # Ok(()) }
    /// ```
    pub async fn get_task(&self, task_id: &str) -> Result<TaskInfo, ClientError> {
        self.task(task_id).get().await
    }

    /// Cancels the task `task_id`; see [`TaskHandle::cancel`].
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// let status = client.cancel_task("a-task-id").await?;
    /// # let _ = status;
    /// # Ok(()) }
    /// ```
    pub async fn cancel_task(&self, task_id: &str) -> Result<TaskStatus, ClientError> {
        self.task(task_id).cancel().await
    }

    /// One page of `tasks/list` (2025-11-25; the first page when `cursor` is `None`).
    /// 2026-07-28 has no `tasks/list`: [`ClientError::Unsupported`].
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// let page = client.list_tasks(None).await?;
    /// for task in page.tasks {
    ///     println!("{} {}", task.task_id, task.status.as_str());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_tasks(&self, cursor: Option<String>) -> Result<ListTasksResult, ClientError> {
        if self.era() != Era::Legacy {
            return Err(ClientError::Unsupported(
                "tasks/list exists only in 2025-11-25".into(),
            ));
        }
        let mut params = Map::new();
        if let Some(c) = cursor {
            params.insert("cursor".into(), Value::String(c));
        }
        let v = self
            .inner
            .request(LIST, params, &RequestOptions::default())
            .await?;
        decode(LIST, v)
    }

    /// Every task `tasks/list` shows, following `nextCursor` (2025-11-25).
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// let all = client.list_all_tasks().await?;
    /// println!("{} tasks", all.len());
    /// # Ok(()) }
    /// ```
    pub async fn list_all_tasks(&self) -> Result<Vec<Task>, ClientError> {
        let mut all = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let page = self.list_tasks(cursor).await?;
            all.extend(page.tasks);
            match page.next_cursor {
                Some(c) if !c.is_empty() => cursor = Some(c),
                _ => return Ok(all),
            }
        }
        Err(ClientError::Protocol(format!(
            "tasks/list returned more than {MAX_PAGES} pages"
        )))
    }
}

// ---------------------------------------------------------------------------------------------
// The client's own task state: tool task support, and hosted tasks (2025-11-25).

/// Task support of the listed tools, and the tasks this client hosts.
#[derive(Default)]
pub(crate) struct ClientTasks {
    /// `None` until the tools were listed (or after they changed).
    support: Mutex<Option<HashMap<String, TaskSupport>>>,
    hosted: Hosted,
}

impl ClientTasks {
    /// Records the task support of listed tools (a page of `tools/list`).
    pub(crate) fn remember(&self, tools: &[Tool]) {
        let mut support = lock(&self.support);
        let map = support.get_or_insert_with(HashMap::new);
        for tool in tools {
            let s = tool
                .execution
                .as_ref()
                .and_then(|e| e.task_support)
                .unwrap_or_default();
            map.insert(tool.name.clone(), s);
        }
    }

    /// Forgets the tools' task support (the tool list changed).
    pub(crate) fn forget_tools(&self) {
        *lock(&self.support) = None;
    }

    /// `None` when the tools were not listed yet; an unlisted tool is `forbidden`.
    fn support(&self, tool: &str) -> Option<TaskSupport> {
        lock(&self.support)
            .as_ref()
            .map(|m| m.get(tool).copied().unwrap_or_default())
    }

    /// Serves what the server asks of the tasks this client hosts: a task-augmented
    /// elicitation or sampling request, or `tasks/*`. `None`: not a hosted-task matter.
    pub(crate) async fn serve(
        &self,
        handlers: &Handlers,
        method: &str,
        params: Option<&RawValue>,
        own: Option<&Arc<InputFn>>,
    ) -> Option<Result<Value, ErrorObject>> {
        if !handlers.host_tasks {
            return None;
        }
        let parse = || -> Result<Value, ErrorObject> {
            match params {
                Some(p) => serde_json::from_str(p.get())
                    .map_err(|e| invalid(format!("Invalid params: {e}"))),
                None => Ok(json!({})),
            }
        };
        match method {
            "elicitation/create" | "sampling/createMessage" => {
                let has_handler = if method == "elicitation/create" {
                    handlers.elicit.is_some()
                } else {
                    handlers.sample.is_some()
                };
                if !has_handler && own.is_none() {
                    return None;
                }
                let (raw, value) = match (params, parse()) {
                    (Some(raw), Ok(value)) => (raw, value),
                    (_, Err(e)) => return Some(Err(e)),
                    (None, Ok(_)) => return None,
                };
                let task = value.get("task")?;
                Some(
                    self.hosted
                        .create(handlers.clone(), own.cloned(), method, task, raw),
                )
            }
            GET | RESULT | LIST | CANCEL => {
                let params = match parse() {
                    Ok(p) => p,
                    Err(e) => return Some(Err(e)),
                };
                Some(match method {
                    GET => self.hosted.lookup(&params).map(|t| t.value()),
                    RESULT => self.hosted.result(&params).await,
                    LIST => self.hosted.list(&params),
                    _ => self.hosted.cancel(&params),
                })
            }
            _ => None,
        }
    }
}

/// The `tasks` capability a 2025-11-25 client declares when it hosts tasks.
pub(crate) fn hosted_capability(handlers: &Handlers) -> Option<ClientTasksCapability> {
    if !handlers.host_tasks || (handlers.elicit.is_none() && handlers.sample.is_none()) {
        return None;
    }
    Some(ClientTasksCapability {
        list: Some(JsonObject::new()),
        cancel: Some(JsonObject::new()),
        requests: Some(ClientTasksRequestsCapability {
            sampling: handlers
                .sample
                .as_ref()
                .map(|_| ClientTasksSamplingCapability {
                    create_message: Some(JsonObject::new()),
                    ..Default::default()
                }),
            elicitation: handlers
                .elicit
                .as_ref()
                .map(|_| ClientTasksElicitationCapability {
                    create: Some(JsonObject::new()),
                    ..Default::default()
                }),
            ..Default::default()
        }),
        ..Default::default()
    })
}

fn invalid(message: String) -> ErrorObject {
    jsonrpc::error(error_code::INVALID_PARAMS, message)
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// How long a hosted task is kept when the server asks for no ttl, and at most.
const HOSTED_DEFAULT_TTL_MS: u64 = 3_600_000;
const HOSTED_MAX_TTL_MS: u64 = 24 * 3_600_000;
/// The polling interval hosted tasks suggest.
const HOSTED_POLL_MS: u64 = 100;
/// `tasks/list` page size of hosted tasks.
const HOSTED_PAGE: usize = 50;

#[derive(Clone)]
struct HostedState {
    status: TaskStatus,
    message: Option<String>,
    updated_ms: u64,
    outcome: Option<Result<Value, ErrorObject>>,
}

struct HostedTask {
    id: String,
    created_ms: u64,
    ttl_ms: u64,
    state: watch::Sender<HostedState>,
    job: Mutex<Option<AbortHandle>>,
}

impl HostedTask {
    fn expired(&self, now: u64) -> bool {
        now >= self.created_ms.saturating_add(self.ttl_ms)
    }

    /// The task as 2025-11-25 writes it (`Task`).
    fn value(&self) -> Value {
        let s = self.state.borrow().clone();
        let mut t = json!({
            "taskId": self.id,
            "status": s.status,
            "createdAt": crate::common::time::iso8601(self.created_ms),
            "lastUpdatedAt": crate::common::time::iso8601(s.updated_ms),
            "ttl": self.ttl_ms,
            "pollInterval": HOSTED_POLL_MS,
        });
        if let Some(m) = s.message {
            t["statusMessage"] = json!(m);
        }
        t
    }

    /// Moves to a terminal status unless already there. Returns whether it did.
    fn finish(
        &self,
        status: TaskStatus,
        message: Option<String>,
        outcome: Option<Result<Value, ErrorObject>>,
    ) -> bool {
        self.state.send_if_modified(|s| {
            if s.status.is_terminal() {
                return false;
            }
            s.status = status;
            s.message = message;
            s.outcome = outcome;
            s.updated_ms = now_ms();
            true
        })
    }
}

/// The tasks this client hosts, in creation order.
#[derive(Default)]
struct Hosted {
    tasks: Mutex<Vec<Arc<HostedTask>>>,
}

impl Hosted {
    /// Drops expired tasks (stopping their handlers).
    fn purge(&self, now: u64) {
        lock(&self.tasks).retain(|t| {
            if t.expired(now) {
                if let Some(job) = lock(&t.job).take() {
                    job.abort();
                }
                false
            } else {
                true
            }
        });
    }

    fn create(
        &self,
        handlers: Handlers,
        own: Option<Arc<InputFn>>,
        method: &str,
        task: &Value,
        params: &RawValue,
    ) -> Result<Value, ErrorObject> {
        let ttl = match task.get("ttl") {
            None | Some(Value::Null) => HOSTED_DEFAULT_TTL_MS,
            Some(v) => v.as_u64().ok_or_else(|| {
                invalid(format!(
                    "Invalid params: task.ttl must be a non-negative integer, got {v}"
                ))
            })?,
        }
        .clamp(1, HOSTED_MAX_TTL_MS);
        let call = match HandlerCall::parse(method, Some(params)) {
            Some(call) => call?,
            None => {
                return Err(invalid(format!(
                    "Invalid params: {method} cannot be a task"
                )))
            }
        };
        // The request's own answerer (the one request of ours it belongs to, see
        // `RequestOptions::on_input`) when it has one, else the client's handlers.
        let job = async move {
            match own {
                Some(own) => call.run_own(own.as_ref()).await,
                None => call.run(&handlers).await,
            }
        };
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| {
            jsonrpc::error(
                error_code::INTERNAL_ERROR,
                format!("Internal error: no randomness for a task id ({e})"),
            )
        })?;
        let now = now_ms();
        let task = Arc::new(HostedTask {
            id: URL_SAFE_NO_PAD.encode(bytes),
            created_ms: now,
            ttl_ms: ttl,
            state: watch::channel(HostedState {
                status: TaskStatus::Working,
                message: None,
                updated_ms: now,
                outcome: None,
            })
            .0,
            job: Mutex::new(None),
        });
        self.purge(now);
        lock(&self.tasks).push(task.clone());
        let running = task.clone();
        let handle = tokio::spawn(async move {
            let outcome = job.await;
            let (status, message) = match &outcome {
                Ok(_) => (TaskStatus::Completed, None),
                Err(e) => (TaskStatus::Failed, Some(e.message.clone())),
            };
            running.finish(status, message, Some(outcome));
            lock(&running.job).take();
        });
        // The job may have finished already; then there is nothing to abort.
        if !task.state.borrow().status.is_terminal() {
            *lock(&task.job) = Some(handle.abort_handle());
        }
        tracing::debug!(task = %task.id, method, "hosting a task");
        Ok(json!({ "task": task.value() }))
    }

    fn lookup(&self, params: &Value) -> Result<Arc<HostedTask>, ErrorObject> {
        let Some(id) = params.get("taskId").and_then(Value::as_str) else {
            return Err(invalid("Invalid params: taskId is required".into()));
        };
        self.purge(now_ms());
        lock(&self.tasks)
            .iter()
            .find(|t| t.id == id)
            .cloned()
            .ok_or_else(|| {
                invalid(format!(
                    "Failed to retrieve task: no task {id:?} (unknown or expired)"
                ))
            })
    }

    async fn result(&self, params: &Value) -> Result<Value, ErrorObject> {
        let task = self.lookup(params)?;
        let mut rx = task.state.subscribe();
        let state = rx
            .wait_for(|s| s.status.is_terminal())
            .await
            .map(|s| s.clone())
            .map_err(|_| jsonrpc::error(error_code::INTERNAL_ERROR, "the task is gone"))?;
        match state.outcome {
            Some(Ok(mut v)) => {
                if let Value::Object(m) = &mut v {
                    let meta = m.entry("_meta").or_insert_with(|| json!({}));
                    if let Value::Object(meta) = meta {
                        meta.insert(meta::RELATED_TASK.into(), json!({ "taskId": task.id }));
                    }
                }
                Ok(v)
            }
            Some(Err(e)) => Err(e),
            None => Err(invalid(format!(
                "Task {} was {} before it produced a result",
                task.id,
                state.status.as_str()
            ))),
        }
    }

    fn list(&self, params: &Value) -> Result<Value, ErrorObject> {
        let start = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(c)) => c
                .parse::<usize>()
                .map_err(|_| invalid(format!("Invalid params: bad cursor {c:?}")))?,
            Some(other) => return Err(invalid(format!("Invalid params: bad cursor {other}"))),
        };
        self.purge(now_ms());
        let tasks = lock(&self.tasks).clone();
        if start > tasks.len() {
            return Err(invalid(format!("Invalid params: bad cursor \"{start}\"")));
        }
        let end = (start + HOSTED_PAGE).min(tasks.len());
        let mut page =
            json!({ "tasks": tasks[start..end].iter().map(|t| t.value()).collect::<Vec<_>>() });
        if end < tasks.len() {
            page["nextCursor"] = json!(end.to_string());
        }
        Ok(page)
    }

    fn cancel(&self, params: &Value) -> Result<Value, ErrorObject> {
        let task = self.lookup(params)?;
        let moved = task.finish(
            TaskStatus::Cancelled,
            Some("The task was cancelled by request.".into()),
            None,
        );
        if !moved {
            return Err(invalid(format!(
                "Cannot cancel task: already in terminal status '{}'",
                task.state.borrow().status.as_str()
            )));
        }
        if let Some(job) = lock(&task.job).take() {
            job.abort();
        }
        Ok(task.value())
    }
}
