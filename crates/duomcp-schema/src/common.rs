//! Shared building blocks: JSON aliases, roles, annotations, icons, implementation info,
//! base params and base results.

use serde::de::{self, DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::meta::Meta;

/// A JSON object (`JSONObject` in 2026-07-28); key order is preserved.
pub type JsonObject = serde_json::Map<String, Value>;
/// Any JSON value (`JSONValue` in 2026-07-28).
pub type JsonValue = Value;
/// A JSON array (`JSONArray` in 2026-07-28).
pub type JsonArray = Vec<Value>;
/// An opaque token used to represent a cursor for pagination.
pub type Cursor = String;

/// The sender or recipient of messages and data in a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user (client side of the conversation).
    User,
    /// The assistant (the model).
    Assistant,
}

/// Optional annotations for the client, informing how objects are used or displayed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the intended audience of this object or data is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// How important this data is for operating the server (0 = least, 1 = most).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "num::opt_f64"
    )]
    pub priority: Option<f64>,
    /// ISO 8601 timestamp of the moment the resource was last modified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// The theme an icon is designed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IconTheme {
    /// Designed for a light background.
    Light,
    /// Designed for a dark background.
    Dark,
}

/// An optionally-sized icon that can be displayed in a user interface.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// A standard URI pointing to an icon resource (HTTP(S) or `data:` URI).
    pub src: String,
    /// Optional MIME type override if the source MIME type is missing or generic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes at which the icon can be used (`"48x48"`, `"any"`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// The theme this icon is designed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<IconTheme>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl Icon {
    /// An icon with the given source URI.
    pub fn new(src: impl Into<String>) -> Self {
        Self {
            src: src.into(),
            ..Self::default()
        }
    }
}

/// Base interface for an object carrying icons (`Icons` mixin).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Icons {
    /// Optional set of sized icons that the client can display in a user interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Base interface for metadata with a name and display title (`BaseMetadata` mixin).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BaseMetadata {
    /// Programmatic name.
    pub name: String,
    /// Human-readable display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Describes the MCP implementation (name and version of a client or server).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Human-readable display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Version of the implementation.
    pub version: String,
    /// Human-readable description of what this implementation does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Optional set of sized icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// URL of the implementation's website.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl Implementation {
    /// Implementation info with a name and version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            ..Self::default()
        }
    }
}

/// The type of a result (2026-07-28 `resultType`); an unknown value is invalid.
///
/// An absent `resultType` (a legacy server) is treated as [`ResultType::Complete`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultType {
    /// The request completed and the result carries the final content.
    #[default]
    Complete,
    /// More input is needed; the result is an `InputRequiredResult`.
    InputRequired,
    /// The server created a task (ext-tasks); the result is a `tasks::ext::ExtCreateTaskResult`.
    Task,
}

impl ResultType {
    /// The wire string of this result type.
    pub fn as_str(self) -> &'static str {
        match self {
            ResultType::Complete => "complete",
            ResultType::InputRequired => "input_required",
            ResultType::Task => "task",
        }
    }
}

/// Scope of a cacheable result (2026-07-28), like HTTP `Cache-Control: public|private`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// The response has no user-specific data; shared caches may keep it.
    Public,
    /// The response is user-specific; only the requesting client may cache it.
    Private,
}

/// A result that carries no data (`EmptyResult`), also used for the base `Result` definition.
///
/// Named `EmptyResult` rather than `Result` so that glob imports do not shadow `std::result::Result`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmptyResult {
    /// Result type (2026-07-28 only; required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl EmptyResult {
    /// An empty result with `resultType: "complete"` (as 2026-07-28 requires).
    pub fn complete() -> Self {
        Self {
            result_type: Some(ResultType::Complete),
            ..Self::default()
        }
    }
}

/// Base of paginated results (`PaginatedResult`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaginatedResult {
    /// Opaque token for the position after the last returned item; absent when done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
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

/// Base of results with a caching hint (`CacheableResult`, 2026-07-28 only).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheableResult {
    /// How long (ms) the client MAY cache this response (required in 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Intended cache scope (required in 2026-07-28).
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

/// Common params of any request (`RequestParams`): only `_meta`.
///
/// In 2026-07-28 `_meta` is required and carries the protocol version and client
/// capabilities (see [`crate::RequestMeta`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Params of a paginated list request (`PaginatedRequestParams`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PaginatedRequestParams {
    /// Opaque pagination cursor; results start after this position.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Cursor>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl PaginatedRequestParams {
    /// Params asking for the page after `cursor`.
    pub fn with_cursor(cursor: impl Into<Cursor>) -> Self {
        Self {
            cursor: Some(cursor.into()),
            ..Self::default()
        }
    }
}

/// Serialisers that write integral `f64` values as JSON integers, like JavaScript does,
/// so that `{"progress": 1}` survives a round trip unchanged.
pub(crate) mod num {
    use serde::Serializer;

    /// Largest integer an `f64` represents exactly (2^53).
    const EXACT: f64 = 9_007_199_254_740_992.0;

    pub(crate) fn f64<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() && v.fract() == 0.0 && v.abs() < EXACT {
            s.serialize_i64(*v as i64)
        } else {
            s.serialize_f64(*v)
        }
    }

    pub(crate) fn opt_f64<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => f64(v, s),
            None => s.serialize_none(),
        }
    }
}

/// Helpers for hand-written `Deserialize` impls of unions that dispatch on keys.
pub(crate) mod de_util {
    use super::*;

    /// Reads a JSON object, failing with a message naming `what` otherwise.
    pub(crate) fn object<'de, D: Deserializer<'de>>(
        d: D,
        what: &str,
    ) -> Result<JsonObject, D::Error> {
        match Value::deserialize(d)? {
            Value::Object(map) => Ok(map),
            other => Err(de::Error::custom(format!(
                "invalid {what}: expected a JSON object, found {}",
                kind(&other)
            ))),
        }
    }

    /// Converts a JSON object into `T`, mapping the error into `E`.
    pub(crate) fn convert<T: DeserializeOwned, E: de::Error>(
        map: JsonObject,
        what: &str,
    ) -> Result<T, E> {
        serde_json::from_value(Value::Object(map))
            .map_err(|e| E::custom(format!("invalid {what}: {e}")))
    }

    /// Converts any JSON value into `T`, mapping the error into `E`.
    pub(crate) fn convert_value<T: DeserializeOwned, E: de::Error>(
        value: Value,
        what: &str,
    ) -> Result<T, E> {
        serde_json::from_value(value).map_err(|e| E::custom(format!("invalid {what}: {e}")))
    }

    /// A short name of the JSON type of `v`.
    pub(crate) fn kind(v: &Value) -> &'static str {
        match v {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
}

/// Access to the `resultType` field that every 2026-07-28 result carries.
pub trait HasResultType {
    /// The `resultType`, if set.
    fn result_type(&self) -> Option<ResultType>;
    /// Sets (or clears) the `resultType`.
    fn set_result_type(&mut self, result_type: Option<ResultType>);
}

macro_rules! impl_has_result_type {
    ($($ty:ty),* $(,)?) => {$(
        impl $crate::common::HasResultType for $ty {
            fn result_type(&self) -> Option<$crate::common::ResultType> {
                self.result_type
            }
            fn set_result_type(&mut self, result_type: Option<$crate::common::ResultType>) {
                self.result_type = result_type;
            }
        }
    )*};
}
pub(crate) use impl_has_result_type;

impl_has_result_type!(EmptyResult, PaginatedResult, CacheableResult);
crate::meta::impl_has_meta!(
    EmptyResult,
    PaginatedResult,
    CacheableResult,
    RequestParams,
    PaginatedRequestParams
);

/// Defines a unit struct that (de)serialises as one fixed string (a schema `const`).
macro_rules! const_str {
    ($(#[$doc:meta])* $name:ident = $value:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name;

        impl $name {
            /// The fixed wire value.
            pub const VALUE: &'static str = $value;
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str($value)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                if s == $value {
                    Ok($name)
                } else {
                    Err(serde::de::Error::custom(format!(
                        "expected {:?}, found {s:?}",
                        $value
                    )))
                }
            }
        }
    };
}
pub(crate) use const_str;
