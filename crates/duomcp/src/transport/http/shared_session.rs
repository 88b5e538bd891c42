//! The legacy side's use of a [`SessionStore`]: restoring a session minted by another replica,
//! dropping one ended elsewhere, writing the record when it changes.

use super::session::HttpSession;
use super::session_store::{SessionRecord, SessionStore, Touched};
use super::store::StoreError;
use super::Inner;
use crate::correlation::Limits;
use crate::server::session::Negotiated;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Methods after which the session's record changed (log level, subscriptions).
pub(super) fn changes_record(method: &str) -> bool {
    matches!(
        method,
        "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe"
    )
}

/// Session `sid` as the store knows it: this replica's copy, refreshed when the record is
/// newer; restored when this replica has none; `None` when it is gone (and this copy with it).
/// One round trip.
pub(super) async fn lookup(
    t: &Arc<Inner>,
    store: &dyn SessionStore,
    sid: &str,
) -> Result<Option<Arc<HttpSession>>, StoreError> {
    let local = t.sessions.get(sid);
    let known = local
        .as_ref()
        .map_or(0, |s| s.version.load(Ordering::Acquire));
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
        Touched::Unchanged => Ok(local),
        Touched::Changed(version, record) => {
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

/// Writes the session's record when there is a store (`create`: after `initialize`); `false`
/// when the store failed (the error is logged).
pub(super) async fn save(t: &Arc<Inner>, session: &HttpSession, create: bool) -> bool {
    let Some(store) = &t.config.session_store else {
        return true;
    };
    let Some(record) = record_of(session) else {
        return true;
    };
    match store
        .save(&session.id, &record, create, t.config.session_idle_timeout)
        .await
    {
        Ok(Some(version)) => {
            session.version.store(version, Ordering::Release);
            true
        }
        Ok(None) => true,
        Err(e) => {
            tracing::warn!(session = %session.id, "session store: {e}");
            false
        }
    }
}
