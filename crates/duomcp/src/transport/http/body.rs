//! Reading a POST body: under a deadline, within the largest message size, and out of a
//! budget of bytes shared by every body still being received.
//!
//! A client that sends headers announcing a big body and then trickles it (or stops one byte
//! short) would otherwise hold its buffer for as long as it likes. Each body first reserves its
//! `Content-Length` (or the largest message size when it has none) from the shared budget, is
//! read within [`HttpConfig::body_timeout`](super::HttpConfig::body_timeout), and gives the
//! reservation back once it is read (or refused).

use super::{busy, rpc_error};
use crate::jsonrpc::error_code;
use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::header::CONTENT_LENGTH;
use http::request::Parts;
use http::{HeaderValue, StatusCode};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

/// The budget is counted in units of this many bytes (semaphore permits are `u32`).
const UNIT: usize = 1024;

/// The byte budget of unfinished bodies, as semaphore permits.
pub(super) fn budget(bytes: usize) -> Arc<Semaphore> {
    let units = (bytes / UNIT).clamp(1, u32::MAX as usize);
    Arc::new(Semaphore::new(units.min(Semaphore::MAX_PERMITS)))
}

fn too_large(limit: usize) -> Response {
    rpc_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        None,
        error_code::INVALID_REQUEST,
        format!("Invalid Request: the message exceeds the limit of {limit} bytes"),
    )
}

/// Reads the whole body, or answers: `413` over `limit` bytes, `503` when the budget is spent,
/// `408` when it does not arrive within `deadline`, `400` when the connection fails.
pub(super) async fn read(
    parts: &Parts,
    body: Body,
    limit: usize,
    budget: &Arc<Semaphore>,
    deadline: Option<Duration>,
) -> Result<Bytes, Response> {
    let declared = parts
        .headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let reserve = match declared {
        Some(n) if n > limit as u64 => return Err(too_large(limit)),
        Some(n) => n as usize,
        None => limit,
    };
    let units = reserve.div_ceil(UNIT).clamp(1, u32::MAX as usize) as u32;
    let Ok(_reserved) = budget.clone().try_acquire_many_owned(units) else {
        return Err(busy(None, "too many request bodies are being received"));
    };
    let collect = Limited::new(body, limit).collect();
    let collected = match deadline {
        None => collect.await,
        Some(deadline) => match tokio::time::timeout(deadline, collect).await {
            Ok(c) => c,
            Err(_) => {
                let mut res = rpc_error(
                    StatusCode::REQUEST_TIMEOUT,
                    None,
                    error_code::INVALID_REQUEST,
                    format!(
                        "Request Timeout: the body did not arrive within {} ms",
                        deadline.as_millis()
                    ),
                );
                res.headers_mut()
                    .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
                return Err(res);
            }
        },
    };
    match collected {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => Err(too_large(limit)),
        Err(e) => Err(rpc_error(
            StatusCode::BAD_REQUEST,
            None,
            error_code::INVALID_REQUEST,
            format!("Bad Request: unreadable body: {e}"),
        )),
    }
}
