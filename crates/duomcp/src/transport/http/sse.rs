//! Server-Sent Events: framing, and the response bodies of both eras.

use super::session::{event_id, Out};
use crate::server::session::Frame;
use crate::server::Reply;
use axum::body::Body;
use axum::response::Response;
use bytes::{BufMut, Bytes, BytesMut};
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderValue, StatusCode};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::{Instant, Interval, MissedTickBehavior};

/// A request being handled, polled by the response body that carries its messages.
pub(crate) use crate::server::driver::ReplyFuture;

/// A comment line: keeps proxies and clients from timing the stream out.
pub(crate) const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// One SSE event carrying a JSON-RPC message. JSON never contains raw newlines, but a message
/// that did would still be framed correctly (one `data:` line per line).
pub(crate) fn event(id: Option<&str>, message: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(message.len() + 32);
    if let Some(id) = id {
        out.put_slice(b"id: ");
        out.put_slice(id.as_bytes());
        out.put_u8(b'\n');
    }
    for line in message.split(|b| *b == b'\n') {
        out.put_slice(b"data: ");
        out.put_slice(line.strip_suffix(b"\r").unwrap_or(line));
        out.put_u8(b'\n');
    }
    out.put_u8(b'\n');
    out.freeze()
}

/// The priming event of a resumable stream: an id, the reconnection delay, empty data.
pub(crate) fn priming(id: &str, retry: Duration) -> Bytes {
    Bytes::from(format!(
        "id: {id}\nretry: {}\ndata: \n\n",
        retry.as_millis()
    ))
}

/// A bare `retry:` field (sets the client's reconnection delay; dispatches no event).
pub(crate) fn retry_field(retry: Duration) -> Bytes {
    Bytes::from(format!("retry: {}\n\n", retry.as_millis()))
}

/// A `200 text/event-stream` response around `body`.
pub(crate) fn response(body: Body) -> Response {
    let mut res = Response::new(body);
    let h = res.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    res
}

/// A `200 text/event-stream` response that ends at once (a cancelled request: nothing to send).
pub(crate) fn empty_response() -> Response {
    response(Body::empty())
}

fn ticker(every: Option<Duration>) -> Option<Interval> {
    every.map(|d| {
        let mut i = tokio::time::interval_at(Instant::now() + d, d);
        i.set_missed_tick_behavior(MissedTickBehavior::Delay);
        i
    })
}

async fn tick(interval: &mut Option<Interval>) {
    match interval {
        Some(i) => {
            i.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// A connection carrying one legacy logical stream.
pub(crate) struct LegacyConn {
    /// The logical stream's number (event ids are `<stream>-<seq>`).
    pub stream: u64,
    /// Written first: the priming event or a `retry:` field, then replayed events.
    pub pending: VecDeque<Bytes>,
    /// Live events; `None` when the stream had ended (replay only).
    pub rx: Option<mpsc::Receiver<Out>>,
    pub keep_alive: Option<Duration>,
    pub retry: Duration,
    /// Held while the connection is open (session activity, stream permits).
    pub _guards: Box<dyn Send>,
}

struct LegacyState {
    conn: LegacyConn,
    interval: Option<Interval>,
}

impl LegacyState {
    async fn next(&mut self) -> Option<Bytes> {
        if let Some(b) = self.conn.pending.pop_front() {
            return Some(b);
        }
        let LegacyConn {
            stream, rx, retry, ..
        } = &mut self.conn;
        let receiver = rx.as_mut()?;
        // The connection ends when its stream does (the standalone stream ends with its
        // session) or the client goes away; a POST stream's pump keeps it until the reply.
        let next = tokio::select! {
            biased;
            out = receiver.recv() => match out {
                Some(Out::Event { seq, message }) => Some(event(Some(&event_id(*stream, seq)), &message)),
                Some(Out::Reconnect) => {
                    *rx = None;
                    return Some(retry_field(*retry));
                }
                None => None,
            },
            _ = tick(&mut self.interval) => Some(Bytes::from_static(KEEP_ALIVE)),
        };
        if next.is_none() {
            *rx = None;
        }
        next
    }
}

/// The body of a legacy SSE connection.
pub(crate) fn legacy_body(conn: LegacyConn) -> Body {
    let interval = ticker(conn.keep_alive);
    let state = LegacyState { conn, interval };
    Body::from_stream(futures_util::stream::unfold(state, |mut st| async move {
        let chunk = st.next().await?;
        Some((Ok::<_, Infallible>(chunk), st))
    }))
}

/// A modern (2026-07-28) SSE response: the request's notifications, then its response. The
/// handler runs inside the body, so a client that closes the stream cancels it (the body is
/// dropped, and with it the handler and `guards`, which fire the request's cancel token).
pub(crate) struct ModernConn {
    pub handler: Option<ReplyFuture>,
    pub first: Option<Frame>,
    pub sink: mpsc::Receiver<Frame>,
    /// The reply, when the handler had finished already.
    pub reply: Option<Bytes>,
    pub keep_alive: Option<Duration>,
    pub _guards: Box<dyn Send>,
}

enum Step {
    Frame(Option<Frame>),
    Done(Option<Reply>),
    KeepAlive,
}

struct ModernState {
    conn: ModernConn,
    interval: Option<Interval>,
}

impl ModernState {
    async fn next(&mut self) -> Option<Bytes> {
        if let Some(f) = self.conn.first.take().filter(|f| !f.is_empty()) {
            return Some(event(None, &f));
        }
        loop {
            let Some(handler) = self.conn.handler.as_mut() else {
                // Finished: what it sent before returning, then its reply.
                while let Ok(f) = self.conn.sink.try_recv() {
                    if !f.is_empty() {
                        return Some(event(None, &f));
                    }
                }
                return self.conn.reply.take().map(|r| event(None, &r));
            };
            let step = tokio::select! {
                biased;
                f = self.conn.sink.recv() => Step::Frame(f),
                r = handler => Step::Done(r),
                _ = tick(&mut self.interval) => Step::KeepAlive,
            };
            match step {
                Step::Frame(Some(f)) if f.is_empty() => continue,
                Step::Frame(Some(f)) => return Some(event(None, &f)),
                Step::Frame(None) => {
                    // Every sender is gone: the handler is about to return.
                    if let Some(h) = self.conn.handler.take() {
                        self.conn.reply = h.await.map(|r| Bytes::from(r.frame));
                    }
                }
                Step::Done(r) => {
                    self.conn.handler = None;
                    self.conn.reply = r.map(|r| Bytes::from(r.frame));
                }
                Step::KeepAlive => return Some(Bytes::from_static(KEEP_ALIVE)),
            }
        }
    }
}

/// The body of a modern SSE response.
pub(crate) fn modern_body(conn: ModernConn) -> Body {
    let interval = ticker(conn.keep_alive);
    let state = ModernState { conn, interval };
    Body::from_stream(futures_util::stream::unfold(state, |mut st| async move {
        let chunk = st.next().await?;
        Some((Ok::<_, Infallible>(chunk), st))
    }))
}

/// A JSON response carrying one encoded JSON-RPC message.
pub(crate) fn json(status: StatusCode, message: Vec<u8>) -> Response {
    let mut res = Response::new(Body::from(message));
    *res.status_mut() = status;
    res.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_events() {
        assert_eq!(
            &event(Some("1-2"), br#"{"a":1}"#)[..],
            b"id: 1-2\ndata: {\"a\":1}\n\n"
        );
        assert_eq!(&event(None, b"x\ny")[..], b"data: x\ndata: y\n\n");
        assert_eq!(
            &priming("3-0", Duration::from_millis(500))[..],
            b"id: 3-0\nretry: 500\ndata: \n\n"
        );
        assert_eq!(&retry_field(Duration::from_secs(1))[..], b"retry: 1000\n\n");
    }
}
