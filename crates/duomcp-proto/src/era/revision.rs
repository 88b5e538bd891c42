//! [`Revision`]: the facts of one protocol revision, as data.

use super::ProtocolError;
use duomcp_schema::ErrorObject;

/// What one revision of MCP is, as facts the rest of the implementation asks rather than
/// comparing eras: each era's module holds its own ([`legacy::REVISION`] and
/// [`modern::REVISION`]), and [`Era::revision`] is the one place that picks between them.
///
/// ```
/// use duomcp_proto::era::{legacy, modern, Era};
/// assert!(legacy::REVISION.has_sessions);
/// assert!(!modern::REVISION.has_sessions);
/// assert_eq!(Era::of_version("2026-07-28").map(Era::protocol_version), Some("2026-07-28"));
/// assert_eq!(modern::REVISION.sole_version, Some(modern::REVISION.protocol_version));
/// ```
///
/// [`legacy::REVISION`]: super::legacy::REVISION
/// [`modern::REVISION`]: super::modern::REVISION
/// [`Era::revision`]: super::Era::revision
#[derive(Debug)]
#[non_exhaustive]
pub struct Revision {
    /// The newest protocol version of the revision (`2025-11-25`, `2026-07-28`): what a
    /// client asks for and what [`Display`](std::fmt::Display) of an era shows.
    pub protocol_version: &'static str,
    /// Every protocol version a peer may name for this revision, newest first.
    pub versions: &'static [&'static str],
    /// The short name of the revision, as the `mcp.request` span's `era` field shows it
    /// (`legacy`, `modern`).
    pub tag: &'static str,
    /// The protocol version a request speaks without saying, when the revision has only one
    /// (2026-07-28); `None` where versions are negotiated (2025-11-25).
    pub sole_version: Option<&'static str>,
    /// Whether requests carry their caller in `_meta` (2026-07-28), which the dispatcher then
    /// reads and validates.
    pub carries_meta: bool,
    /// Whether a connection is a session (2025-11-25): `initialize` opens it, it holds the
    /// negotiated version, the log level and the resource subscriptions, and the server's
    /// messages unrelated to a request belong to it (over HTTP, its GET stream). 2026-07-28
    /// is stateless: each request carries what the session held.
    pub has_sessions: bool,
    /// Whether closing a request's response stream cancels the request (2026-07-28); a
    /// 2025-11-25 stream may be closed and resumed, the request running on.
    pub stream_close_cancels: bool,
    /// Whether the server asks the client for input (elicitation, sampling, roots) with
    /// `input_required` results answered on a retry of the request (2026-07-28, MRTR), rather
    /// than with server→client requests (2025-11-25).
    pub input_in_rounds: bool,
    /// Whether the progress of a request running as a task becomes the task's
    /// `statusMessage` (2026-07-28, whose tasks carry no notifications) rather than
    /// `notifications/progress` (2025-11-25).
    pub task_progress_in_status: bool,
    /// The JSON-RPC error object a [`ProtocolError`] becomes in this revision.
    pub error_object: fn(&ProtocolError) -> ErrorObject,
}

impl Revision {
    /// Whether `version` is one of this revision's protocol versions.
    ///
    /// ```
    /// use duomcp_proto::era::legacy;
    /// assert!(legacy::REVISION.speaks("2025-06-18"));
    /// assert!(!legacy::REVISION.speaks("2026-07-28"));
    /// ```
    pub fn speaks(&self, version: &str) -> bool {
        self.versions.contains(&version)
    }
}
