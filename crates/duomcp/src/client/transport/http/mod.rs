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
//!
//! (Over 800 lines: one transport, both revisions and the 2024-11-05 fallback, sharing its
//! POST and GET stream handling; the SSE parsing and the legacy transport are in their own
//! files.)

mod legacy_sse;
pub(crate) mod sse;
mod wire;

pub use wire::encode_header_value;

use super::{
    BoxFuture, Outgoing, RequestStream, Routed, Transport, TransportError, TransportEvent,
};
use crate::client::auth::{AuthProvider, Challenge};
use crate::correlation::Waiter;
use crate::era::Era;
use crate::jsonrpc::{decode, Incoming, IncomingResponse, RequestId};
use crate::util::lock;
use bytes::Bytes;
use duomcp_schema::methods::{self, NotificationMethod, RequestMethod};
use duomcp_schema::version;
use http::header::{ACCEPT, CONTENT_TYPE, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use legacy_sse::OldSse;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;
use url::Url;
use wire::{
    error_in_body, excerpt, is_media, is_modern_code, ACCEPT_BOTH, ACCEPT_SSE, LAST_EVENT_ID,
    MCP_METHOD, MCP_NAME, PROTOCOL_VERSION, SESSION_ID,
};

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

/// How an SSE connection ended.
enum StreamEnd {
    /// The awaited response was delivered (or nobody waits for it any more).
    Answered,
    /// The connection ended; `seen`: whether it carried any event.
    Ended { seen: bool, why: Option<String> },
}

/// Where the messages of an SSE stream go, other than responses (always routed by id).
enum Sink<'a> {
    /// A request's stream: to the request.
    Request {
        tx: &'a mpsc::Sender<Result<Incoming, TransportError>>,
        id: &'a RequestId,
    },
    /// The standalone `GET` stream: to the transport's events.
    Events,
}

fn header_value(name: &str, value: &str) -> Option<HeaderValue> {
    match HeaderValue::from_str(value) {
        Ok(v) => Some(v),
        Err(_) => {
            tracing::warn!(
                "not sending the {name} header: its value is not a valid header value: {value:?}"
            );
            None
        }
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
    // Sending HTTP requests

    /// Sends the request `build` makes, with the `Authorization` header of the auth provider;
    /// on `401`/`403` the provider is told and, if it says so, the request is sent again.
    async fn send_http(
        &self,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, TransportError> {
        let mut retries = 0;
        loop {
            let mut request = build();
            if let Some(auth) = &self.options.auth {
                // The provider may bind its headers to the method (DPoP proofs, RFC 9449).
                let (client, built) = request.build_split();
                let built = built.map_err(|e| request_failed(&self.url, &e))?;
                let method = built.method().as_str().to_owned();
                let headers = auth
                    .request_headers(&method, self.url.as_str())
                    .await
                    .map_err(TransportError::Auth)?;
                request = reqwest::RequestBuilder::from_parts(client, built);
                for (name, value) in headers {
                    let Ok(name) = http::HeaderName::try_from(name.as_str()) else {
                        continue;
                    };
                    if let Some(value) = header_value(name.as_str(), &value) {
                        request = request.header(name, value);
                    }
                }
            }
            let response = tokio::select! {
                r = request.send() => r.map_err(|e| request_failed(&self.url, &e))?,
                _ = self.closing.cancelled() => {
                    return Err(TransportError::Closed("the client closed the connection".into()))
                }
            };
            let status = response.status();
            if let (Some(auth), true) = (
                &self.options.auth,
                status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN,
            ) {
                if retries < MAX_AUTH_RETRIES {
                    let values: Vec<String> = response
                        .headers()
                        .get_all(WWW_AUTHENTICATE)
                        .iter()
                        .filter_map(|v| v.to_str().ok())
                        .map(str::to_owned)
                        .collect();
                    let dpop_nonce = response
                        .headers()
                        .get("dpop-nonce")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    let challenge = Challenge {
                        resource_url: self.url.as_str(),
                        status: status.as_u16(),
                        www_authenticate: values.iter().map(String::as_str).collect(),
                        dpop_nonce: dpop_nonce.as_deref(),
                    };
                    if auth
                        .on_challenge(challenge)
                        .await
                        .map_err(TransportError::Auth)?
                    {
                        retries += 1;
                        continue;
                    }
                }
            }
            return Ok(response);
        }
    }

    /// The headers of a POST carrying `msg`.
    fn post_headers(&self, msg: &Outgoing, session: Option<&str>) -> HeaderMap {
        let mut h = self.options.headers.clone();
        h.insert(ACCEPT, HeaderValue::from_static(ACCEPT_BOTH));
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let initialize =
            msg.method.as_deref() == Some(<methods::Initialize as RequestMethod>::NAME);
        // `initialize` is sent before any version is agreed on.
        if let (Some(v), false) = (&msg.protocol_version, initialize) {
            if let Some(v) = header_value("MCP-Protocol-Version", v) {
                h.insert(PROTOCOL_VERSION, v);
            }
        }
        if let Some(m) = msg
            .method
            .as_deref()
            .and_then(|m| header_value("Mcp-Method", m))
        {
            h.insert(MCP_METHOD, m);
        }
        if let Some(n) = &msg.name {
            if let Some(v) = header_value("Mcp-Name", &encode_header_value(n)) {
                h.insert(MCP_NAME, v);
            }
        }
        for (name, value) in &msg.trace_context {
            if let (Ok(name), Ok(value)) = (
                HeaderName::try_from(name.as_str()),
                HeaderValue::from_str(value),
            ) {
                h.insert(name, value);
            }
        }
        for (name, value) in &msg.header_params {
            let Ok(header) = HeaderName::try_from(format!("mcp-param-{name}")) else {
                tracing::warn!("not sending Mcp-Param-{name}: not a valid header name");
                continue;
            };
            if let Some(v) = header_value(header.as_str(), &encode_header_value(value)) {
                h.insert(header, v);
            }
        }
        if let Some(v) = session.and_then(|s| header_value("Mcp-Session-Id", s)) {
            h.insert(SESSION_ID, v);
        }
        h
    }

    async fn post(
        &self,
        msg: &Outgoing,
        session: Option<&str>,
    ) -> Result<reqwest::Response, TransportError> {
        let headers = self.post_headers(msg, session);
        let body = Bytes::from(msg.body.clone());
        self.send_http(|| {
            self.client
                .post(self.url.clone())
                .headers(headers.clone())
                .body(body.clone())
        })
        .await
    }

    /// A `GET` for an SSE stream: the standalone stream, or with `last_event_id` the
    /// resumption of a stream.
    async fn get_stream(
        &self,
        last_event_id: Option<&str>,
        session: Option<&str>,
    ) -> Result<reqwest::Response, TransportError> {
        let mut h = self.options.headers.clone();
        h.insert(ACCEPT, HeaderValue::from_static(ACCEPT_SSE));
        if let Some(v) = self
            .negotiated_version()
            .and_then(|v| header_value("MCP-Protocol-Version", &v))
        {
            h.insert(PROTOCOL_VERSION, v);
        }
        if let Some(v) = session.and_then(|s| header_value("Mcp-Session-Id", s)) {
            h.insert(SESSION_ID, v);
        }
        if let Some(v) = last_event_id.and_then(|id| header_value("Last-Event-ID", id)) {
            h.insert(LAST_EVENT_ID, v);
        }
        self.send_http(|| self.client.get(self.url.clone()).headers(h.clone()))
            .await
    }

    /// `DELETE` of a session (its answer, `405` included, does not matter).
    async fn delete_session(&self, session: &str) {
        let mut h = self.options.headers.clone();
        if let Some(v) = self
            .negotiated_version()
            .and_then(|v| header_value("MCP-Protocol-Version", &v))
        {
            h.insert(PROTOCOL_VERSION, v);
        }
        if let Some(v) = header_value("Mcp-Session-Id", session) {
            h.insert(SESSION_ID, v);
        }
        match self
            .send_http(|| self.client.delete(self.url.clone()).headers(h.clone()))
            .await
        {
            Ok(r) => tracing::debug!(status = %r.status(), "ended the session"),
            Err(e) => tracing::debug!("could not end the session: {e}"),
        }
    }

    /// Reads a whole body, up to `limit` bytes.
    async fn read_body(
        &self,
        response: &mut reqwest::Response,
        limit: usize,
    ) -> Result<Vec<u8>, TransportError> {
        let mut out = Vec::new();
        loop {
            let chunk = tokio::select! {
                c = response.chunk() => c.map_err(|e| request_failed(&self.url, &e))?,
                _ = self.closing.cancelled() => {
                    return Err(TransportError::Closed("the client closed the connection".into()))
                }
            };
            let Some(chunk) = chunk else { return Ok(out) };
            if out.len() + chunk.len() > limit {
                return Err(TransportError::Other(format!(
                    "the server's answer is larger than {limit} bytes"
                )));
            }
            out.extend_from_slice(&chunk);
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

    /// Opens the session's standalone `GET` stream and waits (briefly) until the server
    /// answered it, so that messages the server sends right away are not missed.
    async fn open_standalone(self: &Arc<Self>) {
        let (session, token) = {
            let s = lock(&self.session);
            (s.id.clone(), s.streams.clone())
        };
        let (ready, answered) = oneshot::channel();
        tokio::spawn(standalone(self.clone(), session, token, ready));
        let _ = tokio::time::timeout(Duration::from_secs(2), answered).await;
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
        let mut resent = false;
        loop {
            let session = if initialize { None } else { self.session_id() };
            let seen = *self.handshakes.borrow();
            let mut response = self.post(msg, session.as_deref()).await?;
            let status = response.status();
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
                return self.read_answer(response, msg, id, tx).await;
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
    ) -> Result<(), TransportError> {
        let modern = msg
            .protocol_version
            .as_deref()
            .is_some_and(version::is_modern);
        if is_media(response.headers().get(CONTENT_TYPE), "text/event-stream") {
            return self.read_request_stream(response, modern, id, tx).await;
        }
        let status = response.status();
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

    /// Reads a request's SSE stream until its response; in 2025-11-25 a stream that ends early
    /// is resumed with `GET` and `Last-Event-ID` after the server's `retry:` delay.
    async fn read_request_stream(
        self: &Arc<Self>,
        mut response: reqwest::Response,
        modern: bool,
        id: &RequestId,
        tx: &mpsc::Sender<Result<Incoming, TransportError>>,
    ) -> Result<(), TransportError> {
        let mut parser = sse::Parser::new(self.options.max_message_size);
        let mut failures = 0u32;
        loop {
            let end = self
                .pump(&mut response, &mut parser, &Sink::Request { tx, id })
                .await;
            let (seen, why) = match end {
                StreamEnd::Answered => return Ok(()),
                StreamEnd::Ended { seen, why } => (seen, why),
            };
            self.check_open()?;
            let why = why.unwrap_or_else(|| "the server closed it".into());
            if modern {
                return Err(TransportError::Other(format!(
                    "the response stream ended before the response ({why})"
                )));
            }
            let Some(last) = parser.last_event_id.clone() else {
                return Err(TransportError::Other(format!(
                    "the response stream ended before the response ({why}), and without an event id to resume from"
                )));
            };
            if seen {
                failures = 0;
            }
            // Reconnect, after the server's delay, until a stream is open again.
            response = loop {
                failures += 1;
                if failures > self.options.max_reconnects {
                    return Err(TransportError::Other(format!(
                        "the response stream ended before the response ({why}), and resuming it failed {} times",
                        failures - 1
                    )));
                }
                let delay = parser.retry.unwrap_or(self.options.default_retry);
                tracing::debug!(%id, ?delay, last_event_id = %last, "resuming the response stream");
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = self.closing.cancelled() => {
                        return Err(TransportError::Closed("the client closed the connection".into()))
                    }
                }
                let session = self.session_id();
                let resumed = match self.get_stream(Some(&last), session.as_deref()).await {
                    Ok(r) => r,
                    Err(e @ (TransportError::Closed(_) | TransportError::Auth(_))) => {
                        return Err(e)
                    }
                    Err(e) => {
                        tracing::debug!(%id, "resuming the stream failed: {e}");
                        continue;
                    }
                };
                let status = resumed.status();
                if status.is_success()
                    && is_media(resumed.headers().get(CONTENT_TYPE), "text/event-stream")
                {
                    break resumed;
                }
                if let (StatusCode::NOT_FOUND, Some(sid)) = (status, &session) {
                    self.session_expired(sid);
                    return Err(TransportError::Other(
                        "the session expired before the response arrived".into(),
                    ));
                }
                if status.is_server_error() {
                    continue;
                }
                return Err(TransportError::Http {
                    status: status.as_u16(),
                    body: format!(
                        "resuming the response stream (Last-Event-ID {last}) was refused"
                    ),
                });
            };
            parser.reset_connection();
        }
    }

    /// Reads one SSE connection, routing its messages, until it ends or (for a request's
    /// stream) the response was delivered.
    async fn pump(
        &self,
        response: &mut reqwest::Response,
        parser: &mut sse::Parser,
        sink: &Sink<'_>,
    ) -> StreamEnd {
        let mut events = Vec::new();
        let mut seen = false;
        loop {
            let chunk = tokio::select! {
                c = response.chunk() => c,
                _ = self.closing.cancelled() => {
                    return StreamEnd::Ended { seen, why: Some("the client closed the connection".into()) }
                }
            };
            let bytes = match chunk {
                Ok(Some(b)) => b,
                Ok(None) => return StreamEnd::Ended { seen, why: None },
                Err(e) => {
                    return StreamEnd::Ended {
                        seen,
                        why: Some(chain(&e)),
                    }
                }
            };
            if let Err(e) = parser.feed(&bytes, &mut events) {
                return StreamEnd::Ended { seen, why: Some(e) };
            }
            for event in events.drain(..) {
                seen = true;
                if self.dispatch(event, sink).await {
                    return StreamEnd::Answered;
                }
            }
        }
    }

    /// Routes one SSE event; `true` when the awaited response was delivered or nobody waits
    /// for it any more.
    async fn dispatch(&self, event: sse::Event, sink: &Sink<'_>) -> bool {
        if !event.kind.is_empty() && event.kind != "message" {
            tracing::debug!(kind = %event.kind, "ignored an SSE event of an unknown type");
            return false;
        }
        let message = match decode(event.data.as_bytes()) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(
                    "ignored an undecodable message from the server: {}",
                    e.error.message
                );
                return false;
            }
        };
        match (message, sink) {
            (Incoming::Response(r), Sink::Request { id, .. }) if &r.id == *id => {
                self.deliver(r).await;
                true
            }
            (Incoming::Response(r), _) => {
                self.deliver(r).await;
                false
            }
            (other, Sink::Request { tx, .. }) => tx.send(Ok(other)).await.is_err(),
            (other, Sink::Events) => {
                self.emit(other).await;
                false
            }
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

/// The standalone `GET` stream of a 2025-11-25 session: reconnected (with `Last-Event-ID`)
/// when the server closes it, until the session ends; a `405` means the server offers none.
async fn standalone(
    shared: Arc<Shared>,
    session: Option<String>,
    token: CancellationToken,
    ready: oneshot::Sender<()>,
) {
    let mut ready = Some(ready);
    let mut parser = sse::Parser::new(shared.options.max_message_size);
    let mut failures = 0u32;
    loop {
        let last = parser.last_event_id.clone();
        let response = tokio::select! {
            r = shared.get_stream(last.as_deref(), session.as_deref()) => r,
            _ = token.cancelled() => return,
        };
        if let Some(ready) = ready.take() {
            let _ = ready.send(());
        }
        match response {
            Ok(mut r)
                if r.status().is_success()
                    && is_media(r.headers().get(CONTENT_TYPE), "text/event-stream") =>
            {
                parser.reset_connection();
                let end = tokio::select! {
                    e = shared.pump(&mut r, &mut parser, &Sink::Events) => e,
                    _ = token.cancelled() => return,
                };
                match end {
                    StreamEnd::Ended { seen: true, .. } => failures = 0,
                    _ => failures += 1,
                }
            }
            Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => {
                tracing::debug!("the server offers no GET stream");
                return;
            }
            Ok(r) if r.status() == StatusCode::NOT_FOUND && session.is_some() => {
                if let Some(sid) = &session {
                    shared.session_expired(sid);
                }
                return;
            }
            Ok(r) => {
                tracing::debug!(status = %r.status(), "the server refused the GET stream");
                return;
            }
            Err(TransportError::Closed(_)) => return,
            Err(e) => {
                tracing::debug!("the GET stream failed: {e}");
                failures += 1;
            }
        }
        if failures > shared.options.max_reconnects {
            tracing::debug!("giving up the GET stream after {failures} failures");
            return;
        }
        let delay = parser.retry.unwrap_or(shared.options.default_retry) * failures.max(1);
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = token.cancelled() => return,
        }
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
