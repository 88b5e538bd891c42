//! The tasks extension `io.modelcontextprotocol/tasks` used with 2026-07-28 (ext-tasks).
//!
//! Only `tools/call` may become a task; the server alone decides. The ext-tasks schema reuses
//! names of the 2025-11-25 core tasks for other shapes (`Task`, `CreateTaskResult`,
//! `GetTaskResult`, `CancelTaskResult`, `TaskStatusNotification`…): here they carry an `Ext`
//! prefix ([`ExtTask`], [`ExtCreateTaskResult`], …), so that each name means one type. The
//! types both share (`GetTaskRequestParams`, `CancelTaskRequestParams`, `TaskStatus`) are the
//! core ones, in [`super`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::{EmptyResult, JsonObject, ResultType};
use crate::jsonrpc::{ErrorObject, JsonRpcNotification, JsonRpcRequest};
use crate::meta::Meta;
use crate::mrtr::{InputRequests, InputResponses};
use crate::subscriptions::SubscriptionFilter;

// The core types this extension shares, documented in `super`; kept here so code naming them
// at this path compiles.
#[doc(hidden)]
pub use super::{
    CancelTaskRequest, CancelTaskRequestParams, GetTaskRequest, GetTaskRequestParams, TaskStatus,
};

/// The extension identifier, used as a key in `capabilities.extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/tasks";

/// The extension's capability settings (`TasksExtensionCapability`): an empty object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct TasksExtensionCapability {}

/// The base data of a task (`Task` in ext-tasks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtTask {
    /// The task identifier.
    pub task_id: String,
    /// Current task state.
    pub status: TaskStatus,
    /// Optional human-readable description of the current state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// ISO 8601 creation time.
    pub created_at: String,
    /// ISO 8601 time of the last status change.
    pub last_updated_at: String,
    /// Retention in ms from creation; `None` (written as `null`) = unlimited.
    pub ttl_ms: Option<i64>,
    /// Suggested polling interval in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<i64>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// A task with its status-specific details (`DetailedTask`).
///
/// One struct for all five status shapes: `inputRequests` is present for
/// `input_required`, `result` for `completed`, `error` for `failed`. Also the shape of
/// `GetTaskResult` (with `resultType: "complete"`) and of `notifications/tasks` params
/// (with `_meta`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DetailedTask {
    /// The task identifier.
    pub task_id: String,
    /// Current task state.
    pub status: TaskStatus,
    /// Optional human-readable description of the current state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// ISO 8601 creation time.
    pub created_at: String,
    /// ISO 8601 time of the last status change.
    pub last_updated_at: String,
    /// Retention in ms from creation; `None` (written as `null`) = unlimited.
    pub ttl_ms: Option<i64>,
    /// Suggested polling interval in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<i64>,
    /// Outstanding input requests (status `input_required`; required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// The final result of the original request (status `completed`; required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<JsonObject>,
    /// The JSON-RPC error the request ended with (status `failed`; required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
    /// Result type (`complete`, when used as a `tasks/get` result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Reserved metadata (when used as a result or notification params).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl DetailedTask {
    /// A task in status `status` with the given timestamps and ttl, without details.
    pub fn new(
        task_id: impl Into<String>,
        status: TaskStatus,
        created_at: impl Into<String>,
        last_updated_at: impl Into<String>,
        ttl_ms: Option<i64>,
    ) -> Self {
        Self {
            task_id: task_id.into(),
            status,
            status_message: None,
            created_at: created_at.into(),
            last_updated_at: last_updated_at.into(),
            ttl_ms,
            poll_interval_ms: None,
            input_requests: None,
            result: None,
            error: None,
            result_type: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// Marks the task `completed` with the original request's result.
    pub fn completed(mut self, result: JsonObject) -> Self {
        self.status = TaskStatus::Completed;
        self.result = Some(result);
        self
    }

    /// Marks the task `failed` with a JSON-RPC error.
    pub fn failed(mut self, error: ErrorObject) -> Self {
        self.status = TaskStatus::Failed;
        self.error = Some(error);
        self
    }

    /// Marks the task `input_required` with the requests to fulfil.
    pub fn input_required(mut self, input_requests: InputRequests) -> Self {
        self.status = TaskStatus::InputRequired;
        self.input_requests = Some(input_requests);
        self
    }

    /// Parses the `completed` result as `T` (`None` when there is no result).
    pub fn result_as<T: serde::de::DeserializeOwned>(
        &self,
    ) -> Option<Result<T, serde_json::Error>> {
        self.result
            .clone()
            .map(|r| serde_json::from_value(Value::Object(r)))
    }
}

/// `WorkingTask`: a [`DetailedTask`] with status `working`.
pub type WorkingTask = DetailedTask;
/// `InputRequiredTask`: a [`DetailedTask`] with status `input_required` and `inputRequests`.
pub type InputRequiredTask = DetailedTask;
/// `CompletedTask`: a [`DetailedTask`] with status `completed` and `result`.
pub type CompletedTask = DetailedTask;
/// `FailedTask`: a [`DetailedTask`] with status `failed` and `error`.
pub type FailedTask = DetailedTask;
/// `CancelledTask`: a [`DetailedTask`] with status `cancelled`.
pub type CancelledTask = DetailedTask;
/// `GetTaskResult`: `Result & DetailedTask` with `resultType: "complete"`.
pub type ExtGetTaskResult = DetailedTask;
/// `TaskStatusNotificationParams`: `NotificationParams & DetailedTask`.
pub type ExtTaskStatusNotificationParams = DetailedTask;

/// The result of a `tools/call` the server turned into a task (`CreateTaskResult`,
/// `resultType: "task"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtCreateTaskResult {
    /// The task identifier.
    pub task_id: String,
    /// Current task state.
    pub status: TaskStatus,
    /// Optional human-readable description of the current state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// ISO 8601 creation time.
    pub created_at: String,
    /// ISO 8601 time of the last status change.
    pub last_updated_at: String,
    /// Retention in ms from creation; `None` (written as `null`) = unlimited.
    pub ttl_ms: Option<i64>,
    /// Suggested polling interval in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<i64>,
    /// Result type: always `task`.
    pub result_type: ResultType,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl ExtCreateTaskResult {
    /// A `resultType: "task"` result for a new `working` task.
    pub fn working(
        task_id: impl Into<String>,
        created_at: impl Into<String>,
        ttl_ms: Option<i64>,
    ) -> Self {
        let created_at = created_at.into();
        Self {
            task_id: task_id.into(),
            status: TaskStatus::Working,
            status_message: None,
            last_updated_at: created_at.clone(),
            created_at,
            ttl_ms,
            poll_interval_ms: None,
            result_type: ResultType::Task,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// Params of `tasks/update`: deliver input responses to a task.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskRequestParams {
    /// The task to update.
    pub task_id: String,
    /// Responses keyed like the task's `inputRequests`.
    pub input_responses: InputResponses,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// `UpdateTaskResult`: an empty acknowledgement with `resultType: "complete"`.
pub type UpdateTaskResult = EmptyResult;
/// `CancelTaskResult`: an empty acknowledgement with `resultType: "complete"`.
pub type ExtCancelTaskResult = EmptyResult;
/// `UpdateTaskRequest`: a `tasks/update` request envelope.
pub type UpdateTaskRequest = JsonRpcRequest<UpdateTaskRequestParams>;
/// `TaskStatusNotification`: `notifications/tasks` (full task, via `subscriptions/listen`).
pub type ExtTaskStatusNotification = JsonRpcNotification<ExtTaskStatusNotificationParams>;
/// `TaskSubscriptionNotifications`: the `taskIds` addition to [`SubscriptionFilter`].
pub type TaskSubscriptionNotifications = SubscriptionFilter;
/// `TaskSubscriptionAcknowledgedNotifications`: the `taskIds` addition to an acknowledged
/// [`SubscriptionFilter`].
pub type TaskSubscriptionAcknowledgedNotifications = SubscriptionFilter;

crate::meta::impl_has_meta!(DetailedTask, ExtCreateTaskResult, UpdateTaskRequestParams);
crate::common::impl_has_result_type!(DetailedTask);

// The names these types have in the ext-tasks schema, which the 2025-11-25 core tasks also
// use (for other types); kept so code naming them here compiles.
#[doc(hidden)]
pub type Task = ExtTask;
#[doc(hidden)]
pub type CreateTaskResult = ExtCreateTaskResult;
#[doc(hidden)]
pub type GetTaskResult = ExtGetTaskResult;
#[doc(hidden)]
pub type CancelTaskResult = ExtCancelTaskResult;
#[doc(hidden)]
pub type TaskStatusNotification = ExtTaskStatusNotification;
#[doc(hidden)]
pub type TaskStatusNotificationParams = ExtTaskStatusNotificationParams;
