//! The reserved `_meta` object: well-known keys and typed views.
//!
//! Every `_meta` field in this crate is an untyped [`Meta`] map; the structs here
//! ([`RequestMeta`], [`ResultMeta`], [`NotificationMeta`]) are typed views that convert
//! to and from it, keeping unknown keys in `extra`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::capabilities::ClientCapabilities;
use crate::common::Implementation;
use crate::jsonrpc::{ProgressToken, RequestId};
use crate::logging::LoggingLevel;
use crate::tasks::RelatedTaskMetadata;

/// The `_meta` object: a JSON object whose key order is preserved.
pub type Meta = serde_json::Map<String, Value>;
/// `MetaObject` (2026-07-28): same as [`Meta`].
pub type MetaObject = Meta;
/// `RequestMetaObject` (2026-07-28): see [`RequestMeta`].
pub type RequestMetaObject = RequestMeta;
/// `ResultMetaObject` (2026-07-28): see [`ResultMeta`].
pub type ResultMetaObject = ResultMeta;
/// `NotificationMetaObject` (2026-07-28): see [`NotificationMeta`].
pub type NotificationMetaObject = NotificationMeta;
/// `SubscriptionsListenResultMetaObject` (2026-07-28): a [`ResultMeta`] whose
/// `subscription_id` is required.
pub type SubscriptionsListenResultMetaObject = ResultMeta;

/// Prefix reserved for keys defined by the MCP specification.
pub const RESERVED_PREFIX: &str = "io.modelcontextprotocol/";
/// Request `_meta`: protocol version of this request (2026-07-28, required).
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// Request `_meta`: client capabilities for this request (2026-07-28, required).
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// Request `_meta`: client implementation info (2026-07-28, SHOULD be sent).
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// Request `_meta`: desired log level for this request (2026-07-28, deprecated).
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// Result `_meta`: server implementation info (2026-07-28).
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// Notification / listen-result `_meta`: the subscription a notification belongs to (2026-07-28).
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// `_meta` on messages tied to a task (2025-11-25 tasks).
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// `CreateTaskResult._meta`: an immediate answer for the model (2025-11-25 tasks).
pub const MODEL_IMMEDIATE_RESPONSE: &str = "io.modelcontextprotocol/model-immediate-response";
/// Request `_meta`: token for out-of-band progress notifications.
pub const PROGRESS_TOKEN: &str = "progressToken";
/// Request `_meta`: W3C trace context `traceparent`.
pub const TRACEPARENT: &str = "traceparent";
/// Request `_meta`: W3C trace context `tracestate`.
pub const TRACESTATE: &str = "tracestate";
/// Request `_meta`: W3C `baggage`.
pub const BAGGAGE: &str = "baggage";

/// Typed view of a request's `_meta` (`RequestMetaObject` in 2026-07-28).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RequestMeta {
    /// Protocol version of this request (2026-07-28: required).
    #[serde(
        rename = "io.modelcontextprotocol/protocolVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub protocol_version: Option<String>,
    /// Client capabilities for this request (2026-07-28: required; `{}` = none).
    #[serde(
        rename = "io.modelcontextprotocol/clientCapabilities",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub client_capabilities: Option<ClientCapabilities>,
    /// Client implementation info (2026-07-28).
    #[serde(
        rename = "io.modelcontextprotocol/clientInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub client_info: Option<Implementation>,
    /// Desired log level; absent means no `notifications/message` (2026-07-28, deprecated).
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub log_level: Option<LoggingLevel>,
    /// Token for out-of-band progress notifications (both revisions).
    #[serde(
        rename = "progressToken",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub progress_token: Option<ProgressToken>,
    /// The task this message relates to (2025-11-25 tasks).
    #[serde(
        rename = "io.modelcontextprotocol/related-task",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub related_task: Option<RelatedTaskMetadata>,
    /// All other keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "Meta::is_empty")]
    pub extra: Meta,
}

/// Typed view of a result's `_meta` (`ResultMetaObject` / `SubscriptionsListenResultMetaObject`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ResultMeta {
    /// Server implementation info (2026-07-28; SHOULD be on every result).
    #[serde(
        rename = "io.modelcontextprotocol/serverInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub server_info: Option<Implementation>,
    /// Subscription id (2026-07-28, `subscriptions/listen` result only; required there).
    #[serde(
        rename = "io.modelcontextprotocol/subscriptionId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub subscription_id: Option<RequestId>,
    /// The task this result relates to (2025-11-25 `tasks/result`).
    #[serde(
        rename = "io.modelcontextprotocol/related-task",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub related_task: Option<RelatedTaskMetadata>,
    /// An immediate answer for the model while a task runs (2025-11-25 `CreateTaskResult`).
    #[serde(
        rename = "io.modelcontextprotocol/model-immediate-response",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub model_immediate_response: Option<String>,
    /// All other keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "Meta::is_empty")]
    pub extra: Meta,
}

/// Typed view of a notification's `_meta` (`NotificationMetaObject` in 2026-07-28).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NotificationMeta {
    /// The `subscriptions/listen` request this notification belongs to (2026-07-28).
    #[serde(
        rename = "io.modelcontextprotocol/subscriptionId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub subscription_id: Option<RequestId>,
    /// The task this notification relates to (2025-11-25 tasks).
    #[serde(
        rename = "io.modelcontextprotocol/related-task",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub related_task: Option<RelatedTaskMetadata>,
    /// All other keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "Meta::is_empty")]
    pub extra: Meta,
}

macro_rules! meta_view_conversions {
    ($($ty:ident),*) => {$(
        impl $ty {
            /// Reads the typed view from a `_meta` map.
            pub fn from_meta(meta: &Meta) -> Result<Self, serde_json::Error> {
                serde_json::from_value(Value::Object(meta.clone()))
            }

            /// Converts the typed view back into a `_meta` map.
            pub fn into_meta(self) -> Meta {
                match serde_json::to_value(self) {
                    Ok(Value::Object(map)) => map,
                    // Serialising these plain structs cannot fail nor yield a non-object.
                    _ => Meta::new(),
                }
            }
        }

        impl TryFrom<Meta> for $ty {
            type Error = serde_json::Error;
            fn try_from(meta: Meta) -> Result<Self, Self::Error> {
                serde_json::from_value(Value::Object(meta))
            }
        }

        impl TryFrom<&Meta> for $ty {
            type Error = serde_json::Error;
            fn try_from(meta: &Meta) -> Result<Self, Self::Error> {
                Self::from_meta(meta)
            }
        }

        impl From<$ty> for Meta {
            fn from(view: $ty) -> Meta {
                view.into_meta()
            }
        }
    )*};
}
meta_view_conversions!(RequestMeta, ResultMeta, NotificationMeta);

/// Access to the `_meta` field shared by params, results and content types.
pub trait HasMeta {
    /// The `_meta` map, if present.
    fn meta(&self) -> Option<&Meta>;
    /// Mutable access to the optional `_meta` map.
    fn meta_mut(&mut self) -> &mut Option<Meta>;

    /// The value under `key` in `_meta`, if any.
    fn meta_value(&self, key: &str) -> Option<&Value> {
        self.meta().and_then(|m| m.get(key))
    }

    /// Inserts `value` under `key` in `_meta`, creating the map if needed.
    fn set_meta_value(&mut self, key: impl Into<String>, value: Value)
    where
        Self: Sized,
    {
        self.meta_mut()
            .get_or_insert_with(Meta::new)
            .insert(key.into(), value);
    }

    /// Parses `_meta` as a [`RequestMeta`] (empty view when absent).
    fn request_meta(&self) -> Result<RequestMeta, serde_json::Error> {
        self.meta()
            .map_or_else(|| Ok(RequestMeta::default()), RequestMeta::from_meta)
    }

    /// Parses `_meta` as a [`ResultMeta`] (empty view when absent).
    fn result_meta(&self) -> Result<ResultMeta, serde_json::Error> {
        self.meta()
            .map_or_else(|| Ok(ResultMeta::default()), ResultMeta::from_meta)
    }
}

macro_rules! impl_has_meta {
    ($($ty:ty),* $(,)?) => {$(
        impl $crate::meta::HasMeta for $ty {
            fn meta(&self) -> Option<&$crate::meta::Meta> {
                self.meta.as_ref()
            }
            fn meta_mut(&mut self) -> &mut Option<$crate::meta::Meta> {
                &mut self.meta
            }
        }
    )*};
}
pub(crate) use impl_has_meta;
