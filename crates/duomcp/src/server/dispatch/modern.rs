//! The 2026-07-28 adapter: every request carries its caller in `_meta` (validated here unless
//! the transport did); `server/discover`, `subscriptions/listen` and the `tasks/*` methods of
//! the tasks extension are its own; the server decides when `tools/call` becomes a task; a
//! handler that asks for input gets an `InputRequiredResult` with sealed `requestState`, and
//! every complete result carries `resultType`, `serverInfo` and its cache fields.

use super::adapter::{Adapter, Target, ToolCall};
use super::capabilities::{capabilities, TasksDeclared};
use super::{
    context, error_reply, events, parse, result_reply, Caller, ReadMeta, Reply, RequestEnv,
};
use crate::era::{modern, Era, ProtocolError};
use crate::jsonrpc::{self, IncomingRequest};
use crate::server::context::{Context, InputState};
use crate::server::params::ParamsIndex;
use crate::server::session::Sink;
use crate::server::tasks::{self, TaskRecord};
use crate::server::{invoke, subscriptions, CachePolicy, HandlerError, Shared, ToolOutput};
use duomcp_proto::request_state::{self, SealedState};
use duomcp_schema::methods::{self, NotificationMethod, RequestMethod};
use duomcp_schema::{meta, version, RequestId, SubscriptionFilter, Tool};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A 2026-07-28 request, admitted: what a listen stream needs.
pub(super) struct Modern {
    closing: CancellationToken,
    sink: Sink,
}

#[derive(Deserialize)]
struct ListenParams {
    #[serde(default)]
    notifications: SubscriptionFilter,
}

impl Adapter for Modern {
    const ERA: Era = Era::Modern;

    fn admit(
        shared: &Arc<Shared>,
        req: &IncomingRequest,
        _params: &ParamsIndex<'_>,
        meta: ReadMeta<'_>,
        mut env: RequestEnv,
    ) -> Result<(Self, Context), Reply> {
        let id = &req.id;
        let method = req.method.as_str();
        let valid = match env.validated_meta.take() {
            Some(valid) => Ok(valid),
            None => shared.meta_memo.validate_fields(meta),
        };
        let m = match valid {
            Ok(m) => m,
            Err(e) => return Err(error_reply(Self::ERA, id, e)),
        };
        if modern::REMOVED_METHODS.contains(&method) {
            return Err(error_reply(
                Self::ERA,
                id,
                ProtocolError::MethodNotFound(method.to_owned()),
            ));
        }
        let RequestEnv {
            sink,
            cancel,
            closing,
            principal,
            peer,
            ..
        } = env;
        let caller = Caller {
            era: Self::ERA,
            protocol_version: m.protocol_version,
            client_capabilities: m.client_capabilities,
            client_info: m.client_info,
            progress_token: m.progress_token,
            log_level: m.log_level,
            session: None,
        };
        let ctx = context(shared, id, caller, cancel, sink.clone(), principal, peer);
        let adapter = Modern { closing, sink };
        Ok((adapter, ctx))
    }

    async fn own_method(
        &self,
        ctx: &Context,
        req: &IncomingRequest,
        _params: &ParamsIndex<'_>,
    ) -> Option<Result<Reply, ProtocolError>> {
        let (shared, id) = (ctx.shared(), &req.id);
        let method = req.method.as_str();
        if method == <methods::Discover as RequestMethod>::NAME {
            let mut r = json!({
                "supportedVersions": version::MODERN_VERSIONS,
                "capabilities": capabilities(shared, TasksDeclared::AsExtension),
                "serverInfo": shared.info_json,
            });
            if let Some(text) = &shared.instructions {
                r["instructions"] = json!(text);
            }
            return Some(self.shape(shared, id, &r, Some(shared.config.discover_cache)));
        }
        if method == <methods::SubscriptionsListen as RequestMethod>::NAME {
            return Some(Box::pin(listen_request(ctx, req, &self.closing, &self.sink)).await);
        }
        let m = tasks::ModernMethod::of(method)?;
        let params = req.params.as_ref().map(|p| p.get());
        Some(match Box::pin(tasks::modern_method(ctx, m, params)).await {
            Ok(r) => self.shape(shared, id, &r, None),
            Err(e) => Err(e),
        })
    }

    fn restore_input(
        &self,
        ctx: &Context,
        method: &str,
        target: Target<'_>,
        state: Option<&str>,
        responses: Option<Map<String, Value>>,
    ) -> Result<(), ProtocolError> {
        restore_input(ctx, method, target, state, responses)
    }

    async fn call_tool(
        &self,
        ctx: Context,
        name: &str,
        arguments: Option<Value>,
        _legacy_task: Option<Value>,
    ) -> Result<ToolCall, ProtocolError> {
        let plan = tasks::modern_plan(&ctx, name)?;
        if plan == tasks::CallPlan::Inline {
            let r = invoke::call_tool(&ctx, name, arguments).await;
            return Ok(ToolCall::Ran(ctx, r));
        }
        let call = tasks::modern_call(&ctx, name.to_owned(), arguments, plan);
        match Box::pin(call).await? {
            tasks::ModernCall::Created(mut created) => {
                created["_meta"] = json!({ meta::SERVER_INFO: ctx.shared().info_json });
                let reply = result_reply(Self::ERA, ctx.request_id(), &created);
                Ok(ToolCall::Task(reply))
            }
            tasks::ModernCall::Inline(ctx, r) => Ok(ToolCall::Ran(ctx, r.map(ToolOutput::from))),
        }
    }

    fn finish<T: Serialize>(
        &self,
        ctx: &Context,
        id: &RequestId,
        method: &str,
        target: Target<'_>,
        result: Result<T, HandlerError>,
        cache: Option<CachePolicy>,
    ) -> Result<Reply, ProtocolError> {
        match result {
            // `resultType: "complete"` is added when the result is encoded.
            Ok(r) => complete_reply(id, &r, ctx.shared(), cache),
            Err(HandlerError::InputRequired(_)) => {
                input_required(ctx, id, method, target, &ctx.shared().info_json)
            }
            Err(e) => Err(self.failure(e)),
        }
    }

    fn shape<T: Serialize>(
        &self,
        shared: &Shared,
        id: &RequestId,
        result: &T,
        cache: Option<CachePolicy>,
    ) -> Result<Reply, ProtocolError> {
        complete_reply(id, result, shared, cache)
    }

    fn failure(&self, e: HandlerError) -> ProtocolError {
        super::adapter::failure(e, || {
            ProtocolError::InvalidRequest(
                "input requests are only allowed on tools/call, prompts/get and resources/read"
                    .into(),
            )
        })
    }

    fn listed_tool<'t>(&self, tool: &'t Tool) -> Cow<'t, Tool> {
        // `execution.taskSupport` is 2025-11-25 only: in 2026-07-28 the server decides.
        if tool.execution.is_some() {
            let mut owned = tool.clone();
            owned.execution = None;
            Cow::Owned(owned)
        } else {
            Cow::Borrowed(tool)
        }
    }
}

/// `subscriptions/listen` (2026-07-28): the tasks the caller may watch, then the stream.
async fn listen_request(
    ctx: &Context,
    req: &IncomingRequest,
    closing: &CancellationToken,
    sink: &Sink,
) -> Result<Reply, ProtocolError> {
    let shared = ctx.shared();
    let id = &req.id;
    let p: ListenParams = parse(req)?;
    subscriptions::check_listen(shared, p.notifications.resource_subscriptions.as_deref())?;
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
                let found =
                    Box::pin(shared.tasks.lookup(task, Era::Modern, principal.as_deref())).await;
                if found.is_ok() {
                    visible.push(task.clone());
                }
            }
            Some(visible)
        }
    };
    Ok(listen(shared, id, p.notifications, task_ids, closing, sink).await)
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
    shared: &Shared,
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
            &complete_value(v, &shared.info_json, cache),
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
    out.extend_from_slice(&shared.meta_server_info);
    out.extend_from_slice(b"}}}");
    Ok(Reply {
        frame: out,
        error: None,
        is_error: false,
    })
}

/// `"io.modelcontextprotocol/serverInfo":` and `info` as JSON, the member [`complete_reply`]
/// splices into a result's `_meta` (encoded once per server).
pub(crate) fn meta_server_info(info_json: &Value) -> Box<[u8]> {
    // Neither can fail: a `&str` and a `Value` written into a `Vec`.
    let mut out = serde_json::to_vec(meta::SERVER_INFO).unwrap_or_default();
    out.push(b':');
    let _ = serde_json::to_writer(&mut out, info_json);
    out.into_boxed_slice()
}

/// The text sealed state names its target by: a `tools/call` or `prompts/get` is bound to its
/// name and a digest of its arguments ([`request_state::bind_arguments`]), a `resources/read`
/// to its URI.
/// Worked out only when state is unsealed or sealed.
fn bound(target: Target<'_>) -> Result<Cow<'_, str>, ProtocolError> {
    match target {
        Target::Named(name) => Ok(Cow::Borrowed(name)),
        Target::Call { name, arguments } => {
            // The same text the typed parameters were read from, so it parses as it did.
            let arguments: Option<Value> = match arguments {
                None => None,
                Some(raw) => serde_json::from_str(raw)
                    .map_err(|e| ProtocolError::InvalidParams(format!("Invalid params: {e}")))?,
            };
            Ok(Cow::Owned(request_state::bind_arguments(
                name,
                arguments.as_ref(),
            )))
        }
    }
}

/// Unseals `requestState` and merges earlier answers with this round's `inputResponses`.
fn restore_input(
    ctx: &Context,
    method: &str,
    target: Target<'_>,
    state: Option<&str>,
    responses: Option<Map<String, Value>>,
) -> Result<(), ProtocolError> {
    let mut input = InputState::default();
    if let Some(token) = state {
        let shared = ctx.shared();
        let max = shared.config.max_request_state_bytes;
        if token.len() > max {
            return Err(ProtocolError::InvalidParams(format!(
                "Invalid params: requestState is longer than {max} bytes"
            )));
        }
        let target = bound(target)?;
        let sealed = request_state::unseal(
            &shared.sealing_key,
            token,
            shared.tasks.now(),
            method,
            &target,
            ctx.principal().map(|p| p.key()).as_deref(),
        )
        .map_err(|r| ProtocolError::InvalidParams(format!("Invalid params: {}", r.message())))?;
        input.responses = sealed.r;
        input.user_state = sealed.u;
        input.rounds = sealed.n;
    }
    if let Some(new) = responses {
        input.responses.extend(new);
    }
    ctx.restore_input_state(input);
    Ok(())
}

/// The `InputRequiredResult` of a handler that asked for input: what it asked, and its state
/// so far sealed into `requestState`.
fn input_required(
    ctx: &Context,
    id: &RequestId,
    method: &str,
    target: Target<'_>,
    server_info: &Value,
) -> Result<Reply, ProtocolError> {
    let input = ctx.take_input_state();
    if input.requested.is_empty() && input.user_state.is_none() {
        return Err(ProtocolError::Internal(
            "the handler asked for input but named none".into(),
        ));
    }
    let shared = ctx.shared();
    let max_rounds = shared.config.max_input_rounds;
    if input.rounds >= max_rounds {
        return Err(ProtocolError::InvalidParams(format!(
            "Invalid params: the request needed more than {max_rounds} rounds of input"
        )));
    }
    // The server's one clock (`TaskConfig::clock`) times sealed state as it times tasks.
    let expiry = shared.tasks.now() + shared.config.request_state_ttl.as_millis() as u64;
    let sealed = SealedState {
        m: method.into(),
        t: bound(target)?.into_owned(),
        e: expiry,
        p: ctx.principal().map(|p| p.key()),
        r: input.responses,
        u: input.user_state,
        n: input.rounds + 1,
    };
    let requests: Map<String, Value> = input
        .requested
        .into_iter()
        .map(|(k, r)| (k, serde_json::to_value(r).unwrap_or(Value::Null)))
        .collect();
    let state = request_state::seal(&shared.sealing_key, &sealed);
    let max = shared.config.max_request_state_bytes;
    if state.len() > max {
        return Err(ProtocolError::InvalidParams(format!(
            "Invalid params: the answers and state of this request's input rounds need a \
             requestState longer than {max} bytes"
        )));
    }
    let mut result = json!({
        "resultType": "input_required",
        "requestState": state,
        "_meta": { meta::SERVER_INFO: server_info },
    });
    if !requests.is_empty() {
        result["inputRequests"] = Value::Object(requests);
    }
    Ok(result_reply(Era::Modern, id, &result))
}

/// `subscriptions/listen`: acknowledge, then forward matching events until cancelled or closed.
async fn listen(
    shared: &Arc<Shared>,
    id: &RequestId,
    filter: SubscriptionFilter,
    task_ids: Option<Vec<String>>,
    closing: &CancellationToken,
    sink: &Sink,
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
    let interest = ListenInterest {
        tools: wants("toolsListChanged"),
        prompts: wants("promptsListChanged"),
        resources: wants("resourcesListChanged"),
        uris,
        task_ids,
    };
    let tag = json!({ meta::SUBSCRIPTION_ID: sub_id });
    let ack = json!({ "notifications": honoured, "_meta": tag });
    let acknowledged = <methods::SubscriptionsAcknowledged as NotificationMethod>::NAME;
    let _ = sink
        .send(jsonrpc::encode_notification(acknowledged, &ack).unwrap_or_default())
        .await;
    let server_shutdown = shared.shutdown.clone();
    loop {
        let event = tokio::select! {
            _ = closing.cancelled() => break,
            _ = server_shutdown.cancelled() => break,
            e = events.recv() => e,
        };
        let frame = match event {
            Ok(event) => match events::notification(&event, &interest, Some(&tag)) {
                Some(frame) => frame,
                None => continue,
            },
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
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

/// What a listen stream hears about: what its filter asked for and the server honoured.
struct ListenInterest {
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: Vec<String>,
    task_ids: Vec<String>,
}

impl events::Interest for ListenInterest {
    fn tools(&self) -> bool {
        self.tools
    }
    fn prompts(&self) -> bool {
        self.prompts
    }
    fn resources(&self) -> bool {
        self.resources
    }
    fn resource(&self, uri: &str) -> bool {
        self.uris.iter().any(|u| u == uri)
    }
    fn task(&self, task: &TaskRecord) -> bool {
        task.era == Era::Modern && self.task_ids.contains(&task.id)
    }
}
