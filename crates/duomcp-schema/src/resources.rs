//! Resources: listing, templates, reading, and (2025-11-25) subscriptions.

use serde::{Deserialize, Serialize};

use crate::common::{
    Annotations, CacheScope, Cursor, Icon, JsonObject, PaginatedRequestParams, ResultType,
};
use crate::content::ResourceContents;
use crate::jsonrpc::{JsonRpcNotification, JsonRpcRequest, JsonRpcResultResponse};
use crate::meta::Meta;
use crate::mrtr::{InputResponses, MrtrResult};
use crate::notifications::NotificationParams;

/// A known resource that the server is capable of reading (`Resource`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// The URI of this resource.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Human-readable display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A description of what this resource represents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of this resource, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The size of the raw resource content in bytes, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Optional annotations for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Optional set of sized icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl Resource {
    /// A resource at `uri` named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            ..Self::default()
        }
    }

    /// Sets the MIME type.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// A template description for resources available on the server (`ResourceTemplate`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// An RFC 6570 URI template for constructing resource URIs.
    pub uri_template: String,
    /// Programmatic name.
    pub name: String,
    /// Human-readable display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A description of what this template is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of all resources matching this template, if uniform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Optional annotations for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Optional set of sized icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl ResourceTemplate {
    /// A template `uri_template` named `name`.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri_template: uri_template.into(),
            name: name.into(),
            ..Self::default()
        }
    }
}

/// Params of a resource-related request (`ResourceRequestParams`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ResourceRequestParams {
    /// The URI of the resource.
    pub uri: String,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Params of a `resources/read` request (`ReadResourceRequestParams`).
///
/// `inputResponses` and `requestState` (MRTR retries) exist only in 2026-07-28.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceRequestParams {
    /// The URI of the resource to read.
    pub uri: String,
    /// Responses to the server's input requests (2026-07-28 MRTR retry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// Opaque state echoed from an `InputRequiredResult` (2026-07-28 MRTR retry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl ReadResourceRequestParams {
    /// Params reading `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            ..Self::default()
        }
    }
}

/// The result of a `resources/read` request (`ReadResourceResult`).
///
/// `ttlMs`, `cacheScope` and `resultType` exist only in 2026-07-28 (required there).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceResult {
    /// The contents of the resource (or sub-resources).
    pub contents: Vec<ResourceContents>,
    /// Cache lifetime hint in ms (2026-07-28 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Cache scope (2026-07-28 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Result type (2026-07-28 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl ReadResourceResult {
    /// A result with the given contents.
    pub fn new(contents: Vec<ResourceContents>) -> Self {
        Self {
            contents,
            ..Self::default()
        }
    }
}

/// The result of a `resources/list` request (`ListResourcesResult`).
///
/// `ttlMs`, `cacheScope` and `resultType` exist only in 2026-07-28 (required there).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourcesResult {
    /// The resources.
    pub resources: Vec<Resource>,
    /// Cursor for the next page, if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// Cache lifetime hint in ms (2026-07-28 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Cache scope (2026-07-28 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Result type (2026-07-28 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl ListResourcesResult {
    /// A single (last) page of resources.
    pub fn new(resources: Vec<Resource>) -> Self {
        Self {
            resources,
            ..Self::default()
        }
    }
}

/// The result of a `resources/templates/list` request (`ListResourceTemplatesResult`).
///
/// `ttlMs`, `cacheScope` and `resultType` exist only in 2026-07-28 (required there).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourceTemplatesResult {
    /// The resource templates.
    pub resource_templates: Vec<ResourceTemplate>,
    /// Cursor for the next page, if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// Cache lifetime hint in ms (2026-07-28 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Cache scope (2026-07-28 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Result type (2026-07-28 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl ListResourceTemplatesResult {
    /// A single (last) page of templates.
    pub fn new(resource_templates: Vec<ResourceTemplate>) -> Self {
        Self {
            resource_templates,
            ..Self::default()
        }
    }
}

/// Params of a `resources/subscribe` request (`SubscribeRequestParams`, 2025-11-25 only).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SubscribeRequestParams {
    /// The URI of the resource to subscribe to.
    pub uri: String,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Params of a `resources/unsubscribe` request (`UnsubscribeRequestParams`, 2025-11-25 only).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UnsubscribeRequestParams {
    /// The URI of the resource to unsubscribe from.
    pub uri: String,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Params of a `notifications/resources/updated` notification (`ResourceUpdatedNotificationParams`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ResourceUpdatedNotificationParams {
    /// The URI of the resource that has been updated (possibly a sub-resource).
    pub uri: String,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl ResourceUpdatedNotificationParams {
    /// Params announcing an update of `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            ..Self::default()
        }
    }
}

/// `ListResourcesRequest`: a `resources/list` request envelope.
pub type ListResourcesRequest = JsonRpcRequest<PaginatedRequestParams>;
/// `ListResourceTemplatesRequest`: a `resources/templates/list` request envelope.
pub type ListResourceTemplatesRequest = JsonRpcRequest<PaginatedRequestParams>;
/// `ReadResourceRequest`: a `resources/read` request envelope.
pub type ReadResourceRequest = JsonRpcRequest<ReadResourceRequestParams>;
/// `SubscribeRequest` (2025-11-25): a `resources/subscribe` request envelope.
pub type SubscribeRequest = JsonRpcRequest<SubscribeRequestParams>;
/// `UnsubscribeRequest` (2025-11-25): a `resources/unsubscribe` request envelope.
pub type UnsubscribeRequest = JsonRpcRequest<UnsubscribeRequestParams>;
/// `ResourceListChangedNotification`: `notifications/resources/list_changed`.
pub type ResourceListChangedNotification = JsonRpcNotification<NotificationParams>;
/// `ResourceUpdatedNotification`: `notifications/resources/updated`.
pub type ResourceUpdatedNotification = JsonRpcNotification<ResourceUpdatedNotificationParams>;
/// `ReadResourceResultResponse` (2026-07-28): a `ReadResourceResult` or an `InputRequiredResult`.
pub type ReadResourceResultResponse = JsonRpcResultResponse<MrtrResult<ReadResourceResult>>;
/// `ListResourcesResultResponse` (2026-07-28).
pub type ListResourcesResultResponse = JsonRpcResultResponse<ListResourcesResult>;
/// `ListResourceTemplatesResultResponse` (2026-07-28).
pub type ListResourceTemplatesResultResponse = JsonRpcResultResponse<ListResourceTemplatesResult>;

crate::meta::impl_has_meta!(
    Resource,
    ResourceTemplate,
    ResourceRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
    ResourceUpdatedNotificationParams
);
crate::common::impl_has_result_type!(
    ReadResourceResult,
    ListResourcesResult,
    ListResourceTemplatesResult
);
