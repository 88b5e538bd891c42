//! The two protocol eras and everything that differs between them.
//!
//! This is the only place that knows eras: how a request is recognised as modern, how domain
//! errors become JSON-RPC error objects, and what every result must carry. Handlers and
//! transports ask this module instead of comparing version strings.

mod detect;
pub mod legacy;
pub mod modern;
mod revision;
pub mod tasks;

pub use detect::of_refusal;
pub use detect::Undecided;
pub use detect::{detect, Signals};
pub use revision::Revision;
// Documented at `era::tasks::TaskWire`; kept here so code naming it compiles.
#[doc(hidden)]
pub use tasks::TaskWire;

use std::fmt;

/// Which revision of MCP a request (or a session) speaks. What a revision is lives in its
/// module, as a [`Revision`] ([`legacy::REVISION`], [`modern::REVISION`]); code that differs
/// by revision asks [`Era::revision`] for the fact it needs.
///
/// ```
/// use duomcp_proto::era::Era;
/// let era = |v| Era::of_version(v).map(Era::protocol_version);
/// assert_eq!(era("2025-06-18"), Some("2025-11-25"));
/// assert_eq!(era("2026-07-28"), Some("2026-07-28"));
/// assert_eq!(era("1999-01-01"), None);
/// assert!(Era::UNMARKED.revision().has_sessions);
/// ```
///
/// Serialized as `"legacy"` / `"modern"` (a task record's `era`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Era {
    /// 2025-11-25 and older: stateful, `initialize` handshake, server→client requests.
    Legacy,
    /// 2026-07-28: stateless, `_meta` on every request, `server/discover`, MRTR.
    Modern,
}

impl Era {
    /// Both eras, oldest first.
    pub const ALL: [Era; 2] = [Era::Legacy, Era::Modern];

    /// What a message that says nothing of its era speaks: 2025-11-25 (and the 2025-03-26
    /// clients that send no version header), the era of `initialize`.
    pub const UNMARKED: Era = Era::Legacy;

    /// The facts of this era's revision: the one place that matches on the era.
    pub const fn revision(self) -> &'static Revision {
        match self {
            Era::Legacy => &legacy::REVISION,
            Era::Modern => &modern::REVISION,
        }
    }

    /// The newest protocol version of this era (`2025-11-25`, `2026-07-28`).
    pub fn protocol_version(self) -> &'static str {
        self.revision().protocol_version
    }

    /// The JSON-RPC error object `err` becomes in this era (see [`legacy::error_object`] and
    /// [`modern::error_object`]).
    ///
    /// ```
    /// use duomcp_proto::era::{Era, ProtocolError};
    /// let missing = ProtocolError::ResourceNotFound("file:///x".into());
    /// let code = |v| Era::of_version(v).unwrap().error_object(&missing).code;
    /// assert_eq!(code("2025-11-25"), -32002);
    /// assert_eq!(code("2026-07-28"), -32602);
    /// ```
    pub fn error_object(self, err: &ProtocolError) -> duomcp_schema::ErrorObject {
        (self.revision().error_object)(err)
    }

    /// The short name of the era, as the `mcp.request` span's `era` field shows it.
    pub fn tag(self) -> &'static str {
        self.revision().tag
    }

    /// [`Revision::carries_meta`].
    pub fn carries_meta(self) -> bool {
        self.revision().carries_meta
    }

    /// [`Revision::has_sessions`].
    pub fn has_sessions(self) -> bool {
        self.revision().has_sessions
    }

    /// [`Revision::stream_close_cancels`].
    pub fn stream_close_cancels(self) -> bool {
        self.revision().stream_close_cancels
    }

    /// [`Revision::input_in_rounds`].
    pub fn input_in_rounds(self) -> bool {
        self.revision().input_in_rounds
    }

    /// [`Revision::sole_version`].
    pub fn sole_version(self) -> Option<&'static str> {
        self.revision().sole_version
    }

    /// The era a protocol version string belongs to, if we support it.
    pub fn of_version(version: &str) -> Option<Era> {
        Era::ALL.into_iter().find(|e| e.revision().speaks(version))
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.revision();
        write!(f, "{} ({})", r.tag, r.protocol_version)
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
