//! Subscriptions: `subscriptions/listen` (2026-07-28) and `resources/subscribe` plus the
//! session's notifications (2025-11-25).

use super::*;

impl Inner {
    /// `subscriptions/listen` (2026-07-28): waits for the acknowledgement.
    pub(crate) async fn listen_modern(
        self: &Arc<Self>,
        filter: SubscriptionFilter,
        opts: &RequestOptions,
    ) -> Result<Subscription, ClientError> {
        let speak = self.speak()?;
        let method = <methods::SubscriptionsListen as RequestMethod>::NAME;
        let id = self.new_id();
        let mut params = Map::new();
        params.insert("notifications".into(), to_value(&filter)?);
        let msg = self.prepare(&id, method, params, opts, &speak, false)?;
        let (tx, rx) = mpsc::channel(256);
        let (ack_tx, ack_rx) = oneshot::channel();
        lock(&self.subscriptions).insert(
            id.clone(),
            SubSlot {
                tx,
                filter,
                legacy: false,
                raw: None,
                ack: Some(ack_tx),
            },
        );
        let stream = match self.transport.request(msg).await {
            Ok(s) => s,
            Err(e) => {
                lock(&self.subscriptions).remove(&id);
                return Err(e.into());
            }
        };
        let stop = CancellationToken::new();
        let graceful = Arc::new(AtomicBool::new(false));
        tokio::spawn(pump(
            self.clone(),
            id.clone(),
            speak.era,
            stream,
            stop.clone(),
            graceful.clone(),
        ));
        let stopper = stop.clone();
        let guard = OnDrop(Some(Box::new(move || stopper.cancel())));
        let timeout = opts.timeout.unwrap_or(self.config.request_timeout);
        let acknowledged = match tokio::time::timeout(timeout, ack_rx).await {
            Ok(Ok(Ok(filter))) => filter,
            Ok(Ok(Err(e))) => return Err(e),
            Ok(Err(_)) => return Err(self.closed_error()),
            Err(_) => {
                return Err(ClientError::Timeout {
                    method: method.to_owned(),
                    after: timeout,
                })
            }
        };
        Ok(Subscription {
            id: Some(id),
            acknowledged,
            rx,
            graceful,
            _guard: guard,
        })
    }

    /// 2025-11-25: `resources/subscribe` for the listed URIs, then the session's notifications,
    /// filtered.
    pub(crate) async fn listen_legacy(
        self: &Arc<Self>,
        filter: SubscriptionFilter,
    ) -> Result<Subscription, ClientError> {
        let caps = self
            .negotiated()
            .map(|n| n.capabilities)
            .unwrap_or_default();
        let yes =
            |asked: Option<bool>, offered: bool| (asked == Some(true) && offered).then_some(true);
        let can_subscribe = caps.resources.as_ref().and_then(|r| r.subscribe) == Some(true);
        let acknowledged = SubscriptionFilter {
            tools_list_changed: yes(
                filter.tools_list_changed,
                caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true),
            ),
            prompts_list_changed: yes(
                filter.prompts_list_changed,
                caps.prompts.as_ref().and_then(|p| p.list_changed) == Some(true),
            ),
            resources_list_changed: yes(
                filter.resources_list_changed,
                caps.resources.as_ref().and_then(|r| r.list_changed) == Some(true),
            ),
            resource_subscriptions: filter
                .resource_subscriptions
                .clone()
                .filter(|u| can_subscribe && !u.is_empty()),
            ..SubscriptionFilter::default()
        };
        let uris = acknowledged
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        for uri in &uris {
            let mut params = Map::new();
            params.insert("uri".into(), json!(uri));
            self.request(
                <methods::Subscribe as RequestMethod>::NAME,
                params,
                &RequestOptions::default(),
            )
            .await?;
        }
        let key = self.new_id();
        let (tx, rx) = mpsc::channel(256);
        lock(&self.subscriptions).insert(
            key.clone(),
            SubSlot {
                tx,
                filter: acknowledged.clone(),
                legacy: true,
                raw: None,
                ack: None,
            },
        );
        let weak = Arc::downgrade(self);
        let guard = OnDrop(Some(Box::new(move || {
            let Some(inner) = weak.upgrade() else { return };
            lock(&inner.subscriptions).remove(&key);
            if uris.is_empty() || inner.closed_reason().is_some() {
                return;
            }
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(async move {
                    for uri in uris {
                        let mut params = Map::new();
                        params.insert("uri".into(), json!(uri));
                        let _ = inner
                            .request(
                                <methods::Unsubscribe as RequestMethod>::NAME,
                                params,
                                &RequestOptions::default(),
                            )
                            .await;
                    }
                });
            }
        })));
        Ok(Subscription {
            id: None,
            acknowledged,
            rx,
            graceful: Arc::new(AtomicBool::new(false)),
            _guard: guard,
        })
    }
}

/// Reads one listen request's stream until the server ends it, the connection ends, or the
/// subscription is dropped (then it is cancelled on the wire).
async fn pump(
    inner: Arc<Inner>,
    id: RequestId,
    era: Era,
    mut stream: RequestStream,
    stop: CancellationToken,
    graceful: Arc<AtomicBool>,
) {
    let method = <methods::SubscriptionsListen as RequestMethod>::NAME;
    let ended: Option<ClientError> = loop {
        tokio::select! {
            _ = stop.cancelled() => {
                inner.send_cancelled(id.clone(), era, "the client closed the subscription").await;
                break None;
            }
            _ = inner.shutdown.cancelled() => break Some(inner.closed_error()),
            message = stream.next() => match message {
                Some(Ok(Incoming::Response(r))) if r.id == id => match r.outcome {
                    Ok(_) => {
                        graceful.store(true, Ordering::SeqCst);
                        break Some(ClientError::Protocol("the server ended the subscription before acknowledging it".into()));
                    }
                    Err(error) => break Some(ClientError::Rpc { method: method.to_owned(), error }),
                },
                Some(Ok(other)) => inner.route(other),
                Some(Err(e)) => break Some(e.into()),
                None => break Some(inner.closed_error()),
            },
        }
    };
    let slot = lock(&inner.subscriptions).remove(&id);
    if let (Some(SubSlot { ack: Some(ack), .. }), Some(error)) = (slot, ended) {
        let _ = ack.send(Err(error));
    }
}

#[cfg(feature = "events")]
/// An `events/stream` request in flight: the notifications tagged with its id, and how it
/// ended. Dropping it cancels the request on the wire.
pub(crate) struct EventStream {
    pub rx: mpsc::Receiver<ServerEvent>,
    /// Raised when a notification was dropped because `rx` was full: the reader reopens the
    /// stream from its cursor.
    pub overflowed: Arc<AtomicBool>,
    /// `None`: the server answered the request (a graceful end); `Some`: why it ended otherwise.
    pub ended: oneshot::Receiver<Option<ClientError>>,
    pub _guard: OnDrop,
}

#[cfg(feature = "events")]
/// How many tagged notifications of one events stream wait for its reader before more are
/// dropped (the reader's cursor then replays them on the next stream).
pub(crate) const EVENT_STREAM_BUFFER: usize = 256;

#[cfg(feature = "events")]
impl Inner {
    /// Opens an `events/stream` request with `params` (both eras): its notifications carry
    /// the request id as their subscription id.
    pub(crate) async fn open_events_stream(
        self: &Arc<Self>,
        method: &str,
        params: Map<String, Value>,
    ) -> Result<EventStream, ClientError> {
        let speak = self.speak()?;
        let id = self.new_id();
        let opts = RequestOptions::default();
        let msg = self.prepare(&id, method, params, &opts, &speak, false)?;
        let (tx, rx) = mpsc::channel(EVENT_STREAM_BUFFER);
        let overflowed = Arc::new(AtomicBool::new(false));
        lock(&self.subscriptions).insert(
            id.clone(),
            SubSlot {
                tx,
                filter: SubscriptionFilter::default(),
                legacy: false,
                raw: Some(overflowed.clone()),
                ack: None,
            },
        );
        let stream = match self.transport.request(msg).await {
            Ok(s) => s,
            Err(e) => {
                lock(&self.subscriptions).remove(&id);
                return Err(e.into());
            }
        };
        let stop = CancellationToken::new();
        let (end_tx, end_rx) = oneshot::channel();
        tokio::spawn(pump_events(
            self.clone(),
            id,
            method.to_owned(),
            speak.era,
            stream,
            stop.clone(),
            end_tx,
        ));
        Ok(EventStream {
            rx,
            overflowed,
            ended: end_rx,
            _guard: OnDrop(Some(Box::new(move || stop.cancel()))),
        })
    }
}

#[cfg(feature = "events")]
/// Reads one `events/stream` request's stream until the server answers it, the connection
/// ends, or the reader drops it (then it is cancelled on the wire).
async fn pump_events(
    inner: Arc<Inner>,
    id: RequestId,
    method: String,
    era: Era,
    mut stream: RequestStream,
    stop: CancellationToken,
    ended: oneshot::Sender<Option<ClientError>>,
) {
    let why: Option<ClientError> = loop {
        tokio::select! {
            _ = stop.cancelled() => {
                inner.send_cancelled(id.clone(), era, "the client closed the events stream").await;
                break None;
            }
            _ = inner.shutdown.cancelled() => break Some(inner.closed_error()),
            message = stream.next() => match message {
                Some(Ok(Incoming::Response(r))) if r.id == id => match r.outcome {
                    Ok(_) => break None,
                    Err(error) => break Some(ClientError::Rpc { method: method.clone(), error }),
                },
                Some(Ok(other)) => inner.route(other),
                Some(Err(e)) => break Some(e.into()),
                None => break Some(inner.closed_error()),
            },
        }
    };
    lock(&inner.subscriptions).remove(&id);
    let _ = ended.send(why);
}
