//! The legacy side's use of a [`SessionStore`]: restoring a session minted by another replica,
//! dropping one ended elsewhere, writing the record when it changes, and not asking the store
//! again when this replica's copy was found alive and current a moment ago.
//!
//! **Liveness cache.** With a bus between the replicas, a copy the store found alive and
//! unchanged (a touch, or a save) less than [`touch_interval`] ago serves the request without
//! asking again: 0 Redis commands instead of one round trip. It stays correct because
//! - every replica that changes a session's record or ends the session publishes
//!   [`BusMessage::Invalidate`](crate::server::bus::BusMessage::Invalidate) *before* answering
//!   its client, and waits until every other replica the message reached confirmed that its
//!   copy forgot its freshness ([`Freshness::forget`]; their next request for the session asks
//!   the store, and sees the new record or `404`) — or, when a confirmation does not come,
//!   until the interval has passed since the change, after which no copy trusts a freshness
//!   from before it;
//! - freshness is noted under the router's [`generation`](super::routing::Router::generation)
//!   and trusted only while it is unchanged: not while the bus subscription is down, not
//!   across a resubscription (what was published in between was missed), not after this
//!   receiver lost messages by falling behind (every copy's freshness is dropped at once);
//! - the idle expiry in the store is refreshed at least once per interval by each replica
//!   serving the session, and the interval is at most a quarter of the idle timeout.
//!
//! What it trades: the `DELETE` or the record change itself waits for the confirmations
//! (on loopback Redis about two pub/sub hops, well under a millisecond when the replicas are
//! not overloaded), or for the interval (1 s by default) when a replica does not confirm —
//! it is down, its subscription broke, it fell behind, or it runs a version without
//! confirmations. No request anywhere is served from a copy the change made stale once the
//! changing request has its answer. Without a bus (or with one that cannot say it listens)
//! every request asks the store, as before.
//!
//! Bounds: the freshness is a field of each session copy, so the cache holds at most one
//! entry per copy (`HttpConfig::max_sessions`), and goes with the copy.

use super::session::HttpSession;
use super::session_store::{CreateBounds, SessionRecord, SessionStore, Touched};
use super::store::StoreError;
use super::Inner;
use crate::correlation::Limits;
use crate::server::session::Negotiated;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a copy found alive and current is taken as such without asking the store:
/// `HttpConfig::session_touch_interval`, at most a quarter of the idle timeout.
pub(super) fn touch_interval(t: &Inner) -> Duration {
    t.config
        .session_touch_interval
        .min(t.config.session_idle_timeout / 4)
}

/// The router's generation, when freshness may be trusted at all.
fn generation(t: &Inner) -> Option<(u64, u64)> {
    t.sessions.router()?.generation()
}

/// Methods after which the session's record changed (log level, subscriptions).
pub(super) fn changes_record(method: &str) -> bool {
    matches!(
        method,
        "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe"
    )
}

/// Session `sid` as the store knows it: this replica's copy, refreshed when the record is
/// newer; restored when this replica has none; `None` when it is gone (and this copy with it).
/// One round trip, or none when `cached` and this copy was found alive and current less than
/// [`touch_interval`] ago (see the [module documentation](self)).
pub(super) async fn lookup(
    t: &Arc<Inner>,
    store: &dyn SessionStore,
    sid: &str,
    cached: bool,
) -> Result<Option<Arc<HttpSession>>, StoreError> {
    let local = t.sessions.get(sid);
    let asked_at = Instant::now();
    let generation = generation(t);
    if let (true, Some(s), Some(g)) = (cached, &local, generation) {
        if s.fresh.holds(asked_at, touch_interval(t), g) {
            return Ok(local);
        }
    }
    let known = local
        .as_ref()
        .map_or(0, |s| s.version.load(Ordering::Acquire));
    // Only a copy that was here before asking, with a version from the store, may be noted
    // fresh: one adopted now may have missed an invalidation before its router knew it, and
    // a store counts a touch with `known` 0 as one from a replica without a copy, which no
    // invalidation needs to reach (`Holders::caching`).
    let ticket = local
        .as_ref()
        .filter(|_| known != 0)
        .map(|s| s.fresh.ticket());
    let note = |s: &HttpSession| {
        if let (Some(heard), Some(g)) = (ticket, generation) {
            s.fresh.note(asked_at, heard, g);
        }
    };
    match store
        .touch(sid, known, t.config.session_idle_timeout)
        .await?
    {
        Touched::Gone => {
            if local.is_some() {
                t.sessions.remove(sid);
            }
            Ok(None)
        }
        Touched::Unchanged => {
            if let Some(s) = &local {
                note(s);
            }
            Ok(local)
        }
        Touched::Changed(version, record) => {
            let had_copy = local.is_some();
            let session = match local {
                Some(s) => s,
                None => match t.sessions.adopt(
                    sid,
                    t.config.max_sessions,
                    &t.closing,
                    t.config.event_store.clone(),
                    Limits::default().running(t.config.max_concurrent_requests.max(1)),
                ) {
                    Ok(s) => {
                        // This copy hears the server's events too (from every replica, through
                        // the bus): the standalone stream held here gets them.
                        crate::server::follow_events(
                            t.shared.clone(),
                            s.core.clone(),
                            s.closing.clone(),
                        );
                        t.sessions.start_sweeper(
                            t.config.session_idle_timeout,
                            t.config.session_handshake_timeout,
                            t.closing.clone(),
                        );
                        s
                    }
                    Err(_) => {
                        return Err(StoreError(
                            "this replica's session table is full of busy sessions".into(),
                        ))
                    }
                },
            };
            restore(&session, *record);
            session.version.store(version, Ordering::Release);
            if had_copy {
                note(&session);
            }
            Ok(Some(session))
        }
    }
}

fn restore(session: &HttpSession, record: SessionRecord) {
    let core = &session.core;
    let capabilities = serde_json::from_value(record.client_capabilities).unwrap_or_default();
    let client_info = record
        .client_info
        .and_then(|v| serde_json::from_value(v).ok())
        .map(Arc::new);
    core.set_negotiated(Negotiated {
        protocol_version: record.protocol_version.into(),
        client_capabilities: Arc::new(capabilities),
        client_info,
    });
    core.mark_initialized();
    if let Some(level) = record.log_level {
        core.set_log_level(level);
    }
    core.set_subscriptions(record.subscriptions);
    session.bind_owner(record.owner);
}

fn record_of(session: &HttpSession) -> Option<SessionRecord> {
    let core = &session.core;
    let negotiated = core.negotiated()?;
    Some(SessionRecord {
        protocol_version: negotiated.protocol_version.to_string(),
        client_capabilities: serde_json::to_value(&*negotiated.client_capabilities)
            .unwrap_or_default(),
        client_info: negotiated
            .client_info
            .and_then(|i| serde_json::to_value(&*i).ok()),
        log_level: core.log_level(),
        subscriptions: core.subscriptions(),
        owner: session.owner(),
    })
}

/// What [`create`] did.
pub(super) enum Created {
    /// The record is written (or there is no store).
    Saved,
    /// The fleet is full of sessions that made a request after `initialize`.
    Full,
    /// The store failed (logged).
    Failed,
}

/// Writes a new session's record (`initialize`) when there is a store, under the handshake
/// timeout and the fleet-wide bound (`HttpConfig::max_fleet_sessions`).
///
/// Its freshness is not noted: the session's first request after `initialize` asks the store
/// on whichever replica it lands, and that touch moves the record from the handshake timeout
/// to the idle timeout (and finds the session gone if the fleet bound ended it meanwhile).
pub(super) async fn create(t: &Arc<Inner>, session: &HttpSession) -> Created {
    let Some(store) = &t.config.session_store else {
        return Created::Saved;
    };
    let Some(record) = record_of(session) else {
        return Created::Saved;
    };
    let bounds = CreateBounds::new(
        t.config.session_handshake_timeout,
        t.config.session_idle_timeout,
        t.config.max_fleet_sessions,
    );
    match store.create(&session.id, &record, bounds).await {
        Ok(Some(version)) => {
            session.version.store(version, Ordering::Release);
            Created::Saved
        }
        Ok(None) => Created::Full,
        Err(e) => {
            tracing::warn!(session = %session.id, "session store: {e}");
            Created::Failed
        }
    }
}

/// Writes the record of a session whose state changed, when there is a store; `false` when
/// the store failed (the error is logged). The change is announced to the other replicas
/// ([`ended_or_changed`]) before this returns.
pub(super) async fn save(t: &Arc<Inner>, session: &HttpSession) -> bool {
    let Some(store) = &t.config.session_store else {
        return true;
    };
    let Some(record) = record_of(session) else {
        return true;
    };
    let asked_at = Instant::now();
    let generation = generation(t);
    let ticket = session.fresh.ticket();
    match store
        .save(&session.id, &record, false, t.config.session_idle_timeout)
        .await
    {
        Ok(Some(version)) => {
            session.version.store(version, Ordering::Release);
            // A save extends the idle expiry as a touch does.
            if let Some(g) = generation {
                session.fresh.note(asked_at, ticket, g);
            }
            ended_or_changed(t, session).await;
            true
        }
        Ok(None) => true,
        Err(e) => {
            tracing::warn!(session = %session.id, "session store: {e}");
            false
        }
    }
}

/// Tells the other replicas that `session`'s record changed or that it ended (the store has
/// it already), and returns once none of their copies can trust its freshness any more: each
/// confirmed, or the lease ([`touch_interval`]) ran out.
pub(super) async fn ended_or_changed(t: &Inner, session: &HttpSession) {
    let (Some(router), Some(scope)) = (t.sessions.router(), session.core.scope()) else {
        return;
    };
    if !router
        .invalidate(&session.id, scope, touch_interval(t))
        .await
    {
        tracing::debug!(
            session = %session.id,
            "not every other replica confirmed that this session changed or ended; waited \
             out the session touch interval instead"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::http::session::Freshness;

    #[test]
    fn a_noted_answer_holds_for_the_interval_under_the_same_generation_until_forgotten() {
        let f = Freshness::default();
        let t0 = Instant::now();
        let second = Duration::from_secs(1);
        assert!(!f.holds(t0, second, (1, 0)), "nothing noted yet");
        f.note(t0, f.ticket(), (1, 0));
        assert!(f.holds(t0 + Duration::from_millis(999), second, (1, 0)));
        assert!(!f.holds(t0 + second, second, (1, 0)), "one interval later");
        assert!(!f.holds(t0, Duration::ZERO, (1, 0)), "interval zero: never");
        // Another subscription, or a flush: void.
        assert!(!f.holds(t0, second, (2, 0)));
        assert!(!f.holds(t0, second, (1, 1)));
        // An invalidation heard while the store was being asked voids that answer too.
        let ticket = f.ticket();
        f.forget();
        assert!(!f.holds(t0, second, (1, 0)));
        f.note(t0, ticket, (1, 0));
        assert!(!f.holds(t0, second, (1, 0)));
        f.note(t0, f.ticket(), (1, 0));
        assert!(f.holds(t0, second, (1, 0)));
    }
}
