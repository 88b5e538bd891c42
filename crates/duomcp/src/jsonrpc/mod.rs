//! JSON-RPC 2.0 plumbing shared by both peers and both eras.
//!
//! This layer is sans-IO: it turns bytes into [`Incoming`] messages and messages back into bytes,
//! and knows nothing about tokio, sockets or MCP methods.
//!
//! Decoding is done once per message: the envelope is read with borrowed [`RawValue`] fields, so
//! `params` (or `result`) is copied as raw text and parsed exactly once, by the code that knows its
//! type.

mod decode;
mod encode;
mod framing;

pub use decode::{
    decode, DecodeError, Incoming, IncomingNotification, IncomingRequest, IncomingResponse,
};
pub(crate) use encode::result_head;
pub use encode::{encode_error, encode_notification, encode_request, encode_result};
pub use framing::{Line, LineReader};

pub use duomcp_schema::{error_code, ErrorObject, RequestId};

use serde_json::value::RawValue;

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
pub fn parse_params<T: serde::de::DeserializeOwned>(
    params: Option<&RawValue>,
) -> Result<T, ErrorObject> {
    let text = params.map(RawValue::get).unwrap_or("{}");
    if !text.trim_start().starts_with('{') {
        return Err(error(
            error_code::INVALID_PARAMS,
            "Invalid params: `params` must be a JSON object",
        ));
    }
    // The common case, valid params, goes through plain serde_json; only a failure is parsed
    // again with path tracking (which costs on every field) for a precise message.
    // Every struct is read from an object only, never from an array by position.
    if let Ok(parsed) = duomcp_schema::strict::from_str(text) {
        return Ok(parsed);
    }
    if let Err(e) = duomcp_schema::strict::from_str::<T>(text) {
        if serde_json::from_str::<T>(text).is_ok() {
            return Err(error(
                error_code::INVALID_PARAMS,
                format!("Invalid params: {e} (an object is expected, not an array)"),
            ));
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = if path.is_empty() || path == "." {
            format!("Invalid params: {inner}")
        } else {
            format!("Invalid params: `{path}`: {inner}")
        };
        error(error_code::INVALID_PARAMS, message)
    })
}
