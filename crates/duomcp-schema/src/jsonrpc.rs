//! JSON-RPC 2.0 envelopes, ids, and error objects.

use std::fmt;

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::capabilities::ClientCapabilities;
use crate::common::de_util;
use crate::common::JsonObject;
use crate::elicitation::ElicitRequestUrlParams;
use crate::methods::{NotificationMethod, RequestMethod};

/// The JSON-RPC version string every message carries.
pub const JSONRPC_VERSION: &str = "2.0";

/// The `jsonrpc: "2.0"` member; any other value fails to deserialise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct JsonRpcVersion;

impl Serialize for JsonRpcVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(JSONRPC_VERSION)
    }
}

impl<'de> Deserialize<'de> for JsonRpcVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s == JSONRPC_VERSION {
            Ok(JsonRpcVersion)
        } else {
            Err(de::Error::custom(format!(
                "unsupported jsonrpc version {s:?}, expected \"2.0\""
            )))
        }
    }
}

macro_rules! string_or_integer {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
        #[serde(untagged)]
        pub enum $name {
            /// An integer value (kept exactly as received).
            Number(serde_json::Number),
            /// A string value.
            String(String),
        }

        impl $name {
            /// The string form, if this is a string.
            pub fn as_str(&self) -> Option<&str> {
                match self {
                    Self::String(s) => Some(s),
                    Self::Number(_) => None,
                }
            }

            /// The integer value, if this is a number that fits an `i64`.
            pub fn as_i64(&self) -> Option<i64> {
                match self {
                    Self::Number(n) => n.as_i64(),
                    Self::String(_) => None,
                }
            }
        }

        /// Strings are printed JSON-quoted, so `92` and `"92"` never look alike.
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    Self::Number(n) => write!(f, "{n}"),
                    Self::String(s) => {
                        let quoted = serde_json::to_string(s).map_err(|_| fmt::Error)?;
                        f.write_str(&quoted)
                    }
                }
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        write!(f, "{} (a string or an integer, never null)", $what)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$name, E> {
                        Ok($name::String(v.to_owned()))
                    }
                    fn visit_string<E: de::Error>(self, v: String) -> Result<$name, E> {
                        Ok($name::String(v))
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$name, E> {
                        Ok($name::Number(v.into()))
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$name, E> {
                        Ok($name::Number(v.into()))
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<$name, E> {
                        // JSON Schema's "integer" admits 1.0; anything fractional is invalid.
                        match serde_json::Number::from_f64(v) {
                            Some(n) if v.fract() == 0.0 => Ok($name::Number(n)),
                            _ => Err(E::invalid_value(de::Unexpected::Float(v), &self)),
                        }
                    }
                }
                d.deserialize_any(V)
            }
        }

        impl From<i64> for $name {
            fn from(v: i64) -> Self {
                Self::Number(v.into())
            }
        }
        impl From<i32> for $name {
            fn from(v: i32) -> Self {
                Self::Number(v.into())
            }
        }
        impl From<u64> for $name {
            fn from(v: u64) -> Self {
                Self::Number(v.into())
            }
        }
        impl From<u32> for $name {
            fn from(v: u32) -> Self {
                Self::Number(v.into())
            }
        }
        impl From<String> for $name {
            fn from(v: String) -> Self {
                Self::String(v)
            }
        }
        impl From<&str> for $name {
            fn from(v: &str) -> Self {
                Self::String(v.to_owned())
            }
        }
    };
}

string_or_integer!(
    /// A uniquely identifying id for a request in JSON-RPC (string or integer, never null).
    RequestId,
    "a request id"
);
string_or_integer!(
    /// A progress token, used to associate progress notifications with the original request.
    ProgressToken,
    "a progress token"
);

/// Standard and MCP-specific JSON-RPC error codes.
pub mod error_code {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i32 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i32 = -32600;
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i32 = -32602;
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: i32 = -32603;
    /// Resource not found (2025-11-25 only; 2026-07-28 uses `INVALID_PARAMS`).
    pub const RESOURCE_NOT_FOUND: i32 = -32002;
    /// URL-mode elicitation required (2025-11-25 only; reserved in 2026-07-28).
    pub const URL_ELICITATION_REQUIRED: i32 = -32042;
    /// An HTTP header does not match the body (2026-07-28).
    pub const HEADER_MISMATCH: i32 = -32020;
    /// The request needs a client capability that was not declared (2026-07-28).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i32 = -32021;
    /// The requested protocol version is not supported (2026-07-28).
    pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;
}

/// A JSON-RPC error object (`Error`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error type that occurred.
    pub code: i32,
    /// A short description of the error.
    pub message: String,
    /// Additional information about the error, defined by the sender.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// `ParseError` (2026-07-28): an [`ErrorObject`] with code -32700.
pub type ParseError = ErrorObject;
/// `InvalidRequestError` (2026-07-28): an [`ErrorObject`] with code -32600.
pub type InvalidRequestError = ErrorObject;
/// `MethodNotFoundError` (2026-07-28): an [`ErrorObject`] with code -32601.
pub type MethodNotFoundError = ErrorObject;
/// `InvalidParamsError` (2026-07-28): an [`ErrorObject`] with code -32602.
pub type InvalidParamsError = ErrorObject;
/// `InternalError` (2026-07-28): an [`ErrorObject`] with code -32603.
pub type InternalError = ErrorObject;
/// `URLElicitationRequiredError` (2025-11-25): an error response with code -32042 and
/// [`UrlElicitationRequiredErrorData`].
pub type UrlElicitationRequiredError = JsonRpcErrorResponse;
/// `HeaderMismatchError` (2026-07-28): an error response with code -32020.
pub type HeaderMismatchError = JsonRpcErrorResponse;
/// `MissingRequiredClientCapabilityError` (2026-07-28): an error response with code -32021
/// and [`MissingRequiredClientCapabilityErrorData`].
pub type MissingRequiredClientCapabilityError = JsonRpcErrorResponse;
/// `UnsupportedProtocolVersionError` (2026-07-28): an error response with code -32022 and
/// [`UnsupportedProtocolVersionErrorData`].
pub type UnsupportedProtocolVersionError = JsonRpcErrorResponse;

/// `data` of a -32042 URL elicitation required error (2025-11-25).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UrlElicitationRequiredErrorData {
    /// The URL elicitations the client must complete before retrying.
    pub elicitations: Vec<ElicitRequestUrlParams>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// `data` of a -32021 missing required client capability error (2026-07-28).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MissingRequiredClientCapabilityErrorData {
    /// The capabilities the client must declare for this request.
    pub required_capabilities: ClientCapabilities,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// `data` of a -32022 unsupported protocol version error (2026-07-28; also -32602 at
/// 2025-11-25 `initialize`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UnsupportedProtocolVersionErrorData {
    /// Protocol versions the server supports.
    pub supported: Vec<String>,
    /// The version the client requested.
    pub requested: String,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl ErrorObject {
    /// An error with a code and message and no data.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Sets `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// -32700 Parse error.
    pub fn parse_error(message: impl Into<String>) -> Self {
        Self::new(error_code::PARSE_ERROR, message)
    }

    /// -32600 Invalid request.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(error_code::INVALID_REQUEST, message)
    }

    /// -32601 Method not found.
    pub fn method_not_found(message: impl Into<String>) -> Self {
        Self::new(error_code::METHOD_NOT_FOUND, message)
    }

    /// -32602 Invalid params.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(error_code::INVALID_PARAMS, message)
    }

    /// -32603 Internal error.
    pub fn internal_error(message: impl Into<String>) -> Self {
        Self::new(error_code::INTERNAL_ERROR, message)
    }

    /// -32002 Resource not found (2025-11-25), with `data: {"uri": uri}`.
    pub fn resource_not_found(uri: impl Into<String>) -> Self {
        let uri: String = uri.into();
        Self::new(error_code::RESOURCE_NOT_FOUND, "Resource not found")
            .with_data(serde_json::json!({ "uri": uri }))
    }

    /// -32042 URL elicitation required (2025-11-25).
    pub fn url_elicitation_required(
        message: impl Into<String>,
        elicitations: Vec<ElicitRequestUrlParams>,
    ) -> Self {
        let data = UrlElicitationRequiredErrorData {
            elicitations,
            extra: JsonObject::new(),
        };
        Self::new(error_code::URL_ELICITATION_REQUIRED, message).with_data_of(&data)
    }

    /// -32020 Header mismatch (2026-07-28).
    pub fn header_mismatch(message: impl Into<String>) -> Self {
        Self::new(error_code::HEADER_MISMATCH, message)
    }

    /// -32021 Missing required client capability (2026-07-28).
    pub fn missing_required_client_capability(
        message: impl Into<String>,
        required_capabilities: ClientCapabilities,
    ) -> Self {
        let data = MissingRequiredClientCapabilityErrorData {
            required_capabilities,
            extra: JsonObject::new(),
        };
        Self::new(error_code::MISSING_REQUIRED_CLIENT_CAPABILITY, message).with_data_of(&data)
    }

    /// -32022 Unsupported protocol version (2026-07-28).
    pub fn unsupported_protocol_version(
        message: impl Into<String>,
        supported: Vec<String>,
        requested: impl Into<String>,
    ) -> Self {
        let data = UnsupportedProtocolVersionErrorData {
            supported,
            requested: requested.into(),
            extra: JsonObject::new(),
        };
        Self::new(error_code::UNSUPPORTED_PROTOCOL_VERSION, message).with_data_of(&data)
    }

    /// Sets `data` to the serialisation of `data` (left unset if that fails).
    fn with_data_of<T: Serialize>(mut self, data: &T) -> Self {
        self.data = serde_json::to_value(data).ok();
        self
    }

    /// Parses `data` as `T`; `None` when there is no data.
    pub fn data_as<T: DeserializeOwned>(&self) -> Option<Result<T, serde_json::Error>> {
        self.data.clone().map(serde_json::from_value)
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl std::error::Error for ErrorObject {}

/// A request that expects a response (`JSONRPCRequest`), generic over its params type.
///
/// With the default `P = JsonObject` this is the untyped envelope; the schema's request
/// definitions are aliases with typed params (e.g. [`crate::CallToolRequest`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcRequest<P = JsonObject> {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The request id (never null).
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// The params object, if any.
    #[serde(default = "Option::default", skip_serializing_if = "Option::is_none")]
    pub params: Option<P>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl<P> JsonRpcRequest<P> {
    /// A request with the given id, method and params.
    pub fn new(id: impl Into<RequestId>, method: impl Into<String>, params: Option<P>) -> Self {
        Self {
            jsonrpc: JsonRpcVersion,
            id: id.into(),
            method: method.into(),
            params,
            extra: JsonObject::new(),
        }
    }
}

impl JsonRpcRequest {
    /// An untyped request for method `M` with the serialisation of `params`.
    pub fn typed<M: RequestMethod>(
        id: impl Into<RequestId>,
        params: &M::Params,
    ) -> Result<Self, serde_json::Error> {
        Ok(Self::new(id, M::NAME, Some(to_object(params)?)))
    }

    /// Parses the params as `T` (an absent `params` is read as `{}`).
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        params_as(self.params.as_ref())
    }
}

/// A notification, which does not expect a response (`JSONRPCNotification`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcNotification<P = JsonObject> {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The method name.
    pub method: String,
    /// The params object, if any.
    #[serde(default = "Option::default", skip_serializing_if = "Option::is_none")]
    pub params: Option<P>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl<P> JsonRpcNotification<P> {
    /// A notification with the given method and params.
    pub fn new(method: impl Into<String>, params: Option<P>) -> Self {
        Self {
            jsonrpc: JsonRpcVersion,
            method: method.into(),
            params,
            extra: JsonObject::new(),
        }
    }
}

impl JsonRpcNotification {
    /// An untyped notification for method `M` with the serialisation of `params`.
    pub fn typed<M: NotificationMethod>(params: &M::Params) -> Result<Self, serde_json::Error> {
        Ok(Self::new(M::NAME, Some(to_object(params)?)))
    }

    /// Parses the params as `T` (an absent `params` is read as `{}`).
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        params_as(self.params.as_ref())
    }
}

/// A successful (non-error) response to a request (`JSONRPCResultResponse`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcResultResponse<R = JsonObject> {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id of the request this answers.
    pub id: RequestId,
    /// The result object.
    pub result: R,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl<R> JsonRpcResultResponse<R> {
    /// A response with the given id and result.
    pub fn new(id: impl Into<RequestId>, result: R) -> Self {
        Self {
            jsonrpc: JsonRpcVersion,
            id: id.into(),
            result,
            extra: JsonObject::new(),
        }
    }
}

impl JsonRpcResultResponse {
    /// An untyped response carrying the serialisation of `result`.
    pub fn typed<T: Serialize>(
        id: impl Into<RequestId>,
        result: &T,
    ) -> Result<Self, serde_json::Error> {
        Ok(Self::new(id, to_object(result)?))
    }

    /// Parses the result as `T`.
    pub fn result_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_value(Value::Object(self.result.clone()))
    }
}

/// A response to a request that indicates an error occurred (`JSONRPCErrorResponse`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcErrorResponse {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id of the request this answers; absent when it could not be determined
    /// (an incoming `"id": null` is read as absent and never written back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<RequestId>,
    /// The error.
    pub error: ErrorObject,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl JsonRpcErrorResponse {
    /// An error response for request `id` (or none, for unparseable requests).
    pub fn new(id: Option<RequestId>, error: ErrorObject) -> Self {
        Self {
            jsonrpc: JsonRpcVersion,
            id,
            error,
            extra: JsonObject::new(),
        }
    }
}

/// A response to a request, either a result or an error (`JSONRPCResponse`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum JsonRpcResponse {
    /// A successful response.
    Result(JsonRpcResultResponse),
    /// An error response.
    Error(JsonRpcErrorResponse),
}

impl JsonRpcResponse {
    /// The id of the request this answers (absent for some error responses).
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Self::Result(r) => Some(&r.id),
            Self::Error(e) => e.id.as_ref(),
        }
    }
}

impl<'de> Deserialize<'de> for JsonRpcResponse {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = de_util::object(d, "JSON-RPC response")?;
        if map.contains_key("result") {
            de_util::convert(map, "JSON-RPC result response").map(Self::Result)
        } else if map.contains_key("error") {
            de_util::convert(map, "JSON-RPC error response").map(Self::Error)
        } else {
            Err(de::Error::custom(
                "invalid JSON-RPC response: neither `result` nor `error` present",
            ))
        }
    }
}

/// Any valid JSON-RPC message that can be decoded off the wire (`JSONRPCMessage`).
///
/// Classified by keys: `method` + `id` → request, `method` alone → notification,
/// `result` → result response, `error` → error response.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum JsonRpcMessage {
    /// A request.
    Request(JsonRpcRequest),
    /// A notification.
    Notification(JsonRpcNotification),
    /// A successful response.
    Response(JsonRpcResultResponse),
    /// An error response.
    Error(JsonRpcErrorResponse),
}

impl JsonRpcMessage {
    /// The method, for requests and notifications.
    pub fn method(&self) -> Option<&str> {
        match self {
            Self::Request(r) => Some(&r.method),
            Self::Notification(n) => Some(&n.method),
            Self::Response(_) | Self::Error(_) => None,
        }
    }

    /// The id, for requests and responses.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Self::Request(r) => Some(&r.id),
            Self::Response(r) => Some(&r.id),
            Self::Error(e) => e.id.as_ref(),
            Self::Notification(_) => None,
        }
    }

    /// The response, if this message is one.
    pub fn into_response(self) -> Option<JsonRpcResponse> {
        match self {
            Self::Response(r) => Some(JsonRpcResponse::Result(r)),
            Self::Error(e) => Some(JsonRpcResponse::Error(e)),
            Self::Request(_) | Self::Notification(_) => None,
        }
    }
}

impl From<JsonRpcResponse> for JsonRpcMessage {
    fn from(r: JsonRpcResponse) -> Self {
        match r {
            JsonRpcResponse::Result(r) => Self::Response(r),
            JsonRpcResponse::Error(e) => Self::Error(e),
        }
    }
}

impl From<JsonRpcRequest> for JsonRpcMessage {
    fn from(r: JsonRpcRequest) -> Self {
        Self::Request(r)
    }
}

impl From<JsonRpcNotification> for JsonRpcMessage {
    fn from(n: JsonRpcNotification) -> Self {
        Self::Notification(n)
    }
}

impl<'de> Deserialize<'de> for JsonRpcMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = de_util::object(d, "JSON-RPC message")?;
        if map.contains_key("method") {
            if map.contains_key("id") {
                de_util::convert(map, "JSON-RPC request").map(Self::Request)
            } else {
                de_util::convert(map, "JSON-RPC notification").map(Self::Notification)
            }
        } else if map.contains_key("result") {
            de_util::convert(map, "JSON-RPC result response").map(Self::Response)
        } else if map.contains_key("error") {
            de_util::convert(map, "JSON-RPC error response").map(Self::Error)
        } else {
            Err(de::Error::custom(
                "invalid JSON-RPC message: no `method`, `result` or `error` member",
            ))
        }
    }
}

/// The generic shape of a request (`Request`): a method and optional params.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Request {
    /// The method name.
    pub method: String,
    /// The params object, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<JsonObject>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// The generic shape of a notification (`Notification`): a method and optional params.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The params object, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<JsonObject>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Serialises `value` into a JSON object (fails if it is not one).
pub fn to_object<T: Serialize + ?Sized>(value: &T) -> Result<JsonObject, serde_json::Error> {
    match serde_json::to_value(value)? {
        Value::Object(map) => Ok(map),
        other => Err(<serde_json::Error as serde::ser::Error>::custom(format!(
            "expected a JSON object, got {}",
            de_util::kind(&other)
        ))),
    }
}

fn params_as<T: DeserializeOwned>(params: Option<&JsonObject>) -> Result<T, serde_json::Error> {
    serde_json::from_value(Value::Object(params.cloned().unwrap_or_default()))
}
