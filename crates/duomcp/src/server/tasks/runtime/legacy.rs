//! 2025-11-25: the server's requests for a task, sent on the `tasks/result` stream, and the
//! session-scoped `tasks/list`.

use super::{live_store_shared, LiveTask, TaskRuntime};
use crate::era::{Era, ProtocolError};
use crate::jsonrpc;
use crate::server::session::{Session, Sink};
use crate::server::tasks::{TaskFilter, TaskRecord};
use crate::server::HandlerError;
use crate::util::lock;
use serde_json::value::RawValue;
use serde_json::Value;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

impl TaskRuntime {
    /// 2025-11-25: sends a server→client request for a task through `tasks/result`, with the
    /// related-task `_meta`, keeping the task `input_required` until the client answers.
    pub(crate) async fn client_request(
        &self,
        live: &Arc<LiveTask>,
        method: &str,
        params: &Value,
    ) -> Result<Box<RawValue>, HandlerError> {
        let Some(session) = live.session.clone() else {
            return Err(HandlerError::msg(
                "no session to send a request to the client on",
            ));
        };
        let mut params = params.clone();
        duomcp_proto::era::tasks::relate_to_task(&mut params, &live.id);
        let mut waiter = session
            .correlation()
            .request()
            .map_err(|e| HandlerError::msg(format!("cannot send {method} to the client: {e}")))?;
        let rid = waiter.id().clone();
        let frame = jsonrpc::encode_request(&rid, method, &params)
            .map_err(|e| HandlerError::msg(e.to_string()))?;
        // In the record too, for a `tasks/result` served by another replica (a shared store).
        let shared = live_store_shared(&self.store());
        let text = shared
            .then(|| String::from_utf8(frame.clone()).ok())
            .flatten();
        lock(&live.outbox).push_back((rid.clone(), frame));
        live.outstanding.fetch_add(1, Ordering::SeqCst);
        let key = rid.to_string();
        let k = key.clone();
        self.edit(&live.id, move |r, now| r.await_client(k, text, now))
            .await;
        live.bump();
        // No timeout: the task waits in `input_required` until answered, cancelled or gone.
        let outcome = tokio::select! {
            a = waiter.recv() => a.map_err(|_| HandlerError::msg("the session closed before the client answered")),
            _ = live.cancel.cancelled() => Err(HandlerError::Cancelled),
        };
        drop(waiter);
        lock(&live.outbox).retain(|(id, _)| id != &rid);
        let last = live.outstanding.fetch_sub(1, Ordering::SeqCst) == 1;
        if last || shared {
            self.edit(&live.id, move |r, now| r.client_answered(&key, last, now))
                .await;
        }
        match outcome? {
            Ok(raw) => Ok(raw),
            Err(e) => Err(HandlerError::msg(format!(
                "the client answered {method} with error {}: {}",
                e.code, e.message
            ))),
        }
    }

    /// 2025-11-25 `tasks/result`: forwards the task's server→client requests to `sink` until
    /// the task is terminal, then returns it. `None` when the client went away.
    pub(crate) async fn await_terminal(
        &self,
        id: &str,
        principal: Option<&str>,
        sink: &Sink,
    ) -> Result<Option<TaskRecord>, ProtocolError> {
        // Requests of a task run by another replica sent on this stream already.
        let mut sent_here: std::collections::HashSet<String> = Default::default();
        loop {
            let live = self.live(id);
            let mut changes = live.as_ref().map(|l| l.version.subscribe());
            let record = self.lookup(id, Era::Legacy, principal).await?;
            if record.status.is_terminal() {
                return Ok(Some(record));
            }
            if let Some(live) = &live {
                loop {
                    let next = lock(&live.outbox).pop_front();
                    let Some((rid, frame)) = next else { break };
                    if sink.send(frame.clone()).await.is_err() {
                        lock(&live.outbox).push_front((rid, frame));
                        return Ok(None);
                    }
                }
            } else {
                // Run by another replica: its requests are in the record; the client's answers
                // reach the handler there whichever replica they land on.
                sent_here.retain(|rid| record.client_requests.contains_key(rid));
                for (rid, frame) in &record.client_requests {
                    if sent_here.contains(rid) {
                        continue;
                    }
                    if sink.send(frame.clone().into_bytes()).await.is_err() {
                        return Ok(None);
                    }
                    sent_here.insert(rid.clone());
                }
            }
            // Wake on any change; poll now and then so expiry is noticed too.
            let tick = tokio::time::sleep(Duration::from_millis(500));
            match changes.as_mut() {
                Some(rx) => {
                    tokio::select! {
                        _ = rx.changed() => {}
                        _ = tick => {}
                    }
                }
                None => tick.await,
            }
        }
    }

    /// The tasks `principal` may list on a 2025-11-25 session.
    pub(crate) fn legacy_filter(
        &self,
        principal: Option<&str>,
        session: &Arc<Session>,
    ) -> Result<TaskFilter, ProtocolError> {
        Ok(match principal {
            Some(p) => TaskFilter::Principal(Era::Legacy, p.to_owned()),
            None => TaskFilter::Scope(Era::Legacy, self.session_scope(session)?),
        })
    }
}
