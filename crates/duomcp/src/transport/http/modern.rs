//! The modern (2026-07-28) side of the endpoint: stateless POSTs, mirrored-header checks, JSON
//! or a per-request SSE stream whose closing cancels the request.
//!
//! One of the transport's two era adapters, with `legacy.rs` (see there).

use super::config::ResponseMode;
use super::sse::{self, ModernConn};
use super::{
    accepted, busy, error_response, headers, peer, principal, reply_json, rpc_error, Inner,
    SINK_CAPACITY,
};
use crate::era::{modern as modern_era, Era};
use crate::jsonrpc::{error_code, Incoming};
use crate::server::driver::{self, Admitted, Started};
use crate::server::envelope::TransportTrace;
use crate::server::session::Frame;
use crate::server::{Reply, RequestEnv};
use axum::response::Response;
use bytes::Bytes;
use duomcp_schema::methods::{self, RequestMethod};
use http::request::Parts;
use http::StatusCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, OwnedSemaphorePermit};
use tokio_util::sync::{CancellationToken, DropGuard};

fn status_of(reply: &Reply) -> StatusCode {
    reply
        .error
        .as_ref()
        .map(|e| StatusCode::from_u16(modern_era::http_status(e)).unwrap_or(StatusCode::OK))
        .unwrap_or(StatusCode::OK)
}

fn json_reply(reply: Option<Reply>, conditional: Option<&Conditional>) -> Response {
    match reply {
        Some(reply) => match conditional.and_then(|c| c.answer(&reply)) {
            Some(res) => res,
            None => reply_json(status_of(&reply), reply),
        },
        None => sse::empty_response(),
    }
}

/// A cacheable request's `If-None-Match` (the lines of it, kept to compare once the result is
/// known). The JSON answers of the methods that carry the revision's caching hints carry an
/// `ETag`, and a matching `If-None-Match` is answered `304` without a body (an experimental
/// duomcp extension; no MCP revision defines revalidation).
pub(super) struct Conditional {
    headers: http::HeaderMap,
}

impl Conditional {
    /// For a request of `method` with `headers`; `None` for a method that is not cacheable.
    fn of(method: &str, headers: &http::HeaderMap) -> Option<Conditional> {
        if !modern_era::CACHEABLE_METHODS.contains(&method) {
            return None;
        }
        let mut kept = http::HeaderMap::new();
        for v in headers.get_all(http::header::IF_NONE_MATCH) {
            kept.append(http::header::IF_NONE_MATCH, v.clone());
        }
        Some(Conditional { headers: kept })
    }

    /// The answer for `reply`, when it is a complete result: `304` when `If-None-Match` names
    /// its tag, else the JSON with an `ETag`. `None`: answer as usual (an error, a result
    /// that is not complete, an `If-None-Match` that does not read).
    fn answer(&self, reply: &Reply) -> Option<Response> {
        if reply.error.is_some() {
            return None;
        }
        let result = result_bytes(&reply.frame)?;
        #[derive(serde::Deserialize)]
        struct Kind<'a> {
            #[serde(rename = "resultType", borrow, default)]
            result_type: Option<std::borrow::Cow<'a, str>>,
        }
        let kind: Kind<'_> = serde_json::from_slice(result).ok()?;
        if kind.result_type.as_deref().is_some_and(|k| k != "complete") {
            return None;
        }
        let tag = super::card::etag(result);
        let value = http::HeaderValue::from_str(&tag).ok()?;
        let matched = super::card::none_match(&self.headers, &tag).unwrap_or(false);
        let mut res = if matched {
            let mut res = Response::new(axum::body::Body::empty());
            *res.status_mut() = StatusCode::NOT_MODIFIED;
            res
        } else {
            sse::json(StatusCode::OK, reply.frame.clone())
        };
        res.headers_mut().insert(http::header::ETAG, value);
        Some(res)
    }
}

/// The `result` member's bytes of an encoded success response (`{"jsonrpc":"2.0","id":…,
/// "result":…}`, as the envelope writes it: the tag covers the result, not the id).
fn result_bytes(frame: &[u8]) -> Option<&[u8]> {
    const KEY: &[u8] = b",\"result\":";
    // The id is written before the result; a string id cannot hold this unescaped.
    let at = frame.windows(KEY.len()).position(|w| w == KEY)?;
    let rest = &frame[at + KEY.len()..];
    rest.strip_suffix(b"}")
}

/// The answer to a request whose handler has finished: its reply as JSON when it sent nothing
/// on the sink (and the mode allows JSON), else an SSE stream of what it sent, then the reply.
#[allow(clippy::too_many_arguments)]
fn finished(
    reply: Option<Reply>,
    mut sink: mpsc::Receiver<Frame>,
    on_drop: DropGuard,
    permit: OwnedSemaphorePermit,
    mode: ResponseMode,
    keep_alive: Option<Duration>,
    conditional: Option<&Conditional>,
) -> Response {
    match (mode, sink.try_recv()) {
        (ResponseMode::JsonWhenPossible, Err(_)) => {
            on_drop.disarm();
            json_reply(reply, conditional)
        }
        (_, first) => sse::response(sse::modern_body(ModernConn {
            handler: None,
            first: first.ok(),
            sink,
            reply: reply.map(|r| Bytes::from(r.frame)),
            keep_alive,
            _guards: Box::new((on_drop, permit)),
        })),
    }
}

pub(super) async fn post(t: &Arc<Inner>, parts: &Parts, message: Incoming) -> Response {
    let req = match message {
        // No client notification is defined over HTTP in this revision; accept and ignore.
        Incoming::Notification(_) => return accepted(),
        Incoming::Response(_) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                None,
                error_code::INVALID_REQUEST,
                "Bad Request: clients do not send JSON-RPC responses in 2026-07-28",
            )
        }
        Incoming::Request(req) => req,
    };
    let meta = match headers::validate(&parts.headers, &req, &t.shared) {
        Ok(meta) => meta,
        Err(e) => {
            let status = StatusCode::from_u16(modern_era::http_status(&e))
                .unwrap_or(StatusCode::BAD_REQUEST);
            return error_response(status, Some(&req.id), &modern_era::error_object(&e));
        }
    };
    let listen = req.method == <methods::SubscriptionsListen as RequestMethod>::NAME;
    let event_stream = driver::is_event_stream(&req.method);
    let conditional = Conditional::of(&req.method, &parts.headers);
    // Long-lived listen streams have their own cap: they never take a request permit.
    let (permits, what) = if listen {
        (
            &t.listen_streams,
            "too many subscriptions/listen streams open",
        )
    } else if event_stream {
        (
            &t.listen_streams,
            "too many subscriptions/listen and events/stream streams open",
        )
    } else {
        (&t.requests, "too many requests in flight")
    };
    let cancel = CancellationToken::new();
    let Ok(Admitted { permit, .. }) = driver::admit(permits, None, &req.id, &cancel) else {
        return busy(Some(&req.id), what);
    };
    let (sink, sink_rx) = mpsc::channel::<Frame>(SINK_CAPACITY);
    let limit = if listen || event_stream {
        None
    } else {
        t.config.request_timeout
    };
    let env = RequestEnv {
        session: None,
        era_hint: Some(Era::Modern),
        validated_meta: Some(meta),
        sink,
        cancel: cancel.clone(),
        closing: t.closing.clone(),
        principal: principal(parts),
        peer: peer(parts),
        trace: TransportTrace::from_headers(&t.shared, &parts.headers),
    };
    // Dropping it (client gone, body dropped) cancels the request.
    let on_drop = cancel.drop_guard();
    let mode = t.config.response_mode;
    let mut handler = match driver::start(t.shared.clone(), req, env, limit) {
        // Most handlers finish at the first poll: answered at once, without waiting on the sink.
        Started::Ready(reply) => {
            return finished(
                Some(reply),
                sink_rx,
                on_drop,
                permit,
                mode,
                t.config.keep_alive,
                conditional.as_ref(),
            )
        }
        Started::Waiting(handler) => handler,
    };
    let mut sink_rx = sink_rx;
    let first = match mode {
        ResponseMode::AlwaysSse => None,
        ResponseMode::JsonWhenPossible => tokio::select! {
            biased;
            frame = sink_rx.recv() => match frame {
                Some(frame) => Some(frame),
                None => {
                    let reply = (&mut handler).await;
                    on_drop.disarm();
                    return json_reply(reply, conditional.as_ref());
                }
            },
            reply = &mut handler => {
                return finished(
                    reply,
                    sink_rx,
                    on_drop,
                    permit,
                    mode,
                    t.config.keep_alive,
                    conditional.as_ref(),
                );
            }
        },
    };
    let conn = ModernConn {
        handler: Some(handler),
        first,
        sink: sink_rx,
        reply: None,
        // An events stream keeps itself alive with heartbeats that carry its cursor; the
        // design does not use SSE comments there.
        keep_alive: t.config.keep_alive.filter(|_| !event_stream),
        _guards: Box::new((on_drop, permit)),
    };
    sse::response(sse::modern_body(conn))
}
