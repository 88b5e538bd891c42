//! The process signals that ask a server to stop ([`shutdown_signal`]); the transports take
//! such a signal (`Server::serve_stdio_with_shutdown`, `StreamableHttp::serve_with_shutdown`).

use std::future::Future;

/// Completes when the process is asked to stop: Ctrl-C (`SIGINT`) or, on Unix, `SIGTERM`.
///
/// Called inside a Tokio runtime, it installs the handlers at once, before the returned
/// future is first polled: a signal that arrives while the server is starting (or has
/// answered its first request but not yet polled this future) still asks it to stop,
/// instead of killing the process. Called outside a runtime, it installs them on first poll.
/// If the handlers cannot be installed, it never completes (and logs why).
///
/// ```no_run
/// # async fn run(server: duomcp::server::Server) -> std::io::Result<()> {
/// use duomcp::server::shutdown_signal;
/// server.serve_stdio_with_shutdown(shutdown_signal()).await
/// # }
/// ```
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        let installed = tokio::runtime::Handle::try_current()
            .is_ok()
            .then(unix::Handlers::install);
        async move {
            installed
                .unwrap_or_else(unix::Handlers::install)
                .wait()
                .await
        }
    }
    #[cfg(not(unix))]
    {
        async {
            if let Err(e) = tokio::signal::ctrl_c().await {
                tracing::warn!("cannot listen for Ctrl-C: {e}");
                std::future::pending::<()>().await;
            }
        }
    }
}

#[cfg(unix)]
mod unix {
    use tokio::signal::unix::{signal, Signal, SignalKind};

    /// `SIGINT` and `SIGTERM` handlers, each installed or the reason it could not be.
    pub(super) struct Handlers {
        interrupt: std::io::Result<Signal>,
        terminate: std::io::Result<Signal>,
    }

    impl Handlers {
        pub(super) fn install() -> Self {
            Handlers {
                interrupt: signal(SignalKind::interrupt()),
                terminate: signal(SignalKind::terminate()),
            }
        }

        pub(super) async fn wait(self) {
            match (self.interrupt, self.terminate) {
                (Ok(mut interrupt), Ok(mut terminate)) => {
                    tokio::select! {
                        _ = interrupt.recv() => {}
                        _ = terminate.recv() => {}
                    }
                }
                (Ok(mut only), Err(e)) => {
                    tracing::warn!("cannot listen for SIGTERM: {e}");
                    only.recv().await;
                }
                (Err(e), Ok(mut only)) => {
                    tracing::warn!("cannot listen for Ctrl-C: {e}");
                    only.recv().await;
                }
                (Err(a), Err(b)) => {
                    tracing::warn!("cannot listen for Ctrl-C ({a}) nor SIGTERM ({b})");
                    std::future::pending::<()>().await;
                }
            }
        }
    }
}
