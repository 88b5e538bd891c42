//! Fairness between callers: a token bucket (rate) and an in-flight cap per caller, so that one
//! client flooding the endpoint gets `429` while the others are served.
//!
//! The caller is the principal the auth layer authenticated; without one, the peer's IP
//! address ([`PeerAddr`] in the request's extensions, which
//! [`serve`](super::StreamableHttp::serve) and [`serve`](fn@super::serve) put there); peers on
//! a Unix domain socket are all one local caller, counted as a loopback peer. Loopback
//! peers without a principal are not limited unless
//! [`HttpConfig::limit_loopback_peers`](super::HttpConfig::limit_loopback_peers); requests with
//! neither a principal nor a known peer are not limited here (the global caps still apply).
//!
//! The table of callers holds at most [`HttpConfig::max_principals`](super::HttpConfig::max_principals)
//! entries: when full, entries with nothing in flight whose bucket has refilled are dropped
//! first (forgetting them changes nothing), then the idle one seen longest ago; when every
//! entry has a request in flight, a new caller gets `503`.

use axum::body::Body;
use bytes::Bytes;
use http::request::Parts;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// A token bucket's settings: `per_second` requests on average, `burst` at once.
///
/// ```
/// use duomcp::transport::http::Rate;
/// let rate = Rate::new(100, 200);
/// assert_eq!((rate.per_second, rate.burst), (100, 200));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rate {
    /// Tokens added per second (at least 1 is used).
    pub per_second: u32,
    /// The bucket's size: requests a caller may make at once after a pause (at least 1 is used).
    pub burst: u32,
}

impl Rate {
    /// `per_second` requests per second on average, `burst` at once.
    pub fn new(per_second: u32, burst: u32) -> Self {
        Rate { per_second, burst }
    }
}

/// The address of the peer a request came from, in the request's extensions: put there by
/// [`StreamableHttp::serve`](super::StreamableHttp::serve) and [`serve`](fn@super::serve); an
/// application serving the router itself may insert it for the per-IP limits to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerAddr(pub SocketAddr);

/// Marks a request that came over a Unix domain socket, in the request's extensions: all such
/// peers are one local caller, treated as a loopback peer (limited only with
/// [`HttpConfig::limit_loopback_peers`](super::HttpConfig::limit_loopback_peers)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LocalPeer;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Principal(String),
    Peer(IpAddr),
    Local,
}

#[derive(Debug)]
struct Entry {
    tokens: f64,
    last: Instant,
    in_flight: usize,
    rate: Rate,
}

impl Entry {
    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        let burst = f64::from(self.rate.burst.max(1));
        self.tokens = (self.tokens + elapsed * f64::from(self.rate.per_second.max(1))).min(burst);
        self.last = now;
    }

    /// Idle and refilled: forgetting it changes nothing.
    fn forgettable(&self, now: Instant) -> bool {
        if self.in_flight > 0 {
            return false;
        }
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        let tokens = self.tokens + elapsed * f64::from(self.rate.per_second.max(1));
        tokens >= f64::from(self.rate.burst.max(1))
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Over the rate: `429`, retry after this long.
    Rate(Duration),
    /// Too many requests of this caller in flight: `429`.
    InFlight,
    /// The table of callers is full of callers with requests in flight: `503`.
    Full,
}

/// The per-caller buckets and in-flight counts of one endpoint.
#[derive(Debug)]
pub(crate) struct Fairness {
    table: Mutex<HashMap<Key, Entry>>,
    max_in_flight: usize,
    principal_rate: Option<Rate>,
    peer_rate: Option<Rate>,
    limit_loopback: bool,
    max_callers: usize,
}

/// Counts one request of a caller in flight until dropped.
pub(crate) struct Held {
    fair: Arc<Fairness>,
    key: Key,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut table = self.fair.table.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = table.get_mut(&self.key) {
            e.in_flight = e.in_flight.saturating_sub(1);
        }
    }
}

impl Fairness {
    pub(crate) fn new(config: &super::HttpConfig) -> Arc<Self> {
        Arc::new(Fairness {
            table: Mutex::default(),
            max_in_flight: config.max_requests_per_principal.max(1),
            principal_rate: config.principal_rate,
            peer_rate: config.peer_rate,
            limit_loopback: config.limit_loopback_peers,
            max_callers: config.max_principals.max(1),
        })
    }

    /// Callers tracked now.
    pub(crate) fn len(&self) -> usize {
        self.table.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Admits a request of the caller `parts` names (`Ok(None)`: not limited here).
    pub(crate) fn admit(self: &Arc<Self>, parts: &Parts) -> Result<Option<Held>, Refusal> {
        let (key, rate) = match super::owner_key(parts) {
            Some(principal) => (Key::Principal(principal), self.principal_rate),
            None if parts.extensions.get::<LocalPeer>().is_some() => {
                if !self.limit_loopback {
                    return Ok(None);
                }
                (Key::Local, self.peer_rate)
            }
            None => {
                let Some(PeerAddr(peer)) = parts.extensions.get::<PeerAddr>() else {
                    return Ok(None);
                };
                let ip = peer.ip().to_canonical();
                if ip.is_loopback() && !self.limit_loopback {
                    return Ok(None);
                }
                (Key::Peer(ip), self.peer_rate)
            }
        };
        let rate = rate.unwrap_or(Rate::new(u32::MAX, u32::MAX));
        let unlimited_rate = rate.per_second == u32::MAX;
        let now = Instant::now();
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        if !table.contains_key(&key) && table.len() >= self.max_callers {
            table.retain(|_, e| !e.forgettable(now));
            if table.len() >= self.max_callers {
                let oldest = table
                    .iter()
                    .filter(|(_, e)| e.in_flight == 0)
                    .min_by_key(|(_, e)| e.last)
                    .map(|(k, _)| k.clone());
                match oldest {
                    Some(k) => {
                        table.remove(&k);
                    }
                    None => return Err(Refusal::Full),
                }
            }
        }
        let entry = table.entry(key.clone()).or_insert_with(|| Entry {
            tokens: f64::from(rate.burst.max(1)),
            last: now,
            in_flight: 0,
            rate,
        });
        entry.refill(now);
        if entry.in_flight >= self.max_in_flight {
            return Err(Refusal::InFlight);
        }
        if !unlimited_rate {
            if entry.tokens < 1.0 {
                let wait = (1.0 - entry.tokens) / f64::from(rate.per_second.max(1));
                return Err(Refusal::Rate(Duration::from_secs_f64(wait)));
            }
            entry.tokens -= 1.0;
        }
        entry.in_flight += 1;
        drop(table);
        Ok(Some(Held {
            fair: self.clone(),
            key,
        }))
    }
}

/// `Retry-After` in whole seconds, rounded up, at least 1.
pub(crate) fn retry_after_secs(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

/// A response body that keeps the caller's request counted in flight until it ends (SSE
/// streams included).
pub(crate) struct HeldBody {
    body: Body,
    _held: Held,
}

impl HeldBody {
    pub(crate) fn wrap(body: Body, held: Held) -> Body {
        Body::new(HeldBody { body, _held: held })
    }
}

impl axum::body::HttpBody for HeldBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn local_request() -> Parts {
        let (mut parts, ()) = http::Request::new(()).into_parts();
        parts.extensions.insert(LocalPeer);
        parts
    }

    /// Every peer on a Unix socket is one caller: exempt as loopback by default, one bucket
    /// (and one in-flight count) with `limit_loopback_peers`.
    #[test]
    fn unix_peers_are_one_local_caller() {
        let mut config = super::super::HttpConfig {
            max_requests_per_principal: 2,
            ..Default::default()
        };
        let fair = Fairness::new(&config);
        let held: Vec<_> = (0..5)
            .map(|_| fair.admit(&local_request()).unwrap())
            .collect();
        assert!(held.iter().all(Option::is_none), "not limited by default");
        assert_eq!(fair.len(), 0);

        config.limit_loopback_peers = true;
        let fair = Fairness::new(&config);
        let first = fair.admit(&local_request()).unwrap();
        let second = fair.admit(&local_request()).unwrap();
        assert!(first.is_some() && second.is_some());
        assert_eq!(fair.admit(&local_request()).err(), Some(Refusal::InFlight));
        assert_eq!(fair.len(), 1, "one entry for all of them");
        drop(first);
        assert!(fair.admit(&local_request()).unwrap().is_some());
    }
}
