//! [`ClientError`]: everything a client call can fail with, and [`InputError`], what the
//! application's elicitation, sampling and roots handlers return when they cannot answer.

use super::transport::TransportError;
use crate::jsonrpc::{error_code, ErrorObject};
use std::fmt;
use std::time::Duration;

/// Why a client call failed.
///
/// ```
/// use duomcp::client::ClientError;
/// use duomcp::jsonrpc::ErrorObject;
/// let err = ClientError::Rpc {
///     method: "tools/call".into(),
///     error: ErrorObject { code: -32602, message: "Unknown tool: x".into(), data: None },
/// };
/// assert_eq!(err.rpc_error().map(|e| e.code), Some(-32602));
/// assert_eq!(err.to_string(), "tools/call failed with error -32602: Unknown tool: x");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The connection is closed: the server exited, the stream ended, or the client was closed.
    /// Requests in flight fail with this instead of hanging.
    #[error("the connection is closed: {reason}")]
    Closed {
        /// What ended it (for a process: its exit status).
        reason: String,
    },
    /// The transport failed to deliver a message.
    #[error("transport error: {0}")]
    Transport(#[source] TransportError),
    /// The server could not be started.
    #[error("cannot start the server: {0}")]
    Spawn(#[source] std::io::Error),
    /// No response in time; the request was cancelled on the wire. (When the server had
    /// written a line that is not a JSON-RPC message, the call fails with
    /// [`Protocol`](Self::Protocol) instead, quoting that line.)
    #[error("{method} timed out after {after:?}")]
    Timeout {
        /// The method of the request.
        method: String,
        /// How long the client waited.
        after: Duration,
    },
    /// The server answered with a JSON-RPC error; code, message and data are kept.
    #[error("{method} failed with error {}: {}", error.code, error.message)]
    Rpc {
        /// The method of the request.
        method: String,
        /// The error object as the server sent it.
        error: ErrorObject,
    },
    /// The server and the client have no protocol version in common.
    #[error("no common protocol version: the client asked for {requested}, the server supports {}", supported.join(", "))]
    UnsupportedVersion {
        /// The version the client asked for.
        requested: String,
        /// The versions the server named.
        supported: Vec<String>,
    },
    /// The server broke the protocol (a malformed result, an input request on a method that
    /// does not allow one, a missing acknowledgement…).
    #[error("protocol violation: {0}")]
    Protocol(String),
    /// An application handler (elicitation, sampling, roots) failed while answering a
    /// 2026-07-28 input request.
    #[error("the {method} handler failed: {message}")]
    Handler {
        /// The input request's method (`elicitation/create`, …).
        method: String,
        /// What the handler said.
        message: String,
    },
    /// The server asked for input this client has no handler for.
    #[error("the server asked for {method}, but the client has no handler for it")]
    NoHandler {
        /// The input request's method.
        method: String,
    },
    /// The server kept asking for input past the configured number of rounds.
    #[error("{method} still needed input after {rounds} rounds")]
    TooManyInputRounds {
        /// The method of the request.
        method: String,
        /// How many rounds were answered.
        rounds: usize,
    },
    /// A tool's `structuredContent` does not match the `outputSchema` it was listed with.
    #[error(
        "tool `{tool}` returned structured content that does not match its outputSchema: {message}"
    )]
    InvalidStructuredContent {
        /// The tool's name.
        tool: String,
        /// What did not match.
        message: String,
    },
    /// The arguments could not be turned into a JSON object.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The operation does not exist in the negotiated era or the server does not offer it.
    #[error("not supported: {0}")]
    Unsupported(String),
    /// The task behind a call ended `cancelled` before it produced a result (see
    /// [`TaskHandle::cancel`](super::TaskHandle::cancel)).
    #[error("task {task_id} was cancelled")]
    TaskCancelled {
        /// The task's id.
        task_id: String,
    },
}

impl ClientError {
    /// The server's JSON-RPC error, if that is what this is.
    pub fn rpc_error(&self) -> Option<&ErrorObject> {
        match self {
            ClientError::Rpc { error, .. } => Some(error),
            _ => None,
        }
    }

    /// Whether the connection is gone.
    pub fn is_closed(&self) -> bool {
        matches!(self, ClientError::Closed { .. })
    }

    /// Whether the request timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self, ClientError::Timeout { .. })
    }
}

impl From<TransportError> for ClientError {
    fn from(e: TransportError) -> Self {
        match e {
            TransportError::Closed(reason) => ClientError::Closed { reason },
            other => ClientError::Transport(other),
        }
    }
}

/// What an elicitation, sampling or roots handler returns when it cannot answer.
///
/// In 2025-11-25 it becomes the JSON-RPC error of the client's response (code, message, data);
/// in 2026-07-28 the call that needed the input fails with [`ClientError::Handler`].
///
/// ```
/// use duomcp::client::InputError;
/// let e = InputError::new("no model configured");
/// assert_eq!(e.code, -32603);
/// let e = InputError::with_code(-1, "User rejected sampling request");
/// assert_eq!(e.to_string(), "User rejected sampling request");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct InputError {
    /// The JSON-RPC error code (default `-32603`, internal error).
    pub code: i32,
    /// A short description.
    pub message: String,
    /// Extra data for the server.
    pub data: Option<serde_json::Value>,
}

impl InputError {
    /// An internal error (`-32603`) with `message`.
    pub fn new(message: impl fmt::Display) -> Self {
        InputError {
            code: error_code::INTERNAL_ERROR,
            message: message.to_string(),
            data: None,
        }
    }

    /// An error with a chosen code.
    pub fn with_code(code: i32, message: impl fmt::Display) -> Self {
        InputError {
            code,
            message: message.to_string(),
            data: None,
        }
    }

    pub(crate) fn to_error_object(&self) -> ErrorObject {
        ErrorObject {
            code: self.code,
            message: self.message.clone(),
            data: self.data.clone(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for InputError {}

impl From<String> for InputError {
    fn from(message: String) -> Self {
        InputError::new(message)
    }
}

impl From<&str> for InputError {
    fn from(message: &str) -> Self {
        InputError::new(message)
    }
}

impl From<std::io::Error> for InputError {
    fn from(e: std::io::Error) -> Self {
        InputError::new(e)
    }
}
