//! Tasks as data: the record a server keeps of each task, the lifecycle every status change
//! obeys, and how a handler's outcome ends a task. Pure functions; time is a value passed in
//! (milliseconds since the Unix epoch). How each revision writes a task on the wire is
//! [`Era::tasks`] (see [`era::tasks::TaskWire`](crate::era::tasks::TaskWire)).
//!
//! The lifecycle (both revisions):
//!
//! ```text
//! working ⇄ input_required
//!    │            │
//!    └──────┬─────┘
//!           ▼
//! completed | failed | cancelled   (terminal: never changes again)
//! ```
//!
//! ```
//! use duomcp_proto::tasks::{can_move, TaskStatus};
//! assert!(can_move(TaskStatus::Working, TaskStatus::InputRequired));
//! assert!(can_move(TaskStatus::InputRequired, TaskStatus::Completed));
//! assert!(!can_move(TaskStatus::Cancelled, TaskStatus::Working));
//! ```

use crate::era::{Era, ProtocolError};
use crate::error::HandlerError;
use duomcp_schema::{CallToolResult, ContentBlock, ErrorObject, InputRequest};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;

pub use duomcp_schema::TaskStatus;

/// How a task ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TaskOutcome {
    /// The underlying request's result (for `tools/call`, a `CallToolResult` object).
    Result(Map<String, Value>),
    /// The JSON-RPC error the underlying request ended with.
    Error(ErrorObject),
}

/// The era a task was created on, before it was [`Era`] itself (the same two values, the
/// same serialized form); kept so code naming it compiles.
#[doc(hidden)]
pub type TaskEra = Era;

/// Everything a store keeps about one task.
///
/// Records are plain data (serde-serializable), so a store may persist them anywhere. The
/// lifecycle rules are the methods below ([`finish`](Self::finish), [`cancel`](Self::cancel),
/// [`await_input`](Self::await_input)…), which the runtime applies inside its store's atomic
/// edits; a store only has to apply each edit atomically.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
    /// The unguessable task id.
    pub id: String,
    /// The revision the task was created on.
    pub era: Era,
    /// The authenticated caller that created it (its principal's key); only the same caller
    /// may see it. `None`: anyone holding the id.
    pub principal: Option<String>,
    /// 2025-11-25 without a principal: the session that created it (scopes `tasks/list`).
    pub scope: Option<String>,
    /// The request method the task runs (`tools/call`).
    pub method: String,
    /// What the request targets (the tool name).
    pub target: String,
    /// Current status.
    pub status: TaskStatus,
    /// Human-readable description of the current status.
    pub status_message: Option<String>,
    /// Creation time, ms since the Unix epoch.
    pub created_at_ms: u64,
    /// Time of the last status change, ms since the Unix epoch.
    pub last_updated_at_ms: u64,
    /// Retention from creation in ms; `None` = unlimited.
    pub ttl_ms: Option<u64>,
    /// Suggested polling interval in ms.
    pub poll_interval_ms: Option<u64>,
    /// Outstanding input requests by key (2026-07-28 tasks in `input_required`).
    pub input_requests: BTreeMap<String, InputRequest>,
    /// 2025-11-25 tasks in `input_required`: the server→client requests (encoded JSON-RPC)
    /// awaiting the client's answer, by request id, so that `tasks/result` on any replica
    /// sends them (the answer reaches the handler wherever it lands). At most as many as the
    /// session lets be outstanding.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub client_requests: BTreeMap<String, String>,
    /// The outcome, once terminal (`cancelled` has none).
    pub outcome: Option<TaskOutcome>,
}

/// A status change the lifecycle forbids (out of a terminal status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IllegalTransition {
    /// The status the task is in.
    pub from: TaskStatus,
    /// The status it was asked to move to.
    pub to: TaskStatus,
}

impl fmt::Display for IllegalTransition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a task cannot move from {} to {}",
            self.from.as_str(),
            self.to.as_str()
        )
    }
}

impl std::error::Error for IllegalTransition {}

/// Whether a task in status `from` may move to `to`: any move out of `working` or
/// `input_required` (staying put included), none out of a terminal status.
pub fn can_move(from: TaskStatus, to: TaskStatus) -> bool {
    matches!(
        (from, to),
        (TaskStatus::Working | TaskStatus::InputRequired, _)
    )
}

/// The retention granted for a `requested` one (ms; `None`: `default_ms`): at least 1 ms, at
/// most `max_ms`.
///
/// ```
/// use duomcp_proto::tasks::grant_ttl;
/// assert_eq!(grant_ttl(None, 3_600_000, 86_400_000), 3_600_000);
/// assert_eq!(grant_ttl(Some(0), 3_600_000, 86_400_000), 1);
/// assert_eq!(grant_ttl(Some(u64::MAX), 3_600_000, 86_400_000), 86_400_000);
/// ```
pub fn grant_ttl(requested: Option<u64>, default_ms: u64, max_ms: u64) -> u64 {
    requested.unwrap_or(default_ms).clamp(1, max_ms.max(1))
}

/// Whether something created at `created_at_ms` and kept `ttl_ms` (`None`: forever) has
/// expired at `now_ms` (expiry is at creation + ttl).
pub fn expired(created_at_ms: u64, ttl_ms: Option<u64>, now_ms: u64) -> bool {
    ttl_ms.is_some_and(|ttl| created_at_ms.saturating_add(ttl) <= now_ms)
}

/// The message of a task cancelled by `tasks/cancel`.
pub const CANCELLED_BY_REQUEST: &str = "The task was cancelled by request.";

impl TaskRecord {
    /// A new `working` task created at `now_ms` (no principal, scope or poll interval yet).
    pub fn working(
        id: impl Into<String>,
        era: Era,
        method: impl Into<String>,
        target: impl Into<String>,
        now_ms: u64,
        ttl_ms: Option<u64>,
    ) -> Self {
        TaskRecord {
            id: id.into(),
            era,
            principal: None,
            scope: None,
            method: method.into(),
            target: target.into(),
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: now_ms,
            last_updated_at_ms: now_ms,
            ttl_ms,
            poll_interval_ms: None,
            input_requests: BTreeMap::new(),
            client_requests: BTreeMap::new(),
            outcome: None,
        }
    }

    /// Whether the record's ttl has run out at `now_ms`.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        expired(self.created_at_ms, self.ttl_ms, now_ms)
    }

    /// The key that orders `tasks/list`: creation time, then id.
    pub fn list_key(&self) -> String {
        format!("{:020}:{}", self.created_at_ms, self.id)
    }

    /// Whether a request of `era` by `principal` (a principal's key) may see the task: same
    /// era, and the same principal when the task has one (else the id is a bearer token).
    pub fn visible_to(&self, era: Era, principal: Option<&str>) -> bool {
        self.era == era
            && match &self.principal {
                Some(owner) => principal == Some(owner.as_str()),
                None => true,
            }
    }

    /// The session scope that alone may see the task, for a task of a revision with sessions
    /// created without a principal; `None`: no session check.
    pub fn session_owner(&self) -> Option<&str> {
        match (&self.principal, &self.scope) {
            (None, Some(owner)) if self.era.wire().scoped_by_session() => Some(owner),
            _ => None,
        }
    }

    /// Moves to `to` at `now_ms` (stamping `last_updated_at_ms`), if the lifecycle allows it.
    pub fn move_to(&mut self, to: TaskStatus, now_ms: u64) -> Result<(), IllegalTransition> {
        if !can_move(self.status, to) {
            return Err(IllegalTransition {
                from: self.status,
                to,
            });
        }
        self.status = to;
        self.last_updated_at_ms = now_ms;
        Ok(())
    }

    /// Ends the task in the terminal `status` with `outcome` and `message`, unless it is
    /// terminal already (then nothing changes: a cancelled task stays cancelled even if its
    /// handler finishes). Returns whether it changed.
    pub fn finish(
        &mut self,
        status: TaskStatus,
        outcome: Option<TaskOutcome>,
        message: Option<String>,
        now_ms: u64,
    ) -> bool {
        if self.move_to(status, now_ms).is_err() {
            return false;
        }
        self.outcome = outcome;
        self.status_message = message;
        self.input_requests.clear();
        true
    }

    /// `tasks/cancel`: `cancelled`, without outcome or pending input, unless terminal already.
    /// Returns whether it changed.
    pub fn cancel(&mut self, now_ms: u64) -> bool {
        if self.move_to(TaskStatus::Cancelled, now_ms).is_err() {
            return false;
        }
        self.status_message = Some(CANCELLED_BY_REQUEST.into());
        self.input_requests.clear();
        self.outcome = None;
        true
    }

    /// Sets the status message of a running task. Returns whether it did.
    pub fn set_message(&mut self, message: String, now_ms: u64) -> bool {
        if self.status.is_terminal() {
            return false;
        }
        self.status_message = Some(message);
        self.last_updated_at_ms = now_ms;
        true
    }

    /// 2026-07-28: parks the task in `input_required` with `request` under `key`, unless it is
    /// terminal. Returns whether it did.
    pub fn await_input(&mut self, key: String, request: InputRequest, now_ms: u64) -> bool {
        if self.move_to(TaskStatus::InputRequired, now_ms).is_err() {
            return false;
        }
        self.input_requests.insert(key, request);
        true
    }

    /// 2026-07-28 `tasks/update`: takes the answers to outstanding input requests (others are
    /// ignored: never issued, answered already, or of a finished task) and returns them; the
    /// task is `working` again once none is outstanding. Empty: nothing changed.
    pub fn take_answers(
        &mut self,
        responses: Map<String, Value>,
        now_ms: u64,
    ) -> Vec<(String, Value)> {
        if self.status.is_terminal() {
            return Vec::new();
        }
        let taken: Vec<(String, Value)> = responses
            .into_iter()
            .filter(|(k, _)| self.input_requests.remove(k).is_some())
            .collect();
        if taken.is_empty() {
            return taken;
        }
        self.last_updated_at_ms = now_ms;
        if self.input_requests.is_empty() && self.status == TaskStatus::InputRequired {
            self.status = TaskStatus::Working;
        }
        taken
    }

    /// 2025-11-25: a server→client request `key` for the task went out (`frame`, its encoded
    /// JSON-RPC, kept when other replicas may serve `tasks/result`); the task waits for input.
    /// Returns whether anything changed.
    pub fn await_client(&mut self, key: String, frame: Option<String>, now_ms: u64) -> bool {
        let mut changed = false;
        if let Some(frame) = frame {
            if !self.status.is_terminal() {
                self.client_requests.insert(key, frame);
                changed = true;
            }
        }
        if self.status == TaskStatus::Working {
            self.status = TaskStatus::InputRequired;
            changed = true;
        }
        if changed {
            self.last_updated_at_ms = now_ms;
        }
        changed
    }

    /// 2025-11-25: the client answered the request `key`; when it was the `last` one
    /// outstanding, the task is `working` again. Returns whether anything changed.
    pub fn client_answered(&mut self, key: &str, last: bool, now_ms: u64) -> bool {
        let mut changed = self.client_requests.remove(key).is_some();
        if last && self.status == TaskStatus::InputRequired {
            self.status = TaskStatus::Working;
            changed = true;
        }
        if changed {
            self.last_updated_at_ms = now_ms;
        }
        changed
    }
}

/// How a task ends: its terminal status, outcome and status message.
pub type Ending = (TaskStatus, Option<TaskOutcome>, Option<String>);

fn first_text(r: &CallToolResult) -> Option<String> {
    r.content.iter().find_map(|c| match c {
        ContentBlock::Text(t) => Some(t.text.clone()),
        _ => None,
    })
}

/// How a task of `era` ends when its handler returned `result`: a tool error is `failed` where
/// the revision says so ([`TaskWire::tool_error_fails`](crate::era::tasks::TaskWire::tool_error_fails)),
/// a JSON-RPC error is `failed` with the error object of the revision, a cancelled handler
/// leaves the task `cancelled`.
pub fn ending(era: Era, result: Result<CallToolResult, HandlerError>) -> Ending {
    let wire = era.wire();
    let value = |r: &CallToolResult| match serde_json::to_value(r) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let failed = |p: &ProtocolError| {
        let e = wire.error_object(p);
        let message = e.message.clone();
        (
            TaskStatus::Failed,
            Some(TaskOutcome::Error(e)),
            Some(message),
        )
    };
    match result {
        Ok(r) if r.is_error() && wire.tool_error_fails() => (
            TaskStatus::Failed,
            Some(TaskOutcome::Result(value(&r))),
            Some(first_text(&r).unwrap_or_else(|| "the tool reported an error".into())),
        ),
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
        Err(HandlerError::Protocol(p)) => failed(&p),
        Err(other) => failed(&ProtocolError::Internal(other.to_string())),
    }
}

/// Which tasks a `tasks/list` may show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskFilter {
    /// Tasks of this era created by this principal.
    Principal(Era, String),
    /// Tasks of this era created without a principal in this scope (a 2025-11-25 session).
    Scope(Era, String),
}

impl TaskFilter {
    /// Whether `record` passes the filter.
    pub fn matches(&self, record: &TaskRecord) -> bool {
        match self {
            TaskFilter::Principal(era, p) => {
                record.era == *era && record.principal.as_deref() == Some(p)
            }
            TaskFilter::Scope(era, s) => {
                record.era == *era
                    && record.principal.is_none()
                    && record.scope.as_deref() == Some(s)
            }
        }
    }
}

/// A task as a client reads it back (`tasks/get`, the creating call, a status notification),
/// in either revision; times in milliseconds as the wire gives them.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskView {
    /// The task's id.
    pub task_id: String,
    /// Its status.
    pub status: TaskStatus,
    /// What the server says about the status.
    pub status_message: Option<String>,
    /// When it was created (ISO 8601).
    pub created_at: String,
    /// When its status last changed (ISO 8601).
    pub last_updated_at: String,
    /// Retention in ms (`None`: unlimited).
    pub ttl_ms: Option<i64>,
    /// Suggested polling interval in ms.
    pub poll_interval_ms: Option<i64>,
    /// 2026-07-28, `input_required`: what the task waits for.
    pub input_requests: Option<duomcp_schema::InputRequests>,
}

/// What a client does next with a task it polls, as its revision says for its status.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientStep<'a> {
    /// The task was cancelled: the call ends so.
    Cancelled,
    /// Ask for the result (2025-11-25 `tasks/result`, which blocks until the task ends and
    /// carries the server's requests for the task meanwhile).
    FetchResult,
    /// The task completed with this inlined result (`None`: the server sent none).
    Completed(Option<&'a Map<String, Value>>),
    /// The task failed with this inlined error (`None`: the server sent none).
    Failed(Option<ErrorObject>),
    /// Answer these input requests (2026-07-28 `inputRequests`, by key).
    AnswerInput(Option<&'a Map<String, Value>>),
    /// Poll again later.
    Poll,
}
