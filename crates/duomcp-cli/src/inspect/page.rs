//! The page: three files compiled into the binary. Plain HTML, CSS and JavaScript, no build
//! step and nothing loaded from elsewhere (the Content-Security-Policy says so to the browser).

use axum::http::header;
use axum::response::IntoResponse;

const INDEX: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/app.js");
const STYLE: &str = include_str!("page/app.css");

/// Only this origin's scripts and styles; images and audio from tool results as `data:` URLs.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   media-src 'self' data:; connect-src 'self'; form-action 'none'; \
                   frame-ancestors 'none'; base-uri 'none'";

pub(super) async fn index() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, CSP),
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

pub(super) async fn style() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE)
}
