//! The task state machine and each revision's task wire, without a runtime: time is a value
//! passed in.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use duomcp_proto::era::tasks::relate_to_task;
use duomcp_proto::era::Era;
use duomcp_proto::era::ProtocolError;
use duomcp_proto::error::HandlerError;
use duomcp_proto::tasks::{
    can_move, ending, expired, grant_ttl, ClientStep, TaskFilter, TaskOutcome, TaskRecord,
    TaskStatus,
};
use duomcp_schema::{CallToolResult, InputRequest};
use serde_json::{json, Map, Value};

const ALL: [TaskStatus; 5] = [
    TaskStatus::Working,
    TaskStatus::InputRequired,
    TaskStatus::Completed,
    TaskStatus::Failed,
    TaskStatus::Cancelled,
];

fn task(era: Era, now: u64) -> TaskRecord {
    let mut r = TaskRecord::working("t1", era, "tools/call", "slow", now, Some(60_000));
    r.poll_interval_ms = Some(250);
    r
}

fn notification(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

#[test]
fn terminal_statuses_never_move_and_live_ones_may() {
    for from in ALL {
        for to in ALL {
            assert_eq!(
                can_move(from, to),
                !from.is_terminal(),
                "{from:?} -> {to:?}"
            );
        }
    }
    for era in [Era::Legacy, Era::Modern] {
        let mut r = task(era, 5);
        assert!(r.finish(TaskStatus::Completed, None, None, 6));
        let e = r.move_to(TaskStatus::Working, 7).unwrap_err();
        assert_eq!((e.from, e.to), (TaskStatus::Completed, TaskStatus::Working));
        assert_eq!(r.last_updated_at_ms, 6, "a refused move stamps nothing");
        assert!(!r.cancel(8), "completed stays completed");
        assert!(!r.set_message("late".into(), 8));
        assert!(!r.finish(TaskStatus::Failed, None, None, 8));
        assert!(!r.await_input("k".into(), InputRequest::list_roots(), 8));
        assert!(!r.await_client("1".into(), Some("{}".into()), 8));
        assert_eq!(r.status, TaskStatus::Completed);
        assert_eq!(r.last_updated_at_ms, 6);
    }
}

#[test]
fn expiry_follows_the_clock_given() {
    let r = task(Era::Legacy, 1_000);
    assert!(!r.is_expired(60_999));
    assert!(r.is_expired(61_000), "expired at created + ttl");
    let mut forever = r.clone();
    forever.ttl_ms = None;
    assert!(!forever.is_expired(u64::MAX));
    assert!(
        expired(0, Some(u64::MAX), u64::MAX),
        "saturates, never wraps"
    );
    assert!(!expired(5, Some(u64::MAX), u64::MAX - 1));
    assert_eq!(
        grant_ttl(Some(10), 100, 0),
        1,
        "a max of 0 still grants 1 ms"
    );
}

#[test]
fn a_legacy_task_asks_through_the_session_and_fails_on_a_tool_error() {
    let wire = Era::Legacy.tasks();
    let mut r = task(Era::Legacy, 1_000);
    r.scope = Some("session-1".into());
    assert_eq!(r.session_owner(), Some("session-1"));
    // Created: `{"task": Task}` with `ttl` and `pollInterval`.
    let created = wire.created(&r);
    assert_eq!(created["task"]["taskId"], "t1");
    assert_eq!(created["task"]["ttl"], 60_000);
    assert_eq!(created["task"]["pollInterval"], 250);
    assert_eq!(created["task"]["createdAt"], "1970-01-01T00:00:01.000Z");
    // A server→client request makes it input_required until the last answer.
    assert!(r.await_client("7".into(), Some("{\"id\":7}".into()), 2_000));
    assert_eq!(r.status, TaskStatus::InputRequired);
    assert_eq!(r.last_updated_at_ms, 2_000);
    assert!(r.client_answered("7", true, 3_000));
    assert_eq!(r.status, TaskStatus::Working);
    assert!(r.client_requests.is_empty());
    // A tool error fails the task, the result kept for `tasks/result`.
    let (status, outcome, message) = ending(r.era, Ok(CallToolResult::error_text("boom")));
    assert_eq!(status, TaskStatus::Failed);
    assert!(matches!(outcome, Some(TaskOutcome::Result(_))));
    assert_eq!(message.as_deref(), Some("boom"));
    assert!(r.finish(status, outcome, message, 4_000));
    let n = notification(&wire.status_notification(&r, Some(&json!({"ignored": true}))));
    assert_eq!(n["method"], "notifications/tasks/status");
    assert_eq!(n["params"]["status"], "failed");
    assert_eq!(n["params"]["statusMessage"], "boom");
    assert!(n["params"].get("_meta").is_none());
    // What the client reads back, and does next.
    let raw = wire.task_value(&r);
    let view = wire.read_task(&raw).unwrap();
    assert_eq!(
        (view.status, view.ttl_ms),
        (TaskStatus::Failed, Some(60_000))
    );
    assert_eq!(wire.next_step(view.status, &raw), ClientStep::FetchResult);
    assert_eq!(wire.next_step(TaskStatus::Working, &raw), ClientStep::Poll);
    assert!(wire.asks_for_task() && wire.has_list() && !wire.has_update());
    assert_eq!(
        wire.task_in_result(&created, true),
        Some(created["task"].clone())
    );
    assert_eq!(wire.task_in_result(&created, false), None);
    // The result `tasks/result` returns names its task.
    let mut result = json!({ "content": [] });
    relate_to_task(&mut result, "t1");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        "t1"
    );
}

#[test]
fn a_modern_task_asks_in_rounds_and_completes_on_a_tool_error() {
    let wire = Era::Modern.tasks();
    let mut r = task(Era::Modern, 1_000);
    r.scope = Some("ignored".into());
    assert_eq!(r.session_owner(), None, "no sessions in 2026-07-28");
    let created = wire.created(&r);
    assert_eq!(created["resultType"], "task");
    assert_eq!(created["ttlMs"], 60_000);
    assert_eq!(created["pollIntervalMs"], 250);
    assert!(created.get("ttl").is_none());
    // An input request parks it; the answer (and only an outstanding key) resumes it.
    assert!(r.await_input("confirm".into(), InputRequest::list_roots(), 2_000));
    assert_eq!(r.status, TaskStatus::InputRequired);
    let raw = wire.task_value(&r);
    assert!(raw["inputRequests"].get("confirm").is_some());
    match wire.next_step(r.status, &raw) {
        ClientStep::AnswerInput(Some(requests)) => assert!(requests.contains_key("confirm")),
        other => panic!("{other:?}"),
    }
    let mut stray = Map::new();
    stray.insert("never-asked".into(), json!({}));
    assert!(r.take_answers(stray, 2_500).is_empty());
    assert_eq!(r.status, TaskStatus::InputRequired);
    let mut answers = Map::new();
    answers.insert("confirm".into(), json!({ "roots": [] }));
    let taken = r.take_answers(answers, 3_000);
    assert_eq!(taken.len(), 1);
    assert_eq!(r.status, TaskStatus::Working);
    // A tool error completes the task: `failed` is for JSON-RPC errors.
    let (status, outcome, message) = ending(r.era, Ok(CallToolResult::error_text("boom")));
    assert_eq!((status, message), (TaskStatus::Completed, None));
    assert!(r.finish(status, outcome, None, 4_000));
    let tag = json!({ "listen": 1 });
    let n = notification(&wire.status_notification(&r, Some(&tag)));
    assert_eq!(n["method"], "notifications/tasks");
    assert_eq!(n["params"]["_meta"], tag);
    assert_eq!(n["params"]["result"]["isError"], true);
    let raw = wire.task_value(&r);
    match wire.next_step(TaskStatus::Completed, &raw) {
        ClientStep::Completed(Some(result)) => assert_eq!(result["isError"], true),
        other => panic!("{other:?}"),
    }
    let view = wire.read_task(&raw).unwrap();
    assert_eq!(view.poll_interval_ms, Some(250));
    assert!(!wire.asks_for_task() && !wire.has_list() && wire.has_update());
    assert_eq!(wire.task_in_result(&created, false), Some(created.clone()));
    assert_eq!(wire.task_in_result(&json!({ "content": [] }), true), None);
}

#[test]
fn a_failed_task_carries_the_error_of_its_revision() {
    let missing = || {
        Err(HandlerError::Protocol(ProtocolError::ResourceNotFound(
            "file:///x".into(),
        )))
    };
    let (_, legacy, _) = ending(Era::Legacy, missing());
    let (status, modern, message) = ending(Era::Modern, missing());
    assert_eq!(status, TaskStatus::Failed);
    assert!(matches!(legacy, Some(TaskOutcome::Error(ref e)) if e.code == -32002));
    assert!(matches!(modern, Some(TaskOutcome::Error(ref e)) if e.code == -32602));
    assert_eq!(message.as_deref(), Some("Resource not found: file:///x"));
    let mut r = task(Era::Modern, 0);
    r.finish(status, modern, message, 1);
    let wire = r.era.wire();
    let raw = wire.task_value(&r);
    match wire.next_step(r.status, &raw) {
        ClientStep::Failed(Some(e)) => assert_eq!(e.code, -32602),
        other => panic!("{other:?}"),
    }
    let (status, outcome, _) = ending(Era::Modern, Err(HandlerError::Cancelled));
    assert_eq!((status, outcome), (TaskStatus::Cancelled, None));
}

#[test]
fn cancelling_is_once_and_visibility_is_per_era_and_principal() {
    for era in [Era::Legacy, Era::Modern] {
        let mut r = task(era, 0);
        r.await_input("k".into(), InputRequest::list_roots(), 1);
        assert!(r.cancel(2));
        assert_eq!(r.status, TaskStatus::Cancelled);
        assert!(r.input_requests.is_empty() && r.outcome.is_none());
        assert!(!r.cancel(3));
        assert_eq!(r.last_updated_at_ms, 2);
        let wire = r.era.wire();
        assert_eq!(
            wire.next_step(r.status, &wire.task_value(&r)),
            ClientStep::Cancelled
        );
    }
    let mut r = task(Era::Modern, 0);
    assert!(r.visible_to(Era::Modern, Some("anyone")));
    assert!(!r.visible_to(Era::Legacy, None));
    r.principal = Some("alice".into());
    assert!(r.visible_to(r.era, Some("alice")));
    assert!(!r.visible_to(r.era, Some("mallory")) && !r.visible_to(r.era, None));
    assert!(TaskFilter::Principal(r.era, "alice".into()).matches(&r));
    assert!(!TaskFilter::Scope(r.era, "s".into()).matches(&r));
    assert_eq!(Era::Legacy.tag(), "legacy");
    assert_eq!(r.era.tag(), "modern");
}
