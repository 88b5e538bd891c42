//! [`RedisBus`]: the replicas' message bus ([`Bus`]) on Redis pub/sub.

use super::Redis;
use crate::server::bus::{Bus, BusMessage, BusReceiver, Delivered};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

/// The bounds of a [`RedisBus`].
///
/// ```
/// let b = duomcp::redis::BusBounds::default();
/// assert_eq!((b.queue, b.max_message_bytes), (1024, 1 << 20));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BusBounds {
    /// Messages waiting to be published, and messages each receiver holds (default 1,024).
    pub queue: usize,
    /// Largest message, encoded, sent or received (default 1 MiB: an elicitation or sampling
    /// answer fits).
    pub max_message_bytes: usize,
}

impl Default for BusBounds {
    fn default() -> Self {
        BusBounds {
            queue: 1024,
            max_message_bytes: 1 << 20,
        }
    }
}

/// One replica's place on the bus in Redis. Its tasks stop when it is dropped.
///
/// Every replica publishes on one channel (`PREFIX bus`) and subscribes to it on a connection
/// of its own (a subscribed connection can do nothing else). A message is JSON: the
/// publisher's origin id and the [`BusMessage`]; a replica skips its own.
///
/// Bounds, and what happens at each:
/// - **Publishing** never waits: messages go into a queue of [`BusBounds::queue`] that one task
///   empties with `PUBLISH` (one command per message, on the shared multiplexed connection,
///   under the operation deadline, tried three times). A full queue, a message over
///   [`BusBounds::max_message_bytes`], or a `PUBLISH` that keeps failing (Redis away) drops
///   that message with a warning naming why.
/// - **Receiving**: each receiver holds [`BusBounds::queue`] messages; one that falls further
///   behind loses the oldest (a warning with the count). Incoming messages over the size bound
///   are dropped too.
/// - **Redis going away**: the subscription ends; the task reconnects by itself with a backoff
///   doubling from 100 ms up to [`RedisConfig::max_reconnect_delay`](super::RedisConfig), and
///   subscribes again. Pub/sub keeps no history: what was published meanwhile is not received
///   (the state itself — sessions, events, tasks — is in Redis and is read there).
///
/// ```no_run
/// use duomcp::redis::{Redis, RedisBus};
/// use duomcp::server::Server;
/// use std::sync::Arc;
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let redis = Redis::connect("redis://127.0.0.1:6379/").unwrap();
/// let server = Server::builder().build();
/// server.attach_bus(Arc::new(RedisBus::new(&redis)));
/// # });
/// ```
pub struct RedisBus {
    origin: u64,
    bounds: BusBounds,
    out: mpsc::Sender<Vec<u8>>,
    incoming: broadcast::Sender<Delivered>,
    stop: CancellationToken,
}

#[derive(Serialize)]
struct Outgoing<'a> {
    o: u64,
    m: &'a BusMessage,
}

#[derive(Deserialize)]
struct Incoming {
    o: u64,
    m: BusMessage,
}

impl RedisBus {
    /// This replica's bus on `redis`, with the default [`BusBounds`]. Must be called within a
    /// tokio runtime; it connects in the background (and reconnects by itself).
    pub fn new(redis: &Redis) -> Self {
        Self::with_bounds(redis, BusBounds::default())
    }

    /// This replica's bus with `bounds`.
    pub fn with_bounds(redis: &Redis, bounds: BusBounds) -> Self {
        let bounds = BusBounds {
            queue: bounds.queue.max(1),
            max_message_bytes: bounds.max_message_bytes.max(64),
        };
        let origin = crate::server::bus::origin_id();
        let channel = format!("{}bus", redis.prefix());
        let (out, rx) = mpsc::channel(bounds.queue);
        let incoming = broadcast::channel(bounds.queue).0;
        let stop = CancellationToken::new();
        tokio::spawn(publisher(redis.clone(), channel.clone(), rx));
        tokio::spawn(subscriber(
            redis.clone(),
            channel,
            incoming.clone(),
            bounds.max_message_bytes,
            stop.clone(),
        ));
        RedisBus {
            origin,
            bounds,
            out,
            incoming,
            stop,
        }
    }
}

impl Drop for RedisBus {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Bus for RedisBus {
    fn publish(&self, message: BusMessage) {
        let bytes = match serde_json::to_vec(&Outgoing {
            o: self.origin,
            m: &message,
        }) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!("bus message dropped: it does not encode ({e})");
                return;
            }
        };
        if bytes.len() > self.bounds.max_message_bytes {
            tracing::warn!(
                "bus message dropped: {} bytes, more than the {} a message may have",
                bytes.len(),
                self.bounds.max_message_bytes
            );
            return;
        }
        if self.out.try_send(bytes).is_err() {
            tracing::warn!(
                "bus message dropped: {} messages wait to be published already (Redis slow or away)",
                self.bounds.queue
            );
        }
    }

    fn subscribe(&self) -> BusReceiver {
        BusReceiver::new(self.incoming.subscribe(), self.origin)
    }
}

/// Publishes queued messages, one `PUBLISH` each, until the bus is dropped. A failed
/// `PUBLISH` is tried again twice, 100 ms apart (the first command after Redis came back
/// fails while the connection is remade); then the message is dropped.
async fn publisher(redis: Redis, channel: String, mut rx: mpsc::Receiver<Vec<u8>>) {
    while let Some(bytes) = rx.recv().await {
        let mut tries = 0;
        loop {
            let (channel, payload) = (channel.as_str(), bytes.as_slice());
            let sent = redis
                .run("bus", |mut c| async move {
                    ::redis::cmd("PUBLISH")
                        .arg(channel)
                        .arg(payload)
                        .query_async::<i64>(&mut c)
                        .await
                })
                .await;
            match sent {
                Ok(_) => break,
                Err(e) if tries >= 2 => {
                    tracing::warn!("bus message dropped: {e}");
                    break;
                }
                Err(_) => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
}

/// Holds the subscription, reconnecting with a backoff whenever it breaks, until `stop`.
async fn subscriber(
    redis: Redis,
    channel: String,
    incoming: broadcast::Sender<Delivered>,
    max_bytes: usize,
    stop: CancellationToken,
) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let subscribed = tokio::select! {
            _ = stop.cancelled() => return,
            s = subscribe(&redis, &channel) => s,
        };
        match subscribed {
            Ok(pubsub) => {
                backoff = Duration::from_millis(100);
                let mut messages = pubsub.into_on_message();
                loop {
                    let msg = tokio::select! {
                        _ = stop.cancelled() => return,
                        m = messages.next() => m,
                    };
                    let Some(msg) = msg else { break };
                    deliver(msg.get_payload_bytes(), &incoming, max_bytes);
                }
                tracing::warn!("the bus lost its Redis subscription; reconnecting");
            }
            Err(e) => tracing::warn!("the bus cannot subscribe ({e}); retrying in {backoff:?}"),
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(redis.max_reconnect_delay);
    }
}

async fn subscribe(redis: &Redis, channel: &str) -> Result<::redis::aio::PubSub, String> {
    let attempt = async {
        let mut pubsub = redis.client.get_async_pubsub().await?;
        pubsub.subscribe(channel).await?;
        Ok::<_, ::redis::RedisError>(pubsub)
    };
    match tokio::time::timeout(redis.connect_timeout + redis.timeout, attempt).await {
        Ok(Ok(p)) => Ok(p),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("no answer in time".into()),
    }
}

fn deliver(payload: &[u8], incoming: &broadcast::Sender<Delivered>, max_bytes: usize) {
    if payload.len() > max_bytes {
        tracing::warn!(
            "bus message dropped on arrival: {} bytes, more than {max_bytes}",
            payload.len()
        );
        return;
    }
    match serde_json::from_slice::<Incoming>(payload) {
        Ok(m) => {
            // No receiver: nothing on this replica listens (yet).
            let _ = incoming.send(Delivered {
                origin: m.o,
                message: Arc::new(m.m),
            });
        }
        Err(e) => tracing::warn!("bus message dropped on arrival: not a bus message ({e})"),
    }
}
