//! Routing what the server sends outside a response: notifications (to progress callbacks,
//! subscriptions, the connection-wide stream, the cache) and 2025-11-25 server→client requests
//! (to the application's handlers, each in its own task). Nothing here waits on the application.

use super::*;

impl Inner {
    /// Routes a message that is not the response being waited for. Never waits.
    pub(crate) fn route(self: &Arc<Self>, message: Incoming) {
        match message {
            // Tied to no request of ours: see `Live`.
            Incoming::Request(req) => self.spawn_server_request(req, None),
            Incoming::Notification(n) => self.on_notification(n),
            Incoming::Response(r) => {
                tracing::debug!(id = %r.id, "ignored a response nobody waits for")
            }
        }
    }

    fn on_notification(&self, n: IncomingNotification) {
        let params: Value = match n.params.as_ref().map(|p| serde_json::from_str(p.get())) {
            None => json!({}),
            Some(Ok(v)) => v,
            Some(Err(e)) => {
                tracing::warn!(method = %n.method, "ignored a notification with malformed params: {e}");
                return;
            }
        };
        let tag: Option<RequestId> = params
            .get("_meta")
            .and_then(|m| m.get(meta::SUBSCRIPTION_ID))
            .and_then(|t| serde_json::from_value(t.clone()).ok());
        let method = n.method.as_str();
        let notification = match method {
            m if m == <methods::Progress as NotificationMethod>::NAME => {
                let Some(p) = parse::<ProgressNotificationParams>(method, &params) else {
                    return;
                };
                if let Some(tx) = lock(&self.progress).get(&p.progress_token) {
                    let _ = tx.send(p.clone());
                }
                ServerEvent::Progress(p)
            }
            m if m == <methods::LoggingMessage as NotificationMethod>::NAME => {
                let Some(p) = parse::<LoggingMessageNotificationParams>(method, &params) else {
                    return;
                };
                ServerEvent::Log(p)
            }
            m if m == <methods::SubscriptionsAcknowledged as NotificationMethod>::NAME => {
                let Some(tag) = tag else {
                    tracing::warn!(
                        "ignored a subscription acknowledgement without a subscription id"
                    );
                    return;
                };
                let filter = params
                    .get("notifications")
                    .and_then(|f| serde_json::from_value(f.clone()).ok())
                    .unwrap_or_default();
                let ack = lock(&self.subscriptions)
                    .get_mut(&tag)
                    .and_then(|s| s.ack.take());
                match ack {
                    Some(ack) => {
                        let _ = ack.send(Ok(filter));
                    }
                    None => {
                        tracing::debug!(subscription = %tag, "ignored an acknowledgement for no pending subscription")
                    }
                }
                return;
            }
            m if m == <methods::ToolListChanged as NotificationMethod>::NAME => {
                self.cache.invalidate(Invalidate::Method(
                    <methods::ListTools as RequestMethod>::NAME,
                ));
                self.tools.clear();
                self.tool_headers.clear();
                self.tasks.forget_tools();
                ServerEvent::ToolsListChanged
            }
            m if m == <methods::PromptListChanged as NotificationMethod>::NAME => {
                self.cache.invalidate(Invalidate::Method(
                    <methods::ListPrompts as RequestMethod>::NAME,
                ));
                ServerEvent::PromptsListChanged
            }
            m if m == <methods::ResourceListChanged as NotificationMethod>::NAME => {
                self.cache.invalidate(Invalidate::Method(
                    <methods::ListResources as RequestMethod>::NAME,
                ));
                self.cache.invalidate(Invalidate::Method(
                    <methods::ListResourceTemplates as RequestMethod>::NAME,
                ));
                ServerEvent::ResourcesListChanged
            }
            m if m == <methods::ResourceUpdated as NotificationMethod>::NAME => {
                let Some(uri) = params.get("uri").and_then(Value::as_str) else {
                    tracing::warn!("ignored notifications/resources/updated without a uri");
                    return;
                };
                self.cache.invalidate(Invalidate::Read(uri.to_owned()));
                ServerEvent::ResourceUpdated {
                    uri: uri.to_owned(),
                }
            }
            m if m == <methods::ElicitationComplete as NotificationMethod>::NAME => {
                let Some(p) = parse::<ElicitationCompleteNotificationParams>(method, &params)
                else {
                    return;
                };
                ServerEvent::ElicitationComplete(p)
            }
            m if m == <methods::Cancelled as NotificationMethod>::NAME => {
                let id: Option<RequestId> = params
                    .get("requestId")
                    .and_then(|i| serde_json::from_value(i.clone()).ok());
                if let Some(id) = id {
                    self.server_requests.cancel(&id);
                    // 2026-07-28 stdio: the server tears a listen stream down.
                    lock(&self.subscriptions).remove(&id);
                }
                ServerEvent::Other {
                    method: method.to_owned(),
                    params: params.clone(),
                }
            }
            _ => ServerEvent::Other {
                method: method.to_owned(),
                params,
            },
        };
        self.deliver(tag.as_ref(), &notification);
        self.broadcast(notification);
    }

    /// Hands a change notification to the subscriptions that asked for it: by subscription id
    /// (2026-07-28), or by filter for the untagged notifications of a 2025-11-25 session.
    fn deliver(&self, tag: Option<&RequestId>, n: &ServerEvent) {
        let subs = lock(&self.subscriptions);
        let send = |slot: &SubSlot| {
            if (slot.raw.is_some() || n.matches(&slot.filter))
                && slot.tx.try_send(n.clone()).is_err()
            {
                if let Some(overflowed) = &slot.raw {
                    overflowed.store(true, Ordering::SeqCst);
                }
                tracing::warn!("a subscription reader fell behind; a notification was dropped");
            }
        };
        match tag {
            Some(tag) => match subs.get(tag) {
                Some(slot) if !slot.legacy => send(slot),
                _ => {
                    tracing::debug!(subscription = %tag, "ignored a notification for no active subscription")
                }
            },
            None => subs.values().filter(|s| s.legacy).for_each(send),
        }
    }

    /// The answerer of a server's request that the transport tied to no request of ours: the
    /// own answerer of the one request in flight that could have asked, when it has one.
    /// Requests waiting for their users' answers could not (their handlers upstream are
    /// blocked on what they asked), unless one is the only request in flight.
    fn untied_answerer(&self) -> Option<Arc<InputFn>> {
        let live = lock(&self.live);
        if live.count == 1 {
            return match live.own.as_slice() {
                [own] => Some(own.answer.clone()),
                _ => None,
            };
        }
        let awaiting = live.own.iter().filter(|o| o.is_awaiting()).count();
        if live.count.saturating_sub(awaiting) != 1 {
            return None;
        }
        let mut asking = live.own.iter().filter(|o| !o.is_awaiting());
        match (asking.next(), asking.next()) {
            (Some(own), None) => Some(own.answer.clone()),
            _ => None,
        }
    }

    /// Runs a server→client request (2025-11-25) in its own task and sends the answer.
    ///
    /// `tied`: `Some` when the transport tied it to one of our requests (its stream), with
    /// that request's own answerer of input requests if it has one; `None`: tied to none.
    pub(super) fn spawn_server_request(
        self: &Arc<Self>,
        req: IncomingRequest,
        tied: Option<Option<Arc<InputFn>>>,
    ) {
        if !self.adapter().is_some_and(|a| a.serves_server_requests()) {
            // 2026-07-28 servers must not send requests, and clients must not send responses.
            tracing::warn!(method = %req.method, "ignored a request from a 2026-07-28 server");
            return;
        }
        let own = match tied {
            Some(own) => own,
            None => self.untied_answerer(),
        };
        let inner = self.clone();
        let cancel = CancellationToken::new();
        let running = self.server_requests.admit(req.id.clone(), cancel.clone());
        tokio::spawn(async move {
            let outcome = match running {
                Ok(running) => {
                    let traced =
                        super::super::telemetry::Incoming::start(&inner.config.telemetry, &req);
                    let outcome = tokio::select! {
                        biased;
                        // Cancelled by the server: no answer is sent.
                        _ = cancel.cancelled() => return,
                        outcome = traced.scope(inner.answer_server_request(&req, own)) => outcome,
                    };
                    traced.finish(&outcome);
                    drop(running);
                    outcome
                }
                // An id still in use by a request of the server's running here, or too many.
                Err(e) => Err(jsonrpc::error(
                    error_code::INVALID_REQUEST,
                    format!("Invalid Request: {e}"),
                )),
            };
            let body = match outcome {
                Ok(v) => jsonrpc::encode_result(&req.id, &v).unwrap_or_else(|e| {
                    jsonrpc::encode_error(
                        Some(&req.id),
                        &jsonrpc::error(
                            error_code::INTERNAL_ERROR,
                            format!("cannot encode the answer: {e}"),
                        ),
                    )
                }),
                Err(e) => jsonrpc::encode_error(Some(&req.id), &e),
            };
            let mut msg = Outgoing::new(body);
            msg.id = Some(req.id.clone());
            msg.protocol_version = inner.negotiated().map(|n| n.protocol_version);
            if let Err(e) = inner.transport.send(msg).await {
                tracing::debug!(method = %req.method, "could not answer the server: {e}");
            }
        });
    }

    async fn answer_server_request(
        &self,
        req: &IncomingRequest,
        own: Option<Arc<InputFn>>,
    ) -> Result<Value, ErrorObject> {
        let method = req.method.as_str();
        // Tasks this client hosts (2025-11-25), and task-augmented requests that create them.
        if let Some(answer) = self
            .tasks
            .serve(
                &self.handlers,
                method,
                req.params.as_ref().map(|p| p.get()),
                own.as_ref(),
            )
            .await
        {
            return answer;
        }
        if method == <methods::Ping as RequestMethod>::NAME {
            return Ok(json!({}));
        }
        match HandlerCall::parse(method, req.params.as_ref().map(|p| p.get())) {
            Some(call) => match own {
                Some(own) => call?.run_own(own.as_ref()).await,
                None => call?.run(&self.handlers).await,
            },
            None => Err(jsonrpc::error(
                error_code::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            )),
        }
    }

    /// After the transport restarted the server: nothing the old process knew survives.
    pub(super) fn on_restart(self: &Arc<Self>) {
        self.restarts
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.cache.invalidate(Invalidate::All);
        self.tools.clear();
        self.tool_headers.clear();
        lock(&self.subscriptions).clear();
        if self.adapter().is_some_and(|a| a.handshake_after_restart()) {
            let inner = self.clone();
            tokio::spawn(async move {
                if let Err(e) = inner.initialize().await {
                    tracing::warn!("re-initializing the restarted server failed: {e}");
                }
            });
        }
    }
}

fn parse<T: serde::de::DeserializeOwned>(method: &str, params: &Value) -> Option<T> {
    match serde_json::from_value(params.clone()) {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::warn!(method, "ignored a notification with malformed params: {e}");
            None
        }
    }
}
