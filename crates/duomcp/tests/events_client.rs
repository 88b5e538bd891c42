//! The events extension from the client's side: `Client::list_events`, `poll_events` and
//! `subscribe_events` (poll and push) against an in-process server, over Streamable HTTP on a
//! real socket and over the in-memory transport, in both revisions; against a hostile server
//! speaking raw JSON lines; and against a scripted HTTP server that sends
//! `notifications/events/list_changed` on a poll's SSE response.

#![cfg(all(feature = "events", feature = "http-server", feature = "http-client"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::client::events::{DeliveryMode, EventItem, PollOptions, SubscribeOptions};
use duomcp::client::{Client, ClientError, EraChoice};
use duomcp::server::events::{Delivery, EventType, EventsConfig};
use duomcp::server::Server;
use duomcp::transport::http::StreamableHttp;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("timed out")
}

fn server() -> Server {
    let mut config = EventsConfig::default();
    config.next_poll = Duration::from_millis(50);
    config.heartbeat = Duration::from_millis(100);
    Server::builder()
        .name("events-client-test")
        .event(
            EventType::new("order.created")
                .input_schema(json!({
                    "type": "object",
                    "properties": { "shop": { "type": "string" } },
                    "additionalProperties": false
                }))
                .filter(|args, data| match args.get("shop") {
                    Some(shop) => data.get("shop") == Some(shop),
                    None => true,
                }),
        )
        .event(EventType::new("audit.entry").delivery([Delivery::Poll]))
        .events_config(config)
        .build()
}

/// A client of `server` over HTTP (`http: true`) or in memory.
async fn connect(server: &Server, era: EraChoice, http: bool) -> Client {
    if http {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(StreamableHttp::new(server.clone()).serve(listener));
        within(
            Client::builder()
                .era(era)
                .connect_http(&format!("http://{addr}/mcp")),
        )
        .await
        .unwrap()
    } else {
        let (transport, serving) = duomcp::transport::memory::pair(server.clone());
        std::mem::forget(serving);
        within(Client::builder().era(era).connect_transport(transport))
            .await
            .unwrap()
    }
}

const CASES: [(EraChoice, bool); 4] = [
    (EraChoice::Legacy, true),
    (EraChoice::Modern, true),
    (EraChoice::Legacy, false),
    (EraChoice::Modern, false),
];

fn fast(mode: DeliveryMode) -> SubscribeOptions {
    SubscribeOptions::new(mode).min_poll(Duration::from_millis(20))
}

async fn next_event(sub: &mut duomcp::client::events::EventSubscription) -> Value {
    loop {
        match within(sub.next()).await {
            Some(Ok(EventItem::Event(e))) => return e.data,
            Some(Ok(_)) => continue,
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn list_and_poll_in_both_revisions() {
    for (era, http) in CASES {
        let server = server();
        let client = connect(&server, era, http).await;
        let page = within(client.list_events(None)).await.unwrap();
        let names: Vec<_> = page.events.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["audit.entry", "order.created"], "{era} {http}");
        assert_eq!(page.events[0].delivery, ["poll"]);

        let first =
            within(client.poll_events("order.created", json!({}), None, PollOptions::default()))
                .await
                .unwrap();
        assert!(first.events.is_empty());
        server
            .events()
            .emit("order.created", json!({ "n": 1 }))
            .unwrap();
        server
            .events()
            .emit("order.created", json!({ "n": 2 }))
            .unwrap();
        let next = within(client.poll_events(
            "order.created",
            json!({}),
            first.cursor,
            PollOptions::default(),
        ))
        .await
        .unwrap();
        let data: Vec<_> = next.events.iter().map(|e| e.data["n"].clone()).collect();
        assert_eq!(data, [json!(1), json!(2)], "{era} {http}");
        assert!(!next.truncated && !next.has_more);
        assert_eq!(next.next_poll, Duration::from_millis(50));
    }
}

#[tokio::test]
async fn subscriptions_in_poll_and_push_mode_get_new_events_in_order_once() {
    for (era, http) in CASES {
        for mode in [DeliveryMode::Poll, DeliveryMode::Push, DeliveryMode::Auto] {
            let server = server();
            let client = connect(&server, era, http).await;
            server
                .events()
                .emit("order.created", json!({ "n": 0 }))
                .unwrap();
            // ANCHOR: subscribe
            let options = SubscribeOptions::new(mode).min_poll(Duration::from_millis(20));
            let mut sub = within(client.subscribe_events("order.created", json!({}), options))
                .await
                .unwrap();
            // ANCHOR_END: subscribe
            let expect = if mode == DeliveryMode::Poll {
                DeliveryMode::Poll
            } else {
                DeliveryMode::Push
            };
            assert_eq!(sub.mode(), expect);
            // Let the subscription take its starting point.
            tokio::time::sleep(Duration::from_millis(150)).await;
            for n in 1..=5 {
                server
                    .events()
                    .emit("order.created", json!({ "n": n }))
                    .unwrap();
            }
            // ANCHOR: receive
            for n in 1..=5 {
                // EventItem::Event(occurrence) in order, once each; EventItem::Truncated for a gap.
                assert_eq!(
                    next_event(&mut sub).await,
                    json!({ "n": n }),
                    "{era} {http} {mode:?}"
                );
            }
            // ANCHOR_END: receive
            // Nothing more (no duplicates) within a few polls / heartbeats.
            let more = tokio::time::timeout(Duration::from_millis(300), sub.next()).await;
            assert!(more.is_err(), "{era} {http} {mode:?}: {more:?}");
            assert!(sub.cursor().is_some());
        }
    }
}

#[tokio::test]
async fn a_poll_only_type_is_polled_in_auto_mode_and_refused_in_push_mode() {
    let server = server();
    let client = connect(&server, EraChoice::Modern, true).await;
    let sub = within(client.subscribe_events("audit.entry", json!({}), fast(DeliveryMode::Auto)))
        .await
        .unwrap();
    assert_eq!(sub.mode(), DeliveryMode::Poll);
    let mut push =
        within(client.subscribe_events("audit.entry", json!({}), fast(DeliveryMode::Push)))
            .await
            .unwrap();
    assert!(matches!(
        within(push.next()).await,
        Some(Err(ClientError::Rpc { .. }))
    ));
}

#[tokio::test]
async fn the_cursor_carries_across_a_reconnect() {
    for mode in [DeliveryMode::Poll, DeliveryMode::Push] {
        for era in [EraChoice::Legacy, EraChoice::Modern] {
            let server = server();
            let client = connect(&server, era, true).await;
            let mut sub = within(client.subscribe_events("order.created", json!({}), fast(mode)))
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(150)).await;
            server
                .events()
                .emit("order.created", json!({ "n": 1 }))
                .unwrap();
            assert_eq!(next_event(&mut sub).await, json!({ "n": 1 }));
            tokio::time::sleep(Duration::from_millis(150)).await;
            let cursor = sub.cursor().unwrap();
            drop(sub);
            server
                .events()
                .emit("order.created", json!({ "n": 2 }))
                .unwrap();
            server
                .events()
                .emit("order.created", json!({ "n": 3 }))
                .unwrap();
            // A new connection, from the old cursor: exactly what it missed.
            let client = connect(&server, era, true).await;
            let mut sub = within(client.subscribe_events(
                "order.created",
                json!({}),
                fast(mode).cursor(cursor),
            ))
            .await
            .unwrap();
            assert_eq!(
                next_event(&mut sub).await,
                json!({ "n": 2 }),
                "{era} {mode:?}"
            );
            assert_eq!(
                next_event(&mut sub).await,
                json!({ "n": 3 }),
                "{era} {mode:?}"
            );
        }
    }
}

#[tokio::test]
async fn two_subscriptions_with_different_arguments_each_get_their_own() {
    for (era, http) in CASES {
        for mode in [DeliveryMode::Poll, DeliveryMode::Push] {
            let server = server();
            let client = connect(&server, era, http).await;
            let mut a = within(client.subscribe_events(
                "order.created",
                json!({ "shop": "a" }),
                fast(mode),
            ))
            .await
            .unwrap();
            let mut b = within(client.subscribe_events(
                "order.created",
                json!({ "shop": "b" }),
                fast(mode),
            ))
            .await
            .unwrap();
            tokio::time::sleep(Duration::from_millis(150)).await;
            server
                .events()
                .emit("order.created", json!({ "shop": "a", "n": 1 }))
                .unwrap();
            server
                .events()
                .emit("order.created", json!({ "shop": "b", "n": 2 }))
                .unwrap();
            server
                .events()
                .emit("order.created", json!({ "shop": "a", "n": 3 }))
                .unwrap();
            assert_eq!(next_event(&mut a).await["n"], 1, "{era} {http} {mode:?}");
            assert_eq!(next_event(&mut a).await["n"], 3);
            assert_eq!(next_event(&mut b).await["n"], 2);
            let more = tokio::time::timeout(Duration::from_millis(200), b.next()).await;
            assert!(more.is_err(), "{more:?}");
        }
    }
}

/// A hostile 2025-11-25 server on a byte pipe: answers every `events/poll` with `poll` (its
/// result), counting them, and every `events/stream` with one event notification whose params
/// are `poll`.
async fn hostile(poll: Value, polls: Arc<AtomicUsize>) -> Client {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (read, mut write) = tokio::io::split(server_io);
    tokio::spawn(async move {
        let mut lines = BufReader::new(read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let msg: Value = serde_json::from_str(&line).unwrap();
            let Some(id) = msg.get("id").cloned() else {
                continue;
            };
            let result = match msg["method"].as_str() {
                Some("initialize") => json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": { "events": {} },
                    "serverInfo": { "name": "hostile", "version": "0" }
                }),
                Some("events/poll") => {
                    polls.fetch_add(1, Ordering::SeqCst);
                    poll.clone()
                }
                Some("events/stream") => {
                    // `poll` as the params of an event notification for this stream, and no
                    // answer.
                    let mut params = poll.clone();
                    if let Some(p) = params.as_object_mut() {
                        p.insert(
                            "_meta".into(),
                            json!({ "io.modelcontextprotocol/subscriptionId": id }),
                        );
                    }
                    let n = json!({ "jsonrpc": "2.0", "method": "notifications/events/event", "params": params });
                    let mut text = n.to_string();
                    text.push('\n');
                    if write.write_all(text.as_bytes()).await.is_err() {
                        break;
                    }
                    continue;
                }
                _ => json!({}),
            };
            let reply = json!({ "jsonrpc": "2.0", "id": id, "result": result });
            let mut text = reply.to_string();
            text.push('\n');
            if write.write_all(text.as_bytes()).await.is_err() {
                break;
            }
        }
    });
    let (r, w) = tokio::io::split(client_io);
    within(Client::builder().era(EraChoice::Legacy).connect(r, w))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_server_asking_for_polls_back_to_back_meets_the_floor() {
    let polls = Arc::new(AtomicUsize::new(0));
    let answer = json!({ "events": [], "cursor": "c", "truncated": false, "hasMore": true, "nextPollMs": 0 });
    let client = hostile(answer, polls.clone()).await;
    let sub = within(client.subscribe_events(
        "x",
        json!({}),
        SubscribeOptions::new(DeliveryMode::Poll).min_poll(Duration::from_millis(100)),
    ))
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let n = polls.load(Ordering::SeqCst);
    assert!(
        (2..=12).contains(&n),
        "{n} polls in 1 s with a 100 ms floor"
    );
    drop(sub);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = polls.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        polls.load(Ordering::SeqCst),
        after,
        "dropping the subscription stops polling"
    );
}

#[tokio::test]
async fn garbage_events_are_an_error_not_a_panic() {
    for garbage in [
        json!({ "events": [{ "bogus": 1 }], "cursor": "c", "hasMore": false, "nextPollMs": 10 }),
        json!({ "events": "no", "cursor": 7 }),
        json!([1, 2, 3]),
    ] {
        let client = hostile(garbage.clone(), Arc::new(AtomicUsize::new(0))).await;
        let mut sub = within(client.subscribe_events("x", json!({}), fast(DeliveryMode::Poll)))
            .await
            .unwrap();
        // The first poll (from now) already fails to parse.
        match within(sub.next()).await {
            Some(Err(ClientError::Protocol(_))) => {}
            other => panic!("{garbage}: {other:?}"),
        }
        assert!(within(sub.next()).await.is_none());
    }
}

#[tokio::test]
async fn a_garbage_pushed_event_is_an_error_not_a_panic() {
    let garbage = json!({ "eventId": 7, "data": "x" });
    let client = hostile(garbage, Arc::new(AtomicUsize::new(0))).await;
    let mut sub = within(client.subscribe_events("x", json!({}), fast(DeliveryMode::Push)))
        .await
        .unwrap();
    match within(sub.next()).await {
        Some(Err(ClientError::Protocol(_))) => {}
        other => panic!("{other:?}"),
    }
    assert!(within(sub.next()).await.is_none());
}

/// A scripted Streamable HTTP server (both revisions) declaring the extension: `events/list`
/// counted; the second `events/poll` answered on an SSE stream carrying
/// `notifications/events/list_changed` before its result, every other poll as JSON.
async fn list_changed_on_a_poll_response() -> (String, Arc<AtomicUsize>) {
    use axum::http::{header, StatusCode};
    use axum::response::IntoResponse;
    let lists = Arc::new(AtomicUsize::new(0));
    let polls = Arc::new(AtomicUsize::new(0));
    let handler = {
        let lists = lists.clone();
        move |body: axum::body::Bytes| {
            let lists = lists.clone();
            let polls = polls.clone();
            async move {
                let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let Some(id) = msg.get("id").cloned() else {
                    return StatusCode::ACCEPTED.into_response();
                };
                let caps = json!({ "events": { "listChanged": true } });
                let result = match msg["method"].as_str() {
                    Some("initialize") => json!({ "protocolVersion": "2025-11-25",
                        "capabilities": caps, "serverInfo": { "name": "s", "version": "0" } }),
                    Some("server/discover") => json!({ "resultType": "complete",
                        "supportedVersions": ["2026-07-28"], "capabilities": caps,
                        "ttlMs": 0, "cacheScope": "public" }),
                    Some("events/list") => {
                        lists.fetch_add(1, Ordering::SeqCst);
                        json!({ "events": [{ "name": "t", "delivery": ["poll"] }] })
                    }
                    Some("events/poll") => {
                        let r = json!({ "events": [], "cursor": "c", "hasMore": false, "nextPollMs": 0 });
                        if polls.fetch_add(1, Ordering::SeqCst) == 1 {
                            let note = json!({ "jsonrpc": "2.0", "method": "notifications/events/list_changed" });
                            let reply = json!({ "jsonrpc": "2.0", "id": id, "result": r });
                            let sse = format!("data: {note}\n\ndata: {reply}\n\n");
                            return (
                                [
                                    (header::CONTENT_TYPE, "text/event-stream"),
                                    (header::HeaderName::from_static("mcp-session-id"), "s1"),
                                ],
                                sse,
                            )
                                .into_response();
                        }
                        r
                    }
                    _ => json!({}),
                };
                let reply = json!({ "jsonrpc": "2.0", "id": id, "result": result });
                (
                    [
                        (header::CONTENT_TYPE, "application/json"),
                        (header::HeaderName::from_static("mcp-session-id"), "s1"),
                    ],
                    reply.to_string(),
                )
                    .into_response()
            }
        }
    };
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(handler)
            .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
            .delete(|| async { StatusCode::OK }),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/mcp"), lists)
}

#[tokio::test]
async fn list_changed_on_a_poll_response_makes_event_types_list_again() {
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let (url, lists) = list_changed_on_a_poll_response().await;
        let client = within(Client::builder().era(era).connect_http(&url))
            .await
            .unwrap();
        let mut types = within(client.event_types()).await.unwrap();
        assert_eq!(lists.load(Ordering::SeqCst), 1, "{era}");
        let _sub = within(client.subscribe_events("t", json!({}), fast(DeliveryMode::Poll)))
            .await
            .unwrap();
        let again = within(types.changed()).await.unwrap();
        assert_eq!(again[0].name, "t");
        assert_eq!(lists.load(Ordering::SeqCst), 2, "{era}");
    }
}
