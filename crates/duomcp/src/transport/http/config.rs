//! Knobs of the Streamable HTTP transport.

use super::store::{EventStore, MemoryEventStore};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// How a request is answered when its handler sends nothing before its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ResponseMode {
    /// One JSON object when the handler sends nothing before its result; an SSE stream as soon
    /// as it sends something first (progress, a log message, a server→client request). Default.
    #[default]
    JsonWhenPossible,
    /// Always an SSE stream (except for `initialize`, always JSON). In the legacy era every
    /// response then starts with a priming event and can be resumed with `Last-Event-ID`.
    AlwaysSse,
}

/// Configuration of [`StreamableHttp`](super::StreamableHttp).
///
/// Protocol-level limits (largest message, page size, shutdown grace) live in
/// [`ServerConfig`](crate::server::ServerConfig); the HTTP ones live here.
///
/// ```
/// use duomcp::transport::http::{HttpConfig, ResponseMode};
/// use std::time::Duration;
///
/// let mut config = HttpConfig::default()
///     .allow_host("mcp.example.com")
///     .allow_origin("https://app.example.com");
/// config.path = "/api/mcp".into();
/// config.response_mode = ResponseMode::AlwaysSse;
/// config.session_idle_timeout = Duration::from_secs(600);
/// assert_eq!(config.max_sessions, 10_000);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The MCP endpoint's path (default `/mcp`).
    pub path: String,
    /// JSON or SSE for plain request/response exchanges (default [`ResponseMode::JsonWhenPossible`]).
    pub response_mode: ResponseMode,
    /// Accepted `Host` values (DNS-rebinding protection). An entry is a host name or IP address,
    /// with an optional `:port` (without one any port matches); IPv6 addresses in brackets.
    /// `None` accepts any host. Default: `localhost`, `127.0.0.1` and `[::1]`, plus the address
    /// [`serve`](super::StreamableHttp::serve) is bound to.
    pub allowed_hosts: Option<Vec<String>>,
    /// Accepted `Origin` values, checked when the header is present. An entry is either a full
    /// origin (`https://app.example.com`) or a host pattern as in `allowed_hosts` (any scheme).
    /// `None` accepts any origin. Default: the loopback names, any scheme and port.
    pub allowed_origins: Option<Vec<String>>,
    /// Insist on `Accept: application/json, text/event-stream` for POST and
    /// `Accept: text/event-stream` for GET (`406` otherwise; wildcards such as `*/*` count),
    /// and on `Content-Type: application/json` for POST (`415` otherwise). Default `true`.
    pub strict_media_types: bool,
    /// A legacy session with no request or stream open for this long is ended (default 30 min).
    pub session_idle_timeout: Duration,
    /// Legacy sessions alive at once (default 10,000). When the table is full, a new session
    /// takes the place of the least recently used idle one (one that never made a request
    /// after `initialize` first); `initialize` gets `503` only when every session is busy.
    pub max_sessions: usize,
    /// Legacy sessions alive at once in the session store, over every replica sharing it
    /// (default 20,000; only with a [`session_store`](Self::session_store)). When the store
    /// is full, a new session takes the place of the oldest one, fleet-wide, that never made
    /// a request after `initialize`; when there is none, `initialize` gets `503` with
    /// `Retry-After` and `-32603`.
    pub max_fleet_sessions: usize,
    /// Requests being handled at once over all clients (`subscriptions/listen` streams have
    /// their own cap, `max_listen_streams`); more get `503` (default 1,024).
    pub max_concurrent_requests: usize,
    /// SSE streams opened with `GET` (standalone and resumed), over all sessions (default 1,000).
    pub max_streams: usize,
    /// SSE streams opened with `GET` per session (default 16).
    pub max_streams_per_session: usize,
    /// How long one request may run before it is cancelled and answered with an error
    /// (default 5 min; `subscriptions/listen` streams are exempt). `None`: no limit.
    pub request_timeout: Option<Duration>,
    /// Interval of `: keep-alive` comments on open SSE streams (default 15 s). `None`: never.
    pub keep_alive: Option<Duration>,
    /// The reconnection delay sent as the SSE `retry:` field (default 1 s).
    pub sse_retry: Duration,
    /// Where legacy SSE events are kept for `Last-Event-ID` replay (default [`MemoryEventStore`]).
    pub event_store: Arc<dyn EventStore>,
    /// Where legacy sessions are shared with other replicas (default `None`: each session
    /// lives in this transport's table only). See [`SessionStore`](super::SessionStore).
    pub session_store: Option<Arc<dyn super::SessionStore>>,
    /// With a `session_store` and a `bus`: a request for a session whose copy here the store
    /// found alive and current less than this long ago does not ask the store again (default
    /// 1 s; at most a quarter of `session_idle_timeout`; zero: every request asks). Other
    /// replicas' changes and `DELETE`s reach the copy through the bus at once; an
    /// invalidation lost without the bus noticing leaves it stale for at most this long.
    /// See [`SessionStore`](super::SessionStore).
    pub session_touch_interval: Duration,
    /// With a `session_store`: a 2025-11-25 request id in flight is refused on every replica,
    /// not only on the one running it (default `false`). Each request claims its id in the
    /// store before it runs ([`SessionStore::claim_request`](super::SessionStore::claim_request):
    /// with Redis a `SET NX PX` in a script, and a release when it ends): two more Redis
    /// round trips a request, which the session liveness cache otherwise spares. A request
    /// whose id another replica holds gets `400`, `-32600`; the claim lasts the request's
    /// time limit (`request_timeout`, else the session idle timeout) at most.
    pub fleet_request_ids: bool,
    /// The bus to the other replicas (default `None`: one process). When set, building the
    /// transport attaches it to the server ([`Server::attach_bus`](crate::server::Server::attach_bus)).
    pub bus: Option<Arc<dyn crate::server::bus::Bus>>,
    /// Shares the Events extension's occurrences with the other replicas when the transport
    /// is built (set by `HttpConfig::redis`).
    #[cfg(feature = "events")]
    pub(crate) share_events: Option<ShareEvents>,
    /// Where tasks are kept when shared with other replicas, in place of the server's own
    /// [`TaskConfig`](crate::server::tasks::TaskConfig) store (default `None`).
    pub task_store: Option<Arc<dyn crate::server::tasks::TaskStore>>,
    /// How long a client may take to send request headers (default 30 s; `serve` and
    /// [`serve`](fn@super::serve) only: an application serving the router itself sets its own).
    pub header_read_timeout: Duration,
    /// How long a client may take to send a request body once its headers are in (default
    /// 60 s, as nginx's `client_body_timeout`); a body still unfinished then is answered `408`
    /// and the connection closed. `None`: no limit.
    pub body_timeout: Option<Duration>,
    /// Bytes all request bodies still being received may hold at once (default 64 MiB). A
    /// body reserves its `Content-Length` (or, without one, the largest message size) before
    /// it is read; when the budget is spent the request gets `503`.
    pub max_body_bytes_in_flight: usize,
    /// `subscriptions/listen` streams (2026-07-28) open at once, over all clients (default
    /// 256). They do not take the request permits of `max_concurrent_requests`; more get `503`.
    pub max_listen_streams: usize,
    /// A legacy session that has made no request after its `initialize` is ended after this
    /// long (default 60 s), well before `session_idle_timeout`.
    pub session_handshake_timeout: Duration,
    /// Bytes of the `initialize` request's `capabilities` and `clientInfo` a legacy session may
    /// keep (default 64 KiB, JSON text). A larger `initialize` is refused with `-32602`.
    pub max_client_data: usize,
    /// Serve each connection on one of these single-threaded runtimes for its whole life
    /// (thread-per-core; default `None`: on the runtime that runs `serve`). `serve` and
    /// `serve_tls` only; see [`Workers`](super::Workers) for when it pays and what it costs.
    pub workers: Option<super::Workers>,
    /// Requests of one caller (the authenticated principal, else the peer's IP address) in
    /// flight at once, SSE streams included until they end (default 256); more get `429`.
    pub max_requests_per_principal: usize,
    /// The rate of each authenticated principal (default 100 requests/s, burst 200); over it
    /// a request gets `429` with `Retry-After`. `None`: not limited.
    pub principal_rate: Option<super::Rate>,
    /// The rate of each peer IP address making requests without a principal (default 1,000
    /// requests/s, burst 2,000); over it `429` with `Retry-After`. `None`: not limited.
    pub peer_rate: Option<super::Rate>,
    /// Whether loopback peers without a principal are limited by IP too (default `false`:
    /// local tests and sidecars are not; principals are always limited).
    pub limit_loopback_peers: bool,
    /// Callers (principals and peer addresses) whose bucket is kept (default 10,000). When
    /// full, idle callers whose bucket has refilled are forgotten first, then the idle one
    /// seen longest ago; a new caller gets `503` only when every one has requests in flight.
    pub max_principals: usize,
    /// The Server Card (experimental, SEP-2127) served at `<path>/server-card`, and its AI
    /// Catalog entry at `/.well-known/ai-catalog.json`; `None` (the default): neither. Off by
    /// default because the card is public (no authentication) and names the server; see
    /// [`ServerCardConfig`](super::card::ServerCardConfig) for what it says.
    pub server_card: Option<super::card::ServerCardConfig>,
    /// Where the endpoint answers readiness probes (a load balancer's health check): `GET` or
    /// `HEAD` on this path is `200 ready` while it serves and `503 draining` once it is
    /// stopping (see [`drain_delay`](Self::drain_delay)). `None` (the default): no such route.
    /// The probe is answered before the `Host`/`Origin` checks and the fairness caps (it says
    /// nothing but `ready` or `draining`); `duomcp serve --http` serves it at `/readyz`.
    pub readiness_path: Option<String>,
    /// After the shutdown signal of [`serve_with_shutdown`](super::StreamableHttp::serve_with_shutdown)
    /// (and its siblings), how long the endpoint keeps accepting and serving everything while
    /// its readiness probe says `503`, so that a load balancer's health check takes it out of
    /// rotation before it stops accepting (default 0: it stops at once, as without a
    /// balancer). Then the graceful shutdown runs as usual. [`shutdown`](super::StreamableHttp::shutdown)
    /// during the delay ends it early.
    pub drain_delay: Duration,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            path: "/mcp".into(),
            response_mode: ResponseMode::default(),
            allowed_hosts: Some(LOOPBACK.iter().map(|h| (*h).to_owned()).collect()),
            allowed_origins: Some(LOOPBACK.iter().map(|h| (*h).to_owned()).collect()),
            strict_media_types: true,
            session_idle_timeout: Duration::from_secs(30 * 60),
            max_sessions: 10_000,
            max_fleet_sessions: 20_000,
            max_concurrent_requests: 1024,
            max_streams: 1000,
            max_streams_per_session: 16,
            request_timeout: Some(Duration::from_secs(300)),
            keep_alive: Some(Duration::from_secs(15)),
            sse_retry: Duration::from_secs(1),
            event_store: Arc::new(MemoryEventStore::default()),
            session_store: None,
            session_touch_interval: Duration::from_secs(1),
            fleet_request_ids: false,
            bus: None,
            #[cfg(feature = "events")]
            share_events: None,
            task_store: None,
            header_read_timeout: Duration::from_secs(30),
            body_timeout: Some(Duration::from_secs(60)),
            max_body_bytes_in_flight: 64 * 1024 * 1024,
            max_listen_streams: 256,
            session_handshake_timeout: Duration::from_secs(60),
            max_client_data: 64 * 1024,
            workers: None,
            max_requests_per_principal: 256,
            principal_rate: Some(super::Rate::new(100, 200)),
            peer_rate: Some(super::Rate::new(1000, 2000)),
            limit_loopback_peers: false,
            max_principals: 10_000,
            server_card: None,
            readiness_path: None,
            drain_delay: Duration::ZERO,
        }
    }
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConfig")
            .field("path", &self.path)
            .field("response_mode", &self.response_mode)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("strict_media_types", &self.strict_media_types)
            .field("session_idle_timeout", &self.session_idle_timeout)
            .field("max_sessions", &self.max_sessions)
            .field("max_fleet_sessions", &self.max_fleet_sessions)
            .field("max_concurrent_requests", &self.max_concurrent_requests)
            .field("max_streams", &self.max_streams)
            .field("max_streams_per_session", &self.max_streams_per_session)
            .field("request_timeout", &self.request_timeout)
            .field("keep_alive", &self.keep_alive)
            .field("sse_retry", &self.sse_retry)
            .field("bus", &self.bus.is_some())
            .field("header_read_timeout", &self.header_read_timeout)
            .field("body_timeout", &self.body_timeout)
            .field("max_body_bytes_in_flight", &self.max_body_bytes_in_flight)
            .field("max_listen_streams", &self.max_listen_streams)
            .field("session_handshake_timeout", &self.session_handshake_timeout)
            .field("session_touch_interval", &self.session_touch_interval)
            .field("fleet_request_ids", &self.fleet_request_ids)
            .field("max_client_data", &self.max_client_data)
            .field("workers", &self.workers)
            .field(
                "max_requests_per_principal",
                &self.max_requests_per_principal,
            )
            .field("principal_rate", &self.principal_rate)
            .field("peer_rate", &self.peer_rate)
            .field("limit_loopback_peers", &self.limit_loopback_peers)
            .field("max_principals", &self.max_principals)
            .field("server_card", &self.server_card)
            .field("readiness_path", &self.readiness_path)
            .field("drain_delay", &self.drain_delay)
            .finish_non_exhaustive()
    }
}

const LOOPBACK: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

impl HttpConfig {
    /// Also accepts `host` (a name or address, optionally with `:port`) in the `Host` header.
    /// No effect when any host is accepted already.
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        if let Some(hosts) = &mut self.allowed_hosts {
            hosts.push(host.into());
        }
        self
    }

    /// Also accepts `origin` (`https://app.example.com`, or a host pattern) in the `Origin` header.
    /// No effect when any origin is accepted already.
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        if let Some(origins) = &mut self.allowed_origins {
            origins.push(origin.into());
        }
        self
    }

    /// Accepts any `Host` and any `Origin`: for servers behind a proxy that checks them, or with
    /// authentication of their own. Never for a local server without authentication.
    pub fn allow_any_host(mut self) -> Self {
        self.allowed_hosts = None;
        self.allowed_origins = None;
        self
    }
}

/// What [`HttpConfig::share_events`] calls with the server when the transport is built.
#[cfg(feature = "events")]
pub(crate) type ShareEvents = Arc<dyn Fn(&crate::server::Server) + Send + Sync>;
