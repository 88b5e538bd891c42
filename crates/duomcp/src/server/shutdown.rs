//! Graceful shutdown of a stdio (or any byte-stream) connection on a signal.

use super::Server;
use std::future::Future;
use tokio::io::{AsyncRead, AsyncWrite};

impl Server {
    /// Serves on stdin/stdout like [`serve_stdio`](Server::serve_stdio), and shuts down
    /// gracefully when `signal` completes (for example [`shutdown_signal`]): no further
    /// requests are read, requests in flight get
    /// [`ServerConfig::shutdown_grace`](super::ServerConfig::shutdown_grace) to finish, and
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
        let (input, output) = crate::transport::stdio::std_streams();
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

/// Completes when the process is asked to stop: Ctrl-C (`SIGINT`) or, on Unix, `SIGTERM`.
///
/// If the handlers cannot be installed, it never completes (and logs why).
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    r = tokio::signal::ctrl_c() => {
                        if let Err(e) = r {
                            tracing::warn!("cannot listen for Ctrl-C: {e}");
                            let _ = term.recv().await;
                        }
                    }
                    _ = term.recv() => {}
                }
                return;
            }
            Err(e) => tracing::warn!("cannot listen for SIGTERM: {e}"),
        }
    }
    if let Err(e) = tokio::signal::ctrl_c().await {
        tracing::warn!("cannot listen for Ctrl-C: {e}");
        std::future::pending::<()>().await;
    }
}
