//! JSON-RPC 2.0 plumbing shared by both peers and both eras.
//!
//! The codec is sans-IO and lives in `duomcp-proto` ([`duomcp_proto::jsonrpc`]): it turns
//! bytes into [`Incoming`] messages and messages back into bytes, and knows nothing about
//! tokio, sockets or MCP methods. This module re-exports it and adds [`LineReader`], which
//! drives its newline framing from an async reader.
//!
//! Decoding is done once per message: the envelope is read with borrowed
//! [`RawValue`](serde_json::value::RawValue) fields, so `params` (or `result`) is copied as raw
//! text and parsed exactly once, by the code that knows its type.

mod framing;
#[cfg(any(feature = "server", feature = "client"))]
mod messages;

#[cfg(feature = "server")]
pub(crate) use duomcp_proto::jsonrpc::error_path;
#[cfg(feature = "server")]
pub(crate) use duomcp_proto::jsonrpc::result_head;
pub use duomcp_proto::jsonrpc::{
    decode, encode_error, encode_notification, encode_request, encode_result, error, error_code,
    error_with_data, parse_params, DecodeError, ErrorObject, Incoming, IncomingNotification,
    IncomingRequest, IncomingResponse, Line, Params, RequestId,
};
pub use framing::LineReader;
#[cfg(feature = "server")]
pub(crate) use messages::{MessageReader, MessageWriter};
#[cfg(any(feature = "server", feature = "client"))]
pub(crate) use messages::{ReadMessages, WriteMessages};
