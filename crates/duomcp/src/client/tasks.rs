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
//! A [`TaskHandle`] outlives the call that made it and carries the era of its task; what the
//! two revisions' tasks differ in (how a task is asked for and recognised, what a status means
//! for the next step: `tasks/result` or the inlined result or error, input answered by the
//! server's requests or `tasks/update`, cancelling final or cooperative) is asked of the
//! era's [`TaskWire`](duomcp_proto::era::tasks::TaskWire) in `duomcp-proto`, not matched here.
//! Hosting (2025-11-25 only) is in `tasks/hosted.rs`.

mod calls;
pub(crate) mod hosted;
pub(crate) mod names;

use names::{CALL, CANCEL, GET, RESULT, UPDATE};

use super::engine::Inner;
use super::error::ClientError;
use super::options::RequestOptions;
use super::{decode, Client};
use crate::era::Era;
use crate::jsonrpc::{error_code, ErrorObject};
use duomcp_proto::tasks::ClientStep;
use duomcp_schema::{CallToolResult, InputRequest, InputRequests, TaskStatus};
use futures_util::stream::{FuturesUnordered, StreamExt as _};
use futures_util::FutureExt as _;
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// How often to poll when the server suggests no interval.
const DEFAULT_POLL: Duration = Duration::from_millis(500);
/// Polling bounds, whatever the server suggests.
const MIN_POLL: Duration = Duration::from_millis(5);
const MAX_POLL: Duration = Duration::from_secs(30);
/// Upper bound on pages fetched by [`Client::list_all_tasks`].
const MAX_PAGES: usize = 10_000;

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

/// The options of one request made on behalf of a task call: its timeout, its id reporter,
/// nothing else (the call's progress token and `_meta` belong to the original `tools/call`).
fn per_request(opts: &RequestOptions) -> RequestOptions {
    RequestOptions {
        timeout: opts.timeout,
        log_level: opts.log_level,
        on_sent: opts.on_sent.clone(),
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
        let t = era
            .tasks()
            .read_task(&raw)
            .map_err(|e| ClientError::Protocol(format!("malformed task: {e}")))?;
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
        if !self.era.tasks().has_update() {
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
        if self.era.tasks().cancel_answers_task() {
            match sent {
                Ok(v) => Ok(TaskInfo::parse(self.era, v)?.status),
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
            }
        } else {
            // Cooperative: acknowledged, then polled until the task is terminal.
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
            match self.era.tasks().next_step(info.status, &info.raw) {
                ClientStep::Cancelled => {
                    return Err(ClientError::TaskCancelled {
                        task_id: self.id.clone(),
                    })
                }
                // 2025-11-25: `tasks/result` blocks until the end, and carries the server's
                // requests for the task meanwhile (the handlers answer them).
                ClientStep::FetchResult => {
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
                ClientStep::Completed(result) => {
                    return match result {
                        Some(r) => Ok(Value::Object(r.clone())),
                        None => Err(ClientError::Protocol(format!(
                            "task {} is completed without a result",
                            self.id
                        ))),
                    }
                }
                ClientStep::Failed(error) => {
                    let error: ErrorObject = error.ok_or_else(|| {
                        ClientError::Protocol(format!("task {} failed without an error", self.id))
                    })?;
                    return Err(ClientError::Rpc {
                        method: CALL.into(),
                        error,
                    });
                }
                ClientStep::AnswerInput(requests) => {
                    let new: Vec<(&String, &Value)> = match requests {
                        Some(requests) => requests
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
                ClientStep::Poll => {}
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
