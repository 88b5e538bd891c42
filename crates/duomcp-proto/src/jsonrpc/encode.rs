//! Writing JSON-RPC messages straight into a byte buffer, without building a `Value` first.

use duomcp_schema::{ErrorObject, RequestId};
use serde::Serialize;

fn write_id(out: &mut Vec<u8>, id: &RequestId) {
    // Serialising an id into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, id);
}

/// Encodes a successful response. The buffer is not newline-terminated.
///
/// ```
/// use duomcp_proto::jsonrpc::{encode_result, RequestId};
/// let bytes = encode_result(&RequestId::Number(7.into()), &serde_json::json!({})).unwrap();
/// assert_eq!(bytes, br#"{"jsonrpc":"2.0","id":7,"result":{}}"#);
/// ```
pub fn encode_result<T: Serialize + ?Sized>(
    id: &RequestId,
    result: &T,
) -> serde_json::Result<Vec<u8>> {
    let mut out = result_head(id);
    serde_json::to_writer(&mut out, result)?;
    out.push(b'}');
    Ok(out)
}

/// The start of a successful response, up to and including `"result":`; the caller appends
/// the result and the closing `}`.
pub fn result_head(id: &RequestId) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    write_id(&mut out, id);
    out.extend_from_slice(br#","result":"#);
    out
}

/// Encodes an error response; `id` is `None` when the request's id could not be read, and the
/// `id` member is then omitted (MCP's schema allows no `null` id).
///
/// ```
/// use duomcp_proto::jsonrpc::{encode_error, error};
/// let bytes = encode_error(None, &error(-32700, "Parse error"));
/// assert_eq!(bytes, br#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}"#);
/// ```
pub fn encode_error(id: Option<&RequestId>, error: &ErrorObject) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","#);
    if let Some(id) = id {
        out.extend_from_slice(br#""id":"#);
        write_id(&mut out, id);
        out.push(b',');
    }
    out.extend_from_slice(br#""error":"#);
    let _ = serde_json::to_writer(&mut out, error);
    out.push(b'}');
    out
}

/// Encodes a notification.
pub fn encode_notification<T: Serialize + ?Sized>(
    method: &str,
    params: &T,
) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
    serde_json::to_writer(&mut out, method)?;
    out.extend_from_slice(br#","params":"#);
    serde_json::to_writer(&mut out, params)?;
    out.push(b'}');
    Ok(out)
}

/// Encodes a request.
pub fn encode_request<T: Serialize + ?Sized>(
    id: &RequestId,
    method: &str,
    params: &T,
) -> serde_json::Result<Vec<u8>> {
    // A 2026-07-28 request's `_meta` envelope alone is some 250 bytes: room for a typical
    // request at once, rather than two or three reallocations.
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    write_id(&mut out, id);
    out.extend_from_slice(br#","method":"#);
    serde_json::to_writer(&mut out, method)?;
    out.extend_from_slice(br#","params":"#);
    serde_json::to_writer(&mut out, params)?;
    out.push(b'}');
    Ok(out)
}
