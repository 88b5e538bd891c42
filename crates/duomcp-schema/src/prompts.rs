//! Prompts: listing and `prompts/get`.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::common::{
    CacheScope, Cursor, Icon, JsonObject, PaginatedRequestParams, ResultType, Role,
};
use crate::content::ContentBlock;
use crate::jsonrpc::{JsonRpcNotification, JsonRpcRequest, JsonRpcResultResponse};
use crate::meta::Meta;
use crate::mrtr::{InputResponses, MrtrResult};
use crate::notifications::NotificationParams;

/// A prompt or prompt template that the server offers (`Prompt`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Prompt {
    /// Programmatic name.
    pub name: String,
    /// Human-readable display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// An optional description of what this prompt provides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Arguments to use for templating the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<PromptArgument>>,
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

impl Prompt {
    /// A prompt named `name` without arguments.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Appends an argument.
    pub fn with_argument(mut self, argument: PromptArgument) -> Self {
        self.arguments.get_or_insert_with(Vec::new).push(argument);
        self
    }
}

/// Describes an argument that a prompt can accept (`PromptArgument`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PromptArgument {
    /// Programmatic name.
    pub name: String,
    /// Human-readable display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A human-readable description of the argument.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether this argument must be provided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl PromptArgument {
    /// An argument named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Marks the argument as required.
    pub fn required(mut self) -> Self {
        self.required = Some(true);
        self
    }
}

/// A message returned as part of a prompt (`PromptMessage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// The sender of the message.
    pub role: Role,
    /// The content of the message.
    pub content: ContentBlock,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl PromptMessage {
    /// A message from `role` with `content`.
    pub fn new(role: Role, content: ContentBlock) -> Self {
        Self {
            role,
            content,
            extra: JsonObject::new(),
        }
    }

    /// A user message with a single text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::new(Role::User, ContentBlock::text(text))
    }

    /// An assistant message with a single text block.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, ContentBlock::text(text))
    }
}

/// Params of a `prompts/get` request (`GetPromptRequestParams`).
///
/// `inputResponses` and `requestState` (MRTR retries) exist only in 2026-07-28.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptRequestParams {
    /// The name of the prompt or prompt template.
    pub name: String,
    /// Arguments to use for templating the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<IndexMap<String, String>>,
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

impl GetPromptRequestParams {
    /// Params getting prompt `name` without arguments.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }
}

/// The result of a `prompts/get` request (`GetPromptResult`).
///
/// `resultType` exists only in 2026-07-28 (required there).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptResult {
    /// An optional description for the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The prompt's messages.
    pub messages: Vec<PromptMessage>,
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

impl GetPromptResult {
    /// A result with the given messages.
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }
}

/// The result of a `prompts/list` request (`ListPromptsResult`).
///
/// `ttlMs`, `cacheScope` and `resultType` exist only in 2026-07-28 (required there).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPromptsResult {
    /// The prompts.
    pub prompts: Vec<Prompt>,
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

impl ListPromptsResult {
    /// A single (last) page of prompts.
    pub fn new(prompts: Vec<Prompt>) -> Self {
        Self {
            prompts,
            ..Self::default()
        }
    }
}

/// `ListPromptsRequest`: a `prompts/list` request envelope.
pub type ListPromptsRequest = JsonRpcRequest<PaginatedRequestParams>;
/// `GetPromptRequest`: a `prompts/get` request envelope.
pub type GetPromptRequest = JsonRpcRequest<GetPromptRequestParams>;
/// `PromptListChangedNotification`: `notifications/prompts/list_changed`.
pub type PromptListChangedNotification = JsonRpcNotification<NotificationParams>;
/// `GetPromptResultResponse` (2026-07-28): a `GetPromptResult` or an `InputRequiredResult`.
pub type GetPromptResultResponse = JsonRpcResultResponse<MrtrResult<GetPromptResult>>;
/// `ListPromptsResultResponse` (2026-07-28).
pub type ListPromptsResultResponse = JsonRpcResultResponse<ListPromptsResult>;

crate::meta::impl_has_meta!(
    Prompt,
    GetPromptRequestParams,
    GetPromptResult,
    ListPromptsResult
);
crate::common::impl_has_result_type!(GetPromptResult, ListPromptsResult);
