//! Sharing legacy (2025-11-25) sessions between replicas: [`SessionStore`].
//!
//! Without a store (the default) a session lives in the table of the replica that minted it,
//! as it always has. With one, `initialize` writes the session's record there, and a replica
//! that gets a request for a session it does not hold restores it from the record: the
//! negotiated version, the client's info and capabilities, the log level, the resource
//! subscriptions and the principal it is bound to. Each replica keeps a copy and asks the store
//! one question ([`SessionStore::touch`]): is the session alive (which also extends its idle
//! expiry), and has its record changed since the version this copy has? `DELETE` on any
//! replica removes the record, so every replica answers `404` after.
//!
//! How often it asks: on every request without a bus between the replicas. With one
//! ([`HttpConfig::bus`](super::HttpConfig::bus), whose [`Bus::listening`] says it hears the
//! others), a copy the store found alive and current (a touch or a save) less than
//! [`HttpConfig::session_touch_interval`](super::HttpConfig::session_touch_interval) ago is
//! not asked about again: the replica that changes a record or removes a session publishes
//! [`BusMessage::Invalidate`] and waits until it is sent ([`Bus::publish_sent`]) before
//! answering, and the others then ask on their next request. The trait itself is unchanged by
//! this: the cache lives in the transport, beside each copy; a store only answers `touch`,
//! `save` and `remove`, and may assume each replica serving a session touches it at least
//! once per interval (the interval is at most a quarter of the idle timeout).
//!
//! [`Bus::listening`]: crate::server::bus::Bus::listening
//! [`Bus::publish_sent`]: crate::server::bus::Bus::publish_sent
//! [`BusMessage::Invalidate`]: crate::server::bus::BusMessage::Invalidate

use super::store::{StoreError, StoreFuture};
use duomcp_schema::LoggingLevel;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// What a replica needs to serve a session it did not mint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionRecord {
    /// The protocol version `initialize` negotiated.
    pub protocol_version: String,
    /// The client's capabilities (`ClientCapabilities`, as sent).
    pub client_capabilities: Value,
    /// The client's `clientInfo`, if it sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_info: Option<Value>,
    /// The level `logging/setLevel` set, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<LoggingLevel>,
    /// Resource URIs the session subscribed to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subscriptions: Vec<String>,
    /// The principal the session is bound to ([`Principal::key`](crate::server::Principal::key)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// The answer of [`SessionStore::touch`].
#[derive(Debug, Clone, PartialEq)]
pub enum Touched {
    /// No such session (never minted, deleted, or expired).
    Gone,
    /// Alive, and the record is the version the caller has.
    Unchanged,
    /// Alive, with this record at this version (newer than the caller's, or the caller had
    /// none).
    Changed(u64, Box<SessionRecord>),
}

/// The replicas that hold a copy of a session, as a store that tracks them knows it
/// ([`SessionStore::holders`]): each named by its bus inbox
/// ([`Bus::inbox`](crate::server::bus::Bus::inbox)), so that a message about the session goes
/// to them alone instead of to every replica.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Holders {
    /// The replicas that touched the session within the asked window (at most
    /// [`MAX_HOLDERS`]): a request of the session may be running on any of them.
    pub replicas: Vec<u64>,
    /// Those of [`replicas`](Self::replicas) that may trust a copy of the session without
    /// asking the store: their touch came with a copy in hand (a `known` version other than
    /// 0), or they [saved](SessionStore::save) the record. A change of the session must reach
    /// them; a replica that only restored the session (its first request there) asks the
    /// store again on its next one.
    pub caching: Vec<u64>,
    /// The replica that last opened the session's standalone `GET` stream and has not closed
    /// it since ([`SessionStore::hold_stream`]), if any.
    pub stream: Option<u64>,
}

/// Holders a store reports at most; a session held by more replicas than this is reported
/// as not tracked (`Ok(None)`), and its messages go to every replica.
pub const MAX_HOLDERS: usize = 64;

/// The bounds a new session's record is written under ([`SessionStore::create`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreateBounds {
    /// The record expires after this long unless the session makes a request
    /// (`HttpConfig::session_handshake_timeout`).
    pub handshake: Duration,
    /// The idle expiry its requests then set (`HttpConfig::session_idle_timeout`).
    pub idle: Duration,
    /// Sessions alive at once in the whole store, every replica together
    /// (`HttpConfig::max_fleet_sessions`).
    pub max_sessions: usize,
}

impl CreateBounds {
    /// Bounds with these values.
    pub fn new(handshake: Duration, idle: Duration, max_sessions: usize) -> Self {
        CreateBounds {
            handshake,
            idle,
            max_sessions,
        }
    }
}

/// Where legacy sessions are shared between replicas (for example `RedisSessionStore` of
/// `duomcp::redis`, feature `redis`). A new record expires after the handshake timeout
/// ([`create`](Self::create)), then, once the session made a request, after the idle time
/// given with each call unless touched again.
pub trait SessionStore: Send + Sync + 'static {
    /// Writes the record of session `id` and returns its new version (greater than any before).
    /// `create`: the session is new (`initialize`); otherwise a session that is gone stays
    /// gone and `Ok(None)` is returned.
    fn save<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        create: bool,
        idle: Duration,
    ) -> StoreFuture<'a, Result<Option<u64>, StoreError>>;

    /// One question: is session `id` alive (its idle expiry then starts again), and is its
    /// record newer than `known` (0: the caller has none)? Asked per request, or, with a bus,
    /// at least once per `HttpConfig::session_touch_interval` by each replica serving it.
    fn touch<'a>(
        &'a self,
        id: &'a str,
        known: u64,
        idle: Duration,
    ) -> StoreFuture<'a, Result<Touched, StoreError>>;

    /// Ends session `id` everywhere.
    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Result<(), StoreError>>;

    /// Writes the record of a new session (`initialize`) under `bounds`: it expires after
    /// `bounds.handshake` unless a request [touches](Self::touch) it first, and at most
    /// `bounds.max_sessions` sessions live in the store. When that many do, the store ends the
    /// oldest one that never made a request after `initialize` to make room; when there is
    /// none, `Ok(None)` (the client is told to retry). Otherwise the record's version.
    ///
    /// The default writes the record with [`save`](Self::save) (`create`, expiring after
    /// the handshake timeout) and bounds nothing.
    fn create<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        bounds: CreateBounds,
    ) -> StoreFuture<'a, Result<Option<u64>, StoreError>> {
        Box::pin(async move { self.save(id, record, true, bounds.handshake).await })
    }

    /// This replica ended its copy of session `id` (its table was full, or the copy was idle
    /// for its handshake or idle timeout): ends the session everywhere unless another replica
    /// may use it, that is unless another replica's last [`touch`](Self::touch) of it was
    /// less than `quiet` ago (this copy's idle time plus the touch interval, during which a
    /// replica serves a session without touching it) — even when this replica touched it
    /// after that. `Ok(true)` when the record was removed.
    ///
    /// The default keeps the record (it expires on its own).
    fn release<'a>(
        &'a self,
        id: &'a str,
        quiet: Duration,
    ) -> StoreFuture<'a, Result<bool, StoreError>> {
        let _ = (id, quiet);
        Box::pin(async { Ok(false) })
    }

    /// The replicas holding a copy of session `id`: those whose last [`touch`](Self::touch)
    /// of it was less than `within` ago, and the one holding its `GET` stream (see
    /// [`Holders`]). Read after a [`save`](Self::save) or a [`remove`](Self::remove), its
    /// [`caching`](Holders::caching) names every replica that may still trust its copy (a
    /// touch with `known` 0 does not make one: the transport notes no freshness from it), so
    /// a change announced to them alone reaches every copy that needs it. `Ok(None)`: this store does not know (the default),
    /// or more than [`MAX_HOLDERS`] replicas hold it; the transport then tells every replica.
    fn holders<'a>(
        &'a self,
        id: &'a str,
        within: Duration,
    ) -> StoreFuture<'a, Result<Option<Holders>, StoreError>> {
        let _ = (id, within);
        Box::pin(async { Ok(None) })
    }

    /// Claims request id `request` (its JSON text) of session `id` for this replica while it
    /// runs (at most `ttl`): `Ok(false)` when another replica holds a claim on it, so that a
    /// client reusing an id in flight is refused fleet-wide, not only where the first request
    /// runs (`HttpConfig::fleet_request_ids`). The claim ends with
    /// [`release_request`](Self::release_request), or after `ttl`. The default claims nothing
    /// and always succeeds.
    fn claim_request<'a>(
        &'a self,
        id: &'a str,
        request: &'a str,
        ttl: Duration,
    ) -> StoreFuture<'a, Result<bool, StoreError>> {
        let _ = (id, request, ttl);
        Box::pin(async { Ok(true) })
    }

    /// Ends this replica's claim on request id `request` of session `id`
    /// ([`claim_request`](Self::claim_request)). The default does nothing.
    fn release_request<'a>(
        &'a self,
        id: &'a str,
        request: &'a str,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let _ = (id, request);
        Box::pin(async { Ok(()) })
    }

    /// This replica opened (`open`) the standalone `GET` stream of session `id`, or closed
    /// its last one (`!open`: forgotten only if this replica is still the one recorded). The
    /// default records nothing.
    fn hold_stream<'a>(
        &'a self,
        id: &'a str,
        open: bool,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let _ = (id, open);
        Box::pin(async { Ok(()) })
    }
}
