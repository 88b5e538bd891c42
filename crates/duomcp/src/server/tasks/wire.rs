//! Task records as each revision writes them.

use super::store::{TaskEra, TaskOutcome, TaskRecord};
use crate::common::time::iso8601;
use duomcp_schema::methods::{self, NotificationMethod};
use serde_json::{json, Map, Value};

fn base(record: &TaskRecord, ttl_key: &str, poll_key: &str) -> Map<String, Value> {
    let mut t = Map::new();
    t.insert("taskId".into(), json!(record.id));
    t.insert("status".into(), json!(record.status));
    if let Some(m) = &record.status_message {
        t.insert("statusMessage".into(), json!(m));
    }
    t.insert("createdAt".into(), json!(iso8601(record.created_at_ms)));
    t.insert(
        "lastUpdatedAt".into(),
        json!(iso8601(record.last_updated_at_ms)),
    );
    t.insert(ttl_key.into(), json!(record.ttl_ms));
    if let Some(p) = record.poll_interval_ms {
        t.insert(poll_key.into(), json!(p));
    }
    t
}

/// The 2025-11-25 `Task` object.
pub(crate) fn legacy_task_value(record: &TaskRecord) -> Value {
    Value::Object(base(record, "ttl", "pollInterval"))
}

/// The 2026-07-28 `Task` fields, plus, when `detailed`, what the status carries
/// (`inputRequests`, `result` or `error`): a `DetailedTask`.
pub(crate) fn modern_task_value(record: &TaskRecord, detailed: bool) -> Value {
    let mut t = base(record, "ttlMs", "pollIntervalMs");
    if detailed {
        use duomcp_schema::TaskStatus;
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

/// `notifications/tasks/status` for a 2025-11-25 task (no related-task `_meta`: the id is in
/// the params).
pub(crate) fn legacy_status_notification(record: &TaskRecord) -> Vec<u8> {
    crate::jsonrpc::encode_notification(
        <methods::TaskStatus as NotificationMethod>::NAME,
        &legacy_task_value(record),
    )
    .unwrap_or_default()
}

/// The status notification of a task, as the era it was created in sends it: 2025-11-25
/// `notifications/tasks/status`, or the 2026-07-28 `notifications/tasks` with the
/// `DetailedTask` and the listen stream's `tag` as `_meta`.
pub(crate) fn status_notification(record: &TaskRecord, tag: Option<&Value>) -> Vec<u8> {
    match record.era {
        TaskEra::Legacy => legacy_status_notification(record),
        TaskEra::Modern => {
            let mut params = modern_task_value(record, true);
            if let Some(tag) = tag {
                params["_meta"] = tag.clone();
            }
            crate::jsonrpc::encode_notification(
                <methods::Tasks as NotificationMethod>::NAME,
                &params,
            )
            .unwrap_or_default()
        }
    }
}
