//! Argument autocompletion (`completion/complete`).

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::common::{JsonObject, ResultType};
use crate::jsonrpc::{JsonRpcRequest, JsonRpcResultResponse};
use crate::meta::Meta;

/// Params of a `completion/complete` request (`CompleteRequestParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompleteRequestParams {
    /// What is being completed: a prompt or a resource template.
    pub r#ref: CompleteReference,
    /// The argument being completed.
    pub argument: CompleteArgument,
    /// Additional context for completions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompleteContext>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl CompleteRequestParams {
    /// Params completing argument `name` (current `value`) of `reference`.
    pub fn new(
        reference: CompleteReference,
        name: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        Self {
            r#ref: reference,
            argument: CompleteArgument {
                name: name.into(),
                value: value.into(),
                extra: JsonObject::new(),
            },
            context: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// The `ref` of a completion request: a prompt or a resource template, tagged on `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum CompleteReference {
    /// `type: "ref/prompt"`.
    #[serde(rename = "ref/prompt")]
    Prompt(PromptReference),
    /// `type: "ref/resource"`.
    #[serde(rename = "ref/resource")]
    ResourceTemplate(ResourceTemplateReference),
}

/// Identifies a prompt (`PromptReference`, `type: "ref/prompt"`, written by [`CompleteReference`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PromptReference {
    /// Programmatic name of the prompt.
    pub name: String,
    /// Human-readable display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// A reference to a resource or resource template (`ResourceTemplateReference`,
/// `type: "ref/resource"`, written by [`CompleteReference`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ResourceTemplateReference {
    /// The URI or URI template of the resource.
    pub uri: String,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// The argument being completed (`CompleteRequestParams.argument`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CompleteArgument {
    /// The name of the argument.
    pub name: String,
    /// The value of the argument to use for completion matching.
    pub value: String,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Additional context for completions (`CompleteRequestParams.context`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CompleteContext {
    /// Previously-resolved variables in a URI template or prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<IndexMap<String, String>>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// The result of a `completion/complete` request (`CompleteResult`).
///
/// `resultType` exists only in 2026-07-28 (required there).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteResult {
    /// The completion values.
    pub completion: Completion,
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

impl CompleteResult {
    /// A result offering `values` (at most 100 on the wire).
    pub fn new(values: Vec<String>) -> Self {
        Self {
            completion: Completion {
                values,
                ..Completion::default()
            },
            ..Self::default()
        }
    }
}

/// The completion values of a [`CompleteResult`] (`CompleteResult.completion`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// Completion values; must not exceed 100 items.
    pub values: Vec<String>,
    /// The total number of options available, possibly more than returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more options beyond those returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// `CompleteRequest`: a `completion/complete` request envelope.
pub type CompleteRequest = JsonRpcRequest<CompleteRequestParams>;
/// `CompleteResultResponse` (2026-07-28).
pub type CompleteResultResponse = JsonRpcResultResponse<CompleteResult>;

crate::meta::impl_has_meta!(CompleteRequestParams, CompleteResult);
crate::common::impl_has_result_type!(CompleteResult);
