//! The connection engine: request ids, correlation, timeouts, cancellation, progress, the MRTR
//! loop, caching, and routing of everything the server sends outside a response.
//!
//! One event task per connection reads the transport's unrelated messages and routes them
//! without ever waiting on the application: server→client requests run in their own tasks,
//! notifications go to broadcast or bounded channels.

use super::cache::{Cache, Invalidate, CACHEABLE};
use super::era::Local;
pub(crate) use super::era::{Negotiated, Speak};
use super::error::ClientError;
use super::handlers::{HandlerCall, Handlers};
use super::mirror::{self, ToolHeaders};
use super::notify::{OnDrop, ServerEvent, Subscription};
use super::options::{InputFn, RequestOptions};
use super::transport::{Outgoing, RequestStream, Transport, TransportEvent};
use super::validate::ToolSchemas;
use super::EraChoice;
use crate::correlation::{Correlation, Limits};
use crate::era::Era;
use crate::jsonrpc::{
    self, error_code, ErrorObject, Incoming, IncomingNotification, IncomingRequest, RequestId,
};
use crate::util::lock;
use duomcp_proto::era::modern::{progress_token, RequestParams};
use duomcp_schema::methods::{self, NotificationMethod, RequestMethod};
use duomcp_schema::{
    meta, ElicitationCompleteNotificationParams, Implementation, InputRequest, LoggingLevel,
    LoggingMessageNotificationParams, ProgressNotificationParams, ProgressToken,
    SubscriptionFilter,
};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

mod handshake;
mod mrtr;
mod route;
mod subscribe;
#[cfg(feature = "events")]
pub(crate) use subscribe::EventStream;

/// The methods during which a 2025-11-25 server may ask the client for input: the MRTR
/// methods, and `tasks/result` (a task's input).
const ASKING_METHODS: &[&str] = &[
    <methods::CallTool as RequestMethod>::NAME,
    <methods::GetPrompt as RequestMethod>::NAME,
    <methods::ReadResource as RequestMethod>::NAME,
    <methods::GetTaskPayload as RequestMethod>::NAME,
];

/// Settings fixed when the client is built.
pub(crate) struct Config {
    pub info: Implementation,
    /// `info` as written into every 2026-07-28 request's `_meta`, serialized once (`None` only
    /// if it could not be: it is then serialized per request).
    pub info_json: Option<Box<serde_json::value::RawValue>>,
    pub era: EraChoice,
    pub request_timeout: Duration,
    pub probe_timeout: Duration,
    pub max_input_rounds: usize,
    pub preferred_version: String,
    /// OpenTelemetry (feature `otel`; empty without it).
    pub telemetry: super::telemetry::Slot,
}

struct SubSlot {
    tx: mpsc::Sender<ServerEvent>,
    filter: SubscriptionFilter,
    legacy: bool,
    /// `Some`: every notification tagged with the slot's id, whatever the filter (an events
    /// stream), and the flag raised when one was dropped for a full buffer.
    raw: Option<Arc<AtomicBool>>,
    ack: Option<oneshot::Sender<Result<SubscriptionFilter, ClientError>>>,
}

pub(crate) struct Inner {
    pub transport: Arc<dyn Transport>,
    pub config: Config,
    pub handlers: Handlers,
    pub cache: Cache,
    pub tools: ToolSchemas,
    /// `x-mcp-header` annotations of the listed tools (HTTP, 2026-07-28).
    pub tool_headers: ToolHeaders,
    /// Tasks: the tools' task support, and the tasks this client hosts (2025-11-25).
    pub tasks: super::tasks::hosted::ClientTasks,
    state: RwLock<Option<Negotiated>>,
    next_id: AtomicI64,
    progress: Mutex<HashMap<ProgressToken, mpsc::UnboundedSender<ProgressNotificationParams>>>,
    subscriptions: Mutex<HashMap<RequestId, SubSlot>>,
    /// The server's requests running here (2025-11-25), by id, for `notifications/cancelled`.
    server_requests: Correlation,
    notifications: Mutex<Option<broadcast::Sender<ServerEvent>>>,
    pub log_level: Mutex<Option<LoggingLevel>>,
    closed: Mutex<Option<String>>,
    /// How many event messages the event task has routed (see `RequestStream::ordered`).
    handled: watch::Sender<u64>,
    /// Fires when the connection is closed; calls in flight end at once.
    shutdown: CancellationToken,
    /// The 2025-11-25 requests in flight, for the server's requests tied to none of them.
    live: Mutex<Live>,
    /// How many times the transport reconnected (a restarted server process, a new HTTP
    /// session), see [`Client::restarts`](super::Client::restarts).
    pub restarts: std::sync::atomic::AtomicU64,
}

/// The 2025-11-25 requests in flight during which the server may ask for input (see
/// `ASKING_METHODS`): how many, and those with their own answerer of input requests
/// ([`RequestOptions::on_input`]). A server's request that the transport ties to no
/// request of ours (stdio, the GET stream) belongs to a request only when that request is the
/// only one in flight that could have asked (requests waiting for their users' answers, see
/// [`AwaitingInput`](super::AwaitingInput), could not); never to "the newest".
#[derive(Default)]
struct Live {
    count: usize,
    own: Vec<Own>,
}

/// A request in flight with its own answerer of input requests.
struct Own {
    id: RequestId,
    answer: Arc<InputFn>,
    awaiting: Option<super::AwaitingInput>,
}

impl Own {
    fn is_awaiting(&self) -> bool {
        self.awaiting
            .as_ref()
            .is_some_and(super::AwaitingInput::is_set)
    }
}

/// `Mcp-Name`: the value 2026-07-28 Streamable HTTP mirrors into a header.
fn mcp_name(method: &str, params: &Map<String, Value>) -> Option<String> {
    let key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return None,
    };
    params.get(key).and_then(Value::as_str).map(str::to_owned)
}

pub(crate) fn to_value<T: Serialize>(v: &T) -> Result<Value, ClientError> {
    serde_json::to_value(v).map_err(|e| ClientError::Protocol(format!("cannot encode: {e}")))
}

/// Cleans up after one request: if it was abandoned (dropped, timed out), cancels it on the
/// wire.
struct InFlight {
    inner: Arc<Inner>,
    id: RequestId,
    era: Era,
    cancel: Option<&'static str>,
    /// Counted in `Inner::live`.
    live: bool,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.live {
            let mut live = lock(&self.inner.live);
            live.count = live.count.saturating_sub(1);
            live.own.retain(|o| o.id != self.id);
        }
        if let Some(reason) = self.cancel.take() {
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                let (inner, id, era) = (self.inner.clone(), self.id.clone(), self.era);
                handle.spawn(async move { inner.send_cancelled(id, era, reason).await });
            }
        }
    }
}

/// Keeps a progress token routed to a listener; forgets it when dropped.
pub(crate) struct ProgressListener {
    inner: Arc<Inner>,
    token: ProgressToken,
    /// The progress notifications that arrived for the token.
    pub rx: mpsc::UnboundedReceiver<ProgressNotificationParams>,
}

impl ProgressListener {
    /// The token to put in the request's `_meta.progressToken`.
    pub fn token(&self) -> &ProgressToken {
        &self.token
    }
}

impl Drop for ProgressListener {
    fn drop(&mut self) {
        lock(&self.inner.progress).remove(&self.token);
    }
}

impl Inner {
    pub(crate) fn new(
        transport: Arc<dyn Transport>,
        config: Config,
        handlers: Handlers,
        cache: Cache,
        log_level: Option<LoggingLevel>,
    ) -> Self {
        let (notifications, _) = broadcast::channel(1024);
        Inner {
            transport,
            config,
            handlers,
            cache,
            tools: ToolSchemas::default(),
            tool_headers: ToolHeaders::default(),
            tasks: super::tasks::hosted::ClientTasks::default(),
            state: RwLock::new(None),
            next_id: AtomicI64::new(1),
            progress: Mutex::default(),
            subscriptions: Mutex::default(),
            server_requests: Correlation::new("c-", Limits::default()),
            notifications: Mutex::new(Some(notifications)),
            log_level: Mutex::new(log_level),
            closed: Mutex::new(None),
            handled: watch::channel(0).0,
            shutdown: CancellationToken::new(),
            live: Mutex::default(),
            restarts: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Starts the event task. It holds only a weak reference, so dropping the client ends it.
    pub(crate) fn start(self: &Arc<Self>) {
        if let Some(events) = self.transport.events() {
            tokio::spawn(drive(Arc::downgrade(self), events));
        }
    }

    pub(crate) fn negotiated(&self) -> Option<Negotiated> {
        self.state.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(crate) fn set_negotiated(&self, n: Negotiated) {
        self.transport.negotiated(n.era, &n.protocol_version);
        *self.state.write().unwrap_or_else(|p| p.into_inner()) = Some(n);
    }

    /// Reads the negotiated state in place (no copy of the server's capabilities).
    pub(crate) fn with_negotiated<T>(&self, f: impl FnOnce(Option<&Negotiated>) -> T) -> T {
        f(self
            .state
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref())
    }

    fn speak(&self) -> Result<Speak, ClientError> {
        match self.with_negotiated(|n| n.map(|n| (n.era, n.protocol_version.clone()))) {
            Some((era, version)) => Ok(Speak { era, version }),
            None => Err(ClientError::Protocol(
                "the client is not connected yet".into(),
            )),
        }
    }

    pub(crate) fn era(&self) -> Option<Era> {
        self.with_negotiated(|n| n.map(|n| n.era))
    }

    /// Whether `x-mcp-header` applies: a 2026-07-28 connection over a transport that mirrors
    /// values into headers.
    pub(crate) fn mirrors_headers(&self) -> bool {
        self.adapter().is_some_and(|a| a.mirrors_headers()) && self.transport.mirrors_headers()
    }

    /// The adapter of the negotiated era, once there is one.
    pub(crate) fn adapter(&self) -> Option<&'static dyn super::era::Adapter> {
        self.era().map(super::era::of)
    }

    /// Routes progress for a token of its own (not derived from a request id) until the
    /// listener drops: for progress that outlives its request, as a 2025-11-25 task's does.
    pub(crate) fn progress_listener(self: &Arc<Self>) -> ProgressListener {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.listen_progress(ProgressToken::String(format!("duomcp-progress-{n}")))
    }

    /// Routes the progress notifications carrying `token` to a listener until it drops.
    fn listen_progress(self: &Arc<Self>, token: ProgressToken) -> ProgressListener {
        let (tx, rx) = mpsc::unbounded_channel();
        lock(&self.progress).insert(token.clone(), tx);
        ProgressListener {
            inner: self.clone(),
            token,
            rx,
        }
    }

    fn new_id(&self) -> RequestId {
        RequestId::from(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    pub(crate) fn closed_reason(&self) -> Option<String> {
        lock(&self.closed).clone()
    }

    fn closed_error(&self) -> ClientError {
        ClientError::Closed {
            reason: self
                .closed_reason()
                .unwrap_or_else(|| "the connection ended".into()),
        }
    }

    pub(crate) fn subscribe_notifications(&self) -> broadcast::Receiver<ServerEvent> {
        match &*lock(&self.notifications) {
            Some(tx) => tx.subscribe(),
            None => broadcast::channel(1).1,
        }
    }

    fn broadcast(&self, n: ServerEvent) {
        if let Some(tx) = &*lock(&self.notifications) {
            let _ = tx.send(n);
        }
    }

    /// Marks the connection closed: subscriptions and the notification stream end.
    pub(crate) fn mark_closed(&self, reason: String) {
        lock(&self.closed).get_or_insert(reason);
        self.shutdown.cancel();
        lock(&self.notifications).take();
        for (_, slot) in lock(&self.subscriptions).drain() {
            if let Some(ack) = slot.ack {
                let _ = ack.send(Err(self.closed_error()));
            }
        }
        self.server_requests.close();
    }

    // -----------------------------------------------------------------------------------------
    // Sending

    /// Encodes a request the way `speak` requires: 2026-07-28 `_meta`, progress token, log level.
    fn prepare(
        &self,
        id: &RequestId,
        method: &str,
        mut params: Map<String, Value>,
        opts: &RequestOptions,
        speak: &Speak,
        progress: bool,
    ) -> Result<Outgoing, ClientError> {
        let caller = match params.remove("_meta") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        let adapter = super::era::of(speak.era);
        let given = |k: &str| caller.contains_key(k) || opts.meta.contains_key(k);
        let local = Local {
            handlers: &self.handlers,
            info: &self.config.info,
            info_json: self.config.info_json.as_deref(),
            log_level: &self.log_level,
        };
        let meta = adapter.request_meta(&local, method, &speak.version, opts, &given);
        let token = progress.then(|| progress_token(id));
        let with_meta = RequestParams {
            params: &params,
            caller: &caller,
            options: &opts.meta,
            meta: &meta,
            progress: token.as_ref(),
        };
        let body = jsonrpc::encode_request(id, method, &with_meta)
            .map_err(|e| ClientError::Protocol(format!("cannot encode {method}: {e}")))?;
        let mut msg = Outgoing::new(body);
        msg.id = Some(id.clone());
        msg.method = Some(method.to_owned());
        msg.name = mcp_name(method, &params);
        msg.protocol_version = Some(speak.version.clone());
        if adapter.mirrors_headers()
            && method == <methods::CallTool as RequestMethod>::NAME
            && self.transport.mirrors_headers()
        {
            let annotated = msg.name.as_deref().and_then(|t| self.tool_headers.get(t));
            if let Some(annotated) = annotated {
                let none = Value::Null;
                let arguments = params.get("arguments").unwrap_or(&none);
                msg.header_params = mirror::header_values(&annotated, arguments);
            }
        }
        Ok(msg)
    }

    /// Sends a notification in the negotiated era.
    pub(crate) async fn notify(&self, method: &str, params: Value) -> Result<(), ClientError> {
        let body = jsonrpc::encode_notification(method, &params)
            .map_err(|e| ClientError::Protocol(e.to_string()))?;
        let mut msg = Outgoing::new(body);
        msg.method = Some(method.to_owned());
        msg.protocol_version = self.with_negotiated(|n| n.map(|n| n.protocol_version.clone()));
        Ok(self.transport.send(msg).await?)
    }

    async fn send_cancelled(&self, id: RequestId, era: Era, reason: &str) {
        if self.closed_reason().is_some() || self.transport.cancels_on_drop(era) {
            return;
        }
        let params = json!({ "requestId": id, "reason": reason });
        if let Err(e) = self
            .notify(<methods::Cancelled as NotificationMethod>::NAME, params)
            .await
        {
            tracing::debug!("could not cancel request {id}: {e}");
        }
    }

    /// One request, one response: in the negotiated era.
    pub(crate) async fn request(
        self: &Arc<Self>,
        method: &str,
        params: Map<String, Value>,
        opts: &RequestOptions,
    ) -> Result<Value, ClientError> {
        let speak = self.speak()?;
        self.request_as(method, params, opts, &speak).await
    }

    /// One request, one response, in the given era (the handshake uses this before one is known).
    pub(crate) async fn request_as(
        self: &Arc<Self>,
        method: &str,
        params: Map<String, Value>,
        opts: &RequestOptions,
        speak: &Speak,
    ) -> Result<Value, ClientError> {
        self.request_traced(method, params, opts, speak, &mut Default::default())
            .await
    }

    /// [`request_as`](Self::request_as) in a client span (feature `otel`), linked to the
    /// previous round of the same MRTR request.
    async fn request_traced(
        self: &Arc<Self>,
        method: &str,
        mut params: Map<String, Value>,
        opts: &RequestOptions,
        speak: &Speak,
        rounds: &mut super::telemetry::Rounds,
    ) -> Result<Value, ClientError> {
        let (id, call) = self.start_call(method, &mut params, speak, rounds)?;
        let result = self
            .request_with_id(id, method, params, opts, speak, call.headers())
            .await
            .and_then(|raw| {
                serde_json::from_str(raw.get()).map_err(|e| {
                    ClientError::Protocol(format!("the result of {method} is not valid JSON: {e}"))
                })
            });
        call.finish(&result);
        result
    }

    /// One request, one response, in the negotiated era: the result as the server sent it
    /// (its JSON text, not parsed), whatever its `resultType`.
    pub(crate) async fn request_raw(
        self: &Arc<Self>,
        method: &str,
        mut params: Map<String, Value>,
        opts: &RequestOptions,
    ) -> Result<Box<serde_json::value::RawValue>, ClientError> {
        let speak = self.speak()?;
        let (id, call) = self.start_call(method, &mut params, &speak, &mut Default::default())?;
        let result = self
            .request_with_id(id, method, params, opts, &speak, call.headers())
            .await;
        call.finish_raw(&result);
        result
    }

    /// A new request's id and its client span (feature `otel`), unless the client is closed;
    /// the span's trace context goes into `params`.
    fn start_call(
        &self,
        method: &str,
        params: &mut Map<String, Value>,
        speak: &Speak,
        rounds: &mut super::telemetry::Rounds,
    ) -> Result<(RequestId, super::telemetry::Call), ClientError> {
        if self.closed_reason().is_some() {
            return Err(self.closed_error());
        }
        let id = self.new_id();
        let http = self.transport.mirrors_headers();
        let call = super::telemetry::Call::start(
            &self.config.telemetry,
            method,
            &id,
            params,
            &speak.version,
            http,
            rounds,
        );
        Ok((id, call))
    }

    async fn request_with_id(
        self: &Arc<Self>,
        id: RequestId,
        method: &str,
        params: Map<String, Value>,
        opts: &RequestOptions,
        speak: &Speak,
        trace_context: Vec<(String, String)>,
    ) -> Result<Box<serde_json::value::RawValue>, ClientError> {
        let mut msg = self.prepare(&id, method, params, opts, speak, opts.on_progress.is_some())?;
        msg.trace_context = trace_context;
        let mut progress = opts
            .on_progress
            .as_ref()
            .map(|report| (self.listen_progress(progress_token(&id)), report));
        // Counted: the requests a server may ask for input during (a listing may not).
        let serves_requests = super::era::of(speak.era).serves_server_requests()
            && (opts.on_input.is_some() || ASKING_METHODS.contains(&method));
        let mut flight = InFlight {
            inner: self.clone(),
            id: id.clone(),
            era: speak.era,
            cancel: None,
            live: serves_requests,
        };
        if serves_requests {
            let mut live = lock(&self.live);
            live.count += 1;
            if let Some(own) = &opts.on_input {
                live.own.push(Own {
                    id: id.clone(),
                    answer: own.clone(),
                    awaiting: opts.awaiting_input.clone(),
                });
            }
        }
        if let Some(sent) = &opts.on_sent {
            sent(&id);
        }
        let mut stream = self.transport.request(msg).await?;
        if !opts.no_cancel {
            flight.cancel = Some("the client abandoned the request");
        }

        let timeout = opts.timeout.unwrap_or(self.config.request_timeout);
        let started = Instant::now();
        let hard_limit = opts.max_total.map(|m| started + m.max(timeout));
        let mut deadline = started + timeout;
        loop {
            // Biased: the branch that ends a call is polled first, so the poll that brings the
            // response touches nothing else (the shared shutdown token's lock least of all).
            // A stream that is always ready cannot starve the others: tokio's per-task budget
            // makes its receiver return `Pending` in time.
            tokio::select! {
                biased;
                message = stream.next() => match message {
                    Some(Ok(Incoming::Response(r))) if r.id == id => {
                        flight.cancel = None;
                        self.catch_up(&stream).await;
                        if let Some((listener, report)) = &mut progress {
                            while let Ok(p) = listener.rx.try_recv() {
                                report(&p);
                            }
                        }
                        return r.outcome.map_err(|error| ClientError::Rpc { method: method.to_owned(), error });
                    }
                    // A server's request on this request's stream (HTTP) is this request's.
                    Some(Ok(Incoming::Request(req))) => {
                        self.spawn_server_request(req, Some(opts.on_input.clone()))
                    }
                    Some(Ok(other)) => self.route(other),
                    Some(Err(e)) => {
                        flight.cancel = None;
                        return Err(e.into());
                    }
                    None => {
                        flight.cancel = None;
                        return Err(self.closed_error());
                    }
                },
                Some(p) = async {
                    match &mut progress {
                        Some((listener, _)) => listener.rx.recv().await,
                        None => None,
                    }
                } => {
                    if let Some((_, report)) = &progress {
                        report(&p);
                    }
                    if opts.reset_on_progress {
                        let next = Instant::now() + timeout;
                        deadline = hard_limit.map_or(next, |h| next.min(h));
                    }
                }
                _ = tokio::time::sleep_until(deadline) => {
                    if flight.cancel.is_some() {
                        flight.cancel = Some("timed out");
                    }
                    let after = started.elapsed();
                    // The server broke the framing before: that, not a slow server, is the
                    // likely reason (a stdio server logging to its stdout).
                    if let Some(note) = stream.note() {
                        return Err(ClientError::Protocol(format!("{method} got no answer in {after:?}; {note}")));
                    }
                    return Err(ClientError::Timeout { method: method.to_owned(), after });
                }
                _ = self.shutdown.cancelled() => {
                    flight.cancel = None;
                    return Err(self.closed_error());
                }
            }
        }
    }

    /// Waits until the event task has routed every message the transport read before this
    /// response, so notifications sent before a response are handled before the call returns.
    async fn catch_up(&self, stream: &RequestStream) {
        let Some(before) = stream.messages_before_response() else {
            return;
        };
        let mut handled = self.handled.subscribe();
        // Bounded: a transport that counts differently must not hang a call.
        let _ =
            tokio::time::timeout(Duration::from_secs(2), handled.wait_for(|n| *n >= before)).await;
    }
}

/// The event task: routes what the transport receives outside any request.
async fn drive(weak: Weak<Inner>, mut events: mpsc::Receiver<TransportEvent>) {
    while let Some(event) = events.recv().await {
        let Some(inner) = weak.upgrade() else { return };
        match event {
            TransportEvent::Message(m) => {
                inner.route(m);
                inner.handled.send_modify(|n| *n += 1);
            }
            TransportEvent::Restarted => inner.on_restart(),
            TransportEvent::Closed(reason) => {
                tracing::debug!("connection closed: {reason}");
                inner.mark_closed(reason);
                return;
            }
        }
    }
    if let Some(inner) = weak.upgrade() {
        inner.mark_closed("the connection ended".into());
    }
}
