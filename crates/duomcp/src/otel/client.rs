//! The client span and metrics of one outgoing request (from a client, or a server→client
//! request from a server).

use super::names::*;
use super::propagation;
use super::Telemetry;
use opentelemetry::trace::{
    Link, SpanContext, SpanKind, Status, TraceContextExt as _, Tracer as _,
};
use opentelemetry::{Context, KeyValue};
use serde_json::{Map, Value};
use std::time::Instant;

/// One outgoing request: its span (child of the current context) and its clock.
pub(crate) struct ClientCall {
    t: Telemetry,
    cx: Context,
    started: Instant,
    metric_attrs: Vec<KeyValue>,
    done: bool,
}

/// How an outgoing request ended.
pub(crate) enum ClientOutcome<'a> {
    Ok {
        tool_error: bool,
    },
    Rpc {
        code: i64,
        message: &'a str,
    },
    /// No answer: `error.type` (`timeout`, `closed`, `_OTHER`…).
    Failed(&'static str),
}

impl ClientCall {
    /// Starts a client span for `method` (`target`: the tool or prompt name, or resource URI),
    /// linked to `previous` (the round before, for MRTR).
    pub(crate) fn start(
        t: &Telemetry,
        method: &str,
        id: String,
        target: Option<&str>,
        version: Option<&str>,
        transport: &'static str,
        previous: Option<SpanContext>,
    ) -> Self {
        let mut attrs = Vec::with_capacity(8);
        let mut metric_attrs = Vec::with_capacity(4);
        attrs.push(KeyValue::new(MCP_METHOD_NAME, method.to_owned()));
        metric_attrs.push(KeyValue::new(MCP_METHOD_NAME, method.to_owned()));
        attrs.push(KeyValue::new(JSONRPC_REQUEST_ID, id));
        if let Some(v) = version {
            attrs.push(KeyValue::new(MCP_PROTOCOL_VERSION, v.to_owned()));
            metric_attrs.push(KeyValue::new(MCP_PROTOCOL_VERSION, v.to_owned()));
        }
        attrs.push(KeyValue::new(NETWORK_TRANSPORT, transport));
        let name = match (method, target) {
            ("tools/call", Some(tool)) => {
                attrs.push(KeyValue::new(GEN_AI_TOOL_NAME, tool.to_owned()));
                attrs.push(KeyValue::new(GEN_AI_OPERATION_NAME, "execute_tool"));
                metric_attrs.push(KeyValue::new(GEN_AI_TOOL_NAME, tool.to_owned()));
                format!("{method} {tool}")
            }
            ("prompts/get", Some(prompt)) => {
                attrs.push(KeyValue::new(GEN_AI_PROMPT_NAME, prompt.to_owned()));
                metric_attrs.push(KeyValue::new(GEN_AI_PROMPT_NAME, prompt.to_owned()));
                format!("{method} {prompt}")
            }
            (m, Some(uri)) if m.starts_with("resources/") => {
                attrs.push(KeyValue::new(MCP_RESOURCE_URI, uri.to_owned()));
                m.to_owned()
            }
            (m, _) => m.to_owned(),
        };
        let parent = Context::current();
        let links = previous
            .filter(SpanContext::is_valid)
            .map(|p| vec![Link::with_context(p)])
            .unwrap_or_default();
        let span = t
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Client)
            .with_attributes(attrs)
            .with_links(links)
            .start_with_context(&*t.tracer, &parent);
        ClientCall {
            t: t.clone(),
            cx: parent.with_span(span),
            started: Instant::now(),
            metric_attrs,
            done: false,
        }
    }

    /// Writes the span's context into `params._meta`.
    pub(crate) fn inject_params(&self, params: &mut Map<String, Value>) {
        propagation::inject_params(&self.cx, params);
    }

    /// The span's context as HTTP headers.
    #[cfg(feature = "client")]
    pub(crate) fn headers(&self) -> Vec<(String, String)> {
        propagation::header_pairs(&self.cx)
    }

    /// The span's own context (for the next MRTR round's link).
    #[cfg(feature = "client")]
    pub(crate) fn span_context(&self) -> SpanContext {
        self.cx.span().span_context().clone()
    }

    /// Ends the span and records the duration.
    pub(crate) fn finish(mut self, outcome: ClientOutcome<'_>) {
        self.end(outcome);
    }

    fn end(&mut self, outcome: ClientOutcome<'_>) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let span = self.cx.span();
        let error_type: Option<String> = match outcome {
            ClientOutcome::Ok { tool_error: false } => None,
            ClientOutcome::Ok { tool_error: true } => {
                span.set_status(Status::error(TOOL_ERROR));
                Some(TOOL_ERROR.into())
            }
            ClientOutcome::Rpc { code, message } => {
                span.set_attribute(KeyValue::new(RPC_RESPONSE_STATUS_CODE, code.to_string()));
                span.set_status(Status::error(message.to_owned()));
                Some(code.to_string())
            }
            ClientOutcome::Failed(kind) => {
                span.set_status(Status::error(kind));
                Some(kind.into())
            }
        };
        if let Some(e) = error_type {
            span.set_attribute(KeyValue::new(ERROR_TYPE, e.clone()));
            self.metric_attrs.push(KeyValue::new(ERROR_TYPE, e));
        }
        span.end();
        self.t
            .m
            .client_duration
            .record(self.started.elapsed().as_secs_f64(), &self.metric_attrs);
    }
}

impl Drop for ClientCall {
    fn drop(&mut self) {
        self.end(ClientOutcome::Failed(CANCELLED));
    }
}

/// The client's side of a connection: its duration recorded when it closes.
#[cfg(feature = "client")]
pub(crate) struct ClientSession {
    t: Telemetry,
    started: Instant,
}

#[cfg(feature = "client")]
impl ClientSession {
    pub(crate) fn open(t: &Telemetry) -> Self {
        ClientSession {
            t: t.clone(),
            started: Instant::now(),
        }
    }
}

#[cfg(feature = "client")]
impl Drop for ClientSession {
    fn drop(&mut self) {
        self.t
            .m
            .client_session
            .record(self.started.elapsed().as_secs_f64(), &[]);
    }
}

/// A request from the peer that the client answers (a 2025-11-25 server→client request):
/// a `SERVER` span, child of the context in its `_meta`.
#[cfg(feature = "client")]
pub(crate) struct IncomingCall {
    cx: Context,
}

#[cfg(feature = "client")]
impl IncomingCall {
    pub(crate) fn start(t: &Telemetry, method: &str, id: String, params: Option<&str>) -> Self {
        #[derive(serde::Deserialize)]
        struct Params<'a> {
            #[serde(borrow, rename = "_meta")]
            meta: Option<&'a serde_json::value::RawValue>,
        }
        let meta = params
            .and_then(|p| serde_json::from_str::<Params<'_>>(p).ok())
            .and_then(|p| p.meta);
        let fields = meta
            .map(|m| super::propagation::MetaFields::read(m.get()))
            .unwrap_or_default();
        let parent = fields.context();
        let span = t
            .tracer
            .span_builder(method.to_owned())
            .with_kind(SpanKind::Server)
            .with_attributes([
                KeyValue::new(MCP_METHOD_NAME, method.to_owned()),
                KeyValue::new(JSONRPC_REQUEST_ID, id),
            ])
            .start_with_context(&*t.tracer, &parent);
        IncomingCall {
            cx: parent.with_span(span),
        }
    }

    pub(crate) fn context(&self) -> Context {
        self.cx.clone()
    }

    pub(crate) fn finish(self, error: Option<(i64, &str)>) {
        let span = self.cx.span();
        if let Some((code, message)) = error {
            span.set_attribute(KeyValue::new(ERROR_TYPE, code.to_string()));
            span.set_attribute(KeyValue::new(RPC_RESPONSE_STATUS_CODE, code.to_string()));
            span.set_status(Status::error(message.to_owned()));
        }
        span.end();
    }
}
