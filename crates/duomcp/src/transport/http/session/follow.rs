//! Shared sessions: following a stream another replica writes, for a connection resuming it
//! here, and answering for its request when that replica dies.

use super::Out;
use crate::transport::http::store::{EventStore, StreamState as Remote};
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Follows a stream another replica writes, for a connection resuming it here: sends the
/// events after `after` to `tx` as they are stored, until the stream is finished; if its
/// writer's lease lapses first, stores and sends a JSON-RPC error for its request. Gives up
/// (the connection ends, the client may resume again) after `bound`, or when `tx` is gone.
pub(crate) async fn follow_remote_stream(
    store: Arc<dyn EventStore>,
    session: Arc<str>,
    stream: u64,
    after: u64,
    tx: mpsc::Sender<Out>,
    bound: Duration,
) {
    let deadline = tokio::time::Instant::now() + bound;
    let mut last = after;
    loop {
        // The state first: a stream found finished had stored its last event before.
        let state = match store.stream_state(&session, stream).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(session = %session, stream, "cannot follow the stream: {e}");
                return;
            }
        };
        let events = match store.replay_after(&session, stream, last).await {
            Ok(events) => events,
            Err(e) => {
                tracing::warn!(session = %session, stream, "cannot follow the stream: {e}");
                return;
            }
        };
        for e in events {
            last = last.max(e.seq);
            if tx
                .send(Out::Event {
                    seq: e.seq,
                    message: e.message,
                })
                .await
                .is_err()
            {
                return;
            }
        }
        match state {
            Remote::Finished => return,
            Remote::Running => {}
            Remote::Lost(request) => {
                let message = lost_request_error(&request);
                let seq = last + 1;
                if let Err(e) = store.append(&session, stream, seq, message.clone()).await {
                    tracing::warn!(session = %session, stream, "error event not stored: {e}");
                }
                store.close_stream(&session, stream).await;
                let _ = tx.send(Out::Event { seq, message }).await;
                return;
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return;
        }
        tokio::select! {
            () = tokio::time::sleep(FOLLOW_POLL) => {}
            () = tx.closed() => return,
        }
    }
}

/// How often a replica following another's stream reads the shared log.
const FOLLOW_POLL: Duration = Duration::from_millis(50);

/// The JSON-RPC error a request gets when the replica serving it died.
fn lost_request_error(id_json: &[u8]) -> Bytes {
    // The id was stored as JSON by the transport; anything else becomes `null`.
    let id = serde_json::from_slice::<serde_json::Value>(id_json).unwrap_or_default();
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": duomcp_schema::error_code::INTERNAL_ERROR,
            "message": "Internal error: the replica serving this request stopped before \
                        answering (its lease lapsed); the request is lost",
        },
    });
    Bytes::from(body.to_string())
}
