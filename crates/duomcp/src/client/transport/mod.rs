//! How the client reaches a server: a small trait every transport implements.
//!
//! A transport moves encoded JSON-RPC messages and never interprets MCP methods. It offers
//! three things:
//!
//! * [`Transport::request`]: send one request and get a [`RequestStream`] of the messages the
//!   transport can tie to it, ending with its response. On stdio that is just the response
//!   (matched by id); on Streamable HTTP it is the POST's JSON body or SSE stream (progress, log
//!   messages, legacy server→client requests, then the response).
//! * [`Transport::send`]: send a notification, or the response to a server→client request.
//! * [`Transport::events`]: everything not tied to a request (stdio: every notification and
//!   server→client request; HTTP: the legacy GET stream), plus restarts and closure.
//!
//! [`Outgoing`] carries, next to the encoded body, the values a Streamable HTTP transport
//! mirrors into headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`), so a
//! transport never has to parse what it sends. The client runtime does all correlation that
//! needs MCP knowledge (progress tokens, subscription ids) the same way for every transport.
//!
//! Implementations: [`StreamTransport`] (newline-delimited JSON over any
//! `AsyncRead`/`AsyncWrite` pair), [`ProcessTransport`] (a child process's stdin/stdout) and,
//! with feature `http-client`, [`http::HttpTransport`] (Streamable HTTP, and the 2024-11-05
//! HTTP+SSE transport as a fallback).
//!
#![cfg_attr(
    not(feature = "http-client"),
    doc = "[`http::HttpTransport`]: crate#features"
)]

#[cfg(feature = "http-client")]
pub mod http;
mod process;
pub(crate) mod stream;

pub use process::{ProcessOptions, ProcessTransport, MAX_RESTART_BACKOFF, RESTART_COUNT_RESET};
pub use stream::StreamTransport;

use crate::correlation::{Correlation, Limits, Waiter};
use crate::era::Era;
use crate::jsonrpc::{Incoming, IncomingResponse, RequestId};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// A boxed, sendable future, as the [`Transport`] methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One encoded message to send, with the values HTTP mirrors into headers.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Outgoing {
    /// The JSON-RPC id: set for requests and for responses.
    pub id: Option<RequestId>,
    /// The method of a request or notification (`Mcp-Method`).
    pub method: Option<String>,
    /// `params.name` of `tools/call` and `prompts/get`, `params.uri` of `resources/read`
    /// (`Mcp-Name`).
    pub name: Option<String>,
    /// The protocol version the message speaks (`MCP-Protocol-Version`), once known.
    pub protocol_version: Option<String>,
    /// `Mcp-Param-{name}` values of a 2026-07-28 `tools/call`, from the tool's `x-mcp-header`
    /// annotations: `(name, value)`, the value not yet encoded (set only for transports that
    /// [mirror headers](Transport::mirrors_headers)).
    pub header_params: Vec<(String, String)>,
    /// W3C trace context of the request (`traceparent`, `tracestate`: feature `otel`), sent as
    /// HTTP headers by transports that have them; the same context is in the body's `_meta`.
    pub trace_context: Vec<(String, String)>,
    /// The encoded JSON-RPC message, without framing.
    pub body: Vec<u8>,
}

impl Outgoing {
    /// A message with only a body; the header values are left empty.
    ///
    /// ```
    /// use duomcp::client::transport::Outgoing;
    /// let msg = Outgoing::new(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec());
    /// assert!(msg.id.is_none() && msg.method.is_none());
    /// ```
    pub fn new(body: Vec<u8>) -> Self {
        Outgoing {
            id: None,
            method: None,
            name: None,
            protocol_version: None,
            header_params: Vec::new(),
            trace_context: Vec::new(),
            body,
        }
    }
}

/// Why a transport could not deliver a message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The connection is closed (the server exited, the stream ended, or `close` was called).
    #[error("connection closed: {0}")]
    Closed(String),
    /// An I/O error.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The server answered with an HTTP error status and no JSON-RPC error to report.
    #[error("HTTP {status}{}", if body.is_empty() { String::new() } else { format!(": {body}") })]
    Http {
        /// The status code.
        status: u16,
        /// What the body said (shortened).
        body: String,
    },
    /// Authorization could not be obtained (see [`AuthProvider`](crate::client::auth::AuthProvider)).
    #[error(transparent)]
    Auth(#[from] crate::client::auth::AuthError),
    /// Anything else the transport wants to report (a malformed stream…).
    #[error("{0}")]
    Other(String),
}

/// Something that happened on the connection outside any request.
#[derive(Debug)]
#[non_exhaustive]
pub enum TransportEvent {
    /// A message not tied to a request: a notification or a server→client request.
    Message(Incoming),
    /// The transport reconnected (a restarted server process); server-side state is gone.
    Restarted,
    /// The connection ended for good; the text says why.
    Closed(String),
}

/// The messages a transport ties to one request, ending with its response.
///
/// Dropping it before the response abandons the request at the transport level (the pending
/// entry is removed; an HTTP transport closes the response stream).
pub struct RequestStream {
    /// Messages the transport ties to the request before its response (HTTP: the POST's
    /// stream), or everything, response included (a transport of the user's).
    rx: Option<mpsc::Receiver<Result<Incoming, TransportError>>>,
    /// The response, routed by id through the transport's [`Correlation`] engine.
    answer: Option<Answer>,
    _guard: Option<Box<dyn Send + Sync>>,
    order: Order,
    /// What the transport saw that may explain a missing response (see [`Self::note`]).
    note: Option<Note>,
}

/// See [`RequestStream::with_note`].
type Note = Box<dyn Fn() -> Option<String> + Send + Sync>;

/// A response on its way through a transport's correlation engine.
struct Answer {
    waiter: Waiter<Routed>,
    /// What to report when the engine closes before the response came.
    closed: Box<dyn Fn() -> TransportError + Send + Sync>,
}

/// What a client transport's correlation engine delivers to a request: its response (or why
/// there is none), and, for transports that read responses and events from one ordered
/// connection, how many event messages preceded it (see [`RequestStream::ordered`]).
pub(crate) struct Routed {
    pub response: Result<IncomingResponse, TransportError>,
    pub events_before: Option<u64>,
}

/// The correlation engine of a client transport: its requests waiting for their responses
/// (ids are the runtime's), and the server's requests running (the runtime's own engine).
pub(crate) type Pending = Correlation<Routed>;

/// A client transport's pending-requests engine with the default bounds.
pub(crate) fn pending() -> Pending {
    Correlation::new("c-", Limits::default())
}

enum Order {
    None,
    Counter(Arc<AtomicU64>),
    Known(u64),
}

impl std::fmt::Debug for RequestStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestStream").finish_non_exhaustive()
    }
}

impl RequestStream {
    /// A stream fed by `rx`; `guard` is dropped together with the stream (use it to clean up).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use duomcp::client::transport::RequestStream;
    /// let (tx, rx) = tokio::sync::mpsc::channel(1);
    /// let mut stream = RequestStream::new(rx, None);
    /// drop(tx);
    /// assert!(stream.next().await.is_none());
    /// # });
    /// ```
    pub fn new(
        rx: mpsc::Receiver<Result<Incoming, TransportError>>,
        guard: Option<Box<dyn Send + Sync>>,
    ) -> Self {
        RequestStream {
            rx: Some(rx),
            answer: None,
            _guard: guard,
            order: Order::None,
            note: None,
        }
    }

    /// A stream whose response comes through `waiter` (the transport's correlation engine),
    /// after what `rx` carries, if anything. `closed` words the end of the engine.
    pub(crate) fn routed(
        rx: Option<mpsc::Receiver<Result<Incoming, TransportError>>>,
        waiter: Waiter<Routed>,
        closed: impl Fn() -> TransportError + Send + Sync + 'static,
        guard: Option<Box<dyn Send + Sync>>,
    ) -> Self {
        RequestStream {
            rx,
            answer: Some(Answer {
                waiter,
                closed: Box::new(closed),
            }),
            _guard: guard,
            order: Order::None,
            note: None,
        }
    }

    /// Gives the stream a note to read when its response does not come: something the
    /// transport saw that may be why (e.g. a line from the server that was not a message).
    pub(crate) fn with_note(
        mut self,
        note: impl Fn() -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.note = Some(Box::new(note));
        self
    }

    /// What the transport saw that may explain why no response came, if anything.
    pub(crate) fn note(&self) -> Option<String> {
        self.note.as_ref().and_then(|note| note())
    }

    /// For transports that read a request's response and the unrelated messages from one
    /// ordered connection (stdio): before delivering the response, the transport stores in
    /// `counter` how many [`TransportEvent::Message`]s it had sent on [`Transport::events`]
    /// until then. The runtime handles those first, so a progress or log notification the
    /// server sent before the response is seen before the call returns.
    pub fn ordered(mut self, counter: Arc<AtomicU64>) -> Self {
        self.order = Order::Counter(counter);
        self
    }

    /// How many event messages preceded the response (see [`ordered`](Self::ordered)).
    pub(crate) fn messages_before_response(&self) -> Option<u64> {
        match &self.order {
            Order::None => None,
            Order::Counter(c) => Some(c.load(Ordering::SeqCst)),
            Order::Known(n) => Some(*n),
        }
    }

    /// The next message; `None` when the transport ended the stream without a reason.
    pub async fn next(&mut self) -> Option<Result<Incoming, TransportError>> {
        loop {
            let Some(answer) = &mut self.answer else {
                return match &mut self.rx {
                    Some(rx) => rx.recv().await,
                    None => None,
                };
            };
            // What the transport sent before the response comes first.
            let routed = match &mut self.rx {
                Some(rx) => tokio::select! {
                    biased;
                    message = rx.recv() => match message {
                        Some(message) => return Some(message),
                        None => {
                            self.rx = None;
                            continue;
                        }
                    },
                    routed = answer.waiter.recv() => routed,
                },
                None => answer.waiter.recv().await,
            };
            let routed = routed.map_err(|_| (answer.closed)());
            self.answer = None;
            return Some(match routed {
                Ok(Routed {
                    response,
                    events_before,
                }) => {
                    if let Some(n) = events_before {
                        self.order = Order::Known(n);
                    }
                    response.map(Incoming::Response)
                }
                Err(closed) => Err(closed),
            });
        }
    }
}

/// A connection to one server, as the client runtime uses it.
///
/// See the [module documentation](self) for what each method means on stdio and on HTTP.
pub trait Transport: Send + Sync + 'static {
    /// Sends a request (`msg.id` and `msg.method` are set) and returns the stream of messages
    /// tied to it. The stream must be registered before the request is written, so that a
    /// fast response cannot be missed.
    fn request(&self, msg: Outgoing) -> BoxFuture<'_, Result<RequestStream, TransportError>>;

    /// Sends a notification or a response.
    fn send(&self, msg: Outgoing) -> BoxFuture<'_, Result<(), TransportError>>;

    /// The stream of messages not tied to a request. Returns `Some` once; the runtime takes it
    /// when it connects.
    fn events(&self) -> Option<mpsc::Receiver<TransportEvent>>;

    /// Tells the transport which era and version were negotiated (HTTP sends the version header
    /// from then on and, in the legacy era, may open its GET stream). Default: nothing.
    fn negotiated(&self, era: Era, protocol_version: &str) {
        let _ = (era, protocol_version);
    }

    /// Whether dropping a [`RequestStream`] already cancels the request on the wire (2026-07-28
    /// Streamable HTTP: closing the response stream is the cancellation). When `false` the
    /// runtime sends `notifications/cancelled`. Default: `false`.
    fn cancels_on_drop(&self, era: Era) -> bool {
        let _ = era;
        false
    }

    /// Whether the transport mirrors request values into headers (Streamable HTTP). The runtime
    /// then fills [`Outgoing::header_params`] in the 2026-07-28 era and drops listed tools with
    /// invalid `x-mcp-header` annotations, as HTTP clients must. Default: `false`.
    fn mirrors_headers(&self) -> bool {
        false
    }

    /// What the transport itself saw about the server's era when the last request failed
    /// (Streamable HTTP: a `400` carrying `-32020`/`-32021`/`-32022`, or a `404` carrying
    /// `-32601`, comes from a 2026-07-28 server; another `4xx` from an older one). The era probe
    /// reads it to tell "not a 2026-07-28 server" from "a 2026-07-28 server refusing the probe".
    /// Default: `None`.
    fn era_evidence(&self) -> Option<Era> {
        None
    }

    /// Closes the connection gracefully (a child process: close stdin, wait, SIGTERM, SIGKILL).
    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>>;
}
