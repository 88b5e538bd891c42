//! Serving the gateway over Streamable HTTP, with `GET /healthz` next to the MCP endpoint.

use crate::Gateway;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use duomcp::transport::http::{HttpConfig, StreamableHttp};
use std::sync::Arc;
use std::time::Duration;

/// How long `/healthz` waits for each upstream.
pub const HEALTH_TIMEOUT: Duration = Duration::from_secs(5);

/// The gateway's HTTP application: the MCP endpoint (both revisions) at `config`'s path and
/// `GET /healthz`, which pings every upstream and answers `200` when all answer, `503` when
/// one does not, with a JSON body listing each.
///
/// With `[auth]` ([`Gateway::resource_server`]) the MCP endpoint is behind the OAuth
/// resource server (a bearer token meant for the gateway on every request; `401`/`403`
/// challenges; Protected Resource Metadata at the well-known URLs). `/healthz` stays open for
/// load balancers' probes. The client's token stops here: upstreams see only the gateway's
/// own credentials.
///
/// ```no_run
/// # async fn run(gateway: duomcp_gateway::Gateway) -> std::io::Result<()> {
/// use duomcp::transport::http::{serve, HttpConfig};
/// let app = duomcp_gateway::http::app(std::sync::Arc::new(gateway), HttpConfig::default());
/// serve(tokio::net::TcpListener::bind("127.0.0.1:3000").await?, app).await
/// # }
/// ```
pub fn app(gateway: Arc<Gateway>, config: HttpConfig) -> Router {
    let mut mcp = StreamableHttp::with_config(gateway.server().clone(), config).router();
    if let Some(rs) = gateway.resource_server() {
        mcp = rs.protect(mcp);
    }
    let health = Router::new().route(
        "/healthz",
        get(move || {
            let gateway = gateway.clone();
            async move {
                let report = gateway.health(HEALTH_TIMEOUT).await;
                let ok = report.iter().all(|h| h.ok);
                let status = if ok {
                    StatusCode::OK
                } else {
                    StatusCode::SERVICE_UNAVAILABLE
                };
                (
                    status,
                    Json(serde_json::json!({ "ok": ok, "upstreams": report })),
                )
            }
        }),
    );
    mcp.merge(health)
}
