//! The client's two era adapters, with one small surface: everything the client does
//! differently in 2025-11-25 and 2026-07-28, and nothing else.
//!
//! [`legacy::Legacy`] (2025-11-25) and [`modern::Modern`] (2026-07-28) implement [`Adapter`],
//! mirroring the server's `server/dispatch/adapter.rs`. [`of`] is the one place that picks
//! an adapter for an era; the rest of the client (the engine, the `Client` methods, the
//! handshake choice in `negotiate.rs`) calls the adapter and never matches on the era.
//! The adapters decide and never act: they say what to send (a request, a notification, a
//! handshake's parameters) and what an answer means, and the engine (`engine/`) sends it and
//! reads the answer. They do not import the engine, so the two are not an import circle.
//!
//! | | surface |
//! |---|---|
//! | connect | [`legacy::initialize_params`] / [`legacy::accept_initialize`], [`modern::accept_discover`] (run by `engine/handshake.rs`, chosen by `negotiate::connect`); [`Adapter::handshake_after_restart`] |
//! | a request's envelope | [`Adapter::envelope`] (`_meta`), [`Adapter::mirrors_headers`] (`Mcp-Param-*`) |
//! | capabilities | [`Adapter::capabilities`] |
//! | input requests | [`Adapter::input_in_rounds`]: MRTR rounds, or the server's own requests |
//! | era-only requests | [`Adapter::ping_method`], [`Adapter::set_log_level`], [`Adapter::roots_changed`] |
//! | notifications | [`Adapter::listen`] ([`Listen`]) |
//!
//! Tasks (`client/tasks.rs`) are the one exception: a [`TaskHandle`](super::TaskHandle)
//! carries its era and its state machine differs per revision in every step (see that file's
//! header).

pub(crate) mod legacy;
pub(crate) mod modern;

use super::error::ClientError;
use super::handlers::Handlers;
use super::options::RequestOptions;
use crate::era::Era;
pub(crate) use duomcp_proto::era::modern::RequestMeta;
use duomcp_schema::{ClientCapabilities, Implementation, LoggingLevel, ServerCapabilities};
use serde_json::{Map, Value};
use std::sync::Mutex;

/// What the handshake (`initialize` or `server/discover`) established.
#[derive(Debug, Clone)]
pub(crate) struct Negotiated {
    pub era: Era,
    pub protocol_version: String,
    pub capabilities: ServerCapabilities,
    pub server_info: Option<Implementation>,
    pub instructions: Option<String>,
}

/// The era and version a request is sent in (the negotiated ones, or those being probed).
#[derive(Debug, Clone)]
pub(crate) struct Speak {
    pub era: Era,
    pub version: String,
}

/// What of the client an adapter reads to build a request's envelope (the engine lends it).
pub(crate) struct Local<'a> {
    pub handlers: &'a Handlers,
    pub info: &'a Implementation,
    /// `info` serialized already.
    pub info_json: Option<&'a serde_json::value::RawValue>,
    /// The level set with `Client::set_log_level`.
    pub log_level: &'a Mutex<Option<LoggingLevel>>,
}

/// A message an adapter asks the engine to send.
#[derive(Debug)]
pub(crate) struct Outbound {
    pub method: &'static str,
    pub params: Map<String, Value>,
}

/// How a subscription to changes is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listen {
    /// In the session: `resources/subscribe` per resource, the session's notifications for
    /// the lists (2025-11-25).
    InSession,
    /// A `subscriptions/listen` request whose stream carries the changes (2026-07-28).
    ListenRequest,
}

/// One revision of MCP, as the client sees it.
pub(crate) trait Adapter: Send + Sync {
    /// The capabilities the client declares in this era (in `initialize`, or in every
    /// request's `_meta`), from the registered handlers.
    fn capabilities(&self, handlers: &Handlers) -> ClientCapabilities;

    /// What this era puts into every request's `_meta` (2026-07-28: version, capabilities,
    /// client info, log level), next to `caller`, the caller's own keys (a capabilities key
    /// there wins over the client's own).
    fn request_meta<'a>(
        &self,
        local: &Local<'a>,
        method: &str,
        version: &'a str,
        opts: &RequestOptions,
        caller: &dyn Fn(&str) -> bool,
    ) -> RequestMeta<'a>;

    /// Whether `tools/call` mirrors `x-mcp-header` arguments into `Mcp-Param-*` headers (over
    /// a transport that has headers).
    fn mirrors_headers(&self) -> bool;

    /// Whether the server may send requests of its own (2025-11-25: elicitation, sampling,
    /// roots, `ping`, the tasks the client hosts), which the client answers; a 2026-07-28
    /// server must not, and its requests are ignored.
    fn serves_server_requests(&self) -> bool;

    /// The request that checks the server answers (`ping`; 2026-07-28 has none, so
    /// `server/discover`).
    fn ping_method(&self) -> &'static str;

    /// The request that tells the server the log level just set (`logging/setLevel`), if this
    /// era has one (2026-07-28 sends it in the `_meta` of later requests instead).
    fn set_log_level(&self, level: LoggingLevel) -> Result<Option<Outbound>, ClientError>;

    /// The notification that tells the server the roots changed, if this era has one.
    fn roots_changed(&self) -> Option<&'static str>;

    /// How a subscription to changes is opened.
    fn listen(&self) -> Listen;

    /// Whether a restart of the server by the transport calls for a new handshake
    /// (2025-11-25: the session is gone).
    fn handshake_after_restart(&self) -> bool;
}

/// The adapter of `era`: the one place the client matches on the era.
pub(crate) fn of(era: Era) -> &'static dyn Adapter {
    match era {
        Era::Legacy => &legacy::Legacy,
        Era::Modern => &modern::Modern,
    }
}
