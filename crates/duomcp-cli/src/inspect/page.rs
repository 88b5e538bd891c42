//! The page: its files compiled into the binary. Plain HTML, CSS and JavaScript, no build
//! step and nothing loaded from elsewhere (the Content-Security-Policy says so to the browser);
//! the one bundled file, `bridge.js` (the App SDK's host bridge), is checked in, built from
//! `bridge.src.js` by `interop/build-apps.mjs`, and compared with what that builds by
//! scripts/interop.sh. `sandbox.html` is served on the views' origin.

use super::session::Inspector;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use std::sync::Arc;

const INDEX: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/app.js");
const STYLE: &str = include_str!("page/app.css");
const BRIDGE: &[u8] = include_bytes!("page/bridge.js");
const SANDBOX: &str = include_str!("page/sandbox.html");

/// Only this origin's scripts and styles; images and audio from tool results as `data:` URLs;
/// frames only from the views' origin (`{views}`).
fn csp(views: u16) -> String {
    format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         media-src 'self' data:; connect-src 'self'; form-action 'none'; \
         frame-src http://127.0.0.1:{views} http://localhost:{views}; \
         frame-ancestors 'none'; base-uri 'none'"
    )
}

pub(super) async fn index(State(inspector): State<Arc<Inspector>>) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8".to_owned()),
            (
                header::CONTENT_SECURITY_POLICY,
                csp(inspector.sandbox_port()),
            ),
        ],
        INDEX,
    )
}

pub(super) async fn script() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SCRIPT,
    )
}

pub(super) async fn bridge() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        BRIDGE,
    )
}

pub(super) async fn style() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE)
}

/// The sandbox proxy, on the views' origin: only the inspector's page may frame it and talk
/// to it. Its own policy stops at that: the view it renders gets the policy its `_meta.ui.csp`
/// asks for, written by the proxy.
pub(super) async fn sandbox(State(inspector): State<Arc<Inspector>>) -> impl IntoResponse {
    let port = inspector.port();
    let pages = [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
    ];
    let html = SANDBOX.replace(
        "__PAGE_ORIGINS__",
        &serde_json::to_string(&pages).unwrap_or_default(),
    );
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8".to_owned()),
            (
                header::CONTENT_SECURITY_POLICY,
                format!("frame-ancestors {}", pages.join(" ")),
            ),
        ],
        html,
    )
}
