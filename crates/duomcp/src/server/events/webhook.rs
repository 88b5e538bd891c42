//! Webhook delivery for the events extension (experimental, feature `webhooks`): the server
//! POSTs each matching occurrence to a client's `https` callback URL, signed with Standard
//! Webhooks signatures ([`crate::webhook`]), after the working group's design sketch.
//!
//! - `events/subscribe` `{name, arguments, delivery: {mode: "webhook", url, secret}, cursor,
//!   maxAgeMs, ttlMs}` → `{id, refreshBefore, cursor, truncated, deliveryStatus?}`: an
//!   idempotent upsert keyed by `(principal, url, name, arguments)`; the `id` is
//!   `sub_` + 16 hex digits of the SHA-256 of that key, the same after a restart. A refresh
//!   replaces the secret (the old one still signs, next to the new, for
//!   [`WebhookConfig::rotation_grace`]), grants the TTL again and resumes a suspended
//!   subscription; `deliveryStatus` (on a refresh) says how delivery went before it.
//! - `events/unsubscribe` `{name, arguments, delivery: {url}}` → `{}`, or `-32011` with
//!   `data.kind: "subscription"`.
//!
//! Both need an authenticated principal (`-32012` without one). The TTL granted is the one
//! asked for within [`WebhookConfig::min_ttl`] and [`WebhookConfig::max_ttl`]
//! (`ttlMs: null`, "no expiry", gets the maximum: subscriptions are kept in memory only).
//!
//! Delivery runs one task per subscription, one occurrence at a time: an occurrence is
//! retried with exponential back-off on a non-`2xx` answer or a connection failure (`413`
//! and `410` are not retried), then given up; after [`WebhookConfig::suspend_after`] failures in a row
//! the subscription is suspended (`deliveryStatus.active: false`) until the client refreshes
//! it. Since one occurrence is in flight at a time, the `cursor` of a delivery (and of a
//! subscribe answer) never passes an occurrence that was neither acknowledged nor given up.
//! Control envelopes (`webhook-id: msg_<type>_<random>`): `{"type":"gap","cursor":…}` when
//! occurrences were skipped (the ring dropped them, the subscription fell more than
//! [`WebhookConfig::max_pending`] behind, or one was larger than
//! [`WebhookConfig::max_body`]), `{"type":"terminated","error":…}` when the server ends a
//! subscription ([`Events::end_webhooks`](super::Events::end_webhooks)).
//!
//! Security: only `https` URLs; no redirects followed; no proxy; every connection (the
//! verification POST included) checked at delivery time against non-globally-routable
//! addresses — a DNS resolver that drops them and a check of IP-literal hosts — unless
//! [`WebhookConfig::allow_private_networks`]; before the first subscription of a principal to
//! a URL, a signed `{"type":"verification","challenge":…}` POST whose `2xx` answer must echo
//! `{"challenge":…}` (`-32015` with `data.reason` otherwise), cached per (principal, URL)
//! unless the URL starts with one of [`WebhookConfig::verified_prefixes`]; after a failed
//! verification, its host is not asked again for [`WebhookConfig::verification_cooldown`].
//! What an endpoint answers (body, headers, status line) never reaches an error or
//! `deliveryStatus`: only the categories `connection_refused` (refused by the address guard
//! too), `timeout`, `tls_error`, `http_4xx` (any non-`2xx` answer below 500, redirects
//! included), `http_5xx`, `challenge_failed`.
//!
//! A subscriber over stdio is the local user (the transport's principal), so stdio servers
//! with webhooks configured accept subscriptions too.

use super::{custom, parse, subscription, Delivery, Hub, Occurrence, Read, Slot, SubscribeParams};
use crate::era::ProtocolError;
use crate::server::context::Context;
use crate::util::lock;
use crate::webhook::{Secret, ID, SIGNATURE, SUBSCRIPTION_ID, TIMESTAMP};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex, Once, Weak};
use std::time::Duration;
use tokio::sync::{Notify, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// `events/subscribe` (webhook delivery).
pub const SUBSCRIBE: &str = "events/subscribe";
/// `events/unsubscribe`.
pub const UNSUBSCRIBE: &str = "events/unsubscribe";
/// `-32012`: the call needs an authenticated principal.
pub const FORBIDDEN: i32 = -32012;
/// `-32015`: the callback endpoint could not be reached or did not prove its intent
/// (`data.reason` says which).
pub const CALLBACK_ENDPOINT_ERROR: i32 = -32015;

/// The largest answer body read from an endpoint (the verification echo).
const MAX_ANSWER: usize = 4096;
/// Occurrences a delivery task reads from its ring at a time.
const BATCH: usize = 16;

/// How webhook delivery is bounded and secured ([`ServerBuilder::webhooks`]). Every bound has
/// a default that protects a server on its own; LIMITS.md lists them.
///
/// ```
/// use duomcp::server::events::{webhook::WebhookConfig, EventType};
/// use duomcp::server::Server;
/// use std::time::Duration;
///
/// let mut config = WebhookConfig::default();
/// config.max_ttl = Duration::from_secs(3600);
/// config.max_subscriptions_per_principal = 10;
/// // Callback URLs of the company's own gateway need no verification handshake.
/// config.verified_prefixes.push("https://hooks.example.com/".into());
/// let server = Server::builder()
///     .event(EventType::new("order.created"))
///     .webhooks(config)
///     .build();
/// # let _ = server;
/// ```
///
/// [`ServerBuilder::webhooks`]: crate::server::ServerBuilder::webhooks
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WebhookConfig {
    /// The TTL granted when `events/subscribe` suggests none (default 30 min).
    pub default_ttl: Duration,
    /// The shortest TTL granted: shorter suggestions are raised to it (default 1 min).
    pub min_ttl: Duration,
    /// The longest TTL granted, also to `ttlMs: null` (default 24 h).
    pub max_ttl: Duration,
    /// Webhook subscriptions over all principals (default 10,000).
    pub max_subscriptions: usize,
    /// Webhook subscriptions of one principal (default 100).
    pub max_subscriptions_per_principal: usize,
    /// How far (in occurrences of its type) a subscription may fall behind the newest before
    /// the oldest it has not delivered are skipped, with a `gap` envelope (default 1,024).
    pub max_pending: usize,
    /// Delivery requests in flight at once over the server (default 64).
    pub max_in_flight: usize,
    /// The time limit of one delivery request, connecting included (default 10 s).
    pub timeout: Duration,
    /// The largest body delivered (default 256 KiB): a larger occurrence is skipped, with a
    /// `gap` envelope and a warning in the log.
    pub max_body: usize,
    /// Attempts at one delivery before it is given up (default 5; at least 1).
    pub max_attempts: u32,
    /// The wait before the first retry, doubled at each further one (default 500 ms).
    pub initial_backoff: Duration,
    /// The longest wait between two attempts (default 60 s).
    pub max_backoff: Duration,
    /// Deliveries given up in a row after which a subscription is suspended until refreshed
    /// (default 3; at least 1).
    pub suspend_after: u32,
    /// How long the secret a refresh replaced still signs, next to the new one (default
    /// 10 min).
    pub rotation_grace: Duration,
    /// How long a successful verification of a (principal, URL) is remembered (default 24 h).
    pub verification_ttl: Duration,
    /// Verified (principal, URL) pairs remembered (default 10,000; the oldest forgotten first);
    /// also the hosts remembered for [`verification_cooldown`](Self::verification_cooldown).
    pub max_verified: usize,
    /// After a verification of a host failed, how long further verifications to that host
    /// (any port or path, any principal) fail at once, with the same reason, without a POST
    /// (default 10 s): a caller cannot make the server flood a host that never agreed to
    /// receive deliveries. `Duration::ZERO` turns it off.
    pub verification_cooldown: Duration,
    /// Callback URL prefixes trusted without a verification handshake (default none), e.g.
    /// `https://hooks.example.com/`; compared with the URL as parsed (host in lower case),
    /// matching only at a `/`, `?` or `#` boundary.
    pub verified_prefixes: Vec<String>,
    /// Deliver to loopback, private, link-local and other addresses that are not globally
    /// routable (default `false`: refused at delivery time). For tests and private
    /// deployments.
    pub allow_private_networks: bool,
    /// Certificate authorities trusted next to the system's, added by
    /// [`WebhookConfig::root_certificate_pem`] (private: no HTTP client type in the API).
    root_certificates: Vec<reqwest::Certificate>,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        WebhookConfig {
            default_ttl: Duration::from_secs(30 * 60),
            min_ttl: Duration::from_secs(60),
            max_ttl: Duration::from_secs(24 * 3600),
            max_subscriptions: 10_000,
            max_subscriptions_per_principal: 100,
            max_pending: 1024,
            max_in_flight: 64,
            timeout: Duration::from_secs(10),
            max_body: 256 * 1024,
            max_attempts: 5,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(60),
            suspend_after: 3,
            rotation_grace: Duration::from_secs(600),
            verification_ttl: Duration::from_secs(24 * 3600),
            max_verified: 10_000,
            verification_cooldown: Duration::from_secs(10),
            verified_prefixes: Vec::new(),
            allow_private_networks: false,
            root_certificates: Vec::new(),
        }
    }
}

impl WebhookConfig {
    /// Trusts the certificate authorities of a PEM bundle too (a private CA of the
    /// receivers), or says why the PEM is not one.
    pub fn root_certificate_pem(mut self, pem: &[u8]) -> Result<Self, String> {
        let certs = reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|e| format!("not a PEM certificate bundle: {e}"))?;
        if certs.is_empty() {
            return Err("no certificate in the PEM bundle".into());
        }
        self.root_certificates.extend(certs);
        Ok(self)
    }

    fn normalized(mut self) -> Self {
        self.max_attempts = self.max_attempts.max(1);
        self.suspend_after = self.suspend_after.max(1);
        self.max_in_flight = self.max_in_flight.max(1);
        self.max_pending = self.max_pending.max(1);
        self.max_ttl = self.max_ttl.max(Duration::from_millis(1));
        self.min_ttl = self.min_ttl.min(self.max_ttl);
        self
    }
}

/// Why a delivery or a verification failed: the only words about an endpoint that reach a
/// client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reason {
    ConnectionRefused,
    Timeout,
    Tls,
    Http4xx,
    Http5xx,
    ChallengeFailed,
}

impl Reason {
    fn as_str(self) -> &'static str {
        match self {
            Reason::ConnectionRefused => "connection_refused",
            Reason::Timeout => "timeout",
            Reason::Tls => "tls_error",
            Reason::Http4xx => "http_4xx",
            Reason::Http5xx => "http_5xx",
            Reason::ChallengeFailed => "challenge_failed",
        }
    }
}

/// The webhook side of the hub.
pub(crate) struct Webhooks {
    config: WebhookConfig,
    /// `None` when the HTTP client could not be built (logged at start).
    client: Option<reqwest::Client>,
    subs: Mutex<HashMap<String, Arc<Sub>>>,
    /// Verified (principal, URL) pairs and until when.
    verified: Mutex<HashMap<(String, String), Instant>>,
    /// Hosts whose verification failed: until when they are not tried again, and why.
    failed_hosts: Mutex<HashMap<String, (Instant, Reason)>>,
    in_flight: Arc<Semaphore>,
}

impl Drop for Webhooks {
    /// The server is gone: its delivery tasks end.
    fn drop(&mut self) {
        for sub in lock(&self.subs).values() {
            sub.cancel.cancel();
        }
    }
}

/// One webhook subscription.
struct Sub {
    id: String,
    principal: String,
    url: reqwest::Url,
    slot: Arc<Slot>,
    args: Value,
    state: Mutex<State>,
    /// A refresh (to resume a suspended subscription).
    wake: Notify,
    /// Unsubscribed, replaced or ended.
    cancel: CancellationToken,
}

struct State {
    secret: Secret,
    /// The secret a refresh replaced, and until when it still signs.
    old_secret: Option<(Secret, Instant)>,
    expires: Instant,
    expires_ms: u64,
    active: bool,
    /// Every position at or before it was acknowledged or given up.
    watermark: u64,
    last_delivery_ms: Option<u64>,
    last_error: Option<Reason>,
    failed_since_ms: Option<u64>,
}

impl Sub {
    fn expired(&self, now: Instant) -> bool {
        lock(&self.state).expires <= now
    }

    /// `webhook-signature` for one attempt: the current secret, and the replaced one while
    /// its grace lasts.
    fn sign(&self, id: &str, ts: i64, body: &[u8]) -> String {
        let mut state = lock(&self.state);
        let mut sig = state.secret.sign(id, ts, body);
        if let Some((old, until)) = &state.old_secret {
            if *until > Instant::now() {
                sig.push(' ');
                sig.push_str(&old.sign(id, ts, body));
            } else {
                state.old_secret = None;
            }
        }
        sig
    }
}

/// Refuses what is not globally routable: a DNS resolver for reqwest.
struct GuardedResolver;

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let global: Vec<SocketAddr> = found.filter(|a| is_global(a.ip())).collect();
            if global.is_empty() {
                return Err("the host has no globally routable address".into());
            }
            Ok(Box::new(global.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// Whether an address is globally routable: not loopback, private, link-local, shared
/// (CGNAT), unique-local, multicast, unspecified, documentation, benchmarking or reserved
/// (the IANA special-purpose registries, coarsely), looking into IPv4-mapped, NAT64 and 6to4
/// addresses.
pub(crate) fn is_global(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_global_v4(v4),
        IpAddr::V6(v6) => is_global_v6(v6),
    }
}

fn is_global_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(a == 0
        || a == 10
        || a == 127
        || (a == 100 && (64..128).contains(&b))
        || (a == 169 && b == 254)
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 192 && b == 0 && c == 2)
        || (a == 192 && b == 88 && c == 99)
        || (a == 192 && b == 168)
        || (a == 198 && (18..20).contains(&b))
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
        || a >= 224)
}

fn is_global_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_global_v4(v4);
    }
    // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) reach an IPv4 address.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        let [a, b] = s[6].to_be_bytes();
        let [c, d] = s[7].to_be_bytes();
        return is_global_v4(Ipv4Addr::new(a, b, c, d));
    }
    if s[0] == 0x2002 {
        let [a, b] = s[1].to_be_bytes();
        let [c, d] = s[2].to_be_bytes();
        return is_global_v4(Ipv4Addr::new(a, b, c, d));
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || s[0..6] == [0, 0, 0, 0, 0, 0] // IPv4-compatible, deprecated
        || (s[0] & 0xfe00) == 0xfc00 // unique local
        || (s[0] & 0xffc0) == 0xfe80 // link-local
        || (s[0] & 0xffc0) == 0xfec0 // site-local, deprecated
        || (s[0] & 0xff00) == 0xff00 // multicast
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x2001 && s[1] < 0x0200) // IETF protocol assignments (Teredo, ...)
        || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]) // discard
        || s[0] == 0x3fff) // documentation (RFC 9637)
}

fn now_secs() -> i64 {
    i64::try_from(super::now_ms() / 1000).unwrap_or(i64::MAX)
}

/// Whether `url` is under `prefix`: it starts with it, at a boundary (`prefix` ends with
/// `/`, or `url` goes on with `/`, `?` or `#`, or ends), so that `https://hooks.example.com`
/// does not cover `https://hooks.example.com.evil.test/`.
fn prefix_matches(prefix: &str, url: &str) -> bool {
    if prefix.is_empty() || !url.starts_with(prefix) {
        return false;
    }
    prefix.ends_with('/')
        || matches!(
            url.as_bytes().get(prefix.len()),
            None | Some(b'/' | b'?' | b'#')
        )
}

/// Equal, in time independent of where they differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// JSON with every object's keys sorted and no spaces: the same text for equal values.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(k) {
                    canonical(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The subscription id: `sub_` and 16 hex digits of the SHA-256 of the canonical key.
fn subscription_id(principal: &str, url: &str, name: &str, args: &Value) -> String {
    let mut key = String::new();
    canonical(&json!([principal, url, name, args]), &mut key);
    let digest = Sha256::digest(key.as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("sub_{hex}")
}

/// What a failure to get an answer means. An `io::Error` hides what it wraps from
/// `source()` (it goes on with the wrapped error's source), so those are opened by hand.
fn classify(e: &reqwest::Error) -> Reason {
    if e.is_timeout() {
        return Reason::Timeout;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if err.downcast_ref::<rustls::Error>().is_some() {
            return Reason::Tls;
        }
        let mut io = err.downcast_ref::<std::io::Error>();
        while let Some(e) = io {
            if e.kind() == std::io::ErrorKind::TimedOut {
                return Reason::Timeout;
            }
            let inner = e.get_ref();
            if inner.is_some_and(|i| i.downcast_ref::<rustls::Error>().is_some()) {
                return Reason::Tls;
            }
            io = inner.and_then(|i| i.downcast_ref::<std::io::Error>());
        }
        source = err.source();
    }
    Reason::ConnectionRefused
}

fn status_reason(status: u16) -> Reason {
    if status >= 500 {
        Reason::Http5xx
    } else {
        // 4xx, and the 1xx/3xx answers (redirects are not followed).
        Reason::Http4xx
    }
}

impl Webhooks {
    pub(crate) fn new(config: WebhookConfig) -> Self {
        let config = config.normalized();
        static PROVIDER: Once = Once::new();
        PROVIDER.call_once(|| {
            // Another provider installed first is fine: reqwest uses the default one.
            let _ = rustls::crypto::ring::default_provider().install_default();
        });
        let mut b = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .https_only(true)
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            .user_agent(concat!("duomcp/", env!("CARGO_PKG_VERSION")))
            .tls_certs_merge(config.root_certificates.iter().cloned());
        if !config.allow_private_networks {
            b = b.dns_resolver(Arc::new(GuardedResolver));
        }
        let client = match b.build() {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::error!(error = %e, "webhook delivery is off: cannot build its HTTP client");
                None
            }
        };
        Webhooks {
            in_flight: Arc::new(Semaphore::new(config.max_in_flight)),
            config,
            client,
            subs: Mutex::default(),
            verified: Mutex::default(),
            failed_hosts: Mutex::default(),
        }
    }

    /// Sends one signed POST of `body` (no redirects, the SSRF guard): the status, or why
    /// there is none.
    async fn post(
        &self,
        sub_id: &str,
        url: &reqwest::Url,
        msg_id: &str,
        body: &[u8],
        sign: impl Fn(&str, i64, &[u8]) -> String,
    ) -> Result<reqwest::Response, Reason> {
        let client = self.client.as_ref().ok_or(Reason::ConnectionRefused)?;
        if !self.config.allow_private_networks {
            // An IP literal never reaches the resolver: check it here.
            let literal = match url.host() {
                Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
                Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
                _ => None,
            };
            if literal.is_some_and(|ip| !is_global(ip)) {
                return Err(Reason::ConnectionRefused);
            }
        }
        let _permit = self
            .in_flight
            .acquire()
            .await
            .map_err(|_| Reason::ConnectionRefused)?;
        let ts = now_secs();
        let signature = sign(msg_id, ts, body);
        client
            .post(url.clone())
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(ID, msg_id)
            .header(TIMESTAMP, ts.to_string())
            .header(SIGNATURE, signature)
            .header(SUBSCRIPTION_ID, sub_id)
            .body(body.to_vec())
            .send()
            .await
            .map_err(|e| classify(&e))
    }

    /// The verification handshake with `url` for a new subscription.
    async fn verify_endpoint(
        &self,
        sub_id: &str,
        url: &reqwest::Url,
        secret: &Secret,
    ) -> Result<(), Reason> {
        let nonce = super::random_hex(16);
        let body = json!({ "type": "verification", "challenge": nonce }).to_string();
        let msg_id = format!("msg_verification_{}", super::random_hex(8));
        let mut response = self
            .post(sub_id, url, &msg_id, body.as_bytes(), |id, ts, b| {
                secret.sign(id, ts, b)
            })
            .await?;
        if !response.status().is_success() {
            return Err(Reason::ChallengeFailed);
        }
        let mut answer = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if answer.len() + chunk.len() > MAX_ANSWER {
                        return Err(Reason::ChallengeFailed);
                    }
                    answer.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) if e.is_timeout() => return Err(Reason::Timeout),
                Err(_) => return Err(Reason::ChallengeFailed),
            }
        }
        let echoed = serde_json::from_slice::<Value>(&answer).ok().and_then(|v| {
            v.get("challenge")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        match echoed {
            Some(c) if constant_time_eq(c.as_bytes(), nonce.as_bytes()) => Ok(()),
            _ => Err(Reason::ChallengeFailed),
        }
    }

    /// Verifies `url` unless a verification of its host failed within the cooldown (then the
    /// same reason, without a POST); a failure starts the cooldown.
    async fn verify_unless_cooling(
        &self,
        sub_id: &str,
        url: &reqwest::Url,
        secret: &Secret,
    ) -> Result<(), Reason> {
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let now = Instant::now();
        if let Some((until, reason)) = lock(&self.failed_hosts).get(&host) {
            if *until > now {
                return Err(*reason);
            }
        }
        let r = self.verify_endpoint(sub_id, url, secret).await;
        if let Err(reason) = r {
            if !self.config.verification_cooldown.is_zero() {
                let now = Instant::now();
                let mut failed = lock(&self.failed_hosts);
                failed.retain(|_, (until, _)| *until > now);
                if failed.len() < self.config.max_verified {
                    failed.insert(host, (now + self.config.verification_cooldown, reason));
                }
            }
        }
        r
    }

    fn is_verified(&self, principal: &str, url: &str) -> bool {
        if self
            .config
            .verified_prefixes
            .iter()
            .any(|p| prefix_matches(p, url))
        {
            return true;
        }
        let key = (principal.to_owned(), url.to_owned());
        let mut verified = lock(&self.verified);
        match verified.get(&key) {
            Some(until) if *until > Instant::now() => true,
            Some(_) => {
                verified.remove(&key);
                false
            }
            None => false,
        }
    }

    fn remember_verified(&self, principal: &str, url: &str) {
        let now = Instant::now();
        let mut verified = lock(&self.verified);
        if verified.len() >= self.config.max_verified {
            verified.retain(|_, until| *until > now);
        }
        while verified.len() >= self.config.max_verified.max(1) {
            let oldest = verified
                .iter()
                .min_by_key(|(_, until)| **until)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => verified.remove(&k),
                None => break,
            };
        }
        if self.config.max_verified > 0 {
            verified.insert(
                (principal.to_owned(), url.to_owned()),
                now + self.config.verification_ttl,
            );
        }
    }

    /// The TTL granted for a suggestion (`None`: none given, `Some(None)`: no expiry).
    fn grant(&self, suggested: Option<Option<u64>>) -> Duration {
        let c = &self.config;
        match suggested {
            None => c.default_ttl.clamp(c.min_ttl, c.max_ttl),
            Some(None) => c.max_ttl,
            Some(Some(ms)) => Duration::from_millis(ms).clamp(c.min_ttl, c.max_ttl),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The methods.

/// `ttlMs`: absent, `null` or a number.
fn maybe_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<u64>>, D::Error> {
    Option::<u64>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct DeliveryParams {
    #[serde(default)]
    mode: Option<String>,
    url: String,
    #[serde(default)]
    secret: Option<String>,
}

#[derive(Deserialize)]
struct WebhookParams {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
    delivery: DeliveryParams,
    #[serde(default)]
    cursor: Option<String>,
    #[serde(rename = "maxAgeMs", default)]
    max_age_ms: Option<u64>,
    #[serde(rename = "ttlMs", default, deserialize_with = "maybe_null")]
    ttl_ms: Option<Option<u64>>,
}

fn invalid(msg: &str) -> ProtocolError {
    ProtocolError::InvalidParams(format!("Invalid params: {msg}"))
}

fn endpoint_error(reason: Reason) -> ProtocolError {
    custom(
        CALLBACK_ENDPOINT_ERROR,
        format!("CallbackEndpointError: {}", reason.as_str()),
        json!({ "reason": reason.as_str() }),
    )
}

fn exhausted(limit: &str, max: usize) -> ProtocolError {
    custom(
        super::RESOURCE_EXHAUSTED,
        format!("ResourceExhausted: too many webhook subscriptions ({limit}, at most {max})"),
        json!({ "limit": limit, "max": max }),
    )
}

/// The principal's key, or `-32012`.
fn principal(ctx: &Context) -> Result<String, ProtocolError> {
    ctx.principal().map(|p| p.key()).ok_or_else(|| {
        custom(
            FORBIDDEN,
            "Forbidden: webhook subscriptions need an authenticated principal".into(),
            json!({}),
        )
    })
}

/// A callback URL: `https`, a host, no credentials.
fn callback_url(text: &str) -> Result<reqwest::Url, ProtocolError> {
    let url = reqwest::Url::parse(text).map_err(|_| invalid("`delivery.url` is not a URL"))?;
    if url.scheme() != "https" {
        return Err(invalid("`delivery.url` must be an https URL"));
    }
    if url.host().is_none() || !url.username().is_empty() || url.password().is_some() {
        return Err(invalid(
            "`delivery.url` must name a host and carry no credentials",
        ));
    }
    Ok(url)
}

/// `events/subscribe` and `events/unsubscribe`, `None` for another method.
pub(crate) async fn handle(
    hub: &Arc<Hub>,
    ctx: &Context,
    method: &str,
    params: Option<&str>,
) -> Option<Result<Value, ProtocolError>> {
    match method {
        SUBSCRIBE => Some(subscribe(hub, ctx, params).await),
        UNSUBSCRIBE => Some(unsubscribe(hub, ctx, params)),
        _ => None,
    }
}

fn hooks(hub: &Hub) -> Result<&Webhooks, ProtocolError> {
    hub.webhooks.as_ref().ok_or_else(|| {
        custom(
            super::UNSUPPORTED,
            "Unsupported: this server does not deliver events by webhook".into(),
            json!({ "feature": "deliveryMode", "value": "webhook" }),
        )
    })
}

async fn subscribe(
    hub: &Arc<Hub>,
    ctx: &Context,
    params: Option<&str>,
) -> Result<Value, ProtocolError> {
    let p: WebhookParams = parse(params)?;
    let hooks = hooks(hub)?;
    let who = principal(ctx)?;
    if p.delivery.mode.as_deref().is_some_and(|m| m != "webhook") {
        return Err(invalid(
            "`events/subscribe` is for `delivery.mode: \"webhook\"`",
        ));
    }
    let common = SubscribeParams {
        name: p.name.clone(),
        arguments: p.arguments.clone(),
        cursor: p.cursor.clone(),
        max_age_ms: p.max_age_ms,
        max_events: None,
    };
    let (slot, args) = subscription(hub, &common, Delivery::Webhook)?;
    let url = callback_url(&p.delivery.url)?;
    let secret = p
        .delivery
        .secret
        .as_deref()
        .ok_or_else(|| invalid("`delivery.secret` is required"))
        .and_then(|s| Secret::parse(s).map_err(|e| invalid(&format!("`delivery.secret`: {e}"))))?;
    let id = subscription_id(&who, url.as_str(), &slot.spec.name, &args);
    let ttl = hooks.grant(p.ttl_ms);

    // A refresh of a live subscription.
    if let Some(r) = refresh(hub, hooks, &id, &secret, ttl) {
        return Ok(r);
    }

    // A new one: within the caps, verified, then started.
    check_caps(hooks, &mut lock(&hooks.subs), &who, &id)?;
    if !hooks.is_verified(&who, url.as_str()) {
        hooks
            .verify_unless_cooling(&id, &url, &secret)
            .await
            .map_err(endpoint_error)?;
        hooks.remember_verified(&who, url.as_str());
    }
    let (after, truncated) = start(hub, slot, p.cursor.as_deref(), p.max_age_ms)?;
    let watermark = after.unwrap_or_else(|| lock(&slot.ring).dropped_through);
    let expires_ms = super::now_ms().saturating_add(super::ms(ttl));
    let sub = Arc::new(Sub {
        id: id.clone(),
        principal: who,
        url,
        slot: slot.clone(),
        args,
        state: Mutex::new(State {
            secret,
            old_secret: None,
            expires: Instant::now() + ttl,
            expires_ms,
            active: true,
            watermark,
            last_delivery_ms: None,
            last_error: None,
            failed_since_ms: None,
        }),
        wake: Notify::new(),
        cancel: CancellationToken::new(),
    });
    {
        // The caps again, and the insertion, under one lock: another call may have created
        // this subscription (or others) during the verification.
        let mut subs = lock(&hooks.subs);
        check_caps(hooks, &mut subs, &sub.principal, &id)?;
        let now = Instant::now();
        if subs.get(&id).is_some_and(|s| !s.expired(now)) {
            drop(subs);
            let secret = lock(&sub.state).secret.clone();
            if let Some(r) = refresh(hub, hooks, &id, &secret, ttl) {
                return Ok(r);
            }
            subs = lock(&hooks.subs);
        }
        if let Some(old) = subs.insert(id.clone(), sub.clone()) {
            old.cancel.cancel();
        }
    }
    let max_age = p.cursor.as_ref().and(p.max_age_ms);
    tokio::spawn(deliver_loop(
        Arc::downgrade(hub),
        sub,
        after,
        max_age,
        ctx.shared().shutdown.clone(),
    ));
    Ok(json!({
        "id": id,
        "refreshBefore": duomcp_proto::time::iso8601(expires_ms),
        "cursor": hub.cursor(slot, watermark),
        "truncated": truncated,
    }))
}

/// Refreshes the live subscription `id`, if there is one: its secret, its TTL, `active`;
/// answers with the status from before.
fn refresh(hub: &Hub, hooks: &Webhooks, id: &str, secret: &Secret, ttl: Duration) -> Option<Value> {
    let sub = lock(&hooks.subs).get(id).cloned()?;
    let now = Instant::now();
    let mut state = lock(&sub.state);
    if state.expires <= now {
        drop(state);
        remove(hooks, &sub);
        return None;
    }
    if state.secret != *secret {
        let old = std::mem::replace(&mut state.secret, secret.clone());
        state.old_secret = Some((old, now + hooks.config.rotation_grace));
    }
    state.expires = now + ttl;
    state.expires_ms = super::now_ms().saturating_add(super::ms(ttl));
    let mut status = json!({
        "active": state.active,
        "lastDeliveryAt": state.last_delivery_ms.map(duomcp_proto::time::iso8601),
        "lastError": state.last_error.map(Reason::as_str),
    });
    if let Some(since) = state.failed_since_ms {
        status["failedSince"] = json!(duomcp_proto::time::iso8601(since));
    }
    let resumed = !state.active;
    state.active = true;
    let r = json!({
        "id": sub.id,
        "refreshBefore": duomcp_proto::time::iso8601(state.expires_ms),
        "cursor": hub.cursor(&sub.slot, state.watermark),
        "truncated": false,
        "deliveryStatus": status,
    });
    drop(state);
    if resumed {
        sub.wake.notify_one();
    }
    Some(r)
}

/// Drops expired subscriptions, then checks the total and the principal's count.
fn check_caps(
    hooks: &Webhooks,
    subs: &mut HashMap<String, Arc<Sub>>,
    who: &str,
    id: &str,
) -> Result<(), ProtocolError> {
    let now = Instant::now();
    subs.retain(|_, s| {
        let live = !s.expired(now);
        if !live {
            s.cancel.cancel();
        }
        live
    });
    if subs.contains_key(id) {
        return Ok(());
    }
    if subs.len() >= hooks.config.max_subscriptions {
        return Err(exhausted(
            "webhookSubscriptions",
            hooks.config.max_subscriptions,
        ));
    }
    let mine = subs.values().filter(|s| s.principal == who).count();
    if mine >= hooks.config.max_subscriptions_per_principal {
        return Err(exhausted(
            "webhookSubscriptionsPerPrincipal",
            hooks.config.max_subscriptions_per_principal,
        ));
    }
    Ok(())
}

/// Where a new subscription starts, and whether that skips past the client's cursor (older
/// than the ring, from an earlier instance, or older than `maxAgeMs`).
fn start(
    hub: &Hub,
    slot: &Slot,
    cursor: Option<&str>,
    max_age_ms: Option<u64>,
) -> Result<(Option<u64>, bool), ProtocolError> {
    let (after, mut truncated) = super::start(hub, slot, cursor)?;
    let ring = lock(&slot.ring);
    if let Some(a) = after {
        truncated |= a < ring.dropped_through;
        if let (Some(age), Some(_)) = (max_age_ms, cursor) {
            let floor = super::now_ms().saturating_sub(age);
            truncated |= ring.items.iter().any(|o| o.seq > a && o.at_ms < floor);
        }
    }
    Ok((after, truncated))
}

/// Removes `sub` (if it is still the one registered) and stops its task.
fn remove(hooks: &Webhooks, sub: &Arc<Sub>) {
    let mut subs = lock(&hooks.subs);
    if subs.get(&sub.id).is_some_and(|s| Arc::ptr_eq(s, sub)) {
        subs.remove(&sub.id);
    }
    sub.cancel.cancel();
}

#[derive(Deserialize)]
struct UnsubscribeDelivery {
    url: String,
}

#[derive(Deserialize)]
struct UnsubscribeParams {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
    delivery: UnsubscribeDelivery,
}

fn unsubscribe(hub: &Hub, ctx: &Context, params: Option<&str>) -> Result<Value, ProtocolError> {
    let p: UnsubscribeParams = parse(params)?;
    let hooks = hooks(hub)?;
    let who = principal(ctx)?;
    let url = callback_url(&p.delivery.url)?;
    let args = p.arguments.unwrap_or_else(|| json!({}));
    let id = subscription_id(&who, url.as_str(), &p.name, &args);
    let found = lock(&hooks.subs).remove(&id);
    match found {
        Some(sub) => {
            sub.cancel.cancel();
            Ok(json!({}))
        }
        None => Err(custom(
            super::NOT_FOUND,
            "NotFound: no such webhook subscription".into(),
            json!({ "kind": "subscription" }),
        )),
    }
}

/// Ends every webhook subscription of `principal` (a [`Principal::key`]), or every one with
/// `None`, POSTing each a `terminated` envelope (best effort, one attempt); returns how many.
///
/// [`Principal::key`]: crate::server::Principal::key
pub(crate) async fn end(hub: &Hub, principal: Option<&str>, reason: &str) -> usize {
    let Some(hooks) = hub.webhooks.as_ref() else {
        return 0;
    };
    let ended: Vec<Arc<Sub>> = {
        let mut subs = lock(&hooks.subs);
        let ids: Vec<String> = subs
            .values()
            .filter(|s| principal.is_none_or(|p| s.principal == p))
            .map(|s| s.id.clone())
            .collect();
        ids.iter().filter_map(|id| subs.remove(id)).collect()
    };
    for sub in &ended {
        sub.cancel.cancel();
        let body = json!({
            "type": "terminated",
            "error": { "code": FORBIDDEN, "message": format!("Forbidden: {reason}"), "data": {} },
        })
        .to_string();
        let msg_id = format!("msg_terminated_{}", super::random_hex(8));
        let sent = hooks
            .post(&sub.id, &sub.url, &msg_id, body.as_bytes(), |id, ts, b| {
                sub.sign(id, ts, b)
            })
            .await;
        if sent.is_err() {
            tracing::debug!(subscription = %sub.id, "the terminated envelope was not delivered");
        }
    }
    ended.len()
}

// ---------------------------------------------------------------------------------------------
// Delivery.

/// Why a delivery task stops.
struct Stop;

/// Waits `d`, or stops.
async fn pause(sub: &Sub, shutdown: &CancellationToken, d: Duration) -> Result<(), Stop> {
    tokio::select! {
        () = tokio::time::sleep(d) => Ok(()),
        () = sub.cancel.cancelled() => Err(Stop),
        () = shutdown.cancelled() => Err(Stop),
    }
}

/// One message, with its retries: `Ok(Ok)` acknowledged, `Ok(Err(reason))` given up.
async fn attempt_all(
    hooks: &Webhooks,
    sub: &Sub,
    shutdown: &CancellationToken,
    msg_id: &str,
    body: &[u8],
) -> Result<Result<(), Reason>, Stop> {
    let c = &hooks.config;
    let mut backoff = c.initial_backoff;
    let mut last = Reason::ConnectionRefused;
    for attempt in 0..c.max_attempts {
        if attempt > 0 {
            pause(sub, shutdown, backoff).await?;
            backoff = backoff.saturating_mul(2).min(c.max_backoff);
        }
        // An expired subscription delivers nothing more, retries included.
        if sub.expired(Instant::now()) {
            return Err(Stop);
        }
        let sent = tokio::select! {
            r = hooks.post(&sub.id, &sub.url, msg_id, body, |id, ts, b| sub.sign(id, ts, b)) => r,
            () = sub.cancel.cancelled() => return Err(Stop),
            () = shutdown.cancelled() => return Err(Stop),
        };
        match sent {
            Ok(response) if response.status().is_success() => return Ok(Ok(())),
            // Too large for the endpoint, or the endpoint is gone: retrying will not help.
            Ok(response)
                if matches!(
                    response.status(),
                    http::StatusCode::PAYLOAD_TOO_LARGE | http::StatusCode::GONE
                ) =>
            {
                return Ok(Err(Reason::Http4xx))
            }
            Ok(response) => last = status_reason(response.status().as_u16()),
            Err(reason) => last = reason,
        }
    }
    Ok(Err(last))
}

/// Waits while `sub` is suspended (until a refresh resumes it).
async fn while_suspended(sub: &Sub, shutdown: &CancellationToken) -> Result<(), Stop> {
    loop {
        let (active, expires) = {
            let s = lock(&sub.state);
            (s.active, s.expires)
        };
        if expires <= Instant::now() {
            return Err(Stop);
        }
        if active {
            return Ok(());
        }
        tokio::select! {
            () = sub.wake.notified() => {}
            () = tokio::time::sleep_until(expires) => {}
            () = sub.cancel.cancelled() => return Err(Stop),
            () = shutdown.cancelled() => return Err(Stop),
        }
    }
}

/// Delivers one message until acknowledged, given up, or the subscription is suspended
/// (then waits for a refresh and tries again).
async fn deliver_one(
    hooks: &Webhooks,
    sub: &Sub,
    shutdown: &CancellationToken,
    failures: &mut u32,
    msg_id: &str,
    body: &[u8],
) -> Result<(), Stop> {
    loop {
        while_suspended(sub, shutdown).await?;
        match attempt_all(hooks, sub, shutdown, msg_id, body).await? {
            Ok(()) => {
                *failures = 0;
                let mut s = lock(&sub.state);
                s.last_delivery_ms = Some(super::now_ms());
                s.last_error = None;
                s.failed_since_ms = None;
                return Ok(());
            }
            Err(reason) => {
                *failures += 1;
                let suspend = *failures >= hooks.config.suspend_after;
                {
                    let mut s = lock(&sub.state);
                    s.last_error = Some(reason);
                    s.failed_since_ms.get_or_insert_with(super::now_ms);
                    if suspend {
                        s.active = false;
                    }
                }
                if !suspend {
                    tracing::debug!(subscription = %sub.id, reason = reason.as_str(), "a webhook delivery was given up");
                    return Ok(());
                }
                tracing::info!(subscription = %sub.id, reason = reason.as_str(), "webhook delivery suspended until the subscription is refreshed");
                *failures = 0;
            }
        }
    }
}

fn gap_body(hub: &Hub, slot: &Slot, position: u64) -> Vec<u8> {
    json!({ "type": "gap", "cursor": hub.cursor(slot, position) })
        .to_string()
        .into_bytes()
}

fn set_watermark(sub: &Sub, position: u64) {
    let mut s = lock(&sub.state);
    s.watermark = s.watermark.max(position);
}

/// A subscription's delivery task: reads its type's ring from `after` and delivers what
/// matches, one at a time, until the subscription ends. It holds the hub only while it
/// delivers: a server dropped without `shutdown` drops its hub, whose `Drop` ends the tasks.
async fn deliver_loop(
    hub: Weak<Hub>,
    sub: Arc<Sub>,
    mut after: Option<u64>,
    mut max_age: Option<u64>,
    shutdown: CancellationToken,
) {
    let mut head = sub.slot.head.subscribe();
    let mut failures = 0u32;
    let r: Result<(), Stop> = async {
        loop {
            head.borrow_and_update();
            let has_more = {
                let Some(hub) = hub.upgrade() else {
                    return Err(Stop);
                };
                let Some(hooks) = hub.webhooks.as_ref() else {
                    return Err(Stop);
                };
                let mut cursor = Progress {
                    after: &mut after,
                    max_age: &mut max_age,
                    failures: &mut failures,
                };
                deliver_batch(&hub, hooks, &sub, &shutdown, &mut cursor).await?
            };
            if has_more {
                continue;
            }
            let expires = lock(&sub.state).expires;
            if expires <= Instant::now() {
                return Err(Stop);
            }
            tokio::select! {
                changed = head.changed() => if changed.is_err() { return Err(Stop) },
                () = tokio::time::sleep_until(expires) => {}
                () = sub.cancel.cancelled() => return Err(Stop),
                () = shutdown.cancelled() => return Err(Stop),
            }
        }
    }
    .await;
    drop(r);
    if sub.expired(Instant::now()) {
        tracing::debug!(subscription = %sub.id, "a webhook subscription expired");
    }
    if let Some(hub) = hub.upgrade() {
        if let Some(hooks) = hub.webhooks.as_ref() {
            remove(hooks, &sub);
        }
    }
}

/// Where a delivery task is.
struct Progress<'a> {
    /// The position read up to (`None`: from the oldest kept).
    after: &'a mut Option<u64>,
    /// `maxAgeMs`, for the first read only.
    max_age: &'a mut Option<u64>,
    /// Deliveries given up in a row.
    failures: &'a mut u32,
}

/// Reads one batch and delivers it (a `gap` envelope first when something was skipped):
/// whether there is more to read at once.
async fn deliver_batch(
    hub: &Hub,
    hooks: &Webhooks,
    sub: &Sub,
    shutdown: &CancellationToken,
    p: &mut Progress<'_>,
) -> Result<bool, Stop> {
    let slot = &sub.slot;
    // Too far behind: skip to the newest `max_pending`. Counted in occurrences kept, not in
    // positions, which need not be consecutive (on Redis they are stream ids).
    let mut gap = false;
    if let Some(a) = *p.after {
        let ring = lock(&slot.ring);
        let max = hooks.config.max_pending;
        let behind = ring.items.iter().rev().take_while(|o| o.seq > a).count();
        if behind > max {
            let skip_to = ring.items.len() - max - 1;
            if let Some(o) = ring.items.get(skip_to) {
                *p.after = Some(o.seq);
                gap = true;
            }
        }
    }
    let batch = hub.read(
        slot,
        Read {
            args: &sub.args,
            after: *p.after,
            max_age_ms: p.max_age.take(),
            max: BATCH,
        },
    );
    if gap || batch.truncated {
        let before = batch
            .events
            .first()
            .map_or(batch.cursor, |o| o.seq.saturating_sub(1));
        let id = format!("msg_gap_{}", super::random_hex(8));
        let body = gap_body(hub, slot, before);
        deliver_one(hooks, sub, shutdown, p.failures, &id, &body).await?;
        set_watermark(sub, before);
    }
    for occ in &batch.events {
        set_watermark(sub, occ.seq.saturating_sub(1));
        deliver_occurrence(hub, hooks, sub, shutdown, p.failures, occ).await?;
        set_watermark(sub, occ.seq);
    }
    *p.after = Some(batch.cursor);
    if !batch.has_more {
        set_watermark(sub, batch.cursor);
    }
    Ok(batch.has_more)
}

async fn deliver_occurrence(
    hub: &Hub,
    hooks: &Webhooks,
    sub: &Sub,
    shutdown: &CancellationToken,
    failures: &mut u32,
    occ: &Occurrence,
) -> Result<(), Stop> {
    let body = hub
        .occurrence_json(&sub.slot, occ, Some(occ.seq))
        .to_string()
        .into_bytes();
    if body.len() > hooks.config.max_body {
        tracing::warn!(
            subscription = %sub.id,
            event_id = %occ.event_id,
            bytes = body.len(),
            max = hooks.config.max_body,
            "an occurrence too large for webhook delivery was skipped"
        );
        let id = format!("msg_gap_{}", super::random_hex(8));
        let gap = gap_body(hub, &sub.slot, occ.seq);
        return deliver_one(hooks, sub, shutdown, failures, &id, &gap).await;
    }
    deliver_one(hooks, sub, shutdown, failures, &occ.event_id, &body).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_special_addresses_are_not_global() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "192.0.2.1",
            "198.18.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "ff02::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(!is_global(ip), "{ip}");
        }
        for ip in ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "::ffff:8.8.8.8"] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(is_global(ip), "{ip}");
        }
    }

    #[test]
    fn the_id_is_stable_and_ignores_key_order() {
        let a = subscription_id(
            "p",
            "https://x/",
            "n",
            &json!({"a": 1, "b": [1, {"d": 2, "c": 3}]}),
        );
        let b = subscription_id(
            "p",
            "https://x/",
            "n",
            &json!({"b": [1, {"c": 3, "d": 2}], "a": 1}),
        );
        assert_eq!(a, b);
        assert_eq!(a.len(), 4 + 16);
        assert!(a.starts_with("sub_"));
        assert_ne!(a, subscription_id("q", "https://x/", "n", &json!({"a": 1})));
        // The same after a restart (and in another build): SHA-256 of
        // `["p","https://x/","n",{"a":1}]`.
        assert_eq!(
            subscription_id("p", "https://x/", "n", &json!({"a": 1})),
            "sub_210529ac684a2b10"
        );
    }

    #[test]
    fn verified_prefixes_match_at_a_boundary() {
        let p = "https://hooks.example.com";
        assert!(prefix_matches(p, "https://hooks.example.com/a"));
        assert!(prefix_matches(p, "https://hooks.example.com"));
        assert!(!prefix_matches(p, "https://hooks.example.com.evil.test/"));
        assert!(!prefix_matches(p, "https://hooks.example.com:8443/"));
        assert!(prefix_matches("https://h.test/in/", "https://h.test/in/x"));
        assert!(!prefix_matches("https://h.test/in", "https://h.test/inner"));
        assert!(!prefix_matches("", "https://h.test/"));
    }

    #[test]
    fn ttls_are_clamped() {
        let hooks = Webhooks::new(WebhookConfig::default());
        assert_eq!(hooks.grant(None), Duration::from_secs(1800));
        assert_eq!(hooks.grant(Some(None)), Duration::from_secs(86_400));
        assert_eq!(hooks.grant(Some(Some(1))), Duration::from_secs(60));
        assert_eq!(
            hooks.grant(Some(Some(u64::MAX))),
            Duration::from_secs(86_400)
        );
    }
}
