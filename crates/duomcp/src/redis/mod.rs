//! Shared state in Redis, for several replicas behind a load balancer (feature `redis`).
//!
//! One [`Redis`] handle (a connection to one Redis server, cheap to clone) backs the stores
//! replicas must share: the legacy sessions ([`RedisSessionStore`], a
//! [`SessionStore`](crate::transport::http::SessionStore)), the legacy SSE event log
//! ([`RedisEventStore`], an [`EventStore`](crate::transport::http::EventStore)), tasks
//! ([`RedisTaskStore`], leased by the replica running them: [`Lease`]) and the
//! `requestState` key ([`Redis::shared_keyring`]).
//! [`HttpConfig::redis`](crate::transport::http::HttpConfig::redis) installs the first
//! three at once. The in-memory stores stay the default for one process.
//!
//! # Why redis-rs and its connection manager
//!
//! The crate is [`redis`](https://docs.rs/redis) (redis-rs) with only `tokio-comp`,
//! `connection-manager` and `script`, its default features off. `fred` does as much but
//! brings a larger tree (its own pool, metrics, a DNS layer) than this needs. What the
//! stores need of the client, and where it comes from:
//! - **Pipelining**: the connection manager holds one *multiplexed* connection: concurrent
//!   commands of every request are written back to back and their replies matched in order,
//!   so N requests in flight cost one socket, not N round trips in series. An event append is
//!   one Lua script (one round trip, atomic).
//! - **Reconnection**: when the connection breaks, the command in flight fails and the
//!   manager reconnects in the background (exponential backoff, capped at
//!   [`RedisConfig::max_reconnect_delay`]); the next command uses the new connection.
//!   Nothing is queued while Redis is away.
//! - **A bounded pool**: one connection per replica, with at most
//!   [`RedisConfig::max_in_flight`] commands in flight on it and a bounded send buffer;
//!   a caller beyond that waits, within its timeout.
//! - **Timeouts**: connecting ([`RedisConfig::connect_timeout`]) and every operation
//!   ([`RedisConfig::timeout`], a deadline around the whole call) are bounded, so a request
//!   needing Redis while it is down gets an error in bounded time, never a hang.
//!
//! Keys are prefixed ([`RedisConfig::prefix`], default `duomcp:`) and carry the session id as a
//! hash tag (`PREFIX session:{ID}`, `PREFIX ev:{ID}:…`), a task's keys its id
//! (`PREFIX task:{ID}…`), so the keys of one session, or of one task, live in one slot.
//!
//! # Redis Cluster
//!
//! `redis+cluster://[user:password@]HOST:PORT,HOST:PORT,…` ([`RedisConfig::url`]) names a
//! Redis Cluster by seed nodes; the handle then holds redis-rs's cluster client (feature
//! `cluster-async` of the crate, under this crate's same `redis` feature): one multiplexed
//! connection per node, each command sent to the master of its keys' slot, `MOVED`/`ASK`
//! followed and the slot map refreshed after a failover, every command still within
//! [`RedisConfig::timeout`] (retries included). Every script touches the keys of one slot:
//! where an operation spans two slots (a session and the fleet's bound in `{sessions}`, a
//! task and its requestor's list) it is two round trips on a cluster (see each store). The
//! bus uses a sharded channel ([`RedisBus`]). Connecting stays lazy: the cluster's topology
//! is read in the background, and a command before that waits for it within its deadline.

mod bus;
mod events;
mod lease;
#[cfg(feature = "events")]
pub(crate) mod occurrences;
mod sessions;
mod tasks;

pub use crate::common::bus_counts::BusCounts;
pub use bus::{BusBounds, RedisBus};
pub use events::RedisEventStore;
pub use lease::Lease;
pub use sessions::RedisSessionStore;
pub use tasks::RedisTaskStore;

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};
use ::redis::cluster::{ClusterClient, ClusterClientBuilder};
use ::redis::cluster_async::ClusterConnection;
use std::sync::Arc;
use std::time::Duration;

/// Why a Redis operation failed: unreachable, timed out, or refused. Its message names the
/// store, which is what a client is told (HTTP `503`, `-32603`).
#[derive(Debug, thiserror::Error)]
#[error("redis store ({what}): {reason}")]
pub struct RedisError {
    what: &'static str,
    reason: String,
}

impl RedisError {
    pub(crate) fn new(what: &'static str, reason: impl std::fmt::Display) -> Self {
        RedisError {
            what,
            reason: reason.to_string(),
        }
    }
}

/// How to reach Redis, with the bounds of the connection.
///
/// ```
/// use duomcp::redis::RedisConfig;
/// use std::time::Duration;
/// let mut config = RedisConfig::new("redis://127.0.0.1:6379/");
/// config.timeout = Duration::from_millis(500);
/// assert_eq!(config.prefix, "duomcp:");
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RedisConfig {
    /// `redis://[user:password@]host:port[/db]` for one Redis server, or
    /// `redis+cluster://[user:password@]host:port,host:port,…` for a Redis Cluster (the seed
    /// nodes: any of its nodes, the client learns the others and the slots from them; at most
    /// [`MAX_SEEDS`]). `rediss://` needs TLS, not built in.
    pub url: String,
    /// Prefix of every key and channel (default `duomcp:`); deployments sharing one Redis
    /// need different prefixes. With a Redis Cluster it may not hold `{` or `}` (the keys'
    /// hash tags are the store's own).
    pub prefix: String,
    /// Deadline of one operation, from its call to its reply (default 2 s).
    pub timeout: Duration,
    /// Deadline of a connection attempt (default 1 s).
    pub connect_timeout: Duration,
    /// Longest wait between reconnection attempts (default 2 s).
    pub max_reconnect_delay: Duration,
    /// Commands in flight on the connection at once (default 512).
    pub max_in_flight: usize,
}

impl RedisConfig {
    /// The defaults, for Redis at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        RedisConfig {
            url: url.into(),
            prefix: "duomcp:".into(),
            timeout: Duration::from_secs(2),
            connect_timeout: Duration::from_secs(1),
            max_reconnect_delay: Duration::from_secs(2),
            max_in_flight: 512,
        }
    }
}

/// A connection to Redis shared by the stores of one replica; clones share it.
///
/// Connecting is lazy: [`Redis::connect`] does not wait for Redis, so a replica starts (and
/// serves what needs no Redis) while Redis is down, and connects once it is up.
#[derive(Clone)]
pub struct Redis {
    conn: Conn,
    prefix: Arc<str>,
    timeout: Duration,
    /// For the bus's own subscribed connection.
    target: Target,
    connect_timeout: Duration,
    max_reconnect_delay: Duration,
}

/// The most seed nodes a `redis+cluster://` URL may name.
pub const MAX_SEEDS: usize = 64;

/// Where the bus makes its own connection.
#[derive(Clone)]
enum Target {
    /// One Redis server.
    Single(::redis::Client),
    /// A Redis Cluster: its seed nodes (`redis://…` each) and the client's bounds.
    Cluster(Arc<ClusterSeeds>),
}

struct ClusterSeeds {
    nodes: Vec<String>,
    max_in_flight: usize,
    connect_timeout: Duration,
    timeout: Duration,
    max_reconnect_delay: Duration,
}

/// The connection the stores use: to one Redis server (a connection manager), or to a Redis
/// Cluster (redis-rs's cluster client: one multiplexed connection per node, commands routed
/// by their keys' slot, `MOVED`/`ASK` followed, slots refreshed after a failover).
#[derive(Clone)]
pub(crate) enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ::redis::aio::ConnectionLike for Conn {
    fn req_packed_command<'a>(
        &'a mut self,
        cmd: &'a ::redis::Cmd,
    ) -> ::redis::RedisFuture<'a, ::redis::Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a ::redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> ::redis::RedisFuture<'a, Vec<::redis::Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// The seed nodes of a `redis+cluster://` URL as `redis://` URLs (`None`: not a cluster URL).
fn cluster_seeds(url: &str) -> Option<Result<Vec<String>, String>> {
    let rest = url.strip_prefix("redis+cluster://")?;
    Some(parse_seeds(rest))
}

fn parse_seeds(rest: &str) -> Result<Vec<String>, String> {
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.contains(['/', '?', '#']) {
        return Err("a redis+cluster:// URL has no database, path or query".into());
    }
    // `user:password@` before the first node applies to every node.
    let (auth, hosts) = match rest.rsplit_once('@') {
        Some((auth, hosts)) => (format!("{auth}@"), hosts),
        None => (String::new(), rest),
    };
    let nodes: Vec<String> = hosts
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(|h| format!("redis://{auth}{h}/"))
        .collect();
    if nodes.is_empty() {
        return Err("a redis+cluster:// URL names no node".into());
    }
    if nodes.len() > MAX_SEEDS {
        return Err(format!(
            "a redis+cluster:// URL names {} nodes, more than {MAX_SEEDS}",
            nodes.len()
        ));
    }
    Ok(nodes)
}

impl ClusterSeeds {
    /// A cluster client on these seeds with the handle's bounds: every command within the
    /// operation deadline (retries, redirections and slot refreshes included), at most
    /// `max_in_flight` commands in flight per node.
    fn builder(&self) -> ClusterClientBuilder {
        ClusterClient::builder(self.nodes.iter().map(String::as_str))
            .connection_timeout(self.connect_timeout)
            .response_timeout(self.timeout)
            .overall_response_timeout(Some(self.timeout))
            .connection_concurrency_limit(self.max_in_flight)
            .max_retry_wait(millis(self.max_reconnect_delay))
            .min_retry_wait(10)
    }

    fn timeouts(&self) -> ::redis::cluster::ClusterConfig {
        ::redis::cluster::ClusterConfig::new()
            .set_connection_timeout(self.connect_timeout)
            .set_response_timeout(self.timeout)
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redis")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl Redis {
    /// A handle on Redis at `url`, with the default [`RedisConfig`]. Must be called within a
    /// tokio runtime. Fails only when the URL is not a Redis URL.
    pub fn connect(url: &str) -> Result<Self, RedisError> {
        Self::with_config(RedisConfig::new(url))
    }

    /// A handle with `config`. Must be called within a tokio runtime.
    pub fn with_config(config: RedisConfig) -> Result<Self, RedisError> {
        if let Some(seeds) = cluster_seeds(&config.url) {
            return Self::cluster(&config, seeds.map_err(|e| RedisError::new("url", e))?);
        }
        let client =
            ::redis::Client::open(config.url.as_str()).map_err(|e| RedisError::new("url", e))?;
        let manager = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.connect_timeout))
            .set_response_timeout(Some(config.timeout))
            .set_max_delay(config.max_reconnect_delay)
            .set_number_of_retries(2)
            .set_concurrency_limit(config.max_in_flight.max(1))
            .set_pipeline_buffer_size(config.max_in_flight.max(1));
        let conn = ConnectionManager::new_lazy_with_config(client.clone(), manager)
            .map_err(|e| RedisError::new("connection", e))?;
        Ok(Redis {
            conn: Conn::Single(conn),
            prefix: config.prefix.into(),
            timeout: config.timeout,
            target: Target::Single(client),
            connect_timeout: config.connect_timeout,
            max_reconnect_delay: config.max_reconnect_delay,
        })
    }

    /// A handle on the Redis Cluster of `nodes` (seeds); connects in the background.
    fn cluster(config: &RedisConfig, nodes: Vec<String>) -> Result<Self, RedisError> {
        if config.prefix.contains(['{', '}']) {
            return Err(RedisError::new(
                "url",
                "with a Redis Cluster the key prefix may not hold `{` or `}`",
            ));
        }
        let seeds = Arc::new(ClusterSeeds {
            nodes,
            max_in_flight: config.max_in_flight.max(1),
            connect_timeout: config.connect_timeout,
            timeout: config.timeout,
            max_reconnect_delay: config.max_reconnect_delay,
        });
        let client = seeds
            .builder()
            .build()
            .map_err(|e| RedisError::new("url", e))?;
        let conn = client.get_pending_async_connection_with_config(seeds.timeouts());
        Ok(Redis {
            conn: Conn::Cluster(conn),
            prefix: config.prefix.as_str().into(),
            timeout: config.timeout,
            target: Target::Cluster(seeds),
            connect_timeout: config.connect_timeout,
            max_reconnect_delay: config.max_reconnect_delay,
        })
    }

    /// Whether this is a Redis Cluster (`redis+cluster://`).
    pub fn is_cluster(&self) -> bool {
        matches!(self.target, Target::Cluster(_))
    }

    /// The key prefix.
    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Runs `f` on the connection within the operation deadline.
    pub(crate) async fn run<T, F>(
        &self,
        what: &'static str,
        f: impl FnOnce(Conn) -> F,
    ) -> Result<T, RedisError>
    where
        F: std::future::Future<Output = ::redis::RedisResult<T>>,
    {
        match tokio::time::timeout(self.timeout, f(self.conn.clone())).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(RedisError::new(what, e)),
            Err(_) => Err(RedisError::new(
                what,
                format!("no reply within {:?}", self.timeout),
            )),
        }
    }

    /// `PING`: whether Redis answers now.
    pub async fn ping(&self) -> Result<(), RedisError> {
        self.run("ping", |mut c| async move {
            ::redis::cmd("PING").query_async::<String>(&mut c).await
        })
        .await
        .map(drop)
    }

    /// The `requestState` keyring replicas sharing this Redis share: the key kept under
    /// `PREFIX state-key`, made by the first replica that asks (`SET NX`, so two replicas
    /// starting at once still agree). For rotation, give every replica a keyring file
    /// instead (`duomcp serve --state-key-file`).
    pub async fn shared_keyring(&self) -> Result<crate::server::Keyring, RedisError> {
        let key = format!("{}state-key", self.prefix);
        use crate::server::SealingKeyExt as _;
        let fresh = crate::server::SealingKey::random().to_base64();
        let stored: String = self
            .run("state-key", |mut c| async move {
                let _: Option<String> = ::redis::cmd("SET")
                    .arg(&key)
                    .arg(&fresh)
                    .arg("NX")
                    .query_async(&mut c)
                    .await?;
                ::redis::cmd("GET").arg(&key).query_async(&mut c).await
            })
            .await?;
        crate::server::Keyring::parse(&stored).map_err(|e| RedisError::new("state-key", e))
    }
}

impl crate::transport::http::HttpConfig {
    /// Keeps legacy sessions, the SSE event log and tasks in `redis` ([`RedisSessionStore`],
    /// [`RedisEventStore`], [`RedisTaskStore`], with their default bounds and [`Lease`]), so
    /// that any replica sharing it serves any session and any task, shares the Events
    /// extension's occurrences (feature `events`: one Redis stream per event type, so that a
    /// subscription on one replica hears what another emits), and connects the replicas
    /// through a [`RedisBus`] (attached to the server when the transport is built: events and
    /// named changes reach every replica). The `requestState` key is the server's: see
    /// [`Redis::shared_keyring`].
    ///
    /// ```no_run
    /// use duomcp::redis::Redis;
    /// use duomcp::server::Server;
    /// use duomcp::transport::http::{HttpConfig, StreamableHttp};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let redis = Redis::connect("redis://127.0.0.1:6379/").unwrap();
    /// let server = Server::builder().keyring(redis.shared_keyring().await.unwrap()).build();
    /// let http = StreamableHttp::with_config(server, HttpConfig::default().redis(&redis));
    /// # let _ = http;
    /// # });
    /// ```
    pub fn redis(mut self, redis: &Redis) -> Self {
        self.event_store = Arc::new(RedisEventStore::new(redis.clone()));
        let bus = RedisBus::new(redis);
        // Sessions name the replicas holding them by this bus's inbox: what concerns one
        // session goes to its holders alone.
        let store = RedisSessionStore::new(redis.clone());
        let store = match crate::server::bus::Bus::inbox(&bus) {
            Some(inbox) => store.with_inbox(inbox),
            None => store,
        };
        self.session_store = Some(Arc::new(store));
        self.bus = Some(Arc::new(bus));
        self.task_store = Some(Arc::new(RedisTaskStore::new(redis.clone())));
        #[cfg(feature = "events")]
        {
            let redis = redis.clone();
            self.share_events = Some(Arc::new(move |server: &crate::server::Server| {
                occurrences::share(server, &redis)
            }));
        }
        self
    }
}
