//! Property tests of each revision's task wire: what a revision writes of a record
//! ([`TaskWire::task_value`], [`TaskWire::created`], [`TaskWire::status_notification`]), the
//! same revision reads back as that record ([`TaskWire::read_task`], [`TaskWire::task_in_result`],
//! [`TaskWire::next_step`]); and reading any JSON never panics.

use super::*;
use crate::jsonrpc::{decode, Incoming};
use crate::strategies::{any_json, json, object};
use crate::tasks::TaskOutcome;
use duomcp_schema::InputRequest;
use proptest::prelude::*;

const STATUSES: [TaskStatus; 5] = [
    TaskStatus::Working,
    TaskStatus::InputRequired,
    TaskStatus::Completed,
    TaskStatus::Failed,
    TaskStatus::Cancelled,
];

fn status() -> impl Strategy<Value = TaskStatus> {
    proptest::sample::select(&STATUSES[..])
}

fn era() -> impl Strategy<Value = Era> {
    prop_oneof![Just(Era::Legacy), Just(Era::Modern)]
}

/// A millisecond count the wire's integers hold (`i64`).
fn ms() -> impl Strategy<Value = u64> {
    0..=i64::MAX as u64
}

fn error_object() -> impl Strategy<Value = ErrorObject> {
    (
        any::<i32>(),
        ".{0,12}",
        proptest::option::of(json().prop_filter("null is no data", |d| !d.is_null())),
    )
        .prop_map(|(code, message, data)| ErrorObject {
            code,
            message,
            data,
        })
}

/// A record as a store holds it: any status, with the details that status has.
fn record() -> impl Strategy<Value = TaskRecord> {
    (
        (era(), ".{1,12}", status(), proptest::option::of(".{0,16}")),
        (
            ms(),
            ms(),
            proptest::option::of(ms()),
            proptest::option::of(ms()),
        ),
        proptest::collection::btree_set("[a-z]{1,6}", 0..3),
        object(),
        error_object(),
    )
        .prop_map(
            |((era, id, status, message), (created, updated, ttl, poll), keys, result, error)| {
                let mut r = TaskRecord::working(id, era, "tools/call", "slow", created, ttl);
                r.status = status;
                r.status_message = message;
                r.last_updated_at_ms = updated;
                r.poll_interval_ms = poll;
                match status {
                    TaskStatus::InputRequired => {
                        r.input_requests = keys
                            .into_iter()
                            .map(|k| (k, InputRequest::list_roots()))
                            .collect();
                    }
                    TaskStatus::Completed => r.outcome = Some(TaskOutcome::Result(result)),
                    TaskStatus::Failed => r.outcome = Some(TaskOutcome::Error(error)),
                    _ => {}
                }
                r
            },
        )
}

/// What the record's revision must read back from what it wrote.
fn expected(record: &TaskRecord, detailed: bool) -> TaskView {
    let modern = record.era == Era::Modern;
    TaskView {
        task_id: record.id.clone(),
        status: record.status,
        status_message: record.status_message.clone(),
        created_at: crate::time::iso8601(record.created_at_ms),
        last_updated_at: crate::time::iso8601(record.last_updated_at_ms),
        ttl_ms: record.ttl_ms.map(|t| t as i64),
        poll_interval_ms: record.poll_interval_ms.map(|p| p as i64),
        input_requests: (modern && detailed && record.status == TaskStatus::InputRequired).then(
            || {
                record
                    .input_requests
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            },
        ),
    }
}

fn same(got: &TaskView, want: &TaskView) -> Result<(), TestCaseError> {
    prop_assert_eq!(&got.task_id, &want.task_id);
    prop_assert_eq!(got.status, want.status);
    prop_assert_eq!(&got.status_message, &want.status_message);
    prop_assert_eq!(&got.created_at, &want.created_at);
    prop_assert_eq!(&got.last_updated_at, &want.last_updated_at);
    prop_assert_eq!(got.ttl_ms, want.ttl_ms);
    prop_assert_eq!(got.poll_interval_ms, want.poll_interval_ms);
    prop_assert_eq!(&got.input_requests, &want.input_requests);
    Ok(())
}

fn read(wire: &dyn TaskWire, value: &Value) -> Result<TaskView, TestCaseError> {
    wire.read_task(value)
        .map_err(|e| TestCaseError::fail(format!("{e}: {value}")))
}

proptest! {
    /// `tasks/get`'s task, as written, reads back as the record, and the client's next step
    /// follows its status (2026-07-28: with the inlined result, error or input requests).
    #[test]
    fn a_task_reads_back_as_written(record in record()) {
        let wire = record.era.wire();
        let value = wire.task_value(&record);
        same(&read(wire, &value)?, &expected(&record, true))?;
        match (wire.next_step(record.status, &value), &record.outcome) {
            (ClientStep::Cancelled, _) => prop_assert_eq!(record.status, TaskStatus::Cancelled),
            (ClientStep::Poll, _) => prop_assert_eq!(record.status, TaskStatus::Working),
            (ClientStep::FetchResult, _) => {
                prop_assert_eq!(record.era, Era::Legacy);
                prop_assert!(matches!(
                    record.status,
                    TaskStatus::InputRequired | TaskStatus::Completed | TaskStatus::Failed
                ));
            }
            (ClientStep::Completed(r), Some(TaskOutcome::Result(sent))) => {
                prop_assert_eq!(r, Some(sent));
            }
            (ClientStep::Failed(e), Some(TaskOutcome::Error(sent))) => {
                prop_assert_eq!(e.as_ref(), Some(sent));
            }
            (ClientStep::AnswerInput(requests), _) => {
                let keys: Vec<&String> = requests.map(|r| r.keys().collect()).unwrap_or_default();
                let sent: Vec<&String> = record.input_requests.keys().collect();
                prop_assert_eq!(keys, sent);
            }
            (step, outcome) => prop_assert!(false, "{:?} after {:?}", step, outcome),
        }
    }

    /// The result of a call that became the task: found in the result by the same revision
    /// (for a call that asked for a task, in 2025-11-25), and read back as the record.
    #[test]
    fn a_created_task_is_found_and_reads_back(record in record()) {
        let wire = record.era.wire();
        let created = wire.created(&record);
        let found = wire.task_in_result(&created, true);
        prop_assert!(found.is_some(), "not found in {}", created);
        if let Some(task) = found {
            same(&read(wire, &task)?, &expected(&record, false))?;
        }
    }

    /// The status notification decodes as a JSON-RPC notification whose params read back as
    /// the record; a 2026-07-28 listen stream's tag is its `_meta`.
    #[test]
    fn a_status_notification_reads_back(record in record(), tag in proptest::option::of(object())) {
        let wire = record.era.wire();
        let tag = tag.map(Value::Object);
        let bytes = wire.status_notification(&record, tag.as_ref());
        let Ok(Incoming::Notification(n)) = decode(&bytes) else {
            return Err(TestCaseError::fail(String::from_utf8_lossy(&bytes).into_owned()));
        };
        let params: Value = n
            .params
            .as_ref()
            .map(|p| serde_json::from_str(p.get()))
            .transpose()
            .map_err(|e| TestCaseError::fail(e.to_string()))?
            .unwrap_or(Value::Null);
        same(&read(wire, &params)?, &expected(&record, true))?;
        if record.era == Era::Modern {
            prop_assert_eq!(params.get("_meta"), tag.as_ref());
        }
    }

    /// Any JSON, as a task, a call's result or a polled task, in either revision: an answer
    /// or an error, never a panic.
    #[test]
    fn reading_any_json_never_panics(
        era in era(),
        value in any_json(),
        status in status(),
        augmented in any::<bool>(),
        member in prop_oneof![Just("task"), Just("resultType"), Just("result"), Just("error"),
                              Just("inputRequests"), Just("content")],
        inner in any_json(),
    ) {
        let wire = era.wire();
        let mut shaped = json!({ "taskId": "t", "status": status, "createdAt": "",
                                 "lastUpdatedAt": "", "ttl": null, "ttlMs": null });
        shaped[member] = inner;
        for v in [&value, &shaped] {
            let _ = wire.read_task(v);
            if let Some(task) = wire.task_in_result(v, augmented) {
                let _ = wire.read_task(&task);
            }
            let _ = wire.next_step(status, v);
        }
    }
}
