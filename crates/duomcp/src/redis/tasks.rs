//! [`RedisTaskStore`]: task records in Redis, so that every replica sees every task.
//!
//! A record is the JSON string `PREFIX task:{ID}`, expiring with the task's ttl (unlimited
//! ttls are capped at [`RedisTaskStore::max_ttl`]). `tasks/list` reads a sorted set per
//! requestor (`PREFIX tasks:p:ERA:PRINCIPAL` or `PREFIX tasks:s:ERA:SESSION`) whose members are
//! the records' list keys; members of expired records are dropped when a list meets them.
//!
//! An edit ([`TaskStore::update`]) is a closure run here, so it cannot run inside Redis: it
//! runs under a per-task lock (`SET NX PX`, a random token), and the write is a script that
//! writes only while the token still holds the lock. Two edits of one task, on any replicas,
//! never interleave.
//!
//! A running task is leased ([`Lease`]) by the replica running it: `PREFIX task:{ID}:lease`,
//! taken with the record and renewed by the runtime ([`TaskStore::renew`], which also reads the
//! record, so a `tasks/cancel` served by another replica stops the handler within one renewal,
//! and takes the `tasks/update` answers other replicas left in `PREFIX task:{ID}:answers`).
//!
//! On a Redis Cluster: a task's keys share its id as their hash tag (`{ID}`), so its record,
//! lease, lock and answers live in one slot and every script touches that slot only. The
//! requestor's list is in another slot: there `create` writes the record and lease (one
//! script), then adds the list member (a second round trip), and `remove` deletes the
//! record, then the member. A member whose record is gone is dropped by the next list that
//! meets it; a record whose member was not written (Redis failed between the two) is served
//! by `tasks/get` but not listed.

use super::lease::{self, Lease};
use super::{Redis, RedisError};
use crate::era::Era;
use crate::server::tasks::{
    Renewal, StoreFuture, TaskEdit, TaskFilter, TaskRecord, TaskStore, TaskStoreError,
};
use serde_json::{Map, Value};
use std::time::{Duration, Instant};

const CREATE: &str = r#"
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) == false then return 0 end
redis.call('SET', KEYS[2], ARGV[5], 'PX', ARGV[6])
if KEYS[3] ~= nil then
  redis.call('ZADD', KEYS[3], 0, ARGV[3])
  redis.call('PEXPIRE', KEYS[3], ARGV[4])
end
return 1
"#;

const RENEW: &str = r#"
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
local record = redis.call('GET', KEYS[1])
local answers = redis.call('HGETALL', KEYS[3])
if #answers > 0 then redis.call('DEL', KEYS[3]) end
return {record, answers}
"#;

const WRITE_LOCKED: &str = r#"
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
redis.call('DEL', KEYS[2])
return 1
"#;

const UNLOCK: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
"#;

/// How long one edit may hold its task's lock before another edit may take it.
const LOCK_MS: u64 = 5_000;

/// A [`TaskStore`] in Redis, shared by every replica using the same Redis and prefix.
///
/// ```no_run
/// use duomcp::redis::{Redis, RedisTaskStore};
/// use duomcp::server::tasks::TaskConfig;
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let redis = Redis::connect("redis://127.0.0.1:6379/").unwrap();
/// let tasks = TaskConfig::default().store(RedisTaskStore::new(redis));
/// # let _ = tasks;
/// # });
/// ```
pub struct RedisTaskStore {
    redis: Redis,
    max_ttl: Duration,
    lease: Lease,
    create: ::redis::Script,
    renew: ::redis::Script,
    write_locked: ::redis::Script,
    unlock: ::redis::Script,
}

impl std::fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTaskStore")
            .field("max_ttl", &self.max_ttl)
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

fn storage(e: RedisError) -> TaskStoreError {
    TaskStoreError::Storage(e.to_string())
}

/// The era's part of the keys (`legacy`, `modern`).
fn era_tag(era: Era) -> &'static str {
    era.tag()
}

impl RedisTaskStore {
    /// Tasks in `redis`; records without a ttl are kept 24 h at most; running tasks are
    /// leased with the default [`Lease`] (5 s, renewed every second).
    pub fn new(redis: Redis) -> Self {
        RedisTaskStore {
            redis,
            max_ttl: Duration::from_secs(24 * 3600),
            lease: Lease::default(),
            create: ::redis::Script::new(CREATE),
            renew: ::redis::Script::new(RENEW),
            write_locked: ::redis::Script::new(WRITE_LOCKED),
            unlock: ::redis::Script::new(UNLOCK),
        }
    }

    /// Sets the longest a record is kept (records whose own ttl is longer, or unlimited).
    pub fn max_ttl(mut self, ttl: Duration) -> Self {
        self.max_ttl = ttl.max(Duration::from_millis(1));
        self
    }

    /// Sets the lease of running tasks: a task whose replica stopped renewing it for
    /// `lease.ttl` is failed by the next replica that looks at it.
    pub fn lease(mut self, lease: Lease) -> Self {
        self.lease = lease;
        self
    }

    fn lease_key(&self, id: &str) -> String {
        format!("{}task:{{{id}}}:lease", self.redis.prefix())
    }

    fn answers_key(&self, id: &str) -> String {
        format!("{}task:{{{id}}}:answers", self.redis.prefix())
    }

    async fn renew_now(&self, id: &str, now_ms: u64) -> Result<Renewal, RedisError> {
        let mut call = self.renew.prepare_invoke();
        call.key(self.key(id))
            .key(self.lease_key(id))
            .key(self.answers_key(id))
            .arg(lease::holder())
            .arg(self.lease.ttl_ms());
        let (json, pairs): (Option<String>, Vec<String>) = self
            .redis
            .run(
                "tasks",
                |mut c| async move { call.invoke_async(&mut c).await },
            )
            .await?;
        let record = json
            .and_then(|j| serde_json::from_str::<TaskRecord>(&j).ok())
            .filter(|r| !r.is_expired(now_ms));
        let mut answers = Map::new();
        for pair in pairs.chunks_exact(2) {
            if let Ok(v) = serde_json::from_str::<Value>(&pair[1]) {
                answers.insert(pair[0].clone(), v);
            }
        }
        Ok(Renewal::new(record, answers))
    }

    fn key(&self, id: &str) -> String {
        format!("{}task:{{{id}}}", self.redis.prefix())
    }

    fn lock_key(&self, id: &str) -> String {
        format!("{}task:{{{id}}}:lock", self.redis.prefix())
    }

    fn index_key(&self, filter: &TaskFilter) -> String {
        match filter {
            TaskFilter::Principal(era, p) => {
                format!("{}tasks:p:{}:{p}", self.redis.prefix(), era_tag(*era))
            }
            TaskFilter::Scope(era, s) => {
                format!("{}tasks:s:{}:{s}", self.redis.prefix(), era_tag(*era))
            }
        }
    }

    fn index_of(&self, r: &TaskRecord) -> Option<String> {
        match (&r.principal, &r.scope) {
            (Some(p), _) => Some(self.index_key(&TaskFilter::Principal(r.era, p.clone()))),
            (None, Some(s)) => Some(self.index_key(&TaskFilter::Scope(r.era, s.clone()))),
            (None, None) => None,
        }
    }

    /// Milliseconds the record has left (at least 1), capped at `max_ttl`.
    fn ttl_left(&self, r: &TaskRecord, now_ms: u64) -> u64 {
        let cap = u64::try_from(self.max_ttl.as_millis()).unwrap_or(u64::MAX);
        let left = r.ttl_ms.map_or(cap, |ttl| {
            r.created_at_ms.saturating_add(ttl).saturating_sub(now_ms)
        });
        left.clamp(1, cap)
    }

    async fn fetch(&self, id: &str) -> Result<Option<TaskRecord>, RedisError> {
        let key = self.key(id);
        let json: Option<String> = self
            .redis
            .run("tasks", |mut c| async move {
                ::redis::cmd("GET").arg(&key).query_async(&mut c).await
            })
            .await?;
        Ok(json.and_then(|j| serde_json::from_str(&j).ok()))
    }

    async fn lock(&self, id: &str) -> Result<String, RedisError> {
        use crate::server::SealingKeyExt as _;
        let token = crate::server::SealingKey::random().id();
        let key = self.lock_key(id);
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let (k, t) = (key.clone(), token.clone());
            let got: Option<String> = self
                .redis
                .run("tasks", |mut c| async move {
                    ::redis::cmd("SET")
                        .arg(&k)
                        .arg(&t)
                        .arg("NX")
                        .arg("PX")
                        .arg(LOCK_MS)
                        .query_async(&mut c)
                        .await
                })
                .await?;
            if got.is_some() {
                return Ok(token);
            }
            if Instant::now() > deadline {
                return Err(RedisError::new(
                    "tasks",
                    "a task stayed locked by another edit",
                ));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    async fn unlock(&self, id: &str, token: &str) {
        let mut call = self.unlock.prepare_invoke();
        call.key(self.lock_key(id)).arg(token);
        let _ = self
            .redis
            .run("tasks", |mut c| async move {
                call.invoke_async::<i64>(&mut c).await
            })
            .await;
    }

    async fn update_now(
        &self,
        id: &str,
        now_ms: u64,
        edit: TaskEdit<'_>,
    ) -> Result<Option<TaskRecord>, RedisError> {
        let token = self.lock(id).await?;
        let record = match self.fetch(id).await {
            Ok(Some(r)) if !r.is_expired(now_ms) => r,
            Ok(_) => {
                self.unlock(id, &token).await;
                return Ok(None);
            }
            Err(e) => {
                self.unlock(id, &token).await;
                return Err(e);
            }
        };
        let mut record = record;
        edit(&mut record);
        let json = serde_json::to_string(&record).map_err(|e| RedisError::new("tasks", e))?;
        let mut call = self.write_locked.prepare_invoke();
        call.key(self.key(id))
            .key(self.lock_key(id))
            .arg(&token)
            .arg(json);
        let written: i64 = self
            .redis
            .run(
                "tasks",
                |mut c| async move { call.invoke_async(&mut c).await },
            )
            .await?;
        if written == 1 {
            Ok(Some(record))
        } else {
            Err(RedisError::new("tasks", "an edit outlived its lock"))
        }
    }
}

impl TaskStore for RedisTaskStore {
    fn create(
        &self,
        record: TaskRecord,
        now_ms: u64,
    ) -> StoreFuture<'_, Result<(), TaskStoreError>> {
        Box::pin(async move {
            let json = serde_json::to_string(&record)
                .map_err(|e| TaskStoreError::Storage(e.to_string()))?;
            let cluster = self.redis.is_cluster();
            let index = self.index_of(&record);
            let mut call = self.create.prepare_invoke();
            call.key(self.key(&record.id))
                .key(self.lease_key(&record.id));
            if let Some(index) = index.as_ref().filter(|_| !cluster) {
                call.key(index);
            }
            call.arg(json)
                .arg(self.ttl_left(&record, now_ms))
                .arg(record.list_key())
                .arg(u64::try_from(self.max_ttl.as_millis()).unwrap_or(u64::MAX))
                .arg(lease::holder())
                .arg(self.lease.ttl_ms());
            let created: i64 = self
                .redis
                .run(
                    "tasks",
                    |mut c| async move { call.invoke_async(&mut c).await },
                )
                .await
                .map_err(storage)?;
            if created != 1 {
                return Err(TaskStoreError::Duplicate(record.id));
            }
            if let Some(index) = index.filter(|_| cluster) {
                // The list is in another slot than the record: its own round trip.
                let member = record.list_key();
                let ttl = u64::try_from(self.max_ttl.as_millis()).unwrap_or(u64::MAX);
                self.redis
                    .run("tasks", |mut c| async move {
                        ::redis::pipe()
                            .cmd("ZADD")
                            .arg(&index)
                            .arg(0)
                            .arg(&member)
                            .ignore()
                            .cmd("PEXPIRE")
                            .arg(&index)
                            .arg(ttl)
                            .ignore()
                            .query_async::<()>(&mut c)
                            .await
                    })
                    .await
                    .map_err(storage)?;
            }
            Ok(())
        })
    }

    fn get<'a>(&'a self, id: &'a str, now_ms: u64) -> StoreFuture<'a, Option<TaskRecord>> {
        Box::pin(async move {
            match self.fetch(id).await {
                Ok(r) => r.filter(|r| !r.is_expired(now_ms)),
                Err(e) => {
                    tracing::warn!(task = id, "task store: {e}");
                    None
                }
            }
        })
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        now_ms: u64,
        edit: TaskEdit<'a>,
    ) -> StoreFuture<'a, Option<TaskRecord>> {
        Box::pin(async move {
            match self.update_now(id, now_ms, edit).await {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(task = id, "task store: {e}");
                    None
                }
            }
        })
    }

    fn list<'a>(
        &'a self,
        filter: &'a TaskFilter,
        after: Option<&'a str>,
        limit: usize,
        now_ms: u64,
    ) -> StoreFuture<'a, (Vec<TaskRecord>, bool)> {
        Box::pin(async move {
            let index = self.index_key(filter);
            let mut out = Vec::new();
            let mut from = after.map_or_else(|| "-".to_owned(), |a| format!("({a}"));
            // Pages of members; expired ones are dropped from the index as they are met.
            loop {
                let (i, f) = (index.clone(), from.clone());
                let want = limit.saturating_add(1).min(1_000);
                let members: Vec<String> = match self
                    .redis
                    .run("tasks", |mut c| async move {
                        ::redis::cmd("ZRANGEBYLEX")
                            .arg(&i)
                            .arg(&f)
                            .arg("+")
                            .arg("LIMIT")
                            .arg(0)
                            .arg(want)
                            .query_async(&mut c)
                            .await
                    })
                    .await
                {
                    Ok(m) => m,
                    Err(e) => {
                        tracing::warn!("task store: {e}");
                        return (out, false);
                    }
                };
                let page_full = members.len() == want;
                for member in &members {
                    let id = member.split_once(':').map_or(member.as_str(), |(_, id)| id);
                    match self.fetch(id).await {
                        Ok(Some(r)) if !r.is_expired(now_ms) && filter.matches(&r) => {
                            if out.len() == limit {
                                return (out, true);
                            }
                            out.push(r);
                        }
                        Ok(_) => {
                            let (i, m) = (index.clone(), member.clone());
                            let _ = self
                                .redis
                                .run("tasks", |mut c| async move {
                                    ::redis::cmd("ZREM")
                                        .arg(&i)
                                        .arg(&m)
                                        .query_async::<i64>(&mut c)
                                        .await
                                })
                                .await;
                        }
                        Err(e) => {
                            tracing::warn!("task store: {e}");
                            return (out, false);
                        }
                    }
                }
                match members.last() {
                    Some(last) if page_full => from = format!("({last}"),
                    _ => return (out, false),
                }
            }
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        Box::pin(async move {
            let record = self.fetch(id).await.ok().flatten()?;
            let key = self.key(id);
            let index = self.index_of(&record);
            let member = record.list_key();
            let cluster = self.redis.is_cluster();
            let removed = self
                .redis
                .run("tasks", |mut c| async move {
                    if cluster {
                        // Two slots: the record, then the list's member.
                        ::redis::cmd("DEL")
                            .arg(&key)
                            .query_async::<()>(&mut c)
                            .await?;
                        if let Some(index) = &index {
                            ::redis::cmd("ZREM")
                                .arg(index)
                                .arg(&member)
                                .query_async::<()>(&mut c)
                                .await?;
                        }
                        return Ok(());
                    }
                    let mut pipe = ::redis::pipe();
                    pipe.atomic().cmd("DEL").arg(&key).ignore();
                    if let Some(index) = &index {
                        pipe.cmd("ZREM").arg(index).arg(&member).ignore();
                    }
                    pipe.query_async::<()>(&mut c).await
                })
                .await;
            match removed {
                Ok(()) => Some(record),
                Err(e) => {
                    tracing::warn!(task = id, "task store: {e}");
                    None
                }
            }
        })
    }

    fn lease_interval(&self) -> Option<Duration> {
        Some(self.lease.every)
    }

    fn renew<'a>(
        &'a self,
        id: &'a str,
        now_ms: u64,
    ) -> StoreFuture<'a, Result<Renewal, TaskStoreError>> {
        Box::pin(async move { self.renew_now(id, now_ms).await.map_err(storage) })
    }

    fn lease_held<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            match lease::held(&self.redis, &self.lease_key(id)).await {
                Ok(held) => held,
                Err(e) => {
                    // Unknown is not lapsed: fail nothing while Redis cannot say.
                    tracing::warn!(task = id, "task store: {e}");
                    true
                }
            }
        })
    }

    fn release<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            if let Err(e) = lease::release(&self.redis, &self.lease_key(id)).await {
                tracing::warn!(task = id, "task store: {e}");
            }
        })
    }

    fn post_answers<'a>(
        &'a self,
        id: &'a str,
        answers: Map<String, Value>,
    ) -> StoreFuture<'a, Result<(), TaskStoreError>> {
        Box::pin(async move {
            let key = self.answers_key(id);
            let ttl = self.lease.ttl_ms().saturating_mul(12);
            self.redis
                .run("tasks", |mut c| async move {
                    let mut pipe = ::redis::pipe();
                    pipe.atomic();
                    for (k, v) in &answers {
                        pipe.cmd("HSET")
                            .arg(&key)
                            .arg(k)
                            .arg(v.to_string())
                            .ignore();
                    }
                    pipe.cmd("PEXPIRE").arg(&key).arg(ttl).ignore();
                    pipe.query_async::<()>(&mut c).await
                })
                .await
                .map_err(storage)
        })
    }
}
