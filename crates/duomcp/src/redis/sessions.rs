//! [`RedisSessionStore`]: legacy sessions shared by every replica of one Redis.
//!
//! A session is a hash `PREFIX session:{ID}` with a version `v` and the record `r` (JSON),
//! expiring after the idle timeout unless touched. Touch and save are Lua scripts: one round
//! trip each, atomic. A replica's copy is refreshed only when `v` moved, so a touch reads one
//! small integer back; and with the replicas' bus a replica touches a session it serves about
//! once per `HttpConfig::session_touch_interval`, not per request (see `transport::http`'s
//! `SessionStore`).

use super::{Redis, RedisError};
use crate::transport::http::{SessionRecord, SessionStore, StoreError, StoreFuture, Touched};
use std::time::Duration;

const TOUCH: &str = r#"
if redis.call('PEXPIRE', KEYS[1], ARGV[2]) == 0 then return false end
local v = redis.call('HGET', KEYS[1], 'v')
if v == ARGV[1] then return {v} end
return {v, redis.call('HGET', KEYS[1], 'r')}
"#;

const SAVE: &str = r#"
if ARGV[3] ~= '1' and redis.call('EXISTS', KEYS[1]) == 0 then return false end
local v = redis.call('HINCRBY', KEYS[1], 'v', 1)
redis.call('HSET', KEYS[1], 'r', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return v
"#;

/// A [`SessionStore`] in Redis.
///
/// ```no_run
/// use duomcp::redis::{Redis, RedisSessionStore};
/// use duomcp::transport::http::HttpConfig;
/// use std::sync::Arc;
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let redis = Redis::connect("redis://127.0.0.1:6379/").unwrap();
/// let mut config = HttpConfig::default();
/// config.session_store = Some(Arc::new(RedisSessionStore::new(redis)));
/// # });
/// ```
pub struct RedisSessionStore {
    redis: Redis,
    touch: ::redis::Script,
    save: ::redis::Script,
}

impl std::fmt::Debug for RedisSessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSessionStore").finish_non_exhaustive()
    }
}

impl RedisSessionStore {
    /// Sessions in `redis`.
    pub fn new(redis: Redis) -> Self {
        RedisSessionStore {
            redis,
            touch: ::redis::Script::new(TOUCH),
            save: ::redis::Script::new(SAVE),
        }
    }

    fn key(&self, id: &str) -> String {
        format!("{}session:{{{id}}}", self.redis.prefix())
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

fn store_error(e: RedisError) -> StoreError {
    StoreError(Box::new(e))
}

impl SessionStore for RedisSessionStore {
    fn save<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        create: bool,
        idle: Duration,
    ) -> StoreFuture<'a, Result<Option<u64>, StoreError>> {
        Box::pin(async move {
            let json = serde_json::to_string(record)
                .map_err(|e| store_error(RedisError::new("sessions", e)))?;
            let mut call = self.save.prepare_invoke();
            call.key(self.key(id))
                .arg(json)
                .arg(millis(idle))
                .arg(if create { "1" } else { "0" });
            self.redis
                .run("sessions", |mut c| async move {
                    call.invoke_async::<Option<u64>>(&mut c).await
                })
                .await
                .map_err(store_error)
        })
    }

    fn touch<'a>(
        &'a self,
        id: &'a str,
        known: u64,
        idle: Duration,
    ) -> StoreFuture<'a, Result<Touched, StoreError>> {
        Box::pin(async move {
            let mut call = self.touch.prepare_invoke();
            call.key(self.key(id)).arg(known).arg(millis(idle));
            let reply: Option<Vec<String>> = self
                .redis
                .run("sessions", |mut c| async move {
                    call.invoke_async(&mut c).await
                })
                .await
                .map_err(store_error)?;
            let bad = |why: &str| store_error(RedisError::new("sessions", why));
            match reply.as_deref() {
                None | Some([]) => Ok(Touched::Gone),
                Some([_]) => Ok(Touched::Unchanged),
                Some([v, r, ..]) => {
                    let version = v.parse().map_err(|_| bad("a version is not a number"))?;
                    let record = serde_json::from_str::<SessionRecord>(r)
                        .map_err(|_| bad("a session record is not JSON"))?;
                    Ok(Touched::Changed(version, Box::new(record)))
                }
            }
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let key = self.key(id);
            self.redis
                .run("sessions", |mut c| async move {
                    ::redis::cmd("DEL")
                        .arg(&key)
                        .query_async::<i64>(&mut c)
                        .await
                })
                .await
                .map(drop)
                .map_err(store_error)
        })
    }
}
