//! Where task records live: the [`TaskStore`] trait and its bounded in-memory default.
//!
//! A store holds what a task *is* (status, timestamps, ttl, pending input requests, outcome);
//! what a task *does* (its running handler, the channels its input answers arrive on) stays in
//! the runtime of the process that runs it. Every method takes the current time, so expiry
//! follows whatever [`Clock`](super::Clock) the server was given.

use duomcp_schema::{ErrorObject, TaskStatus};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

pub use crate::common::StoreFuture;
pub use duomcp_proto::tasks::{TaskEra, TaskFilter, TaskOutcome, TaskRecord};

/// An edit applied atomically to one record by [`TaskStore::update`].
pub type TaskEdit<'a> = Box<dyn FnOnce(&mut TaskRecord) + Send + 'a>;

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
mod tests;
