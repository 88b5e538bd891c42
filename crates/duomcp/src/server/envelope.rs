//! What a transport hands the dispatcher with a request ([`RequestEnv`]) and what it gets back
//! ([`Reply`]): the types the transports, the dispatcher and the middleware share (so that
//! the middleware, which carries both, need not import the dispatcher).

use super::session::{Session, Sink};
use super::Principal;
use crate::era::modern::ValidMeta;
use crate::era::{Era, ProtocolError};
use crate::jsonrpc;
use duomcp_schema::RequestId;
use serde::Serialize;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What a transport hands the dispatcher along with a request.
pub(crate) struct RequestEnv {
    /// The legacy session (stdio: the connection's; HTTP: the `Mcp-Session-Id`'s).
    pub session: Option<Arc<Session>>,
    /// The era the transport already knows (HTTP headers); `None` lets the body decide.
    pub era_hint: Option<Era>,
    /// A 2026-07-28 request's `_meta`, when the transport validated it already (HTTP, where
    /// the headers are checked against it).
    pub validated_meta: Option<ValidMeta>,
    /// Where progress, logs and server→client requests for this request go.
    pub sink: Sink,
    /// Fires when the client cancels this request.
    pub cancel: CancellationToken,
    /// Fires when the connection or server is shutting down (ends listen streams gracefully).
    pub closing: CancellationToken,
    /// The authenticated caller (HTTP: from the auth layer; stdio: the local user).
    pub principal: Option<Arc<Principal>>,
    /// The address of the peer (HTTP over TCP), when known.
    pub peer: Option<std::net::IpAddr>,
    /// The HTTP trace context headers, for OpenTelemetry (empty without feature `otel`).
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    pub trace: TransportTrace,
}

/// The encoded answer to one request.
pub(crate) struct Reply {
    /// The JSON-RPC response (no framing).
    pub frame: Vec<u8>,
    /// The protocol error, when the answer is one (transports map it to a status code).
    #[cfg_attr(not(feature = "http-server"), allow(dead_code))]
    pub error: Option<ProtocolError>,
    /// The answer is a tool result with `isError: true`.
    pub is_error: bool,
}

/// The reply carrying `err`, as the era words it.
pub(crate) fn error_reply(era: Era, id: &RequestId, err: ProtocolError) -> Reply {
    Reply {
        frame: jsonrpc::encode_error(Some(id), &era.error_object(&err)),
        error: Some(err),
        is_error: false,
    }
}

/// The reply carrying `result` as it is.
pub(crate) fn result_reply<T: Serialize>(era: Era, id: &RequestId, result: &T) -> Reply {
    match jsonrpc::encode_result(id, result) {
        Ok(frame) => Reply {
            frame,
            error: None,
            is_error: false,
        },
        Err(e) => error_reply(
            era,
            id,
            ProtocolError::Internal(format!("result could not be encoded: {e}")),
        ),
    }
}

/// The trace context headers of the HTTP request that carried an MCP request.
#[derive(Default)]
pub(crate) struct TransportTrace(
    #[cfg(feature = "otel")] pub(super) Option<Box<crate::otel::HeaderContext>>,
);

impl TransportTrace {
    /// Reads `traceparent`, `tracestate` and `Mcp-Session-Id` (only when telemetry is on).
    #[cfg(feature = "http-server")]
    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    #[inline]
    pub(crate) fn from_headers(shared: &super::Shared, headers: &http::HeaderMap) -> Self {
        #[cfg(feature = "otel")]
        if shared.telemetry.0.is_some() {
            let get = |name: &str| {
                headers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            return TransportTrace(Some(Box::new(crate::otel::HeaderContext {
                traceparent: get("traceparent"),
                tracestate: get("tracestate"),
                session_id: get("mcp-session-id"),
            })));
        }
        TransportTrace::default()
    }
}
