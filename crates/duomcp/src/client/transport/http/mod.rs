//! The Streamable HTTP client transport, both revisions (feature `http-client`).
//!
//! One [`HttpTransport`] talks to one MCP endpoint URL:
//!
//! * **every message is a POST** with `Accept: application/json, text/event-stream`, the
//!   negotiated `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and the `Mcp-Param-*` headers
//!   the client runtime derives from the tool's `x-mcp-header` annotations (values outside
//!   plain ASCII in the `=?base64?…?=` form, see [`encode_header_value`]);
//! * **answers** are one JSON object or an SSE stream carrying the request's notifications (and,
//!   in 2025-11-25, the server's requests) before its response;
//! * **2025-11-25 sessions**: the `Mcp-Session-Id` of the `initialize` answer goes on every later
//!   request; after `notifications/initialized` the standalone `GET` stream is opened (a `405`
//!   is fine); a POST stream that ends before its response is resumed with `GET` and
//!   `Last-Event-ID` after the `retry:` delay the server gave (SEP-1699); a `404` for the session
//!   makes the client re-initialize transparently (the request waits and is sent again); the
//!   session is ended with `DELETE` on [`close`](Transport::close);
//! * **2026-07-28**: no session, no `GET`; dropping a request's stream closes its response,
//!   which cancels the request on the server;
//! * **era detection**: a `400` carrying `-32020`/`-32021`/`-32022`, or a `404` carrying
//!   `-32601`, marks a 2026-07-28 server; any other `4xx` to the `server/discover` probe lets the
//!   runtime fall back to `initialize`;
//! * **2024-11-05 servers** (the old HTTP+SSE transport): when `initialize` is answered with
//!   `400`, `404` or `405`, the client opens a `GET` stream on the URL, waits for its `endpoint`
//!   event, and from then on POSTs there and reads every answer from that stream;
//! * **authorization**: an [`AuthProvider`] gives the `Authorization` header of every request
//!   (POST, GET, DELETE) and is told about `401`/`403` answers, after which the request is sent
//!   again if it says so.
//!
//! ```no_run
//! # async fn run() -> Result<(), duomcp::client::ClientError> {
//! use duomcp::client::auth::StaticToken;
//! use duomcp::client::Client;
//!
//! let client = Client::builder()
//!     .header("X-Tenant", "acme")
//!     .auth(StaticToken::new("s3cret"))
//!     .connect_http("https://mcp.example.com/mcp")
//!     .await?;
//! println!("{} tools", client.list_all_tools().await?.len());
//! client.close().await?; // DELETEs a 2025-11-25 session
//! # Ok(()) }
//! ```
//!
//! Connections share one connection pool unless given their own client
//! ([`HttpOptions::client`]); [`default_client`] is that shared pool.

mod etag;
mod legacy_sse;
mod send;
pub(crate) mod sse;
mod streams;
mod wire;

pub use wire::encode_header_value;

use super::{
    BoxFuture, Outgoing, RequestStream, Routed, Transport, TransportError, TransportEvent,
};
use crate::client::auth::AuthProvider;
use crate::correlation::Waiter;
use crate::era::Era;
use crate::jsonrpc::{decode, Incoming, IncomingResponse, RequestId};
use crate::util::lock;
use duomcp_schema::methods::{self, NotificationMethod, RequestMethod};
use duomcp_schema::version;
use http::header::CONTENT_TYPE;
use http::{HeaderMap, StatusCode};
use legacy_sse::OldSse;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;
use url::Url;
use wire::{error_in_body, excerpt, is_media, is_modern_code, SESSION_ID};

/// How many times one HTTP request is sent again after `401`/`403` answers the
/// [`AuthProvider`] asked to retry.
pub const MAX_AUTH_RETRIES: u32 = 4;

/// Largest error body read, for its JSON-RPC error or an excerpt.
const MAX_ERROR_BODY: usize = 1024 * 1024;

/// Settings of an [`HttpTransport`].
///
/// ```
/// use duomcp::client::transport::http::HttpOptions;
/// use std::time::Duration;
/// let mut options = HttpOptions::default();
/// options.headers.insert("x-tenant", "acme".parse().unwrap());
/// options.default_retry = Duration::from_millis(500);
/// assert!(options.get_stream && options.legacy_sse_fallback);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The HTTP client (and its connection pool) to use; `None`: the process-wide
    /// [`default_client`]. Build one with rustls to share it between connections.
    pub client: Option<reqwest::Client>,
    /// Extra headers sent with every request (the protocol's own headers take precedence).
    pub headers: HeaderMap,
    /// Credentials for every request, and what to do on `401`/`403`.
    pub auth: Option<Arc<dyn AuthProvider>>,
    /// 2025-11-25: open the standalone `GET` stream after `initialize` (default `true`).
    pub get_stream: bool,
    /// Fall back to the 2024-11-05 HTTP+SSE transport when `initialize` is answered with
    /// `400`, `404` or `405` (default `true`).
    pub legacy_sse_fallback: bool,
    /// The reconnection delay when a stream that must be resumed carried no `retry:` field
    /// (default 1 s).
    pub default_retry: Duration,
    /// How many reconnections in a row, without an event received, before a stream is given
    /// up (default 5).
    pub max_reconnects: u32,
    /// How long a request answered `404` for its session waits for the client to
    /// re-initialize before it fails (default 30 s).
    pub reinitialize_timeout: Duration,
    /// How long to wait for the `endpoint` event of a 2024-11-05 server (default 10 s).
    pub endpoint_timeout: Duration,
    /// Largest message accepted from the server (default 64 MiB).
    pub max_message_size: usize,
    /// Called with each HTTP exchange once its answer's headers came (`None`, the default:
    /// nothing is copied or called). For a debugger or an inspector that shows the headers;
    /// set it with [`ClientBuilder::on_http_exchange`](crate::client::ClientBuilder::on_http_exchange).
    pub on_exchange: Option<ExchangeObserver>,
}

/// What [`HttpOptions::on_exchange`] is called with.
pub type ExchangeObserver = Arc<dyn Fn(&HttpExchange) + Send + Sync>;

/// One HTTP request of the transport and the head of its answer, as seen by
/// [`HttpOptions::on_exchange`]. The request's headers are those the transport gives the HTTP
/// client, the auth provider's `Authorization` included (the HTTP client itself adds `Host`,
/// `Content-Length` and the like); the body is not copied.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpExchange {
    /// `POST` (a message), `GET` (a stream) or `DELETE` (the end of a session).
    pub method: http::Method,
    /// The URL the request went to.
    pub url: String,
    /// The request's headers.
    pub request_headers: HeaderMap,
    /// The answer's status.
    pub status: StatusCode,
    /// The answer's headers.
    pub response_headers: HeaderMap,
    /// The JSON-RPC id of the message a `POST` carried (requests and responses).
    pub message_id: Option<RequestId>,
    /// The method of the request or notification a `POST` carried.
    pub message_method: Option<String>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            client: None,
            headers: HeaderMap::new(),
            auth: None,
            get_stream: true,
            legacy_sse_fallback: true,
            default_retry: Duration::from_secs(1),
            max_reconnects: 5,
            reinitialize_timeout: Duration::from_secs(30),
            endpoint_timeout: Duration::from_secs(10),
            max_message_size: 64 * 1024 * 1024,
            on_exchange: None,
        }
    }
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("auth", &self.auth.is_some())
            .field("get_stream", &self.get_stream)
            .field("legacy_sse_fallback", &self.legacy_sse_fallback)
            .field("default_retry", &self.default_retry)
            .field("max_reconnects", &self.max_reconnects)
            .field("reinitialize_timeout", &self.reinitialize_timeout)
            .field("endpoint_timeout", &self.endpoint_timeout)
            .field("max_message_size", &self.max_message_size)
            .field("on_exchange", &self.on_exchange.is_some())
            .finish_non_exhaustive()
    }
}

/// Installs ring as the process's rustls crypto provider, unless one is installed already.
pub fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Another thread may win the race; its provider is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// The process-wide HTTP client every [`HttpTransport`] uses unless given its own: one
/// connection pool, rustls with ring (installed as the process default provider if none is).
///
/// ```
/// let a = duomcp::client::transport::http::default_client().unwrap();
/// let b = duomcp::client::transport::http::default_client().unwrap();
/// // Clones share the pool.
/// # drop((a, b));
/// ```
pub fn default_client() -> Result<reqwest::Client, TransportError> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            install_crypto_provider();
            reqwest::Client::builder()
                .build()
                .map_err(|e| format!("cannot build the HTTP client: {}", chain(&e)))
        })
        .clone()
        .map_err(TransportError::Other)
}

/// An HTTP client whose every connection goes to the Unix domain socket at `socket`, whatever
/// the URL's host (which is then only the `Host` header): for an endpoint served with
/// `StreamableHttp::serve_unix_with_shutdown` (feature `http-server`), or `duomcp serve --unix`.
/// [`ClientBuilder::connect_unix`](crate::client::ClientBuilder::connect_unix) makes one.
///
/// ```
/// let client = duomcp::client::transport::http::unix_client("/run/mcp.sock".as_ref()).unwrap();
/// # drop(client);
/// ```
///
/// # Errors
/// When the HTTP client cannot be built.
#[cfg(unix)]
pub fn unix_client(socket: &std::path::Path) -> Result<reqwest::Client, TransportError> {
    install_crypto_provider();
    reqwest::Client::builder()
        .unix_socket(socket)
        .build()
        .map_err(|e| TransportError::Other(format!("cannot build the HTTP client: {}", chain(&e))))
}

/// An error and its sources, on one line.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

fn request_failed(url: &Url, e: &reqwest::Error) -> TransportError {
    // The kind of the I/O error underneath (connection refused, reset…) is kept, so that
    // callers can tell "nothing is listening" from other failures without reading the text.
    let kind = if e.is_timeout() {
        std::io::ErrorKind::TimedOut
    } else {
        io_kind(e).unwrap_or(std::io::ErrorKind::Other)
    };
    TransportError::Io(std::io::Error::new(
        kind,
        format!("HTTP request to {url} failed: {}", chain(e)),
    ))
}

/// The kind of the first `std::io::Error` among `e`'s sources.
fn io_kind(e: &(dyn std::error::Error + 'static)) -> Option<std::io::ErrorKind> {
    let mut next = Some(e);
    while let Some(err) = next {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        next = err.source();
    }
    None
}

/// The 2025-11-25 session.
struct Session {
    id: Option<String>,
    /// Ends the session's `GET` streams.
    streams: CancellationToken,
}

/// What is shared by the transport and its tasks.
pub(crate) struct Shared {
    url: Url,
    client: reqwest::Client,
    options: HttpOptions,
    events: mpsc::Sender<TransportEvent>,
    /// Event messages sent so far (orders 2024-11-05 responses after earlier notifications).
    sent: AtomicU64,
    /// Requests awaiting their response, by id (the correlation engine): a response may come
    /// on its POST's stream, on the `GET` stream (2025-11-25) or, in 2024-11-05 mode, on the
    /// one SSE stream.
    pending: super::Pending,
    /// The negotiated era and version.
    negotiated: Mutex<Option<(Era, String)>>,
    session: Mutex<Session>,
    /// Counts completed `initialize` handshakes (requests answered `404` wait for the next).
    handshakes: watch::Sender<u64>,
    /// What the last error answer showed about the server's era.
    evidence: Mutex<Option<Era>>,
    /// Fires on close: every task ends.
    closing: CancellationToken,
    closed: Mutex<Option<String>>,
    /// Set once the server turned out to speak the 2024-11-05 transport.
    old: Mutex<Option<Arc<OldSse>>>,
    switching: tokio::sync::Mutex<()>,
    /// Cacheable answers kept with their `ETag`, to revalidate (see `etag`).
    etags: Mutex<etag::Etags>,
}

/// A Streamable HTTP connection to one MCP endpoint, for [`Client`](crate::client::Client).
///
/// Usually made by [`ClientBuilder::connect_http`](crate::client::ClientBuilder::connect_http);
/// build one directly to pass to
/// [`connect_transport`](crate::client::ClientBuilder::connect_transport):
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use duomcp::client::transport::http::{HttpOptions, HttpTransport};
/// use duomcp::client::Client;
///
/// let transport = HttpTransport::new("http://127.0.0.1:3000/mcp", HttpOptions::default())?;
/// let client = Client::builder().connect_transport(transport).await?;
/// # Ok(()) }
/// ```
pub struct HttpTransport {
    shared: Arc<Shared>,
    events: Mutex<Option<mpsc::Receiver<TransportEvent>>>,
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport")
            .field("url", &self.shared.url.as_str())
            .field("session", &lock(&self.shared.session).id.is_some())
            .finish_non_exhaustive()
    }
}

impl HttpTransport {
    /// A transport for the MCP endpoint at `url` (`http` or `https`). Nothing is sent until the
    /// client connects. Needs a tokio runtime when used.
    pub fn new(url: &str, options: HttpOptions) -> Result<Self, TransportError> {
        let url = Url::parse(url)
            .map_err(|e| TransportError::Other(format!("invalid URL `{url}`: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(TransportError::Other(format!(
                "`{url}` is not an http or https URL"
            )));
        }
        let client = match &options.client {
            Some(c) => c.clone(),
            None => default_client()?,
        };
        let closing = CancellationToken::new();
        let (events, rx) = mpsc::channel(1024);
        let shared = Arc::new(Shared {
            url,
            client,
            options,
            events,
            sent: AtomicU64::new(0),
            pending: super::pending(),
            negotiated: Mutex::new(None),
            session: Mutex::new(Session {
                id: None,
                streams: closing.child_token(),
            }),
            handshakes: watch::channel(0).0,
            evidence: Mutex::new(None),
            closing,
            closed: Mutex::new(None),
            old: Mutex::new(None),
            switching: tokio::sync::Mutex::new(()),
            etags: Mutex::default(),
        });
        Ok(HttpTransport {
            shared,
            events: Mutex::new(Some(rx)),
        })
    }

    /// The endpoint URL.
    pub fn url(&self) -> &str {
        self.shared.url.as_str()
    }

    /// The 2025-11-25 session id the server assigned, while there is one.
    pub fn session_id(&self) -> Option<String> {
        lock(&self.shared.session).id.clone()
    }

    /// Whether the server turned out to speak the 2024-11-05 HTTP+SSE transport.
    pub fn is_legacy_sse(&self) -> bool {
        self.shared.old().is_some()
    }
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        let session = lock(&self.shared.session).id.take();
        let open = lock(&self.shared.closed).is_none();
        if let (Some(session), true) = (session, open) {
            // Best effort: end the session on the server.
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                let shared = self.shared.clone();
                handle.spawn(async move {
                    let _ = tokio::time::timeout(
                        Duration::from_secs(5),
                        shared.delete_session(&session),
                    )
                    .await;
                    shared.closing.cancel();
                });
                return;
            }
        }
        self.shared.closing.cancel();
    }
}

/// Stops a request's task when its stream is dropped (the stream's waiter forgets the
/// pending entry).
struct RequestGuard {
    task: AbortHandle,
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Shared {
    fn old(&self) -> Option<Arc<OldSse>> {
        lock(&self.old).clone()
    }

    fn check_open(&self) -> Result<(), TransportError> {
        match &*lock(&self.closed) {
            Some(reason) => Err(TransportError::Closed(reason.clone())),
            None => Ok(()),
        }
    }

    fn session_id(&self) -> Option<String> {
        lock(&self.session).id.clone()
    }

    fn negotiated_version(&self) -> Option<String> {
        lock(&self.negotiated).as_ref().map(|(_, v)| v.clone())
    }

    /// Whether the negotiated era is one of sessions (2025-11-25), which have a GET stream.
    fn has_session(&self) -> bool {
        matches!(&*lock(&self.negotiated), Some((era, _)) if era.has_sessions())
    }

    /// Hands a response to the request waiting for it. `false` when nobody waits.
    async fn deliver(&self, response: IncomingResponse) -> bool {
        let id = response.id.clone();
        // 2024-11-05 mode: responses and events share one stream, so the count orders them.
        let events_before = self
            .old()
            .is_some()
            .then(|| self.sent.load(Ordering::SeqCst));
        let routed = Routed {
            response: Ok(response),
            events_before,
        };
        let delivered = self.pending.complete(&id, routed);
        if !delivered {
            tracing::debug!(%id, "ignored a response nobody waits for");
        }
        delivered
    }

    /// Fails request `id` with `error`, unless it was answered already.
    async fn fail(&self, id: &RequestId, error: TransportError) {
        let routed = Routed {
            response: Err(error),
            events_before: None,
        };
        self.pending.complete(id, routed);
    }

    /// A request's stream: what `rx` carries, then the response routed to `waiter`.
    fn request_stream(
        self: &Arc<Self>,
        rx: Option<mpsc::Receiver<Result<Incoming, TransportError>>>,
        waiter: Waiter<Routed>,
        guard: Option<Box<dyn Send + Sync>>,
    ) -> RequestStream {
        let shared = Arc::downgrade(self);
        let closed = move || {
            let reason = shared.upgrade().and_then(|s| lock(&s.closed).clone());
            TransportError::Closed(reason.unwrap_or_else(|| "the connection ended".into()))
        };
        RequestStream::routed(rx, waiter, closed, guard)
    }

    /// A message for the runtime's event loop.
    async fn emit(&self, message: Incoming) {
        if self
            .events
            .send(TransportEvent::Message(message))
            .await
            .is_ok()
        {
            self.sent.fetch_add(1, Ordering::SeqCst);
        }
    }

    // -----------------------------------------------------------------------------------------
    // Sessions

    /// The server answered `404` for session `sid`: it is gone. The runtime is told
    /// ([`TransportEvent::Restarted`]) and re-initializes; the `GET` streams of the old session
    /// end.
    fn session_expired(&self, sid: &str) {
        {
            let mut s = lock(&self.session);
            if s.id.as_deref() != Some(sid) {
                return;
            }
            s.id = None;
            s.streams.cancel();
            s.streams = self.closing.child_token();
        }
        tracing::info!("the server ended the session; initializing a new one");
        if self.events.try_send(TransportEvent::Restarted).is_err() {
            tracing::warn!("could not ask the client to re-initialize");
        }
    }

    /// Waits until a handshake newer than `seen` completed.
    async fn wait_handshake(&self, seen: u64) -> Result<(), TransportError> {
        let mut rx = self.handshakes.subscribe();
        tokio::select! {
            r = tokio::time::timeout(self.options.reinitialize_timeout, rx.wait_for(|n| *n > seen)) => match r {
                Ok(Ok(_)) => Ok(()),
                _ => Err(TransportError::Other("the session expired and the client did not re-initialize in time".into())),
            },
            _ = self.closing.cancelled() => Err(TransportError::Closed("the client closed the connection".into())),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Requests

    /// Sends request `msg` and routes its answer; errors are the request's.
    async fn exchange(
        self: &Arc<Self>,
        msg: &Outgoing,
        id: &RequestId,
        tx: &mpsc::Sender<Result<Incoming, TransportError>>,
    ) -> Result<(), TransportError> {
        let initialize =
            msg.method.as_deref() == Some(<methods::Initialize as RequestMethod>::NAME);
        let revalidate = etag::key(msg);
        let mut resent = false;
        loop {
            let session = if initialize { None } else { self.session_id() };
            let seen = *self.handshakes.borrow();
            let tag = revalidate.as_deref().and_then(|k| lock(&self.etags).tag(k));
            let mut response = self
                .post_conditional(msg, session.as_deref(), tag.as_ref())
                .await?;
            let status = response.status();
            if let (StatusCode::NOT_MODIFIED, Some(k), Some(tag)) = (status, &revalidate, &tag) {
                // Unchanged: the result kept under the tag sent, for this request's id.
                let kept = lock(&self.etags).result(k, tag);
                if let Some(result) = kept {
                    *lock(&self.evidence) = None;
                    self.deliver(IncomingResponse {
                        id: id.clone(),
                        outcome: Ok(result),
                    })
                    .await;
                    return Ok(());
                }
            }
            if status.is_success() {
                if initialize {
                    let sid = response
                        .headers()
                        .get(SESSION_ID)
                        .and_then(|v| v.to_str().ok())
                        .map(|v| v.trim().to_owned());
                    let mut s = lock(&self.session);
                    s.id = sid;
                    s.streams.cancel();
                    s.streams = self.closing.child_token();
                }
                *lock(&self.evidence) = None;
                return self
                    .read_answer(response, msg, id, tx, revalidate.as_deref())
                    .await;
            }
            let body = self
                .read_body(&mut response, MAX_ERROR_BODY)
                .await
                .unwrap_or_default();
            if let (StatusCode::NOT_FOUND, Some(sid), false) = (status, &session, resent) {
                self.session_expired(sid);
                self.wait_handshake(seen).await?;
                resent = true;
                continue;
            }
            let error = error_in_body(&body);
            let modern = error.as_ref().is_some_and(|e| {
                is_modern_code(e.code)
                    || (status == StatusCode::NOT_FOUND
                        && e.code == crate::jsonrpc::error_code::METHOD_NOT_FOUND)
            });
            *lock(&self.evidence) = crate::era::of_refusal(modern, status.is_client_error());
            if initialize
                && !modern
                && self.options.legacy_sse_fallback
                && matches!(status.as_u16(), 400 | 404 | 405)
            {
                return legacy_sse::fall_back(self, msg, status, &body).await;
            }
            let auth_refused =
                status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN;
            return match error {
                Some(error) if !auth_refused => {
                    self.deliver(IncomingResponse {
                        id: id.clone(),
                        outcome: Err(error),
                    })
                    .await;
                    Ok(())
                }
                _ => Err(TransportError::Http {
                    status: status.as_u16(),
                    body: excerpt(&body),
                }),
            };
        }
    }

    /// Reads a successful answer to request `msg`: a JSON message or an SSE stream.
    async fn read_answer(
        self: &Arc<Self>,
        mut response: reqwest::Response,
        msg: &Outgoing,
        id: &RequestId,
        tx: &mpsc::Sender<Result<Incoming, TransportError>>,
        revalidate: Option<&str>,
    ) -> Result<(), TransportError> {
        let modern = msg
            .protocol_version
            .as_deref()
            .is_some_and(version::is_modern);
        if is_media(response.headers().get(CONTENT_TYPE), "text/event-stream") {
            return self.read_request_stream(response, modern, id, tx).await;
        }
        let status = response.status();
        let tag = response.headers().get(http::header::ETAG).cloned();
        let body = self
            .read_body(&mut response, self.options.max_message_size)
            .await?;
        if body.iter().all(u8::is_ascii_whitespace) {
            if modern {
                return Err(TransportError::Other(format!(
                    "the server answered the request with HTTP {status} and no response"
                )));
            }
            // 2025-11-25: the response may still come on the GET stream.
            tracing::debug!(%id, %status, "the server answered without a body; waiting for the response on another stream");
            return Ok(());
        }
        match decode(&body) {
            Ok(Incoming::Response(r)) if &r.id == id => {
                if let (Some(key), Some(tag), Ok(result)) = (revalidate, tag, &r.outcome) {
                    lock(&self.etags).put(key.to_owned(), tag, result);
                }
                self.deliver(r).await;
                Ok(())
            }
            Ok(Incoming::Response(r)) => {
                self.deliver(r).await;
                Err(TransportError::Other(
                    "the server answered with the response to another request".into(),
                ))
            }
            Ok(other) => {
                let _ = tx.send(Ok(other)).await;
                Err(TransportError::Other(
                    "the server answered with a message that is not the response".into(),
                ))
            }
            Err(e) => match error_in_body(&body) {
                Some(error) => {
                    self.deliver(IncomingResponse {
                        id: id.clone(),
                        outcome: Err(error),
                    })
                    .await;
                    Ok(())
                }
                None => Err(TransportError::Other(format!(
                    "the server's answer is not a JSON-RPC message ({}): {}",
                    e.error.message,
                    excerpt(&body)
                ))),
            },
        }
    }

    /// Sends a notification or a response.
    async fn send_message(self: &Arc<Self>, msg: Outgoing) -> Result<(), TransportError> {
        let session = self.session_id();
        let mut response = self.post(&msg, session.as_deref()).await?;
        let status = response.status();
        if status.is_success() {
            if !is_media(response.headers().get(CONTENT_TYPE), "text/event-stream") {
                // Let the connection go back to the pool.
                let _ = self.read_body(&mut response, MAX_ERROR_BODY).await;
            }
            drop(response);
            let initialized =
                msg.method.as_deref() == Some(<methods::Initialized as NotificationMethod>::NAME);
            if initialized {
                if self.options.get_stream && self.has_session() {
                    self.open_standalone().await;
                }
                self.handshakes.send_modify(|n| *n += 1);
            }
            return Ok(());
        }
        let body = self
            .read_body(&mut response, MAX_ERROR_BODY)
            .await
            .unwrap_or_default();
        if let (StatusCode::NOT_FOUND, Some(sid)) = (status, &session) {
            self.session_expired(sid);
        }
        Err(TransportError::Http {
            status: status.as_u16(),
            body: excerpt(&body),
        })
    }

    /// Ends everything: the session (DELETE), the streams, the requests waiting.
    async fn shut_down(&self, reason: &str) {
        {
            let mut closed = lock(&self.closed);
            if closed.is_some() {
                return;
            }
            *closed = Some(reason.to_owned());
        }
        let session = {
            let mut s = lock(&self.session);
            s.streams.cancel();
            s.id.take()
        };
        if let Some(sid) = session {
            let _ = tokio::time::timeout(Duration::from_secs(5), self.delete_session(&sid)).await;
        }
        self.closing.cancel();
        // Every request still waiting ends with `reason` (set in `closed` above).
        self.pending.close();
        let _ = self
            .events
            .try_send(TransportEvent::Closed(reason.to_owned()));
    }
}

/// The task of one request (Streamable HTTP).
async fn run_request(
    shared: Arc<Shared>,
    msg: Outgoing,
    id: RequestId,
    tx: mpsc::Sender<Result<Incoming, TransportError>>,
) {
    if let Err(e) = shared.exchange(&msg, &id, &tx).await {
        shared.fail(&id, e).await;
    }
}

impl Transport for HttpTransport {
    fn request(&self, msg: Outgoing) -> BoxFuture<'_, Result<RequestStream, TransportError>> {
        Box::pin(async move {
            let shared = &self.shared;
            shared.check_open()?;
            let Some(id) = msg.id.clone() else {
                return Err(TransportError::Other("a request needs an id".into()));
            };
            if let Some(old) = shared.old() {
                return old.request(shared, msg, id).await;
            }
            let (tx, rx) = mpsc::channel(64);
            let waiter = shared
                .pending
                .request_as(id.clone())
                .map_err(|e| TransportError::Other(format!("cannot send the request: {e}")))?;
            let task = tokio::spawn(run_request(shared.clone(), msg, id, tx));
            let guard = RequestGuard {
                task: task.abort_handle(),
            };
            Ok(shared.request_stream(Some(rx), waiter, Some(Box::new(guard))))
        })
    }

    fn send(&self, msg: Outgoing) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            self.shared.check_open()?;
            if let Some(old) = self.shared.old() {
                return old.send(&self.shared, msg).await;
            }
            self.shared.send_message(msg).await
        })
    }

    fn events(&self) -> Option<mpsc::Receiver<TransportEvent>> {
        lock(&self.events).take()
    }

    fn negotiated(&self, era: Era, protocol_version: &str) {
        *lock(&self.shared.negotiated) = Some((era, protocol_version.to_owned()));
    }

    fn cancels_on_drop(&self, era: Era) -> bool {
        era.stream_close_cancels() && self.shared.old().is_none()
    }

    fn mirrors_headers(&self) -> bool {
        true
    }

    fn era_evidence(&self) -> Option<Era> {
        *lock(&self.shared.evidence)
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            self.shared
                .shut_down("the client closed the connection")
                .await;
            Ok(())
        })
    }
}
