//! The client runtime's hooks into [`otel`](crate::otel) (feature `otel`).
//!
//! With the feature off every type here is empty and every function an inline no-op: the
//! engine calls them unconditionally and nothing of OpenTelemetry is compiled in.

use super::error::ClientError;
use crate::jsonrpc::{ErrorObject, IncomingRequest, RequestId};
use serde_json::{Map, Value};
use std::future::Future;

/// The telemetry a client was built with (and its session's clock), if any.
#[derive(Default)]
pub(crate) struct Slot {
    #[cfg(feature = "otel")]
    t: Option<crate::otel::Telemetry>,
    #[cfg(feature = "otel")]
    _session: Option<crate::otel::client::ClientSession>,
}

impl Slot {
    /// The slot of a client being connected (starts its session's clock).
    #[cfg(feature = "otel")]
    pub(crate) fn open(t: Option<crate::otel::Telemetry>) -> Self {
        let session = t.as_ref().map(crate::otel::client::ClientSession::open);
        Slot {
            t,
            _session: session,
        }
    }
}

/// The span of the previous round of a multi-round-trip request, for the next round's link.
#[derive(Default)]
pub(crate) struct Rounds(#[cfg(feature = "otel")] Option<opentelemetry::trace::SpanContext>);

/// One outgoing request's client span.
pub(crate) struct Call(#[cfg(feature = "otel")] Option<crate::otel::ClientCall>);

impl Call {
    /// Starts the span (child of the current context) and writes its context into
    /// `params._meta`.
    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    #[inline]
    pub(crate) fn start(
        slot: &Slot,
        method: &str,
        id: &RequestId,
        params: &mut Map<String, Value>,
        version: &str,
        http: bool,
        rounds: &mut Rounds,
    ) -> Self {
        #[cfg(feature = "otel")]
        if let Some(t) = &slot.t {
            let target = params
                .get("name")
                .or_else(|| params.get("uri"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let call = crate::otel::ClientCall::start(
                t,
                method,
                id.to_string(),
                target.as_deref(),
                Some(version),
                if http { "tcp" } else { "pipe" },
                rounds.0.take(),
            );
            call.inject_params(params);
            rounds.0 = Some(call.span_context());
            return Call(Some(call));
        }
        Call(
            #[cfg(feature = "otel")]
            None,
        )
    }

    /// The span's context as HTTP headers (`traceparent`, `tracestate`); empty without one.
    #[inline]
    pub(crate) fn headers(&self) -> Vec<(String, String)> {
        #[cfg(feature = "otel")]
        if let Some(call) = &self.0 {
            return call.headers();
        }
        Vec::new()
    }

    /// Ends the span with the request's outcome.
    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    #[inline]
    pub(crate) fn finish(self, result: &Result<Value, ClientError>) {
        self.finish_with(result, |v| {
            v.get("isError").and_then(Value::as_bool) == Some(true)
        })
    }

    /// [`finish`](Self::finish) for a result kept as the server's JSON text (read only when
    /// there is a span to end).
    #[inline]
    pub(crate) fn finish_raw(self, result: &Result<Box<serde_json::value::RawValue>, ClientError>) {
        self.finish_with(result, |raw| {
            #[derive(serde::Deserialize)]
            struct IsError {
                #[serde(rename = "isError", default)]
                is_error: Option<bool>,
            }
            serde_json::from_str::<IsError>(raw.get()).is_ok_and(|r| r.is_error == Some(true))
        })
    }

    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    #[inline]
    fn finish_with<T>(self, result: &Result<T, ClientError>, tool_error: impl FnOnce(&T) -> bool) {
        #[cfg(feature = "otel")]
        if let Some(call) = self.0 {
            use crate::otel::client::ClientOutcome;
            call.finish(match result {
                Ok(v) => ClientOutcome::Ok {
                    tool_error: tool_error(v),
                },
                Err(ClientError::Rpc { error, .. }) => ClientOutcome::Rpc {
                    code: error.code.into(),
                    message: &error.message,
                },
                Err(ClientError::Timeout { .. }) => ClientOutcome::Failed("timeout"),
                Err(_) => ClientOutcome::Failed("_OTHER"),
            });
        }
    }
}

/// The span of a server→client request the client answers (kind `SERVER`), child of the
/// context in its `_meta`.
pub(crate) struct Incoming(#[cfg(feature = "otel")] Option<crate::otel::IncomingCall>);

impl Incoming {
    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    #[inline]
    pub(crate) fn start(slot: &Slot, req: &IncomingRequest) -> Self {
        #[cfg(feature = "otel")]
        if let Some(t) = &slot.t {
            return Incoming(Some(crate::otel::IncomingCall::start(
                t,
                &req.method,
                req.id.to_string(),
                req.params.as_ref().map(|p| p.get()),
            )));
        }
        Incoming(
            #[cfg(feature = "otel")]
            None,
        )
    }

    /// Runs `work` with the span as the current context.
    #[inline]
    pub(crate) fn scope<F: Future>(&self, work: F) -> impl Future<Output = F::Output> {
        #[cfg(feature = "otel")]
        {
            crate::otel::in_context(self.0.as_ref().map(|call| call.context()), work)
        }
        #[cfg(not(feature = "otel"))]
        work
    }

    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    #[inline]
    pub(crate) fn finish(self, outcome: &Result<Value, ErrorObject>) {
        #[cfg(feature = "otel")]
        if let Some(call) = self.0 {
            call.finish(
                outcome
                    .as_ref()
                    .err()
                    .map(|e| (e.code.into(), e.message.as_str())),
            );
        }
    }
}
