//! Tools: definitions, `tools/list` and `tools/call`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::{CacheScope, Cursor, Icon, JsonObject, PaginatedRequestParams, ResultType};
use crate::content::ContentBlock;
use crate::jsonrpc::{JsonRpcNotification, JsonRpcRequest, JsonRpcResultResponse};
use crate::meta::Meta;
use crate::mrtr::{InputResponses, MrtrResult};
use crate::notifications::NotificationParams;
use crate::tasks::TaskMetadata;

/// Definition for a tool the client can call (`Tool`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Programmatic name.
    pub name: String,
    /// Human-readable display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A human-readable description of the tool (a hint to the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the tool's arguments; `type: "object"` is required at the root.
    pub input_schema: JsonObject,
    /// Optional JSON Schema of `structuredContent` in the tool's results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<JsonObject>,
    /// Optional additional tool information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Execution-related properties (2025-11-25 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
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

impl Tool {
    /// A tool named `name` taking arguments described by `input_schema`.
    ///
    /// `"type": "object"` is inserted into the schema if it has no `type`.
    pub fn new(name: impl Into<String>, mut input_schema: JsonObject) -> Self {
        if !input_schema.contains_key("type") {
            input_schema.insert("type".into(), Value::String("object".into()));
        }
        Self {
            name: name.into(),
            input_schema,
            ..Self::default()
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// Hints describing a tool's behaviour; clients must not rely on them for security
/// decisions when the server is untrusted (`ToolAnnotations`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A human-readable title for the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// If true, the tool does not modify its environment (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// If true, the tool may perform destructive updates (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// If true, repeated calls with the same arguments have no additional effect (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// If true, the tool may interact with an "open world" of external entities (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Execution-related properties of a tool (`ToolExecution`, 2025-11-25 only).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// Whether the tool supports task-augmented execution (default `forbidden`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Whether a tool supports task-augmented execution (2025-11-25 only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// The tool must not be invoked as a task (the default).
    #[default]
    Forbidden,
    /// The tool may be invoked as a task or normally.
    Optional,
    /// The tool must be invoked as a task.
    Required,
}

/// Params of a `tools/call` request (`CallToolRequestParams`).
///
/// `task` exists only in 2025-11-25; `inputResponses` and `requestState` (MRTR retries)
/// only in 2026-07-28, where `_meta` is required.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolRequestParams {
    /// The name of the tool.
    pub name: String,
    /// Arguments to use for the tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// Requests task-augmented execution (2025-11-25 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
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

impl CallToolRequestParams {
    /// Params calling tool `name` with `arguments`.
    pub fn new(name: impl Into<String>, arguments: Option<JsonObject>) -> Self {
        Self {
            name: name.into(),
            arguments,
            ..Self::default()
        }
    }
}

/// The result of a `tools/call` request (`CallToolResult`).
///
/// `resultType` exists only in 2026-07-28 (required there). Tool errors are reported
/// here with `isError: true`, not as JSON-RPC errors.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Unstructured result of the tool call.
    pub content: Vec<ContentBlock>,
    /// Structured result (any JSON value in 2026-07-28; an object in 2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool call ended in an error (absent = false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
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

impl CallToolResult {
    /// A successful result with the given content.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        Self {
            content,
            ..Self::default()
        }
    }

    /// A successful result with a single text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![ContentBlock::text(text)])
    }

    /// A tool error (`isError: true`) with a single text block.
    pub fn error_text(text: impl Into<String>) -> Self {
        Self {
            is_error: Some(true),
            ..Self::text(text)
        }
    }

    /// A successful result with structured content and its JSON text as the content.
    pub fn structured(value: Value) -> Self {
        Self {
            content: vec![ContentBlock::text(value.to_string())],
            structured_content: Some(value),
            ..Self::default()
        }
    }

    /// Whether this result reports a tool error.
    pub fn is_error(&self) -> bool {
        self.is_error.unwrap_or(false)
    }

    /// The structured content read as `T` (the type the tool's output schema was made from).
    ///
    /// ```
    /// use duomcp_schema::CallToolResult;
    /// use duomcp_schema::tools::StructuredError;
    ///
    /// #[derive(serde::Deserialize, Debug, PartialEq)]
    /// struct Sum { total: i64 }
    ///
    /// let result = CallToolResult::structured(serde_json::json!({ "total": 3 }));
    /// assert_eq!(result.structured_as::<Sum>().unwrap(), Sum { total: 3 });
    ///
    /// let e = CallToolResult::text("3").structured_as::<Sum>().unwrap_err();
    /// assert!(matches!(e, StructuredError::Missing));
    /// let e = CallToolResult::error_text("no such file").structured_as::<Sum>().unwrap_err();
    /// assert_eq!(e.to_string(), "the tool reported an error: no such file");
    /// let e = CallToolResult::structured(serde_json::json!({ "total": "3" }))
    ///     .structured_as::<Sum>()
    ///     .unwrap_err();
    /// assert!(e.to_string().starts_with("the structured content does not fit the type"), "{e}");
    /// ```
    pub fn structured_as<T: serde::de::DeserializeOwned>(&self) -> Result<T, StructuredError> {
        if self.is_error() {
            let text = self
                .content
                .iter()
                .filter_map(ContentBlock::as_text)
                .collect::<Vec<_>>()
                .join("\n");
            return Err(StructuredError::ToolError(text));
        }
        let value = self
            .structured_content
            .as_ref()
            .ok_or(StructuredError::Missing)?;
        T::deserialize(value).map_err(|e| StructuredError::Mismatch {
            type_name: std::any::type_name::<T>(),
            message: e.to_string(),
        })
    }
}

/// Why [`CallToolResult::structured_as`] could not give a `T`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StructuredError {
    /// The result has `isError: true`; its text content.
    ToolError(String),
    /// The result has no `structuredContent` (the tool declares no output schema, or the
    /// server sent only content blocks).
    Missing,
    /// The structured content does not deserialize into the type.
    Mismatch {
        /// The Rust type asked for.
        type_name: &'static str,
        /// What serde said.
        message: String,
    },
}

impl std::fmt::Display for StructuredError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StructuredError::ToolError(text) => write!(f, "the tool reported an error: {text}"),
            StructuredError::Missing => f.write_str("the result has no structured content"),
            StructuredError::Mismatch { type_name, message } => write!(
                f,
                "the structured content does not fit the type `{type_name}`: {message}"
            ),
        }
    }
}

impl std::error::Error for StructuredError {}

/// The result of a `tools/list` request (`ListToolsResult`).
///
/// `ttlMs`, `cacheScope` and `resultType` exist only in 2026-07-28 (required there).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// The tools.
    pub tools: Vec<Tool>,
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

impl ListToolsResult {
    /// A single (last) page of tools.
    pub fn new(tools: Vec<Tool>) -> Self {
        Self {
            tools,
            ..Self::default()
        }
    }
}

/// `CallToolRequest`: a `tools/call` request envelope.
pub type CallToolRequest = JsonRpcRequest<CallToolRequestParams>;
/// `ListToolsRequest`: a `tools/list` request envelope.
pub type ListToolsRequest = JsonRpcRequest<PaginatedRequestParams>;
/// `ToolListChangedNotification`: `notifications/tools/list_changed`.
pub type ToolListChangedNotification = JsonRpcNotification<NotificationParams>;
/// `CallToolResultResponse` (2026-07-28): a response carrying a `CallToolResult` or an
/// `InputRequiredResult`.
pub type CallToolResultResponse = JsonRpcResultResponse<MrtrResult<CallToolResult>>;
/// `ListToolsResultResponse` (2026-07-28).
pub type ListToolsResultResponse = JsonRpcResultResponse<ListToolsResult>;

crate::meta::impl_has_meta!(Tool, CallToolRequestParams, CallToolResult, ListToolsResult);
crate::common::impl_has_result_type!(CallToolResult, ListToolsResult);
