//! One marker type per JSON-RPC method of both revisions and ext-tasks, binding the
//! method name to its params and result types.
//!
//! Every method string of the protocol is defined here, once, as a `NAME` constant.
//! An absent `params` member should be read as `{}`: the params types of methods whose
//! params are optional have only optional fields.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::common::{EmptyResult, PaginatedRequestParams, RequestParams};
use crate::completion::{CompleteRequestParams, CompleteResult};
use crate::elicitation::{
    ElicitRequestParams, ElicitResult, ElicitationCompleteNotificationParams,
};
use crate::lifecycle::{DiscoverResult, InitializeRequestParams, InitializeResult};
use crate::logging::{LoggingMessageNotificationParams, SetLevelRequestParams};
use crate::notifications::{
    CancelledNotificationParams, NotificationParams, ProgressNotificationParams,
};
use crate::prompts::{GetPromptRequestParams, GetPromptResult, ListPromptsResult};
use crate::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResult, ResourceUpdatedNotificationParams, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use crate::roots::ListRootsResult;
use crate::sampling::{CreateMessageRequestParams, CreateMessageResult};
use crate::subscriptions::{
    SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
};
use crate::tasks;
use crate::tools::{CallToolRequestParams, CallToolResult, ListToolsResult};

/// A request method: its name, params type and result type.
pub trait RequestMethod {
    /// The JSON-RPC method name.
    const NAME: &'static str;
    /// The params type.
    type Params: Serialize + DeserializeOwned;
    /// The (complete) result type.
    type Result: Serialize + DeserializeOwned;
}

/// A notification method: its name and params type.
pub trait NotificationMethod {
    /// The JSON-RPC method name.
    const NAME: &'static str;
    /// The params type.
    type Params: Serialize + DeserializeOwned;
}

macro_rules! request_methods {
    ($($(#[$doc:meta])* $name:ident = $method:literal, $params:ty => $result:ty;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name;

        impl RequestMethod for $name {
            const NAME: &'static str = $method;
            type Params = $params;
            type Result = $result;
        }
    )*};
}

macro_rules! notification_methods {
    ($($(#[$doc:meta])* $name:ident = $method:literal, $params:ty;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name;

        impl NotificationMethod for $name {
            const NAME: &'static str = $method;
            type Params = $params;
        }
    )*};
}

request_methods! {
    /// `initialize` (2025-11-25, client → server).
    Initialize = "initialize", InitializeRequestParams => InitializeResult;
    /// `ping` (2025-11-25, either direction).
    Ping = "ping", RequestParams => EmptyResult;
    /// `server/discover` (2026-07-28).
    Discover = "server/discover", RequestParams => DiscoverResult;
    /// `tools/list`.
    ListTools = "tools/list", PaginatedRequestParams => ListToolsResult;
    /// `tools/call` (2026-07-28 may answer `InputRequiredResult` or, with ext-tasks,
    /// `tasks::ext::ExtCreateTaskResult`; see [`crate::MrtrResult`]).
    CallTool = "tools/call", CallToolRequestParams => CallToolResult;
    /// `prompts/list`.
    ListPrompts = "prompts/list", PaginatedRequestParams => ListPromptsResult;
    /// `prompts/get` (2026-07-28 may answer `InputRequiredResult`).
    GetPrompt = "prompts/get", GetPromptRequestParams => GetPromptResult;
    /// `resources/list`.
    ListResources = "resources/list", PaginatedRequestParams => ListResourcesResult;
    /// `resources/templates/list`.
    ListResourceTemplates = "resources/templates/list", PaginatedRequestParams => ListResourceTemplatesResult;
    /// `resources/read` (2026-07-28 may answer `InputRequiredResult`).
    ReadResource = "resources/read", ReadResourceRequestParams => ReadResourceResult;
    /// `resources/subscribe` (2025-11-25).
    Subscribe = "resources/subscribe", SubscribeRequestParams => EmptyResult;
    /// `resources/unsubscribe` (2025-11-25).
    Unsubscribe = "resources/unsubscribe", UnsubscribeRequestParams => EmptyResult;
    /// `completion/complete`.
    Complete = "completion/complete", CompleteRequestParams => CompleteResult;
    /// `logging/setLevel` (2025-11-25).
    SetLevel = "logging/setLevel", SetLevelRequestParams => EmptyResult;
    /// `subscriptions/listen` (2026-07-28).
    SubscriptionsListen = "subscriptions/listen", SubscriptionsListenRequestParams => SubscriptionsListenResult;
    /// `sampling/createMessage` (2025-11-25 server → client; 2026-07-28 input request).
    CreateMessage = "sampling/createMessage", CreateMessageRequestParams => CreateMessageResult;
    /// `elicitation/create` (2025-11-25 server → client; 2026-07-28 input request).
    Elicit = "elicitation/create", ElicitRequestParams => ElicitResult;
    /// `roots/list` (2025-11-25 server → client; 2026-07-28 input request).
    ListRoots = "roots/list", RequestParams => ListRootsResult;
    /// `tasks/get` (2025-11-25 core; see [`ext::GetTask`] for ext-tasks).
    GetTask = "tasks/get", tasks::GetTaskRequestParams => tasks::GetTaskResult;
    /// `tasks/result` (2025-11-25).
    GetTaskPayload = "tasks/result", tasks::GetTaskPayloadRequestParams => tasks::GetTaskPayloadResult;
    /// `tasks/list` (2025-11-25).
    ListTasks = "tasks/list", PaginatedRequestParams => tasks::ListTasksResult;
    /// `tasks/cancel` (2025-11-25 core; see [`ext::CancelTask`] for ext-tasks).
    CancelTask = "tasks/cancel", tasks::CancelTaskRequestParams => tasks::CancelTaskResult;
    /// `tasks/update` (ext-tasks).
    UpdateTask = "tasks/update", tasks::ext::UpdateTaskRequestParams => tasks::ext::UpdateTaskResult;
}

notification_methods! {
    /// `notifications/initialized` (2025-11-25, client → server).
    Initialized = "notifications/initialized", NotificationParams;
    /// `notifications/cancelled`.
    Cancelled = "notifications/cancelled", CancelledNotificationParams;
    /// `notifications/progress`.
    Progress = "notifications/progress", ProgressNotificationParams;
    /// `notifications/message`.
    LoggingMessage = "notifications/message", LoggingMessageNotificationParams;
    /// `notifications/resources/updated`.
    ResourceUpdated = "notifications/resources/updated", ResourceUpdatedNotificationParams;
    /// `notifications/resources/list_changed`.
    ResourceListChanged = "notifications/resources/list_changed", NotificationParams;
    /// `notifications/tools/list_changed`.
    ToolListChanged = "notifications/tools/list_changed", NotificationParams;
    /// `notifications/prompts/list_changed`.
    PromptListChanged = "notifications/prompts/list_changed", NotificationParams;
    /// `notifications/roots/list_changed` (2025-11-25).
    RootsListChanged = "notifications/roots/list_changed", NotificationParams;
    /// `notifications/elicitation/complete` (2025-11-25).
    ElicitationComplete = "notifications/elicitation/complete", ElicitationCompleteNotificationParams;
    /// `notifications/tasks/status` (2025-11-25).
    TaskStatus = "notifications/tasks/status", tasks::TaskStatusNotificationParams;
    /// `notifications/subscriptions/acknowledged` (2026-07-28).
    SubscriptionsAcknowledged = "notifications/subscriptions/acknowledged", SubscriptionsAcknowledgedNotificationParams;
    /// `notifications/tasks` (ext-tasks).
    Tasks = "notifications/tasks", tasks::ext::ExtTaskStatusNotificationParams;
}

/// Method markers of the ext-tasks extension whose types differ from the 2025-11-25 core.
pub mod ext {
    use super::{NotificationMethod, RequestMethod};
    use crate::tasks;

    pub use super::{Tasks, UpdateTask};

    /// `tasks/get` (ext-tasks): returns a `DetailedTask`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct GetTask;

    impl RequestMethod for GetTask {
        const NAME: &'static str = <super::GetTask as RequestMethod>::NAME;
        type Params = tasks::GetTaskRequestParams;
        type Result = tasks::ext::ExtGetTaskResult;
    }

    /// `tasks/cancel` (ext-tasks): returns an empty acknowledgement.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct CancelTask;

    impl RequestMethod for CancelTask {
        const NAME: &'static str = <super::CancelTask as RequestMethod>::NAME;
        type Params = tasks::CancelTaskRequestParams;
        type Result = tasks::ext::ExtCancelTaskResult;
    }

    /// Whether `method` is reserved by the tasks extension (the `tasks/` prefix).
    pub fn is_tasks_method(method: &str) -> bool {
        method.starts_with("tasks/") || method == <Tasks as NotificationMethod>::NAME
    }
}

/// Request methods that exist only in 2025-11-25.
pub const LEGACY_ONLY_REQUESTS: &[&str] = &[
    Initialize::NAME,
    Ping::NAME,
    Subscribe::NAME,
    Unsubscribe::NAME,
    SetLevel::NAME,
    GetTaskPayload::NAME,
    ListTasks::NAME,
];

/// Notification methods that exist only in 2025-11-25.
pub const LEGACY_ONLY_NOTIFICATIONS: &[&str] = &[
    Initialized::NAME,
    RootsListChanged::NAME,
    ElicitationComplete::NAME,
    TaskStatus::NAME,
];

/// Request methods that exist only in 2026-07-28 (core or ext-tasks).
pub const MODERN_ONLY_REQUESTS: &[&str] =
    &[Discover::NAME, SubscriptionsListen::NAME, UpdateTask::NAME];

/// Notification methods that exist only in 2026-07-28 (core or ext-tasks).
pub const MODERN_ONLY_NOTIFICATIONS: &[&str] = &[SubscriptionsAcknowledged::NAME, Tasks::NAME];

/// Methods on which a 2026-07-28 server may answer with an `InputRequiredResult`.
pub const MRTR_METHODS: &[&str] = &[CallTool::NAME, GetPrompt::NAME, ReadResource::NAME];
