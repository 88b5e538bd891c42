//! The Streamable HTTP transport (server side), serving both revisions on one endpoint.
//!
//! * **2025-11-25 and older** ("legacy"): `initialize` mints an `Mcp-Session-Id`; `GET` opens the
//!   session's server→client SSE stream; `DELETE` ends the session; SSE events carry ids and can
//!   be replayed with `Last-Event-ID` (see [`EventStore`]); idle sessions expire.
//! * **2026-07-28** ("modern"): stateless POSTs whose mirrored headers (`MCP-Protocol-Version`,
//!   `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`) must match the body; `GET` and `DELETE` are `405`;
//!   a request's SSE stream closing cancels it; `subscriptions/listen` is a long-lived stream.
//!
//! Which era a POST speaks is decided per request: a body whose `_meta` carries
//! `io.modelcontextprotocol/protocolVersion`, or an `MCP-Protocol-Version: 2026-07-28` header,
//! is modern; anything else (an `initialize`, a legacy version header, a session id, no header
//! at all) is legacy.
//!
//! A request is answered with one JSON object when its handler sends nothing before its
//! result, and with an SSE stream as soon as it does (progress, logs, a legacy server→client
//! request); [`ResponseMode::AlwaysSse`] makes every answer a stream.
//!
//! Every request has its `Host` and `Origin` checked against allow-lists (loopback names by
//! default, `403` otherwise), as the DNS-rebinding advice of both revisions requires.
//!
//! Serve it on its own:
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! use duomcp::server::Server;
//! let server = Server::builder().tool("hello", || async { "Hello!" }).build();
//! server.serve_http("127.0.0.1:3000").await // http://127.0.0.1:3000/mcp
//! # }
//! ```
//!
//! or mount it in an axum application, with any tower layers around it:
//!
//! ```
//! use duomcp::server::Server;
//! use duomcp::transport::http::{HttpConfig, StreamableHttp};
//!
//! let server = Server::builder().tool("hello", || async { "Hello!" }).build();
//! let mut config = HttpConfig::default();
//! config.path = "/v1/mcp".into();
//! let app: axum::Router = axum::Router::new()
//!     .merge(StreamableHttp::with_config(server, config).router())
//!     .route("/health", axum::routing::get(|| async { "ok" }));
//! ```
//!
//! Serve such an application with [`serve`](fn@serve) (or [`serve_with`](fn@serve_with))
//! rather than `axum::serve`, which sets no header read timeout: idle and slowloris
//! connections would stay open. Every limit of the transport, its default and the error a
//! client gets are listed in LIMITS.md at the repository root.

mod body;
pub mod card;
mod client_data;
mod config;
mod conn;
mod fair;
mod guard;
pub(crate) mod headers;
mod legacy;
mod listener;
mod modern;
mod routing;
mod serve;
mod session;
mod session_store;
mod shared_session;
pub(crate) mod sse;
mod store;
#[cfg(feature = "tls")]
pub mod tls;
#[cfg(unix)]
mod unix;
mod workers;

pub use config::{HttpConfig, ResponseMode};
#[cfg(feature = "http2")]
pub use conn::MAX_CONCURRENT_STREAMS;
pub use fair::{PeerAddr, Rate};
#[cfg(unix)]
pub use serve::serve_unix_with;
pub use serve::{serve, serve_with, ServeOptions};
pub use session_store::{CreateBounds, Holders, SessionRecord, SessionStore, Touched, MAX_HOLDERS};
pub use store::{EventStore, MemoryEventStore, StoreError, StoreFuture, StoredEvent, StreamState};
#[cfg(unix)]
pub use unix::{bind_unix, UNIX_BACKLOG};
pub use workers::Workers;

use crate::era::{self, Era, ProtocolError, Undecided};
use crate::jsonrpc::{self, error_code, Incoming, RequestId};
use crate::server::{Reply, Server, Shared};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::Router;
use duomcp_schema::version;
use guard::HostGuard;
use http::header::ALLOW;
use http::request::Parts;
use http::{HeaderValue, Method, StatusCode};
use session::sessions::Sessions;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// How many messages a request may queue before its handler waits for the client to read.
const SINK_CAPACITY: usize = 64;
/// How many events a connection may queue before the stream's pump waits for it.
const CONN_CAPACITY: usize = 64;

/// The Streamable HTTP endpoint of a [`Server`]: an axum [`Router`] to mount, or a server of
/// its own with [`serve`](Self::serve). Cheap to clone; clones share sessions and limits.
///
/// ```
/// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
/// use duomcp::server::Server;
/// use duomcp::transport::http::StreamableHttp;
///
/// let http = StreamableHttp::new(Server::builder().build());
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
/// println!("listening on http://{}/mcp", listener.local_addr().unwrap());
/// let running = tokio::spawn(http.clone().serve(listener));
/// http.shutdown(); // ends streams gracefully and stops accepting
/// running.await.unwrap().unwrap();
/// # });
/// ```
#[derive(Clone)]
pub struct StreamableHttp {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    shared: Arc<Shared>,
    config: HttpConfig,
    guard: HostGuard,
    /// Fires on shutdown (of this transport, or of the whole server).
    closing: CancellationToken,
    sessions: Arc<Sessions>,
    requests: Arc<Semaphore>,
    get_streams: Arc<Semaphore>,
    /// `subscriptions/listen` streams (their own cap: they would hold request permits for long).
    listen_streams: Arc<Semaphore>,
    /// Bytes of request bodies still being received (see `body`).
    body_budget: Arc<Semaphore>,
    /// Per-caller rate and in-flight caps (see `fair`).
    fair: Arc<fair::Fairness>,
    /// Set when served over TLS by duomcp (the server card's default URL says `https`).
    tls: std::sync::atomic::AtomicBool,
    /// Set by [`StreamableHttp::drain`]: the readiness probe says `503` from then on.
    draining: std::sync::atomic::AtomicBool,
}

impl Inner {
    /// See [`StreamableHttp::is_ready`].
    fn ready(&self) -> bool {
        !self.draining.load(std::sync::atomic::Ordering::Relaxed) && !self.closing.is_cancelled()
    }
}

impl std::fmt::Debug for StreamableHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamableHttp")
            .field("config", &self.inner.config)
            .field("sessions", &self.inner.sessions.len())
            .finish_non_exhaustive()
    }
}

impl StreamableHttp {
    /// The endpoint of `server` with the default [`HttpConfig`] (path `/mcp`, loopback only).
    ///
    /// ```
    /// use duomcp::server::Server;
    /// use duomcp::transport::http::StreamableHttp;
    /// let http = StreamableHttp::new(Server::builder().build());
    /// assert_eq!(http.config().path, "/mcp");
    /// ```
    pub fn new(server: Server) -> Self {
        Self::with_config(server, HttpConfig::default())
    }

    /// The endpoint of `server` with `config`.
    ///
    /// ```
    /// use duomcp::server::Server;
    /// use duomcp::transport::http::{HttpConfig, StreamableHttp};
    /// let mut config = HttpConfig::default();
    /// config.max_sessions = 100;
    /// let http = StreamableHttp::with_config(Server::builder().build(), config);
    /// assert_eq!(http.config().max_sessions, 100);
    /// ```
    pub fn with_config(server: Server, config: HttpConfig) -> Self {
        if let Some(bus) = &config.bus {
            // A bus attached already (by the application) stays.
            server.attach_bus(bus.clone());
        }
        #[cfg(feature = "events")]
        if let Some(share) = &config.share_events {
            share(&server);
        }
        let shared = server.shared;
        if let Some(store) = &config.task_store {
            shared.tasks.replace_store(store.clone());
        }
        let guard = HostGuard::new(
            config.allowed_hosts.as_deref(),
            config.allowed_origins.as_deref(),
        );
        let closing = shared.shutdown.child_token();
        // Shared sessions: answers and cancellations reaching the wrong replica are routed.
        let router = config.session_store.as_ref().map(|store| {
            routing::Router::with_store(
                shared.bus.clone(),
                closing.clone(),
                Some((store.clone(), config.session_idle_timeout)),
            )
        });
        // A copy ended here (evicted, idle) ends in the store too, unless used elsewhere since:
        // copies serve requests without touching the store for up to the touch interval.
        let release = config.session_store.clone().map(|store| {
            let slack = config
                .session_touch_interval
                .min(config.session_idle_timeout / 4);
            (store, slack)
        });
        let sessions = Arc::new(Sessions::new(router, release));
        StreamableHttp {
            inner: Arc::new(Inner {
                closing,
                shared,
                guard,
                sessions,
                requests: Arc::new(Semaphore::new(config.max_concurrent_requests.max(1))),
                get_streams: Arc::new(Semaphore::new(config.max_streams.max(1))),
                listen_streams: Arc::new(Semaphore::new(config.max_listen_streams.max(1))),
                body_budget: body::budget(config.max_body_bytes_in_flight),
                fair: fair::Fairness::new(&config),
                tls: std::sync::atomic::AtomicBool::new(false),
                draining: std::sync::atomic::AtomicBool::new(false),
                config,
            }),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &HttpConfig {
        &self.inner.config
    }

    /// Legacy sessions alive now.
    pub fn session_count(&self) -> usize {
        self.inner.sessions.len()
    }

    /// Callers (principals and peer addresses) whose rate bucket is kept now; at most
    /// [`HttpConfig::max_principals`].
    pub fn tracked_callers(&self) -> usize {
        self.inner.fair.len()
    }

    /// An axum router answering on [`HttpConfig::path`]. Merge or nest it into an application
    /// and wrap it in layers; it needs no state.
    ///
    /// It is an **axum 0.8** `Router` (feature `http-server`): the application must use axum
    /// 0.8 too (`axum = "0.8"`; another major version's `Router` is another type and will not
    /// merge).
    ///
    /// ```
    /// use duomcp::server::Server;
    /// use duomcp::transport::http::StreamableHttp;
    /// let router: axum::Router = StreamableHttp::new(Server::builder().build()).router();
    /// ```
    pub fn router(&self) -> Router {
        let mut router = Router::new().route(&self.inner.config.path, axum::routing::any(endpoint));
        // The server card (experimental, opt-in): see the `card` module.
        if let Some(card) = &self.inner.config.server_card {
            router = router.route(
                &card::card_path(&self.inner.config.path),
                axum::routing::any(card::card),
            );
            if card.catalog_enabled() {
                router = router.route(card::CATALOG_PATH, axum::routing::any(card::catalog));
            }
        }
        // The readiness probe (opt-in): see `HttpConfig::readiness_path`.
        if let Some(path) = &self.inner.config.readiness_path {
            router = router.route(path, axum::routing::get(readiness));
        }
        router.with_state(self.inner.clone())
    }

    /// Whether the endpoint takes new work: `true` until [`drain`](Self::drain) or
    /// [`shutdown`](Self::shutdown) (or [`Server::shutdown`]). The readiness probe at
    /// [`HttpConfig::readiness_path`] answers `200` while it is, `503` after.
    ///
    /// ```
    /// use duomcp::transport::http::StreamableHttp;
    /// let http = StreamableHttp::new(duomcp::server::Server::builder().build());
    /// assert!(http.is_ready());
    /// http.shutdown();
    /// assert!(!http.is_ready());
    /// ```
    pub fn is_ready(&self) -> bool {
        self.inner.ready()
    }

    /// Takes the endpoint out of a load balancer's rotation before it stops: from now on the
    /// readiness probe answers `503` (see [`is_ready`](Self::is_ready)), while every request,
    /// new ones included, is still served. Completes after [`HttpConfig::drain_delay`] (at
    /// once when shut down meanwhile); then call [`shutdown`](Self::shutdown). The endpoint's
    /// own `serve*_with_shutdown` do this when their signal fires; an application serving
    /// [`router`](Self::router) itself calls it in its signal:
    ///
    /// ```no_run
    /// # async fn run() -> std::io::Result<()> {
    /// use duomcp::transport::http::{serve_with, HttpConfig, ServeOptions, StreamableHttp};
    /// let mut config = HttpConfig::default();
    /// config.readiness_path = Some("/readyz".into());
    /// config.drain_delay = std::time::Duration::from_secs(3);
    /// let http = StreamableHttp::with_config(duomcp::server::Server::builder().build(), config);
    /// let app = axum::Router::new().merge(http.router());
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    /// let stop = async move {
    ///     duomcp::server::shutdown_signal().await;
    ///     http.drain().await; // /readyz says 503 for 3 s, /mcp still serves
    ///     http.shutdown();
    /// };
    /// serve_with(listener, app, ServeOptions::default(), stop).await
    /// # }
    /// ```
    pub async fn drain(&self) {
        let was = self
            .inner
            .draining
            .swap(true, std::sync::atomic::Ordering::Relaxed);
        let delay = self.inner.config.drain_delay;
        if !was && !delay.is_zero() && !self.inner.closing.is_cancelled() {
            tracing::info!(?delay, "draining: the readiness probe says 503");
        }
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = self.inner.closing.cancelled() => {}
        }
    }

    /// Starts a graceful shutdown of this endpoint: `subscriptions/listen` streams end with their
    /// final response, `GET` streams close, and [`serve`](Self::serve) stops accepting and
    /// returns once in-flight requests are done (or [`ServerConfig::shutdown_grace`] is up).
    /// [`Server::shutdown`] does the same for every transport of the server.
    ///
    /// [`ServerConfig::shutdown_grace`]: crate::server::ServerConfig
    pub fn shutdown(&self) {
        self.inner.closing.cancel();
    }

    /// Serves the endpoint on `listener` until [`shutdown`](Self::shutdown) (or
    /// [`Server::shutdown`]). The listener's address is added to the allowed `Host` values;
    /// connections get `TCP_NODELAY` and HTTP/1.1 keep-alive, and with feature `http2` HTTP/2
    /// with prior knowledge (h2c) on the same port. Over TLS: `serve_tls`
    /// (feature `tls`).
    ///
    /// ```no_run
    /// # async fn run() -> std::io::Result<()> {
    /// use duomcp::server::Server;
    /// use duomcp::transport::http::StreamableHttp;
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    /// StreamableHttp::new(Server::builder().build()).serve(listener).await
    /// # }
    /// ```
    pub async fn serve(self, listener: TcpListener) -> std::io::Result<()> {
        self.serve_with_shutdown(listener, std::future::pending())
            .await
    }

    /// Like [`serve`](Self::serve), also shutting down when `signal` completes (for example
    /// `tokio::signal::ctrl_c()`).
    ///
    /// ```no_run
    /// # async fn run() -> std::io::Result<()> {
    /// use duomcp::transport::http::StreamableHttp;
    /// let http = StreamableHttp::new(duomcp::server::Server::builder().build());
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    /// let stop = async { tokio::time::sleep(std::time::Duration::from_secs(60)).await };
    /// http.serve_with_shutdown(listener, stop).await
    /// # }
    /// ```
    pub async fn serve_with_shutdown<F>(
        self,
        listener: TcpListener,
        signal: F,
    ) -> std::io::Result<()>
    where
        F: Future<Output = ()> + Send,
    {
        if let Ok(addr) = listener.local_addr() {
            self.inner.guard.add_bound(addr);
        }
        self.accept_loop(listener, signal, conn::Transport::Plain)
            .await
    }

    /// Like [`serve_with_shutdown`](Self::serve_with_shutdown), on a Unix domain socket: HTTP
    /// over `listener` (make it with [`bind_unix`], which sets the socket file's permissions),
    /// with the same [`HttpConfig`] and bounds. A client names any host; `Host: localhost` is
    /// always accepted (whatever [`HttpConfig::allowed_hosts`] says), as the socket file's
    /// permissions, not the host name, decide who may connect. All peers on the socket are
    /// one caller for the per-peer fairness caps, a loopback one (limited only with
    /// [`HttpConfig::limit_loopback_peers`]). The socket file is left in place when this
    /// returns: remove it then (`duomcp serve --unix` does).
    ///
    /// ```no_run
    /// # async fn run() -> std::io::Result<()> {
    /// use duomcp::transport::http::{bind_unix, StreamableHttp};
    /// let http = StreamableHttp::new(duomcp::server::Server::builder().build());
    /// let path = std::path::Path::new("/run/user/1000/mcp.sock");
    /// let listener = bind_unix(path, 0o600).await?;
    /// let stop = async {
    ///     let _ = tokio::signal::ctrl_c().await;
    /// };
    /// http.serve_unix_with_shutdown(listener, stop).await?;
    /// std::fs::remove_file(path)
    /// # }
    /// ```
    #[cfg(unix)]
    pub async fn serve_unix_with_shutdown<F>(
        self,
        listener: tokio::net::UnixListener,
        signal: F,
    ) -> std::io::Result<()>
    where
        F: Future<Output = ()> + Send,
    {
        self.inner.guard.add_local();
        self.accept_loop(listener, signal, conn::Transport::Plain)
            .await
    }

    /// Accepts connections on `listener` and serves each with `transport` until shutdown.
    async fn accept_loop<L, F>(
        self,
        listener: L,
        signal: F,
        transport: conn::Transport,
    ) -> std::io::Result<()>
    where
        L: listener::Listener,
        F: Future<Output = ()> + Send,
    {
        #[cfg(feature = "tls")]
        if matches!(transport, conn::Transport::Tls(_)) {
            self.inner
                .tls
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let service = conn::Service::new(self.router());
        let closing = self.inner.closing.clone();
        // The signal starts the drain (readiness `503`, still serving); its end, the shutdown.
        let this = self.clone();
        let signal = async move {
            signal.await;
            this.drain().await;
        };
        let header_timeout = self.inner.config.header_read_timeout;
        let mut connections = serve::accept(
            &listener,
            &service,
            &closing,
            header_timeout,
            signal,
            &transport,
            self.inner.config.workers.as_ref(),
        )
        .await;
        drop(listener);
        self.inner.closing.cancel();
        let grace = self.inner.shared.config.shutdown_grace;
        let drain = async { while connections.join_next().await.is_some() {} };
        if tokio::time::timeout(grace, drain).await.is_err() {
            tracing::warn!("shutdown grace period over; cancelling the requests still running");
            self.inner.sessions.cancel_all_requests();
            let drain = async { while connections.join_next().await.is_some() {} };
            if tokio::time::timeout(Duration::from_millis(500), drain)
                .await
                .is_err()
            {
                connections.abort_all();
                while connections.join_next().await.is_some() {}
            }
        }
        self.inner.sessions.remove_all();
        Ok(())
    }
}

impl Server {
    /// An axum router serving this server over Streamable HTTP at `/mcp`, with the default
    /// [`HttpConfig`]; see [`StreamableHttp`] for other settings.
    ///
    /// ```
    /// use duomcp::server::Server;
    /// let server = Server::builder().tool("hello", || async { "Hello!" }).build();
    /// let app = axum::Router::new().merge(server.http_router());
    /// # let _: axum::Router = app;
    /// ```
    pub fn http_router(&self) -> Router {
        StreamableHttp::new(self.clone()).router()
    }

    /// Serves this server over Streamable HTTP at `http://ADDR/mcp` until [`Server::shutdown`].
    /// Bind to a loopback address (`127.0.0.1:PORT`) unless the server authenticates its clients.
    ///
    /// ```no_run
    /// # async fn run() -> std::io::Result<()> {
    /// duomcp::server::Server::builder().build().serve_http("127.0.0.1:3000").await
    /// # }
    /// ```
    pub async fn serve_http(self, addr: impl ToSocketAddrs) -> std::io::Result<()> {
        let listener = TcpListener::bind(addr).await?;
        StreamableHttp::new(self).serve(listener).await
    }
}

// ---------------------------------------------------------------------------------------------
// The endpoint.

async fn endpoint(State(t): State<Arc<Inner>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    if let Err((status, why)) = t.guard.check(&parts.headers, &parts.uri) {
        return rpc_error(status, None, error_code::INVALID_REQUEST, why);
    }
    let held = match t.fair.admit(&parts) {
        Ok(held) => held,
        Err(refusal) => return refused(refusal),
    };
    let res = match parts.method {
        Method::POST => post(&t, parts, body).await,
        Method::GET => legacy::get(&t, &parts).await,
        Method::DELETE => legacy::delete(&t, &parts).await,
        _ => method_not_allowed("GET, POST, DELETE"),
    };
    match held {
        Some(held) => res.map(|body| fair::HeldBody::wrap(body, held)),
        None => res,
    }
}

/// The readiness probe: `200 ready` while the endpoint takes new work, `503 draining` after.
async fn readiness(State(t): State<Arc<Inner>>) -> Response {
    let (status, text) = if t.ready() {
        (StatusCode::OK, "ready\n")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "draining\n")
    };
    let mut res = Response::new(Body::from(text));
    *res.status_mut() = status;
    res.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    res.headers_mut().insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-store"),
    );
    res
}

/// The answer to a request the fairness caps refused: `429 Too Many Requests` with
/// `Retry-After` (whole seconds, rounded up), or `503` when the table of callers is full.
fn refused(refusal: fair::Refusal) -> Response {
    let (wait, what) = match refusal {
        fair::Refusal::Rate(wait) => (wait, "this client's request rate is over its limit"),
        fair::Refusal::InFlight => (
            Duration::from_secs(1),
            "this client has too many requests in flight",
        ),
        fair::Refusal::Full => return busy(None, "too many clients"),
    };
    let mut res = rpc_error(
        StatusCode::TOO_MANY_REQUESTS,
        None,
        error_code::INTERNAL_ERROR,
        format!("Too Many Requests: {what}"),
    );
    res.headers_mut().insert(
        http::header::RETRY_AFTER,
        HeaderValue::from(fair::retry_after_secs(wait)),
    );
    res
}

async fn post(t: &Arc<Inner>, parts: Parts, body: Body) -> Response {
    if t.config.strict_media_types {
        if !guard::accepts_all(&parts.headers, &["application/json", "text/event-stream"]) {
            return rpc_error(
                StatusCode::NOT_ACCEPTABLE,
                None,
                error_code::INVALID_REQUEST,
                "Not Acceptable: the client must accept both application/json and text/event-stream",
            );
        }
        if !guard::is_json(&parts.headers) {
            return rpc_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                None,
                error_code::INVALID_REQUEST,
                "Unsupported Media Type: the body must be application/json",
            );
        }
    }
    let limit = t.shared.config.max_message_size;
    let bytes = match body::read(&parts, body, limit, &t.body_budget, t.config.body_timeout).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    let message = match jsonrpc::decode(&bytes) {
        Ok(m) => m,
        Err(e) => return error_response(StatusCode::BAD_REQUEST, e.id.as_ref(), &e.error),
    };
    // The one place the endpoint matches on the era: it picks one of its two adapters.
    match route(&parts, &message) {
        Ok(Era::Modern) => modern::post(t, &parts, message).await,
        Ok(Era::Legacy) => legacy::post(t, &parts, message).await,
        Err(response) => response,
    }
}

/// Decides the era of a POST (see the module docs) with [`era::detect`](crate::era::detect).
fn route(parts: &Parts, message: &Incoming) -> Result<Era, Response> {
    let (params, request_id, method) = match message {
        Incoming::Request(r) => (r.params.as_ref(), Some(&r.id), Some(r.method.as_str())),
        Incoming::Notification(n) => (n.params.as_ref(), None, Some(n.method.as_str())),
        Incoming::Response(_) => (None, None, None),
    };
    let version_header = parts
        .headers
        .get(&headers::PROTOCOL_VERSION)
        .map(|v| v.to_str().map(str::trim).map_err(|_| ()));
    let signals = era::Signals {
        method,
        version_header,
        // Read only when the header does not decide already.
        meta_names_version: || headers::has_meta_version(params),
        names_session: parts.headers.contains_key(&headers::SESSION_ID),
    };
    match era::detect(signals) {
        Ok(era) => Ok(era),
        Err(Undecided::MalformedHeader) => Err(rpc_error(
            StatusCode::BAD_REQUEST,
            request_id,
            error_code::INVALID_REQUEST,
            "Bad Request: malformed MCP-Protocol-Version header",
        )),
        Err(Undecided::UnsupportedVersion(v)) => {
            let supported: Vec<&str> = version::MODERN_VERSIONS
                .iter()
                .chain(version::LEGACY_VERSIONS)
                .copied()
                .collect();
            let error = jsonrpc::error_with_data(
                error_code::UNSUPPORTED_PROTOCOL_VERSION,
                format!("Bad Request: unsupported protocol version: {v}"),
                serde_json::json!({ "supported": supported, "requested": v }),
            );
            Err(error_response(StatusCode::BAD_REQUEST, request_id, &error))
        }
    }
}

/// Whether a request carries the modern-era `MCP-Protocol-Version` header (GET and DELETE of a
/// modern client are `405`).
fn modern_header(parts: &Parts) -> bool {
    parts
        .headers
        .get(&headers::PROTOCOL_VERSION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| version::is_modern(v.trim()))
}

// ---------------------------------------------------------------------------------------------
// Responses shared by both eras.

fn error_response(
    status: StatusCode,
    id: Option<&RequestId>,
    error: &jsonrpc::ErrorObject,
) -> Response {
    sse::json(status, jsonrpc::encode_error(id, error))
}

fn rpc_error(
    status: StatusCode,
    id: Option<&RequestId>,
    code: i32,
    message: impl Into<String>,
) -> Response {
    error_response(status, id, &jsonrpc::error(code, message))
}

/// The caller the auth layer authenticated ([`crate::auth::AuthLayer`]), if any.
/// The peer's IP address (TCP connections; none over a Unix socket).
fn peer(parts: &Parts) -> Option<std::net::IpAddr> {
    parts.extensions.get::<PeerAddr>().map(|p| p.0.ip())
}

fn principal(parts: &Parts) -> Option<Arc<crate::server::Principal>> {
    parts
        .extensions
        .get::<Arc<crate::server::Principal>>()
        .cloned()
}

/// The identity a legacy session is bound to: the principal that created it.
fn owner_key(parts: &Parts) -> Option<String> {
    parts
        .extensions
        .get::<Arc<crate::server::Principal>>()
        .map(|p| p.key())
}

/// A JSON answer with `status`; an insufficient-scope refusal goes out as `403`, marked so
/// that the auth layer adds its `WWW-Authenticate` challenge.
fn reply_json(status: StatusCode, reply: Reply) -> Response {
    if let Some(ProtocolError::InsufficientScope { required }) = &reply.error {
        let mut res = sse::json(StatusCode::FORBIDDEN, reply.frame);
        res.extensions_mut()
            .insert(crate::server::principal::ScopeChallenge(required.clone()));
        return res;
    }
    sse::json(status, reply.frame)
}

fn accepted() -> Response {
    let mut res = Response::new(Body::empty());
    *res.status_mut() = StatusCode::ACCEPTED;
    res
}

fn method_not_allowed(allow: &'static str) -> Response {
    let mut res = Response::new(Body::empty());
    *res.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
    res.headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    res
}

fn busy(id: Option<&RequestId>, what: &str) -> Response {
    let mut res = rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        id,
        error_code::INTERNAL_ERROR,
        format!("Service Unavailable: {what}"),
    );
    res.headers_mut()
        .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
    res
}
