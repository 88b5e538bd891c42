//! Where task records live: the [`TaskStore`] trait and its bounded in-memory default.
//!
//! A store holds what a task *is* (status, timestamps, ttl, pending input requests, outcome);
//! what a task *does* (its running handler, the channels its input answers arrive on) stays in
//! the runtime of the process that runs it. Every method takes the current time, so expiry
//! follows whatever [`Clock`](super::Clock) the server was given.

use crate::era::Era;
use duomcp_schema::{ErrorObject, InputRequest, TaskStatus};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

pub use crate::common::StoreFuture;

/// An edit applied atomically to one record by [`TaskStore::update`].
pub type TaskEdit<'a> = Box<dyn FnOnce(&mut TaskRecord) + Send + 'a>;

/// How a task ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TaskOutcome {
    /// The underlying request's result (for `tools/call`, a `CallToolResult` object).
    Result(Map<String, Value>),
    /// The JSON-RPC error the underlying request ended with.
    Error(ErrorObject),
}

/// Which revision's wire a task was created on; a task is only visible to requests of that era.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TaskEra {
    /// 2025-11-25 core tasks (`tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`).
    Legacy,
    /// The 2026-07-28 extension `io.modelcontextprotocol/tasks`.
    Modern,
}

impl From<Era> for TaskEra {
    fn from(era: Era) -> Self {
        match era {
            Era::Legacy => TaskEra::Legacy,
            Era::Modern => TaskEra::Modern,
        }
    }
}

/// Everything a store keeps about one task.
///
/// Records are plain data (serde-serializable), so a store may persist them anywhere. The
/// runtime enforces the lifecycle rules inside [`TaskStore::update`] edits; a store only has
/// to apply each edit atomically.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
    /// The unguessable task id.
    pub id: String,
    /// The revision the task was created on.
    pub era: TaskEra,
    /// The authenticated caller that created it (its [`Principal::key`](crate::server::Principal::key));
    /// only the same caller may see it. `None`: anyone holding the id.
    pub principal: Option<String>,
    /// 2025-11-25 without a principal: the session that created it (scopes `tasks/list`).
    pub scope: Option<String>,
    /// The request method the task runs (`tools/call`).
    pub method: String,
    /// What the request targets (the tool name).
    pub target: String,
    /// Current status.
    pub status: TaskStatus,
    /// Human-readable description of the current status.
    pub status_message: Option<String>,
    /// Creation time, ms since the Unix epoch.
    pub created_at_ms: u64,
    /// Time of the last status change, ms since the Unix epoch.
    pub last_updated_at_ms: u64,
    /// Retention from creation in ms; `None` = unlimited.
    pub ttl_ms: Option<u64>,
    /// Suggested polling interval in ms.
    pub poll_interval_ms: Option<u64>,
    /// Outstanding input requests by key (2026-07-28 tasks in `input_required`).
    pub input_requests: BTreeMap<String, InputRequest>,
    /// 2025-11-25 tasks in `input_required`: the server→client requests (encoded JSON-RPC)
    /// awaiting the client's answer, by request id, so that `tasks/result` on any replica
    /// sends them (the answer reaches the handler wherever it lands). At most as many as the
    /// session lets be outstanding.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub client_requests: BTreeMap<String, String>,
    /// The outcome, once terminal (`cancelled` has none).
    pub outcome: Option<TaskOutcome>,
}

impl TaskRecord {
    /// Whether the record's ttl has run out at `now_ms`.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.ttl_ms
            .is_some_and(|ttl| self.created_at_ms.saturating_add(ttl) <= now_ms)
    }

    /// The key that orders `tasks/list`: creation time, then id.
    pub fn list_key(&self) -> String {
        format!("{:020}:{}", self.created_at_ms, self.id)
    }
}

/// Which tasks a `tasks/list` may show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskFilter {
    /// Tasks of this era created by this principal.
    Principal(TaskEra, String),
    /// Tasks of this era created without a principal in this scope (a 2025-11-25 session).
    Scope(TaskEra, String),
}

impl TaskFilter {
    /// Whether `record` passes the filter.
    pub fn matches(&self, record: &TaskRecord) -> bool {
        match self {
            TaskFilter::Principal(era, p) => {
                record.era == *era && record.principal.as_deref() == Some(p)
            }
            TaskFilter::Scope(era, s) => {
                record.era == *era
                    && record.principal.is_none()
                    && record.scope.as_deref() == Some(s)
            }
        }
    }
}

/// Why a store refused to create a task.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TaskStoreError {
    /// The store is full of tasks that are still running.
    #[error("the task store is full ({0} tasks are still running)")]
    Full(usize),
    /// A record with that id exists already.
    #[error("a task with id {0} exists already")]
    Duplicate(String),
    /// The backing storage failed.
    #[error("task storage failed: {0}")]
    Storage(String),
}

/// Storage of task records.
///
/// Implementations must apply [`update`](TaskStore::update) edits atomically with respect to
/// each other (two edits of one record never interleave), must not return records that have
/// expired at the `now_ms` they are given, and may delete expired records whenever they like.
///
/// ```
/// use duomcp::server::tasks::{InMemoryTaskStore, TaskStore};
/// # async fn demo() {
/// let store = InMemoryTaskStore::new(1000);
/// assert!(store.get("no-such-task", 0).await.is_none());
/// # }
/// ```
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new record.
    fn create(
        &self,
        record: TaskRecord,
        now_ms: u64,
    ) -> StoreFuture<'_, Result<(), TaskStoreError>>;

    /// The record with `id`, unless it is unknown or expired.
    fn get<'a>(&'a self, id: &'a str, now_ms: u64) -> StoreFuture<'a, Option<TaskRecord>>;

    /// Applies `edit` atomically to the record with `id` and returns the edited record, or
    /// `None` (without calling `edit`) when it is unknown or expired.
    fn update<'a>(
        &'a self,
        id: &'a str,
        now_ms: u64,
        edit: TaskEdit<'a>,
    ) -> StoreFuture<'a, Option<TaskRecord>>;

    /// Up to `limit` unexpired records passing `filter`, in [`TaskRecord::list_key`] order,
    /// starting after the key `after`; and whether more follow.
    fn list<'a>(
        &'a self,
        filter: &'a TaskFilter,
        after: Option<&'a str>,
        limit: usize,
        now_ms: u64,
    ) -> StoreFuture<'a, (Vec<TaskRecord>, bool)>;

    /// Deletes the record with `id`, returning it if it existed.
    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>>;

    /// `Some(every)` when other processes share this store and may run its tasks (default
    /// `None`: one process). Then the process running a task holds a *lease* on it, taken by
    /// [`create`](Self::create) and renewed with [`renew`](Self::renew) every `every`; a running
    /// task whose lease lapsed ([`lease_held`](Self::lease_held) is `false`) has lost its
    /// process and is failed by whichever process looks at it.
    fn lease_interval(&self) -> Option<std::time::Duration> {
        None
    }

    /// Renews this process's lease on the running task `id` and returns the record as it is
    /// now, with the `tasks/update` answers other processes posted for it (taken: each is
    /// returned once). Only called when [`lease_interval`](Self::lease_interval) is `Some`.
    fn renew<'a>(
        &'a self,
        id: &'a str,
        now_ms: u64,
    ) -> StoreFuture<'a, Result<Renewal, TaskStoreError>> {
        Box::pin(async move {
            Ok(Renewal {
                record: self.get(id, now_ms).await,
                answers: Map::new(),
            })
        })
    }

    /// Whether some process holds the lease on task `id` (default `false`).
    fn lease_held<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        let _ = id;
        Box::pin(async { false })
    }

    /// Drops the lease on task `id` once it is terminal (default: nothing to drop).
    fn release<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        let _ = id;
        Box::pin(async {})
    }

    /// Leaves `tasks/update` answers for task `id` to the process running it, which takes
    /// them at its next [`renew`](Self::renew) (default: refused, one process runs everything).
    fn post_answers<'a>(
        &'a self,
        id: &'a str,
        answers: Map<String, Value>,
    ) -> StoreFuture<'a, Result<(), TaskStoreError>> {
        let _ = (id, answers);
        Box::pin(async {
            Err(TaskStoreError::Storage(
                "this store is not shared between processes".into(),
            ))
        })
    }
}

/// What [`TaskStore::renew`] found.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Renewal {
    /// The record now (`None`: expired or deleted).
    pub record: Option<TaskRecord>,
    /// Answers to input requests, by key, posted by other processes since the last renewal.
    pub answers: Map<String, Value>,
}

impl Renewal {
    /// A renewal that found `record` and `answers`.
    pub fn new(record: Option<TaskRecord>, answers: Map<String, Value>) -> Self {
        Renewal { record, answers }
    }
}

/// The default store: records in memory, at most `capacity` of them, and at most
/// [`max_bytes`](Self::max_bytes) of them in all and
/// [`max_bytes_per_requestor`](Self::max_bytes_per_requestor) for one requestor (a principal,
/// else a 2025-11-25 session; the size of a record is that of its JSON form).
///
/// Expired records are dropped when met and whenever the store is full; when it is full of
/// unexpired records, the oldest finished task makes room, and if every task is still
/// running, creation fails with [`TaskStoreError::Full`]. A result that does not fit the byte
/// budgets, even once older finished tasks are gone, is not kept: the task fails with an
/// error saying so.
///
/// ```
/// use duomcp::server::tasks::InMemoryTaskStore;
/// let store = InMemoryTaskStore::new(1000)
///     .max_bytes(32 << 20)
///     .max_bytes_per_requestor(8 << 20);
/// assert_eq!(store.bytes(), 0);
/// ```
#[derive(Debug)]
pub struct InMemoryTaskStore {
    capacity: usize,
    max_bytes: usize,
    max_bytes_per_requestor: usize,
    records: Mutex<Records>,
}

/// The records, with their sizes and the totals the byte budgets are checked against.
#[derive(Debug, Default)]
struct Records {
    map: HashMap<String, TaskRecord>,
    sizes: HashMap<String, usize>,
    total: usize,
    by_requestor: HashMap<String, usize>,
}

fn requestor(r: &TaskRecord) -> &str {
    r.principal
        .as_deref()
        .or(r.scope.as_deref())
        .unwrap_or_default()
}

fn size_of(r: &TaskRecord) -> usize {
    serde_json::to_vec(r).map(|v| v.len()).unwrap_or(0)
}

impl Records {
    fn len(&self) -> usize {
        self.map.len()
    }

    fn insert(&mut self, record: TaskRecord) {
        let size = size_of(&record);
        self.total += size;
        *self
            .by_requestor
            .entry(requestor(&record).to_owned())
            .or_default() += size;
        self.sizes.insert(record.id.clone(), size);
        if let Some(old) = self.map.insert(record.id.clone(), record) {
            // Not reached (ids are checked first); kept consistent all the same.
            self.uncount(&old, 0);
        }
    }

    fn uncount(&mut self, record: &TaskRecord, size: usize) {
        self.total = self.total.saturating_sub(size);
        let key = requestor(record);
        if let Some(n) = self.by_requestor.get_mut(key) {
            *n = n.saturating_sub(size);
            if *n == 0 {
                self.by_requestor.remove(key);
            }
        }
    }

    fn remove(&mut self, id: &str) -> Option<TaskRecord> {
        let record = self.map.remove(id)?;
        let size = self.sizes.remove(id).unwrap_or(0);
        self.uncount(&record, size);
        Some(record)
    }

    /// Re-measures the record `id` after an edit.
    fn resize(&mut self, id: &str) {
        let Some(record) = self.map.get(id) else {
            return;
        };
        let new = size_of(record);
        let old = self.sizes.insert(id.to_owned(), new).unwrap_or(0);
        let key = requestor(record).to_owned();
        self.total = self.total.saturating_sub(old) + new;
        let n = self.by_requestor.entry(key).or_default();
        *n = n.saturating_sub(old) + new;
    }

    fn drop_expired(&mut self, now_ms: u64) {
        let expired: Vec<String> = self
            .map
            .values()
            .filter(|r| r.is_expired(now_ms))
            .map(|r| r.id.clone())
            .collect();
        for id in expired {
            self.remove(&id);
        }
    }

    /// The oldest finished task other than `keep` (of `requestor` only, when given).
    fn oldest_finished(&self, keep: &str, requestor_of: Option<&str>) -> Option<String> {
        self.map
            .values()
            .filter(|r| r.status.is_terminal() && r.id != keep)
            .filter(|r| requestor_of.is_none_or(|q| requestor(r) == q))
            .min_by_key(|r| (r.last_updated_at_ms, r.created_at_ms))
            .map(|r| r.id.clone())
    }
}

impl InMemoryTaskStore {
    /// A store holding at most `capacity` tasks (at least one), 64 MiB of records in all and
    /// 16 MiB per requestor.
    pub fn new(capacity: usize) -> Self {
        InMemoryTaskStore {
            capacity: capacity.max(1),
            max_bytes: 64 * 1024 * 1024,
            max_bytes_per_requestor: 16 * 1024 * 1024,
            records: Mutex::default(),
        }
    }

    /// Sets the byte budget over all records (default 64 MiB).
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// Sets the byte budget of the records of one requestor (default 16 MiB).
    pub fn max_bytes_per_requestor(mut self, bytes: usize) -> Self {
        self.max_bytes_per_requestor = bytes;
        self
    }

    /// How many records the store holds (expired ones included until they are dropped).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether the store holds no record.
    pub fn is_empty(&self) -> bool {
        self.lock().len() == 0
    }

    /// Bytes the records take now (the size of their JSON forms).
    pub fn bytes(&self) -> usize {
        self.lock().total
    }

    fn lock(&self) -> MutexGuard<'_, Records> {
        // Edits are single assignments under the lock; a poisoned map is still consistent.
        self.records.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Brings the totals within the budgets after record `id` grew: older finished tasks go
    /// first; if that is not enough, `id`'s outcome is replaced by an error saying why.
    fn fit(&self, recs: &mut Records, id: &str) {
        let Some(who) = recs.map.get(id).map(|r| requestor(r).to_owned()) else {
            return;
        };
        // A record that alone exceeds a budget cannot be made room for: shrink it at once
        // rather than evict finished tasks in vain.
        let own = recs.sizes.get(id).copied().unwrap_or(0);
        let mut shrunk = false;
        if own > self.max_bytes_per_requestor.min(self.max_bytes) {
            shrunk = true;
            Self::shrink(recs, id, own);
        }
        loop {
            let mine = recs.by_requestor.get(&who).copied().unwrap_or(0);
            let victim = if mine > self.max_bytes_per_requestor {
                recs.oldest_finished(id, Some(&who))
            } else if recs.total > self.max_bytes {
                recs.oldest_finished(id, None)
            } else {
                return;
            };
            match victim {
                Some(v) => {
                    recs.remove(&v);
                }
                None if !shrunk => {
                    shrunk = true;
                    let own = recs.sizes.get(id).copied().unwrap_or(0);
                    Self::shrink(recs, id, own);
                }
                None => return,
            }
        }
    }

    /// Replaces the outcome of record `id` (of `size` bytes) by an error saying it did not fit.
    fn shrink(recs: &mut Records, id: &str, size: usize) {
        let Some(r) = recs.map.get_mut(id) else {
            return;
        };
        if r.outcome.is_none() {
            return;
        }
        let message =
            format!("the task's result ({size} bytes) does not fit the task store's budget");
        r.outcome = Some(TaskOutcome::Error(ErrorObject {
            code: duomcp_schema::error_code::INTERNAL_ERROR,
            message: message.clone(),
            data: None,
        }));
        r.status = TaskStatus::Failed;
        r.status_message = Some(message);
        recs.resize(id);
    }

    fn create_now(&self, record: TaskRecord, now_ms: u64) -> Result<(), TaskStoreError> {
        let mut recs = self.lock();
        if recs.map.contains_key(&record.id) {
            return Err(TaskStoreError::Duplicate(record.id));
        }
        if recs.len() >= self.capacity {
            recs.drop_expired(now_ms);
        }
        if recs.len() >= self.capacity {
            match recs.oldest_finished(&record.id, None) {
                Some(id) => {
                    recs.remove(&id);
                }
                None => return Err(TaskStoreError::Full(recs.len())),
            }
        }
        let id = record.id.clone();
        recs.insert(record);
        self.fit(&mut recs, &id);
        Ok(())
    }

    fn get_now(&self, id: &str, now_ms: u64) -> Option<TaskRecord> {
        let mut recs = self.lock();
        match recs.map.get(id) {
            Some(r) if r.is_expired(now_ms) => {
                recs.remove(id);
                None
            }
            other => other.cloned(),
        }
    }

    fn update_now(&self, id: &str, now_ms: u64, edit: TaskEdit<'_>) -> Option<TaskRecord> {
        let mut recs = self.lock();
        if recs.map.get(id).is_some_and(|r| r.is_expired(now_ms)) {
            recs.remove(id);
            return None;
        }
        edit(recs.map.get_mut(id)?);
        recs.resize(id);
        self.fit(&mut recs, id);
        recs.map.get(id).cloned()
    }

    fn list_now(
        &self,
        filter: &TaskFilter,
        after: Option<&str>,
        limit: usize,
        now_ms: u64,
    ) -> (Vec<TaskRecord>, bool) {
        let mut recs = self.lock();
        recs.drop_expired(now_ms);
        let mut matching: Vec<(String, &TaskRecord)> = recs
            .map
            .values()
            .filter(|r| filter.matches(r))
            .map(|r| (r.list_key(), r))
            .filter(|(k, _)| after.is_none_or(|a| k.as_str() > a))
            .collect();
        matching.sort_by(|a, b| a.0.cmp(&b.0));
        let limit = limit.max(1);
        let more = matching.len() > limit;
        let page = matching
            .into_iter()
            .take(limit)
            .map(|(_, r)| r.clone())
            .collect();
        (page, more)
    }
}

impl Default for InMemoryTaskStore {
    /// Room for 10 000 tasks, 64 MiB in all, 16 MiB per requestor.
    fn default() -> Self {
        InMemoryTaskStore::new(10_000)
    }
}

impl TaskStore for InMemoryTaskStore {
    fn create(
        &self,
        record: TaskRecord,
        now_ms: u64,
    ) -> StoreFuture<'_, Result<(), TaskStoreError>> {
        let r = self.create_now(record, now_ms);
        Box::pin(async move { r })
    }

    fn get<'a>(&'a self, id: &'a str, now_ms: u64) -> StoreFuture<'a, Option<TaskRecord>> {
        let r = self.get_now(id, now_ms);
        Box::pin(async move { r })
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        now_ms: u64,
        edit: TaskEdit<'a>,
    ) -> StoreFuture<'a, Option<TaskRecord>> {
        let r = self.update_now(id, now_ms, edit);
        Box::pin(async move { r })
    }

    fn list<'a>(
        &'a self,
        filter: &'a TaskFilter,
        after: Option<&'a str>,
        limit: usize,
        now_ms: u64,
    ) -> StoreFuture<'a, (Vec<TaskRecord>, bool)> {
        let r = self.list_now(filter, after, limit, now_ms);
        Box::pin(async move { r })
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        let r = self.lock().remove(id);
        Box::pin(async move { r })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn record(id: &str, created: u64, ttl: Option<u64>, status: TaskStatus) -> TaskRecord {
        TaskRecord {
            id: id.into(),
            era: TaskEra::Modern,
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
        let filter = TaskFilter::Scope(TaskEra::Modern, "s".into());
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
}
