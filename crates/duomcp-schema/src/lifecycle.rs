//! Lifecycle: `initialize` (2025-11-25), `server/discover` (2026-07-28) and `ping` (2025-11-25).

use serde::{Deserialize, Serialize};

use crate::capabilities::{ClientCapabilities, ServerCapabilities};
use crate::common::{
    CacheScope, EmptyResult, Implementation, JsonObject, RequestParams, ResultType,
};
use crate::jsonrpc::{JsonRpcNotification, JsonRpcRequest, JsonRpcResultResponse};
use crate::meta::Meta;
use crate::notifications::NotificationParams;

/// Params of an `initialize` request (`InitializeRequestParams`, 2025-11-25 only).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequestParams {
    /// The latest protocol version the client supports.
    pub protocol_version: String,
    /// The client's capabilities.
    pub capabilities: ClientCapabilities,
    /// The client's implementation info.
    pub client_info: Implementation,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl InitializeRequestParams {
    /// Params offering `protocol_version` with the given capabilities and client info.
    pub fn new(
        protocol_version: impl Into<String>,
        capabilities: ClientCapabilities,
        client_info: Implementation,
    ) -> Self {
        Self {
            protocol_version: protocol_version.into(),
            capabilities,
            client_info,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// The server's answer to `initialize` (`InitializeResult`, 2025-11-25 only).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The protocol version the server wants to use.
    pub protocol_version: String,
    /// The server's capabilities.
    pub capabilities: ServerCapabilities,
    /// The server's implementation info.
    pub server_info: Implementation,
    /// Natural-language guidance on how to use the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl InitializeResult {
    /// A result choosing `protocol_version`, with capabilities and server info.
    pub fn new(
        protocol_version: impl Into<String>,
        capabilities: ServerCapabilities,
        server_info: Implementation,
    ) -> Self {
        Self {
            protocol_version: protocol_version.into(),
            capabilities,
            server_info,
            ..Self::default()
        }
    }
}

/// The result of `server/discover` (`DiscoverResult`, 2026-07-28 only).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// Protocol versions this server supports.
    pub supported_versions: Vec<String>,
    /// The server's capabilities.
    pub capabilities: ServerCapabilities,
    /// Natural-language guidance on how to use the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Cache lifetime hint in ms (required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Cache scope (required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Result type (required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// `InitializeRequest` (2025-11-25): an `initialize` request envelope.
pub type InitializeRequest = JsonRpcRequest<InitializeRequestParams>;
/// `InitializedNotification` (2025-11-25): `notifications/initialized`.
pub type InitializedNotification = JsonRpcNotification<NotificationParams>;
/// `PingRequest` (2025-11-25): a `ping` request envelope.
pub type PingRequest = JsonRpcRequest<RequestParams>;
/// `DiscoverRequest` (2026-07-28): a `server/discover` request envelope.
pub type DiscoverRequest = JsonRpcRequest<RequestParams>;
/// `DiscoverResultResponse` (2026-07-28).
pub type DiscoverResultResponse = JsonRpcResultResponse<DiscoverResult>;
/// The result of `ping`: an empty result.
pub type PingResult = EmptyResult;

crate::meta::impl_has_meta!(InitializeRequestParams, InitializeResult, DiscoverResult);
crate::common::impl_has_result_type!(DiscoverResult);
