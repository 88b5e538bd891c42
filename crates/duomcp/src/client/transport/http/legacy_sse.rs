//! The HTTP+SSE transport of 2024-11-05, for servers that only speak it: a `GET` on the URL
//! opens the one SSE stream; its first event, `endpoint`, names the URL to POST messages to;
//! every answer and every server message comes on the stream.

use super::sse::{Event, Parser};
use super::wire::{excerpt, is_media, ACCEPT_SSE};
use super::{chain, lock, Shared, StatusCode};
use crate::client::transport::{Outgoing, RequestStream, TransportError};
use crate::jsonrpc::{decode, Incoming, RequestId};
use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::HeaderValue;
use std::sync::Arc;
use url::Url;

/// The 2024-11-05 connection: where to POST.
pub(crate) struct OldSse {
    endpoint: Url,
}

impl OldSse {
    async fn post(&self, shared: &Shared, msg: &Outgoing) -> Result<(), TransportError> {
        let mut headers = shared.options.headers.clone();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let body = Bytes::from(msg.body.clone());
        let mut response = shared
            .send_http(Some(msg), || {
                shared
                    .client
                    .post(self.endpoint.clone())
                    .headers(headers.clone())
                    .body(body.clone())
            })
            .await?;
        let status = response.status();
        let text = shared
            .read_body(&mut response, super::MAX_ERROR_BODY)
            .await
            .unwrap_or_default();
        if status.is_success() {
            Ok(())
        } else {
            Err(TransportError::Http {
                status: status.as_u16(),
                body: excerpt(&text),
            })
        }
    }

    /// A request: its response comes on the stream, after the notifications sent before it.
    pub(crate) async fn request(
        &self,
        shared: &Arc<Shared>,
        msg: Outgoing,
        id: RequestId,
    ) -> Result<RequestStream, TransportError> {
        // Every message comes on the one stream: the response is routed by id, after the
        // events that preceded it (the engine delivers their count with it).
        let waiter = shared
            .pending
            .request_as(id)
            .map_err(|e| TransportError::Other(format!("cannot send the request: {e}")))?;
        self.post(shared, &msg).await?;
        Ok(shared.request_stream(None, waiter, None))
    }

    /// A notification or a response.
    pub(crate) async fn send(&self, shared: &Shared, msg: Outgoing) -> Result<(), TransportError> {
        self.post(shared, &msg).await
    }
}

/// `initialize` was answered `status` (400, 404 or 405) with no sign of a 2026-07-28 server:
/// try the 2024-11-05 transport, and send `initialize` again through it.
pub(crate) async fn fall_back(
    shared: &Arc<Shared>,
    msg: &Outgoing,
    status: StatusCode,
    body: &[u8],
) -> Result<(), TransportError> {
    let refused = || TransportError::Http {
        status: status.as_u16(),
        body: excerpt(body),
    };
    let old = {
        let _switching = shared.switching.lock().await;
        match shared.old() {
            Some(old) => old,
            None => match connect(shared).await {
                Ok(old) => old,
                Err(e) => {
                    tracing::debug!("not a 2024-11-05 HTTP+SSE server either: {e}");
                    return Err(refused());
                }
            },
        }
    };
    old.post(shared, msg).await
}

/// Opens the SSE stream, waits for the `endpoint` event, and starts reading.
async fn connect(shared: &Arc<Shared>) -> Result<Arc<OldSse>, TransportError> {
    let mut headers = shared.options.headers.clone();
    headers.insert(ACCEPT, HeaderValue::from_static(ACCEPT_SSE));
    let mut response = shared
        .send_http(None, || {
            shared
                .client
                .get(shared.url.clone())
                .headers(headers.clone())
        })
        .await?;
    if !response.status().is_success()
        || !is_media(response.headers().get(CONTENT_TYPE), "text/event-stream")
    {
        return Err(TransportError::Http {
            status: response.status().as_u16(),
            body: "GET did not open an SSE stream".into(),
        });
    }
    let mut parser = Parser::new(shared.options.max_message_size);
    let mut events = Vec::new();
    let wait = async {
        loop {
            let chunk = response
                .chunk()
                .await
                .map_err(|e| TransportError::Other(chain(&e)))?;
            let Some(chunk) = chunk else {
                return Err(TransportError::Other(
                    "the SSE stream ended before the endpoint event".into(),
                ));
            };
            parser
                .feed(&chunk, &mut events)
                .map_err(TransportError::Other)?;
            if let Some(pos) = events.iter().position(|e| e.kind == "endpoint") {
                let endpoint = events.remove(pos).data;
                // Events before the endpoint one are not messages of this session.
                events.drain(..pos);
                return Ok(endpoint);
            }
        }
    };
    let endpoint = tokio::time::timeout(shared.options.endpoint_timeout, wait)
        .await
        .map_err(|_| TransportError::Other("no endpoint event from the SSE stream".into()))??;
    let endpoint = shared.url.join(endpoint.trim()).map_err(|e| {
        TransportError::Other(format!("the endpoint event is not a URL ({e}): {endpoint}"))
    })?;
    if endpoint.origin() != shared.url.origin() {
        return Err(TransportError::Other(format!(
            "the endpoint {endpoint} is not on the origin of {}",
            shared.url
        )));
    }
    tracing::info!(%endpoint, "the server speaks the 2024-11-05 HTTP+SSE transport");
    let old = Arc::new(OldSse { endpoint });
    *lock(&shared.old) = Some(old.clone());
    tokio::spawn(read(shared.clone(), response, parser, events));
    Ok(old)
}

/// Reads the stream: responses to their requests, everything else to the events. When it
/// ends, the connection is over.
async fn read(
    shared: Arc<Shared>,
    mut response: reqwest::Response,
    mut parser: Parser,
    mut events: Vec<Event>,
) {
    let why = loop {
        for event in events.drain(..) {
            route(&shared, event).await;
        }
        let chunk = tokio::select! {
            c = response.chunk() => c,
            _ = shared.closing.cancelled() => return,
        };
        match chunk {
            Ok(Some(bytes)) => {
                if let Err(e) = parser.feed(&bytes, &mut events) {
                    break e;
                }
            }
            Ok(None) => break "the server closed the SSE stream".to_owned(),
            Err(e) => break format!("reading the SSE stream failed: {}", chain(&e)),
        }
    };
    shared.shut_down(&why).await;
}

async fn route(shared: &Shared, event: Event) {
    if !event.kind.is_empty() && event.kind != "message" {
        tracing::debug!(kind = %event.kind, "ignored an SSE event of an unknown type");
        return;
    }
    match decode(event.data.as_bytes()) {
        Ok(Incoming::Response(r)) => {
            shared.deliver(r).await;
        }
        Ok(other) => shared.emit(other).await,
        Err(e) => tracing::warn!(
            "ignored an undecodable message from the server: {}",
            e.error.message
        ),
    }
}
