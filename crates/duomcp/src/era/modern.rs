//! 2026-07-28: per-request `_meta`, error mapping, and the fields every result carries.

use super::ProtocolError;
use duomcp_schema::methods::{self, RequestMethod};
use duomcp_schema::{
    error_code, meta, version, ClientCapabilities, ErrorObject, Implementation, LoggingLevel,
    ProgressToken,
};
use serde::Deserialize;
use serde_json::json;

/// The JSON-RPC error for `err` in the modern era (resource not found is `-32602` with `data.uri`).
pub fn error_object(err: &ProtocolError) -> ErrorObject {
    let (code, message, data) = match err {
        ProtocolError::MethodNotFound(m) => (
            error_code::METHOD_NOT_FOUND,
            format!("Method not found: {m}"),
            None,
        ),
        ProtocolError::InvalidParams(m) => (error_code::INVALID_PARAMS, m.clone(), None),
        ProtocolError::InvalidMeta(m) => (
            error_code::INVALID_PARAMS,
            format!("Invalid _meta: {m}"),
            None,
        ),
        ProtocolError::InvalidRequest(m) => (error_code::INVALID_REQUEST, m.clone(), None),
        ProtocolError::ResourceNotFound(uri) => (
            error_code::INVALID_PARAMS,
            format!("Resource not found: {uri}"),
            Some(json!({ "uri": uri })),
        ),
        ProtocolError::MissingClientCapability(caps) => (
            error_code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            "Missing required client capability".to_owned(),
            Some(json!({ "requiredCapabilities": caps })),
        ),
        ProtocolError::UnsupportedVersion { requested } => (
            error_code::UNSUPPORTED_PROTOCOL_VERSION,
            format!("Unsupported protocol version: {requested}"),
            Some(json!({ "supported": version::MODERN_VERSIONS, "requested": requested })),
        ),
        ProtocolError::HeaderMismatch(m) => (
            error_code::HEADER_MISMATCH,
            format!("Header mismatch: {m}"),
            None,
        ),
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

/// The HTTP status a modern-era error travels with on Streamable HTTP.
///
/// ```
/// use duomcp::era::{modern::http_status, ProtocolError};
/// assert_eq!(http_status(&ProtocolError::MethodNotFound("x".into())), 404);
/// assert_eq!(http_status(&ProtocolError::InvalidParams("unknown tool".into())), 200);
/// ```
pub fn http_status(err: &ProtocolError) -> u16 {
    match err {
        ProtocolError::MethodNotFound(_) => 404,
        ProtocolError::InvalidMeta(_)
        | ProtocolError::HeaderMismatch(_)
        | ProtocolError::MissingClientCapability(_)
        | ProtocolError::UnsupportedVersion { .. }
        | ProtocolError::InvalidRequest(_) => 400,
        ProtocolError::InsufficientScope { .. } => 403,
        _ => 200,
    }
}

/// The per-request `_meta` keys a modern request carries, as the server reads them.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RequestMeta {
    /// `io.modelcontextprotocol/protocolVersion` (required).
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", default)]
    pub protocol_version: Option<String>,
    /// `io.modelcontextprotocol/clientCapabilities` (required; `{}` means none).
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", default)]
    pub client_capabilities: Option<ClientCapabilities>,
    /// `io.modelcontextprotocol/clientInfo` (optional, SHOULD be sent).
    #[serde(rename = "io.modelcontextprotocol/clientInfo", default)]
    pub client_info: Option<Implementation>,
    /// `io.modelcontextprotocol/logLevel`: without it the server sends no log messages.
    #[serde(rename = "io.modelcontextprotocol/logLevel", default)]
    pub log_level: Option<LoggingLevel>,
    /// `progressToken`, if the client wants progress notifications.
    #[serde(rename = "progressToken", default)]
    pub progress_token: Option<ProgressToken>,
}

/// A validated modern request context: version and capabilities are known to be present.
#[derive(Debug, Clone)]
pub struct ValidMeta {
    /// The protocol version, one of [`version::MODERN_VERSIONS`].
    pub protocol_version: String,
    /// What the client can do for this request.
    pub client_capabilities: ClientCapabilities,
    /// Who the client says it is.
    pub client_info: Option<Implementation>,
    /// Requested log level, if any.
    pub log_level: Option<LoggingLevel>,
    /// Progress token, if any.
    pub progress_token: Option<ProgressToken>,
}

/// Parses and checks the `_meta` of a modern request (the raw `_meta` JSON, if present).
///
/// ```
/// use duomcp::era::modern::validate_meta;
/// let ok = validate_meta(Some(r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
///     "io.modelcontextprotocol/clientCapabilities":{}}"#)).unwrap();
/// assert_eq!(ok.protocol_version, "2026-07-28");
/// assert!(validate_meta(None).is_err());
/// ```
pub fn validate_meta(raw: Option<&str>) -> Result<ValidMeta, ProtocolError> {
    let Some(raw) = raw else {
        return Err(ProtocolError::InvalidMeta(format!(
            "params._meta is required and must carry `{}`",
            meta::PROTOCOL_VERSION
        )));
    };
    let m: RequestMeta =
        serde_json::from_str(raw).map_err(|e| ProtocolError::InvalidMeta(e.to_string()))?;
    let Some(protocol_version) = m.protocol_version else {
        return Err(ProtocolError::InvalidMeta(format!(
            "missing `{}`",
            meta::PROTOCOL_VERSION
        )));
    };
    let Some(client_capabilities) = m.client_capabilities else {
        return Err(ProtocolError::InvalidMeta(format!(
            "missing `{}`",
            meta::CLIENT_CAPABILITIES
        )));
    };
    if !version::is_modern(&protocol_version) {
        return Err(ProtocolError::UnsupportedVersion {
            requested: protocol_version,
        });
    }
    Ok(ValidMeta {
        protocol_version,
        client_capabilities,
        client_info: m.client_info,
        log_level: m.log_level,
        progress_token: m.progress_token,
    })
}

/// Methods of 2025-11-25 that 2026-07-28 removed; a modern request for one is `-32601`.
pub const REMOVED_METHODS: &[&str] = &[
    <methods::Initialize as RequestMethod>::NAME,
    <methods::Ping as RequestMethod>::NAME,
    <methods::SetLevel as RequestMethod>::NAME,
    <methods::Subscribe as RequestMethod>::NAME,
    <methods::Unsubscribe as RequestMethod>::NAME,
    <methods::GetTaskPayload as RequestMethod>::NAME,
    <methods::ListTasks as RequestMethod>::NAME,
];
