//! Visibility, orphaned tasks and the terminal rule, against an in-memory store.

#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;
use crate::clock::ManualClock;
use crate::server::tasks::{InMemoryTaskStore, TaskStore};
use duomcp_proto::era::Era::{Legacy, Modern};

fn record(id: &str, principal: Option<&str>, status: TaskStatus) -> TaskRecord {
    TaskRecord {
        id: id.into(),
        era: Modern,
        principal: principal.map(str::to_owned),
        scope: None,
        method: "tools/call".into(),
        target: "t".into(),
        status,
        status_message: None,
        created_at_ms: 0,
        last_updated_at_ms: 0,
        ttl_ms: Some(1000),
        poll_interval_ms: None,
        input_requests: Default::default(),
        client_requests: Default::default(),
        outcome: None,
    }
}

async fn runtime() -> TaskRuntime {
    let store = InMemoryTaskStore::new(10);
    store
        .create(record("mine", Some("alice"), TaskStatus::Completed), 0)
        .await
        .unwrap();
    store
        .create(record("open", None, TaskStatus::Completed), 0)
        .await
        .unwrap();
    store
        .create(record("orphan", None, TaskStatus::Working), 0)
        .await
        .unwrap();
    let config = TaskConfig::default()
        .store(store)
        .clock(ManualClock::new(10));
    TaskRuntime::new(config, broadcast::channel(4).0, Default::default())
}

#[tokio::test]
async fn tasks_are_visible_only_to_their_principal_and_era() {
    let rt = runtime().await;
    assert!(rt.lookup("mine", Modern, Some("alice")).await.is_ok());
    for (who, era) in [
        (Some("mallory"), Modern),
        (None, Modern),
        (Some("alice"), Legacy),
    ] {
        let e = rt.lookup("mine", era, who).await.unwrap_err();
        assert!(
            matches!(&e, ProtocolError::InvalidParams(m) if m.contains("not yours")),
            "{e}"
        );
    }
    // Without a principal the id is a bearer token.
    assert!(rt.lookup("open", Modern, Some("anyone")).await.is_ok());
    // Foreign callers cannot cancel either, and nothing changes.
    assert!(rt.cancel("mine", Modern, Some("mallory")).await.is_err());
}

#[tokio::test]
async fn a_running_task_nobody_runs_any_more_fails() {
    let rt = runtime().await;
    let r = rt.lookup("orphan", Modern, None).await.unwrap();
    assert_eq!(r.status, TaskStatus::Failed);
    assert!(matches!(r.outcome, Some(TaskOutcome::Error(ref e)) if e.code == -32603));
}

#[tokio::test]
async fn terminal_tasks_never_change_status() {
    let rt = runtime().await;
    let r = rt
        .finish("mine", TaskStatus::Failed, None, Some("late".into()))
        .await
        .unwrap();
    assert_eq!(r.status, TaskStatus::Completed, "completed stays completed");
    match rt.cancel("open", Modern, None).await.unwrap() {
        Cancelled::AlreadyTerminal(r) => assert_eq!(r.status, TaskStatus::Completed),
        Cancelled::Now(_) => panic!("a finished task cannot be cancelled"),
    }
}
