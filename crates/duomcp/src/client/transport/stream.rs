//! Newline-delimited JSON-RPC over any byte stream (the stdio framing of both revisions).

use super::{
    BoxFuture, Outgoing, Pending, RequestStream, Routed, Transport, TransportError, TransportEvent,
};
use crate::jsonrpc::{decode, Incoming, Line, LineReader, ReadMessages, RequestId, WriteMessages};
use crate::util::{excerpt_bytes, lock, EXCERPT_CHARS};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncWrite, BufReader, BufWriter};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Largest message the client accepts from a server (64 MiB; resources can be big).
pub(crate) const MAX_MESSAGE: usize = 64 * 1024 * 1024;

/// State the reader task shares with the sending side.
struct Shared {
    /// Requests awaiting a response, by id (the correlation engine).
    pending: Pending,
    closed: Mutex<Option<String>>,
    /// The first line the server wrote that is not a JSON-RPC message, quoted: said again in
    /// the error that ends the connection (a stdio server that logs to stdout).
    stray: Mutex<Option<String>>,
    /// Whether `stray` quotes the line (else it only says there was one: see
    /// `ProcessOptions::quote_stray_lines`).
    quote: bool,
    /// Event messages sent so far (shared by the instances of a restarted process).
    sent: Arc<AtomicU64>,
}

impl Shared {
    fn closed_error(&self) -> Option<TransportError> {
        lock(&self.closed).clone().map(TransportError::Closed)
    }
}

/// Computes why the stream ended (a child process: its exit status).
pub(crate) type EofReason = BoxFuture<'static, String>;

/// The engine of a newline-delimited connection: a writer task, a reader task and the table of
/// requests awaiting a response. The reader never waits on the application: responses go to
/// their request's channel, everything else to the events channel.
pub(crate) struct Core {
    shared: Arc<Shared>,
    writer: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    writer_task: Mutex<Option<JoinHandle<()>>>,
}

impl Core {
    pub(crate) fn start<R, W>(
        reader: R,
        writer: W,
        events: mpsc::Sender<TransportEvent>,
        sent: Arc<AtomicU64>,
        eof_reason: Option<EofReason>,
        quote: bool,
    ) -> Core
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let lines = LineReader::new(BufReader::with_capacity(64 * 1024, reader), MAX_MESSAGE);
        let writer = BufWriter::with_capacity(64 * 1024, writer);
        Core::start_messages(lines, writer, events, sent, eof_reason, quote)
    }

    /// [`Core::start`] on whole messages, however they are carried (an in-memory connection).
    pub(crate) fn start_messages<I, O>(
        reader: I,
        writer: O,
        events: mpsc::Sender<TransportEvent>,
        sent: Arc<AtomicU64>,
        eof_reason: Option<EofReason>,
        quote: bool,
    ) -> Core
    where
        I: ReadMessages + 'static,
        O: WriteMessages + 'static,
    {
        let shared = Arc::new(Shared {
            pending: super::pending(),
            closed: Mutex::default(),
            stray: Mutex::default(),
            quote,
            sent,
        });
        let (tx, rx) = mpsc::channel::<Vec<u8>>(256);
        let writer_task = tokio::spawn(write_loop(writer, rx, shared.clone()));
        tokio::spawn(read_loop(reader, shared.clone(), events, eof_reason));
        Core {
            shared,
            writer: Mutex::new(Some(tx)),
            writer_task: Mutex::new(Some(writer_task)),
        }
    }

    fn writer(&self) -> Result<mpsc::Sender<Vec<u8>>, TransportError> {
        if let Some(e) = self.shared.closed_error() {
            return Err(e);
        }
        lock(&self.writer)
            .clone()
            .ok_or_else(|| TransportError::Closed("the connection was closed by the client".into()))
    }

    pub(crate) async fn request(&self, msg: Outgoing) -> Result<RequestStream, TransportError> {
        let Some(id) = msg.id else {
            return Err(TransportError::Other("a request needs an id".into()));
        };
        let writer = self.writer()?;
        // Registered before the request is written, so that a fast response finds it.
        let waiter = self
            .shared
            .pending
            .request_as(id)
            .map_err(|e| TransportError::Other(format!("cannot send the request: {e}")))?;
        if writer.send(msg.body).await.is_err() {
            return Err(self
                .shared
                .closed_error()
                .unwrap_or_else(|| TransportError::Closed("the writer stopped".into())));
        }
        let shared = self.shared.clone();
        let closed = move || {
            shared
                .closed_error()
                .unwrap_or_else(|| TransportError::Closed("the connection ended".into()))
        };
        let shared = self.shared.clone();
        let note = move || lock(&shared.stray).clone();
        Ok(RequestStream::routed(None, waiter, closed, None).with_note(note))
    }

    pub(crate) async fn send(&self, msg: Outgoing) -> Result<(), TransportError> {
        let writer = self.writer()?;
        writer.send(msg.body).await.map_err(|_| {
            self.shared
                .closed_error()
                .unwrap_or_else(|| TransportError::Closed("the writer stopped".into()))
        })
    }

    /// Stops writing: the queue is flushed and the write half shut down (the peer sees EOF).
    pub(crate) async fn close_writer(&self) {
        drop(lock(&self.writer).take());
        let task = lock(&self.writer_task).take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

async fn write_loop<O: WriteMessages>(
    mut w: O,
    mut rx: mpsc::Receiver<Vec<u8>>,
    shared: Arc<Shared>,
) {
    let result: std::io::Result<()> = async {
        while let Some(frame) = rx.recv().await {
            w.write_message(&frame).await?;
            // With other requests in flight, let the tasks that are ready run first: requests
            // they send join this write. (The writer, woken by the first request, would
            // otherwise run at once on an idle worker and write each request on its own, waking
            // the server once per request: measured, bench/README.md "Gateway", round 9.)
            if shared.pending.counts().0 > 1 {
                tokio::task::yield_now().await;
            }
            while let Ok(frame) = rx.try_recv() {
                w.write_message(&frame).await?;
            }
            w.flush().await?;
        }
        w.flush().await?;
        w.shutdown().await
    }
    .await;
    if let Err(e) = result {
        // The reader sees the end of the connection and reports it; this is only a hint why.
        tracing::debug!("writing to the server failed: {e}");
    }
}

async fn read_loop<I: ReadMessages>(
    mut lines: I,
    shared: Arc<Shared>,
    events: mpsc::Sender<TransportEvent>,
    eof_reason: Option<EofReason>,
) {
    let ended = loop {
        let bytes = match lines.next_message().await {
            Ok(Some(Line::Message(bytes))) => bytes,
            Ok(Some(Line::TooLarge)) => {
                let (head, len) = lines.oversized();
                let error = if lines.unterminated() {
                    format!(
                        "the server wrote {len} bytes that never ended with a newline, over the \
                         limit of {MAX_MESSAGE} bytes for a message; they were dropped; they \
                         start: \"{}\"",
                        excerpt_bytes(head, EXCERPT_CHARS)
                    )
                } else {
                    format!(
                        "the server's answer is {len} bytes or more, over the limit of \
                         {MAX_MESSAGE} bytes; it was dropped; it starts: \"{}\"",
                        excerpt_bytes(head, EXCERPT_CHARS)
                    )
                };
                // Its request fails now, instead of waiting for its timeout: the id is among
                // the first bytes of an answer (its sender's `jsonrpc` and `id` come first).
                match top_level_id(head) {
                    Some(id) => {
                        let routed = Routed {
                            response: Err(TransportError::Other(error.clone())),
                            events_before: Some(shared.sent.load(Ordering::SeqCst)),
                        };
                        if !shared.pending.complete(&id, routed) {
                            tracing::warn!(%id, "{error} (no request waits for it)");
                        } else {
                            tracing::warn!(%id, "{error}");
                        }
                    }
                    None => tracing::warn!("{error} (no id in its first bytes)"),
                }
                continue;
            }
            Ok(None) => break None,
            Err(e) => break Some(format!("reading from the server failed: {e}")),
        };
        let refused = match decode(bytes) {
            Ok(Incoming::Response(r)) => {
                let id = r.id.clone();
                let routed = Routed {
                    response: Ok(r),
                    events_before: Some(shared.sent.load(Ordering::SeqCst)),
                };
                if !shared.pending.complete(&id, routed) {
                    tracing::debug!(%id, "ignored a response to no pending request");
                }
                None
            }
            Ok(other) => {
                // The runtime's event loop never blocks, so waiting here is brief.
                if events.send(TransportEvent::Message(other)).await.is_ok() {
                    shared.sent.fetch_add(1, Ordering::SeqCst);
                }
                None
            }
            Err(e) => Some((e.error.message, excerpt_bytes(bytes, EXCERPT_CHARS))),
        };
        if let Some((why, quoted)) = refused {
            let stray = format!(
                "the server wrote a line that is not a JSON-RPC message{} ({why}): \"{quoted}\" \
                 (a stdio server must write only MCP messages to its stdout; logs go to stderr)",
                if lines.unterminated() {
                    ", without a newline at its end"
                } else {
                    ""
                },
            );
            tracing::warn!("ignored it: {stray}");
            let said = if shared.quote {
                stray
            } else {
                "the server wrote a line that is not a JSON-RPC message (quoted in the client's \
                 log)"
                    .to_owned()
            };
            lock(&shared.stray).get_or_insert(said);
        }
    };
    let mut reason = match (ended, eof_reason) {
        (Some(error), _) => error,
        (None, Some(reason)) => reason.await,
        (None, None) => "the server closed the connection".to_owned(),
    };
    if let Some(stray) = lock(&shared.stray).clone() {
        reason = format!("{reason}; before that, {stray}");
    }
    *lock(&shared.closed) = Some(reason.clone());
    // Every request still waiting ends with `reason` (its stream reads it from `closed`).
    shared.pending.close();
    let _ = events.send(TransportEvent::Closed(reason)).await;
}

/// The `id` member of the JSON object `head` starts with (at its top level, not in its
/// `result`), when `head` gets that far; `head` may end anywhere.
fn top_level_id(head: &[u8]) -> Option<RequestId> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < head.len() {
        match head[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.checked_sub(1)?,
            b'"' => {
                let end = string_end(head, i)?;
                let key = &head[i..=end];
                i = end + 1;
                if depth == 1 && key == b"\"id\"" {
                    let rest = head[i..].trim_ascii_start().strip_prefix(b":")?;
                    let rest = rest.trim_ascii_start();
                    let value = if rest.first() == Some(&b'"') {
                        &rest[..=string_end(rest, 0)?]
                    } else {
                        let n = rest
                            .iter()
                            .take_while(|b| b.is_ascii_digit() || **b == b'-')
                            .count();
                        if n == rest.len() {
                            return None; // the number may go on past `head`
                        }
                        &rest[..n]
                    };
                    return serde_json::from_slice(value).ok();
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index of the quote closing the string that opens at `start`.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Newline-delimited JSON-RPC over any reader and writer: a socket, a pipe, or an in-memory
/// [`tokio::io::duplex`] (handy for testing a client against an in-process server).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use duomcp::client::{transport::StreamTransport, Client, EraChoice};
/// use duomcp::server::Server;
///
/// let server = Server::builder().tool("hi", || async { "hello" }).build();
/// let (client_end, server_end) = tokio::io::duplex(64 * 1024);
/// let (sr, sw) = tokio::io::split(server_end);
/// tokio::spawn(server.serve_connection(sr, sw));
///
/// let (cr, cw) = tokio::io::split(client_end);
/// let client = Client::builder().connect_transport(StreamTransport::new(cr, cw)).await.unwrap();
/// assert_eq!(client.protocol_version(), "2026-07-28");
/// # });
/// ```
pub struct StreamTransport {
    core: Core,
    events: Mutex<Option<mpsc::Receiver<TransportEvent>>>,
}

impl StreamTransport {
    /// Starts the reader and writer tasks (needs a tokio runtime).
    pub fn new<R, W>(reader: R, writer: W) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (tx, rx) = mpsc::channel(1024);
        StreamTransport {
            core: Core::start(reader, writer, tx, Arc::default(), None, true),
            events: Mutex::new(Some(rx)),
        }
    }
}

impl Transport for StreamTransport {
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

#[cfg(test)]
mod oversized_tests {
    use super::*;

    #[test]
    fn the_id_of_a_truncated_answer_is_read_at_its_top_level_only() {
        let id = |s: &str| top_level_id(s.as_bytes());
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":7,"result":{"x"#),
            Some(RequestId::from(7))
        );
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":"c-3","result":"#),
            Some(RequestId::String("c-3".into()))
        );
        // An `id` inside the result is not the answer's.
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","result":{"id":5,"text":"aaaa"#),
            None
        );
        assert_eq!(
            id(r#"{"result":"\"id\":9","id":2,"#),
            Some(RequestId::from(2))
        );
        // Cut inside the id: unknown.
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":12"#), None);
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":"c-"#), None);
    }
}
