//! A client's call, carried to its upstream and back, across revisions.
//!
//! The gateway's handler runs the upstream call (in a task of its own when the call may be
//! held) and relays what the upstream sends meanwhile: progress and log messages go to the
//! client; a request for input (elicitation, sampling, roots, whether a 2025-11-25 upstream
//! sent it as a request or a 2026-07-28 upstream as an `InputRequiredResult`) is asked of the
//! client through the handler's [`Context`]. A 2025-11-25 client gets a real request and the
//! call goes on; a 2026-07-28 client gets an `InputRequiredResult`, and the upstream call is
//! *held* in [`Holds`] under an id carried in the sealed `requestState`, until the client's
//! retry brings the answer (or the hold times out, which cancels the upstream call).

use crate::upstream::{Event, RouteGuard, Session, Upstream};
use duomcp::client::{AwaitingInput, ClientError, InputError, RequestOptions};
use duomcp::era::Era;
use duomcp::era::ProtocolError;
use duomcp::server::{Context, HandlerError, InputRequired, RawToolResult, ToolOutput};
use duomcp_schema::{CallToolResult, GetPromptResult, InputRequest};
use futures_util::stream::{FuturesUnordered, StreamExt as _};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// Events buffered per call between the upstream and the handler (progress beyond it is
/// dropped, never blocking the upstream connection).
const EVENT_BUFFER: usize = 64;

type Reply = oneshot::Sender<Result<Value, String>>;

/// An upstream's answer: a result as it came, the typed call's tool result (a 2025-11-25
/// upstream's, or a 2026-07-28 one's the gateway does not relay), handed on as it is rather
/// than through a `Value` and back, or a relayed 2026-07-28 upstream's complete tool result
/// as its text, which the gateway's server writes into its answer unparsed.
enum Answer {
    Value(Value),
    Tool(Box<CallToolResult>),
    Raw(RawToolResult),
}

impl Answer {
    fn is_error(&self) -> bool {
        match self {
            Answer::Value(v) => v.get("isError") == Some(&Value::Bool(true)),
            Answer::Tool(r) => r.is_error == Some(true),
            Answer::Raw(r) => r.is_error(),
        }
    }
}

/// The members of an upstream's result that the gateway's own server sets again (or, for
/// `_meta`, that are the upstream's own: its `serverInfo`).
const ENVELOPE: [&str; 4] = ["resultType", "ttlMs", "cacheScope", "_meta"];

/// A `tools/call` answer kept as its text (a relayed 2026-07-28 upstream's, or a 2025-11-25
/// one's for a 2025-11-25 client): a complete result stays text (without the [`ENVELOPE`]
/// members); a relayed input round or task, which the gateway reads, is parsed.
fn raw_tool_answer(raw: Box<RawValue>, relay: bool) -> Result<Answer, ClientError> {
    let malformed =
        |e: serde_json::Error| ClientError::Protocol(format!("the result of tools/call: {e}"));
    // One scan: the envelope left out, `resultType` read.
    let (result, kind) =
        RawToolResult::without_reading(raw, &ENVELOPE, "resultType").map_err(malformed)?;
    match kind.as_deref() {
        None | Some("complete") => Ok(Answer::Raw(result)),
        Some(kind @ ("input_required" | "task")) if relay => {
            // Rare: read whole, with its `resultType` (what the rest of the envelope held is
            // not needed to relay an input round or follow a task).
            let mut value: Value = serde_json::from_str(result.get()).map_err(malformed)?;
            if let Some(o) = value.as_object_mut() {
                o.insert("resultType".into(), Value::String(kind.to_owned()));
            }
            Ok(Answer::Value(value))
        }
        Some(other) => Err(ClientError::Protocol(format!(
            "the result of tools/call has an unknown resultType {other:?}"
        ))),
    }
}

/// Whether the client of `ctx` takes log messages: only then does a call wait, after its
/// upstream result, for the log messages received before it to be routed to it
/// (`Session::routed_so_far`). Progress needs no wait: the
/// upstream client hands a call its progress before its result.
fn takes_logs(ctx: &Context) -> bool {
    ctx.log_level().is_some()
}

/// Aborts the upstream call's task when dropped: an abandoned hold cancels the call.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The upstream call's work: the request, then its answer read as far as the gateway needs.
type Work = Pin<Box<dyn Future<Output = Result<Answer, ClientError>> + Send>>;

/// How the handler waits for the upstream call's answer.
enum Done {
    /// Run in a task of its own: a call that may be held for a 2026-07-28 client's retry
    /// outlives its handler (dropping the task's handle cancels it).
    Task {
        answer: oneshot::Receiver<Result<Answer, ClientError>>,
        _task: AbortOnDrop,
    },
    /// Polled by the handler itself: both sides speak one revision, so the call is never held,
    /// and a task (its scheduling, the wake-ups between it and the handler) would be overhead.
    Inline(Work),
}

impl Done {
    /// Runs `work` in a task of its own (aborted when this is dropped).
    fn spawn(work: Work) -> Done {
        let (answer_tx, answer) = oneshot::channel();
        let task = tokio::spawn(async move {
            let _ = answer_tx.send(work.await);
        });
        Done::Task {
            answer,
            _task: AbortOnDrop(task),
        }
    }
}

impl Future for Done {
    /// `None`: the task ended without an answer.
    type Output = Option<Result<Answer, ClientError>>;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Done::Task { answer, .. } => Pin::new(answer).poll(cx).map(Result::ok),
            Done::Inline(work) => work.as_mut().poll(cx).map(Some),
        }
    }
}

/// The end of an upstream call, once it has its result: the log messages the upstream sent
/// before the result become this call's events before the result does (its progress already
/// has), then the call leaves the route table, before the client has the result (see
/// `Routes`).
async fn settle(logs: Option<Arc<Session>>, route: Option<RouteGuard>) {
    if let Some(session) = logs {
        session.routed_so_far().await;
    }
    drop(route);
}

/// Runs an upstream call, then settles it (see [`settle`]). (Its concurrency permit is the
/// [`Call`]'s: released while the call waits for its client.)
///
/// The call is made here, by `make`: a future passed in would be stored twice in this one's
/// (once as the argument, once while awaited).
async fn settled<F: Future<Output = Result<Answer, ClientError>>>(
    make: impl FnOnce() -> F,
    logs: Option<Arc<Session>>,
    route: Option<RouteGuard>,
) -> Result<Answer, ClientError> {
    let result = make().await;
    settle(logs, route).await;
    result
}

/// An upstream call in flight, with the input requests it waits on.
struct Call {
    /// What the upstream sends during the call (`None`: a call that can be sent nothing, see
    /// `start`, or whose channel closed).
    events: Option<mpsc::Receiver<Event>>,
    done: Done,
    pending: Vec<(String, Box<InputRequest>, Reply)>,
    next_key: u32,
    upstream: Arc<Upstream>,
    /// The upstream's `InputRequiredResult`s come back as results, to relay.
    relay: bool,
    /// `sse_poll_after_ms` of the upstream.
    poll_after: Option<Duration>,
    /// The capabilities the upstream asked for and the client lacks: when the call then
    /// fails, this is why (the client gets `MissingRequiredClientCapability`).
    missing: Option<Value>,
    /// Its share of the upstream's concurrency, while it runs: given back as soon as it waits
    /// for its client (held work never keeps a shared permit).
    permit: Option<crate::upstream::Permit>,
    /// Whose call it is (see [`owner`]), for the per-principal bound on held calls.
    owner: Option<String>,
    /// Set while the call waits for its client's answers: the upstream's requests that
    /// nothing ties to a call may then belong to another call on its session (see
    /// [`AwaitingInput`]).
    awaiting: AwaitingInput,
    /// Answers of the round so far, sent upstream once the whole round is answered (while
    /// one is still unanswered, the call waits for its client, see `awaiting`).
    answered: Vec<(Reply, Result<Value, String>)>,
}

impl Call {
    /// A call just started: nothing pending yet.
    fn new(
        upstream: &Arc<Upstream>,
        events: Option<mpsc::Receiver<Event>>,
        done: Done,
        relay: bool,
        owner: Option<String>,
        awaiting: AwaitingInput,
    ) -> Call {
        Call {
            events,
            done,
            pending: Vec::new(),
            next_key: 0,
            upstream: upstream.clone(),
            relay,
            poll_after: upstream.config.sse_poll_after(),
            missing: None,
            permit: None,
            owner,
            awaiting,
            answered: Vec::new(),
        }
    }

    /// Queues an upstream request for the client, under the key the upstream's handler gave
    /// it (a duomcp upstream says it in `_meta`) or one of the gateway's own.
    fn push_input(&mut self, mut request: Box<InputRequest>, reply: Reply) {
        let key = input_key(&mut request, &self.pending, &mut self.next_key);
        self.pending.push((key, request, reply));
    }
}

/// The key to ask `request` under: the one its upstream gave it (taken from it), unless a
/// request `in_use` has it; else one of the gateway's own (`gateway-N`, `next_key` counting).
fn input_key(
    request: &mut InputRequest,
    in_use: &[(String, Box<InputRequest>, Reply)],
    next_key: &mut u32,
) -> String {
    match take_input_key(request) {
        Some(k) if !in_use.iter().any(|(p, _, _)| *p == k) => k,
        _ => {
            *next_key += 1;
            format!("gateway-{next_key}")
        }
    }
}

/// How long the gateway waits after an upstream's request for input for more of them, to ask
/// the client all at once (a 2025-11-25 upstream sends requests one by one, even those its
/// handler asks for together); bounded, and only paid on calls that ask for input.
pub const INPUT_GATHER: Duration = Duration::from_millis(25);

/// The key a duomcp upstream's handler gave this request ([`duomcp::server::INPUT_KEY_META`]
/// in its `_meta`), removed from the request (the client does not need it).
fn take_input_key(request: &mut InputRequest) -> Option<String> {
    let slot = match request {
        InputRequest::Elicit(duomcp_schema::ElicitRequestParams::Form(p)) => &mut p.meta,
        InputRequest::Elicit(duomcp_schema::ElicitRequestParams::Url(p)) => &mut p.meta,
        InputRequest::CreateMessage(p) => &mut p.meta,
        InputRequest::ListRoots(_) => return None,
    };
    let meta = slot.as_mut()?;
    let key = meta.remove(duomcp::server::INPUT_KEY_META)?;
    if meta.is_empty() {
        *slot = None;
    }
    key.as_str().filter(|k| !k.is_empty()).map(str::to_owned)
}

/// What the gateway keeps in the sealed `requestState` of its `InputRequiredResult`.
#[derive(Serialize, Deserialize)]
#[serde(tag = "k")]
enum GatewayState {
    /// The upstream call held in [`Holds`] under this id.
    Hold { hold: String },
    /// A 2026-07-28 upstream's own round, relayed: its `requestState` and `inputRequests`.
    Relay {
        state: Option<Value>,
        requests: Map<String, Value>,
    },
}

/// Upstream calls held for a 2026-07-28 client's retry: bounded in number, per principal, and
/// in time.
pub struct Holds {
    calls: Mutex<HashMap<String, Call>>,
    next: AtomicU64,
    ttl: Duration,
    max: usize,
    per_principal: usize,
}

impl Holds {
    /// At most `max` held calls, `per_principal` of them for one principal, each for at most
    /// `ttl`.
    pub fn new(ttl: Duration, max: usize, per_principal: usize) -> Arc<Self> {
        Arc::new(Holds {
            calls: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            ttl,
            max: max.max(1),
            per_principal: per_principal.max(1),
        })
    }

    /// How many calls of the principal with this [`Principal::key`](duomcp::server::Principal::key)
    /// are held now.
    pub fn held_by(&self, principal: &str) -> usize {
        self.lock()
            .values()
            .filter(|c| c.owner.as_deref() == Some(principal))
            .count()
    }

    /// How many calls to the upstream named `upstream` are held now.
    pub fn held_for(&self, upstream: &str) -> usize {
        self.lock()
            .values()
            .filter(|c| c.upstream.name() == upstream)
            .count()
    }

    /// How many calls are held now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no call is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Call>> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn hold(self: &Arc<Self>, call: Call) -> Result<String, HandlerError> {
        let id = format!("h{}", self.next.fetch_add(1, Ordering::Relaxed));
        {
            let mut calls = self.lock();
            if calls.len() >= self.max {
                return Err(HandlerError::msg(format!(
                    "the gateway holds {} calls waiting for input already; try again later",
                    self.max
                )));
            }
            let owner = &call.owner;
            if owner.is_some()
                && calls.values().filter(|c| c.owner == *owner).count() >= self.per_principal
            {
                tracing::warn!(upstream = %call.upstream.name(), "a principal reached its bound on held calls; its upstream call is cancelled");
                return Err(HandlerError::msg(format!(
                    "you have {} calls waiting for your input already: answer or abandon one \
                     first",
                    self.per_principal
                )));
            }
            calls.insert(id.clone(), call);
        }
        let me = Arc::downgrade(self);
        let (key, ttl) = (id.clone(), self.ttl);
        tokio::spawn(async move {
            tokio::time::sleep(ttl).await;
            if let Some(holds) = me.upgrade() {
                if let Some(call) = holds.lock().remove(&key) {
                    tracing::debug!(hold = %key, upstream = %call.upstream.name(), "hold timed out; cancelling the upstream call");
                }
            }
        });
        Ok(id)
    }

    fn take(&self, id: &str) -> Option<Call> {
        self.lock().remove(id)
    }
}

/// What the gateway knows of an upstream tool from its listing.
#[derive(Clone, Copy, Default)]
pub(crate) struct ToolFlags {
    /// A 2025-11-25 upstream's task tool that gathers its input before it becomes a task.
    pub deferred: bool,
    /// A 2025-11-25 upstream's tool that never runs as a task: its result, for a 2025-11-25
    /// client, is handed on as the upstream's text (nothing to follow, nothing to bridge).
    pub plain: bool,
}

/// The handler of every bridged tool: calls `name` on `upstream` for the client of `ctx`.
pub(crate) async fn call_tool(
    upstream: Arc<Upstream>,
    holds: Arc<Holds>,
    ctx: Context,
    name: String,
    arguments: Value,
    flags: ToolFlags,
) -> Result<ToolOutput, HandlerError> {
    // `[[upstream.access]]`: the scopes were checked by the runtime (the tool's spec names
    // them); the principals are checked here.
    if !upstream.config.admits_principal(&name, ctx.principal()) {
        return Err(ProtocolError::InvalidParams(format!(
            "Invalid params: the tool `{}` is not available to you (the gateway's access rules \
             for upstream `{}`)",
            upstream.naming.outer(&name),
            upstream.name()
        ))
        .into());
    }
    let mut params = Map::new();
    params.insert("name".into(), Value::String(name));
    if arguments.as_object().is_some_and(|a| !a.is_empty()) {
        params.insert("arguments".into(), arguments);
    }
    match forward(&upstream, &holds, &ctx, "tools/call", params, flags).await? {
        Answer::Value(value) => decode::<CallToolResult>(&upstream, value).map(ToolOutput::from),
        Answer::Tool(result) => {
            // What `decode` leaves out of a result as it came.
            let mut result = *result;
            result.result_type = None;
            result.meta = None;
            result.extra.remove("ttlMs");
            result.extra.remove("cacheScope");
            Ok(result.into())
        }
        Answer::Raw(result) => Ok(result.into()),
    }
}

/// The handler of every bridged prompt.
pub(crate) async fn get_prompt(
    upstream: Arc<Upstream>,
    holds: Arc<Holds>,
    ctx: Context,
    name: String,
    arguments: Map<String, Value>,
) -> Result<GetPromptResult, HandlerError> {
    let mut params = Map::new();
    params.insert("name".into(), Value::String(name));
    if !arguments.is_empty() {
        params.insert("arguments".into(), Value::Object(arguments));
    }
    let flags = ToolFlags::default();
    let value = match forward(&upstream, &holds, &ctx, "prompts/get", params, flags).await? {
        Answer::Value(value) => value,
        // (Only `tools/call` is made typed, or kept as text.)
        Answer::Tool(result) => serde_json::to_value(result)
            .map_err(|e| HandlerError::msg(format!("upstream `{}`: {e}", upstream.name())))?,
        Answer::Raw(result) => serde_json::from_str(result.get())
            .map_err(|e| HandlerError::msg(format!("upstream `{}`: {e}", upstream.name())))?,
    };
    decode(&upstream, value)
}

/// A complete result, without the envelope fields the gateway's own server sets again.
fn decode<T: serde::de::DeserializeOwned>(
    upstream: &Upstream,
    mut value: Value,
) -> Result<T, HandlerError> {
    if let Some(o) = value.as_object_mut() {
        for k in ["resultType", "ttlMs", "cacheScope", "_meta"] {
            o.remove(k);
        }
    }
    serde_json::from_value(value).map_err(|e| {
        HandlerError::msg(format!(
            "upstream `{}` sent a malformed result: {e}",
            upstream.name()
        ))
    })
}

/// Carries `method` with `params` to the upstream and back; see the module's header.
async fn forward(
    upstream: &Arc<Upstream>,
    holds: &Arc<Holds>,
    ctx: &Context,
    method: &'static str,
    params: Map<String, Value>,
    flags: ToolFlags,
) -> Result<Answer, HandlerError> {
    let started = std::time::Instant::now();
    let answer = forward_uncounted(upstream, holds, ctx, method, params, flags).await;
    upstream.record(method, started.elapsed(), &answer, Answer::is_error);
    answer
}

/// [`forward`], uncounted.
async fn forward_uncounted(
    upstream: &Arc<Upstream>,
    holds: &Arc<Holds>,
    ctx: &Context,
    method: &'static str,
    params: Map<String, Value>,
    flags: ToolFlags,
) -> Result<Answer, HandlerError> {
    let state = ctx.request_state::<GatewayState>();
    // A deferred task tool (a 2025-11-25 upstream's, for a 2026-07-28 client) becomes the
    // gateway's task once the client's answers resume it (one that asks nothing answers
    // inline, as a deferred tool does).
    let mut detach = false;
    let call = match state {
        Some(GatewayState::Hold { hold }) => {
            let call = holds.take(&hold).ok_or_else(|| {
                HandlerError::msg(
                    "the upstream call waiting for this input is gone (its hold timed out, or it \
                     was answered already): call the tool again",
                )
            })?;
            detach = flags.deferred && ctx.era() == Era::Modern;
            call
        }
        relayed => {
            let session = upstream
                .session_for(ctx)
                .await
                .map_err(|e| upstream_failure(upstream.name(), e))?;
            // Both sides 2026-07-28: the upstream's input rounds are the client's, relayed.
            let relay = ctx.era() == Era::Modern && session.client.era() == Era::Modern;
            let mut params = params;
            if relay && relayed.is_none() {
                // Answers the client brought unasked (no round of ours): the upstream decides
                // what they answer (a server ignores the keys it did not ask for).
                let given = ctx.input_responses();
                if !given.is_empty() {
                    params.insert("inputResponses".into(), Value::Object(given));
                }
            }
            if relay {
                if let Some(GatewayState::Relay { state, requests }) = relayed {
                    let responses = Box::pin(answers(ctx, &requests)).await?;
                    let Some(responses) = responses else {
                        ctx.set_request_state(GatewayState::Relay { state, requests });
                        return Err(InputRequired.into());
                    };
                    params.insert("inputResponses".into(), Value::Object(responses));
                    if let Some(state) = state {
                        params.insert("requestState".into(), state);
                    }
                }
            }
            // Both sides 2025-11-25 and a tool that is never a task: the answer is handed on as
            // the upstream's text too.
            let plain =
                flags.plain && ctx.era() == Era::Legacy && session.client.era() == Era::Legacy;
            start(upstream, &session, ctx, method, params, relay, plain).await?
        }
    };
    if detach {
        Box::pin(ctx.detach()).await;
    }
    let (answer, relay) = drive(ctx, call, holds).await?;
    let Answer::Value(value) = answer else {
        return Ok(answer);
    };
    // The rare continuations are boxed: inline, their state would make every call's future
    // (which the server boxes, copying it) several times larger.
    match value.get("resultType").and_then(Value::as_str) {
        Some("input_required") if relay => Box::pin(relay_round(upstream, ctx, value))
            .await
            .map(Answer::Value),
        Some("task") if relay => Box::pin(follow_task(upstream, ctx, holds, value)).await,
        _ => Ok(Answer::Value(value)),
    }
}

/// A 2026-07-28 upstream answered with a task: the call becomes a task of the gateway's own
/// (the client gets a `CreateTaskResult` and polls the gateway) when the client can take one,
/// and the gateway follows the upstream's task to its result either way, relaying its input
/// requests (parked as the gateway task's `input_required`, or as input rounds inline).
async fn follow_task(
    upstream: &Arc<Upstream>,
    ctx: &Context,
    holds: &Arc<Holds>,
    created: Value,
) -> Result<Answer, HandlerError> {
    let Some(task_id) = created
        .get("taskId")
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        return Err(HandlerError::msg(format!(
            "upstream `{}` answered with a task without a taskId",
            upstream.name()
        )));
    };
    ctx.detach().await;
    let session = upstream
        .session_for(ctx)
        .await
        .map_err(|e| upstream_failure(upstream.name(), e))?;
    let (tx, events) = mpsc::channel(EVENT_BUFFER);
    let route = Some(session.routes.enter(tx.clone(), takes_logs(ctx)));
    let handle = session.client.task(task_id);
    let logs = takes_logs(ctx).then(|| session.clone());
    // The task's requests for input are this call's, and no other's.
    let awaiting = AwaitingInput::new();
    let options = RequestOptions::new()
        .on_input(answerer(tx))
        .awaiting_input(awaiting.clone());
    // Boxed: the task's cell (and every stage it goes through) then holds a pointer, not the
    // upstream call's whole future, copied each time.
    let result = move || async move {
        handle
            .result_with(options)
            .await
            .map(|r| Answer::Tool(Box::new(r)))
    };
    let work: Work = Box::pin(settled(result, logs, route));
    let call = Call::new(
        upstream,
        Some(events),
        Done::spawn(work),
        false,
        owner(ctx),
        awaiting,
    );
    Ok(drive(ctx, call, holds).await?.0)
}

/// A relayed upstream `InputRequiredResult`: its input requests become the client's, under the
/// upstream's own keys, and its `requestState` rides in the gateway's sealed one.
async fn relay_round(
    upstream: &Arc<Upstream>,
    ctx: &Context,
    value: Value,
) -> Result<Value, HandlerError> {
    let requests = value
        .get("inputRequests")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let state = value.get("requestState").cloned();
    if requests.is_empty() && state.is_none() {
        return Err(HandlerError::msg(format!(
            "upstream `{}` asked for input without inputRequests or requestState",
            upstream.name()
        )));
    }
    for (key, raw) in &requests {
        let request: InputRequest = serde_json::from_value(raw.clone()).map_err(|e| {
            HandlerError::msg(format!(
                "upstream `{}`: input request `{key}`: {e}",
                upstream.name()
            ))
        })?;
        match ask_client(ctx, key, &request).await {
            Ok(_) | Err(HandlerError::InputRequired(_)) => {}
            Err(e) => return Err(e),
        }
    }
    ctx.set_request_state(GatewayState::Relay { state, requests });
    Err(InputRequired.into())
}

/// The client's answers to the relayed `requests`, or `None` when one is still missing (the
/// missing ones are asked again).
async fn answers(
    ctx: &Context,
    requests: &Map<String, Value>,
) -> Result<Option<Map<String, Value>>, HandlerError> {
    let mut out = Map::new();
    let mut missing = false;
    for (key, raw) in requests {
        let Ok(request) = serde_json::from_value::<InputRequest>(raw.clone()) else {
            continue;
        };
        match ask_client(ctx, key, &request).await {
            Ok(v) => {
                out.insert(key.clone(), v);
            }
            Err(HandlerError::InputRequired(_)) => missing = true,
            Err(e) => return Err(e),
        }
    }
    Ok((!missing).then_some(out))
}

/// Starts the upstream call: in a task of its own when the call may be held (see [`Done`]).
async fn start(
    upstream: &Arc<Upstream>,
    session: &Arc<Session>,
    ctx: &Context,
    method: &'static str,
    params: Map<String, Value>,
    relay: bool,
    plain: bool,
) -> Result<Call, HandlerError> {
    let owner = owner(ctx);
    let permit = upstream.permit(owner.as_deref()).await;
    let logs = takes_logs(ctx).then(|| session.clone());
    // A relayed call (both sides 2026-07-28) is sent nothing during the call but the progress
    // and log messages its request asked for: the upstream's requests for input come back as
    // results, relayed, not through the upstream client's input handlers (which route them to
    // a call in the table). One that asks for neither needs no channel, nor a place in the
    // route table (a log message, which names no request, can only be a call's that asked for
    // log messages).
    let quiet = relay && logs.is_none() && !ctx.wants_progress();
    let (route, events, progress) = if quiet {
        (None, None, None)
    } else {
        let (tx, events) = mpsc::channel(EVENT_BUFFER);
        let route = session.routes.enter(tx.clone(), logs.is_some());
        (Some(route), Some(events), Some(tx))
    };
    let client = session.client.clone();
    let mut options = RequestOptions::new().timeout(upstream.config.timeout());
    // The upstream's requests for input that belong to this call (see `on_input`) come to this
    // call, and only to it. (A quiet call has no input to answer: both sides 2026-07-28, its
    // rounds come back as results, relayed.)
    let awaiting = AwaitingInput::new();
    if let Some(tx) = &progress {
        options = options
            .on_input(answerer(tx.clone()))
            .awaiting_input(awaiting.clone());
    }
    // A 2026-07-28 upstream logs at the level a request names, and only then: the client's own
    // (one that asked for none would get none from the gateway's server either). A 2025-11-25
    // upstream logs at its session's level, set once (see `upstream::connect`).
    if let Some(level) = ctx.log_level() {
        options = options.log_level(level);
    }
    // Upstream progress is asked for (and routed) only when the client asked for progress.
    if let (true, Some(progress)) = (ctx.wants_progress(), progress) {
        options = options.on_progress(move |p| {
            let _ = progress.try_send(Event::Progress(Box::new(p.clone())));
        });
    }
    if relay {
        // Both sides 2026-07-28: the upstream sees what this client declared, per request
        // (what it may ask for, whether it takes tasks).
        options = options.relay_input_required();
        if let Ok(caps) = serde_json::to_value(ctx.client_capabilities()) {
            options = options.meta("io.modelcontextprotocol/clientCapabilities", caps);
        }
    }
    // Boxed: the task's cell or the handler's future (and every stage it goes through) then
    // holds a pointer, not the upstream call's whole future, copied each time. Each kind of
    // call on its own: one async block for all three would be as large as the largest (the
    // typed call's) for every call.
    let work: Work = if method == "tools/call" && !relay && !plain {
        // The typed call follows a task to its result (results inline).
        let mut params = params;
        let name = match params.remove("name") {
            Some(Value::String(name)) => name,
            _ => String::new(),
        };
        let arguments = params
            .remove("arguments")
            .unwrap_or(Value::Object(Map::new()));
        let call = move || async move {
            client
                .call_tool_with(&name, arguments, options)
                .await
                .map(|r| Answer::Tool(Box::new(r)))
        };
        Box::pin(settled(call, logs, route))
    } else if method == "tools/call" {
        // Relayed, or plain: the answer is read no further than its `resultType` (see
        // `raw_tool_answer`).
        let call = move || async move {
            let raw = client.request_raw(method, params, options).await?;
            raw_tool_answer(raw, relay)
        };
        Box::pin(settled(call, logs, route))
    } else {
        let call = move || async move {
            client
                .request_object(method, params, options)
                .await
                .map(Answer::Value)
        };
        Box::pin(settled(call, logs, route))
    };
    // Only a bridged call (a 2025-11-25 upstream's request for a 2026-07-28 client) can be held.
    let done = if relay || plain {
        Done::Inline(work)
    } else {
        Done::spawn(work)
    };
    let mut call = Call::new(upstream, events, done, relay, owner, awaiting);
    call.permit = permit;
    Ok(call)
}

/// Whose call this is, for the per-principal bounds: the authenticated principal's key;
/// `None` for a client without one (no `[auth]`), which only the gateway-wide bounds limit
/// (anonymous clients cannot be told apart, and counting them as one would let one of them
/// starve the others).
pub(crate) fn owner(ctx: &Context) -> Option<String> {
    ctx.principal().map(|p| p.key())
}

/// A call's own answerer of its upstream's requests for input: each one goes to the call's
/// event channel (so to this call's client, see `drive`), and its answer back.
fn answerer(
    tx: mpsc::Sender<Event>,
) -> impl Fn(InputRequest) -> Pin<Box<dyn Future<Output = Result<Value, InputError>> + Send>>
       + Send
       + Sync
       + 'static {
    move |request| {
        let tx = tx.clone();
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            tx.send(Event::Input {
                request: Box::new(request),
                reply,
            })
            .await
            .map_err(|_| InputError::new("the call this request belongs to has ended"))?;
            match answer.await {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(InputError::new(e)),
                Err(_) => Err(InputError::new(
                    "the client did not answer (the held call was abandoned)",
                )),
            }
        })
    }
}

/// Relays the call's events until it completes, or holds it when the client must answer first.
async fn drive(
    ctx: &Context,
    mut call: Call,
    holds: &Arc<Holds>,
) -> Result<(Answer, bool), HandlerError> {
    // SSE polling: a 2025-11-25 client's stream closes once the call has run this long (a
    // no-op for other clients and transports).
    let poll_after = call.poll_after;
    let poll = async move {
        match poll_after {
            Some(after) => tokio::time::sleep(after).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(poll);
    let mut polled = false;
    loop {
        let mut unanswered = Vec::new();
        // Asked together: a task's client (`tasks/update`) may answer them in any order.
        let pending = std::mem::take(&mut call.pending);
        let asked = if pending.is_empty() {
            Vec::new()
        } else {
            // Waiting for the client: the upstream's concurrency is for calls that run, and
            // its untied requests are for the calls that could have asked.
            call.permit = None;
            call.awaiting.set(true);
            Box::pin(ask_round(ctx, &mut call, pending)).await
        };
        for ((key, request, reply), answer) in asked {
            match answer {
                Ok(v) => call.answered.push((reply, Ok(v))),
                Err(HandlerError::InputRequired(_)) => unanswered.push((key, request, reply)),
                // (A client that cannot answer, `MissingClientCapability` included, gets the
                // upstream request answered with the error and the call goes on: a 2025-11-25
                // upstream's request may not even belong to this call, e.g. its `roots/list`
                // after `initialized`, routed to the newest call in flight.)
                Err(e) => {
                    if let HandlerError::Protocol(ProtocolError::MissingClientCapability(caps)) = &e
                    {
                        call.missing = Some(caps.clone());
                    }
                    call.answered.push((reply, Err(e.to_string())));
                }
            }
        }
        if !unanswered.is_empty() {
            if !ctx.may_ask_for_input() {
                // The server would refuse this round: nothing is held (dropping the call
                // cancels it upstream), and the client learns why now.
                return Err(ProtocolError::InvalidParams(
                    "Invalid params: the request needed more rounds of input than the server \
                     allows"
                        .into(),
                )
                .into());
            }
            call.pending = unanswered;
            // (Still waiting for the client, now for its next round.)
            let hold = holds.hold(call)?;
            ctx.set_request_state(GatewayState::Hold { hold });
            return Err(InputRequired.into());
        }
        // The round is complete: the call runs again (so said before the answers go: a
        // request its handler sends after them is then the call's), and the upstream gets
        // every answer of the round at once.
        call.awaiting.set(false);
        for (reply, answer) in call.answered.drain(..) {
            let _ = reply.send(answer);
        }
        // No branch watches the request's cancellation: the server drops a cancelled
        // request's handler (`handle_request`, or the task runtime once detached), and with it
        // this future, the upstream call (`Done`) and its task.
        tokio::select! {
            biased;
            event = next_event(&mut call.events), if call.events.is_some() => match event {
                Some(Event::Input { request, reply }) => {
                    call.push_input(request, reply);
                    // Input requests sent together go to the client in the same round.
                    let until = tokio::time::Instant::now() + INPUT_GATHER;
                    loop {
                        match tokio::time::timeout_at(until, next_event(&mut call.events)).await {
                            Ok(Some(Event::Input { request, reply })) => {
                                call.push_input(request, reply)
                            }
                            Ok(Some(other)) => Box::pin(relay(ctx, other)).await,
                            Ok(None) => {
                                call.events = None;
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                }
                Some(other) => Box::pin(relay(ctx, other)).await,
                None => call.events = None,
            },
            result = &mut call.done => {
                // Progress and logs sent before the result reach the client first: they are
                // queued already (see `start`), so nothing is waited for.
                while let Some(Ok(event)) = call.events.as_mut().map(mpsc::Receiver::try_recv) {
                    Box::pin(relay(ctx, event)).await;
                }
                // The upstream failed after asking for what the client cannot give: that is
                // the client's error to see.
                let failed = match &result {
                    Some(Ok(answer)) => answer.is_error(),
                    _ => true,
                };
                if let (true, Some(caps)) = (failed, call.missing.take()) {
                    return Err(ProtocolError::MissingClientCapability(caps).into());
                }
                return match result {
                    Some(r) => r.map(|v| (v, call.relay)).map_err(|e| upstream_failure(call.upstream.name(), e)),
                    None => Err(HandlerError::msg(format!(
                        "upstream `{}`: the call ended without a result",
                        call.upstream.name()
                    ))),
                };
            }
            _ = &mut poll, if !polled => {
                polled = true;
                ctx.close_sse_stream().await;
            }
        }
    }
}

/// The call's next event (`None` once the channel closed; never, without a channel).
async fn next_event(events: &mut Option<mpsc::Receiver<Event>>) -> Option<Event> {
    match events {
        Some(events) => events.recv().await,
        None => std::future::pending().await,
    }
}

/// One input request of a round, and the client's answer to it.
type Asked = (
    (String, Box<InputRequest>, Reply),
    Result<Value, HandlerError>,
);

/// Asks the client every pending input request at once, and any the upstream sends while the
/// client has not answered yet (a task's client answers when it likes, in any order: a request
/// the upstream's handler sends meanwhile, e.g. the second of two it asks together, joins the
/// round rather than wait for the others' answers). Returns when every one has its answer (or
/// is `InputRequired`, at once, for a client asked in rounds); in the order asked.
async fn ask_round(
    ctx: &Context,
    call: &mut Call,
    pending: Vec<(String, Box<InputRequest>, Reply)>,
) -> Vec<Asked> {
    let ask = |i: usize, key: String, request: Box<InputRequest>| async move {
        (i, ask_client(ctx, &key, &request).await)
    };
    let mut asks = FuturesUnordered::new();
    let mut items = Vec::with_capacity(pending.len());
    for (i, (key, request, reply)) in pending.into_iter().enumerate() {
        asks.push(ask(i, key.clone(), request.clone()));
        items.push((key, request, reply));
    }
    let mut answers: Vec<Option<Result<Value, HandlerError>>> = Vec::new();
    answers.resize_with(items.len(), || None);
    loop {
        tokio::select! {
            biased;
            Some((i, answer)) = asks.next() => {
                if let Some(slot) = answers.get_mut(i) {
                    *slot = Some(answer);
                }
                if asks.is_empty() {
                    break;
                }
            }
            event = next_event(&mut call.events), if call.events.is_some() => match event {
                Some(Event::Input { mut request, reply }) => {
                    let key = input_key(&mut request, &items, &mut call.next_key);
                    asks.push(ask(items.len(), key.clone(), request.clone()));
                    items.push((key, request, reply));
                    answers.push(None);
                }
                Some(other) => Box::pin(relay(ctx, other)).await,
                None => call.events = None,
            },
        }
    }
    items
        .into_iter()
        .zip(answers)
        .map(|(item, answer)| {
            let answer =
                answer.unwrap_or_else(|| Err(HandlerError::msg("the input request was not asked")));
            (item, answer)
        })
        .collect()
}

async fn relay(ctx: &Context, event: Event) {
    match event {
        Event::Progress(p) => {
            let p = *p;
            ctx.progress(p.progress, p.total, p.message).await
        }
        Event::Log(p) => {
            let p = *p;
            ctx.log_to(p.level, p.logger.as_deref(), p.data).await
        }
        Event::Input { reply, .. } => {
            let _ = reply.send(Err("unexpected input request".into()));
        }
    }
}

/// Asks the client of `ctx` (a real request in 2025-11-25, an input request in 2026-07-28).
async fn ask_client(
    ctx: &Context,
    key: &str,
    request: &InputRequest,
) -> Result<Value, HandlerError> {
    let value = match request {
        InputRequest::Elicit(p) => serde_json::to_value(ctx.elicit(key, p.clone()).await?),
        InputRequest::CreateMessage(p) => serde_json::to_value(ctx.sample(key, p.clone()).await?),
        InputRequest::ListRoots(_) => serde_json::to_value(ctx.list_roots(key).await?),
    };
    value.map_err(|e| HandlerError::msg(e.to_string()))
}

/// An upstream's failure as the client sees it: its JSON-RPC error unchanged, anything else
/// (closed, timed out) an error naming the upstream.
pub(crate) fn upstream_failure(upstream: &str, e: ClientError) -> HandlerError {
    match e {
        // The one error whose HTTP status differs (400): kept as what it is.
        ClientError::Rpc { error, .. }
            if error.code == duomcp_schema::error_code::MISSING_REQUIRED_CLIENT_CAPABILITY =>
        {
            let caps = error
                .data
                .as_ref()
                .and_then(|d| d.get("requiredCapabilities"))
                .cloned()
                .unwrap_or_default();
            ProtocolError::MissingClientCapability(caps).into()
        }
        ClientError::Rpc { error, .. } => ProtocolError::Custom(error).into(),
        other => HandlerError::msg(format!("upstream `{upstream}`: {other}")),
    }
}
