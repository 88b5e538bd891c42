//! The two protocol eras and everything that differs between them.
//!
//! This is the only place that knows eras: how a request is recognised as modern, how domain
//! errors become JSON-RPC error objects, and what every result must carry. Handlers and
//! transports ask this module instead of comparing version strings.

mod detect;
pub mod legacy;
pub mod modern;
pub mod tasks;

pub use detect::of_refusal;
pub use detect::Undecided;
pub use detect::{detect, Signals};
pub use tasks::TaskWire;

use std::fmt;

/// Which revision of MCP a request (or a session) speaks.
///
/// ```
/// use duomcp_proto::Era;
/// assert_eq!(Era::of_version("2025-06-18"), Some(Era::Legacy));
/// assert_eq!(Era::of_version("2026-07-28"), Some(Era::Modern));
/// assert_eq!(Era::of_version("1999-01-01"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// 2025-11-25 and older: stateful, `initialize` handshake, server→client requests.
    Legacy,
    /// 2026-07-28: stateless, `_meta` on every request, `server/discover`, MRTR.
    Modern,
}

impl Era {
    /// The JSON-RPC error object `err` becomes in this era (see [`legacy::error_object`] and
    /// [`modern::error_object`]).
    ///
    /// ```
    /// use duomcp_proto::era::{Era, ProtocolError};
    /// let missing = ProtocolError::ResourceNotFound("file:///x".into());
    /// assert_eq!(Era::Legacy.error_object(&missing).code, -32002);
    /// assert_eq!(Era::Modern.error_object(&missing).code, -32602);
    /// ```
    pub fn error_object(self, err: &ProtocolError) -> duomcp_schema::ErrorObject {
        match self {
            Era::Legacy => legacy::error_object(err),
            Era::Modern => modern::error_object(err),
        }
    }

    /// What a message that says nothing of its era speaks: 2025-11-25 (and the 2025-03-26
    /// clients that send no version header), the era of `initialize`.
    pub const UNMARKED: Era = Era::Legacy;

    /// The short name of the era, as the `mcp.request` span's `era` field shows it.
    pub fn tag(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }

    /// Whether requests of this era carry their caller in `_meta` (2026-07-28), which the
    /// dispatcher then reads and validates.
    pub fn carries_meta(self) -> bool {
        self == Era::Modern
    }

    /// Whether a connection of this era is a session (2025-11-25): `initialize` opens it, it
    /// holds the negotiated version, the log level and the resource subscriptions, and the
    /// server's messages unrelated to a request belong to it (over HTTP, its GET stream).
    /// 2026-07-28 is stateless: each request carries what the session held.
    pub fn has_sessions(self) -> bool {
        self == Era::Legacy
    }

    /// Whether closing a request's response stream cancels the request (2026-07-28); a
    /// 2025-11-25 stream may be closed and resumed, the request running on.
    pub fn stream_close_cancels(self) -> bool {
        self == Era::Modern
    }

    /// Whether the server asks the client for input (elicitation, sampling, roots) with
    /// `input_required` results answered on a retry of the request (2026-07-28, MRTR), rather
    /// than with server→client requests (2025-11-25).
    pub fn input_in_rounds(self) -> bool {
        self == Era::Modern
    }

    /// The protocol version of this era when it has only one (2026-07-28), so a request
    /// speaks it without saying; `None` for 2025-11-25, whose versions are negotiated.
    pub fn sole_version(self) -> Option<&'static str> {
        (self == Era::Modern).then_some(duomcp_schema::version::LATEST_MODERN)
    }

    /// The era a protocol version string belongs to, if we support it.
    pub fn of_version(version: &str) -> Option<Era> {
        if duomcp_schema::version::is_modern(version) {
            Some(Era::Modern)
        } else if duomcp_schema::version::is_legacy(version) {
            Some(Era::Legacy)
        } else {
            None
        }
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Era::Legacy => "legacy (2025-11-25)",
            Era::Modern => "modern (2026-07-28)",
        })
    }
}

/// A protocol-level failure, independent of era; [`legacy::error_object`] and
/// [`modern::error_object`] turn it into the JSON-RPC error each revision prescribes.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ProtocolError {
    /// The method is unknown, removed in this era, or its capability is not offered.
    MethodNotFound(String),
    /// Params are malformed or name something that does not exist (tool, prompt, cursor…).
    InvalidParams(String),
    /// `resources/read` of a URI the server does not have.
    ResourceNotFound(String),
    /// The request is not acceptable at this point (e.g. before `initialize`).
    InvalidRequest(String),
    /// The handler needs a client capability the request did not declare (`data.requiredCapabilities`).
    MissingClientCapability(serde_json::Value),
    /// The requested protocol version is not supported.
    UnsupportedVersion {
        /// The version the client asked for.
        requested: String,
    },
    /// The request's `_meta` lacks a required key or has a malformed one (2026-07-28 only).
    InvalidMeta(String),
    /// A mirrored HTTP header disagrees with the body (2026-07-28 only).
    HeaderMismatch(String),
    /// Something went wrong inside the server.
    Internal(String),
    /// An error object chosen by the application, passed through unchanged.
    Custom(duomcp_schema::ErrorObject),
    /// The caller's access token lacks scopes the operation needs (HTTP `403` with an
    /// `insufficient_scope` challenge naming all of them).
    InsufficientScope {
        /// Every scope the operation needs.
        required: Vec<String>,
    },
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::MethodNotFound(m) => write!(f, "method not found: {m}"),
            ProtocolError::InvalidParams(m)
            | ProtocolError::InvalidRequest(m)
            | ProtocolError::Internal(m) => f.write_str(m),
            ProtocolError::HeaderMismatch(m) => write!(f, "header mismatch: {m}"),
            ProtocolError::InvalidMeta(m) => write!(f, "invalid _meta: {m}"),
            ProtocolError::ResourceNotFound(uri) => write!(f, "resource not found: {uri}"),
            ProtocolError::MissingClientCapability(c) => {
                write!(f, "missing required client capability: {c}")
            }
            ProtocolError::UnsupportedVersion { requested } => {
                write!(f, "unsupported protocol version: {requested}")
            }
            ProtocolError::Custom(e) => write!(f, "{} ({})", e.message, e.code),
            ProtocolError::InsufficientScope { required } => {
                write!(f, "insufficient scope: needs {}", required.join(" "))
            }
        }
    }
}
