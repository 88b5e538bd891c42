//! The modern (2026-07-28) side of the endpoint: stateless POSTs, mirrored-header checks, JSON
//! or a per-request SSE stream whose closing cancels the request.
//!
//! One of the transport's two era adapters, with `legacy.rs` (see there).

use super::config::ResponseMode;
use super::sse::{self, ModernConn};
use super::{
    accepted, busy, error_response, headers, principal, reply_json, rpc_error, Inner, SINK_CAPACITY,
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

fn json_reply(reply: Option<Reply>) -> Response {
    match reply {
        Some(reply) => reply_json(status_of(&reply), reply),
        None => sse::empty_response(),
    }
}

/// The answer to a request whose handler has finished: its reply as JSON when it sent nothing
/// on the sink (and the mode allows JSON), else an SSE stream of what it sent, then the reply.
fn finished(
    reply: Option<Reply>,
    mut sink: mpsc::Receiver<Frame>,
    on_drop: DropGuard,
    permit: OwnedSemaphorePermit,
    mode: ResponseMode,
    keep_alive: Option<Duration>,
) -> Response {
    match (mode, sink.try_recv()) {
        (ResponseMode::JsonWhenPossible, Err(_)) => {
            on_drop.disarm();
            json_reply(reply)
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
    // Long-lived listen streams have their own cap: they never take a request permit.
    let (permits, what) = if listen {
        (
            &t.listen_streams,
            "too many subscriptions/listen streams open",
        )
    } else {
        (&t.requests, "too many requests in flight")
    };
    let cancel = CancellationToken::new();
    let Ok(Admitted { permit, .. }) = driver::admit(permits, None, &req.id, &cancel) else {
        return busy(Some(&req.id), what);
    };
    let (sink, sink_rx) = mpsc::channel::<Frame>(SINK_CAPACITY);
    let limit = if listen {
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
                    return json_reply(reply);
                }
            },
            reply = &mut handler => {
                return finished(reply, sink_rx, on_drop, permit, mode, t.config.keep_alive);
            }
        },
    };
    let conn = ModernConn {
        handler: Some(handler),
        first,
        sink: sink_rx,
        reply: None,
        keep_alive: t.config.keep_alive,
        _guards: Box::new((on_drop, permit)),
    };
    sse::response(sse::modern_body(conn))
}
