//! 2026-07-28 tasks (extension `io.modelcontextprotocol/tasks`, server-directed): a call the
//! server makes a task answers `resultType: "task"`; the client polls `tasks/get` (which
//! inlines the result or error), answers `inputRequests` with `tasks/update` and may
//! `tasks/cancel` (cooperative); listen streams receive `notifications/tasks`.

use crate::era::tasks::{task_fields, TaskWire};
use crate::era::Era;
use crate::tasks::{ClientStep, TaskOutcome, TaskRecord, TaskView};
use duomcp_schema::methods::{self, NotificationMethod};
use duomcp_schema::tasks::ext::DetailedTask;
use duomcp_schema::TaskStatus;
use serde_json::{json, Value};

/// The [`TaskWire`] of 2026-07-28.
#[derive(Debug, Clone, Copy, Default)]
pub struct ModernTasks;

/// The `Task` fields, plus, when `detailed`, what the status carries (`inputRequests`,
/// `result` or `error`): a `DetailedTask`.
fn task_value(record: &TaskRecord, detailed: bool) -> Value {
    let mut t = task_fields(record, "ttlMs", "pollIntervalMs");
    if detailed {
        match (record.status, &record.outcome) {
            (TaskStatus::InputRequired, _) => {
                t.insert(
                    "inputRequests".into(),
                    serde_json::to_value(&record.input_requests).unwrap_or_else(|_| json!({})),
                );
            }
            (TaskStatus::Completed, Some(TaskOutcome::Result(r))) => {
                t.insert("result".into(), Value::Object(r.clone()));
            }
            (TaskStatus::Failed, Some(TaskOutcome::Error(e))) => {
                t.insert("error".into(), json!(e));
            }
            _ => {}
        }
    }
    Value::Object(t)
}

impl TaskWire for ModernTasks {
    fn era(&self) -> Era {
        Era::Modern
    }

    /// The `DetailedTask`.
    fn task_value(&self, record: &TaskRecord) -> Value {
        task_value(record, true)
    }

    /// The `Task` fields with `resultType: "task"`.
    fn created(&self, record: &TaskRecord) -> Value {
        let mut v = task_value(record, false);
        v["resultType"] = json!("task");
        v
    }

    /// `notifications/tasks` with the `DetailedTask` and the listen stream's `tag` as `_meta`.
    fn status_notification(&self, record: &TaskRecord, tag: Option<&Value>) -> Vec<u8> {
        let mut params = task_value(record, true);
        if let Some(tag) = tag {
            params["_meta"] = tag.clone();
        }
        crate::jsonrpc::encode_notification(<methods::Tasks as NotificationMethod>::NAME, &params)
            .unwrap_or_default()
    }

    fn scoped_by_session(&self) -> bool {
        false
    }

    fn tool_error_fails(&self) -> bool {
        false
    }

    fn asks_for_task(&self) -> bool {
        false
    }

    /// A result with `resultType: "task"` is the task.
    fn task_in_result(&self, value: &Value, _augmented: bool) -> Option<Value> {
        (value.get("resultType").and_then(Value::as_str) == Some("task")).then(|| value.clone())
    }

    fn read_task(&self, raw: &Value) -> Result<TaskView, serde_json::Error> {
        let t: DetailedTask = serde_json::from_value(raw.clone())?;
        Ok(TaskView {
            task_id: t.task_id,
            status: t.status,
            status_message: t.status_message,
            created_at: t.created_at,
            last_updated_at: t.last_updated_at,
            ttl_ms: t.ttl_ms,
            poll_interval_ms: t.poll_interval_ms,
            input_requests: t.input_requests,
        })
    }

    /// The result or error is inlined in the task; input requests are answered with
    /// `tasks/update`.
    fn next_step<'a>(&self, status: TaskStatus, raw: &'a Value) -> ClientStep<'a> {
        match status {
            TaskStatus::Cancelled => ClientStep::Cancelled,
            TaskStatus::Completed => ClientStep::Completed(match raw.get("result") {
                Some(Value::Object(r)) => Some(r),
                _ => None,
            }),
            TaskStatus::Failed => ClientStep::Failed(
                raw.get("error")
                    .and_then(|e| serde_json::from_value(e.clone()).ok()),
            ),
            TaskStatus::InputRequired => ClientStep::AnswerInput(match raw.get("inputRequests") {
                Some(Value::Object(requests)) => Some(requests),
                _ => None,
            }),
            TaskStatus::Working => ClientStep::Poll,
        }
    }

    fn cancel_answers_task(&self) -> bool {
        false
    }

    fn has_update(&self) -> bool {
        true
    }

    fn has_list(&self) -> bool {
        false
    }
}
