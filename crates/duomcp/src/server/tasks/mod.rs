//! Tasks: long-running tool calls the client polls for, in both revisions.
//!
//! * **2025-11-25** (core, client-directed): a `tools/call` with `params.task` on a tool whose
//!   [`TaskSupport`](duomcp_schema::TaskSupport) allows it answers at once with a
//!   `CreateTaskResult`; the client polls `tasks/get`, blocks on `tasks/result`, pages
//!   `tasks/list` and may `tasks/cancel`. The handler's `ctx.elicit` and friends reach the client
//!   on the `tasks/result` stream, tagged with the related-task `_meta`, while the task is
//!   `input_required`.
//! * **2026-07-28** (extension `io.modelcontextprotocol/tasks`, server-directed): when the
//!   request declares the extension, a task-capable tool answers with `resultType: "task"`;
//!   the client polls `tasks/get` (which inlines the result or error), answers `inputRequests`
//!   with `tasks/update` and may `tasks/cancel`. `subscriptions/listen` streams that name task
//!   ids receive `notifications/tasks`.
//!
//! Handlers do not change: mark the tool long-running and the runtime runs it as a task when
//! the client can take one, inline otherwise.
//!
//! ```
//! use duomcp::server::{Context, HandlerError, Server, ToolSpec};
//! use duomcp::server::tasks::TaskConfig;
//! use std::time::Duration;
//!
//! async fn crunch(ctx: Context) -> Result<String, HandlerError> {
//!     for _ in 0..10 {
//!         if ctx.is_cancelled() {
//!             return Err(HandlerError::Cancelled);
//!         }
//!         tokio::time::sleep(Duration::from_millis(10)).await;
//!     }
//!     Ok("crunched".into())
//! }
//!
//! let server = Server::builder()
//!     .tool(ToolSpec::new("crunch").description("Takes a while").long_running(), crunch)
//!     .tasks(TaskConfig::default().default_ttl(Duration::from_secs(600)))
//!     .build();
//! # let _ = server;
//! ```
//!
//! The task record, its lifecycle and each revision's wire forms are `duomcp_proto::tasks`
//! and `duomcp_proto::era::tasks::TaskWire` (pure, no runtime); this module runs them: `runtime.rs`
//! (live handlers, cancellation, input channels, leases; per-era parts in `runtime/legacy.rs`
//! and `runtime/modern.rs`), `store.rs` (the [`TaskStore`] trait and the in-memory store),
//! `handlers.rs` (what both eras' task calls share) and the per-era requests in `legacy.rs` and
//! `modern.rs`.
//!
//! Tasks are bound to the authenticated caller ([`Context::principal`](crate::server::Context::principal))
//! when there is one: another caller sees "not found". Without authentication a task id is a
//! bearer token (128 random bits); `tasks/list` then shows only the tasks of the calling
//! 2025-11-25 session.

mod handlers;
mod legacy;
mod modern;
pub(crate) mod runtime;
mod store;
mod wire;

/// A task's era is [`Era`](crate::era::Era); the name it had is kept so code naming it
/// compiles.
#[doc(hidden)]
pub use store::TaskEra;
pub use store::{
    InMemoryTaskStore, Renewal, StoreFuture, TaskEdit, TaskFilter, TaskOutcome, TaskRecord,
    TaskStore, TaskStoreError,
};

pub(crate) use handlers::{any_task_tool, CallPlan};
pub(crate) use legacy::{legacy_call, legacy_method, legacy_plan};
pub(crate) use modern::{modern_call, modern_method, modern_plan, ModernCall, ModernMethod};
pub(crate) use runtime::{DetachHook, LiveTask, TaskRuntime};
pub(crate) use wire::status_notification;

use std::sync::Arc;
use std::time::Duration;

/// The extension identifier of 2026-07-28 tasks.
pub const EXTENSION_ID: &str = duomcp_schema::tasks::ext::EXTENSION_ID;

/// The clock's documented path is [`crate::clock`]; kept here so code naming it compiles.
#[doc(hidden)]
pub use crate::clock::{Clock, ManualClock, SystemClock};

/// How tasks are stored, timed and retained.
///
/// ```
/// use duomcp::clock::ManualClock;
/// use duomcp::server::tasks::{InMemoryTaskStore, TaskConfig};
/// use std::time::Duration;
/// let config = TaskConfig::default()
///     .store(InMemoryTaskStore::new(100))
///     .clock(ManualClock::new(0))
///     .default_ttl(Duration::from_secs(60))
///     .max_ttl(Duration::from_secs(3600))
///     .poll_interval(Duration::from_millis(250));
/// # let _ = config;
/// ```
#[derive(Clone)]
pub struct TaskConfig {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) default_ttl: Duration,
    pub(crate) max_ttl: Duration,
    pub(crate) poll_interval: Duration,
}

impl Default for TaskConfig {
    /// In memory (10 000 tasks), system clock, ttl 1 hour (at most 24 hours), polls every second.
    fn default() -> Self {
        TaskConfig {
            store: Arc::new(InMemoryTaskStore::default()),
            clock: Arc::new(SystemClock),
            default_ttl: Duration::from_secs(3600),
            max_ttl: Duration::from_secs(24 * 3600),
            poll_interval: Duration::from_secs(1),
        }
    }
}

impl std::fmt::Debug for TaskConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskConfig")
            .field("default_ttl", &self.default_ttl)
            .field("max_ttl", &self.max_ttl)
            .field("poll_interval", &self.poll_interval)
            .finish_non_exhaustive()
    }
}

impl TaskConfig {
    /// Where records are kept (default: [`InMemoryTaskStore`]).
    pub fn store(mut self, store: impl TaskStore) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// Where the time comes from (default: [`SystemClock`]).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// How long a task is kept when the client asks for no particular ttl (2026-07-28 clients
    /// never do). Clamped to [`max_ttl`](Self::max_ttl).
    pub fn default_ttl(mut self, ttl: Duration) -> Self {
        self.default_ttl = ttl;
        self
    }

    /// The longest retention a client may ask for (2025-11-25 `task.ttl`).
    pub fn max_ttl(mut self, ttl: Duration) -> Self {
        self.max_ttl = ttl;
        self
    }

    /// The polling interval suggested to clients (`pollInterval` / `pollIntervalMs`).
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// The ttl granted for a requested one (milliseconds): at least 1 ms, at most `max_ttl`.
    pub(crate) fn grant_ttl(&self, requested: Option<u64>) -> u64 {
        duomcp_proto::tasks::grant_ttl(
            requested,
            self.default_ttl.as_millis() as u64,
            self.max_ttl.as_millis() as u64,
        )
    }
}
