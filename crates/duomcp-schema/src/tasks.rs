//! Tasks of 2025-11-25 (core, experimental, bidirectional). The 2026-07-28 tasks
//! extension lives in [`ext`].

use serde::{Deserialize, Serialize};

use crate::common::{Cursor, EmptyResult, JsonObject, PaginatedRequestParams};
use crate::jsonrpc::{JsonRpcNotification, JsonRpcRequest};
use crate::meta::Meta;

pub mod ext;

/// The status of a task (shared by 2025-11-25 and ext-tasks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The request is being processed.
    Working,
    /// The receiver needs input from the requestor.
    InputRequired,
    /// The request completed successfully (terminal).
    Completed,
    /// The request failed (terminal).
    Failed,
    /// The request was cancelled (terminal).
    Cancelled,
}

impl TaskStatus {
    /// Whether no further status change can happen.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// The wire string of this status.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

/// Metadata for augmenting a request with task execution (`TaskMetadata`, 2025-11-25).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TaskMetadata {
    /// Requested time in ms to retain the task after creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<i64>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Associates a message with a task (`RelatedTaskMetadata`, value of
/// `_meta["io.modelcontextprotocol/related-task"]`, 2025-11-25).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelatedTaskMetadata {
    /// The task this message relates to.
    pub task_id: String,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Params of a request that may be task-augmented (`TaskAugmentedRequestParams`, 2025-11-25).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TaskAugmentedRequestParams {
    /// Requests task execution; the receiver answers with a `CreateTaskResult`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Data associated with a task (`Task`, 2025-11-25).
///
/// Also the shape of `GetTaskResult`, `CancelTaskResult` (both `Result & Task`) and
/// `TaskStatusNotificationParams` (`NotificationParams & Task`), hence `_meta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
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
    /// Actual retention in ms from creation; `None` (written as `null`) = unlimited.
    pub ttl: Option<i64>,
    /// Suggested polling interval in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval: Option<i64>,
    /// Reserved metadata (when used as a result or notification params).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl Task {
    /// A task with the given id, status, timestamps (ISO 8601) and ttl.
    pub fn new(
        task_id: impl Into<String>,
        status: TaskStatus,
        created_at: impl Into<String>,
        last_updated_at: impl Into<String>,
        ttl: Option<i64>,
    ) -> Self {
        Self {
            task_id: task_id.into(),
            status,
            status_message: None,
            created_at: created_at.into(),
            last_updated_at: last_updated_at.into(),
            ttl,
            poll_interval: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// The answer to a task-augmented request (`CreateTaskResult`, 2025-11-25).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateTaskResult {
    /// The created task.
    pub task: Task,
    /// Reserved metadata (may carry `model-immediate-response`).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl CreateTaskResult {
    /// A result announcing `task`.
    pub fn new(task: Task) -> Self {
        Self {
            task,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// Params of `tasks/get` (both the 2025-11-25 core and ext-tasks).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequestParams {
    /// The task to query.
    pub task_id: String,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Params of `tasks/result` (2025-11-25).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskPayloadRequestParams {
    /// The task whose result to retrieve.
    pub task_id: String,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Params of `tasks/cancel` (both the 2025-11-25 core and ext-tasks).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequestParams {
    /// The task to cancel.
    pub task_id: String,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// The result of `tasks/list` (`ListTasksResult`, 2025-11-25).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResult {
    /// The tasks.
    pub tasks: Vec<Task>,
    /// Cursor for the next page, if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// `GetTaskResult` (2025-11-25): `Result & Task`.
pub type GetTaskResult = Task;
/// `CancelTaskResult` (2025-11-25): `Result & Task` (status `cancelled`).
pub type CancelTaskResult = Task;
/// `TaskStatusNotificationParams` (2025-11-25): `NotificationParams & Task`.
pub type TaskStatusNotificationParams = Task;
/// `GetTaskPayloadResult` (2025-11-25): exactly the underlying request's result (any object).
pub type GetTaskPayloadResult = EmptyResult;
/// `GetTaskRequest`: a `tasks/get` request envelope (2025-11-25 and ext-tasks).
pub type GetTaskRequest = JsonRpcRequest<GetTaskRequestParams>;
/// `GetTaskPayloadRequest` (2025-11-25): a `tasks/result` request envelope.
pub type GetTaskPayloadRequest = JsonRpcRequest<GetTaskPayloadRequestParams>;
/// `CancelTaskRequest`: a `tasks/cancel` request envelope (2025-11-25 and ext-tasks).
pub type CancelTaskRequest = JsonRpcRequest<CancelTaskRequestParams>;
/// `ListTasksRequest` (2025-11-25): a `tasks/list` request envelope.
pub type ListTasksRequest = JsonRpcRequest<PaginatedRequestParams>;
/// `TaskStatusNotification` (2025-11-25): `notifications/tasks/status`.
pub type TaskStatusNotification = JsonRpcNotification<TaskStatusNotificationParams>;

crate::meta::impl_has_meta!(
    TaskAugmentedRequestParams,
    Task,
    CreateTaskResult,
    GetTaskRequestParams,
    GetTaskPayloadRequestParams,
    CancelTaskRequestParams,
    ListTasksResult
);
