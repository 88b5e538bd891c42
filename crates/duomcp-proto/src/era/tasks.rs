//! Tasks on the wire of each revision, for both roles: [`TaskWire`], chosen once by era
//! ([`Era::tasks`]); the server and the client ask it instead of matching on the era.
//!
//! ```
//! use duomcp_proto::tasks::{TaskRecord, TaskStatus};
//! use duomcp_proto::era::Era;
//! let record = TaskRecord::working("t1", Era::Modern, "tools/call", "x", 0, Some(60_000));
//! let created = record.era.tasks().created(&record);
//! assert_eq!(created["resultType"], "task");
//! assert_eq!(created["ttlMs"], 60_000);
//! ```

use super::{legacy, modern, Era, ProtocolError};
use crate::tasks::{ClientStep, TaskRecord, TaskView};
use duomcp_schema::{ErrorObject, TaskStatus};
use serde_json::{json, Map, Value};

/// How one revision writes tasks, and what each side does with them.
///
/// Server side: [`task_value`](Self::task_value), [`created`](Self::created),
/// [`status_notification`](Self::status_notification), [`scoped_by_session`](Self::scoped_by_session),
/// [`tool_error_fails`](Self::tool_error_fails). Client side: [`asks_for_task`](Self::asks_for_task),
/// [`task_in_result`](Self::task_in_result), [`read_task`](Self::read_task),
/// [`next_step`](Self::next_step), [`cancel_answers_task`](Self::cancel_answers_task),
/// [`has_update`](Self::has_update), [`has_list`](Self::has_list).
pub trait TaskWire: Send + Sync + 'static {
    /// The era whose tasks these are.
    fn era(&self) -> Era;

    /// The JSON-RPC error object `err` becomes in this revision (a failed task's error).
    fn error_object(&self, err: &ProtocolError) -> ErrorObject {
        self.era().error_object(err)
    }

    /// The task as `tasks/get` (and `tasks/list`, `tasks/cancel`) returns it: the 2025-11-25
    /// `Task`, the 2026-07-28 `DetailedTask` (with `inputRequests`, `result` or `error`).
    fn task_value(&self, record: &TaskRecord) -> Value;

    /// The result of a call that became the task `record` (`CreateTaskResult`, without `_meta`).
    fn created(&self, record: &TaskRecord) -> Value;

    /// The status notification of the task (encoded JSON-RPC); `tag`, the `_meta` of a
    /// 2026-07-28 listen stream, is ignored in 2025-11-25.
    fn status_notification(&self, record: &TaskRecord, tag: Option<&Value>) -> Vec<u8>;

    /// Whether a task created without a principal belongs to the session that created it
    /// (2025-11-25): other sessions neither see nor list it.
    fn scoped_by_session(&self) -> bool;

    /// Whether a tool result with `isError` makes the task `failed` (2025-11-25) rather than
    /// `completed` (2026-07-28, where `failed` is for JSON-RPC errors only).
    fn tool_error_fails(&self) -> bool;

    /// Whether the client asks for a task (`params.task`, 2025-11-25) rather than the server
    /// deciding (2026-07-28).
    fn asks_for_task(&self) -> bool;

    /// The task in the result `value` of a call, if the server answered with one;
    /// `augmented`: the call asked for a task.
    fn task_in_result(&self, value: &Value, augmented: bool) -> Option<Value>;

    /// Reads a task object of this revision.
    fn read_task(&self, raw: &Value) -> Result<TaskView, serde_json::Error>;

    /// What a client polling the task does next, given its status and the task object as the
    /// server sent it.
    fn next_step<'a>(&self, status: TaskStatus, raw: &'a Value) -> ClientStep<'a>;

    /// Whether `tasks/cancel` answers with the cancelled task and refuses a finished one
    /// (2025-11-25), rather than acknowledging a cooperative cancellation (2026-07-28).
    fn cancel_answers_task(&self) -> bool;

    /// Whether `tasks/update` exists (2026-07-28).
    fn has_update(&self) -> bool;

    /// Whether `tasks/list` exists (2025-11-25).
    fn has_list(&self) -> bool;
}

impl Era {
    /// How tasks of this era are written and handled: the one place that picks a revision's
    /// task wire.
    pub fn tasks(self) -> &'static dyn TaskWire {
        match self {
            Era::Legacy => &legacy::tasks::LegacyTasks,
            Era::Modern => &modern::tasks::ModernTasks,
        }
    }

    /// [`tasks`](Self::tasks), under the name it had on `Era`.
    #[doc(hidden)]
    pub fn wire(self) -> &'static dyn TaskWire {
        self.tasks()
    }
}

#[cfg(test)]
mod life;
#[cfg(test)]
mod props;

/// The fields both revisions' `Task` share, with the names of the ttl and poll interval keys.
pub(crate) fn task_fields(
    record: &TaskRecord,
    ttl_key: &str,
    poll_key: &str,
) -> Map<String, Value> {
    let mut t = Map::new();
    t.insert("taskId".into(), json!(record.id));
    t.insert("status".into(), json!(record.status));
    if let Some(m) = &record.status_message {
        t.insert("statusMessage".into(), json!(m));
    }
    t.insert(
        "createdAt".into(),
        json!(crate::time::iso8601(record.created_at_ms)),
    );
    t.insert(
        "lastUpdatedAt".into(),
        json!(crate::time::iso8601(record.last_updated_at_ms)),
    );
    t.insert(ttl_key.into(), json!(record.ttl_ms));
    if let Some(p) = record.poll_interval_ms {
        t.insert(poll_key.into(), json!(p));
    }
    t
}

/// The params' `_meta` with the related-task key naming `task_id` (2025-11-25: the server's
/// requests for a task and the task's result carry it).
pub fn relate_to_task(value: &mut Value, task_id: &str) {
    if let Value::Object(m) = value {
        let meta = m.entry("_meta").or_insert_with(|| json!({}));
        if let Value::Object(meta) = meta {
            meta.insert(
                duomcp_schema::meta::RELATED_TASK.into(),
                json!({ "taskId": task_id }),
            );
        }
    }
}
