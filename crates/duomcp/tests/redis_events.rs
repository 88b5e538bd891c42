//! The Events extension across replicas on one Redis (a real `redis-server` started here): an
//! occurrence emitted on one replica reaches the `events/stream` subscriptions held on another
//! (a 2026-07-28 client and a 2025-11-25 session at once, each with its own filter), a cursor
//! one replica gave is understood by the others, and a replica that starts late replays what
//! was emitted before it started.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::client::events::{DeliveryMode, EventItem, PollOptions, SubscribeOptions};
use duomcp::client::{Client, EraChoice};
use duomcp::redis::Redis;
use duomcp::server::events::EventType;
use duomcp::server::Server;
use duomcp::transport::http::{HttpConfig, StreamableHttp};
use duomcp_testkit::cluster::{RedisCluster, RedisServer};
use serde_json::json;
use std::collections::BTreeSet;
use std::time::Duration;

const ORDER: &str = "order.created";

/// A replica on `redis` declaring `order.created` (filtered by `shop`): its server and URL.
async fn replica(redis: &Redis) -> (Server, String) {
    let server = Server::builder()
        .keyring(redis.shared_keyring().await.unwrap())
        .event(
            EventType::new(ORDER).filter(|args, data| match args.get("shop") {
                Some(shop) => data.get("shop") == Some(shop),
                None => true,
            }),
        )
        .build();
    let http = StreamableHttp::with_config(server.clone(), HttpConfig::default().redis(redis));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(http.serve(listener));
    (server, url)
}

async fn client(url: &str, era: EraChoice) -> Client {
    Client::builder().era(era).connect_http(url).await.unwrap()
}

/// The `n` of the next `k` occurrences a subscription hands over.
async fn next_ns(sub: &mut duomcp::client::events::EventSubscription, k: usize) -> Vec<i64> {
    let mut got = Vec::new();
    while got.len() < k {
        let item = tokio::time::timeout(Duration::from_secs(10), sub.next())
            .await
            .expect("an occurrence within 10 s")
            .expect("the subscription goes on")
            .expect("no error");
        match item {
            EventItem::Event(o) => got.push(o.data["n"].as_i64().unwrap()),
            other => panic!("unexpected {other:?}"),
        }
    }
    got
}

/// Polls `url` from `cursor` until `k` occurrences came (within 10 s); their `n` and the
/// cursor after them.
async fn poll_until(c: &Client, cursor: &str, k: usize) -> (Vec<i64>, String, bool) {
    let mut got = Vec::new();
    let mut cursor = cursor.to_owned();
    let mut truncated = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while got.len() < k {
        assert!(tokio::time::Instant::now() < deadline, "only {got:?} came");
        let r = c
            .poll_events(
                ORDER,
                json!({}),
                Some(cursor.clone()),
                PollOptions::default(),
            )
            .await
            .unwrap();
        truncated |= r.truncated;
        got.extend(r.events.iter().map(|o| o.data["n"].as_i64().unwrap()));
        cursor = r.cursor.expect("a replayable type gives a cursor");
        if r.events.is_empty() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    (got, cursor, truncated)
}

fn emit(server: &Server, shop: &str, n: i64) {
    server
        .events()
        .emit(ORDER, json!({ "shop": shop, "n": n }))
        .expect("declared");
}

fn set(v: &[i64]) -> BTreeSet<i64> {
    v.iter().copied().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn occurrences_emitted_on_one_replica_reach_the_subscriptions_and_cursors_of_the_others() {
    let redis_server = RedisServer::start().expect("redis-server (Debian package redis-server)");
    let redis = Redis::connect(&redis_server.url()).unwrap();
    let (a, b) = (replica(&redis).await, replica(&redis).await);
    redis_server.wait_bus_subscribers(2).unwrap();
    across(&redis, a, b).await;
    // Every occurrence is in Redis once, in one stream.
    let len = redis_server.command(&["XLEN", STREAM]).unwrap();
    assert_eq!(len.trim(), "4", "{len}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_redis_cluster_too() {
    let cluster =
        RedisCluster::start().expect("a Redis Cluster (Debian packages redis-server, redis-tools)");
    let redis = Redis::connect(&cluster.url()).unwrap();
    let (a, b) = (replica(&redis).await, replica(&redis).await);
    let wait = tokio::task::block_in_place(|| cluster.wait_shard_subscribers("duomcp:bus", 2));
    wait.unwrap();
    across(&redis, a, b).await;
    let len = cluster.command_for(STREAM, &["XLEN", STREAM]).unwrap();
    assert_eq!(len.trim(), "4", "{len}");
}

/// The stream of `order.created` under the default prefix.
const STREAM: &str = "duomcp:occurrences:{duomcp:occ}:order.created";

/// Replicas A and B (and C, started late) on `redis`.
async fn across(redis: &Redis, (a, a_url): (Server, String), (b, b_url): (Server, String)) {
    // A cursor from B, taken before anything happened.
    let on_b = client(&b_url, EraChoice::Modern).await;
    let start = on_b
        .poll_events(ORDER, json!({}), None, PollOptions::default())
        .await
        .unwrap();
    assert!(start.events.is_empty());
    let c0 = start.cursor.expect("a cursor");

    // Two tenants on A, streaming from B's cursor: shop x in 2026-07-28, shop y in a
    // 2025-11-25 session.
    let modern = client(&a_url, EraChoice::Modern).await;
    let legacy = client(&a_url, EraChoice::Legacy).await;
    let mut push = SubscribeOptions::new(DeliveryMode::Push);
    push.cursor = Some(c0.clone());
    let mut shop_x = modern
        .subscribe_events(ORDER, json!({"shop": "x"}), push.clone())
        .await
        .unwrap();
    let mut shop_y = legacy
        .subscribe_events(ORDER, json!({"shop": "y"}), push)
        .await
        .unwrap();

    // Emitted on B and on A.
    emit(&b, "x", 1);
    emit(&b, "y", 2);
    emit(&a, "x", 3);
    assert_eq!(set(&next_ns(&mut shop_x, 2).await), set(&[1, 3]));
    assert_eq!(next_ns(&mut shop_y, 1).await, vec![2]);
    // Shop y heard nothing of shop x's: the next it hears is the next y.
    emit(&b, "y", 4);
    assert_eq!(next_ns(&mut shop_y, 1).await, vec![4]);

    // B's first cursor, polled on A, replays all four; A's cursor then, polled on B, brings
    // nothing more and no gap.
    let (all, after, truncated) = poll_until(&modern, &c0, 4).await;
    assert_eq!(set(&all), set(&[1, 2, 3, 4]));
    assert!(!truncated);
    let r = on_b
        .poll_events(
            ORDER,
            json!({}),
            Some(after.clone()),
            PollOptions::default(),
        )
        .await
        .unwrap();
    assert!(r.events.is_empty() && !r.truncated, "{r:?}");

    // A replica starting now replays from the first cursor what it never saw emitted.
    let (_c, c_url) = replica(redis).await;
    let on_c = client(&c_url, EraChoice::Legacy).await;
    let (late, _, truncated) = poll_until(&on_c, &c0, 4).await;
    assert_eq!(set(&late), set(&[1, 2, 3, 4]));
    assert!(!truncated);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_keeping_fewer_than_were_emitted_says_so_to_an_older_cursor() {
    let redis_server = RedisServer::start().expect("redis-server (Debian package redis-server)");
    let redis = Redis::connect(&redis_server.url()).unwrap();
    let (a, a_url) = replica(&redis).await;
    let on_a = client(&a_url, EraChoice::Modern).await;
    let c0 = on_a
        .poll_events(ORDER, json!({}), None, PollOptions::default())
        .await
        .unwrap()
        .cursor
        .expect("a cursor");
    for n in 1..=5 {
        emit(&a, "x", n);
    }
    let (all, _, truncated) = poll_until(&on_a, &c0, 5).await;
    assert_eq!(
        all,
        vec![1, 2, 3, 4, 5],
        "one replica's own emits stay in order"
    );
    assert!(!truncated);
    // A replica that keeps two per type starts after the five: the cursor from before them is
    // answered with the newest two and `truncated`.
    let mut config = duomcp::server::events::EventsConfig::default();
    config.ring = 2;
    let small = Server::builder()
        .keyring(redis.shared_keyring().await.unwrap())
        .event(EventType::new(ORDER))
        .events_config(config)
        .build();
    let http = StreamableHttp::with_config(small, HttpConfig::default().redis(&redis));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(http.serve(listener));
    let on_small = client(&url, EraChoice::Legacy).await;
    let (late, _, truncated) = poll_until(&on_small, &c0, 2).await;
    assert_eq!(late, vec![4, 5]);
    assert!(
        truncated,
        "the three before were not replayed, and the client is told"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gap_declared_on_one_replica_is_seen_from_every_replica() {
    let redis_server = RedisServer::start().expect("redis-server (Debian package redis-server)");
    let redis = Redis::connect(&redis_server.url()).unwrap();
    let (a, _) = replica(&redis).await;
    let (_b, b_url) = replica(&redis).await;
    redis_server.wait_bus_subscribers(2).unwrap();
    let on_b = client(&b_url, EraChoice::Modern).await;
    let start = on_b
        .poll_events(ORDER, json!({}), None, PollOptions::default())
        .await
        .unwrap()
        .cursor
        .expect("a cursor");
    emit(&a, "x", 1);
    // B has it: the cursor after it.
    let (_, c0, _) = poll_until(&on_b, &start, 1).await;
    a.events().gap(ORDER).unwrap();
    emit(&a, "x", 2);
    // B reads the gap marker from Redis: from before it, `truncated`, and what followed.
    let (got, after, truncated) = poll_until(&on_b, &c0, 1).await;
    assert_eq!(got, vec![2]);
    assert!(truncated, "the gap declared on A is seen on B");
    let r = on_b
        .poll_events(ORDER, json!({}), Some(after), PollOptions::default())
        .await
        .unwrap();
    assert!(r.events.is_empty() && !r.truncated, "{r:?}");
}
