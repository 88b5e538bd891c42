//! A `resources/updated` made on one replica reaches the subscribers on another, through the
//! Redis bus (`RedisBus`, a real `redis-server` started here): a 2026-07-28 client listening
//! on B (`resourceSubscriptions`), and a 2025-11-25 client subscribed on B
//! (`resources/subscribe`), both told of `notify_resource_updated` called on A — and not of a
//! URI they did not subscribe to.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::client::{Client, EraChoice, ServerEvent};
use duomcp::redis::Redis;
use duomcp::schema::{Resource, SubscriptionFilter};
use duomcp::server::Server;
use duomcp::transport::http::{HttpConfig, StreamableHttp};
use duomcp_testkit::cluster::RedisServer;
use std::time::Duration;

/// A replica on `redis`: its server, and its URL.
async fn replica(redis: &Redis) -> (Server, String) {
    let server = Server::builder()
        .keyring(redis.shared_keyring().await.unwrap())
        .resource(Resource::new("test://watched", "watched"), || async {
            "watched".to_owned()
        })
        .resource(Resource::new("test://other", "other"), || async {
            "other".to_owned()
        })
        .build();
    let http = StreamableHttp::with_config(server.clone(), HttpConfig::default().redis(redis));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(http.serve(listener));
    (server, url)
}

// Two workers: the blocking `PUBSUB` poll below must leave the buses' tasks a thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_update_on_a_reaches_the_subscribers_on_b_in_both_revisions() {
    let redis_server = RedisServer::start().expect("redis-server (Debian package redis-server)");
    let redis = Redis::connect(&redis_server.url()).unwrap();
    let (a, _) = replica(&redis).await;
    let (_b, b_url) = replica(&redis).await;
    // Both buses listen (`PUBSUB NUMSUB duomcp:bus`).
    redis_server.wait_bus_subscribers(2).unwrap();

    let watched = || SubscriptionFilter {
        resource_subscriptions: Some(vec!["test://watched".into()]),
        ..Default::default()
    };
    // 2026-07-28: a listen stream on B for test://watched.
    let modern = Client::builder()
        .era(EraChoice::Modern)
        .connect_http(&b_url)
        .await
        .unwrap();
    let mut on_modern = modern.listen(watched()).await.unwrap();
    // 2025-11-25: a session on B, `resources/subscribe`d to test://watched (its notifications
    // come on the session's GET stream, which the client opens).
    let legacy = Client::builder()
        .era(EraChoice::Legacy)
        .connect_http(&b_url)
        .await
        .unwrap();
    let mut on_legacy = legacy.listen(watched()).await.unwrap();
    // Another URI first: nobody here subscribed to it; then the watched one, again every
    // 100 ms until heard (the legacy session's GET stream opens in the background, and what
    // the session is told before it is there is not kept).
    a.notify_resource_updated("test://other");
    let updated = Some(ServerEvent::ResourceUpdated {
        uri: "test://watched".into(),
    });
    for (era, sub) in [
        ("2026-07-28", &mut on_modern),
        ("2025-11-25", &mut on_legacy),
    ] {
        let heard = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                a.notify_resource_updated("test://watched");
                if let Ok(n) = tokio::time::timeout(Duration::from_millis(100), sub.next()).await {
                    return n;
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{era}: no resources/updated on B in time"));
        assert_eq!(heard, updated, "{era}");
    }
}

/// A message for one replica (`Bus::publish_to` its inbox) reaches that replica only: the
/// others' next message is the broadcast that followed it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_to_one_replica_reaches_it_alone() {
    use duomcp::redis::RedisBus;
    use duomcp::server::bus::{Bus, BusMessage};
    let redis_server = RedisServer::start().expect("redis-server (Debian package redis-server)");
    let redis = Redis::connect(&redis_server.url()).unwrap();
    let (a, b, c) = (
        RedisBus::new(&redis),
        RedisBus::new(&redis),
        RedisBus::new(&redis),
    );
    redis_server.wait_bus_subscribers(3).unwrap();
    // The process's counts (other tests of this binary may add to them meanwhile).
    let before = duomcp::redis::BusCounts::current();
    let (mut on_a, mut on_b) = (a.subscribe(), b.subscribe());
    let to_a = a.inbox().expect("a Redis bus has inboxes");
    assert_ne!(Some(to_a), b.inbox());
    c.publish_to(to_a, BusMessage::change("for-a", serde_json::json!(1)));
    c.publish(BusMessage::change("for-all", serde_json::json!(2)));
    assert_eq!(next(&mut on_a).await, "for-a");
    assert_eq!(next(&mut on_a).await, "for-all");
    assert_eq!(next(&mut on_b).await, "for-all", "B heard A's message");
    // One PUBLISH each, the targeted one to A's inbox alone (one subscriber).
    let inbox = format!("duomcp:bus:{to_a:016x}");
    let subs = redis_server.command(&["PUBSUB", "NUMSUB", &inbox]).unwrap();
    assert_eq!(subs.lines().nth(1), Some("1"), "{subs}");
    // Two messages published; A received two and B one (C's own broadcast, which comes back
    // to C, is not counted).
    // (A `PUBLISH` is counted once answered, which may come a moment after its delivery.)
    let mut after = duomcp::redis::BusCounts::current();
    for _ in 0..50 {
        if after.published >= before.published + 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        after = duomcp::redis::BusCounts::current();
    }
    assert!(
        after.published >= before.published + 2,
        "{before:?} {after:?}"
    );
    assert!(
        after.received >= before.received + 3,
        "{before:?} {after:?}"
    );
}

async fn next(rx: &mut duomcp::server::bus::BusReceiver) -> String {
    let m = tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("a message in time")
        .unwrap();
    match &*m {
        duomcp::server::bus::BusMessage::Change { name, .. } => name.clone(),
        other => panic!("{other:?}"),
    }
}
