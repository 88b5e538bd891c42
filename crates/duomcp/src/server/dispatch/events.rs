//! Server events (list changes, resource updates, task status) as the notifications their
//! receivers get: one mapping, used by the 2025-11-25 session forwarder and by the 2026-07-28
//! `subscriptions/listen` stream.

use crate::jsonrpc;
use crate::server::session::Frame;
use crate::server::tasks::{self, TaskRecord};
use crate::server::ServerEvent;
use duomcp_schema::methods::{self, NotificationMethod};
use serde_json::{json, Value};

/// What a receiver of server events wants to hear about.
pub(super) trait Interest {
    /// `notifications/tools/list_changed`.
    fn tools(&self) -> bool;
    /// `notifications/prompts/list_changed`.
    fn prompts(&self) -> bool;
    /// `notifications/resources/list_changed`.
    fn resources(&self) -> bool;
    /// `notifications/resources/updated` for `uri`.
    fn resource(&self, uri: &str) -> bool;
    /// The status of `task`.
    fn task(&self, task: &TaskRecord) -> bool;
}

/// The notification `event` becomes for a receiver with `interest`; `None` when it is not one
/// the receiver wants. `tag` is the `_meta` a listen stream puts on each of its notifications
/// (naming the subscription).
pub(super) fn notification(
    event: &ServerEvent,
    interest: &impl Interest,
    tag: Option<&Value>,
) -> Option<Frame> {
    let (method, mut params) = match event {
        ServerEvent::ToolsChanged if interest.tools() => (
            <methods::ToolListChanged as NotificationMethod>::NAME,
            json!({}),
        ),
        ServerEvent::PromptsChanged if interest.prompts() => (
            <methods::PromptListChanged as NotificationMethod>::NAME,
            json!({}),
        ),
        ServerEvent::ResourcesChanged if interest.resources() => (
            <methods::ResourceListChanged as NotificationMethod>::NAME,
            json!({}),
        ),
        ServerEvent::ResourceUpdated(uri) if interest.resource(uri) => (
            <methods::ResourceUpdated as NotificationMethod>::NAME,
            json!({ "uri": uri }),
        ),
        ServerEvent::TaskChanged(task) if interest.task(task) => {
            return Some(tasks::status_notification(task, tag))
        }
        _ => return None,
    };
    if let Some(tag) = tag {
        params["_meta"] = tag.clone();
    }
    Some(jsonrpc::encode_notification(method, &params).unwrap_or_default())
}
