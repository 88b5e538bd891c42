//! The receiving end of webhook delivery (features `events` and `http-server`): an endpoint
//! that verifies each POST with the secret of its subscription, answers the verification
//! challenge, drops retries it has already taken, and hands what is left to the application
//! over a bounded channel.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! use duomcp::webhook::receiver::{Receiver, ReceiverOptions};
//! use duomcp::webhook::Secret;
//!
//! let secret = Secret::generate(); // given to `events/subscribe` as `delivery.secret`
//! let (receiver, mut deliveries) = Receiver::new(ReceiverOptions::default());
//! receiver.route("sub_a3f1c8e2b0d49f7e", secret); // the `id` that `events/subscribe` returned
//! let app = axum::Router::new().route("/hooks", receiver.post_handler());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8443").await?;
//! tokio::spawn(duomcp::transport::http::serve(listener, app));
//! while let Some(d) = deliveries.recv().await {
//!     println!("{} {:?} {}", d.subscription_id, d.kind, d.body);
//! }
//! # Ok(()) }
//! ```
//!
//! What each request gets, checked in this order:
//!
//! | Request | Status |
//! |---|---|
//! | a header missing (`webhook-id`, `webhook-timestamp`, `webhook-signature`, `X-MCP-Subscription-Id`) or not text | 400 |
//! | a body over [`ReceiverOptions::max_body`] (by `Content-Length`, or as it is read) | 413 |
//! | a subscription id with no secret while the application says it is not ready ([`Receiver::set_ready`]) | 503 (the server retries) |
//! | a subscription id with no secret otherwise | 401 |
//! | `webhook-timestamp` not a number | 400 |
//! | `webhook-timestamp` more than five minutes from the receiver's clock | 401 |
//! | no signature made with the subscription's secret(s) | 401 |
//! | a verified body that is not a JSON object | 400 |
//! | a verified `{"type":"verification","challenge":C}` | 200 `{"challenge":C}` |
//! | a verified delivery already taken (same subscription, same `webhook-id`) | 200, not handed over again |
//! | a verified delivery while the channel is full, or after [`ReceiverOptions::max_deliveries`] | 503 (the server retries), not remembered as taken |
//! | any other verified delivery | 200, handed over as a [`Delivery`] |
//!
//! A stale timestamp is a 401, as a bad signature: either way the request does not prove it
//! comes from the server now, and Standard Webhooks libraries report both as a failed
//! verification. A 200 is sent only once the delivery is in the channel (the design asks a
//! receiver to acknowledge only what it has passed on).
//!
//! Hand-written rather than taken from a crate: the signature check is [`Secret::verify`]
//! (checked against the `standardwebhooks` crate in the tests); the rest is routing by
//! subscription id, the challenge and the de-duplication, which are the events extension's and
//! no crate does.

use super::{Secret, Signed, VerifyError, ID, SIGNATURE, SUBSCRIPTION_ID, TIMESTAMP};
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// The bounds of a [`Receiver`].
///
/// ```
/// use duomcp::webhook::receiver::ReceiverOptions;
/// let options = ReceiverOptions::default();
/// assert_eq!(options.max_body, 256 * 1024);
/// assert_eq!(options.dedup_window, 4096);
/// assert_eq!(options.buffer, 256);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ReceiverOptions {
    /// The largest body taken, in bytes (default 256 KiB, what the design asks servers to stay
    /// within); larger ones get 413.
    pub max_body: usize,
    /// How many recent `(subscription id, webhook-id)` pairs are remembered to drop retries of
    /// a delivery already taken (default 4096). A retry arriving after this many newer
    /// deliveries is handed over again.
    pub dedup_window: usize,
    /// The capacity of the channel of deliveries (default 256); when it is full, deliveries
    /// get 503 and the server retries them later.
    pub buffer: usize,
    /// Hand over at most this many deliveries, then answer 503 (the server retries, elsewhere
    /// or later): for a receiver that stops after N, so that it never acknowledges one it
    /// will not pass on (default `None`: no end).
    pub max_deliveries: Option<usize>,
}

impl Default for ReceiverOptions {
    fn default() -> Self {
        ReceiverOptions {
            max_body: 256 * 1024,
            dedup_window: 4096,
            buffer: 256,
            max_deliveries: None,
        }
    }
}

/// What a verified body is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeliveryKind {
    /// An occurrence (`eventId`, `name`, `timestamp`, `data`, `cursor`): a body without `type`.
    Event,
    /// `{"type":"gap","cursor":…}`: occurrences were lost; persist the cursor.
    Gap,
    /// `{"type":"terminated","error":…}`: the subscription no longer exists.
    Terminated,
    /// A control envelope of another `type`, passed on as the design asks.
    Other(String),
}

/// One verified delivery, handed to the application.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Delivery {
    /// `X-MCP-Subscription-Id`.
    pub subscription_id: String,
    /// `webhook-id` (the `eventId` of an occurrence).
    pub webhook_id: String,
    /// `webhook-timestamp`, Unix seconds.
    pub timestamp: i64,
    /// What the body is.
    pub kind: DeliveryKind,
    /// The body, parsed (a JSON object).
    pub body: Value,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Rejection {
    /// A required header is missing or not text (400).
    #[error("the header {0} is missing")]
    MissingHeader(&'static str),
    /// The body is over [`ReceiverOptions::max_body`] (413).
    #[error("the body is over {0} bytes")]
    TooLarge(usize),
    /// The body could not be read (400).
    #[error("the body could not be read")]
    Unreadable,
    /// No secret for this subscription id, and the application is not ready (503).
    #[error("subscription {0}: not ready yet")]
    NotReady(String),
    /// No secret for this subscription id (401).
    #[error("subscription {0}: unknown")]
    UnknownSubscription(String),
    /// The signature or the timestamp did not verify (400 for a timestamp that is not a
    /// number, 401 otherwise).
    #[error("subscription {0}: {1}")]
    Verify(String, VerifyError),
    /// The verified body is not a JSON object, or a verification envelope has no string
    /// `challenge` (400).
    #[error("the body is not a JSON object of the events extension")]
    Malformed,
    /// The channel is full (503).
    #[error("the application is behind; try again later")]
    Busy,
    /// [`ReceiverOptions::max_deliveries`] have been handed over (503).
    #[error("the receiver takes no more deliveries")]
    Done,
}

impl Rejection {
    /// The HTTP status this rejection is answered with.
    pub fn status(&self) -> StatusCode {
        match self {
            Rejection::MissingHeader(_) | Rejection::Unreadable | Rejection::Malformed => {
                StatusCode::BAD_REQUEST
            }
            Rejection::Verify(_, VerifyError::BadTimestamp) => StatusCode::BAD_REQUEST,
            Rejection::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Rejection::NotReady(_) | Rejection::Busy | Rejection::Done => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Rejection::UnknownSubscription(_) | Rejection::Verify(..) => StatusCode::UNAUTHORIZED,
        }
    }
}

/// How a request was answered: [`Outcome::into_response`] makes the HTTP response.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Outcome {
    /// Handed over (200).
    Delivered,
    /// A retry of a delivery already taken (200).
    Duplicate,
    /// A verification challenge, echoed (200 `{"challenge":…}`).
    Challenge(String),
    /// Refused.
    Rejected(Rejection),
}

impl IntoResponse for Outcome {
    fn into_response(self) -> Response {
        match self {
            Outcome::Delivered | Outcome::Duplicate => StatusCode::OK.into_response(),
            Outcome::Challenge(c) => (
                StatusCode::OK,
                [(http::header::CONTENT_TYPE, "application/json")],
                json!({ "challenge": c }).to_string(),
            )
                .into_response(),
            // The reason stays here: what the server sees is the status alone.
            Outcome::Rejected(r) => r.status().into_response(),
        }
    }
}

/// The receiving end of webhook delivery (see the [module](self)). Cloning it shares it.
#[derive(Debug, Clone)]
pub struct Receiver {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    options: ReceiverOptions,
    secrets: Mutex<HashMap<String, Vec<Secret>>>,
    fallback: Mutex<Vec<Secret>>,
    ready: AtomicBool,
    seen: Mutex<Seen>,
    tx: mpsc::Sender<Delivery>,
}

/// The recent `(subscription id, webhook-id)` pairs, bounded.
#[derive(Debug, Default)]
struct Seen {
    order: VecDeque<(String, String)>,
    set: HashSet<(String, String)>,
    /// Deliveries handed over so far.
    handed: usize,
}

impl Receiver {
    /// A receiver, and the channel its deliveries arrive on. It is ready (unknown subscription
    /// ids get 401) until told otherwise.
    pub fn new(options: ReceiverOptions) -> (Receiver, mpsc::Receiver<Delivery>) {
        let (tx, rx) = mpsc::channel(options.buffer.max(1));
        let inner = Inner {
            options,
            secrets: Mutex::new(HashMap::new()),
            fallback: Mutex::new(Vec::new()),
            ready: AtomicBool::new(true),
            seen: Mutex::new(Seen::default()),
            tx,
        };
        (
            Receiver {
                inner: Arc::new(inner),
            },
            rx,
        )
    }

    /// Deliveries for `subscription_id` verify with `secret` from now on (replacing the
    /// secrets it had).
    pub fn route(&self, subscription_id: impl Into<String>, secret: Secret) {
        self.route_all(subscription_id, vec![secret]);
    }

    /// Like [`route`](Self::route) with several secrets, any of which verifies (while a secret
    /// is being rotated: the old and the new one).
    pub fn route_all(&self, subscription_id: impl Into<String>, secrets: Vec<Secret>) {
        crate::util::lock(&self.inner.secrets).insert(subscription_id.into(), secrets);
    }

    /// Deliveries for `subscription_id` no longer verify (unless a fallback secret does).
    pub fn unroute(&self, subscription_id: &str) {
        crate::util::lock(&self.inner.secrets).remove(subscription_id);
    }

    /// Secrets for deliveries of any subscription id not routed with [`route`](Self::route):
    /// for a receiver that learns no ids (one secret given to every subscription pointed at
    /// it). Empty by default.
    pub fn set_fallback(&self, secrets: Vec<Secret>) {
        *crate::util::lock(&self.inner.fallback) = secrets;
    }

    /// Whether the application has routed every subscription it expects (default `true`).
    /// While `false`, a delivery for an id with no secret gets 503, which the server retries,
    /// instead of 401: for the moment between `events/subscribe` returning the id and the
    /// application routing it.
    pub fn set_ready(&self, ready: bool) {
        self.inner.ready.store(ready, Ordering::SeqCst);
    }

    /// The bounds it was made with.
    pub fn options(&self) -> &ReceiverOptions {
        &self.inner.options
    }

    /// An axum handler answering POSTs with [`handle`](Self::handle):
    /// `Router::new().route("/hooks", receiver.post_handler())`.
    pub fn post_handler<S: Clone + Send + Sync + 'static>(&self) -> axum::routing::MethodRouter<S> {
        let this = self.clone();
        axum::routing::post(move |headers: HeaderMap, body: Body| {
            let this = this.clone();
            async move { this.handle(&headers, body).await }
        })
    }

    /// Reads `body` (up to [`ReceiverOptions::max_body`]) and answers it with
    /// [`receive`](Self::receive).
    pub async fn handle(&self, headers: &HeaderMap, body: Body) -> Outcome {
        if let Some(r) = self.check_headers(headers) {
            return Outcome::Rejected(r);
        }
        let max = self.inner.options.max_body;
        let declared = headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > max as u64) {
            return Outcome::Rejected(Rejection::TooLarge(max));
        }
        let bytes = match axum::body::to_bytes(body, max).await {
            Ok(b) => b,
            Err(e) => {
                // axum's limit error is a `LengthLimitError` somewhere in the chain.
                let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
                while let Some(s) = source {
                    if s.is::<http_body_util::LengthLimitError>() {
                        return Outcome::Rejected(Rejection::TooLarge(max));
                    }
                    source = s.source();
                }
                return Outcome::Rejected(Rejection::Unreadable);
            }
        };
        self.receive(headers, &bytes, now())
    }

    fn check_headers(&self, headers: &HeaderMap) -> Option<Rejection> {
        [ID, TIMESTAMP, SIGNATURE, SUBSCRIPTION_ID]
            .into_iter()
            .find(|h| header(headers, h).is_none())
            .map(Rejection::MissingHeader)
    }

    /// Answers one delivery: `headers` and the raw `body` as received, `now` in Unix seconds.
    pub fn receive(&self, headers: &HeaderMap, body: &[u8], now: i64) -> Outcome {
        if let Some(r) = self.check_headers(headers) {
            return Outcome::Rejected(r);
        }
        if body.len() > self.inner.options.max_body {
            return Outcome::Rejected(Rejection::TooLarge(self.inner.options.max_body));
        }
        let (Some(id), Some(timestamp), Some(signature), Some(sub)) = (
            header(headers, ID),
            header(headers, TIMESTAMP),
            header(headers, SIGNATURE),
            header(headers, SUBSCRIPTION_ID),
        ) else {
            return Outcome::Rejected(Rejection::MissingHeader(ID));
        };
        let secrets = match crate::util::lock(&self.inner.secrets).get(sub) {
            Some(s) => s.clone(),
            None => crate::util::lock(&self.inner.fallback).clone(),
        };
        if secrets.is_empty() {
            return Outcome::Rejected(if self.inner.ready.load(Ordering::SeqCst) {
                Rejection::UnknownSubscription(sub.to_owned())
            } else {
                Rejection::NotReady(sub.to_owned())
            });
        }
        let signed = Signed {
            id,
            timestamp,
            signature,
        };
        let mut verdict = Err(VerifyError::Mismatch);
        for secret in &secrets {
            verdict = secret.verify(&signed, body, now);
            if !matches!(verdict, Err(VerifyError::Mismatch)) {
                break;
            }
        }
        if let Err(e) = verdict {
            return Outcome::Rejected(Rejection::Verify(sub.to_owned(), e));
        }
        let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(body) else {
            return Outcome::Rejected(Rejection::Malformed);
        };
        let kind = match object.get("type") {
            None => DeliveryKind::Event,
            Some(Value::String(t)) => match t.as_str() {
                "verification" => {
                    return match object.get("challenge") {
                        Some(Value::String(c)) => Outcome::Challenge(c.clone()),
                        _ => Outcome::Rejected(Rejection::Malformed),
                    }
                }
                "gap" => DeliveryKind::Gap,
                "terminated" => DeliveryKind::Terminated,
                other => DeliveryKind::Other(other.to_owned()),
            },
            Some(_) => return Outcome::Rejected(Rejection::Malformed),
        };
        let key = (sub.to_owned(), id.to_owned());
        // Held across the hand-over, so that two copies of one delivery arriving together are
        // handed over once.
        let mut seen = crate::util::lock(&self.inner.seen);
        if seen.set.contains(&key) {
            return Outcome::Duplicate;
        }
        if self
            .inner
            .options
            .max_deliveries
            .is_some_and(|n| seen.handed >= n)
        {
            return Outcome::Rejected(Rejection::Done);
        }
        let delivery = Delivery {
            subscription_id: key.0.clone(),
            webhook_id: key.1.clone(),
            timestamp: timestamp.trim().parse().unwrap_or(now),
            kind,
            body: Value::Object(object),
        };
        if self.inner.tx.try_send(delivery).is_err() {
            return Outcome::Rejected(Rejection::Busy);
        }
        seen.handed += 1;
        seen.order.push_back(key.clone());
        seen.set.insert(key);
        while seen.order.len() > self.inner.options.dedup_window.max(1) {
            if let Some(old) = seen.order.pop_front() {
                seen.set.remove(&old);
            }
        }
        Outcome::Delivered
    }
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signed(secret: &Secret, sub: &str, id: &str, ts: i64, body: &[u8]) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(ID, id.parse().unwrap());
        h.insert(TIMESTAMP, ts.to_string().parse().unwrap());
        h.insert(SIGNATURE, secret.sign(id, ts, body).parse().unwrap());
        h.insert(SUBSCRIPTION_ID, sub.parse().unwrap());
        h
    }

    #[tokio::test]
    async fn verifies_routes_dedups_and_answers_challenges() {
        let (a, b) = (Secret::generate(), Secret::generate());
        let options = ReceiverOptions {
            buffer: 2,
            max_body: 64,
            ..ReceiverOptions::default()
        };
        let (r, mut rx) = Receiver::new(options);
        r.route("sub_a", a.clone());
        r.route("sub_b", b.clone());
        let ev = br#"{"eventId":"e1","name":"n","data":{}}"#;
        let now = 1_000_000;
        assert_eq!(
            r.receive(&signed(&a, "sub_a", "e1", now, ev), ev, now),
            Outcome::Delivered
        );
        assert_eq!(
            r.receive(&signed(&a, "sub_a", "e1", now + 1, ev), ev, now),
            Outcome::Duplicate
        );
        // b's secret is not a's, and the same id under another subscription is new.
        assert_eq!(
            r.receive(&signed(&b, "sub_a", "e2", now, ev), ev, now),
            Outcome::Rejected(Rejection::Verify("sub_a".into(), VerifyError::Mismatch))
        );
        assert_eq!(
            r.receive(&signed(&b, "sub_b", "e1", now, ev), ev, now),
            Outcome::Delivered
        );
        // The channel (2) is full: 503, and the delivery is not remembered.
        let gap = br#"{"type":"gap","cursor":"c9"}"#;
        let h = signed(&a, "sub_a", "msg_gap_1", now, gap);
        assert_eq!(r.receive(&h, gap, now), Outcome::Rejected(Rejection::Busy));
        let first = rx.recv().await.unwrap();
        assert_eq!(
            (first.kind, first.webhook_id.as_str()),
            (DeliveryKind::Event, "e1")
        );
        assert_eq!(r.receive(&h, gap, now), Outcome::Delivered);
        let _ = rx.recv().await.unwrap();
        assert_eq!(rx.recv().await.unwrap().kind, DeliveryKind::Gap);
        // The challenge is echoed, never handed over.
        let ch = br#"{"type":"verification","challenge":"n0nce"}"#;
        assert_eq!(
            r.receive(&signed(&a, "sub_a", "msg_v_1", now, ch), ch, now),
            Outcome::Challenge("n0nce".into())
        );
        // Stale, unknown, not ready, too large, missing header.
        let stale = r.receive(&signed(&a, "sub_a", "e3", now - 301, ev), ev, now);
        assert_eq!(
            stale,
            Outcome::Rejected(Rejection::Verify("sub_a".into(), VerifyError::Stale))
        );
        let unknown = r.receive(&signed(&a, "sub_c", "e3", now, ev), ev, now);
        assert!(
            matches!(unknown, Outcome::Rejected(ref x) if x.status() == StatusCode::UNAUTHORIZED)
        );
        r.set_ready(false);
        let early = r.receive(&signed(&a, "sub_c", "e3", now, ev), ev, now);
        assert!(
            matches!(early, Outcome::Rejected(ref x) if x.status() == StatusCode::SERVICE_UNAVAILABLE)
        );
        let big = [b' '; 65];
        let large = r.receive(&signed(&a, "sub_a", "e4", now, &big), &big, now);
        assert_eq!(large, Outcome::Rejected(Rejection::TooLarge(64)));
        let mut h = signed(&a, "sub_a", "e5", now, ev);
        h.remove(SUBSCRIPTION_ID);
        assert_eq!(
            r.receive(&h, ev, now),
            Outcome::Rejected(Rejection::MissingHeader(SUBSCRIPTION_ID))
        );
        // A fallback secret verifies any id not routed.
        r.set_fallback(vec![b.clone()]);
        assert_eq!(
            r.receive(&signed(&b, "sub_z", "e6", now, ev), ev, now),
            Outcome::Delivered
        );
        assert!(rx.recv().await.is_some());
        assert!(rx.try_recv().is_err());
    }

    #[tokio::test]
    async fn a_body_over_the_bound_is_413_with_or_without_content_length() {
        let a = Secret::generate();
        let options = ReceiverOptions {
            max_body: 64,
            ..ReceiverOptions::default()
        };
        let (r, _rx) = Receiver::new(options);
        r.route("sub_a", a.clone());
        let big = vec![b' '; 100];
        let mut h = signed(&a, "sub_a", "e1", now(), &big);
        // No Content-Length: the limit trips while the body is read.
        assert_eq!(
            r.handle(&h, Body::from(big.clone())).await,
            Outcome::Rejected(Rejection::TooLarge(64))
        );
        h.insert(http::header::CONTENT_LENGTH, "100".parse().unwrap());
        assert_eq!(
            r.handle(&h, Body::from(big)).await,
            Outcome::Rejected(Rejection::TooLarge(64))
        );
        let ok = br#"{"eventId":"e1"}"#;
        let h = signed(&a, "sub_a", "e1", now(), ok);
        assert_eq!(r.handle(&h, Body::from(&ok[..])).await, Outcome::Delivered);
    }

    #[test]
    fn after_max_deliveries_only_retries_are_acknowledged() {
        let a = Secret::generate();
        let options = ReceiverOptions {
            max_deliveries: Some(1),
            ..ReceiverOptions::default()
        };
        let (r, _rx) = Receiver::new(options);
        r.route("s", a.clone());
        let ev = br#"{"eventId":"e"}"#;
        let t = now();
        assert_eq!(
            r.receive(&signed(&a, "s", "e1", t, ev), ev, t),
            Outcome::Delivered
        );
        assert_eq!(
            r.receive(&signed(&a, "s", "e1", t, ev), ev, t),
            Outcome::Duplicate
        );
        let done = r.receive(&signed(&a, "s", "e2", t, ev), ev, t);
        assert_eq!(done, Outcome::Rejected(Rejection::Done));
        assert!(
            matches!(done, Outcome::Rejected(ref x) if x.status() == StatusCode::SERVICE_UNAVAILABLE)
        );
    }
}
