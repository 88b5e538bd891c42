//! A 2025-11-25 server→client request (elicitation, sampling, roots) sent from a handler: on
//! the request's stream, or through its task, awaited with the server's timeout.

use super::Context;
use crate::correlation::WaitError;
use crate::jsonrpc;
use crate::server::HandlerError;
use serde_json::Value;
use std::time::Duration;

impl Context {
    /// Sends a server→client request on this request's stream and awaits the answer (legacy).
    pub(super) async fn request_client(
        &self,
        method: &str,
        params: &Value,
    ) -> Result<Box<serde_json::value::RawValue>, HandlerError> {
        if let Some(live) = self.task_live() {
            return self
                .inner
                .shared
                .tasks
                .client_request(&live, method, params)
                .await;
        }
        let Some(session) = &self.inner.session else {
            return Err(HandlerError::msg(
                "no session to send a request to the client on",
            ));
        };
        let waiter = session
            .correlation()
            .request()
            .map_err(|e| HandlerError::msg(format!("cannot send {method} to the client: {e}")))?;
        let mut params = params.clone();
        let traced = crate::server::telemetry::Outgoing::start(
            &self.inner.shared,
            method,
            waiter.id(),
            Some(&self.inner.protocol_version),
            &mut params,
        );
        let frame = jsonrpc::encode_request(waiter.id(), method, &params)
            .map_err(|e| HandlerError::msg(e.to_string()))?;
        if self.inner.sink.send(frame).await.is_err() {
            traced.finish(Err(None));
            return Err(HandlerError::msg("the client connection is closed"));
        }
        let timeout: Duration = self.inner.shared.config.client_request_timeout;
        let outcome = waiter
            .wait(timeout, &self.inner.cancel)
            .await
            .map_err(|e| match e {
                WaitError::Closed => {
                    HandlerError::msg("the client connection closed before answering")
                }
                WaitError::TimedOut(after) => HandlerError::msg(format!(
                    "the client did not answer {method} within {after:?}"
                )),
                WaitError::Cancelled => HandlerError::Cancelled,
            });
        traced.finish(match &outcome {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(Some((e.code.into(), e.message.as_str()))),
            Err(_) => Err(None),
        });
        match outcome? {
            Ok(raw) => Ok(raw),
            Err(e) => Err(HandlerError::msg(format!(
                "the client answered {method} with error {}: {}",
                e.code, e.message
            ))),
        }
    }
}
