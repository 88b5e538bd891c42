//! [`Context`]: a handler's window on the request it is serving.

use super::error::{HandlerError, InputRequired};
use super::session::{Session, Sink};
use super::Shared;
use crate::era::{Era, ProtocolError};
use crate::jsonrpc;
use duomcp_schema::methods::{self, NotificationMethod, RequestMethod};
use duomcp_schema::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, Implementation, InputRequest, ListRootsResult, LoggingLevel, ProgressToken,
    RequestId,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

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
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
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

    /// Whether the client cancelled the request.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// Resolves when the client cancels the request; use it in `tokio::select!`.
    pub async fn cancelled(&self) {
        self.inner.cancel.cancelled().await
    }

    /// Application state registered with [`ServerBuilder::state`](crate::server::ServerBuilder::state).
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

    /// Reports progress, if the client asked for it (sent a `progressToken`). Otherwise a no-op.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
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
        if let Ok(frame) =
            jsonrpc::encode_notification(<methods::Progress as NotificationMethod>::NAME, &params)
        {
            self.send(frame).await;
        }
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
        if self.inner.era == Era::Legacy {
            // An empty frame is never a message: transports read it as "close the stream".
            self.send(Vec::new()).await;
        }
    }

    /// The level at or above which log messages are sent, or `None` when the client asked for none.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        match self.inner.era {
            Era::Modern => self.inner.log_level,
            Era::Legacy => self.inner.session.as_ref().and_then(|s| s.log_level()),
        }
    }

    /// Sends a log message (`notifications/message`) if the client asked for this level.
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
        if let Ok(frame) = jsonrpc::encode_notification(
            <methods::LoggingMessage as NotificationMethod>::NAME,
            &params,
        ) {
            self.send(frame).await;
        }
    }

    /// The handler's own state from an earlier round (2026-07-28), if it stored one.
    pub fn request_state<T: DeserializeOwned>(&self) -> Option<T> {
        let input = lock(&self.inner.input);
        input
            .user_state
            .as_ref()
            .and_then(|v| T::deserialize(v).ok())
    }

    /// Stores state that comes back, sealed, with the client's next round (2026-07-28).
    pub fn set_request_state(&self, state: impl Serialize) {
        lock(&self.inner.input).user_state = serde_json::to_value(state).ok();
    }

    /// Asks the user for input through the client (`elicitation/create`).
    ///
    /// `key` names the input in the 2026-07-28 `inputRequests` map; it is ignored in 2025-11-25.
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
        match self.inner.era {
            Era::Modern => {
                let mut input = lock(&self.inner.input);
                if let Some(answer) = input.responses.get(key) {
                    // An answer of the wrong shape is treated as missing: ask again.
                    if let Ok(v) = T::deserialize(answer) {
                        return Ok(v);
                    }
                }
                input.requested.retain(|(k, _)| k != key);
                input.requested.push((key.to_owned(), request));
                Err(InputRequired.into())
            }
            Era::Legacy => {
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
                let params = params.map_err(|e| HandlerError::msg(e.to_string()))?;
                let raw = self.request_client(method, &params).await?;
                serde_json::from_str(raw.get()).map_err(|e| {
                    HandlerError::msg(format!("the client's answer to {method} is malformed: {e}"))
                })
            }
        }
    }

    /// Sends a server→client request on this request's stream and awaits the answer (legacy).
    async fn request_client(
        &self,
        method: &str,
        params: &Value,
    ) -> Result<Box<serde_json::value::RawValue>, HandlerError> {
        let Some(session) = &self.inner.session else {
            return Err(HandlerError::msg(
                "no session to send a request to the client on",
            ));
        };
        let (id, answer) = session.register_request();
        let frame = jsonrpc::encode_request(&id, method, params)
            .map_err(|e| HandlerError::msg(e.to_string()))?;
        if self.inner.sink.send(frame).await.is_err() {
            session.forget_request(&id);
            return Err(HandlerError::msg("the client connection is closed"));
        }
        let timeout: Duration = self.inner.shared.config.client_request_timeout;
        let outcome = tokio::select! {
            a = answer => a.map_err(|_| HandlerError::msg("the client connection closed before answering")),
            _ = tokio::time::sleep(timeout) => Err(HandlerError::msg(format!("the client did not answer {method} within {timeout:?}"))),
            _ = self.inner.cancel.cancelled() => Err(HandlerError::Cancelled),
        };
        session.forget_request(&id);
        match outcome? {
            Ok(raw) => Ok(raw),
            Err(e) => Err(HandlerError::msg(format!(
                "the client answered {method} with error {}: {}",
                e.code, e.message
            ))),
        }
    }
}
