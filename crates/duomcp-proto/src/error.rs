//! The error type handlers return (re-exported by `duomcp` as `duomcp::server::HandlerError`).
//!
//! It lives here, next to [`ProtocolError`], because `?` turns a [`ProtocolError`] into a
//! [`HandlerError::Protocol`] and every other error into a [`HandlerError::Failed`]: the two
//! conversions can only be told apart in the crate that defines [`ProtocolError`].

use crate::era::ProtocolError;
use std::fmt;

/// Why a handler did not produce its result.
///
/// * In a tool, [`HandlerError::Failed`] (what `?` makes of any `std::error::Error`, of an
///   `anyhow::Error`, a `String`, a `&str` or a `Box<dyn Error + Send + Sync>`) becomes a result
///   with `isError: true`, so the model can see it and correct itself; in prompts and resources
///   it becomes a JSON-RPC internal error. The message is the error and its causes
///   (`source()`), joined with `: `, as `anyhow` prints them with `{:#}`.
/// * [`HandlerError::Protocol`] becomes a JSON-RPC error response, mapped per era.
/// * [`HandlerError::InputRequired`] is produced by `Context::elicit`
///   and friends (in `duomcp::server`) in the 2026-07-28 era; let it propagate with `?` and the runtime answers with an
///   `InputRequiredResult`.
///
/// ```
/// use duomcp_proto::error::HandlerError;
/// fn parse(n: &str) -> Result<u32, HandlerError> {
///     Ok(n.parse::<u32>()?) // a ParseIntError becomes HandlerError::Failed
/// }
/// assert!(matches!(parse("x"), Err(HandlerError::Failed(_))));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum HandlerError {
    /// The handler failed; the message is shown to the caller.
    Failed(Box<dyn std::error::Error + Send + Sync>),
    /// A protocol error (unknown resource, bad params, missing capability…).
    Protocol(ProtocolError),
    /// The client must supply input first (modern era); carries no data of its own.
    InputRequired(InputRequired),
    /// The request was cancelled.
    Cancelled,
}

/// Marker error: the handler asked for client input that has not arrived yet (2026-07-28 MRTR).
///
/// Returned by `Context::elicit`, `Context::sample` and `Context::list_roots` (in
/// `duomcp::server`); propagate it with `?`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputRequired;

impl fmt::Display for InputRequired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("client input required")
    }
}

impl HandlerError {
    /// A failure with a plain message.
    pub fn msg(message: impl Into<String>) -> Self {
        HandlerError::Failed(message.into().into())
    }

    /// A `-32602` invalid-params error.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        HandlerError::Protocol(ProtocolError::InvalidParams(message.into()))
    }

    /// The resource does not exist (`-32002` in 2025-11-25, `-32602` with `data.uri` in 2026-07-28).
    pub fn resource_not_found(uri: impl Into<String>) -> Self {
        HandlerError::Protocol(ProtocolError::ResourceNotFound(uri.into()))
    }

    /// The request needs client capabilities it did not declare (`-32021` in 2026-07-28).
    pub fn missing_capability(required: serde_json::Value) -> Self {
        HandlerError::Protocol(ProtocolError::MissingClientCapability(required))
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandlerError::Failed(e) => fmt::Display::fmt(e, f),
            HandlerError::Protocol(e) => fmt::Display::fmt(e, f),
            HandlerError::InputRequired(e) => fmt::Display::fmt(e, f),
            HandlerError::Cancelled => f.write_str("request cancelled"),
        }
    }
}

/// Anything that converts into a boxed error: every `std::error::Error + Send + Sync`,
/// `anyhow::Error`, `String`, `&str`, `Box<dyn Error + Send + Sync>`.
///
/// ```
/// use duomcp_proto::error::HandlerError;
/// let from_string: HandlerError = String::from("no such city").into();
/// let from_str: HandlerError = "no such city".into();
/// assert_eq!(from_string.to_string(), from_str.to_string());
/// ```
impl<E: Into<Box<dyn std::error::Error + Send + Sync>>> From<E> for HandlerError {
    fn from(e: E) -> Self {
        HandlerError::Failed(e.into())
    }
}

impl HandlerError {
    /// The same error with a [`Failed`](HandlerError::Failed) error's causes in its message
    /// (`outer: inner: root`), as the caller is shown it.
    pub fn with_causes(self) -> Self {
        match self {
            HandlerError::Failed(e) if e.source().is_some() => {
                let mut message = e.to_string();
                let mut cause = e.source();
                while let Some(c) = cause {
                    message.push_str(": ");
                    message.push_str(&c.to_string());
                    cause = c.source();
                }
                HandlerError::msg(message)
            }
            other => other,
        }
    }
}

impl HandlerError {
    /// The protocol error this failure is answered with when it is not a result of its own
    /// (a tool's [`Failed`](HandlerError::Failed) is an `isError` result instead): a
    /// [`Protocol`](HandlerError::Protocol) error as it is, anything else an internal error;
    /// `input_required` words [`InputRequired`](HandlerError::InputRequired), which each era
    /// refuses differently where input may not be asked.
    ///
    /// ```
    /// use duomcp_proto::era::ProtocolError;
    /// use duomcp_proto::error::HandlerError;
    /// let refused = || ProtocolError::Internal("no input here".into());
    /// let e = HandlerError::invalid_params("bad").into_protocol_error(refused);
    /// assert_eq!(e, ProtocolError::InvalidParams("bad".into()));
    /// let e = HandlerError::msg("boom").into_protocol_error(refused);
    /// assert_eq!(e, ProtocolError::Internal("boom".into()));
    /// ```
    pub fn into_protocol_error(
        self,
        input_required: impl FnOnce() -> ProtocolError,
    ) -> ProtocolError {
        match self {
            HandlerError::Protocol(p) => p,
            HandlerError::Failed(e) => ProtocolError::Internal(e.to_string()),
            HandlerError::InputRequired(_) => input_required(),
            HandlerError::Cancelled => ProtocolError::Internal("cancelled".into()),
        }
    }
}

impl From<InputRequired> for HandlerError {
    fn from(e: InputRequired) -> Self {
        HandlerError::InputRequired(e)
    }
}

impl From<ProtocolError> for HandlerError {
    fn from(e: ProtocolError) -> Self {
        HandlerError::Protocol(e)
    }
}
