//! Server notifications: the connection-wide stream ([`Notifications`]) and filtered
//! subscriptions ([`Subscription`], `subscriptions/listen` in 2026-07-28,
//! `resources/subscribe` plus the connection's notifications in 2025-11-25).

use crate::jsonrpc::RequestId;
use duomcp_schema::{
    ElicitationCompleteNotificationParams, LoggingMessageNotificationParams,
    ProgressNotificationParams, SubscriptionFilter,
};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::{broadcast, mpsc};

/// A notification from the server, as the client hands it on ([`Notifications`],
/// [`Subscription`]): the notifications it knows, read into their params, and any other as
/// sent. (Not the wire's generic `Notification`, [`duomcp::schema::Notification`](crate::schema::Notification).)
///
/// ```
/// use duomcp::client::ServerEvent;
/// let event = ServerEvent::ResourceUpdated { uri: "file:///a".into() };
/// assert!(matches!(event, ServerEvent::ResourceUpdated { .. }));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerEvent {
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/resources/updated`.
    ResourceUpdated {
        /// The resource that changed.
        uri: String,
    },
    /// `notifications/message`: a log message.
    Log(LoggingMessageNotificationParams),
    /// `notifications/progress`.
    Progress(ProgressNotificationParams),
    /// `notifications/elicitation/complete` (2025-11-25 URL mode).
    ElicitationComplete(ElicitationCompleteNotificationParams),
    /// Any other notification, as sent.
    Other {
        /// The method.
        method: String,
        /// The params (`{}` when absent).
        params: Value,
    },
}

impl ServerEvent {
    /// Whether a subscription with `filter` asked for this notification.
    ///
    /// ```
    /// use duomcp::client::ServerEvent;
    /// use duomcp::schema::SubscriptionFilter;
    /// let filter = SubscriptionFilter { resource_subscriptions: Some(vec!["a://x".into()]), ..Default::default() };
    /// assert!(ServerEvent::ResourceUpdated { uri: "a://x".into() }.matches(&filter));
    /// assert!(!ServerEvent::ResourceUpdated { uri: "a://y".into() }.matches(&filter));
    /// assert!(!ServerEvent::ToolsListChanged.matches(&filter));
    /// ```
    pub fn matches(&self, filter: &SubscriptionFilter) -> bool {
        match self {
            ServerEvent::ToolsListChanged => filter.tools_list_changed == Some(true),
            ServerEvent::PromptsListChanged => filter.prompts_list_changed == Some(true),
            ServerEvent::ResourcesListChanged => filter.resources_list_changed == Some(true),
            ServerEvent::ResourceUpdated { uri } => filter
                .resource_subscriptions
                .as_ref()
                .is_some_and(|u| u.contains(uri)),
            _ => false,
        }
    }
}

/// Every notification the server sends on the connection, from the moment this stream was
/// made ([`Client::notifications`](super::Client::notifications)).
///
/// A slow reader loses the oldest notifications rather than slowing the connection down; a
/// warning is logged when that happens.
#[derive(Debug)]
pub struct Notifications {
    rx: broadcast::Receiver<ServerEvent>,
}

impl Notifications {
    pub(crate) fn new(rx: broadcast::Receiver<ServerEvent>) -> Self {
        Notifications { rx }
    }

    /// A notification that has already arrived, without waiting.
    pub fn try_recv(&mut self) -> Option<ServerEvent> {
        loop {
            match self.rx.try_recv() {
                Ok(n) => return Some(n),
                Err(broadcast::error::TryRecvError::Lagged(n)) => tracing::warn!(
                    "notification reader fell behind; {n} notifications were dropped"
                ),
                Err(_) => return None,
            }
        }
    }

    /// The next notification; `None` once the connection is closed.
    pub async fn recv(&mut self) -> Option<ServerEvent> {
        loop {
            match self.rx.recv().await {
                Ok(n) => return Some(n),
                Err(broadcast::error::RecvError::Lagged(n)) => tracing::warn!(
                    "notification reader fell behind; {n} notifications were dropped"
                ),
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

/// Runs a closure when dropped (ending a subscription on the wire).
pub(crate) struct OnDrop(pub(crate) Option<Box<dyn FnOnce() + Send + Sync>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// A filtered stream of notifications, opened by [`Client::listen`](super::Client::listen).
///
/// In 2026-07-28 it is a `subscriptions/listen` request: only notifications tagged with its
/// subscription id arrive here. In 2025-11-25 it is `resources/subscribe` for the listed URIs
/// plus the connection's notifications, filtered the same way. Dropping it ends the
/// subscription (`notifications/cancelled`, or `resources/unsubscribe`).
pub struct Subscription {
    pub(crate) id: Option<RequestId>,
    pub(crate) acknowledged: SubscriptionFilter,
    pub(crate) rx: mpsc::Receiver<ServerEvent>,
    pub(crate) graceful: Arc<AtomicBool>,
    pub(crate) _guard: OnDrop,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .field("acknowledged", &self.acknowledged)
            .finish_non_exhaustive()
    }
}

impl Subscription {
    /// The subscription id (the `subscriptions/listen` request id); `None` in 2025-11-25.
    pub fn id(&self) -> Option<&RequestId> {
        self.id.as_ref()
    }

    /// What the server agreed to send (2026-07-28: the acknowledged filter; 2025-11-25: the
    /// requested filter narrowed to the server's capabilities).
    pub fn acknowledged(&self) -> &SubscriptionFilter {
        &self.acknowledged
    }

    /// The next notification; `None` when the subscription ended.
    pub async fn next(&mut self) -> Option<ServerEvent> {
        self.rx.recv().await
    }

    /// Whether the server ended the subscription gracefully (it answered the listen request).
    /// `false` while it runs, and after an abrupt end.
    pub fn ended_gracefully(&self) -> bool {
        self.graceful.load(Ordering::SeqCst)
    }
}
