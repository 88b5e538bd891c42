//! [`Context`]: a handler's window on the request it is serving.

use super::session::{Session, Sink};
use super::tasks::{DetachHook, LiveTask};
use super::Shared;
use super::{HandlerError, InputRequired};
use crate::era::{Era, ProtocolError};
use crate::jsonrpc;
use crate::util::lock;
use duomcp_schema::methods::{self, NotificationMethod, RequestMethod};
use duomcp_schema::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, Implementation, InputRequest, ListRootsResult, LoggingLevel, ProgressToken,
    RequestId,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

mod client_request;

/// The `_meta` key under which a 2025-11-25 server→client request (elicitation, sampling,
/// roots) carries the key the handler gave it ([`Context::elicit`]'s `key`): a duomcp
/// extension, so a gateway bridging the request to a 2026-07-28 client can ask under the
/// handler's own key. Clients that do not know it ignore it (`_meta` is open).
pub const INPUT_KEY_META: &str = "io.duomcp/inputKey";

/// A client's 2025-11-25 session, from [`Context::client_session`]: it does not keep the
/// session alive, and tells whether it still is.
#[derive(Clone, Debug)]
pub struct ClientSession(std::sync::Weak<Session>);

impl ClientSession {
    /// Whether the session has not ended.
    pub fn is_alive(&self) -> bool {
        self.0.strong_count() > 0
    }

    /// Whether both handles are of the same session.
    pub fn same(&self, other: &ClientSession) -> bool {
        std::sync::Weak::ptr_eq(&self.0, &other.0)
    }

    /// A number that tells this session from the others alive now (it may be reused once the
    /// session has ended: check [`same`](Self::same) with a kept handle).
    pub fn key(&self) -> usize {
        self.0.as_ptr() as usize
    }
}

/// Everything a handler may want to know about, or do within, the request it serves.
///
/// `Context` is cheap to clone. Take it as a handler argument:
///
/// ```
/// use duomcp::server::{Context, HandlerError};
/// async fn slow(ctx: Context) -> Result<String, HandlerError> {
///     for step in 0..3 {
///         ctx.progress(step as f64, Some(3.0), None).await;
///         ctx.log(duomcp::schema::LoggingLevel::Info, format!("step {step}")).await;
///     }
///     Ok(format!("done, revision {}", ctx.protocol_version()))
/// }
/// ```
///
/// `elicit`, `sample` and `list_roots` read the same in both eras: in 2025-11-25 they send a
/// request to the client and wait for its answer; in 2026-07-28 they return
/// [`InputRequired`] the first time (propagate it with `?`), and the answer once the client has
/// retried with it.
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub era: Era,
    pub protocol_version: Arc<str>,
    pub client_capabilities: Arc<ClientCapabilities>,
    pub client_info: Option<Arc<Implementation>>,
    pub request_id: RequestId,
    pub progress_token: Option<ProgressToken>,
    /// Modern: the level from `_meta`; legacy: read from the session at each call.
    pub log_level: Option<LoggingLevel>,
    pub cancel: CancellationToken,
    pub sink: Sink,
    pub session: Option<Arc<Session>>,
    pub shared: Arc<Shared>,
    pub input: Mutex<InputState>,
    /// Who made the request (set by the transport's authentication), if anyone.
    pub principal: Option<Arc<crate::server::Principal>>,
    /// The peer's IP address (HTTP over TCP), when known.
    pub peer: Option<std::net::IpAddr>,
    /// The task this call runs as, once it is one (see [`Context::detach`]).
    pub task: TaskSlot,
}

/// A call's link to the task it runs as.
#[derive(Default)]
pub(crate) struct TaskSlot {
    /// Set once, when the call becomes a task.
    live: std::sync::OnceLock<Arc<LiveTask>>,
    /// Present while the call may still become a task on [`Context::detach`].
    detach: Mutex<Option<DetachHook>>,
}

/// MRTR bookkeeping of one modern request.
#[derive(Default)]
pub(crate) struct InputState {
    /// Answers from earlier rounds (unsealed) and this round's `inputResponses`.
    pub responses: Map<String, Value>,
    /// Input requests the handler made this round.
    pub requested: Vec<(String, InputRequest)>,
    /// The handler's own state, carried in `requestState`.
    pub user_state: Option<Value>,
    /// Rounds of input this request has had so far (from `requestState`).
    pub rounds: u32,
}

impl Context {
    pub(crate) fn new(inner: Inner) -> Self {
        Context {
            inner: Arc::new(inner),
        }
    }

    pub(crate) fn take_input_state(&self) -> InputState {
        std::mem::take(&mut *lock(&self.inner.input))
    }

    pub(crate) fn restore_input_state(&self, state: InputState) {
        *lock(&self.inner.input) = state;
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.inner.shared
    }

    pub(crate) fn cancel_token(&self) -> &CancellationToken {
        &self.inner.cancel
    }

    /// Where this request's related messages go.
    #[cfg(feature = "events")]
    pub(crate) fn sink(&self) -> &Sink {
        &self.inner.sink
    }

    pub(crate) fn session(&self) -> Option<&Arc<Session>> {
        self.inner.session.as_ref()
    }

    /// A context for a call that is, or may become, a task: the same request, with its own
    /// cancellation (a task outlives its request) and a copy of the MRTR input so far.
    pub(crate) fn fork_for_task(&self) -> Context {
        let i = &self.inner;
        let input = {
            let input = lock(&i.input);
            InputState {
                responses: input.responses.clone(),
                requested: Vec::new(),
                user_state: input.user_state.clone(),
                rounds: input.rounds,
            }
        };
        Context::new(Inner {
            era: i.era,
            protocol_version: i.protocol_version.clone(),
            client_capabilities: i.client_capabilities.clone(),
            client_info: i.client_info.clone(),
            request_id: i.request_id.clone(),
            progress_token: i.progress_token.clone(),
            log_level: i.log_level,
            cancel: CancellationToken::new(),
            sink: i.sink.clone(),
            session: i.session.clone(),
            shared: i.shared.clone(),
            input: Mutex::new(input),
            principal: i.principal.clone(),
            peer: i.peer,
            task: TaskSlot::default(),
        })
    }

    pub(crate) fn bind_task(&self, live: Arc<LiveTask>) {
        // Bound at most once: the runtime creates one task per call.
        let _ = self.inner.task.live.set(live);
    }

    pub(crate) fn task_live(&self) -> Option<Arc<LiveTask>> {
        self.inner.task.live.get().cloned()
    }

    pub(crate) fn set_detach_hook(&self, hook: DetachHook) {
        *lock(&self.inner.task.detach) = Some(hook);
    }

    /// The id of the task this call runs as, if it runs as one.
    pub fn task_id(&self) -> Option<&str> {
        self.inner.task.live.get().map(|l| l.id.as_str())
    }

    /// Turns the call into a task now, if the tool defers its task
    /// ([`ToolSpec::defer_task`](crate::server::ToolSpec::defer_task)) and the client can take
    /// one: the client receives the `CreateTaskResult` at once and the handler goes on as the
    /// task. Returns whether the call runs as a task (also `true` when it already did).
    ///
    /// This is how a 2026-07-28 tool gathers input with MRTR rounds first and only then
    /// becomes asynchronous: `elicit` before `detach` is an `InputRequiredResult` round,
    /// `elicit` after it parks the task in `input_required`.
    ///
    /// ```
    /// use duomcp::server::{Context, HandlerError};
    /// async fn book(ctx: Context) -> Result<String, HandlerError> {
    ///     let form = duomcp::schema::ElicitRequestFormParams::new(
    ///         "Where to?".to_owned(),
    ///         serde_json::from_value(serde_json::json!({
    ///             "type": "object", "properties": { "city": { "type": "string" } }
    ///         })).unwrap_or_default(),
    ///     );
    ///     let answer = ctx.elicit("city", form.into()).await?;
    ///     ctx.detach().await; // from here on the client polls the task
    ///     Ok(format!("booked: {:?}", answer.content))
    /// }
    /// ```
    pub async fn detach(&self) -> bool {
        if self.inner.task.live.get().is_some() {
            return true;
        }
        let hook = lock(&self.inner.task.detach).take();
        let Some(hook) = hook else { return false };
        match self
            .inner
            .shared
            .tasks
            .start(self, &hook.target, None)
            .await
        {
            Ok(record) => {
                // The request may be gone; the task exists all the same.
                let _ = hook.tx.send(Ok(record));
                true
            }
            Err(e) => {
                let _ = hook.tx.send(Err(e));
                false
            }
        }
    }

    /// Updates the task's `statusMessage` (a no-op when the call is not a task).
    ///
    /// ```
    /// # async fn f(ctx: duomcp::server::Context) -> Result<(), duomcp::server::HandlerError> {
    /// ctx.set_task_status("indexing 3 of 10 files").await;
    /// if let Some(id) = ctx.task_id() {
    ///     println!("running as task {id}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn set_task_status(&self, message: impl Into<String>) {
        if let Some(live) = self.task_live() {
            self.inner
                .shared
                .tasks
                .set_status_message(&live.id, message.into())
                .await;
        }
    }

    /// Sends a notification tied to this request: on its stream, or for a 2025-11-25 task on
    /// the session's own stream with the related-task `_meta`. 2026-07-28 tasks carry none.
    async fn notify(&self, method: &str, mut params: Value) {
        match self.task_live() {
            None => {
                if let Ok(frame) = jsonrpc::encode_notification(method, &params) {
                    self.send(frame).await;
                }
            }
            // A 2025-11-25 task's notifications go on its session's own stream.
            Some(live) if self.inner.era.has_sessions() => {
                if let Value::Object(p) = &mut params {
                    let m = p.entry("_meta").or_insert_with(|| json!({}));
                    if let Value::Object(m) = m {
                        m.insert(
                            duomcp_schema::meta::RELATED_TASK.into(),
                            json!({ "taskId": live.id }),
                        );
                    }
                }
                if let (Some(session), Ok(frame)) = (
                    &self.inner.session,
                    jsonrpc::encode_notification(method, &params),
                ) {
                    // Best effort: a full session queue drops the notification, never the task.
                    session.send_own(frame);
                }
            }
            Some(_) => {}
        }
    }

    /// The era of this request.
    pub fn era(&self) -> Era {
        self.inner.era
    }

    /// The protocol version the request speaks (negotiated, or from `_meta`).
    pub fn protocol_version(&self) -> &str {
        &self.inner.protocol_version
    }

    /// What the client declared it can do (at `initialize`, or in this request's `_meta`).
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.inner.client_capabilities
    }

    /// Who the client says it is, if it said.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.inner.client_info.as_deref()
    }

    /// The JSON-RPC id of the request.
    pub fn request_id(&self) -> &RequestId {
        &self.inner.request_id
    }

    /// The authenticated caller, when the transport authenticated the request: the
    /// [`AuthLayer`] on Streamable HTTP; over stdio, the local user
    /// ([`Principal::local`](crate::server::Principal::local)).
    ///
    /// ```
    /// use duomcp::server::Context;
    /// async fn whoami(ctx: Context) -> String {
    ///     match ctx.principal() {
    ///         Some(p) => p.subject().unwrap_or("a client").to_owned(),
    ///         None => "anonymous".to_owned(),
    ///     }
    /// }
    /// ```
    ///
    #[cfg_attr(
        all(feature = "auth", feature = "http-server"),
        doc = "[`AuthLayer`]: crate::auth::AuthLayer"
    )]
    #[cfg_attr(
        not(all(feature = "auth", feature = "http-server")),
        doc = "[`AuthLayer`]: crate#features"
    )]
    pub fn principal(&self) -> Option<&crate::server::Principal> {
        self.inner.principal.as_deref()
    }

    /// The IP address of the client's end of the connection (Streamable HTTP over TCP, as the
    /// server saw it: a proxy's address behind a proxy), when known; `None` over stdio and
    /// over a Unix socket.
    ///
    /// ```
    /// # fn f(ctx: &duomcp::server::Context) {
    /// if let Some(ip) = ctx.peer_ip() {
    ///     tracing::info!(%ip, "a call");
    /// }
    /// # }
    /// ```
    pub fn peer_ip(&self) -> Option<std::net::IpAddr> {
        self.inner.peer
    }

    /// Whether the client cancelled the request.
    ///
    /// ```
    /// # async fn f(ctx: duomcp::server::Context) -> Result<(), duomcp::server::HandlerError> {
    /// for chunk in 0..100 {
    ///     if ctx.is_cancelled() {
    ///         return Err(duomcp::server::HandlerError::msg("cancelled"));
    ///     }
    ///     # let _ = chunk;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// Resolves when the client cancels the request; use it in `tokio::select!`.
    ///
    /// ```
    /// # async fn f(ctx: duomcp::server::Context) -> Result<(), duomcp::server::HandlerError> {
    /// tokio::select! {
    ///     () = ctx.cancelled() => Err(duomcp::server::HandlerError::msg("cancelled")),
    ///     () = tokio::time::sleep(std::time::Duration::from_secs(5)) => Ok(()),
    /// }
    /// # }
    /// ```
    pub async fn cancelled(&self) {
        self.inner.cancel.cancelled().await
    }

    /// Application state registered with [`ServerBuilder::state`](crate::server::ServerBuilder::state).
    ///
    /// ```
    /// #[derive(Clone)]
    /// struct Db(std::sync::Arc<Vec<String>>);
    /// let server = duomcp::server::Server::builder()
    ///     .state(Db(std::sync::Arc::new(vec!["row".into()])))
    ///     .tool("rows", |ctx: duomcp::server::Context| async move {
    ///         ctx.state::<Db>().map(|db| db.0.len()).unwrap_or(0).to_string()
    ///     })
    ///     .build();
    /// # let _ = server;
    /// ```
    pub fn state<T: Clone + Send + Sync + 'static>(&self) -> Option<T> {
        self.inner.shared.state.get::<T>()
    }

    /// A handle on the server, to change what it offers or to notify subscribers.
    pub fn server(&self) -> crate::server::Server {
        crate::server::Server {
            shared: self.inner.shared.clone(),
        }
    }

    async fn send(&self, frame: Vec<u8>) {
        // A closed sink means the client is gone; there is nobody to tell.
        let _ = self.inner.sink.send(frame).await;
    }

    /// Whether the client asked for progress on this request (sent a `progressToken`):
    /// [`progress`](Self::progress) sends nothing otherwise.
    ///
    /// ```
    /// # async fn f(ctx: duomcp::server::Context) {
    /// if ctx.wants_progress() {
    ///     ctx.progress(0.5, Some(1.0), None).await;
    /// }
    /// # }
    /// ```
    pub fn wants_progress(&self) -> bool {
        self.inner.progress_token.is_some()
    }

    /// Reports progress, if the client asked for it (sent a `progressToken`). Otherwise a no-op.
    ///
    /// A 2026-07-28 task carries no notifications: there the progress becomes the task's
    /// `statusMessage` instead (`message`, else `progress/total`), which the client sees when
    /// it polls, asked for or not. It replaces what [`set_task_status`](Self::set_task_status)
    /// set.
    ///
    /// ```
    /// # async fn f(ctx: duomcp::server::Context) {
    /// for step in 0..3 {
    ///     ctx.progress(f64::from(step), Some(3.0), Some(format!("step {step}"))).await;
    /// }
    /// # }
    /// ```
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        if self.inner.era.revision().task_progress_in_status && self.task_live().is_some() {
            let text = match (message, total) {
                (Some(m), _) => m,
                (None, Some(total)) => format!("{progress}/{total}"),
                (None, None) => format!("{progress}"),
            };
            self.set_task_status(text).await;
            return;
        }
        let Some(token) = &self.inner.progress_token else {
            return;
        };
        let mut params = json!({ "progressToken": token, "progress": progress });
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        self.notify(<methods::Progress as NotificationMethod>::NAME, params)
            .await;
    }

    /// Asks the transport to close this request's SSE connection now, after telling the client
    /// when to reconnect (SSE polling, SEP-1699). The request goes on; what it sends afterwards,
    /// its result included, waits in the event store until the client resumes the stream with
    /// `GET` and `Last-Event-ID`.
    ///
    /// Only the Streamable HTTP transport honours it, and only in the 2025-11-25 era (2026-07-28
    /// streams are not resumable: closing one cancels the request). Elsewhere it does nothing.
    ///
    /// ```
    /// use duomcp::server::Context;
    /// async fn long_job(ctx: Context) -> &'static str {
    ///     ctx.close_sse_stream().await; // the client polls for the result
    ///     tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    ///     "done"
    /// }
    /// ```
    pub async fn close_sse_stream(&self) {
        if !self.inner.era.stream_close_cancels() && self.task_live().is_none() {
            // An empty frame is never a message: transports read it as "close the stream".
            self.send(Vec::new()).await;
        }
    }

    /// The level at or above which log messages are sent, or `None` when the client asked for none.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        if self.inner.era.has_sessions() {
            self.inner.session.as_ref().and_then(|s| s.log_level())
        } else {
            self.inner.log_level
        }
    }

    /// Sends a log message (`notifications/message`) if the client asked for this level.
    ///
    /// ```
    /// # async fn f(ctx: duomcp::server::Context) -> Result<(), duomcp::server::HandlerError> {
    /// use duomcp::schema::LoggingLevel;
    /// ctx.log(LoggingLevel::Info, serde_json::json!({ "step": "fetched", "rows": 42 })).await;
    /// # Ok(()) }
    /// ```
    pub async fn log(&self, level: LoggingLevel, data: impl Serialize) {
        self.log_to(level, None, data).await
    }

    /// Like [`log`](Self::log), naming the logger.
    pub async fn log_to(&self, level: LoggingLevel, logger: Option<&str>, data: impl Serialize) {
        let Some(min) = self.log_level() else { return };
        if level < min {
            return;
        }
        let mut params = json!({ "level": level, "data": data });
        if let Some(logger) = logger {
            params["logger"] = json!(logger);
        }
        self.notify(
            <methods::LoggingMessage as NotificationMethod>::NAME,
            params,
        )
        .await;
    }

    /// The handler's own state from an earlier round (2026-07-28), if it stored one.
    pub fn request_state<T: DeserializeOwned>(&self) -> Option<T> {
        let input = lock(&self.inner.input);
        input
            .user_state
            .as_ref()
            .and_then(|v| T::deserialize(v).ok())
    }

    /// Every input response this request carries, by key (2026-07-28: the answers of earlier
    /// rounds and this round's `inputResponses`, including any the handler never asked for);
    /// empty in 2025-11-25. For a handler that passes the answers on as they came (a gateway
    /// in front of a 2026-07-28 server); one that asks for input gets its answers from
    /// [`elicit`](Self::elicit), [`sample`](Self::sample) and [`list_roots`](Self::list_roots).
    ///
    /// ```
    /// # fn f(ctx: duomcp::server::Context) {
    /// for (key, answer) in ctx.input_responses() {
    ///     println!("{key}: {answer}");
    /// }
    /// # }
    /// ```
    pub fn input_responses(&self) -> Map<String, Value> {
        lock(&self.inner.input).responses.clone()
    }

    /// The client's 2025-11-25 session, as an opaque handle (`None` in 2026-07-28, which has
    /// no sessions): for a handler that keeps something per client session (a gateway's
    /// upstream session per client), and must know when that session has ended.
    ///
    /// ```
    /// # fn f(ctx: duomcp::server::Context) {
    /// if let Some(session) = ctx.client_session() {
    ///     assert!(session.is_alive());
    /// }
    /// # }
    /// ```
    pub fn client_session(&self) -> Option<ClientSession> {
        self.inner
            .session
            .as_ref()
            .map(|s| ClientSession(Arc::downgrade(s)))
    }

    /// Whether one more round of input may be asked of the client (2026-07-28: the request
    /// has had fewer than [`ServerConfig::max_input_rounds`](crate::server::ServerConfig)
    /// rounds; the server refuses the round after that). Always `true` in 2025-11-25, where
    /// input is asked with requests. A handler that keeps something for the next round (a
    /// gateway holding an upstream call) checks this first, so that a refused round leaves
    /// nothing held.
    ///
    /// ```
    /// # fn f(ctx: duomcp::server::Context) {
    /// if !ctx.may_ask_for_input() {
    ///     // answer without asking, or fail now
    /// }
    /// # }
    /// ```
    pub fn may_ask_for_input(&self) -> bool {
        !self.inner.era.input_in_rounds()
            || lock(&self.inner.input).rounds < self.inner.shared.config.max_input_rounds
    }

    /// Stores state that comes back, sealed, with the client's next round (2026-07-28).
    pub fn set_request_state(&self, state: impl Serialize) {
        lock(&self.inner.input).user_state = serde_json::to_value(state).ok();
    }

    /// Asks the user for input through the client (`elicitation/create`).
    ///
    /// `key` names the input in the 2026-07-28 `inputRequests` map; it is ignored in 2025-11-25.
    ///
    /// ```
    /// # async fn f(ctx: duomcp::server::Context) -> Result<(), duomcp::server::HandlerError> {
    /// use duomcp::schema::{ElicitAction, ElicitRequestFormParams, ElicitRequestedSchema, StringSchema};
    /// let form = ElicitRequestFormParams::new(
    ///     "Which city?",
    ///     ElicitRequestedSchema::default().with_property("city", StringSchema::new(), true),
    /// );
    /// let answer = ctx.elicit("city", form.into()).await?; // `?`: a 2026-07-28 round ends here
    /// if answer.action == ElicitAction::Accept {
    ///     println!("{:?}", answer.content);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn elicit(
        &self,
        key: &str,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, HandlerError> {
        let caps = &self.inner.client_capabilities;
        let url_mode = matches!(params, ElicitRequestParams::Url(_));
        let declared = match &caps.elicitation {
            None => false,
            Some(e) if url_mode => e.url.is_some(),
            Some(e) => e.url.is_none() || e.form.is_some(),
        };
        if !declared {
            let cap = if url_mode {
                json!({ "elicitation": { "url": {} } })
            } else {
                json!({ "elicitation": {} })
            };
            return Err(ProtocolError::MissingClientCapability(cap).into());
        }
        self.input_or_request(key, InputRequest::elicit(params))
            .await
    }

    /// Asks the client's model for a completion (`sampling/createMessage`).
    ///
    /// ```
    /// # async fn f(ctx: duomcp::server::Context) -> Result<(), duomcp::server::HandlerError> {
    /// use duomcp::schema::{CreateMessageRequestParams, Role, SamplingMessage, SamplingMessageContentBlock};
    /// let question = SamplingMessage::new(Role::User, SamplingMessageContentBlock::text("Name a colour."));
    /// let answer = ctx.sample("colour", CreateMessageRequestParams::new(vec![question], 50)).await?;
    /// println!("{} said {:?}", answer.model, answer.content);
    /// # Ok(()) }
    /// ```
    pub async fn sample(
        &self,
        key: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, HandlerError> {
        let Some(sampling) = &self.inner.client_capabilities.sampling else {
            return Err(ProtocolError::MissingClientCapability(json!({ "sampling": {} })).into());
        };
        if params.tools.is_some() && sampling.tools.is_none() {
            return Err(ProtocolError::MissingClientCapability(
                json!({ "sampling": { "tools": {} } }),
            )
            .into());
        }
        self.input_or_request(key, InputRequest::sample(params))
            .await
    }

    /// Asks the client for its roots (`roots/list`).
    ///
    /// ```
    /// # async fn f(ctx: duomcp::server::Context) -> Result<(), duomcp::server::HandlerError> {
    /// for root in ctx.list_roots("roots").await?.roots {
    ///     println!("{}", root.uri);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_roots(&self, key: &str) -> Result<ListRootsResult, HandlerError> {
        if self.inner.client_capabilities.roots.is_none() {
            return Err(ProtocolError::MissingClientCapability(json!({ "roots": {} })).into());
        }
        self.input_or_request(key, InputRequest::list_roots()).await
    }

    async fn input_or_request<T: DeserializeOwned>(
        &self,
        key: &str,
        request: InputRequest,
    ) -> Result<T, HandlerError> {
        // 2026-07-28: the answer from an earlier round, the task's `tasks/update`, or a new
        // input request that ends this round; 2025-11-25: a server→client request. (One body:
        // two async helpers cost the MRTR round trip 4 % more instructions, bench/icount.sh.)
        if self.inner.era.input_in_rounds() {
            {
                let input = lock(&self.inner.input);
                if let Some(answer) = input.responses.get(key) {
                    // An answer of the wrong shape is treated as missing: ask again.
                    if let Ok(v) = T::deserialize(answer) {
                        return Ok(v);
                    }
                }
            }
            if let Some(live) = self.task_live() {
                // A task waits for `tasks/update` instead of ending the round.
                let tasks = &self.inner.shared.tasks;
                loop {
                    let answer = tasks.ask(&live, key, request.clone()).await?;
                    match T::deserialize(&answer) {
                        Ok(v) => return Ok(v),
                        Err(e) => tracing::debug!(
                            task = %live.id,
                            "an input response had the wrong shape ({e}); asking again"
                        ),
                    }
                }
            }
            let mut input = lock(&self.inner.input);
            input.requested.retain(|(k, _)| k != key);
            input.requested.push((key.to_owned(), request));
            Err(InputRequired.into())
        } else {
            let (method, params) = match &request {
                InputRequest::Elicit(p) => (
                    <methods::Elicit as RequestMethod>::NAME,
                    serde_json::to_value(p),
                ),
                InputRequest::CreateMessage(p) => (
                    <methods::CreateMessage as RequestMethod>::NAME,
                    serde_json::to_value(p),
                ),
                InputRequest::ListRoots(p) => (
                    <methods::ListRoots as RequestMethod>::NAME,
                    serde_json::to_value(p.clone().unwrap_or_default()),
                ),
            };
            let mut params = params.map_err(|e| HandlerError::msg(e.to_string()))?;
            // The 2026-07-28 key rides along (a duomcp extension key): a gateway bridging
            // this request to a 2026-07-28 client asks it under the same key.
            if let Some(p) = params.as_object_mut() {
                let meta = p
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Some(m) = meta.as_object_mut() {
                    m.insert(INPUT_KEY_META.into(), Value::String(key.to_owned()));
                }
            }
            let raw = self.request_client(method, &params).await?;
            serde_json::from_str(raw.get()).map_err(|e| {
                HandlerError::msg(format!("the client's answer to {method} is malformed: {e}"))
            })
        }
    }
}
