//! The server span, metrics and audit line of one request.

use super::audit::AuditEntry;
use super::names::*;
use super::outcome::Outcome;
use super::propagation::{HeaderContext, MetaFields};
use super::Telemetry;
use opentelemetry::trace::{Link, SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};
use serde::Deserialize;
use std::borrow::Cow;
use std::time::{Instant, SystemTime};

/// What the dispatcher knows of a request when it starts.
pub(crate) struct RequestInfo<'a> {
    pub method: &'a str,
    /// Whether `target` names a registered tool or prompt (only those become metric labels).
    pub known_target: bool,
    pub id: String,
    /// The tool or prompt name, or the resource URI.
    pub target: Option<Cow<'a, str>>,
    /// `params._meta`, raw.
    pub meta: Option<&'a str>,
    /// `params`, raw (tool arguments for the audit log, a task's id).
    pub params: Option<&'a str>,
    /// The request's version when its era has only one (2026-07-28), see [`Era::sole_version`](crate::era::Era::sole_version).
    pub era_version: Option<&'static str>,
    /// The protocol version of a 2025-11-25 session, once negotiated.
    pub session_version: Option<&'a str>,
    /// The trace context headers, when the request came over HTTP.
    pub http: Option<&'a HeaderContext>,
    pub principal: Option<&'a duomcp_proto::principal::Principal>,
}

/// One request being served: its span (current while it runs), its clock and its attributes.
pub(crate) struct ServerCall {
    t: Telemetry,
    cx: Context,
    started: Instant,
    metric_attrs: Vec<KeyValue>,
    listen: bool,
    audit: Option<AuditEntry>,
    done: bool,
}

#[derive(Deserialize)]
struct TaskParams<'a> {
    #[serde(borrow, rename = "taskId")]
    task_id: Cow<'a, str>,
}

impl ServerCall {
    /// Starts the span of `r`, child of the context its `_meta` carries (else its HTTP
    /// headers'), and counts it in flight.
    pub(crate) fn start(t: &Telemetry, r: RequestInfo<'_>) -> Self {
        // `_meta` is parsed again only when it carries trace context: a 2026-07-28 `_meta` is
        // mostly capabilities and client info, and reading them per request is most of what a
        // span would cost. Without it the version is the one the era speaks.
        let meta = r
            .meta
            .filter(|m| m.contains("\"traceparent\""))
            .map(MetaFields::read)
            .unwrap_or_default();
        let era_version = r.era_version;
        let header_cx = r.http.and_then(HeaderContext::context);
        let mut links = Vec::new();
        let parent = if meta.has_trace() {
            let cx = meta.context();
            if let Some(h) = &header_cx {
                let hs = h.span().span_context().clone();
                if hs.is_valid() && hs != *cx.span().span_context() {
                    links.push(Link::with_context(hs));
                }
            }
            cx
        } else {
            header_cx.unwrap_or_default()
        };
        let version = meta
            .version
            .as_deref()
            .or(r.session_version)
            .or(era_version)
            .map(str::to_owned);

        let mut attrs = Vec::with_capacity(12);
        let mut metric_attrs = Vec::with_capacity(5);
        attrs.push(KeyValue::new(MCP_METHOD_NAME, r.method.to_owned()));
        metric_attrs.push(KeyValue::new(MCP_METHOD_NAME, metric_method(r.method)));
        attrs.push(KeyValue::new(JSONRPC_REQUEST_ID, r.id.clone()));
        if let Some(v) = &version {
            attrs.push(KeyValue::new(MCP_PROTOCOL_VERSION, v.clone()));
            metric_attrs.push(KeyValue::new(MCP_PROTOCOL_VERSION, v.clone()));
        }
        if let Some(s) = r.http.and_then(|h| h.session_id.clone()) {
            attrs.push(KeyValue::new(MCP_SESSION_ID, s));
        }
        let transport = if r.http.is_some() { "tcp" } else { "pipe" };
        attrs.push(KeyValue::new(NETWORK_TRANSPORT, transport));
        metric_attrs.push(KeyValue::new(NETWORK_TRANSPORT, transport));
        if r.http.is_some() {
            attrs.push(KeyValue::new(NETWORK_PROTOCOL_NAME, "http"));
        }
        let name = match (r.method, &r.target) {
            ("tools/call", Some(tool)) => {
                attrs.push(KeyValue::new(GEN_AI_TOOL_NAME, tool.to_string()));
                attrs.push(KeyValue::new(GEN_AI_OPERATION_NAME, "execute_tool"));
                metric_attrs.push(KeyValue::new(
                    GEN_AI_TOOL_NAME,
                    metric_name(r.known_target, tool),
                ));
                format!("{} {tool}", r.method)
            }
            ("prompts/get", Some(prompt)) => {
                attrs.push(KeyValue::new(GEN_AI_PROMPT_NAME, prompt.to_string()));
                metric_attrs.push(KeyValue::new(
                    GEN_AI_PROMPT_NAME,
                    metric_name(r.known_target, prompt),
                ));
                format!("{} {prompt}", r.method)
            }
            (m, Some(uri)) if m.starts_with("resources/") => {
                attrs.push(KeyValue::new(MCP_RESOURCE_URI, uri.to_string()));
                m.to_owned()
            }
            (m, _) => m.to_owned(),
        };
        if r.method.starts_with("tasks/") {
            let task = r
                .params
                .and_then(|p| serde_json::from_str::<TaskParams<'_>>(p).ok());
            if let Some(task) = task {
                attrs.push(KeyValue::new(TASK_ID, task.task_id.to_string()));
                if let Some(origin) = t.tasks.get(&task.task_id) {
                    links.push(Link::with_context(origin));
                }
            }
        }
        let span = t
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_start_time(SystemTime::now())
            .with_attributes(attrs)
            .with_links(links)
            .start_with_context(&*t.tracer, &parent);
        let cx = parent.with_span(span);
        t.m.active_requests.add(1, &[]);
        let listen = r.method == "subscriptions/listen";
        if listen {
            t.m.listen_streams.add(1, &[]);
        }
        let audit = match (&t.audit, r.method, &r.target) {
            (Some(log), "tools/call", Some(tool)) => {
                Some(AuditEntry::new(log, tool, &r.id, r.principal, r.params))
            }
            _ => None,
        };
        ServerCall {
            t: t.clone(),
            cx,
            started: Instant::now(),
            metric_attrs,
            listen,
            audit,
            done: false,
        }
    }

    /// The context to run the request in (its span current).
    pub(crate) fn context(&self) -> Context {
        self.cx.clone()
    }

    /// Ends the span with the outcome and records the duration.
    pub(crate) fn finish(mut self, outcome: Outcome<'_>) {
        self.end(outcome);
    }

    fn end(&mut self, outcome: Outcome<'_>) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let elapsed = self.started.elapsed();
        let span = self.cx.span();
        let error_type: Option<Cow<'static, str>> = match outcome.error {
            Some((code, message)) => {
                span.set_attribute(KeyValue::new(RPC_RESPONSE_STATUS_CODE, code.to_string()));
                span.set_status(Status::error(message.to_owned()));
                Some(code.to_string().into())
            }
            None if outcome.tool_error => {
                span.set_status(Status::error(TOOL_ERROR));
                Some(TOOL_ERROR.into())
            }
            None => None,
        };
        if let Some(e) = &error_type {
            span.set_attribute(KeyValue::new(ERROR_TYPE, e.clone()));
            self.metric_attrs.push(KeyValue::new(ERROR_TYPE, e.clone()));
        }
        span.end();
        self.t
            .m
            .server_duration
            .record(elapsed.as_secs_f64(), &self.metric_attrs);
        self.t.m.active_requests.add(-1, &[]);
        if self.listen {
            self.t.m.listen_streams.add(-1, &[]);
        }
        if let (Some(entry), Some(log)) = (self.audit.take(), &self.t.audit) {
            log.write(entry.finish(elapsed, &outcome));
        }
    }
}

impl Drop for ServerCall {
    fn drop(&mut self) {
        // Dropped unfinished: the request was cancelled or its connection went away.
        if !self.done {
            let span = self.cx.span();
            span.set_attribute(KeyValue::new(ERROR_TYPE, CANCELLED));
            self.end(Outcome {
                error: None,
                tool_error: false,
                cancelled: true,
            });
        }
    }
}

/// The server's side of a session (a stdio connection, a 2025-11-25 HTTP session): counted
/// while open, its duration recorded when it ends.
pub(crate) struct SessionCall {
    t: Telemetry,
    started: Instant,
}

impl SessionCall {
    pub(crate) fn open(t: &Telemetry) -> Self {
        t.m.active_sessions.add(1, &[]);
        SessionCall {
            t: t.clone(),
            started: Instant::now(),
        }
    }
}

impl Drop for SessionCall {
    fn drop(&mut self) {
        self.t.m.active_sessions.add(-1, &[]);
        self.t
            .m
            .server_session
            .record(self.started.elapsed().as_secs_f64(), &[]);
    }
}

/// A listen stream that is not a request of its own (a 2025-11-25 `GET` stream), counted while
/// open.
pub(crate) struct ListenCount(Telemetry);

impl ListenCount {
    #[cfg(feature = "http-server")]
    pub(crate) fn open(t: &Telemetry) -> Self {
        t.m.listen_streams.add(1, &[]);
        ListenCount(t.clone())
    }
}

impl Drop for ListenCount {
    fn drop(&mut self) {
        self.0.m.listen_streams.add(-1, &[]);
    }
}

/// Remembers the current span as the one that created task `id` (for the links of its later
/// requests).
pub(crate) fn task_created(t: &Telemetry, id: &str, status: &'static str) {
    let cx = Context::current();
    t.tasks.put(id, cx.span().span_context().clone());
    t.m.tasks.add(1, &[KeyValue::new(TASK_STATUS, status)]);
}

/// A task moved from one status to another.
pub(crate) fn task_moved(t: &Telemetry, from: &'static str, to: &'static str) {
    t.m.tasks.add(-1, &[KeyValue::new(TASK_STATUS, from)]);
    t.m.tasks.add(1, &[KeyValue::new(TASK_STATUS, to)]);
}

/// The metric label value of anything a client names that is not known: as the OpenTelemetry
/// HTTP conventions do for methods, so that a client cannot make one series per name.
pub(crate) const OTHER: &str = "_OTHER";

/// A tool or prompt name as a metric label value: itself when registered, else [`OTHER`].
fn metric_name(known: bool, name: &str) -> String {
    if known {
        name.to_owned()
    } else {
        OTHER.to_owned()
    }
}

/// The MCP request methods that become metric label values; any other is [`OTHER`].
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "subscriptions/listen",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/cancel",
    "tasks/update",
];

/// A request method as a metric label value: itself when it is an MCP method, else [`OTHER`].
fn metric_method(method: &str) -> &'static str {
    KNOWN_METHODS
        .iter()
        .find(|m| **m == method)
        .copied()
        .unwrap_or(OTHER)
}
