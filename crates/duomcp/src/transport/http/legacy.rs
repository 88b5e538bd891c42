//! The legacy (2025-11-25 and older) side of the endpoint: sessions, POST answered with JSON or
//! a resumable SSE stream, the standalone `GET` stream, `Last-Event-ID` resumption, `DELETE`.
//!
//! This and `modern.rs` are the transport's two era adapters: `mod.rs` picks one per POST
//! (after `era::detect`), and each names its era (`era_hint`) when it hands a request to the
//! dispatcher; the rest of the transport does not compare eras.

use super::config::ResponseMode;
use super::headers::{LAST_EVENT_ID, SESSION_ID};
use super::session::sessions::CreateError;
use super::session::{
    event_id, follow_remote_stream, parse_event_id, Attached, HttpSession, Out, ReplySource,
    STANDALONE,
};
use super::shared_session as shared;
use super::sse::{self, LegacyConn};
use super::store::StoreError;
use super::{
    accepted, busy, client_data, guard, method_not_allowed, modern_header, owner_key, peer,
    principal, reply_json, rpc_error, Inner, CONN_CAPACITY, SINK_CAPACITY,
};
use crate::correlation::Limits;
use crate::era::Era;
use crate::jsonrpc::{error_code, Incoming, IncomingRequest, RequestId};
use crate::server::driver::{self, Admission, Admitted, Started};
use crate::server::envelope::TransportTrace;
use crate::server::session::Frame;
use crate::server::{
    handle_notification, handle_request, handle_response, NotificationAction, Reply, RequestEnv,
};
use axum::response::Response;
use duomcp_schema::methods::{self, RequestMethod};
use http::request::Parts;
use http::{HeaderValue, StatusCode};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::{CancellationToken, DropGuard};

fn session_header(parts: &Parts) -> Option<&str> {
    parts
        .headers
        .get(&SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

fn request_id(message: &Incoming) -> Option<&RequestId> {
    match message {
        Incoming::Request(r) => Some(&r.id),
        _ => None,
    }
}

fn unknown_session(id: Option<&RequestId>) -> Response {
    rpc_error(
        StatusCode::NOT_FOUND,
        id,
        error_code::INVALID_REQUEST,
        "Not Found: unknown or terminated session; send `initialize` again",
    )
}

pub(super) async fn post(t: &Arc<Inner>, parts: &Parts, message: Incoming) -> Response {
    let sid = session_header(parts);
    let message = match (message, sid) {
        (Incoming::Request(req), None)
            if req.method == <methods::Initialize as RequestMethod>::NAME =>
        {
            return initialize(t, req, parts).await
        }
        (message, _) => message,
    };
    let Some(sid) = sid else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            request_id(&message),
            error_code::INVALID_REQUEST,
            "Bad Request: the Mcp-Session-Id header is required (send `initialize` first)",
        );
    };
    let session = match owned_session(t, parts, sid, true).await {
        Ok(Some(session)) => session,
        Ok(None) => return unknown_session(request_id(&message)),
        Err(e) => return store_unavailable(request_id(&message), &e),
    };
    match message {
        Incoming::Request(req) => {
            let changes_record = shared::changes_record(&req.method);
            let res = request(t, &session, req, parts).await;
            if changes_record {
                shared::save(t, &session).await;
            }
            res
        }
        Incoming::Notification(n) => {
            let _busy = session.busy();
            if let NotificationAction::Cancel(id) = handle_notification(Some(&session.core), &n) {
                session.correlation().cancel(&id);
            }
            accepted()
        }
        Incoming::Response(r) => {
            let _busy = session.busy();
            handle_response(Some(&session.core), r);
            accepted()
        }
    }
}

/// The session `sid`, if it exists and belongs to the caller: a session is bound to the
/// principal that created it, and another principal is told it does not exist. With a session
/// store, asked there (one round trip; none when `cached` and this replica's copy was found
/// alive a moment ago, see `shared_session`): a session minted elsewhere is restored here,
/// one deleted elsewhere is gone here too.
async fn owned_session(
    t: &Arc<Inner>,
    parts: &Parts,
    sid: &str,
    cached: bool,
) -> Result<Option<Arc<HttpSession>>, StoreError> {
    let session = match &t.config.session_store {
        None => t.sessions.get(sid),
        Some(store) => shared::lookup(t, &**store, sid, cached).await?,
    };
    Ok(session.filter(|s| s.owned_by(owner_key(parts).as_deref())))
}

/// `503`, `-32603`, naming the store that failed.
fn store_unavailable(id: Option<&RequestId>, e: &StoreError) -> Response {
    tracing::warn!("session store: {e}");
    busy(id, &format!("the session store is unavailable ({e})"))
}

/// `initialize` without a session: a new session, whose id goes back in `Mcp-Session-Id`.
async fn initialize(t: &Arc<Inner>, req: IncomingRequest, parts: &Parts) -> Response {
    if let Err(why) = client_data::check(
        req.params.as_ref().map(|p| p.get()),
        t.config.max_client_data,
    ) {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            Some(&req.id),
            error_code::INVALID_PARAMS,
            why,
        );
    }
    t.sessions.start_sweeper(
        t.config.session_idle_timeout,
        t.config.session_handshake_timeout,
        t.closing.clone(),
    );
    let session = match t.sessions.create(
        t.config.max_sessions,
        &t.closing,
        t.config.event_store.clone(),
        Limits::default().running(t.config.max_concurrent_requests.max(1)),
    ) {
        Ok(s) => s,
        Err(CreateError::TooMany) => return busy(Some(&req.id), "too many sessions"),
        Err(CreateError::NoRandomness) => {
            return rpc_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                Some(&req.id),
                error_code::INTERNAL_ERROR,
                "no randomness for a session id",
            )
        }
    };
    let _busy = session.busy();
    session.bind_owner(owner_key(parts));
    let _ = session
        .telemetry
        .set(crate::server::telemetry::SessionGuard::open(&t.shared));
    // `initialize` sends nothing before its result; a sink nobody reads is enough.
    let (sink, _unread) = mpsc::channel(1);
    let env = RequestEnv {
        session: Some(session.core.clone()),
        era_hint: Some(Era::Legacy),
        validated_meta: None,
        sink,
        cancel: CancellationToken::new(),
        closing: session.closing.clone(),
        principal: principal(parts),
        peer: peer(parts),
        trace: TransportTrace::from_headers(&t.shared, &parts.headers),
    };
    let id = req.id.clone();
    match handle_request(t.shared.clone(), req, env).await {
        Some(reply) if reply.error.is_none() => {
            match shared::create(t, &session).await {
                shared::Created::Saved => {}
                shared::Created::Full => {
                    t.sessions.remove(&session.id);
                    return busy(
                        Some(&id),
                        "too many sessions over all replicas (none is waiting for its first \
                         request to be ended instead)",
                    );
                }
                shared::Created::Failed => {
                    t.sessions.remove(&session.id);
                    return busy(Some(&id), "the session store is unavailable");
                }
            }
            let mut res = sse::json(StatusCode::OK, reply.frame);
            if let Ok(v) = HeaderValue::from_str(&session.id) {
                res.headers_mut().insert(SESSION_ID, v);
            }
            res
        }
        Some(reply) => {
            t.sessions.remove(&session.id);
            sse::json(StatusCode::OK, reply.frame)
        }
        None => {
            t.sessions.remove(&session.id);
            sse::empty_response()
        }
    }
}

/// A request in a session: the handler runs in its own task (a dropped connection is not a
/// cancellation in this era); the answer is JSON, or a resumable SSE stream.
async fn request(
    t: &Arc<Inner>,
    session: &Arc<HttpSession>,
    req: IncomingRequest,
    parts: &Parts,
) -> Response {
    let token = CancellationToken::new();
    // An `events/stream` is long-lived: admitted under the listen streams' bound, no time limit.
    let event_stream = driver::is_event_stream(&req.method);
    let (permits, limit) = match event_stream {
        true => (&t.listen_streams, None),
        false => (&t.requests, t.config.request_timeout),
    };
    let admitted = driver::admit(permits, Some(session.correlation()), &req.id, &token);
    let Admitted { permit, running } = match admitted {
        Ok(admitted) => admitted,
        Err(refused @ Admission::Busy) => return busy(Some(&req.id), refused.says()),
        Err(refused @ Admission::IdInUse) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                Some(&req.id),
                error_code::INVALID_REQUEST,
                format!("Invalid Request: {}", refused.says()),
            )
        }
    };
    let claim = match claim_request_id(t, session, &req.id, limit).await {
        Ok(claim) => claim,
        Err(response) => return response,
    };
    let running = (running, claim);
    let activity = session.busy();
    // Closing an `events/stream`'s connection ends it (the events extension), as cancelling
    // it does; any other request goes on, resumable, when its connection closes.
    let cancel_on_close = event_stream.then(|| token.clone().drop_guard());
    let (sink, sink_rx) = mpsc::channel::<Frame>(SINK_CAPACITY);
    let id = req.id.clone();
    let env = RequestEnv {
        session: Some(session.core.clone()),
        era_hint: Some(Era::Legacy),
        validated_meta: None,
        sink,
        cancel: token,
        closing: session.closing.clone(),
        principal: principal(parts),
        peer: peer(parts),
        trace: TransportTrace::from_headers(&t.shared, &parts.headers),
    };
    // Most handlers finish at once: answered here, with no task and no channel.
    let work = match driver::start(t.shared.clone(), req, env, limit) {
        Started::Ready(reply) => {
            drop((running, permit, activity));
            return ready_response(t, session, Some(reply), sink_rx).await;
        }
        Started::Waiting(work) => work,
    };
    let mut sink_rx = sink_rx;
    let (reply_tx, mut reply_rx) = oneshot::channel();
    tokio::spawn(async move {
        let reply = work.await;
        drop(running);
        let _ = reply_tx.send(reply);
        drop((permit, activity));
    });

    let first = match t.config.response_mode {
        ResponseMode::AlwaysSse => None,
        ResponseMode::JsonWhenPossible => tokio::select! {
            biased;
            frame = sink_rx.recv() => match frame {
                Some(frame) => Some(frame),
                // The handler is done and sent nothing: its reply is on its way.
                None => return match reply_rx.await {
                    Ok(Some(reply)) => reply_json(StatusCode::OK, reply),
                    _ => sse::empty_response(),
                },
            },
            reply = &mut reply_rx => {
                return ready_response(t, session, reply.ok().flatten(), sink_rx).await;
            }
        },
    };
    let request = serde_json::to_vec(&id).ok();
    let reply = ReplySource::Pending(reply_rx);
    stream_response(t, session, first, sink_rx, reply, request, cancel_on_close).await
}

/// A request id claimed fleet-wide while its request runs (`HttpConfig::fleet_request_ids`);
/// released in the background when dropped.
struct Claim {
    store: SharedStore,
    session: Arc<str>,
    request: String,
}

impl Drop for Claim {
    fn drop(&mut self) {
        let (store, session, request) = (
            self.store.clone(),
            self.session.clone(),
            std::mem::take(&mut self.request),
        );
        // Not released: the claim expires by itself.
        in_background(
            &self.session,
            "a request id's claim not released",
            async move { store.release_request(&session, &request).await },
        );
    }
}

/// Runs a session store operation of `session` in the background, logging (debug) `failed`
/// when it fails. Nothing runs when no runtime is there any more (it is ending): what the
/// operation would have written expires by itself in the store.
fn in_background<F>(session: &Arc<str>, failed: &'static str, op: F)
where
    F: std::future::Future<Output = Result<(), super::store::StoreError>> + Send + 'static,
{
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let session = session.clone();
    runtime.spawn(async move {
        if let Err(e) = op.await {
            tracing::debug!(%session, "session store: {failed}: {e}");
        }
    });
}

/// Claims request `id` of a shared `session` for this replica when
/// `HttpConfig::fleet_request_ids` asks for it; the error response when another replica runs a
/// request with that id, or the store fails.
async fn claim_request_id(
    t: &Inner,
    session: &HttpSession,
    id: &RequestId,
    limit: Option<std::time::Duration>,
) -> Result<Option<Claim>, Response> {
    let (true, Some(store)) = (t.config.fleet_request_ids, &t.config.session_store) else {
        return Ok(None);
    };
    let request = serde_json::to_string(id).unwrap_or_default();
    let ttl = limit.unwrap_or(t.config.session_idle_timeout);
    match store.claim_request(&session.id, &request, ttl).await {
        Ok(true) => Ok(Some(Claim {
            store: store.clone(),
            session: session.id.clone(),
            request,
        })),
        Ok(false) => Err(rpc_error(
            StatusCode::BAD_REQUEST,
            Some(id),
            error_code::INVALID_REQUEST,
            format!(
                "Invalid Request: {} (on another replica)",
                Admission::IdInUse.says()
            ),
        )),
        Err(e) => Err(store_unavailable(Some(id), &e)),
    }
}

/// The response to a request whose handler is done (`None`: cancelled): plain JSON when the
/// mode allows and the handler sent nothing before its reply, a stream otherwise.
async fn ready_response(
    t: &Arc<Inner>,
    session: &Arc<HttpSession>,
    reply: Option<Reply>,
    mut sink_rx: mpsc::Receiver<Frame>,
) -> Response {
    match (t.config.response_mode, sink_rx.try_recv()) {
        (ResponseMode::JsonWhenPossible, Err(_)) => match reply {
            Some(reply) => reply_json(StatusCode::OK, reply),
            None => sse::empty_response(),
        },
        (_, first) => {
            let reply = ReplySource::Ready(reply);
            stream_response(t, session, first.ok(), sink_rx, reply, None, None).await
        }
    }
}

async fn stream_response(
    t: &Arc<Inner>,
    session: &Arc<HttpSession>,
    first: Option<Frame>,
    sink: mpsc::Receiver<Frame>,
    reply: ReplySource,
    request: Option<Vec<u8>>,
    cancel_on_close: Option<DropGuard>,
) -> Response {
    let (tx, rx) = mpsc::channel::<Out>(CONN_CAPACITY);
    let stream = session
        .start_request_stream(tx, first, sink, reply, request)
        .await;
    let conn = LegacyConn {
        stream: stream.id,
        pending: VecDeque::from([sse::priming(&event_id(stream.id, 0), t.config.sse_retry)]),
        rx: Some(rx),
        // `cancel_on_close` marks an events stream, which keeps itself alive with heartbeats
        // that carry its cursor; the design does not use SSE comments there.
        keep_alive: t.config.keep_alive.filter(|_| cancel_on_close.is_none()),
        retry: t.config.sse_retry,
        _guards: Box::new((session.busy(), cancel_on_close)),
    };
    sse::response(sse::legacy_body(conn))
}

/// Counts a session's open `GET` streams (and, with telemetry, the server's listen streams).
struct GetStreamCount(
    Arc<HttpSession>,
    // Held for its `Drop` (the listen-streams gauge); empty without telemetry.
    #[allow(dead_code)] crate::server::telemetry::ListenGuard,
);

impl Drop for GetStreamCount {
    fn drop(&mut self) {
        self.0.get_streams.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Counts a session's connections on its standalone stream while they are open, and tells the
/// session store (when sessions are shared) that this replica holds the stream: notifications
/// made on other replicas are sent here ([`SessionStore::hold_stream`]).
///
/// [`SessionStore::hold_stream`]: super::SessionStore::hold_stream
struct StandaloneCount(Option<(Arc<HttpSession>, Option<SharedStore>)>);

type SharedStore = Arc<dyn super::SessionStore>;

impl StandaloneCount {
    fn open(t: &Inner, session: &Arc<HttpSession>, standalone: bool) -> Self {
        if !standalone {
            return StandaloneCount(None);
        }
        session.standalone_gets.fetch_add(1, Ordering::Relaxed);
        let store = t.config.session_store.clone();
        if let Some(store) = &store {
            hold_stream(store.clone(), session, true);
        }
        StandaloneCount(Some((session.clone(), store)))
    }
}

/// Records (in the background) that this replica opened or closed `session`'s stream.
fn hold_stream(store: SharedStore, session: &HttpSession, open: bool) {
    let id = session.id.clone();
    in_background(
        &session.id,
        "the GET stream's holder not recorded",
        async move { store.hold_stream(&id, open).await },
    );
}

impl Drop for StandaloneCount {
    fn drop(&mut self) {
        if let Some((s, store)) = &self.0 {
            let left = s.standalone_gets.fetch_sub(1, Ordering::Relaxed);
            if let (1, Some(store)) = (left, store) {
                hold_stream(store.clone(), s, false);
            }
        }
    }
}

/// How long a replica follows another's stream when requests have no timeout.
const FOLLOW_BOUND: std::time::Duration = std::time::Duration::from_secs(300);

/// `GET`: the session's standalone stream, or with `Last-Event-ID` the resumption of any of its
/// streams (replaying what followed that event on that stream only).
pub(super) async fn get(t: &Arc<Inner>, parts: &Parts) -> Response {
    if modern_header(parts) {
        return method_not_allowed("POST");
    }
    if t.config.strict_media_types && !guard::accepts_all(&parts.headers, &["text/event-stream"]) {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            error_code::INVALID_REQUEST,
            "Not Acceptable: the client must accept text/event-stream",
        );
    }
    // Without a session there is no stream to offer.
    let Some(sid) = session_header(parts) else {
        return method_not_allowed("POST");
    };
    let session = match owned_session(t, parts, sid, true).await {
        Ok(Some(session)) => session,
        Ok(None) => return unknown_session(None),
        Err(e) => return store_unavailable(None, &e),
    };
    let (stream_id, after) = match parts
        .headers
        .get(&LAST_EVENT_ID)
        .map(|v| v.to_str().ok().and_then(parse_event_id))
    {
        None => (STANDALONE, None),
        Some(Some((stream, seq))) => (stream, Some(seq)),
        Some(None) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                None,
                error_code::INVALID_REQUEST,
                "Bad Request: unknown Last-Event-ID",
            )
        }
    };
    let count = GetStreamCount(
        session.clone(),
        crate::server::telemetry::ListenGuard::open(&t.shared),
    );
    if session.get_streams.fetch_add(1, Ordering::Relaxed) >= t.config.max_streams_per_session {
        return busy(None, "too many streams open on this session");
    }
    let Ok(permit) = t.get_streams.clone().try_acquire_owned() else {
        return busy(None, "too many streams open");
    };
    let (tx, rx) = mpsc::channel::<Out>(CONN_CAPACITY);
    let store = &*session.store;
    let attached = match session.stream(stream_id) {
        Some(stream) => stream.attach(tx, after, store, &session.id).await,
        // A stream another replica writes (or wrote) in a shared log: followed from there
        // until it finishes, or answered with an error if its writer died.
        None if store.stream_lease().is_some() && stream_id != STANDALONE => {
            tokio::spawn(follow_remote_stream(
                session.store.clone(),
                session.id.clone(),
                stream_id,
                after.unwrap_or(0),
                tx,
                t.config.request_timeout.unwrap_or(FOLLOW_BOUND),
            ));
            Ok(Attached {
                replay: Vec::new(),
                last_seq: 0,
                live: true,
            })
        }
        // A finished stream: what the store still has, then the end.
        None => store
            .replay_after(&session.id, stream_id, after.unwrap_or(0))
            .await
            .map(|events| Attached {
                replay: events.into_iter().map(|e| (e.seq, e.message)).collect(),
                last_seq: 0,
                live: false,
            }),
    };
    let attached = match attached {
        Ok(a) => a,
        Err(e) => {
            tracing::error!(session = %session.id, "replay failed: {e}");
            return rpc_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                None,
                error_code::INTERNAL_ERROR,
                "the event store failed",
            );
        }
    };
    let mut pending = VecDeque::with_capacity(attached.replay.len() + 1);
    pending.push_back(match after {
        None => sse::priming(&event_id(stream_id, attached.last_seq), t.config.sse_retry),
        Some(_) => sse::retry_field(t.config.sse_retry),
    });
    pending.extend(
        attached
            .replay
            .iter()
            .map(|(seq, message)| sse::event(Some(&event_id(stream_id, *seq)), message)),
    );
    let conn = LegacyConn {
        stream: stream_id,
        pending,
        rx: attached.live.then_some(rx),
        keep_alive: t.config.keep_alive,
        retry: t.config.sse_retry,
        _guards: Box::new((
            session.busy(),
            permit,
            count,
            StandaloneCount::open(t, &session, stream_id == STANDALONE && attached.live),
        )),
    };
    sse::response(sse::legacy_body(conn))
}

/// `DELETE`: ends the session; later requests with its id get `404`.
pub(super) async fn delete(t: &Arc<Inner>, parts: &Parts) -> Response {
    if modern_header(parts) {
        return method_not_allowed("POST");
    }
    let Some(sid) = session_header(parts) else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            None,
            error_code::INVALID_REQUEST,
            "Bad Request: the Mcp-Session-Id header is required",
        );
    };
    // Asked in the store whatever this copy's freshness: a session already ended elsewhere
    // is `404` here too.
    let session = match owned_session(t, parts, sid, false).await {
        Ok(Some(s)) => s,
        Ok(None) => return unknown_session(None),
        Err(e) => return store_unavailable(None, &e),
    };
    if let Some(store) = &t.config.session_store {
        if let Err(e) = store.remove(sid).await {
            return store_unavailable(None, &e);
        }
        // Before answering: the other replicas' copies stop trusting their freshness.
        shared::ended_or_changed(t, &session).await;
    }
    match t.sessions.end(sid) {
        Some(_) => {
            let mut res = Response::new(axum::body::Body::empty());
            *res.status_mut() = StatusCode::NO_CONTENT;
            res
        }
        None => unknown_session(None),
    }
}
