//! The MCP Events extension from the client's side (experimental, feature `events`).
//!
//! Every method first checks that the server declared the extension (`capabilities.events`, or
//! `capabilities.extensions["io.modelcontextprotocol/events"]`): to a server that did not, no
//! `events/*` request is sent, and the call fails with [`ClientError::Unsupported`].
//!
//! * [`Client::list_events`] pages `events/list`; [`Client::event_types`] reads every page and
//!   reads them again whenever the server sends `notifications/events/list_changed`;
//! * [`Client::poll_events`] sends one `events/poll`;
//! * [`Client::subscribe_events`] runs the subscription loop for you and hands the occurrences
//!   over a bounded channel, as an [`EventSubscription`]: in poll mode it polls at the
//!   server's `nextPollMs` (never faster than [`SubscribeOptions::min_poll`], 1 s by
//!   default), polls again at once while `hasMore` brings events, and carries the cursor
//!   forward; in push mode it holds an `events/stream` request open, tracks the cursor from
//!   its events and heartbeats, and reopens it from the last cursor when the server ends it or
//!   falls silent for longer than [`SubscribeOptions::stale_after`] (by default twice the
//!   longest heartbeat interval seen). A type whose server gives `cursor: null` (or none: it
//!   cannot replay) is never sent a cursor back: it is polled and reopened with `null`.
//!   Either way occurrences already seen are dropped by `eventId` (within a bounded window)
//!   and a gap (`truncated`) is reported as [`EventItem::Truncated`]. Dropping the
//!   subscription stops the loop and cancels the stream;
//! * [`Client::subscribe_webhook`] sends `events/subscribe` (webhook delivery: the server POSTs
//!   the occurrences to a URL of yours, signed with a secret of yours) and again to refresh it
//!   before its `refreshBefore`; [`Client::keep_webhook`] does that refreshing for you until the
//!   [`KeptWebhook`] is dropped; [`Client::unsubscribe_webhook`] ends it. The receiving end is
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
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::{mpsc, watch};

/// The extension's id, under which a 2026-07-28 server may declare it in
/// `capabilities.extensions` (the design's `capabilities.events` is accepted as well).
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/events";

const LIST: &str = "events/list";
const LIST_CHANGED: &str = "notifications/events/list_changed";
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
/// Push: how long a stream may be silent before any heartbeat was seen (twice the 30 s within
/// which the design says a server SHOULD send one); also the ceiling of the derived limit.
const STALE_CEILING: Duration = Duration::from_secs(60);
/// Push: the floor of the derived silence limit (jitter on a fast heartbeat is no death).
const STALE_FLOOR: Duration = Duration::from_secs(1);
/// Push: the floor of an explicit [`SubscribeOptions::stale_after`].
const STALE_MIN: Duration = Duration::from_millis(50);
/// [`Client::event_types`]: at most one re-list this often, however many notifications come.
const RELIST_EVERY: Duration = Duration::from_secs(1);
/// [`Client::keep_webhook`]: never refresh more often than this, whatever the grant.
const REFRESH_FLOOR: Duration = Duration::from_secs(1);
/// [`Client::keep_webhook`]: the longest wait between refreshes (and the cadence of a
/// no-expiry grant's health check).
const REFRESH_CEILING: Duration = Duration::from_secs(3600);
/// [`Client::keep_webhook`]: the longest wait before retrying a failed refresh.
const RETRY_CEILING: Duration = Duration::from_secs(60);
/// [`KeptWebhook::next`]: outcomes kept unread (while it is full, later ones are dropped).
const KEPT_OUTCOMES: usize = 16;

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
    /// Push mode: the cursor just after it (`None`: `null` or absent, the type cannot replay).
    #[serde(default)]
    pub cursor: Option<String>,
}

/// The result of one `events/poll`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PollResult {
    /// The occurrences, oldest first.
    pub events: Vec<Occurrence>,
    /// Where the next poll starts; `None` when the server gave `cursor: null` or none (the
    /// type cannot replay: poll again with `None`).
    pub cursor: Option<String>,
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
    #[serde(default)]
    cursor: Option<String>,
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
    /// Push mode: after this long without an event or a heartbeat the stream is taken for dead,
    /// cancelled, and reopened from the last cursor. `None` (the default): twice the longest
    /// heartbeat interval seen on the subscription's streams (the wait for a heartbeat),
    /// between 1 s and 60 s; 60 s until a heartbeat was seen. An explicit value is used as it
    /// is (at least 50 ms).
    pub stale_after: Option<Duration>,
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
            stale_after: None,
        }
    }

    /// Push mode: reopens a stream silent for `after` (see
    /// [`stale_after`](Self::stale_after)).
    pub fn stale_after(mut self, after: Duration) -> Self {
        self.stale_after = Some(after);
        self
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
    /// keeps). Never for a type that cannot replay (`cursor: null`): the design has it ignored.
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

/// The server's event types kept current, from [`Client::event_types`]. Dropping it stops
/// listening for `notifications/events/list_changed`.
#[derive(Debug)]
pub struct EventTypes {
    rx: watch::Receiver<Vec<EventTypeInfo>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for EventTypes {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl EventTypes {
    /// The types as last listed.
    pub fn current(&self) -> Vec<EventTypeInfo> {
        self.rx.borrow().clone()
    }

    /// The type called `name`, as last listed.
    pub fn get(&self, name: &str) -> Option<EventTypeInfo> {
        self.rx.borrow().iter().find(|t| t.name == name).cloned()
    }

    /// Waits for the next re-list (after a `list_changed`) and returns it; `None` once the
    /// connection is closed.
    pub async fn changed(&mut self) -> Option<Vec<EventTypeInfo>> {
        self.rx.changed().await.ok()?;
        Some(self.rx.borrow_and_update().clone())
    }
}

/// What [`KeptWebhook`] and its refresh task share.
#[derive(Debug)]
struct Kept {
    grant: WebhookSubscription,
    cursor: Option<String>,
}

/// A webhook subscription kept alive by [`Client::keep_webhook`]. Dropping it stops refreshing.
pub struct KeptWebhook {
    client: Client,
    name: String,
    arguments: Value,
    url: String,
    shared: Arc<Mutex<Kept>>,
    rx: mpsc::Receiver<Result<WebhookSubscription, ClientError>>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for KeptWebhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeptWebhook")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("state", &self.shared)
            .finish_non_exhaustive()
    }
}

impl Drop for KeptWebhook {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl KeptWebhook {
    /// The last grant: the first subscription's, then each successful refresh's.
    pub fn subscription(&self) -> WebhookSubscription {
        crate::util::lock(&self.shared).grant.clone()
    }

    /// The cursor the next refresh sends (`None`: `null`, from now; always so for a type that
    /// cannot replay).
    pub fn cursor(&self) -> Option<String> {
        crate::util::lock(&self.shared).cursor.clone()
    }

    /// Persists a cursor the receiver got in a delivery (or a `gap` envelope), for the next
    /// refresh; `None` for a delivery whose cursor was `null`.
    pub fn set_cursor(&self, cursor: Option<String>) {
        crate::util::lock(&self.shared).cursor = cursor;
    }

    /// The outcome of the next refresh: the new grant, or why it failed (retried unless final;
    /// after a final one the refreshing stops and `None` follows). Outcomes not read are kept
    /// up to 16; later ones are dropped.
    pub async fn next(&mut self) -> Option<Result<WebhookSubscription, ClientError>> {
        self.rx.recv().await
    }

    /// Stops refreshing and ends the subscription by `events/unsubscribe`.
    pub async fn unsubscribe(self) -> Result<(), ClientError> {
        self.task.abort();
        self.client
            .unsubscribe_webhook(&self.name, self.arguments.clone(), &self.url)
            .await
    }
}

/// The refresh loop of [`Client::keep_webhook`].
async fn keep_refreshing(
    client: Client,
    name: String,
    arguments: Value,
    mut options: WebhookOptions,
    shared: Arc<Mutex<Kept>>,
    tx: mpsc::Sender<Result<WebhookSubscription, ClientError>>,
) {
    let mut failures: u32 = 0;
    loop {
        let wait = if failures == 0 {
            let grant = crate::util::lock(&shared).grant.refresh_before.clone();
            refresh_wait(grant.as_deref(), SystemTime::now())
        } else {
            (REFRESH_FLOOR * 2u32.saturating_pow(failures.min(8) - 1)).min(RETRY_CEILING)
        };
        tokio::time::sleep(wait).await;
        options.cursor = crate::util::lock(&shared).cursor.clone();
        match client
            .subscribe_webhook(&name, arguments.clone(), &options)
            .await
        {
            Ok(grant) => {
                failures = 0;
                {
                    let mut s = crate::util::lock(&shared);
                    s.cursor = grant.cursor.clone();
                    s.grant = grant.clone();
                }
                let _ = tx.try_send(Ok(grant));
            }
            Err(e) => {
                let last = refresh_is_final(&e);
                tracing::warn!("refreshing the webhook subscription failed: {e}");
                let _ = tx.try_send(Err(e));
                if last {
                    return;
                }
                failures = failures.saturating_add(1);
            }
        }
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

/// The instant an RFC 3339 date-time names (`None` when it is not one, or out of range).
fn rfc3339_time(t: &str) -> Option<SystemTime> {
    if !is_rfc3339(t) {
        return None;
    }
    let num = |r: std::ops::Range<usize>| t.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let b = t.as_bytes();
    let mut i = 19;
    let mut nanos: u32 = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let mut scale = 100_000_000;
        while let Some(c) = b.get(i).filter(|c| c.is_ascii_digit()) {
            nanos += u32::from(c - b'0') * scale;
            scale /= 10;
            i += 1;
        }
    }
    let offset = match b.get(i) {
        Some(b'+' | b'-') => {
            let o = num(i + 1..i + 3)? * 3600 + num(i + 4..i + 6)? * 60;
            if b[i] == b'-' {
                -o
            } else {
                o
            }
        }
        _ => 0,
    };
    // Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
    let yy = if mo <= 2 { y - 1 } else { y };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let doy = (153 * ((mo + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset;
    let at = if secs >= 0 {
        SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(u64::try_from(secs).ok()?))?
    } else {
        SystemTime::UNIX_EPOCH.checked_sub(Duration::from_secs(secs.unsigned_abs()))?
    };
    at.checked_add(Duration::from_nanos(u64::from(nanos)))
}

/// How long [`Client::keep_webhook`] waits before refreshing a grant of `refresh_before`: half
/// the time left (so a clock skew or a slow answer still lands before it), at least
/// [`REFRESH_FLOOR`], at most [`REFRESH_CEILING`] (also for no expiry, `None`: the health check).
fn refresh_wait(refresh_before: Option<&str>, now: SystemTime) -> Duration {
    let Some(at) = refresh_before.and_then(rfc3339_time) else {
        return REFRESH_CEILING;
    };
    let left = at.duration_since(now).unwrap_or(Duration::ZERO);
    (left / 2).clamp(REFRESH_FLOOR, REFRESH_CEILING)
}

/// Whether a failed refresh is worth retrying: not when the server refused the subscription
/// itself (not found, forbidden, invalid, unsupported) or the connection is gone.
fn refresh_is_final(e: &ClientError) -> bool {
    match e {
        ClientError::Rpc { error, .. } => {
            matches!(error.code, -32602 | -32011 | -32012 | -32014)
        }
        ClientError::Closed { .. }
        | ClientError::Unsupported(_)
        | ClientError::InvalidArguments(_) => true,
        _ => false,
    }
}

fn millis(d: Duration) -> Value {
    json!(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Client {
    /// Whether the server declared the events extension: `capabilities.events` (the design's
    /// form) or `capabilities.extensions["io.modelcontextprotocol/events"]`. Every events
    /// method checks it first and sends nothing to a server that did not.
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) {
    /// if !client.offers_events() {
    ///     eprintln!("no events here");
    /// }
    /// # }
    /// ```
    pub fn offers_events(&self) -> bool {
        let caps = self.server_capabilities();
        caps.extra.contains_key("events") || caps.has_extension(EXTENSION_ID)
    }

    /// [`ClientError::Unsupported`] unless [`offers_events`](Self::offers_events).
    fn require_events(&self, method: &str) -> Result<(), ClientError> {
        if self.offers_events() {
            Ok(())
        } else {
            Err(ClientError::Unsupported(format!(
                "{method}: the server does not declare the events extension \
                 (neither `capabilities.events` nor `capabilities.extensions[\"{EXTENSION_ID}\"]`)"
            )))
        }
    }

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
        self.require_events(SUBSCRIBE)?;
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
        self.require_events(UNSUBSCRIBE)?;
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

    /// Every page of `events/list` (at most 100).
    async fn list_all_events(&self) -> Result<Vec<EventTypeInfo>, ClientError> {
        let mut all = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_LIST_PAGES {
            let page = self.list_events(cursor).await?;
            all.extend(page.events);
            match page.next_cursor {
                Some(c) if !c.is_empty() => cursor = Some(c),
                _ => break,
            }
        }
        Ok(all)
    }

    /// The server's event types, kept current: every page of `events/list` now, and again
    /// whenever the server sends `notifications/events/list_changed` (at most once a second;
    /// notifications meanwhile are folded into one re-list). A re-list that fails keeps the
    /// previous listing (and is logged). Dropping the [`EventTypes`] stops it.
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// let mut types = client.event_types().await?;
    /// println!("{} types", types.current().len());
    /// while let Some(now) = types.changed().await {
    ///     println!("the server lists {} types now", now.len());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn event_types(&self) -> Result<EventTypes, ClientError> {
        self.require_events(LIST)?;
        // Listening before the first listing: a change during it is not missed.
        let mut notes = self.notifications();
        let first = self.list_all_events().await?;
        let (tx, rx) = watch::channel(first);
        let client = self.clone();
        let task = tokio::spawn(async move {
            let mut last = Instant::now();
            loop {
                match notes.recv().await {
                    None => return,
                    Some(ServerEvent::Other { method, .. }) if method == LIST_CHANGED => {}
                    Some(_) => continue,
                }
                tokio::time::sleep_until((last + RELIST_EVERY).into()).await;
                // What arrived meanwhile is answered by this re-list.
                while notes.try_recv().is_some() {}
                last = Instant::now();
                match client.list_all_events().await {
                    Ok(types) => {
                        if tx.send(types).is_err() {
                            return;
                        }
                    }
                    Err(ClientError::Closed { .. }) => return,
                    Err(e) => tracing::warn!("re-reading events/list after list_changed: {e}"),
                }
            }
        });
        Ok(EventTypes { rx, task })
    }

    /// Subscribes `options.url` to `name` with `arguments` by `events/subscribe`, as
    /// [`subscribe_webhook`](Self::subscribe_webhook) does, and keeps the subscription alive:
    /// a task subscribes again with the same url, name, arguments, secret and `ttlMs`, and the
    /// last cursor (the grant's, or one handed to [`KeptWebhook::set_cursor`]), when half the
    /// time to `refreshBefore` has passed (never more often than once a second; hourly for a
    /// grant of no expiry, as a health check). A failed refresh is retried (after 1 s, 2 s, …,
    /// at most a minute apart) unless the server refused the subscription itself (`-32602`,
    /// `-32011`, `-32012`, `-32014`) or the connection closed. Dropping the [`KeptWebhook`] stops
    /// refreshing (the server lets the subscription lapse at its TTL);
    /// [`KeptWebhook::unsubscribe`] ends it at once.
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// use duomcp::client::events::WebhookOptions;
    /// use duomcp::webhook::Secret;
    /// let options = WebhookOptions::new("https://hooks.example.com/mcp", Secret::generate());
    /// let mut kept = client
    ///     .keep_webhook("incident.created", serde_json::json!({}), options)
    ///     .await?;
    /// println!("{} until {:?}", kept.subscription().id, kept.subscription().refresh_before);
    /// while let Some(refresh) = kept.next().await {
    ///     match refresh {
    ///         Ok(grant) => println!("refreshed until {:?}", grant.refresh_before),
    ///         Err(e) => eprintln!("refresh failed: {e}"),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn keep_webhook(
        &self,
        name: &str,
        arguments: Value,
        options: WebhookOptions,
    ) -> Result<KeptWebhook, ClientError> {
        let first = self
            .subscribe_webhook(name, arguments.clone(), &options)
            .await?;
        let shared = Arc::new(Mutex::new(Kept {
            cursor: first.cursor.clone(),
            grant: first,
        }));
        let (tx, rx) = mpsc::channel(KEPT_OUTCOMES);
        let task = tokio::spawn(keep_refreshing(
            self.clone(),
            name.to_owned(),
            arguments.clone(),
            options.clone(),
            shared.clone(),
            tx,
        ));
        Ok(KeptWebhook {
            client: self.clone(),
            name: name.to_owned(),
            arguments,
            url: options.url,
            shared,
            rx,
            task,
        })
    }

    /// One page of `events/list` (the first when `cursor` is `None`).
    pub async fn list_events(
        &self,
        cursor: Option<String>,
    ) -> Result<ListEventsResult, ClientError> {
        self.require_events(LIST)?;
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
    /// let next = client.poll_events("demo.tick", serde_json::json!({}), first.cursor, PollOptions::default()).await?;
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
        self.require_events(POLL)?;
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
        self.require_events(if options.mode == DeliveryMode::Push {
            STREAM
        } else {
            POLL
        })?;
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
            heartbeat_gap: None,
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
    /// Push: the longest wait for a heartbeat seen so far, on any of the streams.
    heartbeat_gap: Option<Duration>,
    tx: mpsc::Sender<Result<EventItem, ClientError>>,
}

/// What to do after one `events/stream`.
enum Then {
    /// Reopen it after [`SubscribeOptions::min_poll`] (the server ended it).
    Reopen,
    /// Reopen it at once (it fell silent, or notifications were dropped).
    ReopenNow,
    /// Stop: the reader is gone.
    Stop,
}

impl Loop {
    /// Persists the cursor a frame carried: `None` for `null` or absent (nothing to replay
    /// from; the next request sends `null`).
    fn set_cursor(&self, c: Option<String>) {
        *crate::util::lock(&self.cursor) = c;
    }

    fn current(&self) -> Option<String> {
        crate::util::lock(&self.cursor).clone()
    }

    /// Push: how long a stream may be silent (see [`SubscribeOptions::stale_after`]).
    fn stale_after(&self) -> Duration {
        match (self.options.stale_after, self.heartbeat_gap) {
            (Some(d), _) => d.max(STALE_MIN),
            (None, Some(gap)) => gap.saturating_mul(2).clamp(STALE_FLOOR, STALE_CEILING),
            (None, None) => STALE_CEILING,
        }
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
            // A type that cannot replay (`cursor: null`) has no position to have skipped
            // past: its `truncated` is ignored, as the design says.
            if r.truncated
                && r.cursor.is_some()
                && self.tx.send(Ok(EventItem::Truncated)).await.is_err()
            {
                return;
            }
            let brought = !r.events.is_empty();
            for e in r.events {
                if !self.hand(e).await {
                    return;
                }
            }
            let moved = cursor != r.cursor;
            // A `null` (or absent) cursor is not kept: the next poll sends `null` again.
            cursor.clone_from(&r.cursor);
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
                Ok(Then::Reopen) => {}
                Ok(Then::ReopenNow) => continue,
                Ok(Then::Stop) => return,
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

    /// Reads one stream until it ends, falls silent, or the reader is gone. Dropping `stream`
    /// (on return) cancels it on the wire.
    async fn read_stream(&mut self, mut stream: EventStream) -> Result<Then, ClientError> {
        loop {
            // Silence is counted from when the loop waits again, not from the last frame: a
            // reader slow to take what was handed over does not make the stream look dead,
            // and a frame already buffered is taken first.
            let waiting_since = Instant::now();
            let silent_until = waiting_since + self.stale_after();
            let n = tokio::select! {
                biased;
                n = stream.rx.recv() => n,
                () = self.tx.closed() => return Ok(Then::Stop),
                () = tokio::time::sleep_until(silent_until.into()) => {
                    // Neither an event nor a heartbeat for too long: the stream is dead.
                    tracing::debug!(
                        name = %crate::util::excerpt(&self.name, crate::util::EXCERPT_CHARS),
                        silent = ?self.stale_after(),
                        "events/stream fell silent; reopening it from the last cursor"
                    );
                    return Ok(Then::ReopenNow);
                }
            };
            if stream.overflowed.load(std::sync::atomic::Ordering::SeqCst) {
                // Notifications were dropped behind what is buffered: start again from the
                // cursor of what was handed over (duplicates are dropped by `eventId`).
                return Ok(Then::ReopenNow);
            }
            let Some(n) = n else {
                // The pump ended: it says why.
                return match (&mut stream.ended).await {
                    Ok(None) | Err(_) => Ok(Then::Reopen),
                    Ok(Some(e)) => Err(e),
                };
            };
            let quiet = waiting_since.elapsed();
            let ServerEvent::Other { method, params } = n else {
                continue;
            };
            match method.as_str() {
                EVENT => {
                    let e: Occurrence = serde_json::from_value(params)
                        .map_err(|e| ClientError::Protocol(format!("malformed {EVENT}: {e}")))?;
                    let c = e.cursor.clone();
                    if !self.hand(e).await {
                        return Ok(Then::Stop);
                    }
                    self.set_cursor(c);
                }
                ACTIVE | HEARTBEAT => {
                    if method == HEARTBEAT {
                        self.heartbeat_gap =
                            Some(self.heartbeat_gap.map_or(quiet, |g| g.max(quiet)));
                    }
                    // A type that cannot replay (`cursor: null`) has no position to have
                    // skipped past: its `truncated` is ignored, as the design says.
                    if method == ACTIVE
                        && params.get("truncated").and_then(Value::as_bool) == Some(true)
                        && params.get("cursor").is_some_and(Value::is_string)
                        && self.tx.send(Ok(EventItem::Truncated)).await.is_err()
                    {
                        return Ok(Then::Stop);
                    }
                    match params.get("cursor") {
                        Some(Value::String(c)) => self.set_cursor(Some(c.clone())),
                        Some(Value::Null) | None => self.set_cursor(None),
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

    #[test]
    fn rfc3339_instants() {
        let at = |t: &str| {
            rfc3339_time(t)
                .and_then(|s| s.duration_since(SystemTime::UNIX_EPOCH).ok())
                .map(|d| d.as_millis())
        };
        assert_eq!(at("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(at("2026-02-19T16:30:00Z"), Some(1_771_518_600_000));
        assert_eq!(at("2026-02-19T18:30:00.250+02:00"), Some(1_771_518_600_250));
        assert_eq!(at("2000-02-29T00:00:00-00:30"), Some(951_784_200_000));
        assert_eq!(at("2026-13-01T00:00:00Z"), None);
        assert_eq!(at("soon"), None);
        assert!(rfc3339_time("1969-12-31T23:59:59Z").is_some());
    }

    #[test]
    fn refresh_waits_half_the_grant_within_bounds() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_771_518_600);
        let wait = |t: Option<&str>| refresh_wait(t, now);
        assert_eq!(
            wait(Some("2026-02-19T16:30:05Z")),
            Duration::from_millis(2500)
        );
        assert_eq!(wait(Some("2026-02-19T16:30:01Z")), REFRESH_FLOOR);
        assert_eq!(wait(Some("2026-02-19T16:00:00Z")), REFRESH_FLOOR);
        assert_eq!(wait(Some("2027-02-19T16:30:00Z")), REFRESH_CEILING);
        assert_eq!(wait(None), REFRESH_CEILING);
    }
}
