//! The in-memory store: expiry, eviction, byte budgets, listing.

#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;
use duomcp_proto::era::Era::{Legacy, Modern};
use std::collections::BTreeMap;

fn record(id: &str, created: u64, ttl: Option<u64>, status: TaskStatus) -> TaskRecord {
    TaskRecord {
        id: id.into(),
        era: Modern,
        principal: None,
        scope: Some("s".into()),
        method: "tools/call".into(),
        target: "t".into(),
        status,
        status_message: None,
        created_at_ms: created,
        last_updated_at_ms: created,
        ttl_ms: ttl,
        poll_interval_ms: None,
        input_requests: BTreeMap::new(),
        client_requests: BTreeMap::new(),
        outcome: None,
    }
}

#[tokio::test]
async fn expiry_follows_the_time_given() {
    let store = InMemoryTaskStore::new(10);
    store
        .create(record("a", 1_000, Some(500), TaskStatus::Working), 1_000)
        .await
        .unwrap();
    assert!(store.get("a", 1_499).await.is_some());
    assert!(
        store.get("a", 1_500).await.is_none(),
        "expired at created + ttl"
    );
    assert!(store.is_empty(), "expired records are dropped when met");
}

#[tokio::test]
async fn a_full_store_evicts_finished_tasks_then_refuses() {
    let store = InMemoryTaskStore::new(2);
    store
        .create(record("a", 1, None, TaskStatus::Completed), 1)
        .await
        .unwrap();
    store
        .create(record("b", 2, None, TaskStatus::Working), 2)
        .await
        .unwrap();
    store
        .create(record("c", 3, None, TaskStatus::Working), 3)
        .await
        .unwrap();
    assert!(
        store.get("a", 3).await.is_none(),
        "the finished task made room"
    );
    let e = store
        .create(record("d", 4, None, TaskStatus::Working), 4)
        .await
        .unwrap_err();
    assert_eq!(e, TaskStoreError::Full(2));
    let e = store
        .create(record("b", 4, None, TaskStatus::Working), 4)
        .await
        .unwrap_err();
    assert_eq!(e, TaskStoreError::Duplicate("b".into()));
}

#[tokio::test]
async fn byte_budgets_evict_finished_tasks_then_fail_a_result_that_does_not_fit() {
    let store = InMemoryTaskStore::new(100)
        .max_bytes(10_000)
        .max_bytes_per_requestor(4_000);
    let done = |id: &str, created: u64, bytes: usize| {
        let mut r = record(id, created, None, TaskStatus::Completed);
        let mut result = Map::new();
        result.insert("blob".into(), Value::from("x".repeat(bytes)));
        r.outcome = Some(TaskOutcome::Result(result));
        r
    };
    store.create(done("a", 1, 1_500), 1).await.unwrap();
    store.create(done("b", 2, 1_500), 2).await.unwrap();
    assert!(store.bytes() > 3_000 && store.bytes() <= 4_000);
    // A third one of the same requestor (scope "s") pushes the oldest out.
    store.create(done("c", 3, 1_500), 3).await.unwrap();
    assert!(store.get("a", 3).await.is_none());
    assert!(store.get("c", 3).await.is_some());
    assert!(store.bytes() <= 4_000);
    // Another requestor's tasks are not evicted by this requestor's budget.
    let mut other = done("o", 4, 1_500);
    other.scope = Some("other".into());
    store.create(other, 4).await.unwrap();
    store.create(done("d", 5, 1_500), 5).await.unwrap();
    assert!(store.get("o", 5).await.is_some());
    // A result larger than a whole budget is not kept: the task fails, saying why.
    store
        .create(record("big", 6, None, TaskStatus::Working), 6)
        .await
        .unwrap();
    let huge = "x".repeat(50_000);
    let edited = store
        .update(
            "big",
            6,
            Box::new(move |r: &mut TaskRecord| {
                let mut result = Map::new();
                result.insert("blob".into(), Value::from(huge));
                r.outcome = Some(TaskOutcome::Result(result));
                r.status = TaskStatus::Completed;
            }),
        )
        .await
        .unwrap();
    assert_eq!(edited.status, TaskStatus::Failed);
    assert!(
        matches!(edited.outcome, Some(TaskOutcome::Error(ref e)) if e.message.contains("budget"))
    );
    assert!(store.bytes() <= 10_000, "{}", store.bytes());
    assert!(
        store.get("d", 6).await.is_some(),
        "nothing was evicted in vain"
    );
    // Removing a record gives its bytes back.
    let before = store.bytes();
    store.remove("o").await.unwrap();
    assert!(store.bytes() < before);
}

#[tokio::test]
async fn list_pages_in_creation_order_within_the_filter() {
    let store = InMemoryTaskStore::new(10);
    for (i, id) in ["x", "y", "z"].iter().enumerate() {
        store
            .create(record(id, i as u64, None, TaskStatus::Working), 0)
            .await
            .unwrap();
    }
    let mut other = record("w", 0, None, TaskStatus::Working);
    other.scope = Some("other".into());
    store.create(other, 0).await.unwrap();
    // Same scope, other era: never listed with this era's tasks.
    let mut legacy = record("v", 0, None, TaskStatus::Working);
    legacy.era = Legacy;
    store.create(legacy, 0).await.unwrap();
    let filter = TaskFilter::Scope(Modern, "s".into());
    let (page, more) = store.list(&filter, None, 2, 0).await;
    assert_eq!(
        page.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["x", "y"]
    );
    assert!(more);
    let after = page[1].list_key();
    let (page, more) = store.list(&filter, Some(&after), 2, 0).await;
    assert_eq!(
        page.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["z"]
    );
    assert!(!more);
}
