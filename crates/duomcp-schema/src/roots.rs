//! Roots (`roots/list`): the filesystem roots a client exposes.
//!
//! Server→client request in 2025-11-25; an MRTR input request in 2026-07-28 (deprecated).

use serde::{Deserialize, Serialize};

use crate::common::{JsonObject, RequestParams};
use crate::jsonrpc::{JsonRpcNotification, JsonRpcRequest};
use crate::meta::Meta;
use crate::notifications::NotificationParams;

/// A root directory or file that the server can operate on (`Root`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Root {
    /// The URI identifying the root (currently must start with `file://`).
    pub uri: String,
    /// An optional human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Reserved metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl Root {
    /// A root at `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            ..Self::default()
        }
    }

    /// Sets the display name.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

/// The client's response to a `roots/list` request (`ListRootsResult`).
///
/// `_meta` exists only in 2025-11-25.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
    /// Reserved metadata (2025-11-25 only).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl ListRootsResult {
    /// A result listing `roots`.
    pub fn new(roots: Vec<Root>) -> Self {
        Self {
            roots,
            ..Self::default()
        }
    }
}

/// `ListRootsRequest` as a 2025-11-25 JSON-RPC request envelope (in 2026-07-28 it is an
/// [`crate::InputRequest`]).
pub type ListRootsRequest = JsonRpcRequest<RequestParams>;
/// `RootsListChangedNotification` (2025-11-25): `notifications/roots/list_changed`.
pub type RootsListChangedNotification = JsonRpcNotification<NotificationParams>;

crate::meta::impl_has_meta!(Root, ListRootsResult);
