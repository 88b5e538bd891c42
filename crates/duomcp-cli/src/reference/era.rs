//! `duomcp serve --era legacy|modern|both`: the reference server restricted to one revision,
//! as a server of that revision alone answers the other's requests. It stands in for the
//! single-revision servers the gateway bridges (`duomcp gateway -- duomcp serve --era legacy`).

use duomcp::era::{Era, ProtocolError};
use duomcp::server::middleware::{McpRequest, McpResponse, Service};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Which revisions `duomcp serve` speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ServeEra {
    /// 2025-11-25 only: every 2026-07-28 request is refused (`-32600`), as a server that
    /// never heard of it would, so clients fall back to `initialize`.
    Legacy,
    /// 2026-07-28 only: `initialize` and the other 2025-11-25 requests are `-32601`, as the
    /// methods 2026-07-28 removed.
    Modern,
    /// Both revisions (the default).
    #[default]
    Both,
}

impl ServeEra {
    /// The protocol versions served (what a Server Card names).
    pub fn versions(self) -> Vec<&'static str> {
        use duomcp_schema::version::{LEGACY_VERSIONS, MODERN_VERSIONS};
        let modern = MODERN_VERSIONS.iter().filter(|_| self != ServeEra::Legacy);
        let legacy = LEGACY_VERSIONS.iter().filter(|_| self != ServeEra::Modern);
        modern.chain(legacy).copied().collect()
    }

    /// Whether a request of `era` is served.
    pub fn admits(self, era: Era) -> bool {
        match self {
            ServeEra::Both => true,
            ServeEra::Legacy => era == Era::Legacy,
            ServeEra::Modern => era == Era::Modern,
        }
    }
}

/// The middleware refusing the other revision's requests.
#[derive(Clone)]
pub struct OnlyEra<S> {
    inner: S,
    era: ServeEra,
}

impl<S> OnlyEra<S> {
    /// Wraps `inner`.
    pub fn new(inner: S, era: ServeEra) -> Self {
        OnlyEra { inner, era }
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S> Service<McpRequest> for OnlyEra<S>
where
    S: Service<McpRequest, Response = McpResponse>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = McpResponse;
    type Error = S::Error;
    type Future = BoxFuture<Result<McpResponse, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: McpRequest) -> Self::Future {
        if self.era.admits(req.era()) {
            return Box::pin(self.inner.call(req));
        }
        let refused = match self.era {
            ServeEra::Legacy => ProtocolError::InvalidRequest(format!(
                "{}: this server speaks 2025-11-25 only (initialize first)",
                req.method()
            )),
            _ => ProtocolError::MethodNotFound(format!(
                "{} (this server speaks 2026-07-28 only)",
                req.method()
            )),
        };
        Box::pin(async move { Ok(McpResponse::error(refused)) })
    }
}
