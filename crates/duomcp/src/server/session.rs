//! Per-connection state of the legacy (2025-11-25) era: what `initialize` negotiated, the log
//! level, resource subscriptions, and the connection's [`Correlation`] engine (server→client
//! requests awaiting an answer; the client's requests running, for `notifications/cancelled`).
//!
//! A stdio process has one session (its engine also tracks the 2026-07-28 requests of the
//! connection); on Streamable HTTP every `Mcp-Session-Id` has one.

use crate::correlation::Correlation;
use crate::util::lock;
use duomcp_schema::{ClientCapabilities, Implementation, LoggingLevel};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Bytes of one encoded message (no newline, no SSE framing).
pub(crate) type Frame = Vec<u8>;
/// Where a request's related messages go (progress, logs, server→client requests).
pub(crate) type Sink = mpsc::Sender<Frame>;

/// What `initialize` established.
#[derive(Debug, Clone)]
pub(crate) struct Negotiated {
    pub protocol_version: Arc<str>,
    pub client_capabilities: Arc<ClientCapabilities>,
    pub client_info: Option<Arc<Implementation>>,
}

#[derive(Default)]
struct State {
    negotiated: Option<Negotiated>,
    initialized_notification: bool,
    log_level: Option<LoggingLevel>,
    subscriptions: HashSet<String>,
}

/// One legacy session.
pub(crate) struct Session {
    state: Mutex<State>,
    /// Requests in both directions, by id.
    correlation: Correlation,
    /// Messages not tied to a request (list_changed, resources/updated).
    pub(crate) unrelated: Sink,
    /// The name replicas sharing the session agree on (a digest of its id), which scopes
    /// its tasks; unset for a session of one process.
    scope: std::sync::OnceLock<Box<str>>,
    /// Where the session's own notifications go instead of `unrelated` when its copies live
    /// on several replicas (to the one holding its `GET` stream); unset: `unrelated`.
    relay: std::sync::OnceLock<Relay>,
}

/// Sends one of a session's own notifications on (see [`Session::send_own`]).
pub(crate) type Relay = Box<dyn Fn(Frame) + Send + Sync>;

impl Session {
    /// A session whose messages outside any request go to `unrelated`, with its correlation
    /// engine (ids of server→client requests are `s-0`, `s-1`, …).
    pub(crate) fn new(unrelated: Sink, correlation: Correlation) -> Arc<Self> {
        Arc::new(Session {
            state: Mutex::default(),
            correlation,
            unrelated,
            scope: std::sync::OnceLock::new(),
            relay: std::sync::OnceLock::new(),
        })
    }

    /// Sends a notification of the session itself, tied to none of the requests running (a
    /// 2025-11-25 task's progress or log): on the session's own stream, or through the relay
    /// when one is set. Best effort: a full queue drops it.
    pub(crate) fn send_own(&self, frame: Frame) {
        match self.relay.get() {
            Some(relay) => relay(frame),
            None => {
                let _ = self.unrelated.try_send(frame);
            }
        }
    }

    /// Sets the relay of [`send_own`](Self::send_own) (once; later calls do nothing).
    #[cfg_attr(not(feature = "http-server"), allow(dead_code))]
    pub(crate) fn set_relay(&self, relay: Relay) {
        let _ = self.relay.set(relay);
    }

    /// Names the session for every replica sharing it (set once; later calls do nothing).
    #[cfg(feature = "http-server")]
    pub(crate) fn set_scope(&self, scope: String) {
        let _ = self.scope.set(scope.into_boxed_str());
    }

    /// The name set by [`set_scope`](Self::set_scope).
    pub(crate) fn scope(&self) -> Option<&str> {
        self.scope.get().map(|s| &**s)
    }

    /// The session's requests in both directions: server→client requests waiting for the
    /// client's answer, and the client's requests running.
    pub(crate) fn correlation(&self) -> &Correlation {
        &self.correlation
    }

    pub(crate) fn negotiated(&self) -> Option<Negotiated> {
        lock(&self.state).negotiated.clone()
    }

    pub(crate) fn set_negotiated(&self, n: Negotiated) {
        lock(&self.state).negotiated = Some(n);
    }

    pub(crate) fn mark_initialized(&self) {
        lock(&self.state).initialized_notification = true;
    }

    pub(crate) fn log_level(&self) -> Option<LoggingLevel> {
        lock(&self.state).log_level
    }

    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        lock(&self.state).log_level = Some(level);
    }

    /// Subscribes to `uri` unless the session holds `max` subscriptions already (subscribing
    /// again to one it holds is fine); `false` when refused.
    pub(crate) fn subscribe_bounded(&self, uri: String, max: usize) -> bool {
        let mut state = lock(&self.state);
        if state.subscriptions.len() >= max && !state.subscriptions.contains(&uri) {
            return false;
        }
        state.subscriptions.insert(uri);
        true
    }

    pub(crate) fn unsubscribe(&self, uri: &str) {
        lock(&self.state).subscriptions.remove(uri);
    }

    /// The subscribed URIs (to share the session with other replicas).
    #[cfg_attr(not(feature = "http-server"), allow(dead_code))]
    pub(crate) fn subscriptions(&self) -> Vec<String> {
        lock(&self.state).subscriptions.iter().cloned().collect()
    }

    /// Replaces the subscriptions (a session restored from a shared record).
    #[cfg_attr(not(feature = "http-server"), allow(dead_code))]
    pub(crate) fn set_subscriptions(&self, uris: Vec<String>) {
        lock(&self.state).subscriptions = uris.into_iter().collect();
    }

    pub(crate) fn is_subscribed(&self, uri: &str) -> bool {
        lock(&self.state).subscriptions.contains(uri)
    }
}
