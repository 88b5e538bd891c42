//! From a decoded request to an encoded reply.
//!
//! * this module, the entry: a request, notification or response from a transport; the era
//!   (when the transport did not know it), the `mcp.request` span, the middleware stack;
//! * [`table`]: the method table, every method both revisions have written once against
//! * [`adapter`]: the surface of an era, which [`legacy`] (2025-11-25) and [`modern`]
//!   (2026-07-28) implement: admitting a request and building its `Context`, the era's own
//!   methods, MRTR input, task plans, result shaping;
//! * [`lists`]: the four list methods; [`capabilities`]: what the server advertises;
//!   [`events`]: server events as the notifications both eras send.
//!
//! Invoking the application (scopes, schema checks, the handler call) is
//! [`invoke`](super::invoke), which tasks use too. Nothing here calls a transport.

mod adapter;
mod capabilities;
mod events;
mod legacy;
mod lists;
mod modern;
mod table;

use super::context::{Context, Inner};
pub(crate) use super::envelope::{error_reply, result_reply, Reply, RequestEnv};
use super::middleware::{self, McpRequest, McpResponse};
use super::params::ParamsIndex;
use super::session::{Session, Sink};
use super::telemetry;
use super::Shared;
use crate::era::modern::{names_version, MetaFields};
use crate::era::{self, Era, ProtocolError};
use crate::jsonrpc::{self, IncomingNotification, IncomingRequest, IncomingResponse};
use crate::util::catch_unwind;
use duomcp_schema::methods::{self, NotificationMethod};
use duomcp_schema::{ClientCapabilities, Implementation, LoggingLevel, ProgressToken, RequestId};
#[cfg(feature = "http-server")]
pub(crate) use legacy::follow_events;
pub(crate) use modern::meta_server_info;
use serde::Deserialize;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

/// A request's `_meta`, read once by [`handle_request`] for whoever needs it next.
pub(super) type ReadMeta<'a> = Option<Result<MetaFields<'a>, serde_json::Error>>;

/// The era of a request that arrived without a transport hint (stdio, in-process): what its
/// body says, read by [`era::detect`](crate::era::detect).
fn detect_era(method: &str, meta_raw: Option<&str>, fields: &ReadMeta<'_>) -> Era {
    let meta_names_version = || match fields {
        None => false,
        Some(Ok(fields)) => fields.has_version(),
        // Malformed `_meta`: a version key of any type still marks it as 2026-07-28 (whose
        // validation then says what is wrong).
        Some(Err(_)) => meta_raw.is_some_and(names_version),
    };
    let signals = era::Signals {
        method: Some(method),
        version_header: None,
        meta_names_version,
        names_session: false,
    };
    // Without a header no era is undecided; legacy is what a body without `_meta` speaks.
    era::detect(signals).unwrap_or(Era::UNMARKED)
}

/// Handles one request; `None` when it was cancelled (no response may be sent then).
pub(crate) async fn handle_request(
    shared: Arc<Shared>,
    req: IncomingRequest,
    env: RequestEnv,
) -> Option<Reply> {
    let cancel = env.cancel.clone();
    tokio::select! {
        biased;
        _ = cancel.cancelled() => None,
        reply = answer_request(shared, req, env) => Some(reply),
    }
}

/// Handles one request without watching its cancellation token (the handler still sees it).
///
/// The transports run it through [`driver::start`](crate::server::driver::start), which polls
/// it once where the request was read: a cancellation cannot arrive during that poll, so only
/// an answer that has to wait is raced against `env.cancel` (as [`handle_request`] does),
/// which saves registering a waiter on the token for every request that completes at once.
pub(crate) async fn answer_request(
    shared: Arc<Shared>,
    req: IncomingRequest,
    env: RequestEnv,
) -> Reply {
    let id = req.id.clone();
    let hint = env.era_hint;
    // The request's future is built in the argument of `catch_unwind`, not in a local moved
    // into it: a local would keep its own slot, of the whole future's size, in this future.
    let outcome = catch_unwind(async move {
        // Cloned out of the lock: a layered stack may be polled by many requests at once.
        let layered = shared
            .middleware
            .as_ref()
            .map(|m| m.lock().unwrap_or_else(|p| p.into_inner()).clone());
        if let Some(stack) = layered {
            return answer_layered(shared, req, env, stack).await;
        }
        // The members of `params`, read once: `_meta` decides the era when the transport did
        // not, a 2026-07-28 request is validated from it, and the typed parameters are built
        // from the others. A `_meta` the transport validated already needs no reading here.
        let wants_fields = match (hint, &env.validated_meta) {
            (Some(era), _) if !era.carries_meta() => false,
            (_, Some(_)) => false,
            _ => true,
        };
        // Where its fields are wanted and nothing needs its raw text (telemetry reads it),
        // `_meta` is read in the same pass as the members.
        let mut fields: ReadMeta<'_> = None;
        let read = if !wants_fields {
            ParamsIndex::read(req.params.as_ref())
        } else if telemetry::Call::reads_meta(&shared) {
            ParamsIndex::read(req.params.as_ref()).map(|mut params| {
                fields = params.take_meta();
                params
            })
        } else {
            ParamsIndex::read_with_meta(req.params.as_ref(), &mut fields)
        };
        let params = match read {
            Ok(params) => params,
            Err(e) => return invalid_params_reply(hint.unwrap_or(Era::UNMARKED), &req.id, &e),
        };
        let era = hint.unwrap_or_else(|| detect_era(&req.method, params.meta(), &fields));
        // OpenTelemetry (feature `otel`): a no-op without the feature or without telemetry.
        let call = telemetry::Call::start(&shared, &req, era, || params.meta_text(), &env);
        let span = request_span(&req, era);
        let started = (!span.is_disabled()).then(std::time::Instant::now);
        let reply = call
            .scope(route(shared, &req, era, &params, fields, env))
            .instrument(span.clone())
            .await;
        record_outcome(&span, era, &reply, started);
        call.finish(era, &reply);
        reply
    })
    .await;
    match outcome {
        Ok(reply) => reply,
        Err(panic) => {
            tracing::error!(request = %id, "handler panicked: {panic}");
            error_reply(
                hint.unwrap_or(Era::UNMARKED),
                &id,
                ProtocolError::Internal("Internal error: the handler panicked".into()),
            )
        }
    }
}

/// [`answer_request`] through the middleware stack, which owns the request: its members are
/// read by [`route_owned`] after the layers, and before them only when the transport did not
/// say the era (which `_meta` then decides) or telemetry reads the request's `_meta`.
async fn answer_layered(
    shared: Arc<Shared>,
    req: IncomingRequest,
    env: RequestEnv,
    stack: middleware::McpService,
) -> Reply {
    let (era, call) = match env.era_hint {
        Some(era) if !telemetry::Call::reads_meta(&shared) => (
            era,
            telemetry::Call::start(&shared, &req, era, || None, &env),
        ),
        hint => {
            let mut params = match ParamsIndex::read(req.params.as_ref()) {
                Ok(params) => params,
                Err(e) => return invalid_params_reply(hint.unwrap_or(Era::UNMARKED), &req.id, &e),
            };
            let meta_text = params.meta_text();
            let era = hint.unwrap_or_else(|| {
                let fields: ReadMeta<'_> = match &env.validated_meta {
                    Some(_) => None,
                    None => params.take_meta(),
                };
                detect_era(&req.method, params.meta(), &fields)
            });
            (
                era,
                telemetry::Call::start(&shared, &req, era, || meta_text, &env),
            )
        }
    };
    let span = request_span(&req, era);
    let started = (!span.is_disabled()).then(std::time::Instant::now);
    let id = req.id.clone();
    let request = McpRequest::new(shared, req, env, era);
    let response = call
        .scope(stack.oneshot(request))
        .instrument(span.clone())
        .await;
    let reply = response
        .unwrap_or_else(|e| McpResponse::error(middleware::error_from_box(e)))
        .into_reply(era, &id);
    record_outcome(&span, era, &reply, started);
    call.finish(era, &reply);
    reply
}

/// The answer to `params` that are not a JSON object of members.
fn invalid_params_reply(era: Era, id: &RequestId, e: &serde_json::Error) -> Reply {
    error_reply(
        era,
        id,
        ProtocolError::InvalidParams(format!("Invalid params: {e}")),
    )
}

/// Runs one request of a known era through the method table, with that era's adapter: the
/// one place the server's dispatch matches on the era.
async fn route(
    shared: Arc<Shared>,
    req: &IncomingRequest,
    era: Era,
    params: &ParamsIndex<'_>,
    fields: ReadMeta<'_>,
    env: RequestEnv,
) -> Reply {
    match era {
        Era::Modern => table::run::<modern::Modern>(&shared, req, params, fields, env).await,
        Era::Legacy => table::run::<legacy::Legacy>(&shared, req, params, fields, env).await,
    }
}

/// [`route`] for a request that went through middleware (which owns it).
async fn route_owned(
    shared: Arc<Shared>,
    req: IncomingRequest,
    env: RequestEnv,
    era: Era,
) -> Reply {
    // The request went into middleware as an owned value, so its members are read again here.
    let mut params = match ParamsIndex::read(req.params.as_ref()) {
        Ok(params) => params,
        Err(e) => return invalid_params_reply(era, &req.id, &e),
    };
    let fields = match (era, &env.validated_meta) {
        (era, None) if era.carries_meta() => params.take_meta(),
        _ => None,
    };
    route(shared.clone(), &req, era, &params, fields, env).await
}

/// The `mcp.request` span: method, era and request id now; `target` (tool or prompt name,
/// resource URI) when tracing is on; `outcome` and `error_code` when the request finishes.
fn request_span(req: &IncomingRequest, era: Era) -> tracing::Span {
    let span = tracing::info_span!(
        "mcp.request",
        method = %req.method,
        era = era.tag(),
        request_id = %req.id,
        target = tracing::field::Empty,
        outcome = tracing::field::Empty,
        error_code = tracing::field::Empty,
    );
    if !span.is_disabled() {
        if let Some(target) = middleware::target_of(req.params.as_ref().map(|p| p.get())) {
            span.record("target", &*target);
        }
    }
    span
}

/// Records how the request ended: `ok`, `isError` (a tool result reporting failure), or
/// `error` with the JSON-RPC `error_code`; then logs it at debug level, with its duration (the
/// span's fields name method, target, era and request id).
fn record_outcome(
    span: &tracing::Span,
    era: Era,
    reply: &Reply,
    started: Option<std::time::Instant>,
) {
    if span.is_disabled() {
        return;
    }
    let outcome = match &reply.error {
        Some(e) => {
            span.record("error_code", era.error_object(e).code);
            "error"
        }
        None if reply.is_error => "isError",
        None => "ok",
    };
    span.record("outcome", outcome);
    if let Some(started) = started {
        let duration_us = started.elapsed().as_micros() as u64;
        tracing::debug!(parent: span, outcome, duration_us, "mcp request done");
    }
}

/// What the transport must do after a client notification.
pub(crate) enum NotificationAction {
    /// Nothing further.
    None,
    /// Cancel the in-flight request with this id.
    Cancel(RequestId),
}

#[derive(Deserialize)]
struct CancelledParams {
    #[serde(rename = "requestId")]
    request_id: Option<RequestId>,
}

/// Handles a client notification.
pub(crate) fn handle_notification(
    session: Option<&Arc<Session>>,
    n: &IncomingNotification,
) -> NotificationAction {
    let method = n.method.as_str();
    if method == <methods::Cancelled as NotificationMethod>::NAME {
        if let Ok(CancelledParams {
            request_id: Some(id),
        }) = jsonrpc::parse_params::<CancelledParams>(n.params.as_ref().map(|p| p.get()))
        {
            return NotificationAction::Cancel(id);
        }
    } else if method == <methods::Initialized as NotificationMethod>::NAME {
        if let Some(s) = session {
            s.mark_initialized();
        }
    }
    NotificationAction::None
}

/// Routes a client's response to the server→client request waiting for it.
pub(crate) fn handle_response(session: Option<&Arc<Session>>, r: IncomingResponse) {
    let delivered = session.is_some_and(|s| s.correlation().complete(&r.id, r.outcome));
    if !delivered {
        tracing::debug!(id = %r.id, "response to an unknown or expired request ignored");
    }
}

/// What the era found out about the caller, for the request's [`Context`].
pub(super) struct Caller {
    pub era: Era,
    pub protocol_version: Arc<str>,
    pub client_capabilities: Arc<ClientCapabilities>,
    pub client_info: Option<Arc<Implementation>>,
    pub progress_token: Option<ProgressToken>,
    pub log_level: Option<LoggingLevel>,
    pub session: Option<Arc<Session>>,
}

/// The handler's [`Context`] for a request: what the era found out about the caller, and
/// what the transport handed over with the request.
pub(super) fn context(
    shared: &Arc<Shared>,
    id: &RequestId,
    caller: Caller,
    cancel: CancellationToken,
    sink: Sink,
    principal: Option<Arc<crate::server::Principal>>,
    peer: Option<std::net::IpAddr>,
) -> Context {
    Context::new(Inner {
        era: caller.era,
        protocol_version: caller.protocol_version,
        client_capabilities: caller.client_capabilities,
        client_info: caller.client_info,
        request_id: id.clone(),
        progress_token: caller.progress_token,
        log_level: caller.log_level,
        cancel,
        sink,
        session: caller.session,
        shared: shared.clone(),
        input: Default::default(),
        principal,
        peer,
        task: Default::default(),
    })
}

/// The typed params of a request, parsed from its raw text.
pub(super) fn parse<T: serde::de::DeserializeOwned>(
    req: &IncomingRequest,
) -> Result<T, ProtocolError> {
    jsonrpc::parse_params(req.params.as_ref().map(|p| p.get()))
        .map_err(|e| ProtocolError::InvalidParams(e.message))
}

/// The innermost service of a middleware stack: the request runs through the method table.
#[derive(Clone, Copy)]
pub(crate) struct Dispatcher;

impl middleware::Service<McpRequest> for Dispatcher {
    type Response = McpResponse;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<McpResponse, Self::Error>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: McpRequest) -> Self::Future {
        Box::pin(async move {
            let McpRequest {
                shared,
                req,
                env,
                era,
                ..
            } = req;
            Ok(McpResponse::reply(route_owned(shared, req, env, era).await))
        })
    }
}

#[allow(dead_code)]
fn _assert_send(shared: Arc<Shared>, req: IncomingRequest, env: RequestEnv) {
    fn is_send<T: Send>(_: T) {}
    is_send(handle_request(shared, req, env));
}
