//! Outbound HTTP for authorization: metadata, JWKS, introspection, token and registration
//! requests. Never follows redirects, bounds every body, and insists on HTTPS except to
//! loopback addresses.

use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use serde::de::DeserializeOwned;
use std::sync::Once;
use std::time::Duration;

/// Largest response body read from an authorization or metadata endpoint.
pub(crate) const MAX_BODY: usize = 1024 * 1024;

/// An HTTP client for OAuth traffic: no redirects, a timeout, rustls with ring.
pub(crate) fn client(timeout: Duration) -> Result<reqwest::Client, String> {
    static PROVIDER: Once = Once::new();
    PROVIDER.call_once(|| {
        // Another provider installed first is fine: reqwest uses whichever is the default.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .user_agent(concat!("duomcp/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// A response, its body read (up to [`MAX_BODY`]).
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Answer {
    /// The body as JSON of type `T`.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, String> {
        serde_json::from_slice(&self.body).map_err(|e| format!("malformed JSON: {e}"))
    }

    /// The first value of a header, as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Sends `request` and reads the answer's body, refusing bodies over [`MAX_BODY`].
pub(crate) async fn send(request: reqwest::RequestBuilder) -> Result<Answer, String> {
    let mut response = request.send().await.map_err(|e| describe(&e))?;
    let status = response.status();
    let headers = response.headers().clone();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| describe(&e))? {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(format!("response body larger than {MAX_BODY} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Answer {
        status,
        headers,
        body: Bytes::from(body),
    })
}

fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// `GET url` with `Accept: application/json`.
pub(crate) async fn get(client: &reqwest::Client, url: &str) -> Result<Answer, String> {
    send(
        client
            .get(url)
            .header(http::header::ACCEPT, "application/json"),
    )
    .await
}

/// `POST url` with a form body; `extra` headers are added as given.
pub(crate) async fn post_form(
    client: &reqwest::Client,
    url: &str,
    form: &[(&str, &str)],
    extra: &[(&str, String)],
) -> Result<Answer, String> {
    let mut req = client
        .post(url)
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(http::header::ACCEPT, "application/json")
        .body(form_encode(form));
    for (k, v) in extra {
        req = req.header(*k, v.as_str());
    }
    send(req).await
}

/// `POST url` with a JSON body.
pub(crate) async fn post_json(
    client: &reqwest::Client,
    url: &str,
    body: &serde_json::Value,
) -> Result<Answer, String> {
    let bytes = serde_json::to_vec(body).map_err(|e| e.to_string())?;
    send(
        client
            .post(url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json")
            .body(bytes),
    )
    .await
}

/// `application/x-www-form-urlencoded` encoding of `pairs`.
pub(crate) fn form_encode(pairs: &[(&str, &str)]) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

/// Whether `url`'s host is a loopback name or address (`localhost`, `127.0.0.0/8`, `[::1]`).
pub(crate) fn is_loopback(url: &str) -> bool {
    let Ok(u) = url::Url::parse(url) else {
        return false;
    };
    match u.host() {
        Some(url::Host::Domain(d)) => {
            d.eq_ignore_ascii_case("localhost") || d.to_ascii_lowercase().ends_with(".localhost")
        }
        Some(url::Host::Ipv4(a)) => a.is_loopback(),
        Some(url::Host::Ipv6(a)) => a.is_loopback(),
        None => false,
    }
}

/// Refuses URLs that are neither HTTPS nor HTTP to a loopback address (OAuth 2.1 §1.5); with
/// `allow_http` any http URL passes (tests against stand-ins on other hosts).
pub(crate) fn require_secure(url: &str, allow_http: bool, what: &str) -> Result<(), String> {
    let lower = url
        .get(..8)
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    if lower.starts_with("https://") {
        return Ok(());
    }
    if lower.starts_with("http://") && (allow_http || is_loopback(url)) {
        return Ok(());
    }
    Err(format!(
        "{what} `{url}` is not HTTPS (plain HTTP is only allowed to loopback addresses)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_secure() {
        assert!(is_loopback("http://localhost:3000/x"));
        assert!(is_loopback("http://127.0.0.2/"));
        assert!(is_loopback("http://[::1]:80/"));
        assert!(!is_loopback("http://example.com/"));
        assert!(require_secure("https://example.com", false, "x").is_ok());
        assert!(require_secure("HTTPS://example.com", false, "x").is_ok());
        assert!(require_secure("http://example.com", false, "x").is_err());
        assert!(require_secure("http://example.com", true, "x").is_ok());
        assert!(require_secure("http://localhost:1", false, "x").is_ok());
        assert!(require_secure("javascript:alert(1)", true, "x").is_err());
    }

    #[test]
    fn form_encoding() {
        assert_eq!(
            form_encode(&[("a", "b c"), ("r", "https://x/y?z=1&w")]),
            "a=b+c&r=https%3A%2F%2Fx%2Fy%3Fz%3D1%26w"
        );
    }
}
