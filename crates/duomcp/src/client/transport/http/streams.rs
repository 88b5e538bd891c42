//! SSE streams: a request's stream (resumed with `GET` and `Last-Event-ID` in 2025-11-25),
//! the session's standalone `GET` stream, and the routing of their events.

use super::wire::is_media;
use super::{chain, sse, Shared};
use crate::client::transport::TransportError;
use crate::jsonrpc::{decode, Incoming, RequestId};
use crate::util::lock;
use http::header::CONTENT_TYPE;
use http::StatusCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// How an SSE connection ended.
enum StreamEnd {
    /// The awaited response was delivered (or nobody waits for it any more).
    Answered,
    /// The connection ended; `seen`: whether it carried any event.
    Ended { seen: bool, why: Option<String> },
}

/// Where the messages of an SSE stream go, other than responses (always routed by id).
enum Sink<'a> {
    /// A request's stream: to the request.
    Request {
        tx: &'a mpsc::Sender<Result<Incoming, TransportError>>,
        id: &'a RequestId,
    },
    /// The standalone `GET` stream: to the transport's events.
    Events,
}

impl Shared {
    /// Opens the session's standalone `GET` stream and waits (briefly) until the server
    /// answered it, so that messages the server sends right away are not missed.
    pub(super) async fn open_standalone(self: &Arc<Self>) {
        let (session, token) = {
            let s = lock(&self.session);
            (s.id.clone(), s.streams.clone())
        };
        let (ready, answered) = oneshot::channel();
        tokio::spawn(standalone(self.clone(), session, token, ready));
        let _ = tokio::time::timeout(Duration::from_secs(2), answered).await;
    }

    /// Reads a request's SSE stream until its response; in 2025-11-25 a stream that ends early
    /// is resumed with `GET` and `Last-Event-ID` after the server's `retry:` delay.
    pub(super) async fn read_request_stream(
        self: &Arc<Self>,
        mut response: reqwest::Response,
        modern: bool,
        id: &RequestId,
        tx: &mpsc::Sender<Result<Incoming, TransportError>>,
    ) -> Result<(), TransportError> {
        let mut parser = sse::Parser::new(self.options.max_message_size);
        let mut failures = 0u32;
        loop {
            let end = self
                .pump(&mut response, &mut parser, &Sink::Request { tx, id })
                .await;
            let (seen, why) = match end {
                StreamEnd::Answered => return Ok(()),
                StreamEnd::Ended { seen, why } => (seen, why),
            };
            self.check_open()?;
            let why = why.unwrap_or_else(|| "the server closed it".into());
            if modern {
                return Err(TransportError::Other(format!(
                    "the response stream ended before the response ({why})"
                )));
            }
            let Some(last) = parser.last_event_id.clone() else {
                return Err(TransportError::Other(format!(
                    "the response stream ended before the response ({why}), and without an event id to resume from"
                )));
            };
            if seen {
                failures = 0;
            }
            // Reconnect, after the server's delay, until a stream is open again.
            response = loop {
                failures += 1;
                if failures > self.options.max_reconnects {
                    return Err(TransportError::Other(format!(
                        "the response stream ended before the response ({why}), and resuming it failed {} times",
                        failures - 1
                    )));
                }
                let delay = parser.retry.unwrap_or(self.options.default_retry);
                tracing::debug!(%id, ?delay, last_event_id = %last, "resuming the response stream");
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = self.closing.cancelled() => {
                        return Err(TransportError::Closed("the client closed the connection".into()))
                    }
                }
                let session = self.session_id();
                let resumed = match self.get_stream(Some(&last), session.as_deref()).await {
                    Ok(r) => r,
                    Err(e @ (TransportError::Closed(_) | TransportError::Auth(_))) => {
                        return Err(e)
                    }
                    Err(e) => {
                        tracing::debug!(%id, "resuming the stream failed: {e}");
                        continue;
                    }
                };
                let status = resumed.status();
                if status.is_success()
                    && is_media(resumed.headers().get(CONTENT_TYPE), "text/event-stream")
                {
                    break resumed;
                }
                if let (StatusCode::NOT_FOUND, Some(sid)) = (status, &session) {
                    self.session_expired(sid);
                    return Err(TransportError::Other(
                        "the session expired before the response arrived".into(),
                    ));
                }
                if status.is_server_error() {
                    continue;
                }
                return Err(TransportError::Http {
                    status: status.as_u16(),
                    body: format!(
                        "resuming the response stream (Last-Event-ID {last}) was refused"
                    ),
                });
            };
            parser.reset_connection();
        }
    }

    /// Reads one SSE connection, routing its messages, until it ends or (for a request's
    /// stream) the response was delivered.
    async fn pump(
        &self,
        response: &mut reqwest::Response,
        parser: &mut sse::Parser,
        sink: &Sink<'_>,
    ) -> StreamEnd {
        let mut events = Vec::new();
        let mut seen = false;
        loop {
            let chunk = tokio::select! {
                c = response.chunk() => c,
                _ = self.closing.cancelled() => {
                    return StreamEnd::Ended { seen, why: Some("the client closed the connection".into()) }
                }
            };
            let bytes = match chunk {
                Ok(Some(b)) => b,
                Ok(None) => return StreamEnd::Ended { seen, why: None },
                Err(e) => {
                    return StreamEnd::Ended {
                        seen,
                        why: Some(chain(&e)),
                    }
                }
            };
            if let Err(e) = parser.feed(&bytes, &mut events) {
                return StreamEnd::Ended { seen, why: Some(e) };
            }
            for event in events.drain(..) {
                seen = true;
                if self.dispatch(event, sink).await {
                    return StreamEnd::Answered;
                }
            }
        }
    }

    /// Routes one SSE event; `true` when the awaited response was delivered or nobody waits
    /// for it any more.
    async fn dispatch(&self, event: sse::Event, sink: &Sink<'_>) -> bool {
        if !event.kind.is_empty() && event.kind != "message" {
            tracing::debug!(kind = %event.kind, "ignored an SSE event of an unknown type");
            return false;
        }
        let message = match decode(event.data.as_bytes()) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(
                    "ignored an undecodable message from the server: {}",
                    e.error.message
                );
                return false;
            }
        };
        match (message, sink) {
            (Incoming::Response(r), Sink::Request { id, .. }) if &r.id == *id => {
                self.deliver(r).await;
                true
            }
            (Incoming::Response(r), _) => {
                self.deliver(r).await;
                false
            }
            (other, Sink::Request { tx, .. }) => tx.send(Ok(other)).await.is_err(),
            (other, Sink::Events) => {
                self.emit(other).await;
                false
            }
        }
    }
}

/// The standalone `GET` stream of a 2025-11-25 session: reconnected (with `Last-Event-ID`)
/// when the server closes it, until the session ends; a `405` means the server offers none.
async fn standalone(
    shared: Arc<Shared>,
    session: Option<String>,
    token: CancellationToken,
    ready: oneshot::Sender<()>,
) {
    let mut ready = Some(ready);
    let mut parser = sse::Parser::new(shared.options.max_message_size);
    let mut failures = 0u32;
    loop {
        let last = parser.last_event_id.clone();
        let response = tokio::select! {
            r = shared.get_stream(last.as_deref(), session.as_deref()) => r,
            _ = token.cancelled() => return,
        };
        if let Some(ready) = ready.take() {
            let _ = ready.send(());
        }
        match response {
            Ok(mut r)
                if r.status().is_success()
                    && is_media(r.headers().get(CONTENT_TYPE), "text/event-stream") =>
            {
                parser.reset_connection();
                let end = tokio::select! {
                    e = shared.pump(&mut r, &mut parser, &Sink::Events) => e,
                    _ = token.cancelled() => return,
                };
                match end {
                    StreamEnd::Ended { seen: true, .. } => failures = 0,
                    _ => failures += 1,
                }
            }
            Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => {
                tracing::debug!("the server offers no GET stream");
                return;
            }
            Ok(r) if r.status() == StatusCode::NOT_FOUND && session.is_some() => {
                if let Some(sid) = &session {
                    shared.session_expired(sid);
                }
                return;
            }
            Ok(r) => {
                tracing::debug!(status = %r.status(), "the server refused the GET stream");
                return;
            }
            Err(TransportError::Closed(_)) => return,
            Err(e) => {
                tracing::debug!("the GET stream failed: {e}");
                failures += 1;
            }
        }
        if failures > shared.options.max_reconnects {
            tracing::debug!("giving up the GET stream after {failures} failures");
            return;
        }
        let delay = parser.retry.unwrap_or(shared.options.default_retry) * failures.max(1);
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = token.cancelled() => return,
        }
    }
}
