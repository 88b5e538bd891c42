//! One request's way through a transport, the same on stdio, HTTP 2025-11-25 and HTTP
//! 2026-07-28: admitted under the connection's bound and, where the transport keeps one, in
//! its correlation engine (so that `notifications/cancelled` finds it and its id is refused to
//! a second request meanwhile); polled once where it was read, since most handlers finish at
//! once and are answered then with no task, no timer and no waiter on the cancellation token;
//! and, when it waits, raced against its cancellation and the transport's time limit.
//!
//! What stays with each transport is how it carries the reply: a line (stdio), a JSON body or
//! a resumable stream (HTTP 2025-11-25), a JSON body or a stream whose closing cancels the
//! request (HTTP 2026-07-28).

use super::dispatch::answer_request;
use super::envelope::Reply;
use super::{RequestEnv, Shared};
use crate::correlation::{Correlation, Running};
use crate::era::Era;
use crate::era::ProtocolError;
use crate::jsonrpc::{self, RequestId};
use crate::util::poll_now;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// A request that waits: its reply, or `None` when it was cancelled (no response may be sent
/// then).
pub(crate) type ReplyFuture = Pin<Box<dyn Future<Output = Option<Reply>> + Send>>;

/// Whether `method` is a long-lived stream of the events extension (`events/stream`): HTTP
/// admits it under the listen streams' bound instead of the requests', without a time limit.
#[cfg(feature = "http-server")]
pub(crate) fn is_event_stream(method: &str) -> bool {
    // `server::events::STREAM`, spelled here: the transports reach it through this module.
    #[cfg(feature = "events")]
    return method == "events/stream";
    #[cfg(not(feature = "events"))]
    {
        let _ = method;
        false
    }
}

/// Why a request was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// The connection's bound on requests in flight is reached.
    Busy,
    /// Another request with this id is in flight.
    IdInUse,
}

impl Admission {
    /// The text the refusal is reported with (after "Service Unavailable: " or "Invalid
    /// Request: ").
    pub(crate) fn says(self) -> &'static str {
        match self {
            Admission::Busy => "too many requests in flight",
            Admission::IdInUse => "this id is already in use by a request in flight",
        }
    }
}

/// What an admitted request holds until it is answered: its permit and, in a transport that
/// correlates, its entry (dropping it frees the id).
pub(crate) struct Admitted {
    pub permit: OwnedSemaphorePermit,
    // Read by HTTP 2025-11-25; stdio admits into its engine only the requests that wait.
    #[cfg_attr(not(feature = "http-server"), allow(dead_code))]
    pub running: Option<Running>,
}

/// Admits request `id` under `permits` and, with a `correlation` engine, as running there with
/// `cancel` as its token. Never waits.
pub(crate) fn admit(
    permits: &Arc<Semaphore>,
    correlation: Option<&Correlation>,
    id: &RequestId,
    cancel: &CancellationToken,
) -> Result<Admitted, Admission> {
    let permit = permits
        .clone()
        .try_acquire_owned()
        .map_err(|_| Admission::Busy)?;
    let running = match correlation {
        // Not full: the permit bounds the requests running, as the engine does.
        Some(engine) => Some(
            engine
                .admit(id.clone(), cancel.clone())
                .map_err(|_| Admission::IdInUse)?,
        ),
        None => None,
    };
    Ok(Admitted { permit, running })
}

/// Where a request stands after its first poll.
pub(crate) enum Started {
    /// It finished at once: its reply.
    Ready(Reply),
    /// It waits: the rest of it, to be polled with a real waker (on a task, or in a response
    /// body).
    Waiting(ReplyFuture),
}

/// Runs `req` up to its first pause. A request that waits comes back as a future that races
/// `env.cancel` (biased to the cancellation: a cancelled request is not polled again, and
/// answers `None`) and, with a `limit`, the deadline: past it the request is cancelled and
/// the client gets `-32603` "Request timed out after N ms" in `era`'s error form.
///
/// No cancellation can arrive during the first poll (the token is new, and the transport
/// reads nothing meanwhile), so only a request that waits watches its token.
pub(crate) fn start(
    shared: Arc<Shared>,
    req: jsonrpc::IncomingRequest,
    env: RequestEnv,
    limit: Option<Duration>,
) -> Started {
    let era = env.era_hint.unwrap_or(Era::UNMARKED);
    let cancel = env.cancel.clone();
    let id = req.id.clone();
    let mut answer = Box::pin(answer_request(shared, req, env));
    match poll_now(answer.as_mut()) {
        Poll::Ready(reply) => Started::Ready(reply),
        Poll::Pending => Started::Waiting(Box::pin(wait(answer, cancel, limit, id, era))),
    }
}

/// The rest of a request that waits: see [`start`].
async fn wait<F: Future<Output = Reply>>(
    answer: Pin<Box<F>>,
    cancel: CancellationToken,
    limit: Option<Duration>,
    id: RequestId,
    era: Era,
) -> Option<Reply> {
    let deadline = async {
        match limit {
            Some(limit) => tokio::time::sleep(limit).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        _ = cancel.cancelled() => None,
        reply = answer => Some(reply),
        () = deadline => {
            cancel.cancel();
            let ms = limit.map_or(0, |l| l.as_millis());
            let err = ProtocolError::Internal(format!("Request timed out after {ms} ms"));
            let object = era.error_object(&err);
            Some(Reply {
                frame: jsonrpc::encode_error(Some(&id), &object),
                error: Some(err),
                is_error: false,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::correlation::Limits;
    use crate::server::{Context, Server};
    use tokio::sync::mpsc;

    const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

    fn server() -> Server {
        Server::builder()
            .tool("quick", || async { "quick" })
            .tool("slow", |ctx: Context| async move {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(3600)) => "late",
                    () = ctx.cancelled() => "cancelled",
                }
            })
            .build()
    }

    fn call(id: i64, tool: &str) -> (jsonrpc::IncomingRequest, RequestEnv) {
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}",{META}}}}}"#
        );
        let Ok(jsonrpc::Incoming::Request(req)) = jsonrpc::decode(text.as_bytes()) else {
            panic!("not a request: {text}");
        };
        let (sink, _) = mpsc::channel(1);
        let env = RequestEnv {
            session: None,
            era_hint: Some(Era::Modern),
            validated_meta: None,
            sink,
            cancel: CancellationToken::new(),
            closing: CancellationToken::new(),
            principal: None,
            peer: None,
            trace: Default::default(),
        };
        (req, env)
    }

    fn text(reply: &Reply) -> serde_json::Value {
        serde_json::from_slice(&reply.frame).unwrap_or_default()
    }

    #[tokio::test]
    async fn a_quick_handler_is_answered_at_the_first_poll() {
        let (req, env) = call(1, "quick");
        let Started::Ready(reply) = start(server().shared.clone(), req, env, None) else {
            panic!("a handler that does not wait finishes at the first poll");
        };
        assert_eq!(text(&reply)["result"]["content"][0]["text"], "quick");
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_handler_past_its_limit_is_cancelled_and_answered_with_an_error() {
        let (req, env) = call(2, "slow");
        let cancel = env.cancel.clone();
        let limit = Some(Duration::from_millis(250));
        let Started::Waiting(rest) = start(server().shared.clone(), req, env, limit) else {
            panic!("the slow handler waits");
        };
        let reply = rest.await.expect("a timed-out request is answered");
        let v = text(&reply);
        assert_eq!(v["id"], 2);
        assert_eq!(v["error"]["code"], -32603, "{v}");
        assert_eq!(v["error"]["message"], "Request timed out after 250 ms");
        assert!(cancel.is_cancelled(), "the handler is told");
    }

    #[tokio::test]
    async fn a_cancelled_request_gets_no_answer() {
        let (req, env) = call(3, "slow");
        let cancel = env.cancel.clone();
        let Started::Waiting(rest) = start(server().shared.clone(), req, env, None) else {
            panic!("the slow handler waits");
        };
        cancel.cancel();
        assert!(rest.await.is_none());
    }

    #[test]
    fn admission_refuses_over_the_bound_and_a_second_request_with_one_id() {
        let permits = Arc::new(Semaphore::new(1));
        let engine = Correlation::new("s-", Limits::default());
        let id = RequestId::from(7);
        let token = CancellationToken::new();
        let first = admit(&permits, Some(&engine), &id, &token).expect("admitted");
        assert!(engine.is_running(&id));
        let busy = admit(&permits, Some(&engine), &RequestId::from(8), &token);
        assert_eq!(busy.err(), Some(Admission::Busy));
        drop(first);
        assert!(!engine.is_running(&id), "dropping it frees the id");

        let permits = Arc::new(Semaphore::new(2));
        let _held = admit(&permits, Some(&engine), &id, &token).expect("admitted");
        let again = admit(&permits, Some(&engine), &id, &token);
        assert_eq!(again.err(), Some(Admission::IdInUse));
        assert_eq!(
            permits.available_permits(),
            1,
            "a refused request holds no permit"
        );
    }
}
