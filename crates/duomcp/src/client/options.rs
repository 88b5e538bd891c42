//! Per-request settings: timeout, progress, log level, extra `_meta`.

use super::error::InputError;
use super::transport::BoxFuture;
use duomcp_schema::{InputRequest, LoggingLevel, ProgressNotificationParams};
use serde_json::{Map, Value};
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

type ProgressFn = dyn Fn(&ProgressNotificationParams) + Send + Sync;
type TaskStatusFn = dyn Fn(&super::TaskInfo) + Send + Sync;
/// A request's own answerer of the server's requests for input (see
/// [`RequestOptions::on_input`]).
pub(crate) type InputFn =
    dyn Fn(InputRequest) -> BoxFuture<'static, Result<Value, InputError>> + Send + Sync;

/// Settings for one call; the defaults come from the [`ClientBuilder`](super::ClientBuilder).
///
/// ```
/// use duomcp::client::RequestOptions;
/// use std::time::Duration;
/// let opts = RequestOptions::new()
///     .timeout(Duration::from_secs(5))
///     .reset_timeout_on_progress(Duration::from_secs(60))
///     .on_progress(|p| eprintln!("{}/{:?}", p.progress, p.total));
/// ```
#[derive(Clone, Default)]
pub struct RequestOptions {
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_total: Option<Duration>,
    pub(crate) reset_on_progress: bool,
    pub(crate) on_progress: Option<Arc<ProgressFn>>,
    pub(crate) log_level: Option<LoggingLevel>,
    pub(crate) meta: Map<String, Value>,
    /// Internal: whether an abandoned request is cancelled on the wire (not for the era probe
    /// or `initialize`).
    pub(crate) no_cancel: bool,
    /// 2025-11-25: run a tool whose `taskSupport` is `optional` as a task.
    pub(crate) as_task: bool,
    /// 2026-07-28: return an `InputRequiredResult` instead of answering it.
    pub(crate) relay_input_required: bool,
    /// 2025-11-25: the `task.ttl` to ask for.
    pub(crate) task_ttl: Option<Duration>,
    /// Called with each new status of the task behind a call.
    pub(crate) on_task_status: Option<Arc<TaskStatusFn>>,
    /// Answers the server's requests for input that belong to this request.
    pub(crate) on_input: Option<Arc<InputFn>>,
    /// Set while this request waits for its user's answers (see [`AwaitingInput`]).
    pub(crate) awaiting_input: Option<AwaitingInput>,
    /// Called with the JSON-RPC id of the request, as it is sent.
    pub(crate) on_sent: Option<Arc<SentFn>>,
}

/// What [`RequestOptions::on_sent`] calls.
type SentFn = dyn Fn(&crate::jsonrpc::RequestId) + Send + Sync;

/// A request's flag, set by its owner while the request waits for its user to answer the input
/// requests it already got (see [`RequestOptions::awaiting_input`]).
///
/// A 2025-11-25 server's request that nothing ties to one request of ours (stdio, the GET
/// stream) belongs to a request only when that is the one request in flight that could have
/// asked: requests waiting for their users' answers do not count, their server-side handlers
/// being blocked on the questions they asked. (A handler that asks again while its earlier
/// question is unanswered makes its request ambiguous: isolate such a server.)
///
/// ```
/// use duomcp::client::{AwaitingInput, RequestOptions};
/// let waiting = AwaitingInput::new();
/// let opts = RequestOptions::new().awaiting_input(waiting.clone());
/// waiting.set(true); // the user was asked; no answer yet
/// assert!(waiting.is_set());
/// # let _ = opts;
/// ```
#[derive(Clone, Debug, Default)]
pub struct AwaitingInput(Arc<AtomicBool>);

impl AwaitingInput {
    /// A flag, not set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets (`true`: waiting for the user's answers) or clears it.
    pub fn set(&self, waiting: bool) {
        self.0.store(waiting, Ordering::Release);
    }

    /// Whether it is set.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

impl fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestOptions")
            .field("timeout", &self.timeout)
            .field("max_total", &self.max_total)
            .field("reset_on_progress", &self.reset_on_progress)
            .field("on_progress", &self.on_progress.is_some())
            .field("log_level", &self.log_level)
            .field("meta", &self.meta)
            .field("as_task", &self.as_task)
            .field("task_ttl", &self.task_ttl)
            .field("on_task_status", &self.on_task_status.is_some())
            .field("on_input", &self.on_input.is_some())
            .field("awaiting_input", &self.awaiting_input)
            .field("on_sent", &self.on_sent.is_some())
            .finish()
    }
}

impl RequestOptions {
    /// The client's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// How long to wait for the response (default: the client's request timeout, 60 s).
    ///
    /// For a tool call that runs as a task, this bounds the whole call (polling included), and
    /// the task is cancelled when it runs out; the client's default bounds each request only.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Restarts the timeout whenever the server reports progress on this request, but never
    /// waits longer than `max_total` in all.
    pub fn reset_timeout_on_progress(mut self, max_total: Duration) -> Self {
        self.reset_on_progress = true;
        self.max_total = Some(max_total);
        self
    }

    /// Asks for progress (a `progressToken` in `_meta`) and calls `f` for each report.
    pub fn on_progress(
        mut self,
        f: impl Fn(&ProgressNotificationParams) + Send + Sync + 'static,
    ) -> Self {
        self.on_progress = Some(Arc::new(f));
        self
    }

    /// The log level for this request (2026-07-28 `_meta` `io.modelcontextprotocol/logLevel`);
    /// overrides [`Client::set_log_level`](super::Client::set_log_level). Ignored in 2025-11-25,
    /// where the level is per session.
    pub fn log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// 2025-11-25: runs the tool as a task when its `execution.taskSupport` is `optional` (a
    /// `required` tool always runs as one, a `forbidden` one never). The call still returns the
    /// tool's result: the client polls the task for it. No effect in 2026-07-28, where the
    /// server decides.
    ///
    /// ```
    /// use duomcp::client::RequestOptions;
    /// let opts = RequestOptions::new().as_task();
    /// # let _ = opts;
    /// ```
    pub fn as_task(mut self) -> Self {
        self.as_task = true;
        self
    }

    /// 2025-11-25: the retention to ask for (`task.ttl`) when the call runs as a task; implies
    /// [`as_task`](Self::as_task). The server may grant another.
    ///
    /// ```
    /// use duomcp::client::RequestOptions;
    /// let opts = RequestOptions::new().task_ttl(std::time::Duration::from_secs(600));
    /// # let _ = opts;
    /// ```
    pub fn task_ttl(mut self, ttl: Duration) -> Self {
        self.as_task = true;
        self.task_ttl = Some(ttl);
        self
    }

    /// Calls `f` with each new status of the task behind the call (both eras), e.g. to show
    /// progress: `working`, `input_required`, then the terminal status.
    ///
    /// ```
    /// use duomcp::client::RequestOptions;
    /// let opts = RequestOptions::new()
    ///     .on_task_status(|t| eprintln!("task {}: {}", t.task_id, t.status.as_str()));
    /// # let _ = opts;
    /// ```
    pub fn on_task_status(mut self, f: impl Fn(&super::TaskInfo) + Send + Sync + 'static) -> Self {
        self.on_task_status = Some(Arc::new(f));
        self
    }

    /// 2026-07-28: returns an `InputRequiredResult` as the call's result instead of answering
    /// it with the client's handlers, for a caller that relays the input requests itself (a
    /// gateway): it retries with `inputResponses` and `requestState` in the params.
    ///
    /// ```
    /// use duomcp::client::RequestOptions;
    /// let opts = RequestOptions::new().relay_input_required();
    /// # let _ = opts;
    /// ```
    pub fn relay_input_required(mut self) -> Self {
        self.relay_input_required = true;
        self
    }

    /// Calls `f` with the JSON-RPC id the client gives the request, just before it is sent:
    /// to match the request with what the transport observed of it (the `message_id` of an
    /// `HttpExchange`, feature `http-client`). A tool call run as a task reports each request it
    /// makes (the call, the polls, the result).
    ///
    /// ```
    /// use duomcp::client::RequestOptions;
    /// let opts = RequestOptions::new().on_sent(|id| eprintln!("sent as {id:?}"));
    /// # let _ = opts;
    /// ```
    pub fn on_sent(
        mut self,
        f: impl Fn(&crate::jsonrpc::RequestId) + Send + Sync + 'static,
    ) -> Self {
        self.on_sent = Some(Arc::new(f));
        self
    }

    /// Adds a key to the request's `_meta` (`traceparent`, an extension's key…). In 2026-07-28
    /// an `io.modelcontextprotocol/clientCapabilities` given here replaces the client's own
    /// declaration for this request (a gateway declares its client's).
    pub fn meta(mut self, key: impl Into<String>, value: Value) -> Self {
        self.meta.insert(key.into(), value);
        self
    }

    /// Answers the server's requests for input (elicitation, sampling, roots) that belong to
    /// **this** request, instead of the client's handlers ([`on_elicit`], [`on_sample`],
    /// [`on_roots`], which still declare the capabilities): for a caller that makes requests
    /// on behalf of several users over one connection (a gateway), so that one user's call never
    /// gets another's question.
    ///
    /// A request for input belongs to this request when the protocol says so:
    /// - 2026-07-28: the `inputRequests` of this request's `InputRequiredResult`s (and of the
    ///   task it becomes);
    /// - 2025-11-25 over Streamable HTTP: the server's requests sent on this request's POST
    ///   stream;
    /// - 2025-11-25 over stdio, or on the GET stream, where nothing ties a server's request to
    ///   one of ours: only while this is the **only** request in flight on the connection that
    ///   could have asked (requests waiting for their users' answers, see
    ///   [`awaiting_input`](Self::awaiting_input), could not).
    ///   Otherwise the server's request goes to the client's handlers.
    ///
    /// `f` gets the request and returns its result as JSON (an `ElicitResult`,
    /// `CreateMessageResult` or `ListRootsResult`), handed to the server as it is.
    ///
    /// [`on_elicit`]: super::ClientBuilder::on_elicit
    /// [`on_sample`]: super::ClientBuilder::on_sample
    /// [`on_roots`]: super::ClientBuilder::on_roots
    ///
    /// ```
    /// use duomcp::client::{InputError, RequestOptions};
    /// use duomcp::schema::InputRequest;
    /// let opts = RequestOptions::new().on_input(|request: InputRequest| async move {
    ///     match request {
    ///         InputRequest::Elicit(_) => Ok(serde_json::json!({ "action": "decline" })),
    ///         _ => Err(InputError::new("this call answers elicitation only")),
    ///     }
    /// });
    /// # let _ = opts;
    /// ```
    pub fn on_input<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(InputRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, InputError>> + Send + 'static,
    {
        self.on_input = Some(Arc::new(move |r| Box::pin(f(r))));
        self
    }

    /// The flag this request's owner sets while the request waits for its user's answers to
    /// input requests (see [`AwaitingInput`]); with [`on_input`](Self::on_input), so that
    /// another request in flight can still be told its server's untied requests.
    ///
    /// ```
    /// use duomcp::client::{AwaitingInput, RequestOptions};
    /// let opts = RequestOptions::new().awaiting_input(AwaitingInput::new());
    /// # let _ = opts;
    /// ```
    pub fn awaiting_input(mut self, flag: AwaitingInput) -> Self {
        self.awaiting_input = Some(flag);
        self
    }
}
