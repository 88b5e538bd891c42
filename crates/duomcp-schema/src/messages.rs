//! The schema's message unions (`ClientRequest`, `ServerRequest`, `ClientNotification`,
//! `ServerNotification`, `ClientResult`, `ServerResult`), as unions over both revisions.
//!
//! Requests and notifications are full JSON-RPC envelopes dispatched on `method`;
//! results are classified by their distinguishing keys.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::{de_util, EmptyResult, JsonObject};
use crate::completion::{CompleteRequest, CompleteResult};
use crate::elicitation::{ElicitRequest, ElicitResult, ElicitationCompleteNotification};
use crate::jsonrpc::{JsonRpcNotification, JsonRpcRequest, RequestId};
use crate::lifecycle::{
    DiscoverRequest, DiscoverResult, InitializeRequest, InitializeResult, InitializedNotification,
    PingRequest,
};
use crate::logging::{LoggingMessageNotification, SetLevelRequest};
use crate::methods::{self, NotificationMethod, RequestMethod};
use crate::mrtr::InputRequiredResult;
use crate::notifications::{CancelledNotification, ProgressNotification};
use crate::prompts::{
    GetPromptRequest, GetPromptResult, ListPromptsRequest, ListPromptsResult,
    PromptListChangedNotification,
};
use crate::resources::{
    ListResourceTemplatesRequest, ListResourceTemplatesResult, ListResourcesRequest,
    ListResourcesResult, ReadResourceRequest, ReadResourceResult, ResourceListChangedNotification,
    ResourceUpdatedNotification, SubscribeRequest, UnsubscribeRequest,
};
use crate::roots::{ListRootsRequest, ListRootsResult, RootsListChangedNotification};
use crate::sampling::{CreateMessageRequest, CreateMessageResult};
use crate::subscriptions::{SubscriptionsAcknowledgedNotification, SubscriptionsListenRequest};
use crate::tasks::{self, ext};
use crate::tools::{
    CallToolRequest, CallToolResult, ListToolsRequest, ListToolsResult, ToolListChangedNotification,
};

fn method_of<E: de::Error>(map: &JsonObject, what: &str) -> Result<String, E> {
    match map.get("method") {
        Some(Value::String(m)) => Ok(m.clone()),
        Some(other) => Err(E::custom(format!(
            "invalid {what}: `method` must be a string, found {}",
            de_util::kind(other)
        ))),
        None => Err(E::custom(format!("invalid {what}: missing `method`"))),
    }
}

macro_rules! method_union {
    (
        $(#[$doc:meta])* $union:ident ($what:literal), $trait:ident {
            $($(#[$vdoc:meta])* $variant:ident($ty:ty) = $marker:path,)*
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Serialize)]
        #[serde(untagged)]
        #[allow(clippy::large_enum_variant)] // plain data mirroring the schema
        pub enum $union {
            $($(#[$vdoc])* $variant($ty),)*
        }

        impl $union {
            /// The method of this message.
            pub fn method(&self) -> &str {
                match self {
                    $(Self::$variant(m) => &m.method,)*
                }
            }
        }

        impl<'de> Deserialize<'de> for $union {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let map = de_util::object(d, $what)?;
                let method = method_of::<D::Error>(&map, $what)?;
                $(
                    if method == <$marker as $trait>::NAME {
                        return de_util::convert(map, <$marker as $trait>::NAME).map(Self::$variant);
                    }
                )*
                Err(de::Error::custom(format!(
                    "invalid {}: unknown method {method:?}",
                    $what
                )))
            }
        }
    };
}

method_union! {
    /// Any request a client sends (`ClientRequest`), both revisions and ext-tasks.
    ClientRequest ("client request"), RequestMethod {
        /// `initialize` (2025-11-25).
        Initialize(InitializeRequest) = methods::Initialize,
        /// `ping` (2025-11-25).
        Ping(PingRequest) = methods::Ping,
        /// `server/discover` (2026-07-28).
        Discover(DiscoverRequest) = methods::Discover,
        /// `resources/list`.
        ListResources(ListResourcesRequest) = methods::ListResources,
        /// `resources/templates/list`.
        ListResourceTemplates(ListResourceTemplatesRequest) = methods::ListResourceTemplates,
        /// `resources/read`.
        ReadResource(ReadResourceRequest) = methods::ReadResource,
        /// `resources/subscribe` (2025-11-25).
        Subscribe(SubscribeRequest) = methods::Subscribe,
        /// `resources/unsubscribe` (2025-11-25).
        Unsubscribe(UnsubscribeRequest) = methods::Unsubscribe,
        /// `subscriptions/listen` (2026-07-28).
        SubscriptionsListen(SubscriptionsListenRequest) = methods::SubscriptionsListen,
        /// `prompts/list`.
        ListPrompts(ListPromptsRequest) = methods::ListPrompts,
        /// `prompts/get`.
        GetPrompt(GetPromptRequest) = methods::GetPrompt,
        /// `tools/list`.
        ListTools(ListToolsRequest) = methods::ListTools,
        /// `tools/call`.
        CallTool(CallToolRequest) = methods::CallTool,
        /// `tasks/get` (2025-11-25 and ext-tasks).
        GetTask(tasks::GetTaskRequest) = methods::GetTask,
        /// `tasks/result` (2025-11-25).
        GetTaskPayload(tasks::GetTaskPayloadRequest) = methods::GetTaskPayload,
        /// `tasks/cancel` (2025-11-25 and ext-tasks).
        CancelTask(tasks::CancelTaskRequest) = methods::CancelTask,
        /// `tasks/list` (2025-11-25).
        ListTasks(tasks::ListTasksRequest) = methods::ListTasks,
        /// `tasks/update` (ext-tasks).
        UpdateTask(ext::UpdateTaskRequest) = methods::UpdateTask,
        /// `logging/setLevel` (2025-11-25).
        SetLevel(SetLevelRequest) = methods::SetLevel,
        /// `completion/complete`.
        Complete(CompleteRequest) = methods::Complete,
    }
}

method_union! {
    /// Any request a 2025-11-25 server sends (`ServerRequest`).
    ServerRequest ("server request"), RequestMethod {
        /// `ping`.
        Ping(PingRequest) = methods::Ping,
        /// `tasks/get`.
        GetTask(tasks::GetTaskRequest) = methods::GetTask,
        /// `tasks/result`.
        GetTaskPayload(tasks::GetTaskPayloadRequest) = methods::GetTaskPayload,
        /// `tasks/cancel`.
        CancelTask(tasks::CancelTaskRequest) = methods::CancelTask,
        /// `tasks/list`.
        ListTasks(tasks::ListTasksRequest) = methods::ListTasks,
        /// `sampling/createMessage`.
        CreateMessage(CreateMessageRequest) = methods::CreateMessage,
        /// `roots/list`.
        ListRoots(ListRootsRequest) = methods::ListRoots,
        /// `elicitation/create`.
        Elicit(ElicitRequest) = methods::Elicit,
    }
}

method_union! {
    /// Any notification a client sends (`ClientNotification`), both revisions.
    ClientNotification ("client notification"), NotificationMethod {
        /// `notifications/cancelled`.
        Cancelled(CancelledNotification) = methods::Cancelled,
        /// `notifications/initialized` (2025-11-25).
        Initialized(InitializedNotification) = methods::Initialized,
        /// `notifications/progress` (2025-11-25).
        Progress(ProgressNotification) = methods::Progress,
        /// `notifications/tasks/status` (2025-11-25).
        TaskStatus(tasks::TaskStatusNotification) = methods::TaskStatus,
        /// `notifications/roots/list_changed` (2025-11-25).
        RootsListChanged(RootsListChangedNotification) = methods::RootsListChanged,
    }
}

method_union! {
    /// Any notification a server sends (`ServerNotification`), both revisions and ext-tasks.
    ServerNotification ("server notification"), NotificationMethod {
        /// `notifications/cancelled`.
        Cancelled(CancelledNotification) = methods::Cancelled,
        /// `notifications/progress`.
        Progress(ProgressNotification) = methods::Progress,
        /// `notifications/resources/list_changed`.
        ResourceListChanged(ResourceListChangedNotification) = methods::ResourceListChanged,
        /// `notifications/resources/updated`.
        ResourceUpdated(ResourceUpdatedNotification) = methods::ResourceUpdated,
        /// `notifications/prompts/list_changed`.
        PromptListChanged(PromptListChangedNotification) = methods::PromptListChanged,
        /// `notifications/tools/list_changed`.
        ToolListChanged(ToolListChangedNotification) = methods::ToolListChanged,
        /// `notifications/tasks/status` (2025-11-25).
        TaskStatus(tasks::TaskStatusNotification) = methods::TaskStatus,
        /// `notifications/message`.
        LoggingMessage(LoggingMessageNotification) = methods::LoggingMessage,
        /// `notifications/elicitation/complete` (2025-11-25).
        ElicitationComplete(ElicitationCompleteNotification) = methods::ElicitationComplete,
        /// `notifications/subscriptions/acknowledged` (2026-07-28).
        SubscriptionsAcknowledged(SubscriptionsAcknowledgedNotification) = methods::SubscriptionsAcknowledged,
        /// `notifications/tasks` (ext-tasks).
        Tasks(ext::ExtTaskStatusNotification) = methods::Tasks,
    }
}

impl ClientRequest {
    /// The request id.
    pub fn id(&self) -> &RequestId {
        macro_rules! id {
            ($($v:ident),*) => {
                match self { $(Self::$v(r) => &r.id,)* }
            };
        }
        id!(
            Initialize,
            Ping,
            Discover,
            ListResources,
            ListResourceTemplates,
            ReadResource,
            Subscribe,
            Unsubscribe,
            SubscriptionsListen,
            ListPrompts,
            GetPrompt,
            ListTools,
            CallTool,
            GetTask,
            GetTaskPayload,
            CancelTask,
            ListTasks,
            UpdateTask,
            SetLevel,
            Complete
        )
    }
}

impl ServerRequest {
    /// The request id.
    pub fn id(&self) -> &RequestId {
        match self {
            Self::Ping(r) => &r.id,
            Self::GetTask(r) => &r.id,
            Self::GetTaskPayload(r) => &r.id,
            Self::CancelTask(r) => &r.id,
            Self::ListTasks(r) => &r.id,
            Self::CreateMessage(r) => &r.id,
            Self::ListRoots(r) => &r.id,
            Self::Elicit(r) => &r.id,
        }
    }
}

macro_rules! try_from_envelope {
    ($($union:ident from $env:ty),*) => {$(
        impl TryFrom<$env> for $union {
            type Error = serde_json::Error;
            /// Types an untyped envelope (dispatching on its method).
            fn try_from(envelope: $env) -> Result<Self, Self::Error> {
                serde_json::to_value(envelope).and_then(serde_json::from_value)
            }
        }
    )*};
}
try_from_envelope!(
    ClientRequest from JsonRpcRequest,
    ServerRequest from JsonRpcRequest,
    ClientNotification from JsonRpcNotification,
    ServerNotification from JsonRpcNotification
);

/// Any result a client sends (`ClientResult`, 2025-11-25), classified by keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // plain data mirroring the schema
pub enum ClientResult {
    /// A sampling result (`role`, `content`, `model`).
    CreateMessage(CreateMessageResult),
    /// A roots listing (`roots`).
    ListRoots(ListRootsResult),
    /// An elicitation answer (`action`).
    Elicit(ElicitResult),
    /// A task listing (`tasks`).
    ListTasks(tasks::ListTasksResult),
    /// A task (`taskId` + `status`): `tasks/get` or `tasks/cancel` result.
    Task(tasks::Task),
    /// A created task (`task`).
    CreateTask(tasks::CreateTaskResult),
    /// Anything else, e.g. the result of `ping` or `tasks/result`.
    Empty(EmptyResult),
}

impl<'de> Deserialize<'de> for ClientResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = de_util::object(d, "client result")?;
        let has = |k: &str| map.contains_key(k);
        if has("action") {
            de_util::convert(map, "ElicitResult").map(Self::Elicit)
        } else if has("role") && has("content") && has("model") {
            de_util::convert(map, "CreateMessageResult").map(Self::CreateMessage)
        } else if has("roots") {
            de_util::convert(map, "ListRootsResult").map(Self::ListRoots)
        } else if has("tasks") {
            de_util::convert(map, "ListTasksResult").map(Self::ListTasks)
        } else if has("taskId") && has("status") {
            de_util::convert(map, "Task").map(Self::Task)
        } else if has("task") {
            de_util::convert(map, "CreateTaskResult").map(Self::CreateTask)
        } else {
            de_util::convert(map, "Result").map(Self::Empty)
        }
    }
}

/// Any result a server sends (`ServerResult`), both revisions and ext-tasks, classified by
/// `resultType` and then by distinguishing keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // plain data mirroring the schema
pub enum ServerResult {
    /// `initialize` result (`protocolVersion` + `serverInfo`).
    Initialize(InitializeResult),
    /// `server/discover` result (`supportedVersions`).
    Discover(DiscoverResult),
    /// `resources/list` result (`resources`).
    ListResources(ListResourcesResult),
    /// `resources/templates/list` result (`resourceTemplates`).
    ListResourceTemplates(ListResourceTemplatesResult),
    /// `resources/read` result (`contents`).
    ReadResource(ReadResourceResult),
    /// `prompts/list` result (`prompts`).
    ListPrompts(ListPromptsResult),
    /// `prompts/get` result (`messages`).
    GetPrompt(GetPromptResult),
    /// `tools/list` result (`tools`).
    ListTools(ListToolsResult),
    /// `tools/call` result (`content`).
    CallTool(CallToolResult),
    /// `completion/complete` result (`completion`).
    Complete(CompleteResult),
    /// `tasks/list` result (`tasks`, 2025-11-25).
    ListTasks(tasks::ListTasksResult),
    /// `tasks/get` / `tasks/cancel` result (`taskId` + `ttl`, 2025-11-25).
    Task(tasks::Task),
    /// Task-augmented request answer (`task`, 2025-11-25).
    CreateTask(tasks::CreateTaskResult),
    /// `tasks/get` result (`taskId` + `ttlMs`, ext-tasks).
    DetailedTask(ext::DetailedTask),
    /// A `tools/call` that became a task (`resultType: "task"`, ext-tasks).
    ExtCreateTask(ext::ExtCreateTaskResult),
    /// More input needed (`resultType: "input_required"`, 2026-07-28).
    InputRequired(InputRequiredResult),
    /// Anything else: `ping`, `subscriptions/listen`, acknowledgements, `tasks/result`.
    Empty(EmptyResult),
}

impl<'de> Deserialize<'de> for ServerResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = de_util::object(d, "server result")?;
        let has = |k: &str| map.contains_key(k);
        match map.get("resultType").and_then(Value::as_str) {
            Some("input_required") => {
                return de_util::convert(map, "InputRequiredResult").map(Self::InputRequired)
            }
            Some("task") => {
                return de_util::convert(map, "CreateTaskResult").map(Self::ExtCreateTask)
            }
            _ => {}
        }
        if has("protocolVersion") && has("serverInfo") {
            de_util::convert(map, "InitializeResult").map(Self::Initialize)
        } else if has("supportedVersions") {
            de_util::convert(map, "DiscoverResult").map(Self::Discover)
        } else if has("tools") {
            de_util::convert(map, "ListToolsResult").map(Self::ListTools)
        } else if has("prompts") {
            de_util::convert(map, "ListPromptsResult").map(Self::ListPrompts)
        } else if has("resources") {
            de_util::convert(map, "ListResourcesResult").map(Self::ListResources)
        } else if has("resourceTemplates") {
            de_util::convert(map, "ListResourceTemplatesResult").map(Self::ListResourceTemplates)
        } else if has("contents") {
            de_util::convert(map, "ReadResourceResult").map(Self::ReadResource)
        } else if has("messages") {
            de_util::convert(map, "GetPromptResult").map(Self::GetPrompt)
        } else if has("content") {
            de_util::convert(map, "CallToolResult").map(Self::CallTool)
        } else if has("completion") {
            de_util::convert(map, "CompleteResult").map(Self::Complete)
        } else if has("tasks") {
            de_util::convert(map, "ListTasksResult").map(Self::ListTasks)
        } else if has("taskId") && has("ttlMs") {
            de_util::convert(map, "DetailedTask").map(Self::DetailedTask)
        } else if has("taskId") && has("status") {
            de_util::convert(map, "Task").map(Self::Task)
        } else if has("task") {
            de_util::convert(map, "CreateTaskResult").map(Self::CreateTask)
        } else {
            de_util::convert(map, "Result").map(Self::Empty)
        }
    }
}
