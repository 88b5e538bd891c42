//! From a decoded request to an encoded reply: era detection, method dispatch, era shaping.

use super::context::{Context, Inner};
use super::handler::CallParts;
use super::middleware::{self, McpRequest, McpResponse};
use super::params::ParamsIndex;
use super::request_state::{self, SealedState};
use super::session::{Negotiated, Session, Sink};
use super::{apps, registry, skills, tasks, CachePolicy, HandlerError, ServerEvent, Shared};
use crate::era::modern::MetaFields;
use crate::era::{legacy, modern, Era, ProtocolError};
use crate::jsonrpc::{self, IncomingNotification, IncomingRequest, IncomingResponse};
use crate::schema_check::SchemaViolation;
use crate::server::cursor;
use crate::util::catch_unwind;
use duomcp_schema::methods::{self, NotificationMethod, RequestMethod};
use duomcp_schema::{
    meta, version, CallToolResult, CompleteRequestParams, CompleteResult, GetPromptResult,
    InitializeRequestParams, LoggingLevel, ReadResourceResult, RequestId, ServerCapabilities,
    SubscriptionFilter,
};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

/// What a transport hands the dispatcher along with a request.
pub(crate) struct RequestEnv {
    /// The legacy session (stdio: the connection's; HTTP: the `Mcp-Session-Id`'s).
    pub session: Option<Arc<Session>>,
    /// The era the transport already knows (HTTP headers); `None` lets the body decide.
    pub era_hint: Option<Era>,
    /// A 2026-07-28 request's `_meta`, when the transport validated it already (HTTP, where
    /// the headers are checked against it).
    pub validated_meta: Option<modern::ValidMeta>,
    /// Where progress, logs and server→client requests for this request go.
    pub sink: Sink,
    /// Fires when the client cancels this request.
    pub cancel: CancellationToken,
    /// Fires when the connection or server is shutting down (ends listen streams gracefully).
    pub closing: CancellationToken,
    /// The authenticated caller (HTTP: from the auth layer; stdio: the local user).
    pub principal: Option<Arc<crate::auth::Principal>>,
}

/// The encoded answer to one request.
pub(crate) struct Reply {
    /// The JSON-RPC response (no framing).
    pub frame: Vec<u8>,
    /// The protocol error, when the answer is one (transports map it to a status code).
    #[cfg_attr(not(feature = "http-server"), allow(dead_code))]
    pub error: Option<ProtocolError>,
    /// The answer is a tool result with `isError: true`.
    pub is_error: bool,
}

fn error_object(era: Era, err: &ProtocolError) -> duomcp_schema::ErrorObject {
    match era {
        Era::Legacy => legacy::error_object(err),
        Era::Modern => modern::error_object(err),
    }
}

pub(super) fn error_reply(era: Era, id: &RequestId, err: ProtocolError) -> Reply {
    Reply {
        frame: jsonrpc::encode_error(Some(id), &error_object(era, &err)),
        error: Some(err),
        is_error: false,
    }
}

fn result_reply<T: Serialize>(era: Era, id: &RequestId, result: &T) -> Reply {
    match jsonrpc::encode_result(id, result) {
        Ok(frame) => Reply {
            frame,
            error: None,
            is_error: false,
        },
        Err(e) => error_reply(
            era,
            id,
            ProtocolError::Internal(format!("result could not be encoded: {e}")),
        ),
    }
}

/// A request's `_meta`, read once by [`handle_request`] for whoever needs it next.
type ReadMeta<'a> = Option<Result<MetaFields<'a>, serde_json::Error>>;

/// Decides the era of a request that arrived without a transport hint.
fn detect_era(method: &str, meta_raw: Option<&RawValue>, fields: &ReadMeta<'_>) -> Era {
    if method == <methods::Discover as RequestMethod>::NAME {
        return Era::Modern;
    }
    let has_version = match fields {
        None => false,
        Some(Ok(fields)) => fields.has_version(),
        // Malformed `_meta`: a version key of any type still marks it as 2026-07-28 (whose
        // validation then says what is wrong).
        Some(Err(_)) => meta_raw.is_some_and(|m| modern::names_version(m.get())),
    };
    if has_version {
        Era::Modern
    } else {
        Era::Legacy
    }
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
/// For a transport that polls the answer once where it reads (stdio): a cancellation cannot
/// arrive during that poll, so only an answer that has to wait is raced against
/// `env.cancel` (as [`handle_request`] does), which saves registering a waiter on the token
/// for every request that completes at once.
pub(crate) async fn answer_request(
    shared: Arc<Shared>,
    req: IncomingRequest,
    env: RequestEnv,
) -> Reply {
    let id = req.id.clone();
    let hint = env.era_hint;
    let work = async move {
        // Cloned out of the lock: a layered stack may be polled by many requests at once.
        let layered = shared
            .middleware
            .as_ref()
            .map(|m| m.lock().unwrap_or_else(|p| p.into_inner()).clone());
        // The members of `params`, read once: `_meta` decides the era when the transport did
        // not, a 2026-07-28 request is validated from it, and the typed parameters are built
        // from the others.
        let params = match ParamsIndex::read(req.params.as_deref()) {
            Ok(params) => params,
            Err(e) => return invalid_params_reply(hint.unwrap_or(Era::Legacy), &req.id, &e),
        };
        // A `_meta` the transport validated already needs no reading here.
        let fields: ReadMeta<'_> = match (hint, &env.validated_meta) {
            (Some(Era::Legacy), _) | (_, Some(_)) => None,
            _ => params.meta().map(|m| MetaFields::parse(m.get())),
        };
        let era = hint.unwrap_or_else(|| detect_era(&req.method, params.meta(), &fields));
        if let Some(stack) = layered {
            // Middleware owns the request; `route_owned` reads its members again after it.
            drop((fields, params));
            let span = request_span(&req, era);
            let id = req.id.clone();
            let request = McpRequest::new(shared, req, env, era);
            let response = stack.oneshot(request).instrument(span.clone()).await;
            let reply = response
                .unwrap_or_else(|e| McpResponse::error(middleware::error_from_box(e)))
                .into_reply(era, &id);
            record_outcome(&span, era, &reply);
            return reply;
        }
        let span = request_span(&req, era);
        let reply = route(shared, &req, era, &params, fields, env)
            .instrument(span.clone())
            .await;
        record_outcome(&span, era, &reply);
        reply
    };
    match catch_unwind(work).await {
        Ok(reply) => reply,
        Err(panic) => {
            tracing::error!(request = %id, "handler panicked: {panic}");
            error_reply(
                hint.unwrap_or(Era::Legacy),
                &id,
                ProtocolError::Internal("Internal error: the handler panicked".into()),
            )
        }
    }
}

/// The answer to `params` that are not a JSON object of members.
fn invalid_params_reply(era: Era, id: &RequestId, e: &serde_json::Error) -> Reply {
    error_reply(
        era,
        id,
        ProtocolError::InvalidParams(format!("Invalid params: {e}")),
    )
}

/// Runs one request of a known era through the method dispatch of that era.
async fn route(
    shared: Arc<Shared>,
    req: &IncomingRequest,
    era: Era,
    params: &ParamsIndex<'_>,
    fields: ReadMeta<'_>,
    env: RequestEnv,
) -> Reply {
    let reply = match era {
        Era::Modern => modern_request(shared, req, params, fields, env).await,
        Era::Legacy => legacy_request(shared, req, params, env).await,
    };
    reply.unwrap_or_else(|| {
        error_reply(
            era,
            &req.id,
            ProtocolError::Internal("Internal error: no reply".into()),
        )
    })
}

/// [`route`] for a request that went through middleware (which owns it).
pub(super) async fn route_owned(
    shared: Arc<Shared>,
    req: IncomingRequest,
    env: RequestEnv,
    era: Era,
) -> Reply {
    // The request went into middleware as an owned value, so its members are read again here.
    let params = match ParamsIndex::read(req.params.as_deref()) {
        Ok(params) => params,
        Err(e) => return invalid_params_reply(era, &req.id, &e),
    };
    let fields = match (era, &env.validated_meta) {
        (Era::Modern, None) => params.meta().map(|m| MetaFields::parse(m.get())),
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
        era = era_tag(era),
        request_id = %req.id,
        target = tracing::field::Empty,
        outcome = tracing::field::Empty,
        error_code = tracing::field::Empty,
    );
    if !span.is_disabled() {
        if let Some(target) = middleware::target_of(req.params.as_deref()) {
            span.record("target", &*target);
        }
    }
    span
}

fn era_tag(era: Era) -> &'static str {
    match era {
        Era::Legacy => "legacy",
        Era::Modern => "modern",
    }
}

/// Records how the request ended: `ok`, `isError` (a tool result reporting failure), or
/// `error` with the JSON-RPC `error_code`.
fn record_outcome(span: &tracing::Span, era: Era, reply: &Reply) {
    if span.is_disabled() {
        return;
    }
    match &reply.error {
        Some(e) => {
            span.record("outcome", "error");
            span.record("error_code", error_object(era, e).code);
        }
        None if reply.is_error => {
            span.record("outcome", "isError");
        }
        None => {
            span.record("outcome", "ok");
        }
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
        }) = jsonrpc::parse_params::<CancelledParams>(n.params.as_deref())
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
    let delivered = session.is_some_and(|s| s.complete_request(&r.id, r.outcome));
    if !delivered {
        tracing::debug!(id = %r.id, "response to an unknown or expired request ignored");
    }
}

// ---------------------------------------------------------------------------------------------
// Params as the server reads them: only the fields it uses, parsed once.

#[derive(Deserialize, Default)]
struct ListParams {
    #[serde(default)]
    cursor: Option<String>,
}

#[derive(Deserialize)]
struct CallParams {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
    /// 2025-11-25 task augmentation; ignored in 2026-07-28.
    #[serde(default)]
    task: Option<Value>,
    #[serde(rename = "inputResponses", default)]
    input_responses: Option<Map<String, Value>>,
    #[serde(rename = "requestState", default)]
    request_state: Option<String>,
}

#[derive(Deserialize)]
struct GetPromptParams {
    name: String,
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
    #[serde(rename = "inputResponses", default)]
    input_responses: Option<Map<String, Value>>,
    #[serde(rename = "requestState", default)]
    request_state: Option<String>,
}

#[derive(Deserialize)]
struct ReadParams {
    uri: String,
    #[serde(rename = "inputResponses", default)]
    input_responses: Option<Map<String, Value>>,
    #[serde(rename = "requestState", default)]
    request_state: Option<String>,
}

#[derive(Deserialize)]
struct UriParams {
    uri: String,
}

#[derive(Deserialize)]
struct SetLevelParams {
    level: LoggingLevel,
}

#[derive(Deserialize)]
struct ListenParams {
    #[serde(default)]
    notifications: SubscriptionFilter,
}

fn parse<T: serde::de::DeserializeOwned>(req: &IncomingRequest) -> Result<T, ProtocolError> {
    jsonrpc::parse_params(req.params.as_deref())
        .map_err(|e| ProtocolError::InvalidParams(e.message))
}

// ---------------------------------------------------------------------------------------------
// The legacy era.

async fn legacy_request(
    shared: Arc<Shared>,
    req: &IncomingRequest,
    params: &ParamsIndex<'_>,
    env: RequestEnv,
) -> Option<Reply> {
    const ERA: Era = Era::Legacy;
    let id = &req.id;
    let method = req.method.as_str();
    let Some(session) = env.session.clone() else {
        return Some(error_reply(
            ERA,
            id,
            ProtocolError::InvalidRequest("No session: send `initialize` first".into()),
        ));
    };
    if method == <methods::Initialize as RequestMethod>::NAME {
        return Some(match initialize(&shared, &session, req, &env) {
            Ok(v) => result_reply(ERA, id, &v),
            Err(e) => error_reply(ERA, id, e),
        });
    }
    if method == <methods::Ping as RequestMethod>::NAME {
        return Some(result_reply(ERA, id, &json!({})));
    }
    let Some(negotiated) = session.negotiated() else {
        return Some(error_reply(
            ERA,
            id,
            ProtocolError::InvalidRequest("Server not initialized: send `initialize` first (2025-11-25), or put `_meta` with a protocol version on every request (2026-07-28)".into()),
        ));
    };
    let ctx = Context::new(Inner {
        era: ERA,
        protocol_version: negotiated.protocol_version.clone(),
        client_capabilities: negotiated.client_capabilities.clone(),
        client_info: negotiated.client_info.clone(),
        request_id: id.clone(),
        progress_token: progress_token(params.meta()),
        log_level: None,
        cancel: env.cancel,
        sink: env.sink.clone(),
        session: Some(session.clone()),
        shared: shared.clone(),
        input: Default::default(),
        principal: env.principal.clone(),
        task: Default::default(),
    });
    let outcome: Result<Reply, ProtocolError> = async {
        Ok(match method {
            m if m == <methods::ListTools as RequestMethod>::NAME => {
                list_tools(&shared, req, ListEncoding::Legacy, &ctx)?
            }
            m if m == <methods::CallTool as RequestMethod>::NAME => {
                let p: CallParams = params.parse()?;
                let (plan, ttl) = tasks::legacy_plan(&ctx, &p.name, p.task.as_ref())?;
                if plan == tasks::CallPlan::Task {
                    let created =
                        Box::pin(tasks::legacy_call(&ctx, p.name, p.arguments, ttl)).await?;
                    return Ok(result_reply(ERA, id, &created));
                }
                match call_tool(&ctx, p.name, p.arguments).await {
                    Ok(r) => Reply {
                        is_error: r.is_error == Some(true),
                        ..result_reply(ERA, id, &r)
                    },
                    Err(e) => return Err(failure(ERA, e)),
                }
            }
            m if m == <methods::ListPrompts as RequestMethod>::NAME => {
                list_prompts(&shared, req, ListEncoding::Legacy)?
            }
            m if m == <methods::GetPrompt as RequestMethod>::NAME => {
                let p: GetPromptParams = params.parse()?;
                match Box::pin(get_prompt(&ctx, &p.name, p.arguments)).await {
                    Ok(r) => result_reply(ERA, id, &r),
                    Err(e) => return Err(failure(ERA, e)),
                }
            }
            m if m == <methods::ListResources as RequestMethod>::NAME => {
                Box::pin(list_resources(&shared, req, ListEncoding::Legacy)).await?
            }
            m if m == <methods::ListResourceTemplates as RequestMethod>::NAME => {
                list_templates(&shared, req, ListEncoding::Legacy)?
            }
            m if m == <methods::ReadResource as RequestMethod>::NAME => {
                let p: ReadParams = params.parse()?;
                match Box::pin(read_resource(&ctx, &p.uri)).await {
                    Ok(r) => result_reply(ERA, id, &r),
                    Err(e) => return Err(failure(ERA, e)),
                }
            }
            m if m == <methods::Subscribe as RequestMethod>::NAME => {
                let p: UriParams = params.parse()?;
                session.subscribe(p.uri);
                result_reply(ERA, id, &json!({}))
            }
            m if m == <methods::Unsubscribe as RequestMethod>::NAME => {
                let p: UriParams = params.parse()?;
                session.unsubscribe(&p.uri);
                result_reply(ERA, id, &json!({}))
            }
            m if m == <methods::SetLevel as RequestMethod>::NAME => {
                let p: SetLevelParams = params.parse()?;
                session.set_log_level(p.level);
                result_reply(ERA, id, &json!({}))
            }
            m if m == <methods::Complete as RequestMethod>::NAME => {
                match Box::pin(complete(&ctx, req)).await {
                    Ok(r) => result_reply(ERA, id, &r),
                    Err(e) => return Err(failure(ERA, e)),
                }
            }
            other => {
                let params = req.params.as_deref();
                if let Some(r) =
                    Box::pin(tasks::legacy_method(&ctx, other, params, &env.sink)).await
                {
                    return Ok(result_reply(ERA, id, &r?));
                }
                if let Some(r) = Box::pin(skills::handle(
                    &shared.skills,
                    &shared.config,
                    other,
                    params,
                    ERA,
                ))
                .await
                {
                    return Ok(result_reply(ERA, id, &r?.0));
                }
                return Err(ProtocolError::MethodNotFound(other.to_owned()));
            }
        })
    }
    .await;
    Some(outcome.unwrap_or_else(|e| error_reply(ERA, id, e)))
}

/// The protocol error a handler's failure becomes when it is not a result of its own (the
/// `isError` results and `InputRequiredResult`s are made by the callers).
fn failure(era: Era, e: HandlerError) -> ProtocolError {
    match e {
        HandlerError::Protocol(p) => p,
        HandlerError::Failed(e) => ProtocolError::Internal(e.to_string()),
        HandlerError::InputRequired(_) => match era {
            Era::Legacy => {
                ProtocolError::Internal("input required outside the 2026-07-28 era".into())
            }
            Era::Modern => ProtocolError::InvalidRequest(
                "input requests are only allowed on tools/call, prompts/get and resources/read"
                    .into(),
            ),
        },
        HandlerError::Cancelled => ProtocolError::Internal("cancelled".into()),
    }
}

fn initialize(
    shared: &Arc<Shared>,
    session: &Arc<Session>,
    req: &IncomingRequest,
    env: &RequestEnv,
) -> Result<Value, ProtocolError> {
    let p: InitializeRequestParams = parse(req)?;
    if session.negotiated().is_some() {
        return Err(ProtocolError::InvalidRequest(
            "The session is already initialized".into(),
        ));
    }
    let version = legacy::negotiate(&p.protocol_version);
    session.set_negotiated(Negotiated {
        protocol_version: Arc::from(version),
        client_capabilities: Arc::new(p.capabilities),
        client_info: Some(Arc::new(p.client_info)),
    });
    spawn_forwarder(shared.clone(), session.clone(), env.closing.clone());
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": capabilities(shared, Era::Legacy),
        "serverInfo": shared.info,
    });
    if let Some(text) = &shared.instructions {
        result["instructions"] = json!(text);
    }
    Ok(result)
}

/// Forwards server events to a legacy session (list_changed, subscribed resource updates).
fn spawn_forwarder(shared: Arc<Shared>, session: Arc<Session>, closing: CancellationToken) {
    let mut events = shared.events.subscribe();
    // `notifications/tasks/status` goes to the session that created the task.
    let scope = shared.tasks.session_scope(&session).ok();
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                _ = closing.cancelled() => return,
                e = events.recv() => e,
            };
            let frame = match event {
                Ok(ServerEvent::ToolsChanged) => notification(
                    <methods::ToolListChanged as NotificationMethod>::NAME,
                    json!({}),
                ),
                Ok(ServerEvent::PromptsChanged) => notification(
                    <methods::PromptListChanged as NotificationMethod>::NAME,
                    json!({}),
                ),
                Ok(ServerEvent::ResourcesChanged) => notification(
                    <methods::ResourceListChanged as NotificationMethod>::NAME,
                    json!({}),
                ),
                Ok(ServerEvent::ResourceUpdated(uri)) if session.is_subscribed(&uri) => {
                    notification(
                        <methods::ResourceUpdated as NotificationMethod>::NAME,
                        json!({ "uri": uri }),
                    )
                }
                Ok(ServerEvent::TaskChanged(task))
                    if task.era == tasks::TaskEra::Legacy
                        && scope.is_some()
                        && task.scope == scope =>
                {
                    tasks::legacy_status_notification(&task)
                }
                Ok(_) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(
                        "a session fell {n} server events behind; some notifications were dropped"
                    );
                    continue;
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            if session.unrelated.send(frame).await.is_err() {
                return;
            }
        }
    });
}

fn notification(method: &str, params: Value) -> Vec<u8> {
    jsonrpc::encode_notification(method, &params).unwrap_or_default()
}

/// The `progressToken` of a 2025-11-25 request's `_meta` (found by [`handle_request`]).
fn progress_token(meta: Option<&RawValue>) -> Option<duomcp_schema::ProgressToken> {
    #[derive(Deserialize)]
    struct M {
        #[serde(rename = "progressToken", default)]
        progress_token: Option<duomcp_schema::ProgressToken>,
    }
    serde_json::from_str::<M>(meta?.get()).ok()?.progress_token
}

/// The capabilities the server advertises, from what is registered.
fn capabilities(shared: &Shared, era: Era) -> ServerCapabilities {
    let reg = shared.registry();
    let mut caps = json!({});
    if !reg.tools.is_empty() {
        caps["tools"] = json!({ "listChanged": true });
    }
    if !reg.prompts.is_empty() {
        caps["prompts"] = json!({ "listChanged": true });
    }
    if !reg.resources.is_empty() || !reg.templates.is_empty() || shared.skills.enabled() {
        caps["resources"] = match era {
            Era::Legacy => json!({ "subscribe": true, "listChanged": true }),
            Era::Modern => json!({ "subscribe": true, "listChanged": true }),
        };
    }
    if reg.completion.is_some() {
        caps["completions"] = json!({});
    }
    caps["logging"] = json!({});
    let task_tools = tasks::any_task_tool(
        reg.tools
            .values()
            .map(|e| e.tool.execution.as_ref().and_then(|x| x.task_support)),
    );
    let mut extensions = Map::new();
    match era {
        Era::Legacy if task_tools => {
            caps["tasks"] =
                json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } });
        }
        Era::Modern if task_tools => {
            extensions.insert(tasks::EXTENSION_ID.into(), json!({}));
        }
        _ => {}
    }
    if shared.skills.enabled() {
        extensions.insert(
            skills::EXTENSION_ID.into(),
            json!({ "directoryRead": true }),
        );
    }
    apps::declare(&reg, &mut extensions);
    if !extensions.is_empty() {
        caps["extensions"] = Value::Object(extensions);
    }
    serde_json::from_value(caps).unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// The modern era.

async fn modern_request(
    shared: Arc<Shared>,
    req: &IncomingRequest,
    params: &ParamsIndex<'_>,
    meta: ReadMeta<'_>,
    mut env: RequestEnv,
) -> Option<Reply> {
    const ERA: Era = Era::Modern;
    let id = &req.id;
    let method = req.method.as_str();
    let valid = match env.validated_meta.take() {
        Some(valid) => Ok(valid),
        None => shared.meta_memo.validate_fields(meta),
    };
    let m = match valid {
        Ok(m) => m,
        Err(e) => return Some(error_reply(ERA, id, e)),
    };
    if modern::REMOVED_METHODS.contains(&method) {
        return Some(error_reply(
            ERA,
            id,
            ProtocolError::MethodNotFound(method.to_owned()),
        ));
    }
    let ctx = Context::new(Inner {
        era: ERA,
        protocol_version: m.protocol_version,
        client_capabilities: m.client_capabilities,
        client_info: m.client_info,
        request_id: id.clone(),
        progress_token: m.progress_token,
        log_level: m.log_level,
        cancel: env.cancel,
        sink: env.sink.clone(),
        session: None,
        shared: shared.clone(),
        input: Default::default(),
        principal: env.principal.clone(),
        task: Default::default(),
    });
    let server_info = &shared.info_json;
    let (closing, sink) = (&env.closing, &env.sink);
    let outcome: Result<Reply, ProtocolError> = async {
        Ok(match method {
            m if m == <methods::Discover as RequestMethod>::NAME => {
                let mut r = json!({
                    "supportedVersions": version::MODERN_VERSIONS,
                    "capabilities": capabilities(&shared, ERA),
                    "serverInfo": server_info,
                });
                if let Some(text) = &shared.instructions {
                    r["instructions"] = json!(text);
                }
                result_reply(
                    ERA,
                    id,
                    &complete_value(r, server_info, Some(shared.config.discover_cache)),
                )
            }
            m if m == <methods::ListTools as RequestMethod>::NAME => list_tools(
                &shared,
                req,
                ListEncoding::Modern(server_info, shared.config.tools_cache),
                &ctx,
            )?,
            m if m == <methods::ListPrompts as RequestMethod>::NAME => list_prompts(
                &shared,
                req,
                ListEncoding::Modern(server_info, shared.config.prompts_cache),
            )?,
            m if m == <methods::ListResources as RequestMethod>::NAME => {
                Box::pin(list_resources(
                    &shared,
                    req,
                    ListEncoding::Modern(server_info, shared.config.resources_cache),
                ))
                .await?
            }
            m if m == <methods::ListResourceTemplates as RequestMethod>::NAME => list_templates(
                &shared,
                req,
                ListEncoding::Modern(server_info, shared.config.resources_cache),
            )?,
            m if m == <methods::CallTool as RequestMethod>::NAME => {
                let p: CallParams = params.parse()?;
                let target = p.name.clone();
                restore_input(
                    &ctx,
                    method,
                    &target,
                    p.request_state.as_deref(),
                    p.input_responses,
                )?;
                let plan = tasks::modern_plan(&ctx, &p.name)?;
                let (ctx, r) = if plan == tasks::CallPlan::Inline {
                    let r = call_tool(&ctx, p.name, p.arguments).await;
                    (ctx, r)
                } else {
                    match Box::pin(tasks::modern_call(&ctx, p.name, p.arguments, plan)).await? {
                        tasks::ModernCall::Created(mut created) => {
                            created["_meta"] = json!({ meta::SERVER_INFO: server_info });
                            return Ok(result_reply(ERA, id, &created));
                        }
                        tasks::ModernCall::Inline(ctx, r) => (ctx, r),
                    }
                };
                let is_error = matches!(&r, Ok(r) if r.is_error == Some(true));
                return modern_outcome(
                    &ctx,
                    id,
                    method,
                    &target,
                    // `resultType: "complete"` is added when the result is encoded.
                    r,
                    server_info,
                    None,
                )
                .map(|reply| Reply { is_error, ..reply });
            }
            m if m == <methods::GetPrompt as RequestMethod>::NAME => {
                let p: GetPromptParams = params.parse()?;
                restore_input(
                    &ctx,
                    method,
                    &p.name,
                    p.request_state.as_deref(),
                    p.input_responses,
                )?;
                let r = Box::pin(get_prompt(&ctx, &p.name, p.arguments)).await;
                return modern_outcome(&ctx, id, method, &p.name, r, server_info, None);
            }
            m if m == <methods::ReadResource as RequestMethod>::NAME => {
                let p: ReadParams = params.parse()?;
                restore_input(
                    &ctx,
                    method,
                    &p.uri,
                    p.request_state.as_deref(),
                    p.input_responses,
                )?;
                let r = Box::pin(read_resource(&ctx, &p.uri)).await;
                return modern_outcome(
                    &ctx,
                    id,
                    method,
                    &p.uri,
                    r,
                    server_info,
                    Some(shared.config.read_cache),
                );
            }
            m if m == <methods::Complete as RequestMethod>::NAME => {
                match Box::pin(complete(&ctx, req)).await {
                    Ok(r) => {
                        result_reply(ERA, id, &complete_value(to_value(&r)?, server_info, None))
                    }
                    Err(e) => return Err(failure(ERA, e)),
                }
            }
            m if m == <methods::SubscriptionsListen as RequestMethod>::NAME => {
                return Box::pin(listen_request(&ctx, req, closing, sink)).await;
            }
            other => {
                let params = req.params.as_deref();
                if let Some(m) = tasks::ModernMethod::of(other) {
                    let r = Box::pin(tasks::modern_method(&ctx, m, params)).await?;
                    return Ok(result_reply(ERA, id, &complete_value(r, server_info, None)));
                }
                if let Some(r) = Box::pin(skills::handle(
                    &shared.skills,
                    &shared.config,
                    other,
                    params,
                    ERA,
                ))
                .await
                {
                    let (r, cache) = r?;
                    return Ok(result_reply(
                        ERA,
                        id,
                        &complete_value(r, server_info, cache),
                    ));
                }
                return Err(ProtocolError::MethodNotFound(other.to_owned()));
            }
        })
    }
    .await;
    match outcome {
        Ok(reply) => Some(reply),
        Err(e) => Some(error_reply(ERA, id, e)),
    }
}

/// `subscriptions/listen` (2026-07-28): the tasks the caller may watch, then the stream.
async fn listen_request(
    ctx: &Context,
    req: &IncomingRequest,
    closing: &CancellationToken,
    sink: &crate::server::session::Sink,
) -> Result<Reply, ProtocolError> {
    let shared = ctx.shared();
    let id = &req.id;
    let p: ListenParams = parse(req)?;
    let task_ids = match &p.notifications.task_ids {
        None => None,
        Some(_) if !ctx.client_capabilities().has_extension(tasks::EXTENSION_ID) => {
            return Err(ProtocolError::MissingClientCapability(
                json!({ "extensions": { tasks::EXTENSION_ID: {} } }),
            ))
        }
        Some(ids) => {
            // Only tasks the caller may see; the others are silently not honoured.
            let principal = ctx.principal().map(|p| p.key());
            let mut visible = Vec::new();
            for task in ids {
                let found = Box::pin(shared.tasks.lookup(
                    task,
                    tasks::TaskEra::Modern,
                    principal.as_deref(),
                ))
                .await;
                if found.is_ok() {
                    visible.push(task.clone());
                }
            }
            Some(visible)
        }
    };
    Ok(listen(shared, id, p.notifications, task_ids, closing, sink).await)
}

fn to_value<T: Serialize>(v: &T) -> Result<Value, ProtocolError> {
    serde_json::to_value(v).map_err(|e| ProtocolError::Internal(e.to_string()))
}

/// Adds what every complete modern result carries: `resultType`, `serverInfo` in `_meta`,
/// and the cache fields where the result is cacheable.
fn complete_value(mut v: Value, server_info: &Value, cache: Option<CachePolicy>) -> Value {
    if let Value::Object(map) = &mut v {
        map.insert("resultType".into(), json!("complete"));
        if let Some(c) = cache {
            map.insert("ttlMs".into(), json!(c.ttl_ms));
            map.insert("cacheScope".into(), json!(c.scope));
        }
        let meta = map.entry("_meta").or_insert_with(|| json!({}));
        if let Value::Object(meta) = meta {
            meta.insert(meta::SERVER_INFO.into(), server_info.clone());
        }
    }
    v
}

/// The reply carrying a complete modern result: [`complete_value`]'s additions spliced into
/// the encoded bytes, without building a `Value` of the whole result. A result that mentions
/// `"_meta"`, `"resultType"`, `"ttlMs"` or `"cacheScope"` anywhere (it may have them at the top
/// and they must be merged, not repeated) takes the `Value` way; the bytes are the same.
fn complete_reply<T: Serialize>(
    id: &RequestId,
    result: &T,
    server_info: &Value,
    cache: Option<CachePolicy>,
) -> Result<Reply, ProtocolError> {
    // Built once: building a searcher costs more than searching a small result.
    static MERGED: std::sync::LazyLock<[memchr::memmem::Finder<'static>; 4]> =
        std::sync::LazyLock::new(|| {
            [
                &b"\"_meta\""[..],
                b"\"resultType\"",
                b"\"ttlMs\"",
                b"\"cacheScope\"",
            ]
            .map(memchr::memmem::Finder::new)
        });
    let internal = |e: serde_json::Error| ProtocolError::Internal(e.to_string());
    let mut out = jsonrpc::result_head(id);
    let start = out.len();
    serde_json::to_writer(&mut out, result).map_err(internal)?;
    let body = &out[start..];
    let plain = body.first() == Some(&b'{')
        && body.last() == Some(&b'}')
        && !MERGED.iter().any(|k| k.find(body).is_some());
    if !plain {
        let v: Value = serde_json::from_slice(body).map_err(internal)?;
        return Ok(result_reply(
            Era::Modern,
            id,
            &complete_value(v, server_info, cache),
        ));
    }
    let empty = body.len() == 2;
    out.pop();
    if !empty {
        out.push(b',');
    }
    out.extend_from_slice(br#""resultType":"complete""#);
    if let Some(c) = cache {
        out.extend_from_slice(br#","ttlMs":"#);
        serde_json::to_writer(&mut out, &c.ttl_ms).map_err(internal)?;
        out.extend_from_slice(br#","cacheScope":"#);
        serde_json::to_writer(&mut out, &c.scope).map_err(internal)?;
    }
    out.extend_from_slice(br#","_meta":{"#);
    serde_json::to_writer(&mut out, meta::SERVER_INFO).map_err(internal)?;
    out.push(b':');
    serde_json::to_writer(&mut out, server_info).map_err(internal)?;
    out.extend_from_slice(b"}}}");
    Ok(Reply {
        frame: out,
        error: None,
        is_error: false,
    })
}

/// Unseals `requestState` and merges earlier answers with this round's `inputResponses`.
fn restore_input(
    ctx: &Context,
    method: &str,
    target: &str,
    state: Option<&str>,
    responses: Option<Map<String, Value>>,
) -> Result<(), ProtocolError> {
    let mut input = super::context::InputState::default();
    if let Some(token) = state {
        let shared = ctx.shared();
        let sealed = request_state::unseal(
            &shared.sealing_key,
            token,
            request_state::now_ms(),
            method,
            target,
            ctx.principal().map(|p| p.key()).as_deref(),
        )
        .map_err(|r| ProtocolError::InvalidParams(format!("Invalid params: {}", r.message())))?;
        input.responses = sealed.r;
        input.user_state = sealed.u;
    }
    if let Some(new) = responses {
        input.responses.extend(new);
    }
    ctx.restore_input_state(input);
    Ok(())
}

/// Finishes an MRTR-capable request: a complete result, an `InputRequiredResult`, or an error.
fn modern_outcome<T: Serialize>(
    ctx: &Context,
    id: &RequestId,
    method: &str,
    target: &str,
    result: Result<T, HandlerError>,
    server_info: &Value,
    cache: Option<CachePolicy>,
) -> Result<Reply, ProtocolError> {
    match result {
        Ok(r) => complete_reply(id, &r, server_info, cache),
        Err(HandlerError::InputRequired(_)) => {
            let input = ctx.take_input_state();
            if input.requested.is_empty() && input.user_state.is_none() {
                return Err(ProtocolError::Internal(
                    "the handler asked for input but named none".into(),
                ));
            }
            let shared = ctx.shared();
            let expiry =
                request_state::now_ms() + shared.config.request_state_ttl.as_millis() as u64;
            let sealed = SealedState {
                m: method.into(),
                t: target.into(),
                e: expiry,
                p: ctx.principal().map(|p| p.key()),
                r: input.responses,
                u: input.user_state,
            };
            let requests: Map<String, Value> = input
                .requested
                .into_iter()
                .map(|(k, r)| (k, serde_json::to_value(r).unwrap_or(Value::Null)))
                .collect();
            let mut result = json!({
                "resultType": "input_required",
                "requestState": request_state::seal(&shared.sealing_key, &sealed),
                "_meta": { meta::SERVER_INFO: server_info },
            });
            if !requests.is_empty() {
                result["inputRequests"] = Value::Object(requests);
            }
            Ok(result_reply(Era::Modern, id, &result))
        }
        Err(e) => Err(failure(Era::Modern, e)),
    }
}

/// `subscriptions/listen`: acknowledge, then forward matching events until cancelled or closed.
async fn listen(
    shared: &Arc<Shared>,
    id: &RequestId,
    filter: SubscriptionFilter,
    task_ids: Option<Vec<String>>,
    closing: &CancellationToken,
    sink: &crate::server::session::Sink,
) -> Reply {
    let mut events = shared.events.subscribe();
    let sub_id = json!(id);
    let honoured = {
        let reg = shared.registry();
        let mut h = json!({});
        if filter.tools_list_changed == Some(true) && !reg.tools.is_empty() {
            h["toolsListChanged"] = json!(true);
        }
        if filter.prompts_list_changed == Some(true) && !reg.prompts.is_empty() {
            h["promptsListChanged"] = json!(true);
        }
        let has_resources = !reg.resources.is_empty() || !reg.templates.is_empty();
        if filter.resources_list_changed == Some(true) && has_resources {
            h["resourcesListChanged"] = json!(true);
        }
        if let Some(uris) = &filter.resource_subscriptions {
            if has_resources {
                h["resourceSubscriptions"] = json!(uris);
            }
        }
        if let Some(ids) = &task_ids {
            h["taskIds"] = json!(ids);
        }
        h
    };
    let task_ids = task_ids.unwrap_or_default();
    let wants = |key: &str| honoured.get(key).and_then(Value::as_bool).unwrap_or(false);
    let (tools, prompts, resources) = (
        wants("toolsListChanged"),
        wants("promptsListChanged"),
        wants("resourcesListChanged"),
    );
    let uris: Vec<String> = honoured
        .get("resourceSubscriptions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let tag = json!({ meta::SUBSCRIPTION_ID: sub_id });
    let ack = json!({ "notifications": honoured, "_meta": tag });
    let _ = sink
        .send(notification(
            <methods::SubscriptionsAcknowledged as NotificationMethod>::NAME,
            ack,
        ))
        .await;
    let server_shutdown = shared.shutdown.clone();
    loop {
        let event = tokio::select! {
            _ = closing.cancelled() => break,
            _ = server_shutdown.cancelled() => break,
            e = events.recv() => e,
        };
        let frame = match event {
            Ok(ServerEvent::ToolsChanged) if tools => notification(
                <methods::ToolListChanged as NotificationMethod>::NAME,
                json!({ "_meta": tag }),
            ),
            Ok(ServerEvent::PromptsChanged) if prompts => notification(
                <methods::PromptListChanged as NotificationMethod>::NAME,
                json!({ "_meta": tag }),
            ),
            Ok(ServerEvent::ResourcesChanged) if resources => notification(
                <methods::ResourceListChanged as NotificationMethod>::NAME,
                json!({ "_meta": tag }),
            ),
            Ok(ServerEvent::ResourceUpdated(uri)) if uris.contains(&uri) => notification(
                <methods::ResourceUpdated as NotificationMethod>::NAME,
                json!({ "uri": uri, "_meta": tag }),
            ),
            Ok(ServerEvent::TaskChanged(task))
                if task.era == tasks::TaskEra::Modern && task_ids.contains(&task.id) =>
            {
                let mut params = tasks::modern_task_value(&task, true);
                params["_meta"] = tag.clone();
                notification(<methods::Tasks as NotificationMethod>::NAME, params)
            }
            Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
        };
        if sink.send(frame).await.is_err() {
            break;
        }
    }
    result_reply(
        Era::Modern,
        id,
        &json!({ "resultType": "complete", "_meta": tag }),
    )
}

// ---------------------------------------------------------------------------------------------
// Methods shared by both eras.

/// The prefix of tools, prompts, resources and templates list cursors.
const LIST_CURSOR: &str = "k:";

/// One page of a name-ordered map, plus the cursor of the next page.
fn page<'a, T: 'a>(
    items: impl Iterator<Item = (&'a String, T)>,
    after: Option<&str>,
    size: usize,
) -> (Vec<T>, Option<String>) {
    let mut out = Vec::new();
    let mut last: Option<&String> = None;
    let mut more = false;
    for (k, v) in items.filter(|(k, _)| after.is_none_or(|a| k.as_str() > a)) {
        if out.len() == size.max(1) {
            more = true;
            break;
        }
        last = Some(k);
        out.push(v);
    }
    let next = if more {
        last.map(|k| cursor::encode(LIST_CURSOR, k))
    } else {
        None
    };
    (out, next)
}

/// How a list result is encoded: as it is (2025-11-25), or as a complete 2026-07-28 result
/// with `serverInfo` and the cache fields.
#[derive(Clone, Copy)]
enum ListEncoding<'v> {
    Legacy,
    Modern(&'v Value, CachePolicy),
}

/// One page of a list result (`tools/list` and the like), serialized straight from the
/// registry's items: `{"<key>": [...], "nextCursor": "..."}`.
struct ListPage<'a, T: Clone> {
    key: &'static str,
    items: Vec<Cow<'a, T>>,
    next: Option<String>,
}

impl<T: Serialize + Clone> Serialize for ListPage<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(1 + usize::from(self.next.is_some())))?;
        map.serialize_entry(self.key, &self.items)?;
        if let Some(next) = &self.next {
            map.serialize_entry("nextCursor", next)?;
        }
        map.end()
    }
}

/// The reply with the page of `items` (sorted by key) after the request's cursor. The one
/// body of `tools/list`, `prompts/list`, `resources/list` and `resources/templates/list`.
fn list_page<'a, T: Serialize + Clone + 'a>(
    shared: &Shared,
    req: &IncomingRequest,
    enc: ListEncoding<'_>,
    key: &'static str,
    items: impl Iterator<Item = (&'a String, Cow<'a, T>)>,
) -> Result<Reply, ProtocolError> {
    let p: ListParams = parse(req)?;
    let after = cursor::decode(LIST_CURSOR, p.cursor.as_deref())?;
    let (items, next) = page(items, after.as_deref(), shared.config.page_size);
    let page = ListPage { key, items, next };
    match enc {
        ListEncoding::Legacy => Ok(result_reply(Era::Legacy, &req.id, &page)),
        ListEncoding::Modern(server_info, cache) => {
            complete_reply(&req.id, &page, server_info, Some(cache))
        }
    }
}

fn list_tools(
    shared: &Shared,
    req: &IncomingRequest,
    enc: ListEncoding<'_>,
    ctx: &Context,
) -> Result<Reply, ProtocolError> {
    let modern = matches!(enc, ListEncoding::Modern(..));
    let reg = shared.registry();
    let listed =
        |e: &&Arc<registry::ToolEntry>| apps::listed_for(&e.tool, ctx.client_capabilities());
    let tools = reg.tools.iter().filter(|(_, e)| listed(e)).map(|(k, e)| {
        // `execution.taskSupport` is 2025-11-25 only: in 2026-07-28 the server decides.
        let tool = if modern && e.tool.execution.is_some() {
            let mut owned = e.tool.clone();
            owned.execution = None;
            Cow::Owned(owned)
        } else {
            Cow::Borrowed(&e.tool)
        };
        (k, tool)
    });
    list_page(shared, req, enc, "tools", tools)
}

fn list_prompts(
    shared: &Shared,
    req: &IncomingRequest,
    enc: ListEncoding<'_>,
) -> Result<Reply, ProtocolError> {
    let reg = shared.registry();
    let prompts = reg
        .prompts
        .iter()
        .map(|(k, e)| (k, Cow::Borrowed(&e.prompt)));
    list_page(shared, req, enc, "prompts", prompts)
}

async fn list_resources(
    shared: &Shared,
    req: &IncomingRequest,
    enc: ListEncoding<'_>,
) -> Result<Reply, ProtocolError> {
    let skill_files = if shared.skills.enabled() {
        shared.skills.snapshot().await?.resources()
    } else {
        Vec::new()
    };
    let reg = shared.registry();
    let mut all: Vec<(&String, Cow<'_, duomcp_schema::Resource>)> = reg
        .resources
        .iter()
        .map(|(k, e)| (k, Cow::Borrowed(&e.resource)))
        .collect();
    all.extend(
        skill_files
            .iter()
            .filter(|(k, _)| !reg.resources.contains_key(k))
            .map(|(k, r)| (k, Cow::Borrowed(r))),
    );
    all.sort_by(|a, b| a.0.cmp(b.0));
    list_page(shared, req, enc, "resources", all.into_iter())
}

fn list_templates(
    shared: &Shared,
    req: &IncomingRequest,
    enc: ListEncoding<'_>,
) -> Result<Reply, ProtocolError> {
    let reg = shared.registry();
    let keys: Vec<String> = (0..reg.templates.len())
        .map(|i| format!("{i:08}"))
        .collect();
    let templates = keys
        .iter()
        .zip(&reg.templates)
        .map(|(k, t)| (k, Cow::Borrowed(&t.template)));
    list_page(shared, req, enc, "resourceTemplates", templates)
}

pub(super) async fn call_tool(
    ctx: &Context,
    name: String,
    arguments: Option<Value>,
) -> Result<CallToolResult, HandlerError> {
    let entry = ctx.shared().registry().tools.get(&name).cloned();
    let Some(entry) = entry else {
        return Err(HandlerError::invalid_params(format!(
            "Unknown tool: {name}"
        )));
    };
    crate::auth::require_scopes(ctx.principal(), &entry.scopes)?;
    let args = match arguments {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v,
        Some(_) => {
            return Ok(CallToolResult::error_text(format!(
                "Invalid arguments for tool `{name}`: `arguments` must be an object"
            )))
        }
    };
    match entry.input.check(&args) {
        Ok(()) => {}
        Err(SchemaViolation::Mismatch(problems)) => {
            return Ok(CallToolResult::error_text(format!(
                "Invalid arguments for tool `{name}`: {problems}"
            )))
        }
        Err(SchemaViolation::BadSchema(e)) => {
            return Ok(CallToolResult::error_text(format!(
                "Tool `{name}` has an invalid inputSchema: {e}"
            )))
        }
    }
    let result = (entry.call)(CallParts {
        ctx: ctx.clone(),
        args,
        uri: None,
    })
    .await;
    match result {
        Ok(r) => {
            if let (Some(schema), false) = (&entry.output, r.is_error == Some(true)) {
                let problem = match &r.structured_content {
                    None => {
                        Some("it has an outputSchema but returned no structuredContent".to_owned())
                    }
                    Some(sc) => match schema.check(sc) {
                        Ok(()) => None,
                        Err(SchemaViolation::BadSchema(e)) => {
                            Some(format!("its outputSchema is invalid: {e}"))
                        }
                        Err(SchemaViolation::Mismatch(e)) => Some(format!(
                            "structuredContent does not match outputSchema: {e}"
                        )),
                    },
                };
                if let Some(p) = problem {
                    return Err(ProtocolError::Internal(format!(
                        "Tool `{name}` returned an invalid result: {p}"
                    ))
                    .into());
                }
            }
            Ok(r)
        }
        Err(HandlerError::Failed(e)) => Ok(CallToolResult::error_text(e.to_string())),
        Err(e) => Err(e),
    }
}

async fn get_prompt(
    ctx: &Context,
    name: &str,
    arguments: Option<Map<String, Value>>,
) -> Result<GetPromptResult, HandlerError> {
    let entry = ctx.shared().registry().prompts.get(name).cloned();
    let Some(entry) = entry else {
        return Err(HandlerError::invalid_params(format!(
            "Unknown prompt: {name}"
        )));
    };
    crate::auth::require_scopes(ctx.principal(), &entry.scopes)?;
    let args = arguments.unwrap_or_default();
    for arg in entry.prompt.arguments.iter().flatten() {
        if arg.required == Some(true) && !args.contains_key(&arg.name) {
            return Err(HandlerError::invalid_params(format!(
                "Missing required argument `{}` for prompt `{name}`",
                arg.name
            )));
        }
    }
    (entry.get)(CallParts {
        ctx: ctx.clone(),
        args: Value::Object(args),
        uri: None,
    })
    .await
}

async fn read_resource(ctx: &Context, uri: &str) -> Result<ReadResourceResult, HandlerError> {
    let shared = ctx.shared();
    let registered = shared.registry().resources.contains_key(uri);
    if !registered && shared.skills.enabled() {
        if let Some(r) = shared.skills.snapshot().await?.read(uri).await {
            return r.map_err(HandlerError::from);
        }
    }
    let (read, vars, scopes) = {
        let reg = ctx.shared().registry();
        if let Some(e) = reg.resources.get(uri) {
            (e.read.clone(), Map::new(), e.scopes.clone())
        } else {
            let found = reg.templates.iter().find_map(|t| {
                t.matcher
                    .as_ref()?
                    .matches(uri)
                    .map(|vars| (t.read.clone(), vars, t.scopes.clone()))
            });
            match found {
                Some(f) => f,
                None => return Err(HandlerError::resource_not_found(uri)),
            }
        }
    };
    crate::auth::require_scopes(ctx.principal(), &scopes)?;
    read(CallParts {
        ctx: ctx.clone(),
        args: Value::Object(vars),
        uri: Some(uri.to_owned()),
    })
    .await
}

async fn complete(ctx: &Context, req: &IncomingRequest) -> Result<CompleteResult, HandlerError> {
    let completion = ctx.shared().registry().completion.clone();
    let Some(completion) = completion else {
        return Err(ProtocolError::MethodNotFound(
            <methods::Complete as RequestMethod>::NAME.to_owned(),
        )
        .into());
    };
    let p: CompleteRequestParams = parse(req)?;
    completion(p, ctx.clone()).await
}

#[allow(dead_code)]
fn _assert_send(shared: Arc<Shared>, req: IncomingRequest, env: RequestEnv) {
    fn is_send<T: Send>(_: T) {}
    is_send(handle_request(shared, req, env));
}
