//! The stdio transport (server side): newline-delimited UTF-8 JSON over any pair of byte
//! streams, stdin/stdout by default. Logs go to stderr, never stdout.
//!
//! Both eras are served on one connection: `initialize` starts a legacy session for the
//! connection, and a request carrying a 2026-07-28 `_meta` is served statelessly.
//!
//! One task owns both ends of a connection: it reads a line, runs the request's handler
//! right there when it completes without waiting (most do), and writes the answer into a
//! buffer that is flushed once no further input or answer is ready — one `write(2)` for a
//! batch of pipelined answers, no task hop for a quick one. Handlers that wait go to their own
//! task; their answers come back over a channel that the same loop drains. When stdin and
//! stdout are pipes (how MCP hosts start servers) they are driven as non-blocking pipes on
//! Tokio's reactor instead of through its blocking thread pool.

use crate::correlation::{Correlation, Limits};
use crate::jsonrpc::{
    self, decode, error_code, Incoming, Line, LineReader, ReadMessages, WriteMessages,
};
use crate::server::driver::{self, Admission, Started};
use crate::server::session::{Frame, Session};
use crate::server::{handle_notification, handle_response, RequestEnv, Server};
use duomcp_schema::methods::{self, RequestMethod};
use std::future::Future;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite, BufReader, BufWriter};
use tokio::sync::{mpsc, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The process's stdin: a non-blocking pipe on the reactor when it is one, else Tokio's
/// (blocking-pool) stdin.
#[cfg(target_os = "linux")]
pub(crate) type StdinStream =
    tokio_util::either::Either<tokio::net::unix::pipe::Receiver, tokio::io::Stdin>;
#[cfg(not(target_os = "linux"))]
pub(crate) type StdinStream = tokio::io::Stdin;
/// The process's stdout, likewise.
#[cfg(target_os = "linux")]
pub(crate) type StdoutStream =
    tokio_util::either::Either<tokio::net::unix::pipe::Sender, tokio::io::Stdout>;
#[cfg(not(target_os = "linux"))]
pub(crate) type StdoutStream = tokio::io::Stdout;

/// Opens stdin and stdout for the transport. On Linux a pipe (or FIFO) is opened anew through
/// `/proc/self/fd/{0,1}`: a file description of our own, so setting it non-blocking does not
/// change the one the parent (or a sibling process) shares. Anything else — a terminal, a
/// file, a socket, no `/proc` — falls back to `tokio::io::stdin()`/`stdout()`.
pub(crate) fn std_streams() -> (StdinStream, StdoutStream) {
    #[cfg(target_os = "linux")]
    {
        use tokio::net::unix::pipe;
        use tokio_util::either::Either;
        let input = match pipe::OpenOptions::new().open_receiver("/proc/self/fd/0") {
            Ok(rx) => Either::Left(rx),
            Err(_) => Either::Right(tokio::io::stdin()),
        };
        let output = match pipe::OpenOptions::new().open_sender("/proc/self/fd/1") {
            Ok(tx) => Either::Left(tx),
            Err(_) => Either::Right(tokio::io::stdout()),
        };
        (input, output)
    }
    #[cfg(not(target_os = "linux"))]
    {
        (tokio::io::stdin(), tokio::io::stdout())
    }
}

/// Answers are written when no input is ready, and at the latest after this many: under
/// pipelined load the first answers of a long batch go out while the rest is computed,
/// instead of waiting for the whole batch (p50 at window 32, 2025-11-25: 0.10 → 0.07 ms).
const ANSWERS_PER_WRITE: usize = 16;

/// The write half of a connection: a buffer flushed when nothing else is ready. After a write
/// error the connection's output is gone; later frames are dropped and the error is reported
/// when the connection ends (reading goes on until then, as before).
struct Out<W> {
    w: W,
    err: Option<std::io::Error>,
    /// Answers buffered in `w` since the last flush.
    unflushed: usize,
}

impl<W: WriteMessages> Out<W> {
    /// Whether answers wait in the buffer.
    fn dirty(&self) -> bool {
        self.unflushed > 0
    }

    async fn frame(&mut self, frame: &[u8]) {
        // An empty frame is `Context::close_sse_stream`, which means nothing on stdio.
        if frame.is_empty() || self.err.is_some() {
            return;
        }
        match self.w.write_message(frame).await {
            Ok(()) => self.unflushed += 1,
            Err(e) => self.err = Some(e),
        }
        if self.unflushed >= ANSWERS_PER_WRITE {
            self.flush().await;
        }
    }

    async fn flush(&mut self) {
        if self.dirty() && self.err.is_none() {
            if let Err(e) = self.w.flush().await {
                self.err = Some(e);
            }
        }
        self.unflushed = 0;
    }
}

/// What woke the connection loop.
enum Event<'a> {
    Shutdown,
    Frame(Frame),
    Line(std::io::Result<Option<Line<'a>>>),
    Idle,
}

impl Server {
    /// Serves this server on the process's stdin and stdout until stdin ends.
    ///
    /// When they are pipes (as when an MCP host starts the server), they are driven as
    /// non-blocking pipes on Tokio's reactor (Linux); otherwise through Tokio's `stdin()` and
    /// `stdout()`. The connection runs on a task of its own (`tokio::spawn`), so this needs a
    /// Tokio runtime, as the rest of the server does.
    ///
    /// ```no_run
    /// # async fn run() -> std::io::Result<()> {
    /// duomcp::server::Server::builder().tool("hi", || async { "hi" }).build().serve_stdio().await
    /// # }
    /// ```
    pub async fn serve_stdio(self) -> std::io::Result<()> {
        let (input, output) = std_streams();
        // On a task of its own, not in the caller's future: `#[tokio::main]` polls that on the
        // main thread, which a worker must wake for every message it reads off the reactor;
        // a worker task is woken by the very worker that polls the reactor.
        match tokio::spawn(self.serve_connection(input, output)).await {
            Ok(result) => result,
            Err(e) => Err(std::io::Error::other(e)),
        }
    }

    /// Serves one newline-delimited JSON-RPC connection over `reader` and `writer` until the
    /// reader ends (or [`Server::shutdown`] is called). In-flight requests get
    /// [`ServerConfig::shutdown_grace`](crate::server::ServerConfig) to finish.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    /// let server = duomcp::server::Server::builder().build();
    /// let (client, server_end) = tokio::io::duplex(4096);
    /// let (read, write) = tokio::io::split(server_end);
    /// tokio::spawn(server.serve_connection(read, write));
    /// let (client_read, mut client_write) = tokio::io::split(client);
    /// client_write.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n").await.unwrap();
    /// let mut line = String::new();
    /// BufReader::new(client_read).read_line(&mut line).await.unwrap();
    /// assert_eq!(line.trim(), r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
    /// # });
    /// ```
    pub async fn serve_connection<R, W>(self, reader: R, writer: W) -> std::io::Result<()>
    where
        R: AsyncRead + Unpin + Send,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let max = self.shared.config.max_message_size;
        let lines = LineReader::new(BufReader::with_capacity(64 * 1024, reader), max);
        self.serve_messages(lines, BufWriter::with_capacity(64 * 1024, writer))
            .await
    }

    /// The connection loop of stdio and of in-memory connections: whole messages in and out,
    /// however they are carried.
    pub(crate) async fn serve_messages<I, O>(self, mut lines: I, writer: O) -> std::io::Result<()>
    where
        I: ReadMessages,
        O: WriteMessages,
    {
        let shared = self.shared.clone();
        let config = shared.config.clone();
        let (tx, mut rx) = mpsc::channel::<Frame>(1024);
        let mut out = Out {
            w: writer,
            err: None,
            unflushed: 0,
        };
        // The connection's requests in both directions: the session's server→client requests,
        // and the client's requests that wait (to be cancelled, and to refuse their id).
        let correlation =
            Correlation::new("s-", Limits::default().running(config.max_in_flight.max(1)));
        let session = Session::new(tx.clone(), correlation.clone());
        // OpenTelemetry: the connection is the session (a no-op without telemetry).
        let _session_telemetry = crate::server::telemetry::SessionGuard::open(&shared);
        let closing = shared.shutdown.child_token();
        let local = Arc::new(crate::server::Principal::local());
        let limit = Arc::new(Semaphore::new(config.max_in_flight.max(1)));
        let tasks = TaskTracker::new();

        // Waited on across iterations (a fresh wait per line would enqueue a waiter each time).
        let shutdown = shared.shutdown.cancelled();
        tokio::pin!(shutdown);
        let read_result = loop {
            // Answers first, then input; a flush only once neither is ready.
            let dirty = out.dirty();
            let event = tokio::select! {
                biased;
                () = &mut shutdown => Event::Shutdown,
                Some(frame) = rx.recv() => Event::Frame(frame),
                l = lines.next_message() => Event::Line(l),
                () = std::future::ready(()), if dirty => Event::Idle,
            };
            let bytes = match event {
                Event::Shutdown => break Ok(()),
                Event::Frame(frame) => {
                    out.frame(&frame).await;
                    continue;
                }
                Event::Idle => {
                    out.flush().await;
                    continue;
                }
                Event::Line(Ok(Some(Line::Message(bytes)))) => bytes,
                Event::Line(Ok(Some(Line::TooLarge))) => {
                    let err = jsonrpc::error(
                        error_code::INVALID_REQUEST,
                        format!(
                            "Invalid Request: message exceeds the limit of {} bytes",
                            config.max_message_size
                        ),
                    );
                    out.frame(&jsonrpc::encode_error(None, &err)).await;
                    continue;
                }
                Event::Line(Ok(None)) => break Ok(()),
                Event::Line(Err(e)) => break Err(e),
            };
            match decode(bytes) {
                Err(e) => {
                    out.frame(&jsonrpc::encode_error(e.id.as_ref(), &e.error))
                        .await;
                }
                Ok(Incoming::Request(req)) => {
                    // Only answers that wait are running in `correlation` (to be cancelled,
                    // and to refuse their id meanwhile): one answered at once is never there.
                    if correlation.is_running(&req.id) {
                        let says = Admission::IdInUse.says();
                        let err = jsonrpc::error(
                            error_code::INVALID_REQUEST,
                            format!("Invalid Request: {says}"),
                        );
                        out.frame(&jsonrpc::encode_error(Some(&req.id), &err)).await;
                        continue;
                    }
                    let is_initialize = req.method == <methods::Initialize as RequestMethod>::NAME;
                    let token = CancellationToken::new();
                    // Admitted into `correlation` only if it waits (below). Where HTTP refuses
                    // a request over the bound, stdio waits for a permit, and keeps writing
                    // meanwhile: the tasks holding them may be waiting for room in the channel.
                    let permit = match driver::admit(&limit, None, &req.id, &token) {
                        Ok(admitted) => Some(admitted.permit),
                        Err(_) => loop {
                            let dirty = out.dirty();
                            tokio::select! {
                                biased;
                                p = limit.clone().acquire_owned() => break p.ok(),
                                Some(frame) = rx.recv() => out.frame(&frame).await,
                                () = std::future::ready(()), if dirty => out.flush().await,
                            }
                        },
                    };
                    let Some(permit) = permit else {
                        break Ok(());
                    };
                    let env = RequestEnv {
                        session: Some(session.clone()),
                        era_hint: None,
                        validated_meta: None,
                        sink: tx.clone(),
                        cancel: token.clone(),
                        closing: closing.clone(),
                        // Stdio takes its credentials from the environment: the local user.
                        principal: Some(local.clone()),
                        peer: None,
                        trace: Default::default(),
                    };
                    let id = req.id.clone();
                    match driver::start(shared.clone(), req, env, None) {
                        Started::Ready(reply) => {
                            drop(permit);
                            out.frame(&reply.frame).await;
                        }
                        // `initialize` runs no user code and must take effect before the next
                        // line is read, so a client that pipelines its first calls is served.
                        Started::Waiting(serve) if is_initialize => {
                            let reply = serve.await;
                            drop(permit);
                            if let Some(reply) = reply {
                                out.frame(&reply.frame).await;
                            }
                        }
                        Started::Waiting(serve) => {
                            // Only answers that wait are running in `correlation` (to be
                            // cancelled, and to refuse their id meanwhile). Cannot be refused:
                            // the id is free (checked above) and the permit bounds running
                            // requests as the engine does.
                            let running = correlation.admit(id, token).ok();
                            let tx = tx.clone();
                            tasks.spawn(async move {
                                let reply = serve.await;
                                drop((running, permit));
                                if let Some(reply) = reply {
                                    let _ = tx.send(reply.frame).await;
                                }
                            });
                        }
                    }
                }
                Ok(Incoming::Notification(n)) => {
                    if let crate::server::NotificationAction::Cancel(id) =
                        handle_notification(Some(&session), &n)
                    {
                        correlation.cancel(&id);
                    }
                }
                Ok(Incoming::Response(r)) => handle_response(Some(&session), r),
            }
        };

        // End of input: end listen streams gracefully, give the rest a grace period, and keep
        // writing what they send meanwhile.
        closing.cancel();
        tasks.close();
        drop(session);
        drop(tx);
        let done = tasks.wait();
        tokio::pin!(done);
        let timer = tokio::time::sleep(config.shutdown_grace);
        tokio::pin!(timer);
        let mut cancelled = false;
        loop {
            let dirty = out.dirty();
            tokio::select! {
                biased;
                Some(frame) = rx.recv() => out.frame(&frame).await,
                () = std::future::ready(()), if dirty => out.flush().await,
                () = &mut done => break,
                () = &mut timer => {
                    if cancelled {
                        break;
                    }
                    correlation.cancel_running();
                    cancelled = true;
                    timer
                        .as_mut()
                        .reset(tokio::time::Instant::now() + std::time::Duration::from_secs(1));
                }
            }
        }
        // Handlers still waiting for the client's answers hear that none will come.
        correlation.close();
        while let Ok(frame) = rx.try_recv() {
            out.frame(&frame).await;
        }
        out.flush().await;
        let write_result = match out.err {
            Some(e) => Err(e),
            None => Ok(()),
        };
        read_result.and(write_result)
    }
}

// ---------------------------------------------------------------------------------------------
// Graceful shutdown on a signal.

impl Server {
    /// Serves on stdin/stdout like [`serve_stdio`](Server::serve_stdio), and shuts down
    /// gracefully when `signal` completes (for example
    /// [`shutdown_signal`](crate::server::shutdown_signal)): no further
    /// requests are read, requests in flight get
    /// [`ServerConfig::shutdown_grace`](crate::server::ServerConfig::shutdown_grace) to finish, and
    /// those still running then are cancelled (they get no response). Returns once the
    /// responses are written.
    ///
    /// The signal stops this server on every transport, as [`Server::shutdown`] does.
    ///
    /// ```no_run
    /// # async fn run() -> std::io::Result<()> {
    /// use duomcp::server::{shutdown_signal, Server};
    /// let server = Server::builder().tool("hi", || async { "hi" }).build();
    /// server.serve_stdio_with_shutdown(shutdown_signal()).await
    /// # }
    /// ```
    ///
    /// Reading stdin blocks a thread that cannot be interrupted; a `main` that returns after
    /// a signal should end the runtime without waiting for it (`Runtime::shutdown_background`,
    /// or `std::process::exit`).
    pub async fn serve_stdio_with_shutdown<F>(self, signal: F) -> std::io::Result<()>
    where
        F: Future<Output = ()> + Send,
    {
        // Non-blocking pipes when stdin/stdout are pipes, as `serve_stdio` uses.
        let (input, output) = std_streams();
        self.serve_connection_with_shutdown(input, output, signal)
            .await
    }

    /// [`serve_connection`](Server::serve_connection) with a graceful shutdown when `signal`
    /// completes (see [`serve_stdio_with_shutdown`](Server::serve_stdio_with_shutdown)).
    pub async fn serve_connection_with_shutdown<R, W, F>(
        self,
        reader: R,
        writer: W,
        signal: F,
    ) -> std::io::Result<()>
    where
        R: AsyncRead + Unpin + Send,
        W: AsyncWrite + Unpin + Send + 'static,
        F: Future<Output = ()> + Send,
    {
        let handle = self.clone();
        let serve = self.serve_connection(reader, writer);
        let mut serve = std::pin::pin!(serve);
        tokio::select! {
            result = serve.as_mut() => return result,
            () = signal => {
                tracing::info!("shutting down: no new requests, finishing the ones in flight");
                handle.shutdown();
            }
        }
        serve.await
    }
}
