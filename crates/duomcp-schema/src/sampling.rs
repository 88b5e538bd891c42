//! Sampling (`sampling/createMessage`): messages, tool use, model preferences.
//!
//! Server→client request in 2025-11-25; an MRTR input request in 2026-07-28
//! (deprecated there).

use serde::de::Deserializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::{de_util, JsonObject, Role};
use crate::content::{AudioContent, ContentBlock, ImageContent, TextContent};
use crate::jsonrpc::JsonRpcRequest;
use crate::meta::Meta;
use crate::tasks::TaskMetadata;
use crate::tools::Tool;

/// Content of a sampling message (`SamplingMessageContentBlock`), tagged on `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum SamplingMessageContentBlock {
    /// `type: "text"`.
    #[serde(rename = "text")]
    Text(TextContent),
    /// `type: "image"`.
    #[serde(rename = "image")]
    Image(ImageContent),
    /// `type: "audio"`.
    #[serde(rename = "audio")]
    Audio(AudioContent),
    /// `type: "tool_use"`.
    #[serde(rename = "tool_use")]
    ToolUse(ToolUseContent),
    /// `type: "tool_result"`.
    #[serde(rename = "tool_result")]
    ToolResult(ToolResultContent),
}

impl SamplingMessageContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextContent::new(text))
    }

    /// The text, if this is a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

/// The `content` of a sampling message or result: one block or an array of blocks.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // plain data mirroring the schema
pub enum SamplingContent {
    /// A single content block.
    Single(SamplingMessageContentBlock),
    /// Several content blocks.
    Multiple(Vec<SamplingMessageContentBlock>),
}

impl SamplingContent {
    /// The blocks as a slice (one element for [`SamplingContent::Single`]).
    pub fn blocks(&self) -> &[SamplingMessageContentBlock] {
        match self {
            Self::Single(b) => std::slice::from_ref(b),
            Self::Multiple(v) => v,
        }
    }
}

impl From<SamplingMessageContentBlock> for SamplingContent {
    fn from(b: SamplingMessageContentBlock) -> Self {
        Self::Single(b)
    }
}

impl<'de> Deserialize<'de> for SamplingContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            v @ Value::Array(_) => {
                de_util::convert_value(v, "sampling content").map(Self::Multiple)
            }
            v => de_util::convert_value(v, "sampling content block").map(Self::Single),
        }
    }
}

/// A request by the model to call a tool (`ToolUseContent`, `type: "tool_use"`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolUseContent {
    /// Unique identifier of this tool use, matched by `ToolResultContent.toolUseId`.
    pub id: String,
    /// The name of the tool to call.
    pub name: String,
    /// The arguments to pass to the tool.
    pub input: JsonObject,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// The result of a tool use, provided back to the model (`ToolResultContent`, `type: "tool_result"`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultContent {
    /// The id of the tool use this result corresponds to.
    pub tool_use_id: String,
    /// Unstructured result content.
    pub content: Vec<ContentBlock>,
    /// Structured result (any JSON value in 2026-07-28; an object in 2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool use resulted in an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Describes a message issued to or received from an LLM API (`SamplingMessage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// The sender of the message.
    pub role: Role,
    /// One content block or several.
    pub content: SamplingContent,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl SamplingMessage {
    /// A message from `role` with `content`.
    pub fn new(role: Role, content: impl Into<SamplingContent>) -> Self {
        Self {
            role,
            content: content.into(),
            meta: None,
            extra: JsonObject::new(),
        }
    }

    /// A user message with a single text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::new(Role::User, SamplingMessageContentBlock::text(text))
    }

    /// An assistant message with a single text block.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, SamplingMessageContentBlock::text(text))
    }
}

/// Controls tool selection behaviour for sampling requests (`ToolChoice`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolChoice {
    /// How the model should use tools (default `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ToolChoiceMode>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// How the model should use tools (`ToolChoice.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoiceMode {
    /// The model decides whether to use tools.
    Auto,
    /// The model must use at least one tool.
    Required,
    /// The model must not use tools.
    None,
}

/// The server's preferences for model selection (`ModelPreferences`); advisory only.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPreferences {
    /// Optional hints for model selection, evaluated in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    /// How much to prioritise cost (0–1).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::common::num::opt_f64"
    )]
    pub cost_priority: Option<f64>,
    /// How much to prioritise sampling speed (0–1).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::common::num::opt_f64"
    )]
    pub speed_priority: Option<f64>,
    /// How much to prioritise intelligence and capabilities (0–1).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::common::num::opt_f64"
    )]
    pub intelligence_priority: Option<f64>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// A hint to use for model selection (`ModelHint`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ModelHint {
    /// A hint for a model name (substring match, e.g. `"claude-3-5-sonnet"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Which MCP server context to include in the prompt (`includeContext`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum IncludeContext {
    /// No server context.
    None,
    /// Context from the requesting server (deprecated in 2026-07-28).
    ThisServer,
    /// Context from all connected servers (deprecated in 2026-07-28).
    AllServers,
}

/// Params of a `sampling/createMessage` request (`CreateMessageRequestParams`).
///
/// `task` and `_meta` exist only in 2025-11-25.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequestParams {
    /// The conversation to sample from.
    pub messages: Vec<SamplingMessage>,
    /// The server's preferences for which model to select.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// An optional system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Which server context to include.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<IncludeContext>,
    /// Sampling temperature.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::common::num::opt_f64"
    )]
    pub temperature: Option<f64>,
    /// The maximum number of tokens to sample.
    pub max_tokens: u64,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata to pass through to the LLM provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    /// Tools the model may use (requires the client's `sampling.tools` capability).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// Controls how the model uses tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Requests task-augmented execution (2025-11-25 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Request metadata (2025-11-25 only).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl CreateMessageRequestParams {
    /// Params sampling from `messages` with at most `max_tokens` tokens.
    pub fn new(messages: Vec<SamplingMessage>, max_tokens: u64) -> Self {
        Self {
            messages,
            max_tokens,
            ..Self::default()
        }
    }
}

/// The client's response to a `sampling/createMessage` request (`CreateMessageResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// The sender of the sampled message.
    pub role: Role,
    /// The sampled content.
    pub content: SamplingContent,
    /// The name of the model that generated the message.
    pub model: String,
    /// Why sampling stopped (`endTurn`, `stopSequence`, `maxTokens`, `toolUse`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl CreateMessageResult {
    /// An assistant text answer produced by `model`.
    pub fn assistant_text(model: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: SamplingMessageContentBlock::text(text).into(),
            model: model.into(),
            stop_reason: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// `CreateMessageRequest` as a 2025-11-25 JSON-RPC request envelope (in 2026-07-28 it is
/// an [`crate::InputRequest`]).
pub type CreateMessageRequest = JsonRpcRequest<CreateMessageRequestParams>;

crate::meta::impl_has_meta!(
    ToolUseContent,
    ToolResultContent,
    SamplingMessage,
    CreateMessageRequestParams,
    CreateMessageResult
);
