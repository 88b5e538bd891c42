//! Header names, value encoding and the reading of error bodies.

use crate::jsonrpc::ErrorObject;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use http::HeaderName;
use serde_json::Value;
use std::borrow::Cow;

pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
pub(crate) const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
pub(crate) const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
pub(crate) const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
pub(crate) const ACCEPT_BOTH: &str = "application/json, text/event-stream";
pub(crate) const ACCEPT_SSE: &str = "text/event-stream";

/// Encodes a value for `Mcp-Name` or `Mcp-Param-*` (2026-07-28): values that are plain,
/// printable ASCII without leading or trailing whitespace go as they are; anything else
/// (non-ASCII, control characters, surrounding spaces, or a value that itself looks like the
/// sentinel) becomes `=?base64?{Base64 of the UTF-8}?=`.
///
/// ```
/// use duomcp::client::transport::http::encode_header_value;
/// assert_eq!(encode_header_value("us-west1"), "us-west1");
/// assert_eq!(encode_header_value("us west 1"), "us west 1");
/// assert_eq!(encode_header_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
/// assert_eq!(encode_header_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
/// assert_eq!(encode_header_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
/// assert_eq!(encode_header_value("=?base64?literal?="), "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
/// assert_eq!(encode_header_value(""), "");
/// ```
pub fn encode_header_value(value: &str) -> Cow<'_, str> {
    let printable = value.bytes().all(|b| (0x20..=0x7e).contains(&b));
    let padded = value.starts_with(' ') || value.ends_with(' ');
    let sentinel = value.starts_with("=?base64?") && value.ends_with("?=");
    if printable && !padded && !sentinel {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(format!("=?base64?{}?=", STANDARD.encode(value.as_bytes())))
    }
}

/// The JSON-RPC error in an HTTP error body, if the body is a JSON-RPC error response (with any
/// `id`, `null` included).
pub(crate) fn error_in_body(body: &[u8]) -> Option<ErrorObject> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let error = v.get("error")?;
    serde_json::from_value(error.clone()).ok()
}

/// The codes only a 2026-07-28 server answers with (HTTP 400): header mismatch, missing client
/// capability, unsupported protocol version.
pub(crate) fn is_modern_code(code: i32) -> bool {
    matches!(code, -32022..=-32020)
}

/// Whether a response's `Content-Type` is `media` (ignoring parameters and case).
pub(crate) fn is_media(content_type: Option<&http::HeaderValue>, media: &str) -> bool {
    content_type
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(media))
}

/// A short, printable excerpt of a body for error messages.
pub(crate) fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    let mut out: String = text.chars().take(300).collect();
    if text.chars().count() > 300 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_error_bodies_with_any_id() {
        let e = error_in_body(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32022,"message":"x","data":{"supported":["2026-07-28"]}}}"#).unwrap();
        assert_eq!(e.code, -32022);
        assert!(error_in_body(b"Not Found").is_none());
        assert!(error_in_body(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).is_none());
        assert!(is_modern_code(-32020) && is_modern_code(-32022) && !is_modern_code(-32601));
    }

    #[test]
    fn encodes_control_characters_and_tabs() {
        assert_eq!(encode_header_value("\tindented"), "=?base64?CWluZGVudGVk?=");
        assert!(encode_header_value("a\tb").starts_with("=?base64?"));
        assert_eq!(encode_header_value("x =?base64?y?="), "x =?base64?y?=");
    }
}
