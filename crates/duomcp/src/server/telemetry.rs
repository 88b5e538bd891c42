//! The server runtime's hooks into [`otel`](crate::otel) (feature `otel`).
//!
//! With the feature off every type here is empty and every function an inline no-op, so the
//! dispatch entry, the transports and the tasks runtime call them unconditionally and nothing
//! of OpenTelemetry is compiled in.

use super::envelope::{Reply, RequestEnv};
use super::Shared;
use crate::era::Era;
use crate::jsonrpc::IncomingRequest;
use std::future::Future;

/// The telemetry a server was built with, if any.
#[derive(Clone, Default)]
pub(crate) struct Slot(#[cfg(feature = "otel")] pub Option<crate::otel::Telemetry>);

/// The telemetry of one request: its span (current while it runs), duration and audit line.
pub(crate) struct Call(#[cfg(feature = "otel")] Option<crate::otel::ServerCall>);

impl Call {
    /// Whether [`start`](Self::start) reads the request's `_meta` (the server has telemetry).
    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    #[inline]
    pub(crate) fn reads_meta(shared: &Shared) -> bool {
        #[cfg(feature = "otel")]
        if shared.telemetry.0.is_some() {
            return true;
        }
        false
    }

    /// Starts the request's span when the server has telemetry.
    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    #[inline]
    pub(crate) fn start<'m>(
        shared: &Shared,
        req: &IncomingRequest,
        era: Era,
        meta: impl FnOnce() -> Option<&'m str>,
        env: &RequestEnv,
    ) -> Self {
        #[cfg(feature = "otel")]
        if let Some(t) = &shared.telemetry.0 {
            let session_version = env
                .session
                .as_ref()
                .filter(|_| era.has_sessions())
                .and_then(|s| s.negotiated())
                .map(|n| n.protocol_version);
            let target = super::middleware::target_of(req.params.as_ref().map(|p| p.get()));
            // Only registered tools and prompts become metric label values.
            let known_target = match (req.method.as_str(), target.as_deref()) {
                ("tools/call", Some(name)) => shared.registry().tools.contains_key(name),
                ("prompts/get", Some(name)) => shared.registry().prompts.contains_key(name),
                _ => false,
            };
            let info = crate::otel::server::RequestInfo {
                known_target,
                method: &req.method,
                id: req.id.to_string(),
                target,
                meta: meta(),
                params: req.params.as_ref().map(|p| p.get()),
                era_version: era.sole_version(),
                session_version: session_version.as_deref(),
                http: env.trace.0.as_deref(),
                principal: env.principal.as_deref(),
            };
            return Call(Some(crate::otel::ServerCall::start(t, info)));
        }
        Call(
            #[cfg(feature = "otel")]
            None,
        )
    }

    /// Runs `work` with the request's span as the current context.
    #[inline]
    pub(crate) fn scope<F: Future>(&self, work: F) -> impl Future<Output = F::Output> {
        #[cfg(feature = "otel")]
        {
            crate::otel::in_context(self.0.as_ref().map(|call| call.context()), work)
        }
        #[cfg(not(feature = "otel"))]
        work
    }

    /// Ends the span with the reply's outcome.
    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    #[inline]
    pub(crate) fn finish(self, era: Era, reply: &Reply) {
        #[cfg(feature = "otel")]
        if let Some(call) = self.0 {
            let object = reply.error.as_ref().map(|e| era.error_object(e));
            call.finish(crate::otel::outcome::Outcome {
                error: object.as_ref().map(|o| (o.code.into(), o.message.as_str())),
                tool_error: reply.is_error,
                cancelled: false,
            });
        }
    }
}

/// Counts a session while it is open and records its duration (stdio connection, 2025-11-25
/// HTTP session).
pub(crate) struct SessionGuard(
    // Held for its `Drop`, which ends the session's count.
    #[cfg(feature = "otel")]
    #[allow(dead_code)]
    Option<crate::otel::server::SessionCall>,
);

impl SessionGuard {
    /// Opens the session's count when the server has telemetry.
    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    #[inline]
    pub(crate) fn open(shared: &Shared) -> Self {
        SessionGuard(
            #[cfg(feature = "otel")]
            shared
                .telemetry
                .0
                .as_ref()
                .map(crate::otel::server::SessionCall::open),
        )
    }
}

/// Counts a 2025-11-25 `GET` stream in `duomcp.server.listen_streams.active` while it is open
/// (2026-07-28 `subscriptions/listen` streams are counted by their request's [`Call`]).
#[cfg_attr(not(feature = "http-server"), allow(dead_code))]
pub(crate) struct ListenGuard(
    // Held for its `Drop`, which ends the stream's count.
    #[cfg(feature = "otel")]
    #[allow(dead_code)]
    Option<crate::otel::server::ListenCount>,
);

impl ListenGuard {
    #[cfg(feature = "http-server")]
    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    #[inline]
    pub(crate) fn open(shared: &Shared) -> Self {
        ListenGuard(
            #[cfg(feature = "otel")]
            shared
                .telemetry
                .0
                .as_ref()
                .map(crate::otel::server::ListenCount::open),
        )
    }
}

/// `work`, run in the current trace context wherever it is polled (a spawned task).
#[inline]
pub(crate) fn in_current_context<F: Future>(work: F) -> impl Future<Output = F::Output> {
    #[cfg(feature = "otel")]
    {
        use opentelemetry::context::FutureExt as _;
        work.with_current_context()
    }
    #[cfg(not(feature = "otel"))]
    work
}

/// A task was created by the current request (for the links of its later requests).
#[cfg_attr(not(feature = "otel"), allow(unused_variables))]
#[inline]
pub(crate) fn task_created(slot: &Slot, id: &str) {
    #[cfg(feature = "otel")]
    if let Some(t) = &slot.0 {
        crate::otel::server::task_created(t, id, "working");
    }
}

/// A task moved from one status to another.
#[cfg_attr(not(feature = "otel"), allow(unused_variables))]
#[inline]
pub(crate) fn task_moved(slot: &Slot, from: &'static str, to: &'static str) {
    #[cfg(feature = "otel")]
    if let Some(t) = &slot.0 {
        if from != to {
            crate::otel::server::task_moved(t, from, to);
        }
    }
}

/// The client span of a server→client request (2025-11-25 elicitation, sampling, roots),
/// child of the current request's span; its context goes into `params._meta`.
pub(crate) struct Outgoing(#[cfg(feature = "otel")] Option<crate::otel::ClientCall>);

impl Outgoing {
    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    #[inline]
    pub(crate) fn start(
        shared: &Shared,
        method: &str,
        id: &duomcp_schema::RequestId,
        version: Option<&str>,
        params: &mut serde_json::Value,
    ) -> Self {
        #[cfg(feature = "otel")]
        if let Some(t) = &shared.telemetry.0 {
            let call = crate::otel::ClientCall::start(
                t,
                method,
                id.to_string(),
                None,
                version,
                "pipe",
                None,
            );
            if let serde_json::Value::Object(p) = params {
                call.inject_params(p);
            }
            return Outgoing(Some(call));
        }
        Outgoing(
            #[cfg(feature = "otel")]
            None,
        )
    }

    /// Ends the span: answered (`Ok`), or the error's code, or no answer.
    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    #[inline]
    pub(crate) fn finish(self, answered: Result<(), Option<(i64, &str)>>) {
        #[cfg(feature = "otel")]
        if let Some(call) = self.0 {
            use crate::otel::client::ClientOutcome;
            call.finish(match answered {
                Ok(()) => ClientOutcome::Ok { tool_error: false },
                Err(Some((code, message))) => ClientOutcome::Rpc { code, message },
                Err(None) => ClientOutcome::Failed("_OTHER"),
            });
        }
    }
}
