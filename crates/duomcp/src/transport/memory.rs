//! In-memory connections: a client and a server in one process, joined by a pair of message
//! channels (no process, no pipe, no socket, no framing), which a test can tap, script or drive.
//!
//! A [`Connection`] is one end: a sender and a receiver of encoded JSON-RPC messages, in the
//! manner of lsp-server's. The server's end runs the very loop stdio runs
//! ([`Server::serve_memory`]: same limits, same concurrency, both revisions on one connection),
//! and the client's end is an ordinary transport ([`MemoryTransport`]), so a test exercises
//! the whole stack but the operating system.
//!
//! * **Connect** a client to a server in one line, with a [`Tap`] recording every message
//!   both ways: [`connect`] (or [`connect_with`] for a configured client).
//! * **Drive** a server with messages of your own: keep one end of [`Connection::memory`] and
//!   serve the other with [`Server::serve_memory`].
//! * **Script** a server against a real client: give one end to a [`MemoryTransport`] and
//!   answer on the other.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use duomcp::server::Server;
//! use duomcp::transport::memory::{self, Side};
//!
//! let server = Server::builder().tool("hi", || async { "hello" }).build();
//! let (client, tap) = memory::connect(server).await.unwrap();
//! assert_eq!(client.protocol_version(), "2026-07-28");
//! let tools = client.list_tools(None).await.unwrap();
//! assert_eq!(tools.tools[0].name, "hi");
//! // What went over the connection, as the server saw it.
//! let sent = tap.from(Side::Client);
//! assert!(sent.iter().any(|m| m["method"] == "tools/list"));
//! # });
//! ```
#![cfg_attr(
    not(feature = "client"),
    doc = "[`MemoryTransport`]: crate#features\n[`connect`]: crate#features\n[`connect_with`]: crate#features"
)]

use crate::jsonrpc::{MessageReader, MessageWriter};
use crate::server::Server;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, Notify};

/// How many messages each direction of a [`Connection::memory`] pair buffers before a sender
/// waits for the receiver (as a pipe's buffer would).
pub const CAPACITY: usize = 256;

/// How many messages a [`Tap`] keeps: the most recent ones (the count of those dropped is in
/// [`Tap::dropped`]).
pub const TAP_LIMIT: usize = 4096;

/// One end of an in-memory, message-level connection: what it sends arrives whole at the
/// other end's receiver, in order. Each message is one encoded JSON-RPC message (no newline).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use duomcp::transport::memory::Connection;
/// use serde_json::json;
///
/// let server = duomcp::server::Server::builder().build();
/// let (mut client_end, server_end) = Connection::memory();
/// tokio::spawn(server.serve_memory(server_end));
/// client_end.send_json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).await.unwrap();
/// let answer = client_end.recv_json().await.unwrap();
/// assert_eq!(answer, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
/// # });
/// ```
#[derive(Debug)]
pub struct Connection {
    /// Sends a message to the other end.
    pub sender: mpsc::Sender<Vec<u8>>,
    /// Receives the other end's messages; `None` once it is dropped.
    pub receiver: mpsc::Receiver<Vec<u8>>,
}

/// Why [`Connection::send`] or [`Connection::recv_json`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// The other end was dropped (or, receiving, has nothing more to send).
    #[error("the other end of the in-memory connection is gone")]
    Closed,
    /// The message received is not JSON.
    #[error("the message received is not JSON: {0}")]
    NotJson(#[from] serde_json::Error),
}

impl Connection {
    /// Two connected ends, each direction buffering [`CAPACITY`] messages.
    pub fn memory() -> (Connection, Connection) {
        let (a_tx, a_rx) = mpsc::channel(CAPACITY);
        let (b_tx, b_rx) = mpsc::channel(CAPACITY);
        (
            Connection {
                sender: a_tx,
                receiver: b_rx,
            },
            Connection {
                sender: b_tx,
                receiver: a_rx,
            },
        )
    }

    /// Two connected ends with a [`Tap`] between them recording every message: those sent on
    /// the first end as [`Side::Client`]'s, those sent on the second as [`Side::Server`]'s.
    /// The messages are passed on unchanged and in order; dropping either end ends the other.
    /// Needs a Tokio runtime (a task forwards each direction).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use duomcp::transport::memory::{Connection, Side};
    /// let (a, mut b, tap) = Connection::tapped();
    /// a.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec()).await.unwrap();
    /// assert!(b.recv().await.is_some());
    /// assert_eq!(tap.from(Side::Client)[0]["method"], "notifications/initialized");
    /// # });
    /// ```
    pub fn tapped() -> (Connection, Connection, Tap) {
        let (client, near) = Connection::memory();
        let (far, server) = Connection::memory();
        let tap = Tap::new();
        tokio::spawn(forward(
            near.receiver,
            far.sender,
            tap.clone(),
            Side::Client,
        ));
        tokio::spawn(forward(
            far.receiver,
            near.sender,
            tap.clone(),
            Side::Server,
        ));
        (client, server, tap)
    }

    /// Sends one encoded message; waits while the other end's buffer is full.
    pub async fn send(&self, message: Vec<u8>) -> Result<(), MemoryError> {
        self.sender
            .send(message)
            .await
            .map_err(|_| MemoryError::Closed)
    }

    /// Sends `message` encoded as JSON.
    pub async fn send_json(&self, message: &Value) -> Result<(), MemoryError> {
        self.send(serde_json::to_vec(message)?).await
    }

    /// The next message from the other end; `None` once it is dropped and nothing is left.
    pub async fn recv(&mut self) -> Option<Vec<u8>> {
        self.receiver.recv().await
    }

    /// The next message from the other end, parsed as JSON.
    pub async fn recv_json(&mut self) -> Result<Value, MemoryError> {
        let message = self.recv().await.ok_or(MemoryError::Closed)?;
        Ok(serde_json::from_slice(&message)?)
    }
}

/// Passes messages from `rx` to `tx`, recording each, until either end is gone.
async fn forward(mut rx: mpsc::Receiver<Vec<u8>>, tx: mpsc::Sender<Vec<u8>>, tap: Tap, from: Side) {
    while let Some(message) = rx.recv().await {
        tap.record(from, &message);
        if tx.send(message).await.is_err() {
            break;
        }
    }
}

/// Which end of a tapped connection sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The first end of [`Connection::tapped`]: the client's.
    Client,
    /// The second end: the server's.
    Server,
}

/// One message a [`Tap`] saw.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Tapped {
    /// Who sent it.
    pub from: Side,
    /// When, counted from the tap's start.
    pub at: Duration,
    /// The encoded message, as sent.
    pub message: Vec<u8>,
}

impl Tapped {
    /// The message parsed as JSON (`Value::Null` if it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.message).unwrap_or(Value::Null)
    }
}

/// A record of the messages that crossed a tapped connection ([`Connection::tapped`],
/// `connect`), both ways, in the order they crossed. It keeps the last [`TAP_LIMIT`].
/// Clones share the record.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use duomcp::transport::memory::{self, Side};
/// use std::time::Duration;
///
/// let server = duomcp::server::Server::builder().build();
/// let (client, tap) = memory::connect(server).await.unwrap();
/// client.list_tools(None).await.unwrap();
/// let list = tap.wait_for(Side::Client, "tools/list", Duration::from_secs(5)).await.unwrap();
/// assert_eq!(list["jsonrpc"], "2.0");
/// # });
/// ```
#[derive(Clone, Debug)]
pub struct Tap {
    inner: Arc<TapInner>,
}

#[derive(Debug)]
struct TapInner {
    log: Mutex<VecDeque<Tapped>>,
    dropped: AtomicU64,
    changed: Notify,
    start: tokio::time::Instant,
}

impl Tap {
    fn new() -> Tap {
        Tap {
            inner: Arc::new(TapInner {
                log: Mutex::new(VecDeque::new()),
                dropped: AtomicU64::new(0),
                changed: Notify::new(),
                start: tokio::time::Instant::now(),
            }),
        }
    }

    fn log(&self) -> std::sync::MutexGuard<'_, VecDeque<Tapped>> {
        crate::util::lock(&self.inner.log)
    }

    fn record(&self, from: Side, message: &[u8]) {
        let tapped = Tapped {
            from,
            at: self.inner.start.elapsed(),
            message: message.to_vec(),
        };
        {
            let mut log = self.log();
            if log.len() >= TAP_LIMIT {
                log.pop_front();
                self.inner.dropped.fetch_add(1, Ordering::Relaxed);
            }
            log.push_back(tapped);
        }
        self.inner.changed.notify_waiters();
    }

    /// Every message kept, in the order they crossed.
    pub fn messages(&self) -> Vec<Tapped> {
        self.log().iter().cloned().collect()
    }

    /// The messages `side` sent, parsed as JSON, in order.
    pub fn from(&self, side: Side) -> Vec<Value> {
        self.log()
            .iter()
            .filter(|t| t.from == side)
            .map(Tapped::json)
            .collect()
    }

    /// How many messages were dropped from the record to keep it at [`TAP_LIMIT`].
    pub fn dropped(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }

    /// Empties the record (the count of dropped messages stays).
    pub fn clear(&self) {
        self.log().clear();
    }

    /// The first message kept that `side` sent with this `method` (a request or a
    /// notification), waiting up to `within` for one to cross; `None` if none did.
    pub async fn wait_for(&self, side: Side, method: &str, within: Duration) -> Option<Value> {
        let find = || {
            self.log()
                .iter()
                .filter(|t| t.from == side)
                .map(Tapped::json)
                .find(|m| m["method"] == method)
        };
        let deadline = tokio::time::Instant::now() + within;
        loop {
            // Registered before looking, so that a message recorded meanwhile wakes it.
            let changed = self.inner.changed.notified();
            if let Some(found) = find() {
                return Some(found);
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return find();
            }
        }
    }
}

impl Server {
    /// Serves one in-memory connection ([`Connection::memory`]) until its other end is dropped
    /// (or [`Server::shutdown`] is called): the loop [`serve_connection`](Server::serve_connection)
    /// runs, with whole messages instead of lines. A message over
    /// [`ServerConfig::max_message_size`](crate::server::ServerConfig) is refused as a line that
    /// long would be.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use duomcp::transport::memory::Connection;
    /// let server = duomcp::server::Server::builder().build();
    /// let (client_end, server_end) = Connection::memory();
    /// let serving = tokio::spawn(server.serve_memory(server_end));
    /// drop(client_end);
    /// serving.await.unwrap().unwrap(); // ends with its client's end
    /// # });
    /// ```
    pub async fn serve_memory(self, connection: Connection) -> std::io::Result<()> {
        let max = self.shared.config.max_message_size;
        let reader = MessageReader::new(connection.receiver, max);
        self.serve_messages(reader, MessageWriter::new(connection.sender))
            .await
    }
}

#[cfg(feature = "client")]
pub use client_side::*;

#[cfg(feature = "client")]
mod client_side {
    use super::{Connection, Tap};
    // The largest message it accepts from the server is the stdio client's.
    use crate::client::transport::stream::{Core, MAX_MESSAGE};
    use crate::client::transport::{
        BoxFuture, Outgoing, RequestStream, Transport, TransportError, TransportEvent,
    };
    use crate::client::{Client, ClientBuilder, ClientError};
    use crate::jsonrpc::{MessageReader, MessageWriter};
    use crate::server::Server;
    use crate::util::lock;
    use std::sync::{Arc, Mutex};
    use tokio::sync::mpsc;
    use tokio::task::JoinHandle;

    /// A client transport over one end of an in-memory [`Connection`]: what the stdio client
    /// does, with whole messages instead of lines.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use duomcp::client::Client;
    /// use duomcp::transport::memory::{Connection, MemoryTransport};
    /// use serde_json::json;
    ///
    /// // A scripted server: answer the client's first request by hand.
    /// let (client_end, mut server_end) = Connection::memory();
    /// tokio::spawn(async move {
    ///     let request = server_end.recv_json().await.unwrap();
    ///     assert_eq!(request["method"], "server/discover");
    ///     let error = json!({"code": -32601, "message": "Method not found"});
    ///     let answer = json!({"jsonrpc": "2.0", "id": request["id"], "error": error});
    ///     server_end.send_json(&answer).await.unwrap();
    ///     // … and so on; dropping `server_end` ends the connection.
    /// });
    /// let connected = Client::builder().connect_transport(MemoryTransport::new(client_end)).await;
    /// assert!(connected.is_err()); // the script stopped before a handshake
    /// # });
    /// ```
    pub struct MemoryTransport {
        core: Core,
        events: Mutex<Option<mpsc::Receiver<TransportEvent>>>,
    }

    impl std::fmt::Debug for MemoryTransport {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("MemoryTransport").finish_non_exhaustive()
        }
    }

    impl MemoryTransport {
        /// Starts the transport's reader and writer tasks on `connection` (needs a Tokio
        /// runtime).
        pub fn new(connection: Connection) -> MemoryTransport {
            let (tx, rx) = mpsc::channel(1024);
            let reader = MessageReader::new(connection.receiver, MAX_MESSAGE);
            let writer = MessageWriter::new(connection.sender);
            MemoryTransport {
                core: Core::start_messages(reader, writer, tx, Arc::default(), None, true),
                events: Mutex::new(Some(rx)),
            }
        }
    }

    impl Transport for MemoryTransport {
        fn request(&self, msg: Outgoing) -> BoxFuture<'_, Result<RequestStream, TransportError>> {
            Box::pin(self.core.request(msg))
        }

        fn send(&self, msg: Outgoing) -> BoxFuture<'_, Result<(), TransportError>> {
            Box::pin(self.core.send(msg))
        }

        fn events(&self) -> Option<mpsc::Receiver<TransportEvent>> {
            lock(&self.events).take()
        }

        fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
            Box::pin(async move {
                self.core.close_writer().await;
                Ok(())
            })
        }
    }

    /// Serves `server` on a new in-memory connection and returns the client's end of it as a
    /// transport, with the task serving the server's end (it ends when the client's end is
    /// dropped or closed, or on [`Server::shutdown`]). Needs a Tokio runtime.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = duomcp::server::Server::builder().build();
    /// let (transport, serving) = duomcp::transport::memory::pair(server);
    /// let client = duomcp::client::Client::builder().connect_transport(transport).await.unwrap();
    /// client.close().await.unwrap();
    /// serving.await.unwrap().unwrap(); // the server's end stops with the client's
    /// # });
    /// ```
    pub fn pair(server: Server) -> (MemoryTransport, JoinHandle<std::io::Result<()>>) {
        let (client_end, server_end) = Connection::memory();
        let serving = tokio::spawn(server.serve_memory(server_end));
        (MemoryTransport::new(client_end), serving)
    }

    /// A client connected to `server` in memory, with a [`Tap`] on the connection. The
    /// server's end is served on a task of its own, which ends with the client.
    /// Needs a Tokio runtime. See the [module](super) for an example.
    pub async fn connect(server: Server) -> Result<(Client, Tap), ClientError> {
        connect_with(Client::builder(), server).await
    }

    /// [`connect`] with a client configured by `builder` (its revision, handlers, timeouts…).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use duomcp::client::{Client, EraChoice};
    /// use duomcp::transport::memory;
    ///
    /// let server = duomcp::server::Server::builder().build();
    /// let builder = Client::builder().era(EraChoice::Legacy);
    /// let (client, _tap) = memory::connect_with(builder, server).await.unwrap();
    /// assert_eq!(client.protocol_version(), "2025-11-25");
    /// # });
    /// ```
    pub async fn connect_with(
        builder: ClientBuilder,
        server: Server,
    ) -> Result<(Client, Tap), ClientError> {
        let (client_end, server_end, tap) = Connection::tapped();
        tokio::spawn(server.serve_memory(server_end));
        let client = builder
            .connect_transport(MemoryTransport::new(client_end))
            .await?;
        Ok((client, tap))
    }
}
