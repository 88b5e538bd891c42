//! Params of generic notifications: base params, cancellation and progress.

use serde::{Deserialize, Serialize};

use crate::common::JsonObject;
use crate::jsonrpc::{JsonRpcNotification, ProgressToken, RequestId};
use crate::meta::Meta;

/// Common params of any notification (`NotificationParams`): only `_meta`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NotificationParams {
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Params of `notifications/cancelled` (`CancelledNotificationParams`).
///
/// `requestId` is required in 2026-07-28 and optional in 2025-11-25 (where task
/// cancellation uses `tasks/cancel` instead).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledNotificationParams {
    /// The id of the request to cancel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<RequestId>,
    /// An optional reason, which may be logged or presented to the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl CancelledNotificationParams {
    /// Params cancelling `request_id`.
    pub fn new(request_id: impl Into<RequestId>, reason: Option<String>) -> Self {
        Self {
            request_id: Some(request_id.into()),
            reason,
            ..Self::default()
        }
    }
}

/// Params of `notifications/progress` (`ProgressNotificationParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressNotificationParams {
    /// The token given in the original request's `_meta.progressToken`.
    pub progress_token: ProgressToken,
    /// Progress so far; increases every time, even if `total` is unknown.
    #[serde(serialize_with = "crate::common::num::f64")]
    pub progress: f64,
    /// Total number of items to process, if known.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::common::num::opt_f64"
    )]
    pub total: Option<f64>,
    /// An optional human-readable progress message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl ProgressNotificationParams {
    /// Progress `progress` (of `total`, if known) for `progress_token`.
    pub fn new(progress_token: ProgressToken, progress: f64, total: Option<f64>) -> Self {
        Self {
            progress_token,
            progress,
            total,
            message: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// `CancelledNotification`: `notifications/cancelled`.
pub type CancelledNotification = JsonRpcNotification<CancelledNotificationParams>;
/// `ProgressNotification`: `notifications/progress`.
pub type ProgressNotification = JsonRpcNotification<ProgressNotificationParams>;

crate::meta::impl_has_meta!(
    NotificationParams,
    CancelledNotificationParams,
    ProgressNotificationParams
);
