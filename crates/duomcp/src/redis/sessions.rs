//! [`RedisSessionStore`]: legacy sessions shared by every replica of one Redis.
//!
//! A session is a hash `PREFIX session:{ID}` with a version `v`, the record `r` (JSON), the
//! time of its last touch `t` (ms, Redis's clock), which store (replica) made it `w`, and the
//! time of the last touch by another store than `w`, `o` (all three absent until the
//! session's first request after `initialize`). It expires after the handshake timeout until
//! that first touch, then after the idle timeout unless touched again.
//!
//! With [`with_inbox`](RedisSessionStore::with_inbox), each touch and save also writes the
//! replica's bus inbox and the time into `PREFIX session:{ID}:holders` (the time negated when
//! the toucher has no copy yet, `known` 0: see [`Holders::caching`]; a hash, same slot, expiring with
//! the record, and 60 s after the session ends so that the replica ending it can still read
//! whom to tell), with the field `@stream` naming the replica holding the session's `GET`
//! stream: [`SessionStore::holders`] reads it, so that messages about a session go to those
//! replicas alone.
//!
//! The fleet-wide bound ([`CreateBounds::max_sessions`]) is kept in two sorted sets, each
//! scored by the member's expiry (ms): `PREFIX sessions:all` (every session) and
//! `PREFIX sessions:fresh` (those that made no request after `initialize`). `create` first
//! drops the members whose score has passed (their record expired), so neither set holds
//! more than the bound plus the sessions ended since the last `create` without a release;
//! touch, save, release and remove keep a member's score with its record's expiry, and each
//! set expires when its newest member would. Create, touch, save, release and remove are Lua
//! scripts: one round trip each, atomic. A replica's copy is refreshed
//! only when `v` moved, so a touch reads one small integer back; and with the replicas' bus a
//! replica touches a session it serves about once per `HttpConfig::session_touch_interval`,
//! not per request (see `transport::http`'s `SessionStore`).
//!
//! # On a Redis Cluster
//!
//! A script may touch the keys of one slot only. The record's keys carry the session id as
//! their hash tag (`PREFIX session:{ID}`: with the event log's `PREFIX ev:{ID}:…`, one slot
//! per session); the fleet's two sets share the tag `{sessions}` (`PREFIX {sessions}:all`,
//! `PREFIX {sessions}:fresh`: one slot for the fleet bound). So each operation is two
//! scripts, one per slot, in two round trips: the record's, then the sets' (touch, save,
//! release, remove), or for `create` the sets' first (the bound: admit and pick the
//! never-used sessions to end), then the record's, then one `DEL` per session ended, which
//! ends it only while it is still never-used. What is not atomic any more, and what it
//! costs: a set member whose record was never written (Redis failed between the two) stays
//! until its score (the handshake timeout) passes, counted in the bound until then; a
//! session touched for the first time between its eviction and its `DEL` is kept, and the
//! fleet holds one more session than the bound until one ends.

use super::{Redis, RedisError};
use crate::transport::http::{
    CreateBounds, Holders, SessionRecord, SessionStore, StoreError, StoreFuture, Touched,
    MAX_HOLDERS,
};
use std::time::Duration;

/// Lua: Redis's clock in ms, and "extend the expiry of a set to at least `ttl` ms from now".
const COMMON: &str = r#"
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function keep_set(key, ttl)
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end
-- Records `holder` ('' when this replica has no name: nothing) among a session's holders
-- (hash `key`, expiring after `ttl` ms): the time of its touch or save, negative when it
-- touched with no copy yet (`known` '0': it restores one from this answer and trusts
-- nothing, so no invalidation need reach it), and never turned negative while it marks a copy.
local function note_holder(key, holder, known, now, ttl)
  if holder == '' then return end
  local mark = now
  if known == '0' then
    local was = tonumber(redis.call('HGET', key, holder))
    if not (was and was > 0) then mark = -now end
  end
  redis.call('HSET', key, holder, mark)
  redis.call('PEXPIRE', key, ttl)
end
"#;

// KEYS: record, all, fresh, holders. ARGV: known version, idle ms, id, sets' ttl ms, this
// store, this replica's holder name ('' when it has none).
const TOUCH: &str = r#"
if redis.call('PEXPIRE', KEYS[1], ARGV[2]) == 0 then
  redis.call('ZREM', KEYS[2], ARGV[3])
  redis.call('ZREM', KEYS[3], ARGV[3])
  return false
end
local now = now_ms()
note_holder(KEYS[4], ARGV[6], ARGV[1], now, ARGV[2])
local h = redis.call('HMGET', KEYS[1], 't', 'w', 'v')
if h[2] and h[2] ~= ARGV[5] then
  redis.call('HSET', KEYS[1], 't', now, 'w', ARGV[5], 'o', h[1])
else
  redis.call('HSET', KEYS[1], 't', now, 'w', ARGV[5])
end
-- Its first touch: it leaves the never-used sessions.
if not h[2] then redis.call('ZREM', KEYS[3], ARGV[3]) end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[3])
keep_set(KEYS[2], tonumber(ARGV[4]))
local v = h[3]
if v == ARGV[1] then return {v} end
return {v, redis.call('HGET', KEYS[1], 'r')}
"#;

// KEYS: record, all, fresh, holders. ARGV: record JSON, idle ms, id, this replica's holder
// name ('' when it has none: the saver's copy is current, a holder with a copy).
const SAVE: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local v = redis.call('HINCRBY', KEYS[1], 'v', 1)
redis.call('HSET', KEYS[1], 'r', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local ttl = tonumber(ARGV[2])
local now = now_ms()
note_holder(KEYS[4], ARGV[4], 'saved', now, ARGV[2])
redis.call('ZADD', KEYS[2], 'XX', now + ttl, ARGV[3])
keep_set(KEYS[2], ttl)
return v
"#;

// KEYS: record, all, fresh. ARGV: record JSON, handshake ms, max sessions, id, record key
// prefix (the key is prefix .. id .. '}'), the fleet set's ttl ms at least (the new
// record's), evictions at most.
const CREATE: &str = r#"
local now = now_ms()
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local max = tonumber(ARGV[3])
local evictions = tonumber(ARGV[7])
while redis.call('ZCARD', KEYS[2]) >= max do
  if evictions <= 0 then return false end
  evictions = evictions - 1
  local victim = redis.call('ZRANGE', KEYS[3], 0, 0)
  if #victim == 0 then return false end
  redis.call('DEL', ARGV[5] .. victim[1] .. '}')
  redis.call('ZREM', KEYS[2], victim[1])
  redis.call('ZREM', KEYS[3], victim[1])
end
local v = redis.call('HINCRBY', KEYS[1], 'v', 1)
redis.call('HSET', KEYS[1], 'r', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local deadline = now + tonumber(ARGV[2])
redis.call('ZADD', KEYS[2], deadline, ARGV[4])
redis.call('ZADD', KEYS[3], deadline, ARGV[4])
keep_set(KEYS[2], tonumber(ARGV[6]))
keep_set(KEYS[3], tonumber(ARGV[2]))
return v
"#;

// KEYS: record, all, fresh, holders. ARGV: id, quiet ms, this store, holders' linger ms.
// Kept (0) when another store touched it less than `quiet` ago: `t` when the last touch was
// another's, else `o`.
const RELEASE: &str = r#"
local h = redis.call('HMGET', KEYS[1], 't', 'w', 'o')
local other = h[3]
if h[2] and h[2] ~= ARGV[3] then other = h[1] end
if other and tonumber(other) and tonumber(other) > now_ms() - tonumber(ARGV[2]) then
  return 0
end
redis.call('PEXPIRE', KEYS[4], ARGV[4])
local gone = redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return gone
"#;

// KEYS: record, all, fresh, holders. ARGV: id, holders' linger ms.
const REMOVE: &str = r#"
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('PEXPIRE', KEYS[4], ARGV[2])
return redis.call('DEL', KEYS[1])
"#;

// Cluster: the record of a session ended (KEYS: record, holders). ARGV: holders' linger ms.
const R_REMOVE: &str = r#"
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return redis.call('DEL', KEYS[1])
"#;

// Cluster: the record's scripts (KEYS: record) and the sets' (KEYS: all, fresh).

// KEYS: record, holders. ARGV: known version, idle ms, this store, this replica's holder
// name ('' when it has none). Returns false (gone), or {first touch 0/1, version[, record]}.
const R_TOUCH: &str = r#"
if redis.call('PEXPIRE', KEYS[1], ARGV[2]) == 0 then return false end
local now = now_ms()
note_holder(KEYS[2], ARGV[4], ARGV[1], now, ARGV[2])
local h = redis.call('HMGET', KEYS[1], 't', 'w', 'v')
if h[2] and h[2] ~= ARGV[3] then
  redis.call('HSET', KEYS[1], 't', now, 'w', ARGV[3], 'o', h[1])
else
  redis.call('HSET', KEYS[1], 't', now, 'w', ARGV[3])
end
local first = 0
if not h[2] then first = 1 end
local v = h[3]
if v == ARGV[1] then return {first, v} end
return {first, v, redis.call('HGET', KEYS[1], 'r')}
"#;

// ARGV: id, idle ms, first touch 0/1, sets' ttl ms.
const S_TOUCH: &str = r#"
if ARGV[3] == '1' then redis.call('ZREM', KEYS[2], ARGV[1]) end
redis.call('ZADD', KEYS[1], now_ms() + tonumber(ARGV[2]), ARGV[1])
keep_set(KEYS[1], tonumber(ARGV[4]))
return 1
"#;

// KEYS: record, holders. ARGV: record JSON, idle ms, this replica's holder name (as SAVE).
const R_SAVE: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local v = redis.call('HINCRBY', KEYS[1], 'v', 1)
redis.call('HSET', KEYS[1], 'r', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
note_holder(KEYS[2], ARGV[3], 'saved', now_ms(), ARGV[2])
return v
"#;

// ARGV: id, idle ms.
const S_SAVE: &str = r#"
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], 'XX', now_ms() + ttl, ARGV[1])
keep_set(KEYS[1], ttl)
return 1
"#;

// ARGV: max sessions, id, handshake ms, the fleet set's ttl ms at least, evictions at most.
// Returns false (full), or the ids of the never-used sessions to end.
const S_ADMIT: &str = r#"
local now = now_ms()
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local max = tonumber(ARGV[1])
local evictions = tonumber(ARGV[5])
local victims = {}
while redis.call('ZCARD', KEYS[1]) >= max do
  if evictions <= 0 then return false end
  evictions = evictions - 1
  local victim = redis.call('ZRANGE', KEYS[2], 0, 0)
  if #victim == 0 then return false end
  redis.call('ZREM', KEYS[1], victim[1])
  redis.call('ZREM', KEYS[2], victim[1])
  victims[#victims + 1] = victim[1]
end
local deadline = now + tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], deadline, ARGV[2])
redis.call('ZADD', KEYS[2], deadline, ARGV[2])
keep_set(KEYS[1], tonumber(ARGV[4]))
keep_set(KEYS[2], tonumber(ARGV[3]))
return victims
"#;

// ARGV: record JSON, handshake ms.
const R_CREATE: &str = r#"
local v = redis.call('HINCRBY', KEYS[1], 'v', 1)
redis.call('HSET', KEYS[1], 'r', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return v
"#;

// Ends a session picked for eviction only while it is still never-used.
const R_EVICT: &str = r#"
if redis.call('HEXISTS', KEYS[1], 'w') == 1 then return 0 end
return redis.call('DEL', KEYS[1])
"#;

// KEYS: record, holders. ARGV: quiet ms, this store, holders' linger ms. As RELEASE, on the
// record's slot alone.
const R_RELEASE: &str = r#"
local h = redis.call('HMGET', KEYS[1], 't', 'w', 'o')
local other = h[3]
if h[2] and h[2] ~= ARGV[2] then other = h[1] end
if other and tonumber(other) and tonumber(other) > now_ms() - tonumber(ARGV[1]) then
  return 0
end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return redis.call('DEL', KEYS[1])
"#;

// ARGV: id.
const S_FORGET: &str = r#"
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
"#;

// The holders of a session (both modes; KEYS: holders). ARGV: within ms, most holders, prune
// ms. Returns false (more than the most), or {stream holder or '', holder, …} of the
// holders that touched it within the window, '~' before those without a copy (a negative
// mark); forgets those older than the prune time.
const HOLDERS: &str = r#"
local now = now_ms()
local h = redis.call('HGETALL', KEYS[1])
local since = now - tonumber(ARGV[1])
local dead = now - tonumber(ARGV[3])
local most = tonumber(ARGV[2])
local out = {''}
for i = 1, #h, 2 do
  local f, mark = h[i], tonumber(h[i + 1])
  local t = mark and math.abs(mark)
  if f == '@stream' then
    out[1] = h[i + 1]
  elseif t and t >= since then
    if #out > most then return false end
    if mark < 0 then f = '~' .. f end
    out[#out + 1] = f
  elseif t == nil or t < dead then
    redis.call('HDEL', KEYS[1], f)
  end
end
return out
"#;

// The holder of the session's GET stream (KEYS: holders). ARGV: this replica's holder name,
// '1' (opened) or '0' (its last one closed: forgotten when it is still this replica's).
const STREAM: &str = r#"
if ARGV[2] == '1' then
  if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], '@stream', ARGV[1]) end
elseif redis.call('HGET', KEYS[1], '@stream') == ARGV[1] then
  redis.call('HDEL', KEYS[1], '@stream')
end
return 1
"#;

// A request id claimed by one replica (KEYS: the claim). ARGV: this store, ttl ms. 1: claimed
// (or already this store's), 0: another store's.
const CLAIM: &str = r#"
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end
return 0
"#;

// Ends this store's claim (KEYS: the claim). ARGV: this store.
const UNCLAIM: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"#;

/// Holders whose last touch is older than this (or the asked window, when longer) are
/// forgotten when the holders are read: a session's holders hash holds the replicas of about
/// this long (replicas restarted under it leave theirs behind until then, or until the
/// session's idle expiry ends the hash).
const HOLDER_PRUNE: Duration = Duration::from_secs(3600);

/// How long a session's holders outlive its record (ended, or released): long enough for the
/// replica that ended it to read them after the end and tell them (twice the longest touch
/// interval, with room), short enough that ended sessions leave little behind.
const HOLDER_LINGER: Duration = Duration::from_secs(60);

/// The scripts of a store on a Redis Cluster (see the module's documentation).
struct ClusterScripts {
    touch: ::redis::Script,
    sets_touch: ::redis::Script,
    save: ::redis::Script,
    sets_save: ::redis::Script,
    admit: ::redis::Script,
    create: ::redis::Script,
    evict: ::redis::Script,
    release: ::redis::Script,
    remove: ::redis::Script,
    forget: ::redis::Script,
}

impl ClusterScripts {
    fn new() -> Self {
        let with_common = |body: &str| ::redis::Script::new(&format!("{COMMON}{body}"));
        ClusterScripts {
            touch: with_common(R_TOUCH),
            sets_touch: with_common(S_TOUCH),
            save: with_common(R_SAVE),
            sets_save: with_common(S_SAVE),
            admit: with_common(S_ADMIT),
            create: ::redis::Script::new(R_CREATE),
            evict: ::redis::Script::new(R_EVICT),
            release: with_common(R_RELEASE),
            remove: ::redis::Script::new(R_REMOVE),
            forget: ::redis::Script::new(S_FORGET),
        }
    }
}

/// Sessions a `create` may end to make room for one (the bound was lowered meanwhile, for
/// example); more and `initialize` is refused this time.
const MAX_EVICTIONS: u32 = 16;

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
    create: ::redis::Script,
    release: ::redis::Script,
    remove: ::redis::Script,
    /// Set on a Redis Cluster: the scripts split by slot.
    cluster: Option<ClusterScripts>,
    /// Names this store (this replica) in the records it touches.
    me: String,
    /// This replica's name among a session's holders (its bus inbox, 16 hex digits), when it
    /// has one ([`with_inbox`](Self::with_inbox)): holders are tracked only then.
    holder: String,
    holders: ::redis::Script,
    stream: ::redis::Script,
    claim: ::redis::Script,
    unclaim: ::redis::Script,
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
            touch: ::redis::Script::new(&format!("{COMMON}{TOUCH}")),
            save: ::redis::Script::new(&format!("{COMMON}{SAVE}")),
            create: ::redis::Script::new(&format!("{COMMON}{CREATE}")),
            release: ::redis::Script::new(&format!("{COMMON}{RELEASE}")),
            remove: ::redis::Script::new(REMOVE),
            cluster: redis.is_cluster().then(ClusterScripts::new),
            redis,
            me: store_name(),
            holder: String::new(),
            holders: ::redis::Script::new(&format!("{COMMON}{HOLDERS}")),
            stream: ::redis::Script::new(STREAM),
            claim: ::redis::Script::new(CLAIM),
            unclaim: ::redis::Script::new(UNCLAIM),
        }
    }

    /// Tracks which replicas hold a copy of each session, naming this one by its bus inbox
    /// ([`Bus::inbox`](crate::server::bus::Bus::inbox)), so that messages about a session go
    /// to those replicas alone ([`SessionStore::holders`]; `HttpConfig::redis` does this with
    /// its [`RedisBus`](super::RedisBus)). Costs one `HSET` inside each touch's script, and a
    /// hash per session (`PREFIX session:{ID}:holders`, one field per replica that touched it,
    /// expiring with the session).
    ///
    /// ```no_run
    /// use duomcp::redis::{Redis, RedisBus, RedisSessionStore};
    /// use duomcp::server::bus::Bus;
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let redis = Redis::connect("redis://127.0.0.1:6379/").unwrap();
    /// let bus = RedisBus::new(&redis);
    /// let store = RedisSessionStore::new(redis).with_inbox(bus.inbox().unwrap());
    /// # let _ = store;
    /// # });
    /// ```
    pub fn with_inbox(mut self, inbox: u64) -> Self {
        self.holder = format!("{inbox:016x}");
        self
    }

    /// The claim on request id `request` (JSON text) of session `id`: `PREFIX
    /// session:{ID}:req:REQUEST` (the session's slot).
    fn claim_key(&self, id: &str, request: &str) -> String {
        format!("{}:req:{request}", self.key(id))
    }

    fn holders_key(&self, id: &str) -> String {
        format!("{}:holders", self.key(id))
    }

    /// The fleet's two sets: `PREFIX sessions:all` and `…:fresh` on one Redis, hash-tagged
    /// `PREFIX {sessions}:all` and `…:fresh` on a cluster (one slot).
    fn set_keys(&self) -> [String; 2] {
        let prefix = self.redis.prefix();
        if self.cluster.is_some() {
            [
                format!("{prefix}{{sessions}}:all"),
                format!("{prefix}{{sessions}}:fresh"),
            ]
        } else {
            [
                format!("{prefix}sessions:all"),
                format!("{prefix}sessions:fresh"),
            ]
        }
    }

    /// A script on the fleet's sets (cluster).
    fn sets_call<'s>(&self, script: &'s ::redis::Script) -> ::redis::ScriptInvocation<'s> {
        let mut call = script.prepare_invoke();
        let [all, fresh] = self.set_keys();
        call.key(all).key(fresh);
        call
    }

    /// A script on the record of `id` alone (cluster).
    fn record_call<'s>(
        &self,
        script: &'s ::redis::Script,
        id: &str,
    ) -> ::redis::ScriptInvocation<'s> {
        let mut call = script.prepare_invoke();
        call.key(self.key(id));
        call
    }

    /// Forgets `id` in the fleet's sets (cluster).
    async fn forget(&self, c: &ClusterScripts, id: &str) -> Result<(), StoreError> {
        let mut call = self.sets_call(&c.forget);
        call.arg(id);
        self.run::<i64>(call).await.map(drop)
    }

    /// `create` on a cluster: the bound, the record, then the evictions.
    async fn create_cluster(
        &self,
        c: &ClusterScripts,
        id: &str,
        json: String,
        handshake: Duration,
        max_sessions: usize,
        evictions: u32,
    ) -> Result<Option<u64>, StoreError> {
        let mut admit = self.sets_call(&c.admit);
        admit
            .arg(max_sessions)
            .arg(id)
            .arg(millis(handshake))
            .arg(millis(handshake))
            .arg(evictions);
        let Some(victims) = self.run::<Option<Vec<String>>>(admit).await? else {
            return Ok(None);
        };
        let mut create = self.record_call(&c.create, id);
        create.arg(json).arg(millis(handshake));
        let version: u64 = self.run(create).await?;
        for victim in victims.iter().take(MAX_EVICTIONS as usize) {
            let evict = self.record_call(&c.evict, victim);
            if let Err(e) = self.run::<i64>(evict).await {
                // Its record expires by itself (the handshake timeout).
                tracing::warn!("a never-used session not ended to make room: {e}");
            }
        }
        Ok(Some(version))
    }

    fn key(&self, id: &str) -> String {
        format!("{}{id}}}", self.key_prefix())
    }

    /// The record key without the id and the closing brace.
    fn key_prefix(&self) -> String {
        format!("{}session:{{", self.redis.prefix())
    }

    /// The record of `id` and the two sorted sets of the fleet bound.
    fn keys(&self, call: &mut ::redis::ScriptInvocation<'_>, id: &str) {
        let prefix = self.redis.prefix();
        call.key(self.key(id))
            .key(format!("{prefix}sessions:all"))
            .key(format!("{prefix}sessions:fresh"))
            .key(self.holders_key(id));
    }

    async fn run<T: ::redis::FromRedisValue + Send + 'static>(
        &self,
        call: ::redis::ScriptInvocation<'_>,
    ) -> Result<T, StoreError> {
        self.redis
            .run("sessions", |mut c| async move {
                call.invoke_async::<T>(&mut c).await
            })
            .await
            .map_err(store_error)
    }
}

/// 16 random hex digits (a clock-derived name when the OS has no randomness: it only tells
/// this replica's touches from the others').
fn store_name() -> String {
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        return format!("{:016x}", nanos as u64 ^ u64::from(std::process::id()));
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// A touch's answer (`[version]` unchanged, `[version, record]` changed, nothing: gone).
fn touched(reply: Option<&[String]>) -> Result<Touched, StoreError> {
    let bad = |why: &str| store_error(RedisError::new("sessions", why));
    match reply {
        None | Some([]) => Ok(Touched::Gone),
        Some([_]) => Ok(Touched::Unchanged),
        Some([v, r, ..]) => {
            let version = v.parse().map_err(|_| bad("a version is not a number"))?;
            let record = serde_json::from_str::<SessionRecord>(r)
                .map_err(|_| bad("a session record is not JSON"))?;
            Ok(Touched::Changed(version, Box::new(record)))
        }
    }
}

impl RedisSessionStore {
    /// `touch` on a cluster: the record, then the fleet's sets.
    async fn touch_cluster(
        &self,
        c: &ClusterScripts,
        id: &str,
        known: u64,
        idle: Duration,
    ) -> Result<Touched, StoreError> {
        let mut call = self.record_call(&c.touch, id);
        call.key(self.holders_key(id));
        call.arg(known)
            .arg(millis(idle))
            .arg(&self.me)
            .arg(&self.holder);
        let reply: Option<Vec<String>> = self.run(call).await?;
        let Some((first, rest)) = reply.as_deref().and_then(<[String]>::split_first) else {
            self.forget(c, id).await?;
            return Ok(Touched::Gone);
        };
        let mut sets = self.sets_call(&c.sets_touch);
        sets.arg(id).arg(millis(idle)).arg(first).arg(millis(idle));
        self.run::<i64>(sets).await?;
        touched(Some(rest))
    }
}

/// The holders script's answer (`[stream or '', holder, …]`, `~` before a holder without a
/// copy); `None` when a name is not an inbox (another kind of store wrote it: nothing can be
/// targeted then).
fn holders_of(reply: &[String]) -> Option<Holders> {
    let inbox = |name: &str| (name.len() == 16).then(|| u64::from_str_radix(name, 16).ok())?;
    let (stream, names) = reply.split_first()?;
    let stream = if stream.is_empty() {
        None
    } else {
        Some(inbox(stream)?)
    };
    let mut holders = Holders {
        stream,
        ..Holders::default()
    };
    for name in names {
        match name.strip_prefix('~') {
            Some(name) => holders.replicas.push(inbox(name)?),
            None => {
                let replica = inbox(name)?;
                holders.replicas.push(replica);
                holders.caching.push(replica);
            }
        }
    }
    Some(holders)
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
            if let Some(c) = &self.cluster {
                if create {
                    return self.create_cluster(c, id, json, idle, usize::MAX, 0).await;
                }
                let mut call = self.record_call(&c.save, id);
                call.key(self.holders_key(id));
                call.arg(json).arg(millis(idle)).arg(&self.holder);
                let saved: Option<u64> = self.run(call).await?;
                if saved.is_some() {
                    let mut sets = self.sets_call(&c.sets_save);
                    sets.arg(id).arg(millis(idle));
                    self.run::<i64>(sets).await?;
                }
                return Ok(saved);
            }
            if create {
                // A new session outside `create`'s bounds: as `create` with this expiry for
                // both timeouts and no bound.
                let mut call = self.create.prepare_invoke();
                self.keys(&mut call, id);
                call.arg(json)
                    .arg(millis(idle))
                    .arg(usize::MAX)
                    .arg(id)
                    .arg(self.key_prefix())
                    .arg(millis(idle))
                    .arg(0);
                return self.run(call).await;
            }
            let mut call = self.save.prepare_invoke();
            self.keys(&mut call, id);
            call.arg(json).arg(millis(idle)).arg(id).arg(&self.holder);
            self.run(call).await
        })
    }

    fn create<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        bounds: CreateBounds,
    ) -> StoreFuture<'a, Result<Option<u64>, StoreError>> {
        Box::pin(async move {
            let json = serde_json::to_string(record)
                .map_err(|e| store_error(RedisError::new("sessions", e)))?;
            if let Some(c) = &self.cluster {
                return self
                    .create_cluster(
                        c,
                        id,
                        json,
                        bounds.handshake,
                        bounds.max_sessions,
                        MAX_EVICTIONS,
                    )
                    .await;
            }
            let mut call = self.create.prepare_invoke();
            self.keys(&mut call, id);
            call.arg(json)
                .arg(millis(bounds.handshake))
                .arg(bounds.max_sessions)
                .arg(id)
                .arg(self.key_prefix())
                .arg(millis(bounds.handshake))
                .arg(MAX_EVICTIONS);
            self.run(call).await
        })
    }

    fn release<'a>(
        &'a self,
        id: &'a str,
        quiet: Duration,
    ) -> StoreFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let quiet_ms = u64::try_from(quiet.as_millis()).unwrap_or(u64::MAX);
            if let Some(c) = &self.cluster {
                let mut call = self.record_call(&c.release, id);
                call.key(self.holders_key(id));
                call.arg(quiet_ms).arg(&self.me).arg(millis(HOLDER_LINGER));
                let gone = self.run::<i64>(call).await? > 0;
                if gone {
                    self.forget(c, id).await?;
                }
                return Ok(gone);
            }
            let mut call = self.release.prepare_invoke();
            self.keys(&mut call, id);
            call.arg(id)
                .arg(quiet_ms)
                .arg(&self.me)
                .arg(millis(HOLDER_LINGER));
            Ok(self.run::<i64>(call).await? > 0)
        })
    }

    fn touch<'a>(
        &'a self,
        id: &'a str,
        known: u64,
        idle: Duration,
    ) -> StoreFuture<'a, Result<Touched, StoreError>> {
        Box::pin(async move {
            if let Some(c) = &self.cluster {
                return self.touch_cluster(c, id, known, idle).await;
            }
            let mut call = self.touch.prepare_invoke();
            self.keys(&mut call, id);
            call.arg(known)
                .arg(millis(idle))
                .arg(id)
                .arg(millis(idle))
                .arg(&self.me)
                .arg(&self.holder);
            let reply: Option<Vec<String>> = self.run(call).await?;
            touched(reply.as_deref())
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            if let Some(c) = &self.cluster {
                let mut call = self.record_call(&c.remove, id);
                call.key(self.holders_key(id)).arg(millis(HOLDER_LINGER));
                self.run::<i64>(call).await?;
                return self.forget(c, id).await;
            }
            let mut call = self.remove.prepare_invoke();
            self.keys(&mut call, id);
            call.arg(id).arg(millis(HOLDER_LINGER));
            self.run::<i64>(call).await.map(drop)
        })
    }

    fn holders<'a>(
        &'a self,
        id: &'a str,
        within: Duration,
    ) -> StoreFuture<'a, Result<Option<Holders>, StoreError>> {
        Box::pin(async move {
            if self.holder.is_empty() {
                return Ok(None);
            }
            let mut call = self.holders.prepare_invoke();
            call.key(self.holders_key(id))
                .arg(millis(within))
                .arg(MAX_HOLDERS)
                .arg(millis(within.max(HOLDER_PRUNE)));
            let reply: Option<Vec<String>> = self.run(call).await?;
            Ok(reply.as_deref().and_then(holders_of))
        })
    }

    fn claim_request<'a>(
        &'a self,
        id: &'a str,
        request: &'a str,
        ttl: Duration,
    ) -> StoreFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let mut call = self.claim.prepare_invoke();
            call.key(self.claim_key(id, request))
                .arg(&self.me)
                .arg(millis(ttl));
            Ok(self.run::<i64>(call).await? == 1)
        })
    }

    fn release_request<'a>(
        &'a self,
        id: &'a str,
        request: &'a str,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut call = self.unclaim.prepare_invoke();
            call.key(self.claim_key(id, request)).arg(&self.me);
            self.run::<i64>(call).await.map(drop)
        })
    }

    fn hold_stream<'a>(
        &'a self,
        id: &'a str,
        open: bool,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            if self.holder.is_empty() {
                return Ok(());
            }
            let mut call = self.stream.prepare_invoke();
            call.key(self.holders_key(id))
                .arg(&self.holder)
                .arg(if open { "1" } else { "0" });
            self.run::<i64>(call).await.map(drop)
        })
    }
}
