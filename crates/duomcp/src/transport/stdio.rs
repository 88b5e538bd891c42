//! The stdio transport (server side): newline-delimited UTF-8 JSON over any pair of byte
//! streams, stdin/stdout by default. Logs go to stderr, never stdout.
//!
//! Both eras are served on one connection: `initialize` starts a legacy session for the
//! connection, and a request carrying a 2026-07-28 `_meta` is served statelessly.

use crate::jsonrpc::{self, decode, error_code, Incoming, Line, LineReader, RequestId};
use crate::server::session::{Frame, Session};
use crate::server::{handle_notification, handle_request, handle_response, RequestEnv, Server};
use duomcp_schema::methods::{self, RequestMethod};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::{mpsc, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

type InFlight = Arc<Mutex<HashMap<RequestId, CancellationToken>>>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Server {
    /// Serves this server on the process's stdin and stdout until stdin ends.
    ///
    /// ```no_run
    /// # async fn run() -> std::io::Result<()> {
    /// duomcp::server::Server::builder().tool("hi", || async { "hi" }).build().serve_stdio().await
    /// # }
    /// ```
    pub async fn serve_stdio(self) -> std::io::Result<()> {
        self.serve_connection(tokio::io::stdin(), tokio::io::stdout())
            .await
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
        let shared = self.shared.clone();
        let config = shared.config.clone();
        let (tx, rx) = mpsc::channel::<Frame>(1024);
        let writer_task = tokio::spawn(write_loop(writer, rx));
        let session = Session::new(tx.clone());
        let in_flight: InFlight = Arc::default();
        let closing = shared.shutdown.child_token();
        let local = Arc::new(crate::auth::Principal::local());
        let limit = Arc::new(Semaphore::new(config.max_in_flight.max(1)));
        let tasks = TaskTracker::new();
        let mut lines = LineReader::new(
            BufReader::with_capacity(64 * 1024, reader),
            config.max_message_size,
        );

        let read_result = loop {
            let line = tokio::select! {
                l = lines.next_line() => l,
                _ = shared.shutdown.cancelled() => break Ok(()),
            };
            let bytes = match line {
                Ok(Some(Line::Message(bytes))) => bytes,
                Ok(Some(Line::TooLarge)) => {
                    let err = jsonrpc::error(
                        error_code::INVALID_REQUEST,
                        format!(
                            "Invalid Request: message exceeds the limit of {} bytes",
                            config.max_message_size
                        ),
                    );
                    let _ = tx.send(jsonrpc::encode_error(None, &err)).await;
                    continue;
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            };
            match decode(bytes) {
                Err(e) => {
                    let _ = tx
                        .send(jsonrpc::encode_error(e.id.as_ref(), &e.error))
                        .await;
                }
                Ok(Incoming::Request(req)) => {
                    let token = CancellationToken::new();
                    let duplicate = {
                        let mut map = lock(&in_flight);
                        if map.contains_key(&req.id) {
                            true
                        } else {
                            map.insert(req.id.clone(), token.clone());
                            false
                        }
                    };
                    if duplicate {
                        let err = jsonrpc::error(
                            error_code::INVALID_REQUEST,
                            "Invalid Request: this id is already in use by a request in flight",
                        );
                        let _ = tx.send(jsonrpc::encode_error(Some(&req.id), &err)).await;
                        continue;
                    }
                    let is_initialize = req.method == <methods::Initialize as RequestMethod>::NAME;
                    let Ok(permit) = limit.clone().acquire_owned().await else {
                        break Ok(());
                    };
                    let env = RequestEnv {
                        session: Some(session.clone()),
                        era_hint: None,
                        sink: tx.clone(),
                        cancel: token,
                        closing: closing.clone(),
                        // Stdio takes its credentials from the environment: the local user.
                        principal: Some(local.clone()),
                    };
                    let (shared, tx, in_flight) = (shared.clone(), tx.clone(), in_flight.clone());
                    let serve = async move {
                        let id = req.id.clone();
                        let reply = handle_request(shared, req, env).await;
                        lock(&in_flight).remove(&id);
                        if let Some(reply) = reply {
                            let _ = tx.send(reply.frame).await;
                        }
                        drop(permit);
                    };
                    if is_initialize {
                        // `initialize` runs no user code and must take effect before the next
                        // line is read, so a client that pipelines its first calls is served.
                        serve.await;
                    } else {
                        tasks.spawn(serve);
                    }
                }
                Ok(Incoming::Notification(n)) => {
                    if let crate::server::NotificationAction::Cancel(id) =
                        handle_notification(Some(&session), &n)
                    {
                        if let Some(token) = lock(&in_flight).remove(&id) {
                            token.cancel();
                        }
                    }
                }
                Ok(Incoming::Response(r)) => handle_response(Some(&session), r),
            }
        };

        // End of input: end listen streams gracefully, give the rest a grace period.
        closing.cancel();
        tasks.close();
        if tokio::time::timeout(config.shutdown_grace, tasks.wait())
            .await
            .is_err()
        {
            for (_, token) in lock(&in_flight).drain() {
                token.cancel();
            }
            let _ = tokio::time::timeout(std::time::Duration::from_secs(1), tasks.wait()).await;
        }
        drop(session);
        drop(tx);
        let write_result = match writer_task.await {
            Ok(r) => r,
            Err(e) => Err(std::io::Error::other(e)),
        };
        read_result.and(write_result)
    }
}

/// Writes frames, one per line, flushing whenever the queue runs dry (so pipelined responses
/// share system calls).
async fn write_loop<W: AsyncWrite + Unpin>(
    writer: W,
    mut rx: mpsc::Receiver<Frame>,
) -> std::io::Result<()> {
    let mut w = BufWriter::with_capacity(64 * 1024, writer);
    while let Some(frame) = rx.recv().await {
        // An empty frame is `Context::close_sse_stream`, which means nothing on stdio.
        if !frame.is_empty() {
            w.write_all(&frame).await?;
            w.write_all(b"\n").await?;
        }
        while let Ok(frame) = rx.try_recv() {
            if !frame.is_empty() {
                w.write_all(&frame).await?;
                w.write_all(b"\n").await?;
            }
        }
        w.flush().await?;
    }
    w.flush().await
}
