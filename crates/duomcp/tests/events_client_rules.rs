//! The events client against a scripted server, in both revisions: what the design asks of a
//! client beyond the happy path. No `events/*` request to a server that does not declare the
//! extension; a type that cannot replay (`cursor: null`, or none) is never sent a cursor back;
//! `notifications/events/list_changed` makes `Client::event_types` list again; a push stream
//! silent for too long is reopened from the last cursor; `Client::keep_webhook` subscribes
//! again before `refreshBefore` and stops when dropped.

#![cfg(all(feature = "events", feature = "client"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::client::events::{DeliveryMode, PollOptions, SubscribeOptions, WebhookOptions};
use duomcp::client::{Client, ClientError, EraChoice, RequestOptions};
use duomcp::transport::memory::{Connection, MemoryTransport, Side, Tap};
use duomcp::webhook::Secret;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;

/// What a script hands each message the client sends (but the handshake): the message, and
/// where to send anything, now or later. Its return is the response, if any.
type Handler = Box<dyn FnMut(&Value, &mpsc::UnboundedSender<Value>) -> Option<Value> + Send>;

const ERAS: [EraChoice; 2] = [EraChoice::Legacy, EraChoice::Modern];

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("timed out")
}

/// A client of a scripted server in `era` declaring `caps`; the tap records both ways.
async fn scripted(era: EraChoice, caps: Value, mut handler: Handler) -> (Client, Tap) {
    let (client_end, mut server_end, tap) = Connection::tapped();
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Value>();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                m = server_end.recv() => {
                    let Some(m) = m else { return };
                    let Ok(msg) = serde_json::from_slice::<Value>(&m) else { continue };
                    let reply = match msg["method"].as_str() {
                        Some("initialize") => Some(json!({
                            "protocolVersion": "2025-11-25",
                            "capabilities": caps,
                            "serverInfo": { "name": "scripted", "version": "0" }
                        })),
                        Some("server/discover") => Some(json!({
                            "resultType": "complete",
                            "supportedVersions": ["2026-07-28"],
                            "capabilities": caps,
                            "ttlMs": 0,
                            "cacheScope": "public"
                        })),
                        _ if msg.get("id").is_none() && msg["method"] == "notifications/initialized" => None,
                        _ => handler(&msg, &out_tx),
                    };
                    if let (Some(result), Some(id)) = (reply, msg.get("id")) {
                        let r = json!({ "jsonrpc": "2.0", "id": id, "result": result });
                        if server_end.send_json(&r).await.is_err() {
                            return;
                        }
                    }
                }
                Some(out) = out_rx.recv() => {
                    if server_end.send_json(&out).await.is_err() {
                        return;
                    }
                }
            }
        }
    });
    let client = within(
        Client::builder()
            .era(era)
            .connect_transport(MemoryTransport::new(client_end)),
    )
    .await
    .unwrap();
    (client, tap)
}

fn declared() -> Value {
    json!({ "events": {} })
}

/// The requests of `method` the client sent, with when (from the tap's start).
fn sent(tap: &Tap, method: &str) -> Vec<(Duration, Value)> {
    tap.messages()
        .into_iter()
        .filter(|m| m.from == Side::Client)
        .map(|m| (m.at, m.json()))
        .filter(|(_, v)| v["method"] == method)
        .collect()
}

fn notification(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

#[tokio::test]
async fn no_events_request_to_a_server_without_the_extension() {
    for era in ERAS {
        let (client, tap) = scripted(
            era,
            json!({ "tools": {} }),
            Box::new(|_, _| Some(json!({ "events": [] }))),
        )
        .await;
        assert!(!client.offers_events());
        let unsupported = |r: Result<(), ClientError>| match r {
            Err(ClientError::Unsupported(why)) => assert!(why.contains("events"), "{why}"),
            other => panic!("{era}: {other:?}"),
        };
        unsupported(client.list_events(None).await.map(drop));
        unsupported(client.event_types().await.map(drop));
        unsupported(
            client
                .poll_events("t", json!({}), None, PollOptions::default())
                .await
                .map(drop),
        );
        for mode in [DeliveryMode::Poll, DeliveryMode::Push, DeliveryMode::Auto] {
            unsupported(
                client
                    .subscribe_events("t", json!({}), SubscribeOptions::new(mode))
                    .await
                    .map(drop),
            );
        }
        let options = WebhookOptions::new("https://hooks.example.com/x", Secret::generate());
        unsupported(
            client
                .subscribe_webhook("t", json!({}), &options)
                .await
                .map(drop),
        );
        unsupported(
            client
                .keep_webhook("t", json!({}), options.clone())
                .await
                .map(drop),
        );
        unsupported(
            client
                .unsubscribe_webhook("t", json!({}), &options.url)
                .await,
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        let events: Vec<_> = tap
            .from(Side::Client)
            .into_iter()
            .filter(|m| {
                m["method"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("events/"))
            })
            .collect();
        assert!(events.is_empty(), "{era}: {events:?}");
    }
}

#[tokio::test]
async fn the_extension_declared_under_its_id_counts_too() {
    for era in ERAS {
        let caps = json!({ "extensions": { "io.modelcontextprotocol/events": {} } });
        let (client, tap) = scripted(
            era,
            caps,
            Box::new(|_, _| Some(json!({ "events": [{ "name": "a", "delivery": ["poll"] }] }))),
        )
        .await;
        assert!(client.offers_events(), "{era}");
        let page = within(client.list_events(None)).await.unwrap();
        assert_eq!(page.events[0].name, "a");
        assert_eq!(sent(&tap, "events/list").len(), 1);
    }
}

/// Polls: answers `cursors[i]` (a string, `null`, or absent for `Value::Bool(false)`) to the
/// i-th poll, the last one after that; the cursors the client sent.
async fn poll_with(era: EraChoice, cursors: Vec<Value>, polls: usize) -> Vec<Value> {
    let mut n = 0;
    let (client, tap) = scripted(
        era,
        declared(),
        Box::new(move |msg, _| {
            assert_eq!(msg["method"], "events/poll");
            let c = cursors[n.min(cursors.len() - 1)].clone();
            n += 1;
            let mut r = json!({ "events": [], "hasMore": false, "nextPollMs": 0 });
            if c != json!(false) {
                r["cursor"] = c;
            }
            Some(r)
        }),
    )
    .await;
    let options = SubscribeOptions::new(DeliveryMode::Poll).min_poll(Duration::from_millis(20));
    let mut sub = within(client.subscribe_events("t", json!({}), options))
        .await
        .unwrap();
    within(async {
        while sent(&tap, "events/poll").len() < polls {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    // Nothing went wrong on the way.
    assert!(
        tokio::time::timeout(Duration::from_millis(10), sub.next())
            .await
            .is_err(),
        "{era}"
    );
    drop(sub);
    sent(&tap, "events/poll")
        .into_iter()
        .take(polls)
        .map(|(_, m)| m["params"]["cursor"].clone())
        .collect()
}

#[tokio::test]
async fn a_type_that_cannot_replay_is_never_sent_a_cursor() {
    for era in ERAS {
        // `cursor: null`, then no cursor at all: every poll sends null, and polling goes on.
        let sent = poll_with(era, vec![Value::Null, json!(false)], 4).await;
        assert_eq!(sent, vec![Value::Null; 4], "{era}");
        // A cursor is carried; a null after it is not replaced by the older one.
        let sent = poll_with(era, vec![json!("c1"), Value::Null, json!(false)], 4).await;
        assert_eq!(
            sent,
            [Value::Null, json!("c1"), Value::Null, Value::Null],
            "{era}"
        );
    }
}

#[tokio::test]
async fn a_push_stream_of_a_type_that_cannot_replay_reopens_with_a_null_cursor() {
    for era in ERAS {
        let (client, tap) = scripted(
            era,
            declared(),
            Box::new(|msg, out| {
                if msg["method"] != "events/stream" {
                    return None;
                }
                let meta = json!({ "io.modelcontextprotocol/subscriptionId": msg["id"] });
                let out = out.clone();
                let id = msg["id"].clone();
                tokio::spawn(async move {
                    let send = |m: Value| out.send(m).is_ok();
                    send(notification(
                        "notifications/events/active",
                        json!({ "cursor": null, "truncated": false, "_meta": meta }),
                    ));
                    send(notification(
                        "notifications/events/event",
                        json!({ "eventId": "e1", "name": "t", "timestamp": "2026-02-19T16:30:00Z",
                                "data": {}, "cursor": null, "_meta": meta }),
                    ));
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    send(notification(
                        "notifications/events/heartbeat",
                        json!({ "_meta": meta }),
                    ));
                    // The server ends the stream.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    send(json!({ "jsonrpc": "2.0", "id": id, "result": { "_meta": {} } }));
                });
                None
            }),
        )
        .await;
        let options = SubscribeOptions::new(DeliveryMode::Push).min_poll(Duration::from_millis(20));
        let mut sub = within(client.subscribe_events("t", json!({}), options))
            .await
            .unwrap();
        within(async {
            while sent(&tap, "events/stream").len() < 3 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        assert!(matches!(within(sub.next()).await, Some(Ok(_))));
        assert_eq!(sub.cursor(), None);
        drop(sub);
        for (_, m) in sent(&tap, "events/stream") {
            assert_eq!(m["params"]["cursor"], Value::Null, "{era}: {m}");
        }
    }
}

#[tokio::test]
async fn a_silent_push_stream_is_reopened_from_the_last_cursor() {
    for era in ERAS {
        let streams = Arc::new(Mutex::new(0));
        let (client, tap) = scripted(
            era,
            declared(),
            Box::new({
                let streams = streams.clone();
                move |msg, out| {
                    if msg["method"] != "events/stream" {
                        return None;
                    }
                    let first = {
                        let mut n = streams.lock().unwrap();
                        *n += 1;
                        *n == 1
                    };
                    let meta = json!({ "io.modelcontextprotocol/subscriptionId": msg["id"] });
                    let out = out.clone();
                    tokio::spawn(async move {
                        let at = |n: u32| json!(format!("p-{n}"));
                        let _ = out.send(notification(
                            "notifications/events/active",
                            json!({ "cursor": at(0), "truncated": false, "_meta": meta }),
                        ));
                        // The first stream: four heartbeats 100 ms apart, then silence (not
                        // closed). Later ones: heartbeats until the client hangs up.
                        for n in 1.. {
                            if first && n > 4 {
                                return;
                            }
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            let hb = notification(
                                "notifications/events/heartbeat",
                                json!({ "cursor": at(n), "_meta": meta }),
                            );
                            if out.send(hb).is_err() {
                                return;
                            }
                        }
                    });
                    None
                }
            }),
        )
        .await;
        let sub = within(client.subscribe_events(
            "t",
            json!({}),
            SubscribeOptions::new(DeliveryMode::Push),
        ))
        .await
        .unwrap();
        within(async {
            while sent(&tap, "events/stream").len() < 2 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        let streams_sent = sent(&tap, "events/stream");
        let (opened, first) = &streams_sent[0];
        let (reopened, second) = &streams_sent[1];
        assert_eq!(first["params"]["cursor"], Value::Null, "{era}");
        // From the cursor of the last heartbeat…
        assert_eq!(second["params"]["cursor"], "p-4", "{era}");
        // …after the 1 s floor of twice the 100 ms interval, counted from that heartbeat
        // (~400 ms after the open), and long before the 60 s used before any heartbeat (the
        // ceiling leaves room for a loaded machine).
        let after = *reopened - *opened;
        assert!(
            after >= Duration::from_millis(1300) && after < Duration::from_millis(6000),
            "{era}: reopened {after:?} after opening"
        );
        // 2026-07-28 and 2025-11-25 alike over this byte pipe: the dead one was cancelled.
        let cancelled = sent(&tap, "notifications/cancelled");
        assert!(
            cancelled
                .iter()
                .any(|(_, m)| m["params"]["requestId"] == first["id"]),
            "{era}: {cancelled:?}"
        );
        // A stream that keeps its heartbeats is kept.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(sent(&tap, "events/stream").len(), 2, "{era}");
        drop(sub);
    }
}

#[tokio::test]
async fn an_explicit_stale_after_is_used_as_it_is() {
    for era in ERAS {
        let (client, tap) = scripted(
            era,
            declared(),
            Box::new(|msg, out| {
                if msg["method"] == "events/stream" {
                    let meta = json!({ "io.modelcontextprotocol/subscriptionId": msg["id"] });
                    let _ = out.send(notification(
                        "notifications/events/active",
                        json!({ "cursor": "p-0", "truncated": false, "_meta": meta }),
                    ));
                }
                None
            }),
        )
        .await;
        let options =
            SubscribeOptions::new(DeliveryMode::Push).stale_after(Duration::from_millis(200));
        let sub = within(client.subscribe_events("t", json!({}), options))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1100)).await;
        drop(sub);
        let streams = sent(&tap, "events/stream");
        // One every ~200 ms of silence: about five in the second, never a tight loop.
        assert!((3..=7).contains(&streams.len()), "{era}: {}", streams.len());
        for (_, m) in &streams[1..] {
            assert_eq!(m["params"]["cursor"], "p-0", "{era}");
        }
    }
}

#[tokio::test]
async fn list_changed_makes_event_types_list_again() {
    for era in ERAS {
        let lists = Arc::new(Mutex::new(0));
        let (client, tap) = scripted(
            era,
            declared(),
            Box::new({
                let lists = lists.clone();
                move |msg, out| match msg["method"].as_str() {
                    Some("events/list") => {
                        let mut n = lists.lock().unwrap();
                        *n += 1;
                        let mut types = vec![json!({ "name": "a", "delivery": ["poll"] })];
                        if *n > 1 {
                            types.push(json!({ "name": "b", "delivery": ["push"] }));
                        }
                        Some(json!({ "events": types }))
                    }
                    // The script's trigger: a burst of five list_changed, then the answer.
                    Some("test/burst") => {
                        for _ in 0..5 {
                            let _ = out
                                .send(notification("notifications/events/list_changed", json!({})));
                        }
                        Some(json!({}))
                    }
                    _ => Some(json!({})),
                }
            }),
        )
        .await;
        let mut types = within(client.event_types()).await.unwrap();
        assert_eq!(types.current().len(), 1, "{era}");
        assert!(types.get("b").is_none());
        within(burst(&client)).await;
        let now = within(types.changed()).await.unwrap();
        assert_eq!(now.len(), 2, "{era}");
        assert_eq!(types.get("b").unwrap().delivery, ["push"]);
        // The burst is answered by one listing (two if it straddled one).
        tokio::time::sleep(Duration::from_millis(1300)).await;
        let n = sent(&tap, "events/list").len();
        assert!((2..=3).contains(&n), "{era}: {n} listings for one burst");
        // Dropped: no more listing.
        drop(types);
        within(burst(&client)).await;
        tokio::time::sleep(Duration::from_millis(1300)).await;
        assert_eq!(sent(&tap, "events/list").len(), n, "{era}");
    }
}

/// Asks the script for a burst of `list_changed`.
async fn burst(client: &Client) {
    client
        .request_object(
            "test/burst",
            serde_json::Map::new(),
            RequestOptions::default(),
        )
        .await
        .unwrap();
}

/// `t` as RFC 3339, UTC, in milliseconds.
fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap();
    let (secs, ms) = (d.as_secs() as i64, d.subsec_millis());
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // H. Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[test]
fn the_test_formatter_is_right() {
    assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
    let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_771_518_600_250);
    assert_eq!(rfc3339(t), "2026-02-19T16:30:00.250Z");
}

/// When each `events/subscribe` arrived, and until when it was granted (`None`: refused).
type Grants = Arc<Mutex<Vec<(SystemTime, Option<SystemTime>)>>>;

/// A webhook script: each `events/subscribe` granted `grant` from now, with cursor `w-{n}`
/// (or `null` when `replay` is false); the n-th (from 0) answered with `fail` if it says so.
fn webhooks(
    grant: Duration,
    replay: bool,
    fail: impl Fn(usize) -> Option<(i64, &'static str)> + Send + 'static,
    grants: Grants,
) -> Handler {
    let mut n = 0;
    Box::new(move |msg, out| {
        assert_eq!(msg["method"], "events/subscribe");
        let k = n;
        n += 1;
        let now = SystemTime::now();
        if let Some((code, message)) = fail(k) {
            grants.lock().unwrap().push((now, None));
            let _ = out.send(json!({ "jsonrpc": "2.0", "id": msg["id"],
                "error": { "code": code, "message": message } }));
            return None;
        }
        let until = now + grant;
        grants.lock().unwrap().push((now, Some(until)));
        Some(json!({
            "id": "sub-1",
            "refreshBefore": rfc3339(until),
            "cursor": if replay { json!(format!("w-{k}")) } else { Value::Null },
            "truncated": false
        }))
    })
}

#[tokio::test]
async fn keep_webhook_refreshes_before_refresh_before_and_stops_when_dropped() {
    let run = |era: EraChoice, replay: bool| async move {
        let grants: Grants = Arc::default();
        let (client, tap) = scripted(
            era,
            declared(),
            webhooks(
                Duration::from_millis(2500),
                replay,
                |_| None,
                grants.clone(),
            ),
        )
        .await;
        let options = WebhookOptions::new("https://hooks.example.com/x", Secret::generate());
        let mut kept = within(client.keep_webhook("t", json!({ "k": 1 }), options))
            .await
            .unwrap();
        assert_eq!(kept.subscription().id, "sub-1");
        // Two refreshes (each half-way to its grant's end, ~1.25 s).
        for _ in 0..2 {
            within(kept.next()).await.unwrap().unwrap();
        }
        // What the receiver got in a delivery is what the next refresh sends.
        kept.set_cursor(Some("from-a-delivery".into()));
        within(kept.next()).await.unwrap().unwrap();
        drop(kept);
        let subs = sent(&tap, "events/subscribe");
        assert_eq!(subs.len(), 4, "{era}");
        let grants = grants.lock().unwrap().clone();
        for (i, (_, m)) in subs.iter().enumerate() {
            // The same key every time…
            assert_eq!(m["params"]["name"], "t");
            assert_eq!(m["params"]["arguments"], json!({ "k": 1 }));
            assert_eq!(m["params"]["delivery"], subs[0].1["params"]["delivery"]);
            if i == 0 {
                assert_eq!(m["params"]["cursor"], Value::Null);
                continue;
            }
            // …before the previous grant ran out…
            let (arrived, _) = grants[i];
            let until = grants[i - 1].1.unwrap();
            assert!(arrived < until, "{era} {replay}: refresh {i} late");
            // …from the last cursor: the grant's (never one for a type that cannot replay),
            // or the one handed over.
            let expect = match (i, replay) {
                (3, _) => json!("from-a-delivery"),
                (_, true) => json!(format!("w-{}", i - 1)),
                (_, false) => Value::Null,
            };
            assert_eq!(m["params"]["cursor"], expect, "{era} {replay}: refresh {i}");
        }
        // Dropped: no more refreshing.
        tokio::time::sleep(Duration::from_millis(2000)).await;
        assert_eq!(sent(&tap, "events/subscribe").len(), 4, "{era}");
    };
    tokio::join!(
        run(EraChoice::Legacy, true),
        run(EraChoice::Modern, true),
        run(EraChoice::Legacy, false),
        run(EraChoice::Modern, false),
    );
}

#[tokio::test]
async fn keep_webhook_retries_a_failed_refresh_and_stops_at_a_refusal() {
    let run = |era: EraChoice| async move {
        let grants: Grants = Arc::default();
        // The first refresh fails (retried), the second succeeds, the third is refused.
        let fail = |n: usize| match n {
            1 => Some((-32603, "try again")),
            3 => Some((-32012, "Forbidden")),
            _ => None,
        };
        let (client, tap) = scripted(
            era,
            declared(),
            webhooks(Duration::from_millis(2000), true, fail, grants),
        )
        .await;
        let options = WebhookOptions::new("https://hooks.example.com/x", Secret::generate());
        let mut kept = within(client.keep_webhook("t", json!({}), options))
            .await
            .unwrap();
        assert!(matches!(
            within(kept.next()).await,
            Some(Err(ClientError::Rpc { .. }))
        ));
        assert!(matches!(within(kept.next()).await, Some(Ok(_))));
        match within(kept.next()).await {
            Some(Err(ClientError::Rpc { error, .. })) => assert_eq!(error.code, -32012),
            other => panic!("{era}: {other:?}"),
        }
        assert!(within(kept.next()).await.is_none(), "{era}");
        assert_eq!(sent(&tap, "events/subscribe").len(), 4, "{era}");
    };
    tokio::join!(run(EraChoice::Legacy), run(EraChoice::Modern));
}

#[tokio::test]
async fn truncated_is_ignored_for_a_type_that_cannot_replay() {
    for era in ERAS {
        // Poll: `truncated` with `cursor: null`, then with a cursor.
        let mut n = 0;
        let (client, _) = scripted(
            era,
            declared(),
            Box::new(move |_, _| {
                n += 1;
                let cursor = if n == 1 { Value::Null } else { json!("c") };
                let events = if n <= 2 {
                    json!([{ "eventId": format!("e{n}"), "name": "t",
                             "timestamp": "2026-02-19T16:30:00Z", "data": {} }])
                } else {
                    json!([])
                };
                Some(
                    json!({ "events": events, "cursor": cursor, "truncated": n <= 2,
                             "hasMore": false, "nextPollMs": 0 }),
                )
            }),
        )
        .await;
        let options = SubscribeOptions::new(DeliveryMode::Poll).min_poll(Duration::from_millis(20));
        let mut sub = within(client.subscribe_events("t", json!({}), options))
            .await
            .unwrap();
        let mut items = Vec::new();
        for _ in 0..3 {
            items.push(within(sub.next()).await.unwrap().unwrap());
        }
        let kinds: Vec<_> = items
            .iter()
            .map(|i| match i {
                duomcp::client::events::EventItem::Event(e) => e.event_id.clone(),
                _ => "gap".to_owned(),
            })
            .collect();
        assert_eq!(kinds, ["e1", "gap", "e2"], "{era}");

        // Push: an `active` with `truncated` and `cursor: null` is no gap.
        let (client, _) = scripted(
            era,
            declared(),
            Box::new(|msg, out| {
                if msg["method"] == "events/stream" {
                    let meta = json!({ "io.modelcontextprotocol/subscriptionId": msg["id"] });
                    let _ = out.send(notification(
                        "notifications/events/active",
                        json!({ "cursor": null, "truncated": true, "_meta": meta }),
                    ));
                    let _ = out.send(notification(
                        "notifications/events/event",
                        json!({ "eventId": "e1", "name": "t", "timestamp": "2026-02-19T16:30:00Z",
                                "data": {}, "cursor": null, "_meta": meta }),
                    ));
                }
                None
            }),
        )
        .await;
        let mut sub = within(client.subscribe_events(
            "t",
            json!({}),
            SubscribeOptions::new(DeliveryMode::Push),
        ))
        .await
        .unwrap();
        match within(sub.next()).await {
            Some(Ok(duomcp::client::events::EventItem::Event(e))) => {
                assert_eq!(e.event_id, "e1", "{era}")
            }
            other => panic!("{era}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_slow_reader_does_not_make_a_stream_look_dead() {
    for era in ERAS {
        let (client, tap) = scripted(
            era,
            declared(),
            Box::new(|msg, out| {
                if msg["method"] != "events/stream" {
                    return None;
                }
                let meta = json!({ "io.modelcontextprotocol/subscriptionId": msg["id"] });
                let out = out.clone();
                tokio::spawn(async move {
                    for n in 0..20 {
                        let e = notification(
                            "notifications/events/event",
                            json!({ "eventId": format!("e{n}"), "name": "t",
                                    "timestamp": "2026-02-19T16:30:00Z", "data": {},
                                    "cursor": format!("c{n}"), "_meta": meta }),
                        );
                        if out.send(e).is_err() {
                            return;
                        }
                    }
                    loop {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        let hb = notification(
                            "notifications/events/heartbeat",
                            json!({ "cursor": "c19", "_meta": meta }),
                        );
                        if out.send(hb).is_err() {
                            return;
                        }
                    }
                });
                None
            }),
        )
        .await;
        // A channel of one, a reader that sleeps, a limit shorter than the nap.
        let mut options =
            SubscribeOptions::new(DeliveryMode::Push).stale_after(Duration::from_millis(150));
        options.buffer = 1;
        let mut sub = within(client.subscribe_events("t", json!({}), options))
            .await
            .unwrap();
        for n in 0..20 {
            // Five naps of twice the limit, while frames wait in the buffers.
            if n < 5 {
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            match within(sub.next()).await {
                Some(Ok(duomcp::client::events::EventItem::Event(e))) => {
                    assert_eq!(e.event_id, format!("e{n}"), "{era}")
                }
                other => panic!("{era}: {other:?}"),
            }
        }
        assert_eq!(sent(&tap, "events/stream").len(), 1, "{era}");
    }
}
