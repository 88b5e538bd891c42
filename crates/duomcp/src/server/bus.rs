//! The message bus between replicas of one server: what one replica publishes, every other
//! replica receives.
//!
//! A server runs alone by default and needs no bus: its events reach its own sessions and
//! listen streams in process. Several replicas behind a load balancer share one [`Bus`]
//! ([`Server::attach_bus`](super::Server::attach_bus)); then
//! - a change on one replica (a `list_changed`, `resources/updated`, a task's status) reaches
//!   the 2026-07-28 `subscriptions/listen` streams and the 2025-11-25 sessions of every replica;
//! - a named registry change ([`ServerBuilder::change`](super::ServerBuilder::change),
//!   [`Server::apply_change`](super::Server::apply_change)) is applied by every replica with its
//!   own code;
//! - a 2025-11-25 client's answer to a server→client request, or its `notifications/cancelled`,
//!   that the balancer sent to another replica than the one waiting for it (or running the
//!   request) reaches that one ([`BusMessage::Reply`], [`BusMessage::Cancel`]; published only
//!   when the replica that got it has no such request itself);
//! - a 2025-11-25 session's own notification (a task's progress or log) made where the session
//!   has no `GET` stream reaches the replica holding it ([`BusMessage::Notify`]);
//! - a 2025-11-25 session whose shared record changed or that ended on one replica is no
//!   longer taken as alive and unchanged by the others without asking the session store
//!   ([`BusMessage::Invalidate`]; see `HttpConfig::session_touch_interval`).
//!
//! Implementations: [`LocalBus`] (in process: servers in one process, tests) and, with the
//! feature `redis`, `duomcp::redis::RedisBus` (Redis pub/sub). Every implementation is
//! bounded: publishing never waits and never queues without bound; a message that cannot be
//! delivered (too large, a full queue, a receiver too far behind) is dropped with a log line.
//! A replica never receives its own messages.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use duomcp::server::bus::{Bus, BusMessage, LocalBus};
//! let hub = LocalBus::new(16);
//! let (a, b) = (hub.member(), hub.member());
//! let mut on_b = b.subscribe();
//! let mut on_a = a.subscribe();
//! a.publish(BusMessage::change("greeting", serde_json::json!("hi")));
//! let got = on_b.recv().await.unwrap();
//! assert!(matches!(&*got, BusMessage::Change { name, .. } if name == "greeting"));
//! assert!(on_a.try_recv().is_none()); // not looped back to its origin
//! # });
//! ```

use super::tasks::TaskRecord;
use super::ServerEvent;
use crate::correlation::Outcome;
use crate::jsonrpc::{ErrorObject, RequestId};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::broadcast;

/// One message between replicas.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum BusMessage {
    /// Something changed on the server (fanned out to sessions and listen streams).
    Event(BusEvent),
    /// A named registry change, applied by every replica with its own code.
    Change {
        /// The change's name (as registered with `ServerBuilder::change`).
        name: String,
        /// Its argument.
        arg: Value,
    },
    /// A 2025-11-25 client's answer to a server→client request (`elicitation/create`,
    /// `sampling/createMessage`, `roots/list`) that reached a replica where nobody waits for
    /// it: the replica whose handler waits takes it.
    Reply {
        /// The session's shared scope (a digest of its id, never the id itself).
        session: String,
        /// The server→client request's id (each replica allocates its own ids).
        id: RequestId,
        /// The answer's `result`, as JSON text, or its `error`.
        #[serde(flatten)]
        answer: BusAnswer,
    },
    /// A 2025-11-25 `notifications/cancelled` that reached a replica where the request does
    /// not run: the replica running it cancels it.
    Cancel {
        /// The session's shared scope.
        session: String,
        /// The client's request id.
        id: RequestId,
    },
    /// A notification of a 2025-11-25 session itself (a task's progress or log, on no request's
    /// stream) made on a replica where no `GET` stream of the session is open: a replica
    /// holding one sends it there.
    Notify {
        /// The session's shared scope.
        session: String,
        /// The encoded JSON-RPC notification.
        message: String,
        /// Sent to the one replica recorded as holding the session's `GET` stream (its
        /// inbox); a replica that no longer holds one publishes it again to every replica,
        /// untargeted.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        targeted: bool,
    },
    /// A 2025-11-25 session's shared record changed (`logging/setLevel`, a subscription…) or
    /// the session ended (`DELETE`) on the publishing replica: every other replica forgets
    /// when it last found the session alive and unchanged, so its next request for it asks the
    /// session store again (and sees the new record, or `404`). Published, and sent, before the
    /// publishing replica answers its client ([`Bus::publish_sent`]).
    Invalidate {
        /// The session's shared scope.
        session: String,
        /// When set, each replica that heard this answers [`BusMessage::InvalidateAck`] with
        /// it once its copy has forgotten, and the publisher waits for every answer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ack: Option<u64>,
        /// The publisher's inbox ([`Bus::inbox`]), when its bus has one: the
        /// [`BusMessage::InvalidateAck`]s go there ([`Bus::publish_to`]) instead of to every
        /// replica.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply_to: Option<u64>,
    },
    /// An occurrence of an event type (the Events extension) was stored where the replicas
    /// share them: each reads the store for what is new.
    Occurrences {
        /// The event type.
        name: String,
    },
    /// A replica heard [`BusMessage::Invalidate`] `ack` and acted on it.
    InvalidateAck {
        /// The invalidation's `ack`.
        ack: u64,
        /// The answering replica's router (each counts once).
        from: u64,
    },
}

/// The answer carried by [`BusMessage::Reply`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BusAnswer {
    /// The JSON text of the response's `result`.
    Result(String),
    /// The response's `error`.
    Error(ErrorObject),
}

impl BusAnswer {
    /// The answer as the correlation engine takes it (`None`: the result text is not JSON).
    pub fn outcome(&self) -> Option<Outcome> {
        match self {
            BusAnswer::Result(text) => RawValue::from_string(text.clone()).ok().map(Ok),
            BusAnswer::Error(e) => Some(Err(e.clone())),
        }
    }
}

impl From<&Outcome> for BusAnswer {
    fn from(o: &Outcome) -> Self {
        match o {
            Ok(raw) => BusAnswer::Result(raw.get().to_owned()),
            Err(e) => BusAnswer::Error(e.clone()),
        }
    }
}

impl BusMessage {
    /// A named registry change.
    pub fn change(name: impl Into<String>, arg: Value) -> Self {
        BusMessage::Change {
            name: name.into(),
            arg,
        }
    }
}

/// A server event as it travels between replicas.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum BusEvent {
    /// The tool list changed.
    ToolsChanged,
    /// The prompt list changed.
    PromptsChanged,
    /// The resource list changed.
    ResourcesChanged,
    /// A resource changed.
    ResourceUpdated {
        /// Its URI.
        uri: String,
    },
    /// A task changed status or inputs.
    TaskChanged {
        /// The record after the change.
        task: Box<TaskRecord>,
    },
}

impl From<&ServerEvent> for BusEvent {
    fn from(e: &ServerEvent) -> Self {
        match e {
            ServerEvent::ToolsChanged => BusEvent::ToolsChanged,
            ServerEvent::PromptsChanged => BusEvent::PromptsChanged,
            ServerEvent::ResourcesChanged => BusEvent::ResourcesChanged,
            ServerEvent::ResourceUpdated(uri) => BusEvent::ResourceUpdated { uri: uri.clone() },
            ServerEvent::TaskChanged(t) => BusEvent::TaskChanged {
                task: Box::new((**t).clone()),
            },
        }
    }
}

impl From<BusEvent> for ServerEvent {
    fn from(e: BusEvent) -> Self {
        match e {
            BusEvent::ToolsChanged => ServerEvent::ToolsChanged,
            BusEvent::PromptsChanged => ServerEvent::PromptsChanged,
            BusEvent::ResourcesChanged => ServerEvent::ResourcesChanged,
            BusEvent::ResourceUpdated { uri } => ServerEvent::ResourceUpdated(uri),
            BusEvent::TaskChanged { task } => ServerEvent::TaskChanged(Arc::new(*task)),
        }
    }
}

/// What [`Bus::publish_sent`] returns: resolves once the message has left this replica, to
/// the number of other replicas it reached (`None`: it was dropped, or the bus cannot tell).
pub type BusSent<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Option<usize>> + Send + 'a>>;

/// What carries messages between the replicas of one server.
///
/// `publish` never waits: an implementation that must do I/O queues the message in a bounded
/// queue and drops it (with a log line) when that queue is full.
///
/// Two provided methods serve caches that rely on hearing invalidations from the other
/// replicas (the 2025-11-25 session liveness of the HTTP transport): their defaults are the
/// safe ones for an implementation that does not override them (`listening` says "cannot
/// tell", so no replica caches, and `publish_sent` waits for nothing and says that no other
/// replica has anything to confirm).
pub trait Bus: Send + Sync + 'static {
    /// Sends `message` to every other replica (not to this one).
    fn publish(&self, message: BusMessage);
    /// The messages other replicas publish from now on.
    fn subscribe(&self) -> BusReceiver;

    /// As [`publish`](Self::publish), and resolves once the message has left this replica
    /// (for Redis: `PUBLISH` answered, so the other replicas' subscriptions have it), within
    /// a bounded time, to how many other replicas it reached; `None` when it was dropped or
    /// the bus cannot tell. The default publishes and resolves at once to `Some(0)`.
    fn publish_sent(&self, message: BusMessage) -> BusSent<'_> {
        self.publish(message);
        Box::pin(std::future::ready(Some(0)))
    }

    /// This replica's address on the bus for [`publish_to`](Self::publish_to), when the bus
    /// can send a message to one replica only; `None` (the default): every message goes to
    /// every replica.
    fn inbox(&self) -> Option<u64> {
        None
    }

    /// Sends `message` to the replica whose [`inbox`](Self::inbox) is `to` only, not to the
    /// others. The default sends it to every other replica, as [`publish`](Self::publish)
    /// (the others must then ignore what is not for them).
    fn publish_to(&self, to: u64, message: BusMessage) {
        let _ = to;
        self.publish(message);
    }

    /// As [`publish_to`](Self::publish_to), and resolves as
    /// [`publish_sent`](Self::publish_sent) does, to whether replica `to` got it (`Some(1)`)
    /// or not (`Some(0)`: nobody listens on that inbox). The default is
    /// [`publish_sent`](Self::publish_sent) (to every other replica).
    fn publish_sent_to(&self, to: u64, message: BusMessage) -> BusSent<'_> {
        let _ = to;
        self.publish_sent(message)
    }

    /// Whether this replica hears what the others publish now: `Some(n)` while it does, where
    /// `n` changes each time it starts hearing again (what was published in between was not
    /// heard); `None` while it does not, or cannot tell (the default).
    fn listening(&self) -> Option<u64> {
        None
    }
}

/// Messages from other replicas, oldest first (bounded: see [`BusReceiver::recv`]).
pub struct BusReceiver {
    rx: broadcast::Receiver<Delivered>,
    /// This replica's origin id: its own messages are skipped.
    own: u64,
    /// Messages lost by falling behind, so far.
    missed: u64,
}

/// A message with the replica it came from.
#[derive(Debug, Clone)]
pub struct Delivered {
    /// The publishing replica's origin id.
    pub origin: u64,
    /// The message.
    pub message: Arc<BusMessage>,
}

impl BusReceiver {
    /// A receiver over `rx` skipping the messages of origin `own`.
    pub fn new(rx: broadcast::Receiver<Delivered>, own: u64) -> Self {
        BusReceiver { rx, own, missed: 0 }
    }

    /// How many messages this receiver lost so far by falling behind (see
    /// [`recv`](Self::recv)).
    pub fn missed(&self) -> u64 {
        self.missed
    }

    /// The next message from another replica; `None` once the bus is gone. A receiver that
    /// fell behind by more than its queue holds loses the oldest messages (logged, with their
    /// count) and goes on with the next.
    pub async fn recv(&mut self) -> Option<Arc<BusMessage>> {
        loop {
            match self.rx.recv().await {
                Ok(d) if d.origin == self.own => continue,
                Ok(d) => return Some(d.message),
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    self.missed = self.missed.saturating_add(n);
                    tracing::warn!("a bus receiver fell {n} messages behind; they were dropped");
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// A message already received, without waiting.
    pub fn try_recv(&mut self) -> Option<Arc<BusMessage>> {
        loop {
            match self.rx.try_recv() {
                Ok(d) if d.origin == self.own => continue,
                Ok(d) => return Some(d.message),
                Err(broadcast::error::TryRecvError::Lagged(n)) => {
                    self.missed = self.missed.saturating_add(n);
                    tracing::warn!("a bus receiver fell {n} messages behind; they were dropped");
                }
                Err(_) => return None,
            }
        }
    }
}

/// A fresh origin id for a replica (random, so that replicas in different processes differ).
pub fn origin_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness: the process id and a counter still tell this process's buses apart.
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        return (u64::from(std::process::id()) << 32) | n;
    }
    u64::from_le_bytes(bytes)
}

/// The in-process bus: a hub whose [`member`](LocalBus::member)s (one per server) hear each
/// other. Each receiver holds at most `capacity` messages.
#[derive(Clone)]
pub struct LocalBus {
    tx: broadcast::Sender<Delivered>,
    /// Members alive.
    members: Arc<AtomicUsize>,
}

impl LocalBus {
    /// A hub whose receivers each hold up to `capacity` messages (at least 1).
    pub fn new(capacity: usize) -> Self {
        LocalBus {
            tx: broadcast::channel(capacity.max(1)).0,
            members: Arc::default(),
        }
    }

    /// A member of the hub, for one server.
    pub fn member(&self) -> LocalBusMember {
        self.members.fetch_add(1, Ordering::AcqRel);
        LocalBusMember {
            tx: self.tx.clone(),
            origin: origin_id(),
            members: self.members.clone(),
        }
    }
}

/// One server's place on a [`LocalBus`].
pub struct LocalBusMember {
    tx: broadcast::Sender<Delivered>,
    origin: u64,
    members: Arc<AtomicUsize>,
}

impl Drop for LocalBusMember {
    fn drop(&mut self) {
        self.members.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Bus for LocalBusMember {
    fn publish(&self, message: BusMessage) {
        // No receiver: nobody else is there yet.
        let _ = self.tx.send(Delivered {
            origin: self.origin,
            message: Arc::new(message),
        });
    }

    fn subscribe(&self) -> BusReceiver {
        BusReceiver::new(self.tx.subscribe(), self.origin)
    }

    /// Every other member has it in its queues at once.
    fn publish_sent(&self, message: BusMessage) -> BusSent<'_> {
        self.publish(message);
        let others = self.members.load(Ordering::Acquire).saturating_sub(1);
        Box::pin(std::future::ready(Some(others)))
    }

    /// In process, a published message is in every receiver's queue at once, and a member
    /// always hears the others (a receiver that falls behind says so: [`BusReceiver::missed`]).
    fn listening(&self) -> Option<u64> {
        Some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_as_json() {
        let e = BusMessage::Event(BusEvent::ResourceUpdated {
            uri: "test://x".into(),
        });
        let back: BusMessage = serde_json::from_str(&serde_json::to_string(&e).unwrap()).unwrap();
        assert!(
            matches!(back, BusMessage::Event(BusEvent::ResourceUpdated { uri }) if uri == "test://x")
        );
        let c = BusMessage::change("add", serde_json::json!({"n": 1}));
        let back: BusMessage = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert!(matches!(back, BusMessage::Change { name, arg } if name == "add" && arg["n"] == 1));
        // A reply keeps its result's text exactly, or its error.
        let raw = RawValue::from_string(r#"{"action":"accept","n":12345678901234567890}"#.into());
        let ok: Outcome = Ok(raw.unwrap());
        let r = BusMessage::Reply {
            session: "scope".into(),
            id: RequestId::String("s-ab-0".into()),
            answer: (&ok).into(),
        };
        let back: BusMessage = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        let BusMessage::Reply {
            session,
            id,
            answer,
        } = back
        else {
            panic!("not a reply: {back:?}")
        };
        assert_eq!(
            (session.as_str(), id),
            ("scope", RequestId::String("s-ab-0".into()))
        );
        let got = answer.outcome().unwrap().unwrap();
        assert_eq!(got.get(), r#"{"action":"accept","n":12345678901234567890}"#);
        let err: Outcome = Err(crate::jsonrpc::error(-1, "declined"));
        let e = BusMessage::Reply {
            session: "scope".into(),
            id: RequestId::from(3),
            answer: (&err).into(),
        };
        let back: BusMessage = serde_json::from_str(&serde_json::to_string(&e).unwrap()).unwrap();
        assert!(
            matches!(back, BusMessage::Reply { answer: BusAnswer::Error(e), .. } if e.message == "declined")
        );
        let c = BusMessage::Cancel {
            session: "scope".into(),
            id: RequestId::from(9),
        };
        let back: BusMessage = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert!(matches!(back, BusMessage::Cancel { id, .. } if id == RequestId::from(9)));
        let i = BusMessage::Invalidate {
            session: "scope".into(),
            ack: None,
            reply_to: None,
        };
        let text = serde_json::to_string(&i).unwrap();
        assert_eq!(text, r#"{"kind":"invalidate","session":"scope"}"#);
        let back: BusMessage = serde_json::from_str(&text).unwrap();
        assert!(
            matches!(back, BusMessage::Invalidate { session, ack: None, reply_to: None } if session == "scope")
        );
        let asked = BusMessage::Invalidate {
            session: "scope".into(),
            ack: Some(7),
            reply_to: Some(11),
        };
        let back: BusMessage =
            serde_json::from_str(&serde_json::to_string(&asked).unwrap()).unwrap();
        assert!(matches!(
            back,
            BusMessage::Invalidate {
                ack: Some(7),
                reply_to: Some(11),
                ..
            }
        ));
        let ack = BusMessage::InvalidateAck { ack: 7, from: 3 };
        let text = serde_json::to_string(&ack).unwrap();
        assert_eq!(text, r#"{"kind":"invalidate_ack","ack":7,"from":3}"#);
    }

    #[tokio::test]
    async fn a_local_member_counts_the_other_members_a_sent_message_reached() {
        let hub = LocalBus::new(4);
        let a = hub.member();
        let b = hub.member();
        let message = || BusMessage::change("n", serde_json::json!(1));
        assert_eq!(a.publish_sent(message()).await, Some(1));
        let c = hub.member();
        assert_eq!(a.publish_sent(message()).await, Some(2));
        drop((b, c));
        assert_eq!(a.publish_sent(message()).await, Some(0));
    }

    #[tokio::test]
    async fn a_lagging_receiver_drops_the_oldest_and_goes_on() {
        let hub = LocalBus::new(2);
        let (a, b) = (hub.member(), hub.member());
        let mut rx = b.subscribe();
        for i in 0..5 {
            a.publish(BusMessage::change("n", serde_json::json!(i)));
        }
        let mut got = vec![];
        while let Some(m) = rx.try_recv() {
            if let BusMessage::Change { arg, .. } = &*m {
                got.push(arg.clone());
            }
        }
        assert_eq!(got, vec![serde_json::json!(3), serde_json::json!(4)]);
        // The loss is counted, for caches that must forget what they may have missed.
        assert_eq!(rx.missed(), 3);
    }
}
