//! The MCP Events extension from the client's side (experimental, feature `events`).
//!
//! * [`Client::list_events`] pages `events/list`;
//! * [`Client::poll_events`] sends one `events/poll`;
//! * [`Client::subscribe_events`] runs the subscription loop for you and hands the occurrences
//!   over a bounded channel, as an [`EventSubscription`]: in poll mode it polls at the
//!   server's `nextPollMs` (never faster than [`SubscribeOptions::min_poll`], 1 s by
//!   default), polls again at once while `hasMore` brings events, and carries the cursor
//!   forward; in push mode it holds an `events/stream` request open, tracks the cursor from
//!   its events and heartbeats, and reopens it from the last cursor when the server ends it.
//!   Either way occurrences already seen are dropped by `eventId` (within a bounded window)
//!   and a gap (`truncated`) is reported as [`EventItem::Truncated`]. Dropping the
//!   subscription stops the loop and cancels the stream;
//! * [`Client::subscribe_webhook`] sends `events/subscribe` (webhook delivery: the server POSTs
//!   the occurrences to a URL of yours, signed with a secret of yours) and again to refresh it
//!   before its `refreshBefore`; [`Client::unsubscribe_webhook`] ends it. The receiving end is
//!   `duomcp::webhook::receiver` (with feature `http-server`).
//!
//! Both revisions, over every transport.

use super::engine::EventStream;
use super::error::ClientError;
use super::notify::ServerEvent;
use super::options::RequestOptions;
use super::{decode, Client};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

const LIST: &str = "events/list";
const POLL: &str = "events/poll";
const STREAM: &str = "events/stream";
const ACTIVE: &str = "notifications/events/active";
const EVENT: &str = "notifications/events/event";
const HEARTBEAT: &str = "notifications/events/heartbeat";
const SUBSCRIBE: &str = "events/subscribe";
const UNSUBSCRIBE: &str = "events/unsubscribe";

/// Upper bound on the pages [`Client::subscribe_events`] reads of `events/list` to find a
/// type's delivery modes (automatic mode).
const MAX_LIST_PAGES: usize = 100;
/// The longest wait between polls, whatever the server suggests.
const MAX_POLL: Duration = Duration::from_secs(300);
/// Upper bound on [`SubscribeOptions::buffer`] and [`SubscribeOptions::dedup_window`].
const MAX_BUFFER: usize = 65_536;

/// One declared event type, as `events/list` lists it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct EventTypeInfo {
    /// Its name.
    pub name: String,
    /// What it is about.
    #[serde(default)]
    pub description: Option<String>,
    /// The delivery modes offered (`"poll"`, `"push"`, …).
    #[serde(default)]
    pub delivery: Vec<String>,
    /// The JSON Schema of a subscription's `arguments`.
    #[serde(default)]
    pub input_schema: Option<Value>,
    /// The JSON Schema of an occurrence's `data`.
    #[serde(default)]
    pub payload_schema: Option<Value>,
}

/// One page of `events/list`.
///
/// ```no_run
/// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
/// let page = client.list_events(None).await?;
/// for t in &page.events {
///     println!("{} ({})", t.name, t.delivery.join(", "));
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListEventsResult {
    /// The types on this page.
    pub events: Vec<EventTypeInfo>,
    /// The cursor of the next page, if any.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// One occurrence of an event.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Occurrence {
    /// Its id, unique within its type.
    pub event_id: String,
    /// The event type's name.
    pub name: String,
    /// When it happened (ISO 8601).
    pub timestamp: String,
    /// Its payload.
    #[serde(default)]
    pub data: Value,
    /// Push mode: the cursor just after it.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// The result of one `events/poll`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PollResult {
    /// The occurrences, oldest first.
    pub events: Vec<Occurrence>,
    /// Where the next poll starts.
    pub cursor: String,
    /// Whether occurrences were lost before these (the cursor was older than what the
    /// server keeps).
    pub truncated: bool,
    /// Whether more are waiting.
    pub has_more: bool,
    /// When the server suggests polling again.
    pub next_poll: Duration,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawPoll {
    events: Vec<Occurrence>,
    cursor: String,
    #[serde(default)]
    truncated: bool,
    #[serde(default)]
    has_more: bool,
    #[serde(default)]
    next_poll_ms: Option<u64>,
}

/// The optional fields of an `events/poll` or `events/stream`.
///
/// ```
/// use duomcp::client::events::PollOptions;
/// use std::time::Duration;
/// let options = PollOptions { max_age: Some(Duration::from_secs(60)), max_events: Some(10) };
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PollOptions {
    /// `maxAgeMs`: skip occurrences older than this.
    pub max_age: Option<Duration>,
    /// `maxEvents`: at most this many occurrences per poll.
    pub max_events: Option<u64>,
}

/// How a subscription receives occurrences.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DeliveryMode {
    /// `events/poll` in a loop.
    Poll,
    /// An `events/stream` request held open.
    Push,
    /// Push when the type offers it, else poll (from `events/list`).
    #[default]
    Auto,
}

/// The settings of [`Client::subscribe_events`].
///
/// ```
/// use duomcp::client::events::{DeliveryMode, SubscribeOptions};
/// use std::time::Duration;
/// let options = SubscribeOptions::new(DeliveryMode::Poll).min_poll(Duration::from_millis(200));
/// # let _ = options;
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SubscribeOptions {
    /// The mode (default [`DeliveryMode::Auto`]).
    pub mode: DeliveryMode,
    /// Where to start: a cursor from an earlier subscription or poll (`None`: from now).
    pub cursor: Option<String>,
    /// The shortest wait between polls that bring no more events, whatever `nextPollMs`
    /// says (default 1 s).
    pub min_poll: Duration,
    /// The capacity of the channel of occurrences (default 256, at most 65 536).
    pub buffer: usize,
    /// How many recent `eventId`s are remembered to drop duplicates (default 1024, at most
    /// 65 536).
    pub dedup_window: usize,
    /// `maxAgeMs` and `maxEvents`.
    pub poll: PollOptions,
}

impl Default for SubscribeOptions {
    fn default() -> Self {
        Self::new(DeliveryMode::Auto)
    }
}

impl SubscribeOptions {
    /// The defaults, in `mode`.
    pub fn new(mode: DeliveryMode) -> Self {
        Self {
            mode,
            cursor: None,
            min_poll: Duration::from_secs(1),
            buffer: 256,
            dedup_window: 1024,
            poll: PollOptions::default(),
        }
    }

    /// Starts from `cursor`.
    pub fn cursor(mut self, cursor: impl Into<String>) -> Self {
        self.cursor = Some(cursor.into());
        self
    }

    /// Sets the floor of the polling interval.
    pub fn min_poll(mut self, floor: Duration) -> Self {
        self.min_poll = floor;
        self
    }
}

/// What a subscription yields.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum EventItem {
    /// An occurrence.
    Event(Occurrence),
    /// Occurrences were lost before what follows (the cursor was older than what the server
    /// keeps).
    Truncated,
}

/// A running subscription, from [`Client::subscribe_events`]. Dropping it stops its loop
/// (and cancels its `events/stream`).
#[derive(Debug)]
pub struct EventSubscription {
    rx: mpsc::Receiver<Result<EventItem, ClientError>>,
    cursor: Arc<Mutex<Option<String>>>,
    mode: DeliveryMode,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for EventSubscription {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl EventSubscription {
    /// The next item; an `Err` ends the subscription, and `None` follows it.
    pub async fn next(&mut self) -> Option<Result<EventItem, ClientError>> {
        self.rx.recv().await
    }

    /// The cursor after the last item handed over (to resume from, later).
    pub fn cursor(&self) -> Option<String> {
        crate::util::lock(&self.cursor).clone()
    }

    /// The mode in use ([`DeliveryMode::Poll`] or [`DeliveryMode::Push`]).
    pub fn mode(&self) -> DeliveryMode {
        self.mode
    }
}

fn sub_params(
    name: &str,
    arguments: &Value,
    cursor: Option<&str>,
    options: &PollOptions,
) -> Map<String, Value> {
    let mut p = Map::new();
    p.insert("name".into(), json!(name));
    p.insert("arguments".into(), arguments.clone());
    p.insert("cursor".into(), cursor.map_or(Value::Null, |c| json!(c)));
    if let Some(age) = options.max_age {
        p.insert(
            "maxAgeMs".into(),
            json!(u64::try_from(age.as_millis()).unwrap_or(u64::MAX)),
        );
    }
    if let Some(n) = options.max_events {
        p.insert("maxEvents".into(), json!(n));
    }
    p
}

/// How long a webhook subscription should last, as suggested to the server (`ttlMs`); the
/// server's grant, [`WebhookSubscription::refresh_before`], is what counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Ttl {
    /// `ttlMs` left out: the server's default.
    #[default]
    ServerDefault,
    /// `ttlMs`: this long (in whole milliseconds).
    Suggest(Duration),
    /// `ttlMs: null`: no expiry, if the server grants it.
    NoExpiry,
}

/// The settings of [`Client::subscribe_webhook`]: where the server delivers, the secret it
/// signs with, and where delivery starts.
///
/// ```
/// use duomcp::client::events::{Ttl, WebhookOptions};
/// use duomcp::webhook::Secret;
/// use std::time::Duration;
/// let secret = Secret::generate(); // keep it: the receiver verifies with it
/// let options = WebhookOptions::new("https://hooks.example.com/mcp", secret)
///     .ttl(Ttl::Suggest(Duration::from_secs(3600)))
///     .cursor("c42");
/// assert_eq!(options.cursor.as_deref(), Some("c42"));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WebhookOptions {
    /// `delivery.url`: where the server POSTs (`https://` for a server that follows the
    /// design).
    pub url: String,
    /// `delivery.secret`: what the server signs deliveries with. Make it with
    /// [`Secret::generate`](crate::webhook::Secret::generate); a new one on a refresh rotates
    /// it.
    pub secret: crate::webhook::Secret,
    /// `cursor`: the last cursor persisted (`None`: from now).
    pub cursor: Option<String>,
    /// `maxAgeMs`: skip occurrences older than this when replaying from `cursor`.
    pub max_age: Option<Duration>,
    /// `ttlMs`.
    pub ttl: Ttl,
}

impl WebhookOptions {
    /// Delivery to `url` signed with `secret`, from now, for the server's default lifetime.
    pub fn new(url: impl Into<String>, secret: crate::webhook::Secret) -> Self {
        WebhookOptions {
            url: url.into(),
            secret,
            cursor: None,
            max_age: None,
            ttl: Ttl::ServerDefault,
        }
    }

    /// Starts from `cursor`.
    pub fn cursor(mut self, cursor: impl Into<String>) -> Self {
        self.cursor = Some(cursor.into());
        self
    }

    /// Suggests a lifetime.
    pub fn ttl(mut self, ttl: Ttl) -> Self {
        self.ttl = ttl;
        self
    }

    /// Sets `maxAgeMs`.
    pub fn max_age(mut self, max_age: Duration) -> Self {
        self.max_age = Some(max_age);
        self
    }
}

/// How the server's deliveries to a webhook subscription have gone (`deliveryStatus`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DeliveryStatus {
    /// Whether the server is delivering (`false`: it had suspended delivery after failures,
    /// and the refresh that returned this resumes it).
    pub active: bool,
    /// When a delivery last succeeded (RFC 3339).
    #[serde(default, deserialize_with = "rfc3339_opt")]
    pub last_delivery_at: Option<String>,
    /// The category of the last failure (`connection_refused`, `timeout`, `tls_error`,
    /// `http_4xx`, `http_5xx`, `challenge_failed`).
    #[serde(default)]
    pub last_error: Option<String>,
    /// Since when deliveries have been failing (RFC 3339).
    #[serde(default, deserialize_with = "rfc3339_opt")]
    pub failed_since: Option<String>,
}

/// The result of `events/subscribe`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct WebhookSubscription {
    /// The server's id of the subscription: the `X-MCP-Subscription-Id` of its deliveries
    /// (route them to the secret with it).
    pub id: String,
    /// Subscribe again before this time (RFC 3339) to keep the subscription; `None`: it does
    /// not expire.
    #[serde(deserialize_with = "rfc3339_opt")]
    pub refresh_before: Option<String>,
    /// A cursor safe to persist (`None` for types that cannot replay).
    pub cursor: Option<String>,
    /// Whether delivery starts later than the cursor given (occurrences were skipped).
    #[serde(default)]
    pub truncated: bool,
    /// How deliveries have gone, when the server says (on a refresh).
    #[serde(default)]
    pub delivery_status: Option<DeliveryStatus>,
}

/// An optional RFC 3339 date-time, present (perhaps `null`); anything else is an error.
fn rfc3339_opt<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = Option::<String>::deserialize(d)?;
    match v {
        Some(t) if !is_rfc3339(&t) => Err(serde::de::Error::custom(format!(
            "`{}` is not an RFC 3339 date-time",
            crate::util::excerpt(&t, 64)
        ))),
        v => Ok(v),
    }
}

/// Whether `t` has the shape of an RFC 3339 date-time: `YYYY-MM-DDTHH:MM:SS`, an optional
/// fraction, then `Z` or `±HH:MM`. (The shape only: the date is not checked against the
/// calendar; nothing here does arithmetic on it.)
fn is_rfc3339(t: &str) -> bool {
    let b = t.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
    if !(digits(0..4)
        && b.get(4) == Some(&b'-')
        && digits(5..7)
        && b.get(7) == Some(&b'-')
        && digits(8..10)
        && matches!(b.get(10), Some(b'T' | b't' | b' '))
        && digits(11..13)
        && b.get(13) == Some(&b':')
        && digits(14..16)
        && b.get(16) == Some(&b':')
        && digits(17..19))
    {
        return false;
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    match b.get(i) {
        Some(b'Z' | b'z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            digits(i + 1..i + 3)
                && b.get(i + 3) == Some(&b':')
                && digits(i + 4..i + 6)
                && i + 6 == b.len()
        }
        _ => false,
    }
}

fn millis(d: Duration) -> Value {
    json!(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Client {
    /// Subscribes `options.url` to `name` with `arguments` (a JSON object) by `events/subscribe`
    /// (webhook delivery), or refreshes that subscription: the same call again, before
    /// [`refresh_before`](WebhookSubscription::refresh_before), with the last cursor
    /// persisted. The server needs an authenticated caller; it may first POST a verification
    /// challenge to the URL, which the receiver must echo
    /// (`duomcp::webhook::receiver` does).
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// use duomcp::client::events::{Ttl, WebhookOptions};
    /// use duomcp::webhook::Secret;
    /// use std::time::Duration;
    /// let secret = Secret::generate();
    /// let options = WebhookOptions::new("https://hooks.example.com/mcp", secret.clone())
    ///     .ttl(Ttl::Suggest(Duration::from_secs(3600)));
    /// let sub = client
    ///     .subscribe_webhook("incident.created", serde_json::json!({"severity": "P1"}), &options)
    ///     .await?;
    /// // Deliveries carry `X-MCP-Subscription-Id: {sub.id}`, signed with `secret`.
    /// println!("{} until {:?}, cursor {:?}", sub.id, sub.refresh_before, sub.cursor);
    /// # Ok(()) }
    /// ```
    pub async fn subscribe_webhook(
        &self,
        name: &str,
        arguments: Value,
        options: &WebhookOptions,
    ) -> Result<WebhookSubscription, ClientError> {
        if !arguments.is_object() {
            return Err(ClientError::InvalidArguments(
                "the arguments of an event subscription must be a JSON object".into(),
            ));
        }
        let mut p = Map::new();
        p.insert("name".into(), json!(name));
        p.insert("arguments".into(), arguments);
        p.insert(
            "delivery".into(),
            json!({"mode": "webhook", "url": options.url, "secret": options.secret.expose()}),
        );
        p.insert(
            "cursor".into(),
            options.cursor.as_ref().map_or(Value::Null, |c| json!(c)),
        );
        if let Some(age) = options.max_age {
            p.insert("maxAgeMs".into(), millis(age));
        }
        match options.ttl {
            Ttl::ServerDefault => {}
            Ttl::Suggest(d) => {
                p.insert("ttlMs".into(), millis(d));
            }
            Ttl::NoExpiry => {
                p.insert("ttlMs".into(), Value::Null);
            }
        }
        let v = self
            .request_object(SUBSCRIBE, p, RequestOptions::default())
            .await?;
        decode(SUBSCRIBE, v)
    }

    /// Ends the webhook subscription of `url` to `name` with `arguments` by
    /// `events/unsubscribe` (the same three as [`subscribe_webhook`](Self::subscribe_webhook)
    /// was given; the server finds the subscription by them and by who is calling).
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// client
    ///     .unsubscribe_webhook("incident.created", serde_json::json!({"severity": "P1"}), "https://hooks.example.com/mcp")
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn unsubscribe_webhook(
        &self,
        name: &str,
        arguments: Value,
        url: &str,
    ) -> Result<(), ClientError> {
        if !arguments.is_object() {
            return Err(ClientError::InvalidArguments(
                "the arguments of an event subscription must be a JSON object".into(),
            ));
        }
        let mut p = Map::new();
        p.insert("name".into(), json!(name));
        p.insert("arguments".into(), arguments);
        p.insert("delivery".into(), json!({ "url": url }));
        self.request_object(UNSUBSCRIBE, p, RequestOptions::default())
            .await?;
        Ok(())
    }

    /// One page of `events/list` (the first when `cursor` is `None`).
    pub async fn list_events(
        &self,
        cursor: Option<String>,
    ) -> Result<ListEventsResult, ClientError> {
        let v = self
            .request_object(LIST, super::list_params(cursor), RequestOptions::default())
            .await?;
        decode(LIST, v)
    }

    /// One `events/poll` of `name` with `arguments` (a JSON object), from `cursor` (`None`:
    /// from now; the result carries only the cursor).
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// use duomcp::client::events::PollOptions;
    /// let first = client.poll_events("demo.tick", serde_json::json!({}), None, PollOptions::default()).await?;
    /// let next = client.poll_events("demo.tick", serde_json::json!({}), Some(first.cursor), PollOptions::default()).await?;
    /// for e in next.events {
    ///     println!("{} {}", e.event_id, e.data);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn poll_events(
        &self,
        name: &str,
        arguments: Value,
        cursor: Option<String>,
        options: PollOptions,
    ) -> Result<PollResult, ClientError> {
        let params = sub_params(name, &arguments, cursor.as_deref(), &options);
        let v = self
            .request_object(POLL, params, RequestOptions::default())
            .await?;
        let raw: RawPoll = decode(POLL, v)?;
        Ok(PollResult {
            events: raw.events,
            cursor: raw.cursor,
            truncated: raw.truncated,
            has_more: raw.has_more,
            next_poll: Duration::from_millis(raw.next_poll_ms.unwrap_or(0)),
        })
    }

    /// Subscribes to `name` with `arguments` and runs the loop in a task (see the
    /// [module](self)); occurrences arrive in order, without duplicates.
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// use duomcp::client::events::{DeliveryMode, EventItem, SubscribeOptions};
    /// let mut sub = client
    ///     .subscribe_events("demo.tick", serde_json::json!({}), SubscribeOptions::new(DeliveryMode::Auto))
    ///     .await?;
    /// while let Some(item) = sub.next().await {
    ///     if let EventItem::Event(e) = item? {
    ///         println!("{}", e.data);
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn subscribe_events(
        &self,
        name: &str,
        arguments: Value,
        options: SubscribeOptions,
    ) -> Result<EventSubscription, ClientError> {
        if !arguments.is_object() {
            return Err(ClientError::InvalidArguments(
                "the arguments of an event subscription must be a JSON object".into(),
            ));
        }
        let mode = match options.mode {
            DeliveryMode::Auto => self.delivery_of(name).await?,
            m => m,
        };
        let (tx, rx) = mpsc::channel(options.buffer.clamp(1, MAX_BUFFER));
        let cursor = Arc::new(Mutex::new(options.cursor.clone()));
        let state = Loop {
            client: self.clone(),
            name: name.to_owned(),
            arguments,
            options,
            cursor: cursor.clone(),
            seen: Seen::default(),
            tx,
        };
        let task = match mode {
            DeliveryMode::Push => tokio::spawn(state.push()),
            _ => tokio::spawn(state.poll()),
        };
        Ok(EventSubscription {
            rx,
            cursor,
            mode: if mode == DeliveryMode::Push {
                DeliveryMode::Push
            } else {
                DeliveryMode::Poll
            },
            task,
        })
    }

    /// Push when `name` offers it, else poll.
    async fn delivery_of(&self, name: &str) -> Result<DeliveryMode, ClientError> {
        let mut cursor = None;
        for _ in 0..MAX_LIST_PAGES {
            let page = self.list_events(cursor).await?;
            if let Some(t) = page.events.iter().find(|t| t.name == name) {
                let push = t.delivery.iter().any(|d| d == "push");
                return Ok(if push {
                    DeliveryMode::Push
                } else {
                    DeliveryMode::Poll
                });
            }
            match page.next_cursor {
                Some(c) if !c.is_empty() => cursor = Some(c),
                _ => break,
            }
        }
        Err(ClientError::InvalidArguments(format!(
            "the server lists no event `{}`",
            crate::util::excerpt(name, crate::util::EXCERPT_CHARS)
        )))
    }
}

/// The recent `eventId`s, bounded.
#[derive(Default)]
struct Seen {
    order: VecDeque<String>,
    set: HashSet<String>,
}

impl Seen {
    /// Whether `id` is new (then it is remembered, the oldest forgotten past `window`).
    fn admit(&mut self, id: &str, window: usize) -> bool {
        if self.set.contains(id) {
            return false;
        }
        self.order.push_back(id.to_owned());
        self.set.insert(id.to_owned());
        while self.order.len() > window.clamp(1, MAX_BUFFER) {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
        true
    }
}

struct Loop {
    client: Client,
    name: String,
    arguments: Value,
    options: SubscribeOptions,
    cursor: Arc<Mutex<Option<String>>>,
    seen: Seen,
    tx: mpsc::Sender<Result<EventItem, ClientError>>,
}

impl Loop {
    fn set_cursor(&self, c: String) {
        *crate::util::lock(&self.cursor) = Some(c);
    }

    fn current(&self) -> Option<String> {
        crate::util::lock(&self.cursor).clone()
    }

    /// Hands `e` over unless seen; `false` when the reader is gone.
    async fn hand(&mut self, e: Occurrence) -> bool {
        if !self.seen.admit(&e.event_id, self.options.dedup_window) {
            return true;
        }
        self.tx.send(Ok(EventItem::Event(e))).await.is_ok()
    }

    async fn poll(mut self) {
        let mut cursor = self.current();
        loop {
            let r = self
                .client
                .poll_events(
                    &self.name,
                    self.arguments.clone(),
                    cursor.clone(),
                    self.options.poll.clone(),
                )
                .await;
            let r = match r {
                Ok(r) => r,
                Err(e) => {
                    let _ = self.tx.send(Err(e)).await;
                    return;
                }
            };
            if r.truncated && self.tx.send(Ok(EventItem::Truncated)).await.is_err() {
                return;
            }
            let brought = !r.events.is_empty();
            for e in r.events {
                if !self.hand(e).await {
                    return;
                }
            }
            let moved = cursor.as_deref() != Some(r.cursor.as_str());
            cursor = Some(r.cursor.clone());
            self.set_cursor(r.cursor);
            // At once while more events wait; otherwise at the server's pace, never faster
            // than the floor (a server answering `nextPollMs: 0` forever cannot spin us).
            if !(r.has_more && brought && moved) {
                let wait = r
                    .next_poll
                    .clamp(self.options.min_poll, MAX_POLL.max(self.options.min_poll));
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = self.tx.closed() => return,
                }
            }
        }
    }

    async fn push(mut self) {
        loop {
            let params = sub_params(
                &self.name,
                &self.arguments,
                self.current().as_deref(),
                &self.options.poll,
            );
            let stream = match self.client.inner.open_events_stream(STREAM, params).await {
                Ok(s) => s,
                Err(e) => {
                    let _ = self.tx.send(Err(e)).await;
                    return;
                }
            };
            match self.read_stream(stream).await {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => {
                    let _ = self.tx.send(Err(e)).await;
                    return;
                }
            }
            // The server ended the stream: reopen it from the last cursor, not faster than
            // the floor.
            tokio::select! {
                () = tokio::time::sleep(self.options.min_poll) => {}
                () = self.tx.closed() => return,
            }
        }
    }

    /// Reads one stream: `Ok(true)` to reopen it (the server ended it gracefully, or
    /// notifications were dropped), `Ok(false)` when the reader is gone.
    async fn read_stream(&mut self, mut stream: EventStream) -> Result<bool, ClientError> {
        loop {
            let n = tokio::select! {
                n = stream.rx.recv() => n,
                () = self.tx.closed() => return Ok(false),
            };
            if stream.overflowed.load(std::sync::atomic::Ordering::SeqCst) {
                // Notifications were dropped behind what is buffered: start again from the
                // cursor of what was handed over (duplicates are dropped by `eventId`).
                return Ok(true);
            }
            let Some(n) = n else {
                // The pump ended: it says why.
                return match (&mut stream.ended).await {
                    Ok(None) => Ok(true),
                    Ok(Some(e)) => Err(e),
                    Err(_) => Ok(true),
                };
            };
            let ServerEvent::Other { method, params } = n else {
                continue;
            };
            match method.as_str() {
                EVENT => {
                    let e: Occurrence = serde_json::from_value(params)
                        .map_err(|e| ClientError::Protocol(format!("malformed {EVENT}: {e}")))?;
                    let c = e.cursor.clone();
                    if !self.hand(e).await {
                        return Ok(false);
                    }
                    if let Some(c) = c {
                        self.set_cursor(c);
                    }
                }
                ACTIVE | HEARTBEAT => {
                    if method == ACTIVE
                        && params.get("truncated").and_then(Value::as_bool) == Some(true)
                        && self.tx.send(Ok(EventItem::Truncated)).await.is_err()
                    {
                        return Ok(false);
                    }
                    match params.get("cursor") {
                        Some(Value::String(c)) => self.set_cursor(c.clone()),
                        Some(Value::Null) | None => {}
                        Some(_) => {
                            return Err(ClientError::Protocol(format!(
                                "malformed {method}: the cursor is not a string"
                            )))
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_shapes() {
        for ok in [
            "2026-02-19T16:30:00Z",
            "2026-02-19t16:30:00.123z",
            "2026-02-19T16:30:00+02:00",
            "2026-02-19 16:30:00.5-05:30",
        ] {
            assert!(is_rfc3339(ok), "{ok}");
        }
        for bad in [
            "",
            "2026-02-19",
            "2026-02-19T16:30:00",
            "2026-02-19T16:30:00.Z",
            "2026-02-19T16:30:00+0200",
            "2026-02-19T16:30:00Zjunk",
            "1739980800",
            "2026-02-19T16:30:00+02:0é",
        ] {
            assert!(!is_rfc3339(bad), "{bad}");
        }
    }
}
