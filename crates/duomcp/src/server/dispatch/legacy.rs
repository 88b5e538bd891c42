//! The 2025-11-25 adapter: a request belongs to a session that `initialize` negotiated;
//! `ping`, `resources/subscribe`, `logging/setLevel` and the `tasks/*` methods of this
//! revision are its own; `tools/call` is a task when the client asks (`params.task`); a
//! result goes out as it is; a handler never asks for input (its `Context` sends real
//! server→client requests instead).

use super::adapter::{Adapter, Target, ToolCall};
use super::capabilities::{capabilities, TasksDeclared};
use super::{
    context, error_reply, events, parse, result_reply, Caller, ReadMeta, Reply, RequestEnv,
};
use crate::era::{legacy, Era, ProtocolError};
use crate::jsonrpc::IncomingRequest;
use crate::server::context::Context;
use crate::server::params::ParamsIndex;
use crate::server::session::{Negotiated, Session, Sink};
use crate::server::tasks::{self, TaskRecord};
use crate::server::{invoke, subscriptions, CachePolicy, HandlerError, Shared};
use duomcp_schema::methods::{self, RequestMethod};
use duomcp_schema::{InitializeRequestParams, LoggingLevel, RequestId, Tool};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A 2025-11-25 request, admitted: its session, and where its messages go.
pub(super) struct Legacy {
    session: Arc<Session>,
    sink: Sink,
}

#[derive(Deserialize)]
struct UriParams {
    uri: String,
}

#[derive(Deserialize)]
struct SetLevelParams {
    level: LoggingLevel,
}

impl Adapter for Legacy {
    const ERA: Era = Era::Legacy;

    fn admit(
        shared: &Arc<Shared>,
        req: &IncomingRequest,
        params: &ParamsIndex<'_>,
        meta: ReadMeta<'_>,
        env: RequestEnv,
    ) -> Result<(Self, Context), Reply> {
        const ERA: Era = Era::Legacy;
        let id = &req.id;
        let method = req.method.as_str();
        let Some(session) = env.session.clone() else {
            return Err(error_reply(
                ERA,
                id,
                ProtocolError::InvalidRequest("No session: send `initialize` first".into()),
            ));
        };
        if method == <methods::Initialize as RequestMethod>::NAME {
            return Err(match initialize(shared, &session, req, &env.closing) {
                Ok(v) => result_reply(ERA, id, &v),
                Err(e) => error_reply(ERA, id, e),
            });
        }
        if method == <methods::Ping as RequestMethod>::NAME {
            return Err(result_reply(ERA, id, &json!({})));
        }
        let Some(negotiated) = session.negotiated() else {
            return Err(error_reply(
                ERA,
                id,
                ProtocolError::InvalidRequest("Server not initialized: send `initialize` first (2025-11-25), or put `_meta` with a protocol version on every request (2026-07-28)".into()),
            ));
        };
        let RequestEnv {
            sink,
            cancel,
            principal,
            peer,
            ..
        } = env;
        let caller = Caller {
            era: ERA,
            protocol_version: negotiated.protocol_version,
            client_capabilities: negotiated.client_capabilities,
            client_info: negotiated.client_info,
            // `_meta` read as its fields already (by the decoder, or
            // `ParamsIndex::read_with_meta`), or raw.
            progress_token: match &meta {
                Some(Ok(fields)) => fields.progress_token().cloned(),
                _ => params.progress_token(),
            },
            log_level: None,
            session: Some(session.clone()),
        };
        let ctx = context(shared, id, caller, cancel, sink.clone(), principal, peer);
        Ok((Legacy { session, sink }, ctx))
    }

    async fn own_method(
        &self,
        ctx: &Context,
        req: &IncomingRequest,
        params: &ParamsIndex<'_>,
    ) -> Option<Result<Reply, ProtocolError>> {
        let (id, session) = (&req.id, &self.session);
        let done = || result_reply(Self::ERA, id, &json!({}));
        Some(match req.method.as_str() {
            m if m == <methods::Subscribe as RequestMethod>::NAME => {
                match params.parse::<UriParams>() {
                    Ok(p) => subscriptions::subscribe(ctx.shared(), session, p.uri)
                        .await
                        .map(|()| done()),
                    Err(e) => Err(e),
                }
            }
            m if m == <methods::Unsubscribe as RequestMethod>::NAME => {
                params.parse::<UriParams>().map(|p| {
                    session.unsubscribe(&p.uri);
                    done()
                })
            }
            m if m == <methods::SetLevel as RequestMethod>::NAME => {
                params.parse::<SetLevelParams>().map(|p| {
                    session.set_log_level(p.level);
                    done()
                })
            }
            other => {
                let params = req.params.as_ref().map(|p| p.get());
                let r = Box::pin(tasks::legacy_method(ctx, other, params, &self.sink)).await?;
                r.map(|r| result_reply(Self::ERA, id, &r))
            }
        })
    }

    fn restore_input(
        &self,
        _: &Context,
        _: &str,
        _: Target<'_>,
        _: Option<&str>,
        _: Option<Map<String, Value>>,
    ) -> Result<(), ProtocolError> {
        // No multi-round-trip requests in this revision: `Context` asks the client directly
        // (and nothing is sealed, so the target is never read).
        Ok(())
    }

    async fn call_tool(
        &self,
        ctx: Context,
        name: &str,
        arguments: Option<Value>,
        task: Option<Value>,
    ) -> Result<ToolCall, ProtocolError> {
        let (plan, ttl) = tasks::legacy_plan(&ctx, name, task.as_ref())?;
        if plan == tasks::CallPlan::Task {
            let call = tasks::legacy_call(&ctx, name.to_owned(), arguments, ttl);
            let created = Box::pin(call).await?;
            return Ok(ToolCall::Task(result_reply(
                Self::ERA,
                ctx.request_id(),
                &created,
            )));
        }
        let r = invoke::call_tool(&ctx, name, arguments).await;
        Ok(ToolCall::Ran(ctx, r))
    }

    fn finish<T: Serialize>(
        &self,
        _: &Context,
        id: &RequestId,
        _: &str,
        _: Target<'_>,
        result: Result<T, HandlerError>,
        _: Option<CachePolicy>,
    ) -> Result<Reply, ProtocolError> {
        match result {
            Ok(r) => Ok(result_reply(Self::ERA, id, &r)),
            Err(e) => Err(self.failure(e)),
        }
    }

    fn shape<T: Serialize>(
        &self,
        _: &Shared,
        id: &RequestId,
        result: &T,
        _: Option<CachePolicy>,
    ) -> Result<Reply, ProtocolError> {
        // No cache fields in this revision.
        Ok(result_reply(Self::ERA, id, result))
    }

    fn failure(&self, e: HandlerError) -> ProtocolError {
        super::adapter::failure(e, || {
            ProtocolError::Internal("input required outside the 2026-07-28 era".into())
        })
    }

    fn listed_tool<'t>(&self, tool: &'t Tool) -> Cow<'t, Tool> {
        Cow::Borrowed(tool)
    }
}

/// `initialize`: negotiates the version, records what the client said, starts forwarding
/// server events to the session.
fn initialize(
    shared: &Arc<Shared>,
    session: &Arc<Session>,
    req: &IncomingRequest,
    closing: &CancellationToken,
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
    spawn_forwarder(shared.clone(), session.clone(), closing.clone());
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": capabilities(shared, TasksDeclared::AsCapability),
        "serverInfo": shared.info,
    });
    if let Some(text) = &shared.instructions {
        result["instructions"] = json!(text);
    }
    Ok(result)
}

/// Forwards server events to a copy of a legacy session this replica adopted (minted by
/// another replica, see the HTTP transport's session store): with a bus, the events of every
/// replica reach the standalone stream of whichever replica holds it.
#[cfg(feature = "http-server")]
pub(crate) fn follow_events(
    shared: Arc<Shared>,
    session: Arc<Session>,
    closing: CancellationToken,
) {
    spawn_forwarder(shared, session, closing)
}

/// Forwards server events to a legacy session (list_changed, subscribed resource updates).
fn spawn_forwarder(shared: Arc<Shared>, session: Arc<Session>, closing: CancellationToken) {
    let mut events = shared.events.subscribe();
    // `notifications/tasks/status` goes to the session that created the task.
    let scope = shared.tasks.session_scope(&session).ok();
    let interest = SessionInterest { session, scope };
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                _ = closing.cancelled() => return,
                e = events.recv() => e,
            };
            let frame = match event {
                Ok(event) => match events::notification(&event, &interest, None) {
                    Some(frame) => frame,
                    None => continue,
                },
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(
                        "a session fell {n} server events behind; some notifications were dropped"
                    );
                    continue;
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            if interest.session.unrelated.send(frame).await.is_err() {
                return;
            }
        }
    });
}

/// What a session hears about: every list change, the resources it subscribed to, and the
/// status of the tasks it created.
struct SessionInterest {
    session: Arc<Session>,
    scope: Option<String>,
}

impl events::Interest for SessionInterest {
    fn tools(&self) -> bool {
        true
    }
    fn prompts(&self) -> bool {
        true
    }
    fn resources(&self) -> bool {
        true
    }
    fn resource(&self, uri: &str) -> bool {
        self.session.is_subscribed(uri)
    }
    fn task(&self, task: &TaskRecord) -> bool {
        task.era == Era::Legacy && self.scope.is_some() && task.scope == self.scope
    }
}
