//! Per-request settings: timeout, progress, log level, extra `_meta`.

use duomcp_schema::{LoggingLevel, ProgressNotificationParams};
use serde_json::{Map, Value};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

type ProgressFn = dyn Fn(&ProgressNotificationParams) + Send + Sync;
type TaskStatusFn = dyn Fn(&super::TaskInfo) + Send + Sync;

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

    /// Adds a key to the request's `_meta` (`traceparent`, an extension's key…). In 2026-07-28
    /// an `io.modelcontextprotocol/clientCapabilities` given here replaces the client's own
    /// declaration for this request (a gateway declares its client's).
    pub fn meta(mut self, key: impl Into<String>, value: Value) -> Self {
        self.meta.insert(key.into(), value);
        self
    }
}
