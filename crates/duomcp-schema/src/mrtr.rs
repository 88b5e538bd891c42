//! Multi round-trip requests (MRTR, 2026-07-28): input requests embedded in results and
//! the responses a client sends back on retry.

use indexmap::IndexMap;
use serde::de::{self, DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::common::{de_util, JsonObject, RequestParams, ResultType};
use crate::elicitation::{ElicitRequestParams, ElicitResult};
use crate::meta::Meta;
use crate::methods::{CreateMessage, Elicit, ListRoots, RequestMethod};
use crate::roots::ListRootsResult;
use crate::sampling::{CreateMessageRequestParams, CreateMessageResult};
use crate::tasks::ext::ExtCreateTaskResult;

/// A request from the server that the client must fulfil (`InputRequest`): `{method, params}`.
///
/// Tagged on `method`; other keys beside `method` and `params` are not kept.
#[derive(Debug, Clone, PartialEq)]
pub enum InputRequest {
    /// `elicitation/create`.
    Elicit(ElicitRequestParams),
    /// `sampling/createMessage`.
    CreateMessage(CreateMessageRequestParams),
    /// `roots/list` (params are optional).
    ListRoots(Option<RequestParams>),
}

impl InputRequest {
    /// An elicitation request.
    pub fn elicit(params: impl Into<ElicitRequestParams>) -> Self {
        Self::Elicit(params.into())
    }

    /// A sampling request.
    pub fn sample(params: CreateMessageRequestParams) -> Self {
        Self::CreateMessage(params)
    }

    /// A roots listing request (without params).
    pub fn list_roots() -> Self {
        Self::ListRoots(None)
    }

    /// The method of this request.
    pub fn method(&self) -> &'static str {
        match self {
            Self::Elicit(_) => Elicit::NAME,
            Self::CreateMessage(_) => CreateMessage::NAME,
            Self::ListRoots(_) => ListRoots::NAME,
        }
    }
}

#[derive(Serialize)]
struct InputRequestWire<'a, P: Serialize> {
    method: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a P>,
}

impl Serialize for InputRequest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let method = self.method();
        match self {
            Self::Elicit(p) => InputRequestWire {
                method,
                params: Some(p),
            }
            .serialize(s),
            Self::CreateMessage(p) => InputRequestWire {
                method,
                params: Some(p),
            }
            .serialize(s),
            Self::ListRoots(p) => InputRequestWire {
                method,
                params: p.as_ref(),
            }
            .serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut map = de_util::object(d, "input request")?;
        let method = match map.remove("method") {
            Some(Value::String(m)) => m,
            Some(other) => {
                return Err(de::Error::custom(format!(
                    "invalid input request: `method` must be a string, found {}",
                    de_util::kind(&other)
                )))
            }
            None => return Err(de::Error::custom("invalid input request: missing `method`")),
        };
        let params = map.remove("params");
        match method.as_str() {
            Elicit::NAME => match params {
                Some(p) => de_util::convert_value(p, "elicitation params").map(Self::Elicit),
                None => Err(de::Error::custom(
                    "elicitation/create input request without params",
                )),
            },
            CreateMessage::NAME => match params {
                Some(p) => de_util::convert_value(p, "sampling params").map(Self::CreateMessage),
                None => Err(de::Error::custom(
                    "sampling/createMessage input request without params",
                )),
            },
            ListRoots::NAME => match params {
                Some(p) => {
                    de_util::convert_value(p, "roots/list params").map(|p| Self::ListRoots(Some(p)))
                }
                None => Ok(Self::ListRoots(None)),
            },
            other => Err(de::Error::custom(format!(
                "unsupported input request method {other:?}"
            ))),
        }
    }
}

/// Input requests keyed by server-chosen ids (`InputRequests`).
pub type InputRequests = IndexMap<String, InputRequest>;
/// Responses keyed by the ids of the input requests they answer (`InputResponses`).
pub type InputResponses = IndexMap<String, InputResponse>;

/// The client's answer to one [`InputRequest`] (`InputResponse`); carries no `resultType`.
///
/// Discriminated by required keys: `action` → elicitation, `role` + `content` + `model` →
/// sampling, `roots` → roots.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // plain data mirroring the schema
pub enum InputResponse {
    /// Answer to `elicitation/create`.
    Elicit(ElicitResult),
    /// Answer to `sampling/createMessage`.
    CreateMessage(CreateMessageResult),
    /// Answer to `roots/list`.
    ListRoots(ListRootsResult),
}

impl<'de> Deserialize<'de> for InputResponse {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = de_util::object(d, "input response")?;
        let has = |k: &str| map.contains_key(k);
        if has("action") {
            de_util::convert(map, "ElicitResult").map(Self::Elicit)
        } else if has("role") && has("content") && has("model") {
            de_util::convert(map, "CreateMessageResult").map(Self::CreateMessage)
        } else if has("roots") {
            de_util::convert(map, "ListRootsResult").map(Self::ListRoots)
        } else {
            Err(de::Error::custom(
                "invalid input response: expected an ElicitResult (`action`), a \
                 CreateMessageResult (`role`, `content`, `model`) or a ListRootsResult (`roots`)",
            ))
        }
    }
}

impl From<ElicitResult> for InputResponse {
    fn from(r: ElicitResult) -> Self {
        Self::Elicit(r)
    }
}
impl From<CreateMessageResult> for InputResponse {
    fn from(r: CreateMessageResult) -> Self {
        Self::CreateMessage(r)
    }
}
impl From<ListRootsResult> for InputResponse {
    fn from(r: ListRootsResult) -> Self {
        Self::ListRoots(r)
    }
}

/// A result telling the client that more input is needed before the request can complete
/// (`InputRequiredResult`); at least one of `inputRequests` / `requestState` must be present.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// Requests the client must fulfil before retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Opaque state the client must echo unchanged on retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Result type: `input_required`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl InputRequiredResult {
    /// An empty `input_required` result (add requests and/or state).
    pub fn new() -> Self {
        Self {
            result_type: Some(ResultType::InputRequired),
            ..Self::default()
        }
    }

    /// Adds an input request under `key`.
    pub fn with_input_request(mut self, key: impl Into<String>, request: InputRequest) -> Self {
        self.input_requests
            .get_or_insert_with(IndexMap::new)
            .insert(key.into(), request);
        self
    }

    /// Sets the opaque request state.
    pub fn with_request_state(mut self, state: impl Into<String>) -> Self {
        self.request_state = Some(state.into());
        self
    }
}

/// Params common to requests that may be retried with input responses
/// (`InputResponseRequestParams`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputResponseRequestParams {
    /// Responses to the server's input requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// Opaque state echoed from the `InputRequiredResult`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Request metadata (required).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// The result of a request that may need more input or become a task (2026-07-28):
/// chosen by `resultType`.
///
/// `"input_required"` → [`MrtrResult::InputRequired`], `"task"` → [`MrtrResult::Task`]
/// (ext-tasks, `tools/call` only), anything else (including absent) → [`MrtrResult::Complete`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MrtrResult<T> {
    /// The final result.
    Complete(T),
    /// The server needs more input.
    InputRequired(InputRequiredResult),
    /// The server created a task (ext-tasks).
    Task(ExtCreateTaskResult),
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for MrtrResult<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = de_util::object(d, "result")?;
        match map.get("resultType").and_then(Value::as_str) {
            Some("input_required") => {
                de_util::convert(map, "InputRequiredResult").map(Self::InputRequired)
            }
            Some("task") => de_util::convert(map, "CreateTaskResult").map(Self::Task),
            _ => de_util::convert(map, "result").map(Self::Complete),
        }
    }
}

impl<T> From<InputRequiredResult> for MrtrResult<T> {
    fn from(r: InputRequiredResult) -> Self {
        Self::InputRequired(r)
    }
}

crate::meta::impl_has_meta!(InputRequiredResult, InputResponseRequestParams);
crate::common::impl_has_result_type!(InputRequiredResult);
