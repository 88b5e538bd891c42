//! JSON-RPC 2.0 plumbing shared by both peers and both eras.
//!
//! This layer is sans-IO: it turns bytes into [`Incoming`] messages and messages back into bytes,
//! and knows nothing about tokio, sockets or MCP methods.
//!
//! Decoding is done once per message, in one pass over its bytes: the envelope's members are
//! read as borrowed raw JSON, and a request's `params` is split into its members (with
//! `_meta` read as its fields) in the same pass ([`Params`]); `result` is copied as raw text
//! and parsed once, by the code that knows its type.

mod decode;
mod encode;
pub mod error_path;
mod framing;
mod params;
#[cfg(test)]
mod props;

pub use decode::{
    decode, DecodeError, Incoming, IncomingNotification, IncomingRequest, IncomingResponse,
};
pub use encode::result_head;
pub use encode::{encode_error, encode_notification, encode_request, encode_result};
pub use framing::{Frame, Line, LineFramer, HEAD};
pub use params::Params;

pub use duomcp_schema::{error_code, ErrorObject, RequestId};

/// Builds an [`ErrorObject`] with no `data`.
pub fn error(code: i32, message: impl Into<String>) -> ErrorObject {
    ErrorObject {
        code,
        message: message.into(),
        data: None,
    }
}

/// Builds an [`ErrorObject`] carrying `data`.
pub fn error_with_data(
    code: i32,
    message: impl Into<String>,
    data: serde_json::Value,
) -> ErrorObject {
    ErrorObject {
        code,
        message: message.into(),
        data: Some(data),
    }
}

/// Parses raw `params` into `T`, reporting the path of the offending field in the error message.
///
/// Absent params are treated as an empty object. Params that are not a JSON object are rejected,
/// as MCP requires.
pub fn parse_params<'de, T: serde::Deserialize<'de>>(
    params: Option<&'de str>,
) -> Result<T, ErrorObject> {
    let text = params.unwrap_or("{}");
    if !text.trim_start().starts_with('{') {
        return Err(error(
            error_code::INVALID_PARAMS,
            "Invalid params: `params` must be a JSON object",
        ));
    }
    // Every struct is read from an object only, never from an array by position.
    let strict = match duomcp_schema::strict::from_str(text) {
        Ok(parsed) => return Ok(parsed),
        Err(e) => e,
    };
    // A failure is parsed again by plain serde_json (the reader the strict one uses where
    // no `[` is in the text: no new code per type), whose error position names the member at
    // fault (`error_path`).
    let e = match serde_json::from_str::<T>(text) {
        Ok(_) => {
            return Err(error(
                error_code::INVALID_PARAMS,
                format!("Invalid params: {strict} (an object is expected, not an array)"),
            ))
        }
        Err(e) => e,
    };
    let path = error_path::path(text, &e);
    let message = if path == "." {
        format!("Invalid params: {e}")
    } else {
        format!("Invalid params: `{path}`: {e}")
    };
    Err(error(error_code::INVALID_PARAMS, message))
}
