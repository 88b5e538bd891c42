//! The MCP Events extension, phase 1 (experimental, feature `events`): the server side of
//! poll and push delivery, after the working group's design sketch
//! (`modelcontextprotocol/experimental-ext-triggers-events`).
//!
//! The application declares event types on the builder ([`ServerBuilder::event`]) and emits
//! occurrences through [`Server::events`]. Each type keeps its recent occurrences in a bounded
//! ring (count, bytes and age, [`EventsConfig`]), so that a client's cursor can replay what it
//! missed; a cursor older than the ring is answered with `truncated: true`. The methods:
//!
//! - `events/list`: the declared types, paginated like `tools/list`.
//! - `events/poll`: `{name, arguments, cursor, maxAgeMs?, maxEvents?}` →
//!   `{events, cursor, truncated, hasMore, nextPollMs}`; `cursor: null` starts from now.
//! - `events/stream`: a long-lived request; `notifications/events/active` first, then
//!   `notifications/events/event` per matching occurrence and `notifications/events/heartbeat`
//!   (carrying the cursor) in quiet periods, each with the request's id as
//!   `_meta["io.modelcontextprotocol/subscriptionId"]`. It ends when the client cancels it or
//!   closes its stream (or the server shuts down).
//!
//! Cursors are opaque: `E<epoch>.<type>.<position>`, where the epoch is random per server
//! instance. They are positions, not capabilities: whatever a client sends, it reads only the
//! ring of the type it names (a cursor of another type or of another server instance is
//! `-32602`, or `truncated` when it is this type's but from an earlier instance).
//!
//! Replicas: with `HttpConfig::redis` (feature `redis`) the occurrences are shared through one
//! Redis stream per type (see the `duomcp::redis` module): an occurrence emitted on any replica
//! reaches every replica's streams and polls, and a cursor from one replica is good on every
//! other. [`Events::emit`] then queues the occurrence for Redis and returns at once; it
//! appears in the rings (this replica's included) once stored, a few milliseconds later.
//!
//! Webhook delivery (`events/subscribe`, `events/unsubscribe`) comes with the feature
//! `webhooks` and [`ServerBuilder::webhooks`]: see [`webhook`]. A type offers it (lists
//! `"webhook"`) only when the server has it configured. Webhook subscriptions live in the
//! memory of the replica that accepted them (clients re-subscribe on their next refresh after
//! a restart); with Redis, that replica delivers the occurrences emitted on any replica.
//!
//! Not in this phase: event types changed at run time (`listChanged` is `false`), webhook
//! subscriptions kept across a restart or shared between replicas.
//!
//! [`ServerBuilder::event`]: crate::server::ServerBuilder::event
//! [`Server::events`]: crate::server::Server::events
#![cfg_attr(
    feature = "webhooks",
    doc = "[`ServerBuilder::webhooks`]: crate::server::ServerBuilder::webhooks"
)]
#![cfg_attr(
    not(feature = "webhooks"),
    doc = "[`ServerBuilder::webhooks`]: crate#features"
)]
#![cfg_attr(not(feature = "webhooks"), doc = "[`webhook`]: crate#features")]

#[cfg(feature = "webhooks")]
pub mod webhook;

use crate::era::ProtocolError;
use crate::jsonrpc::ErrorObject;
use crate::server::context::Context;
use crate::util::lock;
use duomcp_proto::schema_check::{SchemaCheck, SchemaViolation};
use duomcp_schema::meta;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;
use tokio::time::Instant;

/// `-32011`: an unknown event name.
pub const NOT_FOUND: i32 = -32011;
/// `-32013`: a server limit was reached (`data.limit` names it, `data.max` gives it).
pub const RESOURCE_EXHAUSTED: i32 = -32013;
/// `-32014`: the event type does not offer the delivery mode asked for.
pub const UNSUPPORTED: i32 = -32014;

/// `events/list`.
pub const LIST: &str = "events/list";
/// `events/poll`.
pub const POLL: &str = "events/poll";
/// `events/stream`.
pub const STREAM: &str = "events/stream";
/// The first notification of a stream (and again after a gap, with `truncated: true`).
pub const ACTIVE: &str = "notifications/events/active";
/// One occurrence on a stream.
pub const EVENT: &str = "notifications/events/event";
/// A stream's keep-alive, with the cursor checked up to.
pub const HEARTBEAT: &str = "notifications/events/heartbeat";
/// A recoverable failure on a stream (it stays open): [`Events::report_error`].
pub const ERROR: &str = "notifications/events/error";
/// The end of a stream's subscription, by the server: [`Events::terminate`].
pub const TERMINATED: &str = "notifications/events/terminated";
/// The extension's id, under which `capabilities.extensions` declares it too.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/events";

/// The prefix of `events/list` page cursors.
const LIST_CURSOR: &str = "ev:";

/// A delivery mode an event type offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Delivery {
    /// `events/poll`.
    Poll,
    /// `events/stream`.
    Push,
    /// `events/subscribe` with `delivery.mode: "webhook"`: offered (and listed) only when the
    /// server has webhook delivery configured (feature `webhooks`,
    /// `ServerBuilder::webhooks`); otherwise left out of the type's list.
    Webhook,
}

impl Delivery {
    fn as_str(self) -> &'static str {
        match self {
            Delivery::Poll => "poll",
            Delivery::Push => "push",
            Delivery::Webhook => "webhook",
        }
    }
}

/// Whether an occurrence's `data` matches a subscription's `arguments`:
/// `filter(arguments, data)`.
pub type Filter = Arc<dyn Fn(&Value, &Value) -> bool + Send + Sync>;

/// An event type the server declares ([`ServerBuilder::event`]).
///
/// ```
/// use duomcp::server::events::{Delivery, EventType};
/// use serde_json::json;
///
/// let kind = EventType::new("order.created")
///     .description("A new order was placed")
///     .input_schema(json!({"type": "object", "properties": {"shop": {"type": "string"}}}))
///     .payload_schema(json!({"type": "object", "properties": {"shop": {"type": "string"}}}))
///     .delivery([Delivery::Poll, Delivery::Push])
///     // A subscription with `{"shop": "x"}` hears only of shop x's orders.
///     .filter(|args, data| match args.get("shop") {
///         Some(shop) => data.get("shop") == Some(shop),
///         None => true,
///     });
/// # let _ = kind;
/// ```
///
/// [`ServerBuilder::event`]: crate::server::ServerBuilder::event
#[derive(Clone)]
pub struct EventType {
    name: String,
    description: Option<String>,
    input_schema: Value,
    payload_schema: Option<Value>,
    delivery: Vec<Delivery>,
    filter: Option<Filter>,
}

impl std::fmt::Debug for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventType")
            .field("name", &self.name)
            .field("delivery", &self.delivery)
            .field("filter", &self.filter.is_some())
            .finish_non_exhaustive()
    }
}

impl EventType {
    /// A type named `name`, delivered by poll, push and (when the server has it configured)
    /// webhook, any arguments object accepted, every occurrence matching every subscription.
    pub fn new(name: impl Into<String>) -> Self {
        EventType {
            name: name.into(),
            description: None,
            input_schema: json!({ "type": "object" }),
            payload_schema: None,
            delivery: vec![Delivery::Poll, Delivery::Push, Delivery::Webhook],
            filter: None,
        }
    }

    /// What the event means, for the client (and its model).
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = Some(text.into());
        self
    }

    /// The JSON Schema of a subscription's `arguments`; they are checked against it as a
    /// tool's arguments are (`-32602` when they do not match).
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = schema;
        self
    }

    /// The JSON Schema of an occurrence's `data` (listed, not checked).
    pub fn payload_schema(mut self, schema: Value) -> Self {
        self.payload_schema = Some(schema);
        self
    }

    /// The delivery modes offered (a mode not listed is `-32014`). An empty list keeps the
    /// default, all three.
    pub fn delivery(mut self, modes: impl IntoIterator<Item = Delivery>) -> Self {
        let mut unique = Vec::new();
        for mode in modes {
            if !unique.contains(&mode) {
                unique.push(mode);
            }
        }
        if !unique.is_empty() {
            self.delivery = unique;
        }
        self
    }

    /// Which occurrences a subscription hears of: `filter(arguments, data)`, called for every
    /// occurrence a poll or a stream reads (keep it quick: it runs under the type's lock).
    /// Without one, every occurrence matches; one that panics matches nothing.
    pub fn filter(
        mut self,
        filter: impl Fn(&Value, &Value) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.filter = Some(Arc::new(filter));
        self
    }

    /// The type's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn listed(&self, webhooks: bool) -> Value {
        let modes: Vec<&str> = self
            .delivery
            .iter()
            .filter(|d| webhooks || **d != Delivery::Webhook)
            .map(|d| d.as_str())
            .collect();
        let mut v = json!({
            "name": self.name,
            "delivery": modes,
            "inputSchema": self.input_schema,
        });
        if let Some(d) = &self.description {
            v["description"] = json!(d);
        }
        if let Some(p) = &self.payload_schema {
            v["payloadSchema"] = p.clone();
        }
        v
    }
}

/// The bounds and timings of the events extension ([`ServerBuilder::events_config`]).
///
/// ```
/// use duomcp::server::events::EventsConfig;
/// use std::time::Duration;
/// let mut config = EventsConfig::default();
/// config.heartbeat = Duration::from_secs(10);
/// config.ring = 4096;
/// # let _ = config;
/// ```
///
/// [`ServerBuilder::events_config`]: crate::server::ServerBuilder::events_config
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EventsConfig {
    /// Occurrences kept per event type for replay (default 1,024; at least 1).
    pub ring: usize,
    /// Bytes of occurrence data (as JSON) kept per event type (default 16 MiB).
    pub ring_bytes: usize,
    /// How long an occurrence is kept for replay (default 1 h).
    pub max_age: Duration,
    /// Occurrences one `events/poll` returns at most, whatever its `maxEvents` (default 100).
    pub max_events_per_poll: usize,
    /// The `nextPollMs` answered to polls (default 5 s).
    pub next_poll: Duration,
    /// The quiet time after which a stream gets a heartbeat (default 30 s; at least 10 ms).
    pub heartbeat: Duration,
    /// `events/stream` streams open at once, over all clients (default 256).
    pub max_streams: usize,
    /// `events/stream` streams open at once for one caller: the authenticated principal, else
    /// the 2025-11-25 session, else the peer's IP address (HTTP over TCP), else all anonymous
    /// callers of the server together (default 16).
    pub max_streams_per_caller: usize,
}

impl Default for EventsConfig {
    fn default() -> Self {
        EventsConfig {
            ring: 1024,
            ring_bytes: 16 * 1024 * 1024,
            max_age: Duration::from_secs(3600),
            max_events_per_poll: 100,
            next_poll: Duration::from_secs(5),
            heartbeat: Duration::from_secs(30),
            max_streams: 256,
            max_streams_per_caller: 16,
        }
    }
}

/// Why [`Events::emit`] refused an occurrence.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EmitError {
    /// No event type of this name is declared.
    UnknownEvent(String),
    /// `data` is not a JSON object.
    NotAnObject,
    /// Replicas share the occurrences (Redis) and the occurrence is larger than they carry
    /// (`SHARED_EVENT_BYTES`, 256 KiB of JSON).
    TooLarge(usize),
    /// Replicas share the occurrences and the queue of those not yet stored is full (Redis is
    /// slow or away): the occurrence was not recorded.
    Backlog,
}

impl std::fmt::Display for EmitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EmitError::UnknownEvent(name) => write!(f, "no event type `{name}` is declared"),
            EmitError::NotAnObject => f.write_str("event data must be a JSON object"),
            EmitError::TooLarge(n) => write!(
                f,
                "event data of {n} bytes is larger than replicas share ({SHARED_EVENT_BYTES})"
            ),
            EmitError::Backlog => f.write_str("too many occurrences wait to be stored"),
        }
    }
}

impl std::error::Error for EmitError {}

/// The handle application code emits occurrences with ([`Server::events`]).
///
/// ```
/// use duomcp::server::events::EventType;
/// use duomcp::server::Server;
/// use serde_json::json;
///
/// let server = Server::builder().event(EventType::new("demo.tick")).build();
/// let id = server.events().emit("demo.tick", json!({"n": 1})).expect("declared");
/// assert!(!id.is_empty());
/// assert!(server.events().emit("nope", json!({})).is_err());
/// ```
///
/// [`Server::events`]: crate::server::Server::events
#[derive(Clone)]
pub struct Events {
    pub(crate) hub: Arc<Hub>,
}

impl Events {
    /// Records an occurrence of `name` with `data` (a JSON object), delivers it to the streams
    /// it matches, and returns its generated `eventId`.
    pub fn emit(&self, name: &str, data: Value) -> Result<String, EmitError> {
        self.hub.emit(name, None, data)
    }

    /// As [`emit`](Self::emit), with the upstream's own stable id as `eventId` (so that a
    /// client can deduplicate what reaches it by two paths).
    pub fn emit_with_id(
        &self,
        name: &str,
        event_id: impl Into<String>,
        data: Value,
    ) -> Result<String, EmitError> {
        self.hub.emit(name, Some(event_id.into()), data)
    }

    /// Whether any event type is declared.
    pub fn is_enabled(&self) -> bool {
        !self.hub.types.is_empty()
    }

    /// Tells the open `events/stream` streams of `name` (on this replica) of a recoverable
    /// failure — an upstream fetch failed, say — as `notifications/events/error` with
    /// `error`; the streams stay open. Returns how many were told.
    ///
    /// ```
    /// use duomcp::jsonrpc::ErrorObject;
    /// use duomcp::server::{events::EventType, Server};
    /// let server = Server::builder().event(EventType::new("mail.received")).build();
    /// let told = server
    ///     .events()
    ///     .report_error("mail.received", ErrorObject::new(-32603, "upstream unavailable"))
    ///     .unwrap();
    /// assert_eq!(told, 0); // nobody streams yet
    /// ```
    pub fn report_error(&self, name: &str, error: ErrorObject) -> Result<usize, EmitError> {
        let slot = self.hub.slot(name)?;
        Ok(slot.signals.send(Signal::Error(error)).unwrap_or(0))
    }

    /// Says that occurrences of `name` may have been lost here (the upstream's history had a
    /// hole): a stream gets `notifications/events/active` again with `truncated: true` and a
    /// fresh cursor, and a poll from a cursor before now gets `truncated: true`. With replicas
    /// sharing occurrences (Redis), every replica's clients are told.
    pub fn gap(&self, name: &str) -> Result<(), EmitError> {
        self.hub.gap(name)
    }

    /// Ends the open `events/stream` streams of `name` (on this replica): each gets
    /// `notifications/events/terminated` with `error` (the authorization was revoked, the
    /// source went away…), then its final result. Polls are not affected (they hold no
    /// subscription); for webhooks see `end_webhooks`. Returns how many ended.
    pub fn terminate(&self, name: &str, error: ErrorObject) -> Result<usize, EmitError> {
        let slot = self.hub.slot(name)?;
        Ok(slot.signals.send(Signal::Terminated(error)).unwrap_or(0))
    }

    /// Ends the webhook subscriptions of one principal (its [`Principal::key`]), or all of
    /// them with `None` — when its authorization was revoked, say — POSTing each a
    /// `{"type":"terminated","error":…}` envelope (one attempt, not retried; `reason` goes
    /// into the error's message). Returns how many ended (feature `webhooks`).
    ///
    /// [`Principal::key`]: crate::server::Principal::key
    #[cfg(feature = "webhooks")]
    pub async fn end_webhooks(&self, principal: Option<&str>, reason: &str) -> usize {
        webhook::end(&self.hub, principal, reason).await
    }
}

/// One occurrence in a ring.
struct Occurrence {
    seq: u64,
    at_ms: u64,
    event_id: String,
    data: Value,
    bytes: usize,
}

/// A type's recent occurrences.
#[derive(Default)]
struct Ring {
    items: VecDeque<Arc<Occurrence>>,
    bytes: usize,
    /// The position of the newest occurrence (0: none yet).
    last: u64,
    /// Every occurrence at or before this position is gone.
    dropped_through: u64,
}

/// What the application tells a type's open streams besides occurrences.
#[derive(Clone)]
enum Signal {
    Error(ErrorObject),
    Terminated(ErrorObject),
}

/// Signals a stream may miss before it skips some (it then misses those).
const SIGNALS: usize = 16;

/// One declared type with its ring.
struct Slot {
    index: usize,
    spec: EventType,
    check: SchemaCheck,
    listed: Value,
    ring: Mutex<Ring>,
    /// The newest position, for streams to wait on.
    head: watch::Sender<u64>,
    /// Errors and terminations for the type's open streams.
    signals: tokio::sync::broadcast::Sender<Signal>,
}

/// The largest occurrence (its `data` as JSON) replicas sharing a store carry.
pub const SHARED_EVENT_BYTES: usize = 256 * 1024;

/// An occurrence emitted on a replica whose occurrences are shared, on its way to the store.
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
pub(crate) struct Outgoing {
    pub(crate) name: String,
    pub(crate) event_id: String,
    pub(crate) at_ms: u64,
    /// `data` as JSON.
    pub(crate) data: String,
    /// A gap marker ([`Events::gap`]) rather than an occurrence.
    pub(crate) gap: bool,
}

/// Where a replica sending its occurrences to a shared store puts them: `false` when its queue
/// is full.
pub(crate) type SharedSink = Box<dyn Fn(Outgoing) -> bool + Send + Sync>;

/// What the server keeps for the extension.
pub(crate) struct Hub {
    config: EventsConfig,
    /// This instance's epoch (random), the cursors' first part while nothing is shared.
    epoch: String,
    /// The fleet's epoch once the occurrences are shared: the same on every replica.
    shared_epoch: std::sync::OnceLock<String>,
    /// Where emitted occurrences go once shared (they come back through [`Hub::ingest`]).
    shared: std::sync::OnceLock<SharedSink>,
    /// Tells the task reading the shared store that there is something new to read.
    pub(crate) wake: tokio::sync::Notify,
    /// Occurrences emitted here, for ids unique to this instance when shared.
    emitted: std::sync::atomic::AtomicU64,
    types: BTreeMap<String, Arc<Slot>>,
    /// Open streams per caller (an entry exists only while its count is not 0).
    streams: Mutex<HashMap<String, usize>>,
    /// Webhook delivery, when configured.
    #[cfg(feature = "webhooks")]
    webhooks: Option<webhook::Webhooks>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// A gap at `position` (past the ring's last): everything up to it counts as possibly lost;
/// the type's streams are woken to say so.
fn mark_gap(slot: &Slot, mut ring: std::sync::MutexGuard<'_, Ring>, position: u64) {
    ring.last = position;
    ring.dropped_through = position;
    drop(ring);
    slot.head.send_replace(position);
}

/// `bytes` random bytes from the operating system, as hex.
fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    let _ = getrandom::fill(&mut buf);
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Hub {
    pub(crate) fn new(types: Vec<EventType>, mut config: EventsConfig) -> Self {
        config.ring = config.ring.max(1);
        config.max_events_per_poll = config.max_events_per_poll.max(1);
        // A zero interval would send heartbeats back to back.
        config.heartbeat = config.heartbeat.max(MIN_HEARTBEAT);
        let mut map = BTreeMap::new();
        for spec in types {
            let (head, _) = watch::channel(0);
            let slot = Slot {
                index: 0,
                check: SchemaCheck::new(spec.input_schema.clone()),
                listed: spec.listed(false),
                spec,
                ring: Mutex::default(),
                head,
                signals: tokio::sync::broadcast::channel(SIGNALS).0,
            };
            // A type declared again replaces the earlier one.
            map.insert(slot.spec.name.clone(), slot);
        }
        let types = map
            .into_iter()
            .enumerate()
            .map(|(i, (k, mut slot))| {
                slot.index = i;
                (k, Arc::new(slot))
            })
            .collect();
        Hub {
            config,
            epoch: random_hex(4),
            shared_epoch: std::sync::OnceLock::new(),
            shared: std::sync::OnceLock::new(),
            wake: tokio::sync::Notify::new(),
            emitted: std::sync::atomic::AtomicU64::new(0),
            types,
            streams: Mutex::default(),
            #[cfg(feature = "webhooks")]
            webhooks: None,
        }
    }

    /// With webhook delivery (`None`: without).
    #[cfg(feature = "webhooks")]
    pub(crate) fn with_webhooks(mut self, config: Option<webhook::WebhookConfig>) -> Self {
        let Some(config) = config else {
            return self;
        };
        self.webhooks = Some(webhook::Webhooks::new(config));
        let types = std::mem::take(&mut self.types);
        self.types = types
            .into_iter()
            .map(|(k, slot)| match Arc::try_unwrap(slot) {
                Ok(mut slot) => {
                    slot.listed = slot.spec.listed(true);
                    (k, Arc::new(slot))
                }
                Err(slot) => (k, slot),
            })
            .collect();
        self
    }

    /// Whether `mode` can be offered at all by this server.
    fn offers(&self, mode: Delivery) -> bool {
        match mode {
            #[cfg(feature = "webhooks")]
            Delivery::Webhook => self.webhooks.is_some(),
            #[cfg(not(feature = "webhooks"))]
            Delivery::Webhook => false,
            Delivery::Poll | Delivery::Push => true,
        }
    }

    /// The cursors' epoch: the fleet's once shared, else this instance's.
    fn epoch(&self) -> &str {
        self.shared_epoch.get().unwrap_or(&self.epoch)
    }

    /// Whether the occurrences are shared between replicas.
    fn is_shared(&self) -> bool {
        self.shared.get().is_some()
    }
}

/// Sharing between replicas (used by the Redis store, feature `redis`).
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
impl Hub {
    /// Sends the occurrences emitted from now on to `sink` instead of the rings; they come
    /// back, from every replica in one order, through [`Hub::ingest`]. `epoch` (8 hex digits)
    /// is the fleet's. `false` when already shared.
    pub(crate) fn share(&self, epoch: String, sink: SharedSink) -> bool {
        if self.shared.set(sink).is_err() {
            return false;
        }
        let _ = self.shared_epoch.set(epoch);
        true
    }

    /// The declared types' names and the configured ring length.
    pub(crate) fn type_names(&self) -> impl Iterator<Item = &str> {
        self.types.keys().map(String::as_str)
    }

    /// The ring length per type.
    pub(crate) fn ring_len(&self) -> usize {
        self.config.ring
    }

    /// A gap marker read back from the shared store at `position`.
    pub(crate) fn ingest_gap(&self, name: &str, position: u64) {
        let Some(slot) = self.types.get(name) else {
            return;
        };
        let ring = lock(&slot.ring);
        if position > ring.last {
            mark_gap(slot, ring, position);
        }
    }

    /// An occurrence read back from the shared store at `position` (increasing per type).
    /// Older or repeated positions are ignored; `gap_before` says that occurrences before this
    /// one may be gone from the store (the first read of a replica that joins late).
    pub(crate) fn ingest(
        &self,
        name: &str,
        position: u64,
        event_id: String,
        at_ms: u64,
        data: Value,
        gap_before: bool,
    ) {
        let Some(slot) = self.types.get(name) else {
            return;
        };
        let bytes = serde_json::to_vec(&data).map(|v| v.len()).unwrap_or(0);
        let mut ring = lock(&slot.ring);
        if position <= ring.last {
            return;
        }
        if gap_before && ring.items.is_empty() {
            ring.dropped_through = ring.dropped_through.max(position.saturating_sub(1));
        }
        let occurrence = Occurrence {
            seq: position,
            at_ms,
            event_id,
            data,
            bytes,
        };
        self.append(slot, ring, occurrence, now_ms());
    }
}

impl Hub {
    pub(crate) fn is_enabled(&self) -> bool {
        !self.types.is_empty()
    }

    fn slot(&self, name: &str) -> Result<&Arc<Slot>, EmitError> {
        self.types
            .get(name)
            .ok_or_else(|| EmitError::UnknownEvent(name.to_owned()))
    }

    /// A gap takes a position of its own: everything up to it counts as possibly lost.
    fn gap(&self, name: &str) -> Result<(), EmitError> {
        let slot = self.slot(name)?;
        if let Some(sink) = self.shared.get() {
            let sent = sink(Outgoing {
                name: name.to_owned(),
                event_id: String::new(),
                at_ms: now_ms(),
                data: String::new(),
                gap: true,
            });
            return if sent {
                Ok(())
            } else {
                Err(EmitError::Backlog)
            };
        }
        let ring = lock(&slot.ring);
        let position = ring.last + 1;
        mark_gap(slot, ring, position);
        Ok(())
    }

    fn emit(&self, name: &str, event_id: Option<String>, data: Value) -> Result<String, EmitError> {
        let slot = self.slot(name)?;
        if !data.is_object() {
            return Err(EmitError::NotAnObject);
        }
        if let Some(sink) = self.shared.get() {
            let json = serde_json::to_string(&data).unwrap_or_default();
            if json.len() > SHARED_EVENT_BYTES {
                return Err(EmitError::TooLarge(json.len()));
            }
            let n = 1 + self
                .emitted
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let event_id =
                event_id.unwrap_or_else(|| format!("evt_{}_{}_{n}", self.epoch, slot.index));
            let sent = sink(Outgoing {
                name: name.to_owned(),
                event_id: event_id.clone(),
                at_ms: now_ms(),
                data: json,
                gap: false,
            });
            return if sent {
                Ok(event_id)
            } else {
                Err(EmitError::Backlog)
            };
        }
        let bytes = serde_json::to_vec(&data).map(|v| v.len()).unwrap_or(0);
        let at_ms = now_ms();
        let ring = lock(&slot.ring);
        let seq = ring.last + 1;
        let event_id =
            event_id.unwrap_or_else(|| format!("evt_{}_{}_{seq}", self.epoch, slot.index));
        let occurrence = Occurrence {
            seq,
            at_ms,
            event_id: event_id.clone(),
            data,
            bytes,
        };
        self.append(slot, ring, occurrence, at_ms);
        Ok(event_id)
    }

    /// Puts `occurrence` (its position past the ring's last) at the end of its type's ring,
    /// drops what the bounds no longer allow, and wakes the type's streams: the one way an
    /// occurrence enters a ring, emitted here or read back from a shared store.
    fn append(
        &self,
        slot: &Slot,
        mut ring: std::sync::MutexGuard<'_, Ring>,
        occurrence: Occurrence,
        now: u64,
    ) {
        let position = occurrence.seq;
        ring.last = position;
        ring.bytes += occurrence.bytes;
        ring.items.push_back(Arc::new(occurrence));
        self.prune(&mut ring, now);
        drop(ring);
        slot.head.send_replace(position);
    }

    /// Drops what the bounds do not allow: the oldest beyond the count or the bytes, and
    /// anything older than the age bound.
    fn prune(&self, ring: &mut Ring, now: u64) {
        let oldest_allowed = now.saturating_sub(ms(self.config.max_age));
        while let Some(front) = ring.items.front() {
            // The newest occurrence stays within the count and bytes bounds, so that one
            // larger than the byte bound is still delivered to the streams waiting for it.
            let over = ring.items.len() > self.config.ring
                || (ring.bytes > self.config.ring_bytes && ring.items.len() > 1)
                || front.at_ms < oldest_allowed;
            if !over {
                break;
            }
            ring.dropped_through = front.seq;
            ring.bytes = ring.bytes.saturating_sub(front.bytes);
            ring.items.pop_front();
        }
    }

    fn cursor(&self, slot: &Slot, position: u64) -> String {
        format!("E{}.{}.{position}", self.epoch(), slot.index)
    }

    /// The position a client's cursor names in `slot`: `Ok(None)` for one from an earlier
    /// instance of the server (a gap: replay what is left), `-32602` for anything else that is
    /// not a position of this type.
    fn position(&self, slot: &Slot, cursor: &str, last: u64) -> Result<Option<u64>, ProtocolError> {
        let bad = || {
            ProtocolError::InvalidParams(format!(
                "Invalid params: `{}` is not a cursor of event `{}`",
                crate::util::excerpt(cursor, 64),
                crate::util::excerpt(&slot.spec.name, 64)
            ))
        };
        let rest = cursor.strip_prefix('E').ok_or_else(bad)?;
        let mut parts = rest.splitn(3, '.');
        let (Some(epoch), Some(index), Some(pos)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let index: usize = index.parse().map_err(|_| bad())?;
        let pos: u64 = pos.parse().map_err(|_| bad())?;
        if epoch.len() != self.epoch().len() || !epoch.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        if epoch != self.epoch() {
            return Ok(None);
        }
        // Shared between replicas, a cursor another replica gave may be ahead of this one's
        // copy by the time it takes to read the store.
        if index != slot.index || (pos > last && !self.is_shared()) {
            return Err(bad());
        }
        Ok(Some(pos))
    }

    /// What a subscription with `args` reads after `after` (at most `max`, none older than
    /// `max_age_ms`).
    fn read(&self, slot: &Slot, read: Read<'_>) -> Batch {
        let now = now_ms();
        let mut ring = lock(&slot.ring);
        self.prune(&mut ring, now);
        let (after, mut truncated) = match read.after {
            Some(a) => (a, a < ring.dropped_through),
            None => (ring.dropped_through, false),
        };
        let floor = read.max_age_ms.map(|age| now.saturating_sub(age));
        let mut events = Vec::new();
        let mut cursor = after.max(ring.dropped_through);
        let mut has_more = false;
        for occ in ring.items.iter().filter(|o| o.seq > after) {
            if floor.is_some_and(|f| occ.at_ms < f) {
                truncated = true;
                cursor = occ.seq;
                continue;
            }
            // A filter that panics matches nothing (and is logged), the stream goes on.
            let matches = slot.spec.filter.as_ref().is_none_or(|f| {
                let call = std::panic::AssertUnwindSafe(|| f(read.args, &occ.data));
                std::panic::catch_unwind(call).unwrap_or_else(|_| {
                    tracing::warn!(event = %slot.spec.name, "an event filter panicked");
                    false
                })
            });
            if !matches {
                cursor = occ.seq;
                continue;
            }
            if events.len() == read.max {
                has_more = true;
                break;
            }
            events.push(occ.clone());
            cursor = occ.seq;
        }
        if !has_more {
            cursor = cursor.max(ring.last);
        }
        Batch {
            events,
            cursor,
            truncated,
            has_more,
        }
    }

    fn occurrence_json(&self, slot: &Slot, occ: &Occurrence, cursor: Option<u64>) -> Value {
        let mut v = json!({
            "eventId": occ.event_id,
            "name": slot.spec.name,
            "timestamp": duomcp_proto::time::iso8601(occ.at_ms),
            "data": occ.data,
        });
        if let Some(c) = cursor {
            v["cursor"] = json!(self.cursor(slot, c));
        }
        v
    }

    /// Takes a stream slot for `caller`, or says which bound refused it.
    fn open_stream(self: &Arc<Self>, caller: String) -> Result<StreamGuard, ProtocolError> {
        let mut streams = lock(&self.streams);
        let total: usize = streams.values().sum();
        let exhausted = |limit: &str, max: usize| {
            ProtocolError::Custom(duomcp_schema::ErrorObject {
                code: RESOURCE_EXHAUSTED,
                message: format!("ResourceExhausted: too many events/stream streams open ({limit}, at most {max})"),
                data: Some(json!({ "limit": limit, "max": max })),
            })
        };
        if total >= self.config.max_streams {
            return Err(exhausted("streams", self.config.max_streams));
        }
        let mine = streams.get(&caller).copied().unwrap_or(0);
        if mine >= self.config.max_streams_per_caller {
            return Err(exhausted(
                "streamsPerCaller",
                self.config.max_streams_per_caller,
            ));
        }
        streams.insert(caller.clone(), mine + 1);
        Ok(StreamGuard {
            hub: self.clone(),
            caller,
        })
    }
}

/// What one read asks for.
struct Read<'a> {
    args: &'a Value,
    /// `None`: from the oldest occurrence kept (a gap).
    after: Option<u64>,
    max_age_ms: Option<u64>,
    max: usize,
}

/// What one read found.
struct Batch {
    events: Vec<Arc<Occurrence>>,
    cursor: u64,
    truncated: bool,
    has_more: bool,
}

/// An open stream's slot; dropping it frees it.
struct StreamGuard {
    hub: Arc<Hub>,
    caller: String,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        let mut streams = lock(&self.hub.streams);
        if let Some(n) = streams.get_mut(&self.caller) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                streams.remove(&self.caller);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The methods.

#[derive(Deserialize)]
struct SubscribeParams {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default)]
    cursor: Option<String>,
    #[serde(rename = "maxAgeMs", default)]
    max_age_ms: Option<u64>,
    #[serde(rename = "maxEvents", default)]
    max_events: Option<u64>,
}

#[derive(Deserialize, Default)]
struct ListParams {
    #[serde(default)]
    cursor: Option<String>,
}

fn parse<T: serde::de::DeserializeOwned>(params: Option<&str>) -> Result<T, ProtocolError> {
    crate::jsonrpc::parse_params(params).map_err(|e| ProtocolError::InvalidParams(e.message))
}

fn custom(code: i32, message: String, data: Value) -> ProtocolError {
    ProtocolError::Custom(duomcp_schema::ErrorObject {
        code,
        message,
        data: Some(data),
    })
}

/// The capability the server declares, when any type is declared.
pub(crate) fn capability(hub: &Hub) -> Option<Value> {
    hub.is_enabled().then(|| json!({ "listChanged": false }))
}

/// The result of an events method, `None` for another method (or when no type is declared:
/// then the methods do not exist).
pub(crate) async fn handle(
    hub: &Arc<Hub>,
    ctx: &Context,
    method: &str,
    params: Option<&str>,
) -> Option<Result<Value, ProtocolError>> {
    if !hub.is_enabled() {
        return None;
    }
    Some(match method {
        LIST => list(hub, params, ctx.shared().config.page_size),
        POLL => poll(hub, params),
        STREAM => Box::pin(stream(hub, ctx, params)).await,
        #[cfg(feature = "webhooks")]
        other => return Box::pin(webhook::handle(hub, ctx, other, params)).await,
        #[cfg(not(feature = "webhooks"))]
        _ => return None,
    })
}

fn list(hub: &Hub, params: Option<&str>, page_size: usize) -> Result<Value, ProtocolError> {
    let p: ListParams = parse(params)?;
    let after = crate::server::cursor::decode(LIST_CURSOR, p.cursor.as_deref())?;
    let mut events = Vec::new();
    let mut next = None;
    let mut last: Option<&String> = None;
    for (name, slot) in hub
        .types
        .iter()
        .filter(|(k, _)| after.as_deref().is_none_or(|a| k.as_str() > a))
    {
        if events.len() == page_size.max(1) {
            next = last.map(|k| crate::server::cursor::encode(LIST_CURSOR, k));
            break;
        }
        last = Some(name);
        events.push(slot.listed.clone());
    }
    let mut r = json!({ "events": events });
    if let Some(next) = next {
        r["nextCursor"] = json!(next);
    }
    Ok(r)
}

/// The declared type `p` names, offering `mode`, with `p`'s arguments checked.
fn subscription<'h>(
    hub: &'h Hub,
    p: &SubscribeParams,
    mode: Delivery,
) -> Result<(&'h Arc<Slot>, Value), ProtocolError> {
    let slot = hub.types.get(&p.name).ok_or_else(|| {
        custom(
            NOT_FOUND,
            format!(
                "NotFound: no event `{}`",
                crate::util::excerpt(&p.name, crate::util::EXCERPT_CHARS)
            ),
            json!({ "kind": "event" }),
        )
    })?;
    if !slot.spec.delivery.contains(&mode) || !hub.offers(mode) {
        return Err(custom(
            UNSUPPORTED,
            format!(
                "Unsupported: event `{}` is not delivered by {}",
                slot.spec.name,
                mode.as_str()
            ),
            json!({ "feature": "deliveryMode", "value": mode.as_str() }),
        ));
    }
    let args = p.arguments.clone().unwrap_or_else(|| json!({}));
    if !args.is_object() {
        return Err(ProtocolError::InvalidParams(
            "Invalid params: `arguments` must be an object".into(),
        ));
    }
    match slot.check.check(&args) {
        Ok(()) => {}
        Err(SchemaViolation::Mismatch(why)) => {
            return Err(ProtocolError::InvalidParams(format!(
                "Invalid params: arguments do not match the inputSchema of `{}`: {why}",
                slot.spec.name
            )))
        }
        Err(SchemaViolation::BadSchema(why)) => {
            return Err(ProtocolError::Internal(format!(
                "the inputSchema of event `{}` cannot be checked: {why}",
                slot.spec.name
            )))
        }
    }
    Ok((slot, args))
}

/// Where a subscription starts: `(after, truncated-by-the-cursor)`. `None` after: a gap,
/// from the oldest kept.
fn start(
    hub: &Hub,
    slot: &Slot,
    cursor: Option<&str>,
) -> Result<(Option<u64>, bool), ProtocolError> {
    let last = lock(&slot.ring).last;
    match cursor {
        None => Ok((Some(last), false)),
        Some(c) => match hub.position(slot, c, last)? {
            Some(pos) => Ok((Some(pos), false)),
            None => Ok((None, true)),
        },
    }
}

fn poll(hub: &Hub, params: Option<&str>) -> Result<Value, ProtocolError> {
    let p: SubscribeParams = parse(params)?;
    let (slot, args) = subscription(hub, &p, Delivery::Poll)?;
    let next_poll_ms = ms(hub.config.next_poll);
    if p.cursor.is_none() {
        let last = lock(&slot.ring).last;
        return Ok(json!({
            "events": [],
            "cursor": hub.cursor(slot, last),
            "truncated": false,
            "hasMore": false,
            "nextPollMs": next_poll_ms,
        }));
    }
    let (after, gap) = start(hub, slot, p.cursor.as_deref())?;
    let max = p.max_events.map_or(hub.config.max_events_per_poll, |m| {
        usize::try_from(m)
            .unwrap_or(usize::MAX)
            .min(hub.config.max_events_per_poll)
    });
    if max == 0 {
        return Err(ProtocolError::InvalidParams(
            "Invalid params: `maxEvents` must be at least 1".into(),
        ));
    }
    let batch = hub.read(
        slot,
        Read {
            args: &args,
            after,
            max_age_ms: p.max_age_ms,
            max,
        },
    );
    let events: Vec<Value> = batch
        .events
        .iter()
        .map(|o| hub.occurrence_json(slot, o, None))
        .collect();
    Ok(json!({
        "events": events,
        "cursor": hub.cursor(slot, batch.cursor),
        "truncated": gap || batch.truncated,
        "hasMore": batch.has_more,
        "nextPollMs": if batch.has_more { 0 } else { next_poll_ms },
    }))
}

/// Who a stream counts against: the principal, else the 2025-11-25 session, else the peer's
/// IP address, else every anonymous caller together (stdio, a Unix socket).
fn caller(ctx: &Context) -> String {
    if let Some(p) = ctx.principal() {
        return format!("p:{}", p.key());
    }
    if let Some(s) = ctx.client_session() {
        return format!("s:{}", s.key());
    }
    if let Some(ip) = ctx.peer_ip() {
        return format!("ip:{ip}");
    }
    "anonymous".into()
}

/// How many occurrences a stream reads from its ring at a time (it reads again at once while
/// there are more).
const STREAM_BATCH: usize = 64;

/// The shortest heartbeat interval [`EventsConfig::heartbeat`] is raised to.
const MIN_HEARTBEAT: Duration = Duration::from_millis(10);

async fn stream(
    hub: &Arc<Hub>,
    ctx: &Context,
    params: Option<&str>,
) -> Result<Value, ProtocolError> {
    let p: SubscribeParams = parse(params)?;
    let (slot, args) = subscription(hub, &p, Delivery::Push)?;
    let (mut after, gap) = start(hub, slot, p.cursor.as_deref())?;
    let _guard = hub.open_stream(caller(ctx))?;
    let tag = json!({ meta::SUBSCRIPTION_ID: ctx.request_id() });
    let sink = ctx.sink().clone();
    let mut head = slot.head.subscribe();
    let mut signals = slot.signals.subscribe();
    let send = |method: &str, mut params: Value| {
        params["_meta"] = tag.clone();
        let frame = crate::jsonrpc::encode_notification(method, &params).unwrap_or_default();
        let sink = sink.clone();
        // A client that stops reading must not hold the stream past its cancellation.
        async move {
            tokio::select! {
                sent = sink.send(frame) => sent.is_ok(),
                () = ctx.cancelled() => false,
            }
        }
    };
    let shutdown = ctx.shared().shutdown.clone();
    // The first read: replay from the cursor (bounded by maxAgeMs).
    let mut max_age = p.max_age_ms;
    let mut first = true;
    let mut gap = gap;
    let mut next_beat = Instant::now() + hub.config.heartbeat;
    'stream: loop {
        loop {
            head.borrow_and_update();
            let batch = hub.read(
                slot,
                Read {
                    args: &args,
                    after,
                    max_age_ms: max_age.take(),
                    max: STREAM_BATCH,
                },
            );
            if first || batch.truncated {
                // The position just before what follows.
                let before = batch
                    .events
                    .first()
                    .map_or(batch.cursor, |o| o.seq.saturating_sub(1));
                let active = json!({
                    "cursor": hub.cursor(slot, before),
                    "truncated": gap || batch.truncated,
                });
                first = false;
                gap = false;
                if !send(ACTIVE, active).await {
                    break 'stream;
                }
            }
            // Heartbeats keep their cadence on a busy stream too: a client's liveness check
            // (and a conformance check) may count heartbeats alone.
            for occ in &batch.events {
                let v = hub.occurrence_json(slot, occ, Some(occ.seq));
                if !send(EVENT, v).await {
                    break 'stream;
                }
            }
            after = Some(batch.cursor);
            if !batch.has_more || ctx.is_cancelled() {
                break;
            }
        }
        let heartbeat = tokio::time::sleep_until(next_beat);
        tokio::select! {
            () = ctx.cancelled() => break 'stream,
            () = shutdown.cancelled() => break 'stream,
            () = sink.closed() => break 'stream,
            changed = head.changed() => if changed.is_err() { break 'stream },
            signal = signals.recv() => match signal {
                Ok(Signal::Error(error)) => {
                    if !send(ERROR, json!({ "error": error })).await {
                        break 'stream;
                    }
                }
                Ok(Signal::Terminated(error)) => {
                    let _ = send(TERMINATED, json!({ "error": error })).await;
                    break 'stream;
                }
                // Signals missed by a slow stream are skipped; none can be closed while the
                // hub (which holds the sender) lives.
                Err(_) => {}
            },
            () = heartbeat => {
                let cursor = hub.cursor(slot, after.unwrap_or(0));
                if !send(HEARTBEAT, json!({ "cursor": cursor })).await {
                    break 'stream;
                }
                next_beat = Instant::now() + hub.config.heartbeat;
            }
        }
    }
    Ok(json!({ "_meta": {} }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hub(config: EventsConfig) -> Hub {
        Hub::new(vec![EventType::new("a"), EventType::new("b")], config)
    }

    fn read_all(hub: &Hub, name: &str, after: u64, max: usize) -> Batch {
        let slot = &hub.types[name];
        hub.read(
            slot,
            Read {
                args: &json!({}),
                after: Some(after),
                max_age_ms: None,
                max,
            },
        )
    }

    #[test]
    fn the_ring_keeps_its_count_and_bytes_and_says_what_it_dropped() {
        let hub = hub(EventsConfig {
            ring: 4,
            ring_bytes: 100,
            ..EventsConfig::default()
        });
        for n in 0..10 {
            hub.emit("a", None, json!({ "n": n })).unwrap();
        }
        let b = read_all(&hub, "a", 0, 100);
        assert!(b.truncated);
        assert_eq!(b.events.len(), 4);
        assert_eq!(b.events[0].data["n"], 6);
        assert_eq!(b.cursor, 10);
        // Bytes: a 60-byte occurrence leaves room for no other of its size.
        let big = "x".repeat(50);
        hub.emit("a", None, json!({ "s": big })).unwrap();
        hub.emit("a", None, json!({ "s": big })).unwrap();
        let ring = lock(&hub.types["a"].ring);
        assert_eq!(ring.items.len(), 1);
        assert!(ring.bytes <= 100);
        drop(ring);
        // The other type's ring is untouched.
        assert_eq!(lock(&hub.types["b"].ring).last, 0);
    }

    #[test]
    fn a_read_stops_at_its_maximum_and_says_there_is_more() {
        let hub = hub(EventsConfig::default());
        for n in 0..5 {
            hub.emit("a", None, json!({ "n": n })).unwrap();
        }
        let b = read_all(&hub, "a", 0, 2);
        assert_eq!(b.events.len(), 2);
        assert!(b.has_more);
        assert_eq!(b.cursor, 2);
        let b = read_all(&hub, "a", 2, 3);
        assert_eq!(b.events.len(), 3);
        assert!(!b.has_more);
        assert_eq!(b.cursor, 5);
    }

    #[test]
    fn emit_refuses_unknown_types_and_data_that_is_not_an_object() {
        let hub = hub(EventsConfig::default());
        assert_eq!(
            hub.emit("c", None, json!({})),
            Err(EmitError::UnknownEvent("c".into()))
        );
        assert_eq!(hub.emit("a", None, json!(1)), Err(EmitError::NotAnObject));
        assert_eq!(
            hub.emit("a", Some("up-1".into()), json!({})),
            Ok("up-1".into())
        );
    }

    #[test]
    fn a_filter_that_panics_matches_nothing() {
        #[allow(clippy::panic)]
        let kind = EventType::new("p").filter(|_, data| match data.get("boom") {
            Some(_) => panic!("boom"),
            None => true,
        });
        let hub = Hub::new(vec![kind], EventsConfig::default());
        hub.emit("p", None, json!({ "boom": 1 })).unwrap();
        hub.emit("p", None, json!({ "ok": 1 })).unwrap();
        let b = read_all(&hub, "p", 0, 10);
        assert_eq!(b.events.len(), 1);
        assert_eq!(b.events[0].data["ok"], 1);
        assert_eq!(b.cursor, 2);
    }

    #[test]
    fn cursors_name_one_type_of_one_instance() {
        let hub = hub(EventsConfig::default());
        hub.emit("a", None, json!({})).unwrap();
        let (a, b) = (&hub.types["a"], &hub.types["b"]);
        let c = hub.cursor(a, 1);
        assert_eq!(hub.position(a, &c, 1), Ok(Some(1)));
        assert!(hub.position(b, &c, 1).is_err());
        assert!(hub.position(a, &hub.cursor(a, 2), 1).is_err());
        let other = format!(
            "E{}.0.1",
            if hub.epoch == "00000000" {
                "00000001"
            } else {
                "00000000"
            }
        );
        assert_eq!(hub.position(a, &other, 1), Ok(None));
        for bad in [
            "",
            "E",
            "E..",
            "x",
            "E0.0.1",
            "Eabcdefgh.0.1",
            "E00000000.0.-1",
        ] {
            assert!(hub.position(a, bad, 1).is_err(), "{bad}");
        }
    }
}
