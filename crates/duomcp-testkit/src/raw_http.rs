//! Raw HTTP/1.1 over a TCP connection, for tests that must send requests exactly as written
//! (a repeated `Host`, an absolute-form target, a body that stops short) and read the answer
//! as the server put it on the wire. Every request says `Connection: close`, so a response ends
//! where the connection does.
//!
//! ```no_run
//! # async fn demo(addr: std::net::SocketAddr) {
//! use duomcp_testkit::raw_http::{exchange, post_request};
//! use std::time::Duration;
//! let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
//! let req = post_request(addr, &["Host: evil.example"], body);
//! let res = exchange(addr, &req, Duration::from_secs(20)).await;
//! assert_eq!(res.status, 400);
//! # }
//! ```
// A test helper: a broken connection or a response that is not HTTP fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A response read off a raw connection: its status, head (status line and headers) and body
/// (de-chunked when it came chunked).
#[derive(Debug, Clone)]
pub struct Raw {
    /// The status code of the status line.
    pub status: u16,
    /// Everything before the blank line.
    pub head: String,
    /// Everything after it (chunked framing removed).
    pub body: String,
}

impl Raw {
    /// The body as JSON; panics (naming the response) when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.head, self.body))
    }

    /// The JSON-RPC `error.code` of the body; panics when there is none.
    pub fn code(&self) -> i64 {
        self.json()["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("no error code: {}", self.body))
    }

    /// The value of the first header named `name` (any case), trimmed.
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    }
}

/// Splits a whole response into status, head and body; panics when it has no status line.
pub fn parse(bytes: &[u8]) -> Raw {
    let text = String::from_utf8_lossy(bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {text:?}"));
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Raw {
        status,
        head: head.to_owned(),
        body,
    }
}

/// The payload of a chunked body (up to the last chunk, or to where the framing breaks).
pub fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// A `POST /mcp` with `Host`, JSON `Content-Type`, the `Accept` both transports want, the
/// body's `Content-Length` and `Connection: close`, then `extra` (whole header lines).
pub fn post_request(addr: SocketAddr, extra: &[&str], body: &str) -> Vec<u8> {
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for line in extra {
        req.push_str(line);
        req.push_str("\r\n");
    }
    req.push_str("\r\n");
    req.push_str(body);
    req.into_bytes()
}

/// [`post_request`] with `headers` as `(name, value)` pairs (`Host` is `addr`).
///
/// ```
/// use duomcp_testkit::raw_http::post_request_with;
/// let addr = "127.0.0.1:9".parse().unwrap();
/// let req = post_request_with(addr, &[("Mcp-Session-Id", "abc")], "{}");
/// assert!(String::from_utf8(req).unwrap().contains("\r\nMcp-Session-Id: abc\r\n"));
/// ```
pub fn post_request_with(addr: SocketAddr, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let lines: Vec<String> = headers.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    post_request(addr, &lines, body)
}

/// Blocking (std) form of [`exchange`]: sends `request` and returns the whole response as
/// text, head and body as they came (chunked framing kept); panics after `within`.
pub fn exchange_blocking(addr: SocketAddr, request: &[u8], within: Duration) -> String {
    use std::io::{Read, Write};
    let mut tcp = std::net::TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(within)).unwrap();
    tcp.write_all(request).unwrap();
    let mut buf = Vec::new();
    tcp.read_to_end(&mut buf)
        .unwrap_or_else(|e| panic!("reading the response from {addr}: {e}"));
    String::from_utf8_lossy(&buf).into_owned()
}

/// The `Mcp-Session-Id` of a whole response (as [`exchange_blocking`] returns it); panics when
/// it has none.
pub fn session_id(raw: &str) -> String {
    let head = raw.split("\r\n\r\n").next().unwrap_or_default();
    head.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("mcp-session-id")
                .then(|| v.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no session id: {raw}"))
}

/// The JSON-RPC message of a response body: the last non-empty `data:` of an SSE body, or
/// the body itself (a JSON response).
///
/// ```
/// use duomcp_testkit::raw_http::last_message;
/// assert_eq!(last_message("id: 1-0\ndata:\n\nid: 1-1\ndata: {\"id\":1}\n\n"), r#"{"id":1}"#);
/// assert_eq!(last_message(r#"{"id":2}"#), r#"{"id":2}"#);
/// ```
pub fn last_message(body: &str) -> String {
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .rfind(|d| !d.trim().is_empty())
        .map_or(body, str::trim)
        .to_owned()
}

/// A 2025-11-25 session on `addr` (blocking): `initialize` declaring `capabilities` as client
/// `client`, then `notifications/initialized`. Returns the session id.
pub fn legacy_session(addr: SocketAddr, capabilities: Value, client: &str) -> String {
    let init = serde_json::json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion": "2025-11-25", "capabilities": capabilities,
        "clientInfo": {"name": client, "version": "1"}}});
    let raw = exchange_blocking(
        addr,
        &post_request_with(addr, &[], &init.to_string()),
        Duration::from_secs(30),
    );
    let sid = session_id(&raw);
    let done = exchange_blocking(
        addr,
        &post_request_with(
            addr,
            &[
                ("Mcp-Session-Id", &sid),
                ("MCP-Protocol-Version", "2025-11-25"),
            ],
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ),
        Duration::from_secs(30),
    );
    assert!(done.starts_with("HTTP/1.1 202"), "{done}");
    sid
}

/// Sends `request` as it is and reads the response until the server closes the connection;
/// panics when that takes longer than `within`.
pub async fn exchange(addr: SocketAddr, request: &[u8], within: Duration) -> Raw {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(request).await.unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(within, tcp.read_to_end(&mut buf))
        .await
        .expect("timed out reading the response")
        .unwrap();
    parse(&buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_response_is_dechunked_and_headers_are_found_in_any_case() {
        let raw = parse(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nMcp-Session-Id: abc\r\n\r\n\
              5\r\n{\"a\":\r\n2\r\n1}\r\n0\r\n\r\n",
        );
        assert_eq!(raw.status, 200);
        assert_eq!(raw.body, "{\"a\":1}");
        assert_eq!(raw.json()["a"], 1);
        assert_eq!(raw.header("mcp-session-id").as_deref(), Some("abc"));
        assert_eq!(raw.header("content-length"), None);
    }

    #[test]
    fn a_post_carries_its_length_and_extra_lines() {
        let addr: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let req = String::from_utf8(post_request(addr, &["X-A: 1"], "{}")).unwrap();
        assert!(
            req.starts_with("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:9\r\n"),
            "{req}"
        );
        assert!(req.contains("Content-Length: 2\r\n"), "{req}");
        assert!(req.ends_with("X-A: 1\r\n\r\n{}"), "{req}");
    }
}
