//! 2025-11-25 (and older): error mapping and version negotiation.

pub mod tasks;

use super::{ProtocolError, Revision};
use duomcp_schema::{error_code, version, ErrorObject};
use serde_json::json;

/// The facts of 2025-11-25 (and older): sessions opened by `initialize`, negotiated versions,
/// server→client requests for input, streams that may close and resume.
pub const REVISION: Revision = Revision {
    protocol_version: version::LATEST_LEGACY,
    versions: version::LEGACY_VERSIONS,
    tag: "legacy",
    sole_version: None,
    carries_meta: false,
    has_sessions: true,
    stream_close_cancels: false,
    input_in_rounds: false,
    task_progress_in_status: false,
    error_object,
};

/// The JSON-RPC error for `err` in the legacy era (resource not found is `-32002` here).
pub fn error_object(err: &ProtocolError) -> ErrorObject {
    let (code, message, data) = match err {
        ProtocolError::MethodNotFound(m) => (
            error_code::METHOD_NOT_FOUND,
            format!("Method not found: {m}"),
            None,
        ),
        ProtocolError::InvalidParams(m) => (error_code::INVALID_PARAMS, m.clone(), None),
        ProtocolError::InvalidRequest(m) => (error_code::INVALID_REQUEST, m.clone(), None),
        ProtocolError::ResourceNotFound(uri) => (
            error_code::RESOURCE_NOT_FOUND,
            format!("Resource not found: {uri}"),
            Some(json!({ "uri": uri })),
        ),
        ProtocolError::MissingClientCapability(caps) => (
            error_code::INVALID_REQUEST,
            format!("The client did not declare a capability this request needs: {caps}"),
            Some(json!({ "requiredCapabilities": caps })),
        ),
        ProtocolError::UnsupportedVersion { requested } => (
            error_code::INVALID_PARAMS,
            format!("Unsupported protocol version: {requested}"),
            Some(json!({ "supported": version::OFFERED_LEGACY_VERSIONS, "requested": requested })),
        ),
        ProtocolError::HeaderMismatch(m) | ProtocolError::InvalidMeta(m) => {
            (error_code::INVALID_REQUEST, m.clone(), None)
        }
        ProtocolError::Internal(m) => (error_code::INTERNAL_ERROR, m.clone(), None),
        ProtocolError::InsufficientScope { required } => (
            error_code::INVALID_REQUEST,
            format!(
                "Forbidden: insufficient scope, needs `{}`",
                required.join(" ")
            ),
            Some(json!({ "requiredScopes": required })),
        ),
        ProtocolError::Custom(e) => return e.clone(),
    };
    ErrorObject {
        code,
        message,
        data,
    }
}

/// The version the server answers `initialize` with: the client's if we offer it, else our
/// latest. 2025-03-26 is not offered (its batches are not supported, see
/// [`version::OFFERED_LEGACY_VERSIONS`]).
///
/// ```
/// use duomcp_proto::era::legacy::negotiate;
/// assert_eq!(negotiate("2025-06-18"), "2025-06-18");
/// assert_eq!(negotiate("2099-01-01"), "2025-11-25");
/// assert_eq!(negotiate("2025-03-26"), "2025-11-25");
/// ```
pub fn negotiate(requested: &str) -> &'static str {
    version::OFFERED_LEGACY_VERSIONS
        .iter()
        .copied()
        .find(|v| *v == requested)
        .unwrap_or(version::LATEST_LEGACY)
}
