//! Who may use the inspector: a request from this machine's browser holding the token.
//!
//! Every request, page and API alike, must
//! - name `127.0.0.1:PORT` or `localhost:PORT` in `Host` (403 otherwise: DNS rebinding),
//! - carry no `Origin`, or one of `http://127.0.0.1:PORT` / `http://localhost:PORT` (403),
//! - hold the token: `?token=` (the URL printed at start), the cookie the first load sets, or
//!   `Authorization: Bearer` (401 otherwise).
//!
//! The cookie's name carries the port: cookies are not scoped by port, and two inspectors on
//! one machine must not overwrite each other's.
//!
//! The views' origin (the second listener, MCP Apps) is checked the same way at its own port,
//! with its own token (in the sandbox proxy's URL, which the view can read: it opens nothing
//! else), and sets no cookie. Its page may be framed only by the inspector's page.

use super::session::Inspector;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// A fresh random token: 32 bytes from the OS, hex.
pub(super) fn new_token() -> Result<String, crate::commands::Failure> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| crate::commands::Failure::new(format!("cannot draw a random token: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn cookie_name(port: u16) -> String {
    format!("duomcp_inspect_{port}")
}

/// Equal in time independent of where the two differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn from_query(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
}

fn from_cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| c.trim().strip_prefix(name)?.strip_prefix('='))
}

fn from_bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
}

fn refuse(status: StatusCode, why: &'static str) -> Response {
    (status, [(header::CACHE_CONTROL, "no-store")], why).into_response()
}

/// A refusal when `Host` does not name 127.0.0.1 or localhost at `port`, or an `Origin` is
/// another than theirs.
fn foreign(headers: &HeaderMap, port: u16) -> Option<Response> {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let local = [format!("127.0.0.1:{port}"), format!("localhost:{port}")];
    if !host.is_some_and(|h| local.iter().any(|l| l.eq_ignore_ascii_case(h))) {
        return Some(refuse(
            StatusCode::FORBIDDEN,
            "forbidden: the inspector answers only to Host 127.0.0.1 or localhost at its port\n",
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let ok = origin.to_str().is_ok_and(|o| {
            local
                .iter()
                .any(|l| o.eq_ignore_ascii_case(&format!("http://{l}")))
        });
        if !ok {
            return Some(refuse(
                StatusCode::FORBIDDEN,
                "forbidden: a foreign Origin\n",
            ));
        }
    }
    None
}

/// The middleware in front of the views' origin: its Host and Origin, its token.
pub(super) async fn check_sandbox(
    State(inspector): State<Arc<Inspector>>,
    request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    if let Some(refused) = foreign(headers, inspector.sandbox_port()) {
        return refused;
    }
    let token = inspector.sandbox_token().as_bytes();
    let held = from_query(request.uri().query()).is_some_and(|t| same(t.as_bytes(), token))
        || from_bearer(headers).is_some_and(|t| same(t.as_bytes(), token));
    if !held {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "unauthorized: the views' origin answers the inspector's page only\n",
        );
    }
    let mut response = next.run(request).await;
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    response
}

/// The middleware in front of every route.
pub(super) async fn check(
    State(inspector): State<Arc<Inspector>>,
    request: Request,
    next: Next,
) -> Response {
    let port = inspector.port();
    let headers = request.headers();
    if let Some(refused) = foreign(headers, port) {
        return refused;
    }
    let token = inspector.token().as_bytes();
    let cookie = cookie_name(port);
    let by_query = from_query(request.uri().query()).is_some_and(|t| same(t.as_bytes(), token));
    let held = by_query
        || from_cookie(headers, &cookie).is_some_and(|t| same(t.as_bytes(), token))
        || from_bearer(headers).is_some_and(|t| same(t.as_bytes(), token));
    if !held {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "unauthorized: open the URL `duomcp inspect` printed (it carries the token)\n",
        );
    }
    if by_query && request.uri().path() == "/" {
        // The token leaves the address bar (and the history) for a cookie only this origin
        // sends back.
        let set = format!(
            "{cookie}={}; Path=/; HttpOnly; SameSite=Strict",
            inspector.token()
        );
        let mut to_page = (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
        if let Ok(value) = HeaderValue::from_str(&set) {
            to_page.headers_mut().insert(header::SET_COOKIE, value);
        }
        return to_page;
    }
    let mut response = next.run(request).await;
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_64_hex_digits_and_differ() {
        let a = new_token().unwrap();
        let b = new_token().unwrap();
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn the_token_is_found_where_the_browser_puts_it() {
        assert_eq!(from_query(Some("a=1&token=xyz")), Some("xyz"));
        assert_eq!(from_query(Some("tokens=1")), None);
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("x=1; duomcp_inspect_80=abc"),
        );
        assert_eq!(from_cookie(&h, "duomcp_inspect_80"), Some("abc"));
        // Another inspector's cookie (another port) is not this one's.
        assert_eq!(from_cookie(&h, "duomcp_inspect_8"), None);
        assert!(same(b"abc", b"abc") && !same(b"abc", b"abd") && !same(b"abc", b"ab"));
    }
}
