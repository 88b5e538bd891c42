//! 2025-11-25 tasks (core, client-directed): the client asks for a task with `params.task`,
//! polls `tasks/get`, blocks on `tasks/result` (which carries the server's requests for the
//! task), pages `tasks/list` and may `tasks/cancel`.

use crate::era::tasks::{task_fields, TaskWire};
use crate::era::Era;
use crate::tasks::{ClientStep, TaskRecord, TaskView};
use duomcp_schema::methods::{self, NotificationMethod};
use duomcp_schema::{Task, TaskStatus};
use serde_json::{json, Value};

/// The [`TaskWire`] of 2025-11-25.
#[derive(Debug, Clone, Copy, Default)]
pub struct LegacyTasks;

impl TaskWire for LegacyTasks {
    fn era(&self) -> Era {
        Era::Legacy
    }

    /// The `Task` object.
    fn task_value(&self, record: &TaskRecord) -> Value {
        Value::Object(task_fields(record, "ttl", "pollInterval"))
    }

    /// `{"task": Task}`.
    fn created(&self, record: &TaskRecord) -> Value {
        json!({ "task": self.task_value(record) })
    }

    /// `notifications/tasks/status` (no related-task `_meta`: the id is in the params).
    fn status_notification(&self, record: &TaskRecord, _tag: Option<&Value>) -> Vec<u8> {
        crate::jsonrpc::encode_notification(
            <methods::TaskStatus as NotificationMethod>::NAME,
            &self.task_value(record),
        )
        .unwrap_or_default()
    }

    fn scoped_by_session(&self) -> bool {
        true
    }

    fn tool_error_fails(&self) -> bool {
        true
    }

    fn asks_for_task(&self) -> bool {
        true
    }

    /// A call that asked for a task answers `{"task": Task}` (a result has `content`).
    fn task_in_result(&self, value: &Value, augmented: bool) -> Option<Value> {
        if !augmented || value.get("content").is_some() {
            return None;
        }
        match value.get("task") {
            Some(t @ Value::Object(_)) => Some(t.clone()),
            _ => None,
        }
    }

    fn read_task(&self, raw: &Value) -> Result<TaskView, serde_json::Error> {
        let t: Task = serde_json::from_value(raw.clone())?;
        Ok(TaskView {
            task_id: t.task_id,
            status: t.status,
            status_message: t.status_message,
            created_at: t.created_at,
            last_updated_at: t.last_updated_at,
            ttl_ms: t.ttl,
            poll_interval_ms: t.poll_interval,
            input_requests: None,
        })
    }

    /// `tasks/result` once the task waits for input or has ended: it blocks until the end,
    /// and carries the server's requests for the task meanwhile.
    fn next_step<'a>(&self, status: TaskStatus, _raw: &'a Value) -> ClientStep<'a> {
        match status {
            TaskStatus::Cancelled => ClientStep::Cancelled,
            TaskStatus::InputRequired | TaskStatus::Completed | TaskStatus::Failed => {
                ClientStep::FetchResult
            }
            TaskStatus::Working => ClientStep::Poll,
        }
    }

    fn cancel_answers_task(&self) -> bool {
        true
    }

    fn has_update(&self) -> bool {
        false
    }

    fn has_list(&self) -> bool {
        true
    }
}
