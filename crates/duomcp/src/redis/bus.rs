//! [`RedisBus`]: the replicas' message bus ([`Bus`]) on Redis pub/sub.

use super::{ClusterSeeds, Redis, Target};
use crate::common::bus_counts;
use crate::server::bus::{Bus, BusMessage, BusReceiver, BusSent, Delivered};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot};
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
/// publisher's origin id and the [`BusMessage`]; a replica skips its own. Each replica also
/// has an inbox, `PREFIX bus:ORIGIN` (its origin id, 16 hex digits; [`Bus::inbox`]),
/// subscribed on the same connection: a message meant for one replica ([`Bus::publish_to`]:
/// the confirmations of an invalidation, to its publisher; a client's answer, to the replica
/// whose request it answers) goes there and costs the others nothing.
///
/// On a Redis Cluster (`redis+cluster://`) the channel is a *sharded* one (Redis 7:
/// `SPUBLISH`/`SSUBSCRIBE`): it lives on the shard owning its slot, so a message crosses
/// only that shard (plain `PUBLISH` on a cluster is copied to every node). The bus's own
/// cluster connection (RESP3, pushes) subscribes; after a failover of that shard the
/// subscription is made again on the promoted node (with the backoff below). The inboxes are
/// shard channels too, spread over the shards by their names' slots.
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
///   [`Bus::listening`] says `None` while the subscription is down and a new number each time
///   it is made again, so that a cache relying on invalidations stops trusting itself.
/// - **Waiting for a message to leave** ([`Bus::publish_sent`]): the caller waits until its
///   `PUBLISH` is answered (Redis has then queued it to every subscription), at most the
///   operation deadline ([`RedisConfig::timeout`](super::RedisConfig)), and learns how many
///   other subscriptions got it (`PUBLISH`'s answer, less this bus's own); the message goes
///   through the same queue as the others.
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
    out: mpsc::Sender<Outbound>,
    incoming: broadcast::Sender<Delivered>,
    /// The key prefix (for the inboxes' channels).
    prefix: Arc<str>,
    /// 0 while the subscription is down; else the number of the subscription (1, 2, …).
    subscribed: Arc<AtomicU64>,
    /// How long [`Bus::publish_sent`] waits.
    deadline: Duration,
    stop: CancellationToken,
}

/// An encoded message waiting to be published, and who waits for it to leave.
struct Outbound {
    bytes: Vec<u8>,
    sent: Option<oneshot::Sender<Option<usize>>>,
    /// A replica's inbox channel; `None`: the channel of every replica.
    to: Option<String>,
}

/// The inbox channel of the replica whose origin is `origin`.
fn inbox_channel(prefix: &str, origin: u64) -> String {
    format!("{prefix}bus:{origin:016x}")
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
        let channels = [channel.clone(), inbox_channel(redis.prefix(), origin)];
        let (out, rx) = mpsc::channel(bounds.queue);
        let incoming = broadcast::channel(bounds.queue).0;
        let stop = CancellationToken::new();
        let subscribed = Arc::new(AtomicU64::new(0));
        tokio::spawn(publisher(redis.clone(), channel.clone(), rx));
        let arrivals = Arrivals {
            own: origin,
            incoming: incoming.clone(),
            max_bytes: bounds.max_message_bytes,
        };
        match &redis.target {
            Target::Single(_) => {
                tokio::spawn(subscriber(
                    redis.clone(),
                    channels,
                    arrivals,
                    subscribed.clone(),
                    stop.clone(),
                ));
            }
            Target::Cluster(seeds) => {
                tokio::spawn(cluster_subscriber(
                    redis.clone(),
                    seeds.clone(),
                    channels,
                    arrivals,
                    subscribed.clone(),
                    stop.clone(),
                ));
            }
        }
        RedisBus {
            origin,
            bounds,
            out,
            incoming,
            prefix: redis.prefix.clone(),
            subscribed,
            deadline: redis.timeout,
            stop,
        }
    }

    /// Encodes and queues `message`; `false` (with a warning) when it is dropped.
    fn queue(
        &self,
        message: &BusMessage,
        sent: Option<oneshot::Sender<Option<usize>>>,
        to: Option<String>,
    ) -> bool {
        let bytes = match serde_json::to_vec(&Outgoing {
            o: self.origin,
            m: message,
        }) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!("bus message dropped: it does not encode ({e})");
                return false;
            }
        };
        if bytes.len() > self.bounds.max_message_bytes {
            tracing::warn!(
                "bus message dropped: {} bytes, more than the {} a message may have",
                bytes.len(),
                self.bounds.max_message_bytes
            );
            return false;
        }
        if self.out.try_send(Outbound { bytes, sent, to }).is_err() {
            tracing::warn!(
                "bus message dropped: {} messages wait to be published already (Redis slow or away)",
                self.bounds.queue
            );
            return false;
        }
        true
    }
}

impl Drop for RedisBus {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Bus for RedisBus {
    fn publish(&self, message: BusMessage) {
        self.queue(&message, None, None);
    }

    fn inbox(&self) -> Option<u64> {
        Some(self.origin)
    }

    fn publish_to(&self, to: u64, message: BusMessage) {
        self.queue(&message, None, Some(inbox_channel(&self.prefix, to)));
    }

    fn subscribe(&self) -> BusReceiver {
        BusReceiver::new(self.incoming.subscribe(), self.origin)
    }

    fn publish_sent_to(&self, to: u64, message: BusMessage) -> BusSent<'_> {
        self.sent(&message, Some(inbox_channel(&self.prefix, to)))
    }

    fn publish_sent(&self, message: BusMessage) -> BusSent<'_> {
        self.sent(&message, None)
    }

    fn listening(&self) -> Option<u64> {
        match self.subscribed.load(Ordering::Acquire) {
            0 => None,
            n => Some(n),
        }
    }
}

impl RedisBus {
    /// Queues `message` (to inbox channel `to`, or to every replica) and resolves once it is
    /// published, to how many other replicas it reached.
    fn sent(&self, message: &BusMessage, to: Option<String>) -> BusSent<'_> {
        let (tx, rx) = oneshot::channel();
        let queued = self.queue(message, Some(tx), to);
        Box::pin(async move {
            if !queued {
                return None;
            }
            match tokio::time::timeout(self.deadline, rx).await {
                Ok(Ok(reached)) => reached,
                // The publisher is gone (the bus is dropped), or Redis is too slow.
                Ok(Err(_)) | Err(_) => None,
            }
        })
    }
}

/// Publishes queued messages, one `PUBLISH` (`SPUBLISH` on a cluster) each, until the bus is
/// dropped. A failed
/// `PUBLISH` is tried again twice, 100 ms apart (the first command after Redis came back
/// fails while the connection is remade); then the message is dropped.
async fn publisher(redis: Redis, channel: String, mut rx: mpsc::Receiver<Outbound>) {
    let publish = if redis.is_cluster() {
        "SPUBLISH"
    } else {
        "PUBLISH"
    };
    while let Some(Outbound {
        bytes,
        sent: waiter,
        to,
    }) = rx.recv().await
    {
        let mut tries = 0;
        let sent = loop {
            let channel = to.as_deref().unwrap_or(channel.as_str());
            let payload = bytes.as_slice();
            let sent = redis
                .run("bus", |mut c| async move {
                    ::redis::cmd(publish)
                        .arg(channel)
                        .arg(payload)
                        .query_async::<i64>(&mut c)
                        .await
                })
                .await;
            match sent {
                // Every subscription to the channel got it: this bus's own among them on the
                // replicas' channel, not on another replica's inbox. An inbox is one
                // replica's: more receivers there are pattern subscriptions (an operator's
                // `redis-cli psubscribe` watching the bus), which confirm nothing, and
                // counting them would make an invalidation wait out its lease.
                Ok(n) => {
                    bus_counts::PUBLISHED.fetch_add(1, Ordering::Relaxed);
                    let n = usize::try_from(n).unwrap_or(0);
                    break Some(if to.is_some() {
                        n.min(1)
                    } else {
                        n.saturating_sub(1)
                    });
                }
                Err(e) if tries >= 2 => {
                    tracing::warn!("bus message dropped: {e}");
                    break None;
                }
                Err(_) => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        };
        if let Some(waiter) = waiter {
            // The waiter may have given up already.
            let _ = waiter.send(sent);
        }
    }
}

/// Holds the subscription, reconnecting with a backoff whenever it breaks, until `stop`;
/// `listening` is the number of the subscription while it holds (from 1), 0 while not.
async fn subscriber(
    redis: Redis,
    channels: [String; 2],
    arrivals: Arrivals,
    listening: Arc<AtomicU64>,
    stop: CancellationToken,
) {
    let mut backoff = Duration::from_millis(100);
    let mut made = 0u64;
    loop {
        let subscribed = tokio::select! {
            _ = stop.cancelled() => return,
            s = subscribe(&redis, &channels) => s,
        };
        match subscribed {
            Ok(pubsub) => {
                backoff = Duration::from_millis(100);
                made += 1;
                listening.store(made, Ordering::Release);
                let mut messages = pubsub.into_on_message();
                loop {
                    let msg = tokio::select! {
                        _ = stop.cancelled() => return,
                        m = messages.next() => m,
                    };
                    let Some(msg) = msg else { break };
                    arrivals.deliver(msg.get_payload_bytes());
                }
                listening.store(0, Ordering::Release);
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

async fn subscribe(redis: &Redis, channels: &[String]) -> Result<::redis::aio::PubSub, String> {
    let Target::Single(client) = &redis.target else {
        return Err("not one Redis server".into());
    };
    let attempt = async {
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.subscribe(channels).await?;
        Ok::<_, ::redis::RedisError>(pubsub)
    };
    match tokio::time::timeout(redis.connect_timeout + redis.timeout, attempt).await {
        Ok(Ok(p)) => Ok(p),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("no answer in time".into()),
    }
}

/// The cluster's subscription: `SSUBSCRIBE` on a cluster connection of the bus's own, whose
/// pushes redis-rs hands to a callback here, on its own task: a message is decoded and put on
/// the receivers' bounded queue there (never waiting); a lost node connection marks the
/// subscription down (`listening` 0) and wakes this task, which subscribes again (the
/// subscription moves to whichever node owns the channel's slot now) with a backoff doubling
/// from 100 ms up to `max_reconnect_delay`, until `stop`.
async fn cluster_subscriber(
    redis: Redis,
    seeds: Arc<ClusterSeeds>,
    channels: [String; 2],
    arrivals: Arrivals,
    listening: Arc<AtomicU64>,
    stop: CancellationToken,
) {
    let lost = Arc::new(tokio::sync::Notify::new());
    let on_push = {
        let (lost, listening) = (lost.clone(), listening.clone());
        move |push: ::redis::PushInfo| -> Result<(), std::convert::Infallible> {
            match push.kind {
                ::redis::PushKind::SMessage => match push.data.as_slice() {
                    [_, ::redis::Value::BulkString(payload)] => {
                        arrivals.deliver(payload);
                    }
                    _ => tracing::warn!("bus message dropped on arrival: not a shard message"),
                },
                ::redis::PushKind::Disconnection | ::redis::PushKind::SUnsubscribe => {
                    listening.store(0, Ordering::Release);
                    lost.notify_one();
                }
                _ => {}
            }
            Ok(())
        }
    };
    let client = match seeds
        .builder()
        .use_protocol(::redis::ProtocolVersion::RESP3)
        .push_sender(on_push)
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!("the bus cannot reach the Redis Cluster ({e}); it stays down");
            return;
        }
    };
    let mut conn = client.get_pending_async_connection_with_config(seeds.timeouts());
    let mut backoff = Duration::from_millis(100);
    let mut made = 0u64;
    loop {
        // The two channels may be on two shards: one `SSUBSCRIBE` each.
        let both = async {
            for channel in &channels {
                conn.ssubscribe(channel.as_str()).await?;
            }
            Ok::<_, ::redis::RedisError>(())
        };
        let subscribed = tokio::select! {
            _ = stop.cancelled() => return,
            s = tokio::time::timeout(redis.connect_timeout + redis.timeout, both) => s,
        };
        match subscribed {
            Ok(Ok(())) => {
                backoff = Duration::from_millis(100);
                made += 1;
                listening.store(made, Ordering::Release);
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = lost.notified() => {}
                }
                listening.store(0, Ordering::Release);
                tracing::warn!("the bus lost a Redis Cluster connection; subscribing again");
            }
            Ok(Err(e)) => tracing::warn!("the bus cannot subscribe ({e}); retrying in {backoff:?}"),
            Err(_) => tracing::warn!(
                "the bus cannot subscribe (no answer in time); retrying in {backoff:?}"
            ),
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(redis.max_reconnect_delay);
    }
}

/// Where the subscription's messages go: this replica's receivers.
struct Arrivals {
    /// This bus's origin: its own messages are not counted as received.
    own: u64,
    incoming: broadcast::Sender<Delivered>,
    max_bytes: usize,
}

impl Arrivals {
    /// Decodes a message and hands it to this replica's receivers.
    fn deliver(&self, payload: &[u8]) {
        let max_bytes = self.max_bytes;
        if payload.len() > max_bytes {
            tracing::warn!(
                "bus message dropped on arrival: {} bytes, more than {max_bytes}",
                payload.len()
            );
            return;
        }
        match serde_json::from_slice::<Incoming>(payload) {
            Ok(m) => {
                if m.o != self.own {
                    bus_counts::RECEIVED.fetch_add(1, Ordering::Relaxed);
                }
                // No receiver: nothing on this replica listens (yet).
                let _ = self.incoming.send(Delivered {
                    origin: m.o,
                    message: Arc::new(m.m),
                });
            }
            Err(e) => tracing::warn!("bus message dropped on arrival: not a bus message ({e})"),
        }
    }
}
