//! Serving the gateway over Streamable HTTP, with `GET /healthz` and `GET /readyz` next to
//! the MCP endpoint.

use crate::Gateway;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use axum::{Json, Router};
use duomcp::transport::http::{HttpConfig, StreamableHttp};
use std::sync::Arc;
use std::time::Duration;

/// How long `/healthz` waits for each upstream.
pub const HEALTH_TIMEOUT: Duration = Duration::from_secs(5);

/// The gateway's HTTP application: the MCP endpoint (both revisions) at `config`'s path,
/// `GET /healthz` and `GET /readyz`.
///
/// `/healthz` pings every upstream (no listing) and answers `200` when all answer, `503`
/// when one does not. Without the operator's credential (`Authorization: Bearer` and
/// `[gateway] health_token`) the body is only `{"ok": …}`; with it, each upstream's detail
/// (revision, server, tools served, errors, what is not served). Reports are reused for
/// [`crate::HEALTH_CACHE`] and concurrent probes share one, so probes cost the upstreams
/// nothing more than one ping each per 2 s.
///
/// `/readyz`: `200` once every upstream answers (the gateway is only served after it
/// connected to them), `503` otherwise; for rolling restarts. Same cache, no detail.
///
/// With `[auth]` ([`Gateway::resource_server`]) the MCP endpoint is behind the OAuth
/// resource server (a bearer token meant for the gateway on every request; `401`/`403`
/// challenges; Protected Resource Metadata at the well-known URLs). The health endpoints stay
/// open for load balancers' probes. The client's token stops here: upstreams see only the
/// gateway's own credentials.
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
    let ready = gateway.clone();
    let health = Router::new()
        .route(
            "/healthz",
            get(move |headers: HeaderMap| {
                let gateway = gateway.clone();
                async move {
                    let report = gateway.health_cached(HEALTH_TIMEOUT).await;
                    let ok = report.iter().all(|h| h.ok);
                    let status = if ok {
                        StatusCode::OK
                    } else {
                        StatusCode::SERVICE_UNAVAILABLE
                    };
                    let operator = headers
                        .get(axum::http::header::AUTHORIZATION)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.strip_prefix("Bearer "))
                        .is_some_and(|t| gateway.health_token_is(t.trim()));
                    let body = if operator {
                        serde_json::json!({ "ok": ok, "upstreams": report })
                    } else {
                        serde_json::json!({ "ok": ok })
                    };
                    (status, Json(body))
                }
            }),
        )
        .route(
            "/readyz",
            get(move || {
                let gateway = ready.clone();
                async move {
                    let report = gateway.health_cached(HEALTH_TIMEOUT).await;
                    if report.iter().all(|h| h.ok) {
                        (StatusCode::OK, "ready\n")
                    } else {
                        (StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
                    }
                }
            }),
        );
    mcp.merge(health)
}
