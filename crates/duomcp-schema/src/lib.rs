//! Wire types of the Model Context Protocol, for revisions 2025-11-25 ("legacy",
//! stateful) and 2026-07-28 ("modern", stateless), plus the ext-tasks extension.
//!
//! One model covers both revisions: where a definition differs, the Rust type holds
//! the union of the fields, and each field's documentation says which revision has it.
//! Unknown keys are kept in `extra` maps, so a JSON value survives a round trip through
//! these types. The types are plain serde data: no I/O.
//!
//! Type names follow the schema definitions (`CallToolResult`, `ListToolsResult`, ...).
//! The ext-tasks definitions whose names clash with the 2025-11-25 core tasks live in
//! [`tasks::ext`]. Method names and their params/result types are in [`methods`]; the MCP Apps
//! extension's types in [`apps`].
//!
//! ```
//! use duomcp_schema::{CallToolResult, ResultType};
//!
//! let mut result = CallToolResult::text("42");
//! result.result_type = Some(ResultType::Complete);
//! let json = serde_json::to_value(&result).unwrap();
//! assert_eq!(
//!     json,
//!     serde_json::json!({
//!         "content": [{ "type": "text", "text": "42" }],
//!         "resultType": "complete"
//!     })
//! );
//! let back: CallToolResult = serde_json::from_value(json).unwrap();
//! assert_eq!(back, result);
//! ```
// docs.rs (`--cfg docsrs`, nightly): each gated item labelled with the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

pub mod apps;
pub mod capabilities;
pub mod common;
pub mod completion;
pub mod content;
pub mod elicitation;
pub mod jsonrpc;
pub mod lifecycle;
pub mod logging;
pub mod messages;
pub mod meta;
pub mod methods;
pub mod mrtr;
pub mod notifications;
pub mod prompts;
pub mod resources;
pub mod roots;
pub mod sampling;
pub mod strict;
pub mod subscriptions;
pub mod tasks;
pub mod tools;
pub mod version;

pub use capabilities::*;
pub use common::*;
pub use completion::*;
pub use content::*;
pub use elicitation::*;
pub use jsonrpc::*;
pub use lifecycle::*;
pub use logging::*;
pub use messages::*;
pub use meta::{
    HasMeta, Meta, MetaObject, NotificationMeta, NotificationMetaObject, RequestMeta,
    RequestMetaObject, ResultMeta, ResultMetaObject, SubscriptionsListenResultMetaObject,
};
pub use mrtr::*;
pub use notifications::*;
pub use prompts::*;
pub use resources::*;
pub use roots::*;
pub use sampling::*;
pub use subscriptions::*;
pub use tasks::{
    CancelTaskRequest, CancelTaskRequestParams, CancelTaskResult, CreateTaskResult,
    GetTaskPayloadRequest, GetTaskPayloadRequestParams, GetTaskPayloadResult, GetTaskRequest,
    GetTaskRequestParams, GetTaskResult, ListTasksRequest, ListTasksResult, RelatedTaskMetadata,
    Task, TaskAugmentedRequestParams, TaskMetadata, TaskStatus, TaskStatusNotification,
    TaskStatusNotificationParams,
};
pub use tools::*;

/// Re-export of the ordered map used for typed maps (`InputRequests`, form properties).
pub use indexmap::{self, IndexMap};
