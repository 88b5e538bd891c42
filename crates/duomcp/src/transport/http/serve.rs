//! Serving an axum application that embeds the endpoint, with the protections
//! [`StreamableHttp::serve`](super::StreamableHttp::serve) has: a deadline for request headers
//! (slowloris and idle connections are closed), `TCP_NODELAY`, keep-alive, accept errors
//! survived, and a graceful shutdown.
//!
//! `axum::serve` sets no header read timeout: a connection that never finishes its headers, or
//! an idle keep-alive connection, stays open for as long as the client likes. Serve the
//! application with [`serve`] (or [`serve_with`]) instead:
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! use duomcp::server::Server;
//! use duomcp::transport::http::StreamableHttp;
//!
//! let mcp = StreamableHttp::new(Server::builder().build());
//! let app = axum::Router::new()
//!     .route("/health", axum::routing::get(|| async { "ok" }))
//!     .merge(mcp.router());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! duomcp::transport::http::serve(listener, app).await
//! # }
//! ```

use super::conn::Transport;
use super::listener::{Listener, Stream};
use super::workers::Workers;
use axum::Router;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Settings of [`serve_with`].
///
/// ```
/// use duomcp::transport::http::ServeOptions;
/// use std::time::Duration;
/// let mut options = ServeOptions::default();
/// options.header_read_timeout = Duration::from_secs(10);
/// assert_eq!(options.shutdown_grace, Duration::from_secs(5));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServeOptions {
    /// How long a client may take to send request headers, and how long an idle keep-alive
    /// connection stays open (default 30 s, as [`HttpConfig::header_read_timeout`]).
    ///
    /// [`HttpConfig::header_read_timeout`]: super::HttpConfig::header_read_timeout
    pub header_read_timeout: Duration,
    /// After the shutdown signal, how long open connections may finish (default 5 s); those
    /// still open are then closed.
    pub shutdown_grace: Duration,
    /// Serve each connection on one of these single-threaded runtimes, for its whole life
    /// (thread-per-core), instead of on the runtime that runs `serve_with` (default: `None`).
    /// See [`Workers`] for when it pays.
    pub workers: Option<Workers>,
    /// Serve HTTPS with this certificate configuration (see
    /// [`tls::server_config_from_pem_files`](super::tls::server_config_from_pem_files)), ALPN
    /// choosing HTTP/2 or HTTP/1.1; default `None`: plain HTTP.
    #[cfg(feature = "tls")]
    pub tls: Option<std::sync::Arc<super::tls::RustlsServerConfig>>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            header_read_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(5),
            workers: None,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}

/// Serves `app` (an application with [`StreamableHttp::router`](super::StreamableHttp::router)
/// merged in) on `listener` with the default [`ServeOptions`], until the process ends. Use it
/// in place of `axum::serve`, which has no header read timeout.
pub async fn serve(listener: TcpListener, app: Router) -> std::io::Result<()> {
    serve_with(
        listener,
        app,
        ServeOptions::default(),
        std::future::pending(),
    )
    .await
}

/// Like [`serve`], with `options`, and stopping when `signal` completes: no new connections
/// are accepted, open ones finish their requests within [`ServeOptions::shutdown_grace`].
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// use duomcp::transport::http::{serve_with, ServeOptions};
/// let app = axum::Router::new().route("/", axum::routing::get(|| async { "hi" }));
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// serve_with(listener, app, ServeOptions::default(), async {
///     let _ = tokio::signal::ctrl_c().await;
/// })
/// .await
/// # }
/// ```
pub async fn serve_with<F>(
    listener: TcpListener,
    app: Router,
    options: ServeOptions,
    signal: F,
) -> std::io::Result<()>
where
    F: Future<Output = ()> + Send,
{
    serve_on(listener, app, options, signal).await
}

/// Like [`serve_with`], on a Unix domain socket (make the listener with
/// [`bind_unix`](super::bind_unix)). Requests carry no [`PeerAddr`](super::PeerAddr): all peers
/// on the socket are one local caller. The endpoint's `Host` check is its own allow-list
/// (whose default names `localhost`). The socket file is left in place when this returns.
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// use duomcp::transport::http::{bind_unix, serve_unix_with, ServeOptions, StreamableHttp};
/// let mcp = StreamableHttp::new(duomcp::server::Server::builder().build());
/// let app = axum::Router::new()
///     .route("/health", axum::routing::get(|| async { "ok" }))
///     .merge(mcp.router());
/// let path = std::path::Path::new("/run/user/1000/mcp.sock");
/// let listener = bind_unix(path, 0o600).await?;
/// serve_unix_with(listener, app, ServeOptions::default(), async {
///     let _ = tokio::signal::ctrl_c().await;
/// })
/// .await?;
/// std::fs::remove_file(path)
/// # }
/// ```
#[cfg(unix)]
pub async fn serve_unix_with<F>(
    listener: tokio::net::UnixListener,
    app: Router,
    options: ServeOptions,
    signal: F,
) -> std::io::Result<()>
where
    F: Future<Output = ()> + Send,
{
    serve_on(listener, app, options, signal).await
}

/// [`serve_with`] on any listener.
#[cfg_attr(not(feature = "tls"), allow(dead_code))]
/// In the extensions of a request that came over TLS served by [`serve_with`] (an endpoint's
/// own `serve_tls*` knows it without): the Server Card's default URL then says `https`.
#[derive(Debug, Clone, Copy)]
pub(super) struct OverTls;

async fn serve_on<L, F>(
    listener: L,
    app: Router,
    options: ServeOptions,
    signal: F,
) -> std::io::Result<()>
where
    L: Listener,
    F: Future<Output = ()> + Send,
{
    let closing = CancellationToken::new();
    #[cfg(feature = "tls")]
    let (transport, app) = match &options.tls {
        Some(config) => (
            Transport::Tls(tokio_rustls::TlsAcceptor::from(config.clone())),
            // What the endpoint's own TLS serving tells it: its public URLs say `https`.
            app.layer(axum::Extension(OverTls)),
        ),
        None => (Transport::Plain, app),
    };
    #[cfg(not(feature = "tls"))]
    let transport = Transport::Plain;
    let service = TowerToHyperService::new(app);
    let mut connections = accept(
        &listener,
        &service,
        &closing,
        options.header_read_timeout,
        signal,
        &transport,
        options.workers.as_ref(),
    )
    .await;
    drop(listener);
    closing.cancel();
    let drain = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(options.shutdown_grace, drain)
        .await
        .is_err()
    {
        connections.abort_all();
        while connections.join_next().await.is_some() {}
    }
    Ok(())
}

/// Accepts connections on `listener` and serves each with `service` (over `transport`) until
/// `signal` completes or `closing` fires; returns the connections still open.
pub(super) async fn accept<L, F>(
    listener: &L,
    service: &TowerToHyperService<Router>,
    closing: &CancellationToken,
    header_timeout: Duration,
    signal: F,
    transport: &Transport,
    workers: Option<&Workers>,
) -> JoinSet<()>
where
    L: Listener,
    F: Future<Output = ()> + Send,
{
    let mut connections = JoinSet::new();
    let mut signal = std::pin::pin!(signal);
    loop {
        let accepted = tokio::select! {
            _ = &mut signal => break,
            _ = closing.cancelled() => break,
            a = listener.accept_one() => a,
        };
        while connections.try_join_next().is_some() {}
        let (io, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: wait and go on, never stop serving.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        io.prepare(peer);
        let (transport, service, closing) = (transport.clone(), service.clone(), closing.clone());
        let serve =
            move |io| super::conn::accepted(transport, io, peer, service, closing, header_timeout);
        match workers {
            Some(workers) => workers.spawn_connection(&mut connections, io, peer, serve),
            None => {
                connections.spawn(serve(io));
            }
        }
    }
    connections
}
