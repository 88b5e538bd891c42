//! A client's call, carried to its upstream and back, across revisions.
//!
//! The gateway's handler runs the upstream call in a task of its own and relays what the
//! upstream sends meanwhile: progress and log messages go to the client; a request for input
//! (elicitation, sampling, roots, whether a 2025-11-25 upstream sent it as a request or a
//! 2026-07-28 upstream as an `InputRequiredResult`) is asked of the client through the
//! handler's [`Context`]. A 2025-11-25 client gets a real request and the call goes on; a
//! 2026-07-28 client gets an `InputRequiredResult`, and the upstream call is *held* in
//! [`Holds`] under an id carried in the sealed `requestState`, until the client's retry
//! brings the answer (or the hold times out, which cancels the upstream call).

use crate::upstream::{Event, Upstream};
use duomcp::client::{ClientError, RequestOptions};
use duomcp::era::ProtocolError;
use duomcp::server::{Context, HandlerError, InputRequired};
use duomcp_schema::{CallToolResult, InputRequest};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// Events buffered per call between the upstream and the handler (progress beyond it is
/// dropped, never blocking the upstream connection).
const EVENT_BUFFER: usize = 64;

type Reply = oneshot::Sender<Result<Value, String>>;

/// Aborts the upstream call's task when dropped: an abandoned hold cancels the call.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// An upstream call in flight, with the input requests it waits on.
struct Call {
    events: mpsc::Receiver<Event>,
    events_open: bool,
    done: oneshot::Receiver<Result<CallToolResult, ClientError>>,
    _task: AbortOnDrop,
    pending: Vec<(String, Box<InputRequest>, Reply)>,
    next_key: u32,
    upstream: String,
}

impl Call {
    fn fresh_key(&mut self) -> String {
        self.next_key += 1;
        format!("gateway-{}", self.next_key)
    }
}

/// What the sealed `requestState` carries: the held call's id.
#[derive(Serialize, Deserialize)]
struct HoldRef {
    hold: String,
}

/// Upstream calls held for a 2026-07-28 client's retry: bounded in number and in time.
pub struct Holds {
    calls: Mutex<HashMap<String, Call>>,
    next: AtomicU64,
    ttl: Duration,
    max: usize,
}

impl Holds {
    /// At most `max` held calls, each for at most `ttl`.
    pub fn new(ttl: Duration, max: usize) -> Arc<Self> {
        Arc::new(Holds {
            calls: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            ttl,
            max: max.max(1),
        })
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
            calls.insert(id.clone(), call);
        }
        let me = Arc::downgrade(self);
        let (key, ttl) = (id.clone(), self.ttl);
        tokio::spawn(async move {
            tokio::time::sleep(ttl).await;
            if let Some(holds) = me.upgrade() {
                if let Some(call) = holds.lock().remove(&key) {
                    tracing::debug!(hold = %key, upstream = %call.upstream, "hold timed out; cancelling the upstream call");
                }
            }
        });
        Ok(id)
    }

    fn take(&self, id: &str) -> Option<Call> {
        self.lock().remove(id)
    }
}

/// The handler of every bridged tool: calls `name` on `upstream` for the client of `ctx`.
pub(crate) async fn call_tool(
    upstream: Arc<Upstream>,
    holds: Arc<Holds>,
    ctx: Context,
    name: String,
    arguments: Value,
) -> Result<CallToolResult, HandlerError> {
    let call = match ctx.request_state::<HoldRef>() {
        Some(r) => holds.take(&r.hold).ok_or_else(|| {
            HandlerError::msg(
                "the upstream call waiting for this input is gone (its hold timed out, or it \
                 was answered already): call the tool again",
            )
        })?,
        None => start(&upstream, &ctx, name, arguments).await?,
    };
    drive(&ctx, call, &holds).await
}

/// Starts the upstream call in a task of its own.
async fn start(
    upstream: &Arc<Upstream>,
    ctx: &Context,
    name: String,
    arguments: Value,
) -> Result<Call, HandlerError> {
    let session = upstream
        .session_for(ctx.client_capabilities())
        .await
        .map_err(|e| upstream_failure(upstream.name(), e))?;
    let permit = upstream.permit().await;
    let (tx, events) = mpsc::channel(EVENT_BUFFER);
    let (done_tx, done) = oneshot::channel();
    let route = session.routes.enter(tx.clone());
    let client = session.client.clone();
    let progress = tx;
    let options = RequestOptions::new()
        .timeout(upstream.config.timeout())
        .on_progress(move |p| {
            let _ = progress.try_send(Event::Progress(p.clone()));
        });
    let task = tokio::spawn(async move {
        let _route = route;
        let _permit = permit;
        let result = client.call_tool_with(&name, arguments, options).await;
        let _ = done_tx.send(result);
    });
    Ok(Call {
        events,
        events_open: true,
        done,
        _task: AbortOnDrop(task),
        pending: Vec::new(),
        next_key: 0,
        upstream: upstream.name().to_owned(),
    })
}

/// Relays the call's events until it completes, or holds it when the client must answer first.
async fn drive(
    ctx: &Context,
    mut call: Call,
    holds: &Arc<Holds>,
) -> Result<CallToolResult, HandlerError> {
    loop {
        let mut unanswered = Vec::new();
        for (key, request, reply) in std::mem::take(&mut call.pending) {
            match ask_client(ctx, &key, &request).await {
                Ok(v) => {
                    let _ = reply.send(Ok(v));
                }
                Err(HandlerError::InputRequired(_)) => unanswered.push((key, request, reply)),
                Err(e) => {
                    let _ = reply.send(Err(e.to_string()));
                }
            }
        }
        if !unanswered.is_empty() {
            call.pending = unanswered;
            let hold = holds.hold(call)?;
            ctx.set_request_state(HoldRef { hold });
            return Err(InputRequired.into());
        }
        tokio::select! {
            biased;
            event = call.events.recv(), if call.events_open => match event {
                Some(Event::Input { request, reply }) => {
                    let key = call.fresh_key();
                    call.pending.push((key, request, reply));
                    // Input requests already queued go to the client in the same round.
                    while let Ok(event) = call.events.try_recv() {
                        match event {
                            Event::Input { request, reply } => {
                                let key = call.fresh_key();
                                call.pending.push((key, request, reply));
                            }
                            other => relay(ctx, other).await,
                        }
                    }
                }
                Some(other) => relay(ctx, other).await,
                None => call.events_open = false,
            },
            result = &mut call.done => {
                // Progress and logs sent before the result reach the client first.
                while let Ok(event) = call.events.try_recv() {
                    relay(ctx, event).await;
                }
                return match result {
                    Ok(r) => r.map_err(|e| upstream_failure(&call.upstream, e)),
                    Err(_) => Err(HandlerError::msg(format!(
                        "upstream `{}`: the call ended without a result",
                        call.upstream
                    ))),
                };
            }
            _ = ctx.cancelled() => return Err(HandlerError::Cancelled),
        }
    }
}

async fn relay(ctx: &Context, event: Event) {
    match event {
        Event::Progress(p) => ctx.progress(p.progress, p.total, p.message).await,
        Event::Log(p) => ctx.log_to(p.level, p.logger.as_deref(), p.data).await,
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
        ClientError::Rpc { error, .. } => ProtocolError::Custom(error).into(),
        other => HandlerError::msg(format!("upstream `{upstream}`: {other}")),
    }
}
