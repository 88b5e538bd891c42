//! `subscriptions/listen` (2026-07-28): opt-in notification streams.

use serde::{Deserialize, Serialize};

use crate::common::{JsonObject, ResultType};
use crate::jsonrpc::{JsonRpcNotification, JsonRpcRequest, JsonRpcResultResponse};
use crate::meta::Meta;

/// The notification types a client opts in to (`SubscriptionFilter`); each is opt-in.
///
/// `taskIds` comes from the ext-tasks extension (`TaskSubscriptionNotifications`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// Receive `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// Receive `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// Receive `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// Receive `notifications/resources/updated` for these resource URIs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// Receive `notifications/tasks` for these task ids (ext-tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<Vec<String>>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Params of a `subscriptions/listen` request (`SubscriptionsListenRequestParams`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SubscriptionsListenRequestParams {
    /// The notifications the client wants on this stream.
    pub notifications: SubscriptionFilter,
    /// Request metadata (required).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Params of `notifications/subscriptions/acknowledged`
/// (`SubscriptionsAcknowledgedNotificationParams`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SubscriptionsAcknowledgedNotificationParams {
    /// The subset of the requested notifications the server will honour.
    pub notifications: SubscriptionFilter,
    /// Notification metadata (carries the subscription id).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// The graceful-end result of `subscriptions/listen` (`SubscriptionsListenResult`).
///
/// `_meta` (with the subscription id) is required.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsListenResult {
    /// Result type (required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata, with `io.modelcontextprotocol/subscriptionId`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// `SubscriptionsListenRequest`: a `subscriptions/listen` request envelope.
pub type SubscriptionsListenRequest = JsonRpcRequest<SubscriptionsListenRequestParams>;
/// `SubscriptionsAcknowledgedNotification`: `notifications/subscriptions/acknowledged`.
pub type SubscriptionsAcknowledgedNotification =
    JsonRpcNotification<SubscriptionsAcknowledgedNotificationParams>;
/// `SubscriptionsListenResultResponse`.
pub type SubscriptionsListenResultResponse = JsonRpcResultResponse<SubscriptionsListenResult>;

crate::meta::impl_has_meta!(
    SubscriptionsListenRequestParams,
    SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenResult
);
crate::common::impl_has_result_type!(SubscriptionsListenResult);
