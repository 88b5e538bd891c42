//! One connection of [`StreamableHttp::serve`](super::StreamableHttp::serve) and of
//! [`serve`](super::serve()): the HTTP versions it speaks and the bounds it keeps.
//!
//! * HTTP/1.1 always: keep-alive, `TCP_NODELAY` (set by the accept loop), the header-read
//!   timeout of [`HttpConfig::header_read_timeout`](super::HttpConfig).
//! * HTTP/2 with feature `http2`: cleartext with prior knowledge (h2c, what load balancers and
//!   gateways speak to their backends) and, with feature `tls`, over TLS when ALPN picks `h2`.
//!   The version is found from the first bytes of the connection (the HTTP/2 preface), so one
//!   port serves both. The `Upgrade: h2c` dance of RFC 7540 is not offered (RFC 9113 deprecated
//!   it); such a request is served as HTTP/1.1.
//! * TLS with feature `tls` (rustls with ring): see [`tls`](super::tls).
//!
//! Bounds: a connection must send its first request within the header-read timeout (which also
//! covers the HTTP/2 preface and the TLS handshake); an HTTP/2 connection carries at most
//! [`MAX_CONCURRENT_STREAMS`] streams at once, and hyper's own limits on header lists and on
//! streams reset by the client stay on.

use super::listener::Peer;
use axum::Router;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

/// The endpoint as hyper sees it.
pub(super) type Service = hyper_util::service::TowerToHyperService<Router>;

/// [`Service`] that puts the peer in each request's extensions, as `PeerAddr` (a TCP peer) or
/// `LocalPeer` (a Unix socket peer), read by the fairness caps.
#[derive(Clone)]
pub(super) struct WithPeer {
    service: Service,
    peer: Option<Peer>,
}

impl hyper::service::Service<http::Request<hyper::body::Incoming>> for WithPeer {
    type Response =
        <Service as hyper::service::Service<http::Request<hyper::body::Incoming>>>::Response;
    type Error = <Service as hyper::service::Service<http::Request<hyper::body::Incoming>>>::Error;
    type Future =
        <Service as hyper::service::Service<http::Request<hyper::body::Incoming>>>::Future;

    fn call(&self, mut req: http::Request<hyper::body::Incoming>) -> Self::Future {
        match self.peer {
            Some(Peer::Ip(addr)) => {
                req.extensions_mut().insert(super::fair::PeerAddr(addr));
            }
            Some(Peer::Local) => {
                req.extensions_mut().insert(super::fair::LocalPeer);
            }
            None => {}
        }
        hyper::service::Service::call(&self.service, req)
    }
}

/// At most this many HTTP/2 streams (requests) at once on one connection: the value of the
/// `SETTINGS_MAX_CONCURRENT_STREAMS` the server sends. The transport-wide limit
/// ([`HttpConfig::max_concurrent_requests`](super::HttpConfig)) still applies across all
/// connections.
#[cfg(feature = "http2")]
pub const MAX_CONCURRENT_STREAMS: u32 = 256;

/// How accepted connections are served.
#[derive(Clone)]
pub(super) enum Transport {
    /// HTTP straight on the stream.
    Plain,
    /// A TLS handshake first.
    #[cfg(feature = "tls")]
    Tls(tokio_rustls::TlsAcceptor),
}

/// Serves one accepted connection (TCP, or a Unix domain socket).
pub(super) async fn accepted<I>(
    transport: Transport,
    io: I,
    peer: Peer,
    service: Service,
    closing: CancellationToken,
    header_timeout: Duration,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    match transport {
        Transport::Plain => connection(io, Some(peer), service, closing, header_timeout).await,
        #[cfg(feature = "tls")]
        Transport::Tls(acceptor) => {
            let tls = tokio::select! {
                biased;
                () = closing.cancelled() => return,
                t = tokio::time::timeout(header_timeout, acceptor.accept(io)) => t,
            };
            match tls {
                Ok(Ok(tls)) => connection(tls, Some(peer), service, closing, header_timeout).await,
                Ok(Err(e)) => tracing::debug!(%peer, "TLS handshake failed: {e}"),
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake not done within the header timeout")
                }
            }
        }
    }
}

/// Serves HTTP on `io` (a TCP stream, a TLS stream, or anything else that reads and writes)
/// until the peer is done or `closing` fires (then gracefully: requests in flight finish).
pub(super) async fn connection<I>(
    io: I,
    peer: Option<Peer>,
    service: Service,
    closing: CancellationToken,
    header_timeout: Duration,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = hyper_util::rt::TokioIo::new(io);
    let service = WithPeer { service, peer };
    let result = serve(io, service, &closing, header_timeout).await;
    if let Err(e) = result {
        match peer {
            Some(peer) => tracing::debug!(%peer, "connection ended: {e}"),
            None => tracing::debug!("connection ended: {e}"),
        }
    }
}

#[cfg(not(feature = "http2"))]
async fn serve<I>(
    io: hyper_util::rt::TokioIo<I>,
    service: WithPeer,
    closing: &CancellationToken,
    header_timeout: Duration,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(header_timeout)
        .keep_alive(true);
    let conn = builder.serve_connection(io, service);
    let mut conn = std::pin::pin!(conn);
    tokio::select! {
        biased;
        r = conn.as_mut() => r?,
        _ = closing.cancelled() => {
            conn.as_mut().graceful_shutdown();
            conn.await?
        }
    }
    Ok(())
}

#[cfg(feature = "http2")]
async fn serve<I>(
    io: hyper_util::rt::TokioIo<I>,
    service: WithPeer,
    closing: &CancellationToken,
    header_timeout: Duration,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    use hyper_util::rt::{TokioExecutor, TokioTimer};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(MAX_CONCURRENT_STREAMS);
    // hyper reads the first bytes (to tell HTTP/2's preface from HTTP/1.1) without a deadline:
    // the first request must arrive within the header timeout, whichever version it is.
    let seen = Arc::new(AtomicBool::new(false));
    let mark = seen.clone();
    let service = hyper::service::service_fn(move |req| {
        mark.store(true, Ordering::Relaxed);
        hyper::service::Service::call(&service, req)
    });
    let conn = builder.serve_connection(io, service);
    let mut conn = std::pin::pin!(conn);
    let first_request = tokio::time::sleep(header_timeout);
    let mut first_request = std::pin::pin!(first_request);
    let mut waiting = true;
    loop {
        tokio::select! {
            biased;
            r = conn.as_mut() => return r,
            _ = closing.cancelled() => {
                conn.as_mut().graceful_shutdown();
                return conn.await;
            }
            _ = first_request.as_mut(), if waiting => {
                if !seen.load(Ordering::Relaxed) {
                    return Err("no request within the header timeout".into());
                }
                waiting = false;
            }
        }
    }
}

impl super::StreamableHttp {
    /// Serves one HTTP connection on `io` (any byte stream: a Unix socket, a TLS stream made
    /// elsewhere, an in-memory pipe) until the peer closes it or the endpoint shuts down, with
    /// the same HTTP versions and bounds as [`serve`](Self::serve). Connection errors are logged
    /// at `debug` level, not returned: they are the peer's business.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use duomcp::transport::http::StreamableHttp;
    /// use tokio::io::{AsyncReadExt, AsyncWriteExt};
    /// let http = StreamableHttp::new(duomcp::server::Server::builder().build());
    /// let (mut client, server_end) = tokio::io::duplex(64 * 1024);
    /// tokio::spawn(async move { http.serve_connection(server_end).await });
    /// let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{
    ///     "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"doc","version":"0"}}}"#;
    /// let request = format!(
    ///     "POST /mcp HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n\
    ///      accept: application/json, text/event-stream\r\nconnection: close\r\n\
    ///      content-length: {}\r\n\r\n{body}",
    ///     body.len()
    /// );
    /// client.write_all(request.as_bytes()).await.unwrap();
    /// let mut response = String::new();
    /// client.read_to_string(&mut response).await.unwrap();
    /// assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    /// # });
    /// ```
    pub async fn serve_connection<I>(&self, io: I)
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let service = Service::new(self.router());
        let header_timeout = self.inner.config.header_read_timeout;
        connection(
            io,
            None,
            service,
            self.inner.closing.clone(),
            header_timeout,
        )
        .await;
    }
}
