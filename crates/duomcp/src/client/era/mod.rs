//! The client's two era adapters, with one small surface: everything the client does
//! differently in 2025-11-25 and 2026-07-28, and nothing else.
//!
//! [`legacy::Legacy`] (2025-11-25) and [`modern::Modern`] (2026-07-28) implement [`Adapter`],
//! mirroring the server's `server/dispatch/adapter.rs`. [`of`] is the one place that picks
//! an adapter for an era; the rest of the client (the engine, the `Client` methods, the
//! handshake choice in `negotiate.rs`) calls the adapter and never matches on the era.
//! The adapters call the engine; the engine reaches them only through [`of`].
//!
//! | | surface |
//! |---|---|
//! | connect | [`legacy::initialize`], [`modern::discover`] (chosen by `negotiate::connect`); [`Adapter::after_restart`] |
//! | a request's envelope | [`Adapter::envelope`] (`_meta`), [`Adapter::mirrors_headers`] (`Mcp-Param-*`) |
//! | capabilities | [`Adapter::capabilities`] |
//! | input requests | [`Adapter::input_in_rounds`]: MRTR rounds, or the server's own requests |
//! | era-only requests | [`Adapter::ping_method`], [`Adapter::set_log_level`], [`Adapter::roots_changed`] |
//! | notifications | [`Adapter::listen`] |
//!
//! Tasks (`client/tasks.rs`) are the one exception: a [`TaskHandle`](super::TaskHandle)
//! carries its era and its state machine differs per revision in every step (see that file's
//! header).

pub(crate) mod legacy;
pub(crate) mod modern;

use super::engine::Inner;
use super::error::ClientError;
use super::handlers::Handlers;
use super::notify::Subscription;
use super::options::RequestOptions;
use crate::era::Era;
use duomcp_schema::{ClientCapabilities, LoggingLevel, SubscriptionFilter};
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use std::sync::Arc;

/// One revision of MCP, as the client sees it.
pub(crate) trait Adapter: Send + Sync {
    /// The capabilities the client declares in this era (in `initialize`, or in every
    /// request's `_meta`), from the registered handlers.
    fn capabilities(&self, handlers: &Handlers) -> ClientCapabilities;

    /// Adds what this era puts into every request's `_meta` (2026-07-28: version,
    /// capabilities, client info, log level) to `meta`, which holds the caller's own keys.
    fn envelope(
        &self,
        inner: &Inner,
        method: &str,
        version: &str,
        opts: &RequestOptions,
        meta: &mut Map<String, Value>,
    ) -> Result<(), ClientError>;

    /// Whether `tools/call` mirrors `x-mcp-header` arguments into `Mcp-Param-*` headers (over
    /// a transport that has headers).
    fn mirrors_headers(&self) -> bool;

    /// Whether the server asks for input (elicitation, sampling, roots) with
    /// `input_required` results the client answers by retrying (2026-07-28), rather than
    /// with its own requests to the client (2025-11-25).
    fn input_in_rounds(&self) -> bool;

    /// Whether the server may send requests of its own (2025-11-25: elicitation, sampling,
    /// roots, `ping`, the tasks the client hosts), which the client answers; a 2026-07-28
    /// server must not, and its requests are ignored.
    fn serves_server_requests(&self) -> bool;

    /// The request that checks the server answers (`ping`; 2026-07-28 has none, so
    /// `server/discover`).
    fn ping_method(&self) -> &'static str;

    /// Tells the server the log level just set (`logging/setLevel`), if this era does so
    /// (2026-07-28 sends it in the `_meta` of later requests instead).
    fn set_log_level<'a>(
        &'a self,
        inner: &'a Arc<Inner>,
        level: LoggingLevel,
    ) -> BoxFuture<'a, Result<(), ClientError>>;

    /// Tells the server the roots changed, if this era has the notification.
    fn roots_changed<'a>(&'a self, inner: &'a Arc<Inner>)
        -> BoxFuture<'a, Result<(), ClientError>>;

    /// Opens a subscription to the changes named in `filter`.
    fn listen<'a>(
        &'a self,
        inner: &'a Arc<Inner>,
        filter: SubscriptionFilter,
    ) -> BoxFuture<'a, Result<Subscription, ClientError>>;

    /// What follows a restart of the server by the transport (2025-11-25: a new handshake,
    /// since the session is gone).
    fn after_restart(&self, inner: &Arc<Inner>);
}

/// The adapter of `era`: the one place the client matches on the era.
pub(crate) fn of(era: Era) -> &'static dyn Adapter {
    match era {
        Era::Legacy => &legacy::Legacy,
        Era::Modern => &modern::Modern,
    }
}
