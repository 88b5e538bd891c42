//! 2026-07-28: input requests of a task, asked in `input_required` and answered by
//! `tasks/update`.

use super::{deliver, live_store_shared, LiveTask, TaskRuntime};
use crate::server::HandlerError;
use crate::util::lock;
use duomcp_schema::InputRequest;
use serde_json::{Map, Value};
use std::sync::Arc;
use tokio::sync::oneshot;

impl TaskRuntime {
    /// 2026-07-28: parks the task in `input_required` with `request` under a fresh key and
    /// waits for `tasks/update` to deliver the answer.
    pub(crate) async fn ask(
        &self,
        live: &Arc<LiveTask>,
        key: &str,
        request: InputRequest,
    ) -> Result<Value, HandlerError> {
        let key = live.mint_key(key);
        let (tx, rx) = oneshot::channel();
        lock(&live.waiters).insert(key.clone(), tx);
        let k = key.clone();
        let parked = self
            .edit(&live.id, move |r, now| r.await_input(k, request, now))
            .await;
        if !parked.is_some_and(|(_, changed)| changed) {
            lock(&live.waiters).remove(&key);
            return Err(HandlerError::Cancelled);
        }
        let answer = tokio::select! {
            a = rx => a.map_err(|_| HandlerError::Cancelled),
            _ = live.cancel.cancelled() => Err(HandlerError::Cancelled),
        };
        lock(&live.waiters).remove(&key);
        answer
    }

    /// `tasks/update`: delivers the answers to outstanding input requests. Keys that are not
    /// outstanding (never issued, answered already, or of a finished task) are ignored.
    pub(crate) async fn answer(&self, id: &str, responses: Map<String, Value>) {
        let mut delivered: Vec<(String, Value)> = Vec::new();
        let out = &mut delivered;
        self.edit(id, move |r, now| {
            *out = r.take_answers(responses, now);
            !out.is_empty()
        })
        .await;
        if delivered.is_empty() {
            return;
        }
        let Some(live) = self.live(id) else {
            // Run by another replica: it takes the answers at its next lease renewal.
            let store = self.store();
            if live_store_shared(&store) {
                let answers: Map<String, Value> = delivered.into_iter().collect();
                if let Err(e) = store.post_answers(id, answers).await {
                    tracing::warn!(task = id, "tasks/update answers not passed on: {e}");
                }
            }
            return;
        };
        deliver(&live, delivered);
    }
}
