//! The Events extension's occurrences shared by replicas (features `redis` and `events`): one
//! Redis stream per event type, so that an occurrence emitted on any replica reaches the
//! `events/stream` subscriptions and `events/poll` cursors of every replica, in one order.
//!
//! - **Emit**: [`Events::emit`](crate::server::events::Events::emit) on a replica returns the
//!   occurrence's id at once and queues it (bounded: [`QUEUE`]; full, the emit fails with
//!   `EmitError::Backlog`); one task per replica appends the queue to the streams in order,
//!   `XADD PREFIX occurrences:{PREFIXocc}:NAME MAXLEN ~ RING`, pipelined, then wakes its own
//!   reader and tells the other replicas through the bus (`BusMessage::Occurrences`).
//! - **Read**: one task per replica reads what is new in every type's stream (`XREAD`, from
//!   the last id it has, [`READ_BATCH`] at a time) into the replica's rings, when woken and at
//!   least every [`SAFETY_POLL`] (a wake-up lost with a bus message costs that much delay,
//!   never an occurrence). A replica starting reads the newest `RING` of each stream first.
//! - **Positions**: a stream id `MS-SEQ` is position `MS << 20 | SEQ`, the same on every
//!   replica, and the cursors' epoch is derived from the key prefix, so a cursor one replica
//!   gave is understood by every other (and by the same replica after a restart). Stream ids
//!   follow Redis's clock, so they keep growing after Redis loses its data: an old cursor then
//!   reads what is new, and a cursor older than what a stream still holds is answered with
//!   `truncated: true`.
//!
//! The keys of all types share one hash tag (`{PREFIXocc}`), so one `XREAD` covers them on a
//! Redis Cluster too; each stream holds at most about `EventsConfig::ring` occurrences of at
//! most `SHARED_EVENT_BYTES` each.

use super::Redis;
use crate::server::bus::BusMessage;
use crate::server::events::Outgoing;
use crate::server::Server;
use ::redis::streams::{StreamId, StreamRangeReply, StreamReadReply};
use sha2::Digest as _;
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::mpsc;

/// Occurrences emitted on a replica and not yet stored, at most.
pub const QUEUE: usize = 4096;
/// Occurrences appended in one pipeline, at most.
const APPEND_BATCH: usize = 128;
/// Occurrences read per stream per `XREAD`, at most.
pub const READ_BATCH: usize = 256;
/// The longest a replica goes without reading the streams.
pub const SAFETY_POLL: Duration = Duration::from_secs(1);
/// Bits of a position holding the stream id's sequence number.
const SEQ_BITS: u32 = 20;

/// The stream of one event type.
fn key(prefix: &str, name: &str) -> String {
    format!("{prefix}occurrences:{{{prefix}occ}}:{name}")
}

/// A stream id (`MS-SEQ`) as a position.
fn position(id: &str) -> Option<u64> {
    let (ms, seq) = id.split_once('-')?;
    let ms: u64 = ms.parse().ok()?;
    let seq: u64 = seq.parse().ok()?;
    if ms >= 1 << (64 - SEQ_BITS) {
        return None;
    }
    Some(ms << SEQ_BITS | seq.min((1 << SEQ_BITS) - 1))
}

/// The fleet's cursor epoch: 8 hex digits of the key prefix's digest.
fn epoch(prefix: &str) -> String {
    let digest = sha2::Sha256::digest(format!("duomcp events {prefix}").as_bytes());
    digest[..4].iter().map(|b| format!("{b:02x}")).collect()
}

/// Shares `server`'s occurrences through `redis` (nothing when it declares no event type, or
/// shares them already). Called when the HTTP transport is built with
/// [`HttpConfig::redis`](crate::transport::http::HttpConfig::redis) (the transport holds it
/// as a closure, so that it does not import this module).
pub(crate) fn share(server: &Server, redis: &Redis) {
    let hub = server.shared.event_hub.clone();
    if !hub.is_enabled() {
        return;
    }
    let (tx, rx) = mpsc::channel::<Outgoing>(QUEUE);
    let sink = Box::new(move |o: Outgoing| tx.try_send(o).is_ok());
    if !hub.share(epoch(redis.prefix()), sink) {
        return;
    }
    let stop = server.shared.shutdown.clone();
    let names: Vec<String> = hub.type_names().map(str::to_owned).collect();
    tokio::spawn(append(server.clone(), redis.clone(), rx, stop.clone()));
    tokio::spawn(read(server.clone(), redis.clone(), names, stop));
}

/// Appends what the replica emits, in order.
async fn append(
    server: Server,
    redis: Redis,
    mut rx: mpsc::Receiver<Outgoing>,
    stop: tokio_util::sync::CancellationToken,
) {
    let hub = server.shared.event_hub.clone();
    let ring = hub.ring_len();
    let mut batch = Vec::with_capacity(APPEND_BATCH);
    loop {
        let n = tokio::select! {
            () = stop.cancelled() => return,
            n = rx.recv_many(&mut batch, APPEND_BATCH) => n,
        };
        if n == 0 {
            return;
        }
        let mut pipe = ::redis::pipe();
        for o in &batch {
            if o.gap {
                pipe.cmd("XADD")
                    .arg(key(redis.prefix(), &o.name))
                    .arg("MAXLEN")
                    .arg("~")
                    .arg(ring)
                    .arg("*")
                    .arg("g")
                    .arg(1)
                    .arg("t")
                    .arg(o.at_ms)
                    .ignore();
                continue;
            }
            pipe.cmd("XADD")
                .arg(key(redis.prefix(), &o.name))
                .arg("MAXLEN")
                .arg("~")
                .arg(ring)
                .arg("*")
                .arg("e")
                .arg(&o.event_id)
                .arg("t")
                .arg(o.at_ms)
                .arg("d")
                .arg(&o.data)
                .ignore();
        }
        let stored = redis
            .run("events", |mut c| async move {
                pipe.query_async::<()>(&mut c).await
            })
            .await;
        match stored {
            Ok(()) => {
                let mut names: Vec<&str> = batch.iter().map(|o| o.name.as_str()).collect();
                names.sort_unstable();
                names.dedup();
                if let Some(bus) = server.bus() {
                    for name in names {
                        bus.publish(BusMessage::Occurrences {
                            name: name.to_owned(),
                        });
                    }
                }
                hub.wake.notify_one();
            }
            Err(e) => {
                tracing::warn!(error = %e, lost = n, "events: occurrences not stored, lost");
            }
        }
        batch.clear();
    }
}

/// Reads what is new in the streams into the replica's rings.
async fn read(
    server: Server,
    redis: Redis,
    names: Vec<String>,
    stop: tokio_util::sync::CancellationToken,
) {
    let hub = server.shared.event_hub.clone();
    let keys: Vec<String> = names.iter().map(|n| key(redis.prefix(), n)).collect();
    let by_key: HashMap<&str, &str> = keys
        .iter()
        .map(String::as_str)
        .zip(names.iter().map(String::as_str))
        .collect();
    // The newest of each stream first; until that worked, nothing else.
    let mut last: Vec<String> = loop {
        match backfill(&server, &redis, &names, &keys).await {
            Ok(last) => break last,
            Err(e) => tracing::warn!(error = %e, "events: cannot read the shared occurrences yet"),
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(SAFETY_POLL) => {}
        }
    };
    let mut again = false;
    loop {
        if !again {
            tokio::select! {
                () = stop.cancelled() => return,
                () = hub.wake.notified() => {}
                () = tokio::time::sleep(SAFETY_POLL) => {}
            }
        }
        again = false;
        let (k, ids) = (keys.clone(), last.clone());
        let reply = redis
            .run("events", |mut c| async move {
                ::redis::cmd("XREAD")
                    .arg("COUNT")
                    .arg(READ_BATCH)
                    .arg("STREAMS")
                    .arg(&k)
                    .arg(&ids)
                    .query_async::<Option<StreamReadReply>>(&mut c)
                    .await
            })
            .await;
        let reply = match reply {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "events: cannot read the shared occurrences");
                continue;
            }
        };
        for stream in reply.map(|r| r.keys).unwrap_or_default() {
            let Some(name) = by_key.get(stream.key.as_str()) else {
                continue;
            };
            let Some(i) = keys.iter().position(|k| *k == stream.key) else {
                continue;
            };
            again |= stream.ids.len() >= READ_BATCH;
            for entry in &stream.ids {
                ingest(&server, name, entry, false);
                last[i].clone_from(&entry.id);
            }
        }
    }
}

/// Reads the newest `ring` occurrences of each stream; the last id of each.
async fn backfill(
    server: &Server,
    redis: &Redis,
    names: &[String],
    keys: &[String],
) -> Result<Vec<String>, super::RedisError> {
    let ring = server.shared.event_hub.ring_len();
    let mut last = Vec::with_capacity(keys.len());
    for (name, key) in names.iter().zip(keys) {
        let k = key.clone();
        let (newest, len): (StreamRangeReply, usize) = redis
            .run("events", |mut c| async move {
                ::redis::pipe()
                    .cmd("XREVRANGE")
                    .arg(&k)
                    .arg("+")
                    .arg("-")
                    .arg("COUNT")
                    .arg(ring)
                    .cmd("XLEN")
                    .arg(&k)
                    .query_async(&mut c)
                    .await
            })
            .await?;
        let gap = len > newest.ids.len();
        let mut first = true;
        for entry in newest.ids.iter().rev() {
            ingest(server, name, entry, gap && first);
            first = false;
        }
        last.push(
            newest
                .ids
                .first()
                .map_or_else(|| "0-0".to_owned(), |e| e.id.clone()),
        );
    }
    Ok(last)
}

/// One stream entry into the rings (an entry that is not one of ours is skipped).
fn ingest(server: &Server, name: &str, entry: &StreamId, gap_before: bool) {
    if entry.get::<u8>("g") == Some(1) {
        if let Some(position) = position(&entry.id) {
            server.shared.event_hub.ingest_gap(name, position);
        }
        return;
    }
    let (Some(position), Some(event_id), Some(at_ms), Some(data)) = (
        position(&entry.id),
        entry.get::<String>("e"),
        entry.get::<u64>("t"),
        entry.get::<String>("d"),
    ) else {
        tracing::warn!(stream = %name, id = %entry.id, "events: a stream entry not made by duomcp");
        return;
    };
    let Ok(data) = serde_json::from_str(&data) else {
        return;
    };
    server
        .shared
        .event_hub
        .ingest(name, position, event_id, at_ms, data, gap_before);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_ids_are_ordered_positions() {
        assert_eq!(position("0-0"), Some(0));
        assert_eq!(position("1-0"), Some(1 << 20));
        assert!(position("1-5") < position("2-0"));
        assert!(position("1765000000000-7") > position("1765000000000-6"));
        assert_eq!(position("5"), None);
        assert_eq!(position("x-1"), None);
        assert_eq!(position(&format!("{}-0", u64::MAX)), None);
        assert_eq!(epoch("duomcp:"), epoch("duomcp:"));
        assert_ne!(epoch("duomcp:"), epoch("other:"));
        assert_eq!(epoch("a").len(), 8);
        assert!(key("p:", "a.b").starts_with("p:occurrences:{p:occ}:"));
    }
}
