//! Per-connection state of the legacy (2025-11-25) era: what `initialize` negotiated, the log
//! level, resource subscriptions, and the server→client requests awaiting an answer.
//!
//! A stdio process has one session; on Streamable HTTP every `Mcp-Session-Id` has one.

use crate::util::lock;
use duomcp_schema::{ClientCapabilities, ErrorObject, Implementation, LoggingLevel, RequestId};
use serde_json::value::RawValue;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// Bytes of one encoded message (no newline, no SSE framing).
pub(crate) type Frame = Vec<u8>;
/// Where a request's related messages go (progress, logs, server→client requests).
pub(crate) type Sink = mpsc::Sender<Frame>;

type Answer = Result<Box<RawValue>, ErrorObject>;

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
    pending: Mutex<HashMap<RequestId, oneshot::Sender<Answer>>>,
    next_id: AtomicI64,
    /// Messages not tied to a request (list_changed, resources/updated).
    pub(crate) unrelated: Sink,
}

impl Session {
    pub(crate) fn new(unrelated: Sink) -> Arc<Self> {
        Arc::new(Session {
            state: Mutex::default(),
            pending: Mutex::default(),
            next_id: AtomicI64::new(0),
            unrelated,
        })
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

    /// Reserves an id for a server→client request and the slot its answer arrives in.
    pub(crate) fn register_request(&self) -> (RequestId, oneshot::Receiver<Answer>) {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        let id = RequestId::String(format!("s-{n}"));
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id.clone(), tx);
        (id, rx)
    }

    pub(crate) fn forget_request(&self, id: &RequestId) {
        lock(&self.pending).remove(id);
    }

    /// Delivers a client's response; `false` when no request with that id is waiting.
    pub(crate) fn complete_request(&self, id: &RequestId, answer: Answer) -> bool {
        match lock(&self.pending).remove(id) {
            Some(tx) => tx.send(answer).is_ok(),
            None => false,
        }
    }
}
