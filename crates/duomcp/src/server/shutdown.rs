//! The process signals that ask a server to stop ([`shutdown_signal`]); the transports take
//! such a signal (`Server::serve_stdio_with_shutdown`, `StreamableHttp::serve_with_shutdown`).

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
