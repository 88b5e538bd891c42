//! Elicitation (`elicitation/create`): form and URL modes, and the restricted JSON
//! Schema subset used by forms.
//!
//! Server→client request in 2025-11-25; an MRTR input request in 2026-07-28.

use indexmap::IndexMap;
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::{const_str, de_util, JsonObject};
use crate::jsonrpc::{JsonRpcNotification, JsonRpcRequest};
use crate::meta::Meta;
use crate::tasks::TaskMetadata;

const_str!(
    /// The `mode: "form"` marker of form-mode elicitation.
    FormModeTag = "form"
);
const_str!(
    /// The `mode: "url"` marker of URL-mode elicitation.
    UrlModeTag = "url"
);
const_str!(
    /// The `type: "object"` marker of a requested schema.
    ObjectTypeTag = "object"
);
const_str!(
    /// The `type: "string"` marker of string-valued schemas.
    StringTypeTag = "string"
);
const_str!(
    /// The `type: "boolean"` marker of [`BooleanSchema`].
    BooleanTypeTag = "boolean"
);
const_str!(
    /// The `type: "array"` marker of multi-select enum schemas.
    ArrayTypeTag = "array"
);

/// Params of an `elicitation/create` request (`ElicitRequestParams`): form or URL mode.
///
/// Discriminated by `mode`: absent or `"form"` → form, `"url"` → URL.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ElicitRequestParams {
    /// Form mode: collect structured data in the client.
    Form(ElicitRequestFormParams),
    /// URL mode: send the user to a URL out of band.
    Url(ElicitRequestUrlParams),
}

impl ElicitRequestParams {
    /// The message presented to the user.
    pub fn message(&self) -> &str {
        match self {
            Self::Form(f) => &f.message,
            Self::Url(u) => &u.message,
        }
    }
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = de_util::object(d, "elicitation params")?;
        match map.get("mode") {
            None => de_util::convert(map, "ElicitRequestFormParams").map(Self::Form),
            Some(Value::String(m)) if m == FormModeTag::VALUE => {
                de_util::convert(map, "ElicitRequestFormParams").map(Self::Form)
            }
            Some(Value::String(m)) if m == UrlModeTag::VALUE => {
                de_util::convert(map, "ElicitRequestURLParams").map(Self::Url)
            }
            Some(other) => Err(de::Error::custom(format!(
                "unknown elicitation mode {other}, expected \"form\" or \"url\""
            ))),
        }
    }
}

impl From<ElicitRequestFormParams> for ElicitRequestParams {
    fn from(p: ElicitRequestFormParams) -> Self {
        Self::Form(p)
    }
}
impl From<ElicitRequestUrlParams> for ElicitRequestParams {
    fn from(p: ElicitRequestUrlParams) -> Self {
        Self::Url(p)
    }
}

/// Params of a form-mode elicitation (`ElicitRequestFormParams`).
///
/// `task` and `_meta` exist only in 2025-11-25.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestFormParams {
    /// `"form"`; may be omitted (form is the default mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<FormModeTag>,
    /// The message to present to the user describing what is requested.
    pub message: String,
    /// A restricted JSON Schema: a flat object of primitive properties.
    pub requested_schema: ElicitRequestedSchema,
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

impl ElicitRequestFormParams {
    /// A form request with `message` and the schema of the fields to fill in.
    pub fn new(message: impl Into<String>, requested_schema: ElicitRequestedSchema) -> Self {
        Self {
            message: message.into(),
            requested_schema,
            ..Self::default()
        }
    }
}

/// Params of a URL-mode elicitation (`ElicitRequestURLParams`).
///
/// `elicitationId` is required in 2025-11-25 and absent in 2026-07-28; `task` and `_meta`
/// exist only in 2025-11-25.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestUrlParams {
    /// Always `"url"`.
    pub mode: UrlModeTag,
    /// The message explaining why the interaction is needed.
    pub message: String,
    /// The URL the user should navigate to.
    pub url: String,
    /// Unique id of the elicitation (2025-11-25 only, required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
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

impl ElicitRequestUrlParams {
    /// A URL request with `message` pointing at `url`.
    pub fn new(message: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            url: url.into(),
            ..Self::default()
        }
    }
}

/// The `requestedSchema` of a form elicitation: a flat object of primitive properties.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ElicitRequestedSchema {
    /// Optional `$schema` dialect URI.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Always `"object"`.
    pub r#type: ObjectTypeTag,
    /// The form fields, in display order.
    pub properties: IndexMap<String, PrimitiveSchemaDefinition>,
    /// Names of the required fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl ElicitRequestedSchema {
    /// Appends a field; `required` adds it to the required list.
    pub fn with_property(
        mut self,
        name: impl Into<String>,
        schema: impl Into<PrimitiveSchemaDefinition>,
        required: bool,
    ) -> Self {
        let name = name.into();
        if required {
            self.required
                .get_or_insert_with(Vec::new)
                .push(name.clone());
        }
        self.properties.insert(name, schema.into());
        self
    }
}

/// The user's answer to an elicitation (`ElicitResult`).
///
/// `_meta` exists only in 2025-11-25.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted form data (only for `accept` in form mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<JsonObject>,
    /// Reserved metadata (2025-11-25 only).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl ElicitResult {
    /// `accept` with optional form data.
    pub fn accept(content: Option<JsonObject>) -> Self {
        Self::with_action(ElicitAction::Accept, content)
    }

    /// `decline`: the user explicitly declined.
    pub fn decline() -> Self {
        Self::with_action(ElicitAction::Decline, None)
    }

    /// `cancel`: the user dismissed without choosing.
    pub fn cancel() -> Self {
        Self::with_action(ElicitAction::Cancel, None)
    }

    fn with_action(action: ElicitAction, content: Option<JsonObject>) -> Self {
        Self {
            action,
            content,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// The user action in response to an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// The user submitted the form or confirmed the action.
    Accept,
    /// The user explicitly declined.
    Decline,
    /// The user dismissed without an explicit choice.
    Cancel,
}

/// Params of `notifications/elicitation/complete` (2025-11-25 only).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCompleteNotificationParams {
    /// The id of the URL elicitation that completed.
    pub elicitation_id: String,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// `ElicitRequest` as a 2025-11-25 JSON-RPC request envelope (in 2026-07-28 it is an
/// [`crate::InputRequest`]).
pub type ElicitRequest = JsonRpcRequest<ElicitRequestParams>;
/// `ElicitationCompleteNotification` (2025-11-25): `notifications/elicitation/complete`.
pub type ElicitationCompleteNotification =
    JsonRpcNotification<ElicitationCompleteNotificationParams>;

crate::meta::impl_has_meta!(
    ElicitRequestFormParams,
    ElicitRequestUrlParams,
    ElicitResult,
    ElicitationCompleteNotificationParams
);

mod schema;
pub use schema::*;
