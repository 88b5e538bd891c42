//! A task's whole life in each revision, without a runtime: created by a `tools/call`, read by
//! the client from the creating result, waiting for input the way its revision asks for it,
//! answered, completed by its handler's result, then refused any further change and expired
//! at its ttl. The server's record and the client's reading of each wire form meet at every
//! step.

use super::*;
use crate::tasks::{ending, ClientStep, TaskRecord, TaskStatus};
use duomcp_schema::{CallToolResult, InputRequest};
use serde_json::{json, Map};

const CREATED: u64 = 1_000;
const TTL: u64 = 60_000;

/// What the client reads of the task the server's record writes now (`tasks/get`).
fn seen(era: Era, record: &TaskRecord) -> (TaskStatus, Value) {
    let wire = era.tasks();
    let value = wire.task_value(record);
    let view = wire.read_task(&value).unwrap();
    assert_eq!(view.task_id, record.id, "{era:?}");
    (view.status, value)
}

fn a_life(era: Era) {
    let wire = era.tasks();
    let mut record = TaskRecord::working("t-1", era, "tools/call", "slow", CREATED, Some(TTL));

    // Created: the client finds the task in the call's result and polls it.
    let created = wire.created(&record);
    let task = wire
        .task_in_result(&created, true)
        .expect("the result carries the task");
    let view = wire.read_task(&task).unwrap();
    assert_eq!(
        (view.task_id.as_str(), view.status),
        ("t-1", TaskStatus::Working)
    );
    assert_eq!(view.ttl_ms, Some(TTL as i64));
    assert_eq!(wire.next_step(view.status, &task), ClientStep::Poll);

    // The handler needs input: each revision asks its own way.
    if era.input_in_rounds() {
        assert!(record.await_input("date".into(), InputRequest::list_roots(), 2_000));
        let (status, value) = seen(era, &record);
        assert_eq!(status, TaskStatus::InputRequired);
        let ClientStep::AnswerInput(Some(asked)) = wire.next_step(status, &value) else {
            panic!("{era:?}: a 2026-07-28 client answers the input requests in the task")
        };
        assert!(asked.contains_key("date"));
        let mut answers = Map::new();
        answers.insert("date".into(), json!({ "roots": [] }));
        answers.insert("never-asked".into(), json!({}));
        let taken = record.take_answers(answers, 3_000);
        assert_eq!(taken.len(), 1, "only the answer to what was asked is taken");
    } else {
        let frame = r#"{"jsonrpc":"2.0","id":"s-1","method":"roots/list"}"#;
        assert!(record.await_client("s-1".into(), Some(frame.into()), 2_000));
        let (status, value) = seen(era, &record);
        assert_eq!(status, TaskStatus::InputRequired);
        assert_eq!(
            wire.next_step(status, &value),
            ClientStep::FetchResult,
            "a 2025-11-25 client gets the server's requests from tasks/result"
        );
        assert!(record.client_answered("s-1", true, 3_000));
    }
    assert_eq!(seen(era, &record).0, TaskStatus::Working);
    assert_eq!(record.last_updated_at_ms, 3_000);

    // The handler's result ends it.
    let (status, outcome, message) = ending(era, Ok(CallToolResult::text("done")));
    assert_eq!(status, TaskStatus::Completed);
    assert!(record.finish(status, outcome, message, 4_000));
    let (status, value) = seen(era, &record);
    assert_eq!(status, TaskStatus::Completed);
    match wire.next_step(status, &value) {
        ClientStep::Completed(Some(result)) => {
            assert_eq!(result["content"][0]["text"], "done", "{era:?}: inlined")
        }
        ClientStep::FetchResult => assert!(!era.input_in_rounds(), "2025-11-25 fetches it"),
        other => panic!("{era:?}: {other:?}"),
    }

    // Terminal: nothing moves it, not a cancel, not a late handler.
    assert!(!record.cancel(5_000));
    assert!(record.move_to(TaskStatus::Working, 5_000).is_err());
    let late = ending(era, Ok(CallToolResult::text("late")));
    assert!(!record.finish(late.0, late.1, late.2, 5_000));
    assert_eq!(record.last_updated_at_ms, 4_000);

    // Kept for its ttl from creation, then gone.
    assert!(!record.is_expired(CREATED + TTL - 1));
    assert!(record.is_expired(CREATED + TTL));
}

#[test]
fn a_task_lives_and_ends_in_each_revision() {
    for era in [Era::Legacy, Era::Modern] {
        a_life(era);
    }
}

#[test]
fn a_cancelled_task_stays_cancelled_in_each_revision() {
    for era in [Era::Legacy, Era::Modern] {
        let wire = era.tasks();
        let mut record = TaskRecord::working("t-2", era, "tools/call", "slow", CREATED, None);
        assert!(record.cancel(2_000));
        let (status, value) = seen(era, &record);
        assert_eq!(status, TaskStatus::Cancelled);
        assert_eq!(wire.next_step(status, &value), ClientStep::Cancelled);
        // The handler finishing afterwards changes nothing.
        let (status, outcome, message) = ending(era, Ok(CallToolResult::text("done")));
        assert!(!record.finish(status, outcome, message, 3_000));
        assert_eq!(record.status, TaskStatus::Cancelled);
        assert!(!record.is_expired(u64::MAX), "no ttl: kept");
    }
}
