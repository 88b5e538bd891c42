//! Task records as each revision writes them.

use super::store::{TaskEra, TaskOutcome, TaskRecord};
use duomcp_schema::methods::{self, NotificationMethod};
use serde_json::{json, Map, Value};

/// An ISO 8601 / RFC 3339 UTC timestamp with milliseconds, e.g. `2025-11-25T10:30:00.000Z`.
pub(crate) fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let millis = ms % 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{millis:03}Z")
}

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

#[cfg(test)]
mod tests {
    use super::iso8601;

    #[test]
    fn formats_utc_timestamps() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(1_764_066_600_000), "2025-11-25T10:30:00.000Z");
    }
}
