//! The Redis stores and bus (feature `redis`) on a real Redis Cluster: three masters with one
//! replica each, six `redis-server --cluster-enabled yes` on loopback joined by
//! `redis-cli --cluster create` (`duomcp_testkit::cluster::RedisCluster`; Debian packages
//! `redis-server` and `redis-tools`). A missing binary fails these tests.
//!
//! Each "replica" is its own [`Redis`] handle on `redis+cluster://` (its own connections), as
//! separate processes would have: what one writes the other reads, a bus message from one
//! reaches the other, and a master killed with `SIGKILL` costs operations only until its
//! replica is promoted, within a bounded time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::client::{Client, EraChoice, ServerEvent};
use duomcp::era::Era;
use duomcp::redis::{Redis, RedisBus, RedisConfig, RedisEventStore, RedisTaskStore};
use duomcp::schema::{Resource, SubscriptionFilter, TaskStatus};
use duomcp::server::bus::{Bus, BusMessage};
use duomcp::server::tasks::{TaskFilter, TaskRecord, TaskStore, TaskStoreError};
use duomcp::server::Server;
use duomcp::transport::http::{
    CreateBounds, EventStore, HttpConfig, SessionStore, StreamableHttp, Touched,
};
use duomcp_testkit::cluster::RedisCluster;
use std::time::{Duration, Instant};

fn cluster() -> RedisCluster {
    RedisCluster::start().expect("a Redis Cluster (Debian packages redis-server, redis-tools)")
}

fn seqs(events: &[duomcp::transport::http::StoredEvent]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

fn task(id: &str, principal: &str, created_at_ms: u64, ttl_ms: Option<u64>) -> TaskRecord {
    TaskRecord {
        id: id.into(),
        era: Era::Modern,
        principal: Some(principal.into()),
        scope: None,
        method: "tools/call".into(),
        target: "t".into(),
        status: TaskStatus::Working,
        status_message: None,
        created_at_ms,
        last_updated_at_ms: created_at_ms,
        ttl_ms,
        poll_interval_ms: None,
        input_requests: Default::default(),
        client_requests: Default::default(),
        outcome: None,
    }
}

fn session_record() -> duomcp::transport::http::SessionRecord {
    serde_json::from_value(serde_json::json!({
        "protocol_version": "2025-11-25",
        "client_capabilities": {},
    }))
    .unwrap()
}

#[test]
fn cluster_urls_are_checked() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _guard = rt.enter();
    assert!(
        Redis::connect("redis+cluster://127.0.0.1:7000,127.0.0.1:7001")
            .unwrap()
            .is_cluster()
    );
    assert!(!Redis::connect("redis://127.0.0.1:7000/")
        .unwrap()
        .is_cluster());
    for bad in [
        "redis+cluster://",
        "redis+cluster://,",
        "redis+cluster://127.0.0.1:7000/3",
        "redis+cluster://127.0.0.1:7000?x=1",
    ] {
        let err = Redis::connect(bad).unwrap_err().to_string();
        assert!(err.contains("redis+cluster"), "{bad}: {err}");
    }
    let many = (0..65)
        .map(|i| format!("127.0.0.1:{}", 7000 + i))
        .collect::<Vec<_>>()
        .join(",");
    let err = Redis::connect(&format!("redis+cluster://{many}"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("more than 64"), "{err}");
    // A prefix with a brace would make its own hash tag.
    let mut config = RedisConfig::new("redis+cluster://127.0.0.1:7000");
    config.prefix = "app{1}:".into();
    let err = Redis::with_config(config).unwrap_err().to_string();
    assert!(err.contains("prefix"), "{err}");
}

#[tokio::test]
async fn the_stores_are_shared_by_two_replicas_on_a_cluster() {
    let cluster = cluster();
    let url = cluster.url();
    let (ra, rb) = (Redis::connect(&url).unwrap(), Redis::connect(&url).unwrap());

    // The shared key: one, whoever asks first.
    let (ka, kb) = tokio::join!(ra.shared_keyring(), rb.shared_keyring());
    assert_eq!(ka.unwrap().newest_id(), kb.unwrap().newest_id());

    // Event log: sessions on all three shards, appended on A, replayed on B.
    let (a, b) = (
        RedisEventStore::new(ra.clone()).bounds(1_000, 10_000),
        RedisEventStore::new(rb.clone()),
    );
    let sessions: Vec<String> = (0..12).map(|i| format!("sess-{i}")).collect();
    let shards: std::collections::BTreeSet<usize> = sessions
        .iter()
        .map(|s| cluster.master_of(&format!("duomcp:ev:{{{s}}}:1")).unwrap())
        .collect();
    assert_eq!(
        shards.len(),
        3,
        "the sessions are spread over the 3 masters"
    );
    for s in &sessions {
        for seq in 1..=20u64 {
            a.append(s, 1, seq, format!("{s} {seq}").into())
                .await
                .unwrap();
        }
        a.append(s, 2, 1, "other stream".into()).await.unwrap();
    }
    for s in &sessions {
        let all = b.replay_after(s, 1, 0).await.unwrap();
        assert_eq!(seqs(&all), (1..=20).collect::<Vec<_>>(), "{s}");
        assert_eq!(all[4].message, format!("{s} 5").as_bytes());
        assert_eq!(
            seqs(&b.replay_after(s, 1, 15).await.unwrap()),
            [16, 17, 18, 19, 20]
        );
        assert_eq!(
            b.replay_after(s, 2, 0).await.unwrap()[0].message,
            "other stream"
        );
    }
    b.remove_session("sess-0").await;
    assert!(a.replay_after("sess-0", 1, 0).await.unwrap().is_empty());
    assert!(a.replay_after("sess-0", 2, 0).await.unwrap().is_empty());
    assert_eq!(a.replay_after("sess-1", 1, 0).await.unwrap().len(), 20);
    // The per-session bound (a script over several streams of one session: one slot).
    let small = RedisEventStore::new(ra.clone()).bounds(3, 5);
    for seq in 1..=4 {
        small.append("s", 1, seq, "x".into()).await.unwrap();
    }
    for seq in 1..=3 {
        small.append("s", 2, seq, "y".into()).await.unwrap();
    }
    assert_eq!(seqs(&small.replay_after("s", 1, 0).await.unwrap()), [3, 4]);
    assert_eq!(
        seqs(&small.replay_after("s", 2, 0).await.unwrap()),
        [1, 2, 3]
    );
    // Stream lease: open on A, seen running on B, finished once closed.
    a.open_stream("sess-2", 7, b"\"req-7\"").await.unwrap();
    assert!(matches!(
        b.stream_state("sess-2", 7).await.unwrap(),
        duomcp::transport::http::StreamState::Running
    ));
    a.close_stream("sess-2", 7).await;
    assert!(matches!(
        b.stream_state("sess-2", 7).await.unwrap(),
        duomcp::transport::http::StreamState::Finished
    ));

    // Sessions: the fleet bound across two stores, in its own slot.
    use duomcp::redis::RedisSessionStore;
    let (sa, sb) = (
        RedisSessionStore::new(ra.clone()),
        RedisSessionStore::new(rb.clone()),
    );
    let record = session_record();
    let idle = Duration::from_secs(1800);
    let bounds = CreateBounds::new(Duration::from_secs(60), idle, 3);
    let pttl = |id: &str| -> i64 {
        let key = format!("duomcp:session:{{{id}}}");
        cluster
            .command_for(&key, &["PTTL", &key])
            .unwrap()
            .parse()
            .unwrap()
    };
    let zcard = |set: &str| -> String {
        let key = format!("duomcp:{{sessions}}:{set}");
        cluster.command_for(&key, &["ZCARD", &key]).unwrap()
    };
    assert!(sa.create("s1", &record, bounds).await.unwrap().is_some());
    assert!((1..=60_000).contains(&pttl("s1")), "{}", pttl("s1"));
    assert!(matches!(
        sb.touch("s1", 0, idle).await.unwrap(),
        Touched::Changed(..)
    ));
    assert!(pttl("s1") > 60_000, "{}", pttl("s1"));
    assert_eq!(sa.touch("s1", 1, idle).await.unwrap(), Touched::Unchanged);
    // Full (3): each new one ends the oldest never-used one, never s1 (used).
    assert!(sa.create("s2", &record, bounds).await.unwrap().is_some());
    assert!(sb.create("s3", &record, bounds).await.unwrap().is_some());
    assert!(sa.create("s4", &record, bounds).await.unwrap().is_some());
    assert_eq!(sa.touch("s2", 0, idle).await.unwrap(), Touched::Gone);
    assert!(sb.create("s5", &record, bounds).await.unwrap().is_some());
    assert_eq!(sa.touch("s3", 0, idle).await.unwrap(), Touched::Gone);
    sb.touch("s4", 0, idle).await.unwrap();
    sa.touch("s5", 0, idle).await.unwrap();
    assert_eq!(sb.create("s6", &record, bounds).await.unwrap(), None);
    let s6 = "duomcp:session:{s6}";
    assert_eq!(cluster.command_for(s6, &["EXISTS", s6]).unwrap(), "0");
    assert_eq!(zcard("all"), "3");
    assert_eq!(zcard("fresh"), "0");
    // A save on B is seen by A's next touch.
    let mut changed = record.clone();
    changed.protocol_version = "2025-06-18".into();
    let v = sb.save("s1", &changed, false, idle).await.unwrap().unwrap();
    match sa.touch("s1", 1, idle).await.unwrap() {
        Touched::Changed(version, r) => {
            assert_eq!(version, v);
            assert_eq!(r.protocol_version, "2025-06-18");
        }
        other => panic!("{other:?}"),
    }
    // Release and remove forget the session in the fleet's sets too.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!sb.release("s1", Duration::from_secs(5)).await.unwrap());
    assert!(sa.release("s1", Duration::from_millis(10)).await.unwrap());
    assert_eq!(sb.touch("s1", 0, idle).await.unwrap(), Touched::Gone);
    sa.remove("s4").await.unwrap();
    sb.remove("s5").await.unwrap();
    assert_eq!(zcard("all"), "0");

    // Tasks: shared, edits never interleave, listed per requestor.
    let ta = std::sync::Arc::new(RedisTaskStore::new(ra.clone()));
    let tb = std::sync::Arc::new(RedisTaskStore::new(rb.clone()));
    ta.create(task("t1", "alice", 1, Some(60_000)), 1)
        .await
        .unwrap();
    assert!(matches!(
        tb.create(task("t1", "alice", 1, Some(60_000)), 1).await,
        Err(TaskStoreError::Duplicate(_))
    ));
    assert_eq!(
        tb.get("t1", 2).await.unwrap().principal.as_deref(),
        Some("alice")
    );
    let mut edits = Vec::new();
    for i in 0..20 {
        let store = if i % 2 == 0 { ta.clone() } else { tb.clone() };
        edits.push(tokio::spawn(async move {
            store
                .update(
                    "t1",
                    3,
                    Box::new(|r: &mut TaskRecord| {
                        r.status_message.get_or_insert_with(String::new).push('x');
                    }),
                )
                .await
                .is_some()
        }));
    }
    for e in edits {
        assert!(e.await.unwrap());
    }
    assert_eq!(
        ta.get("t1", 4).await.unwrap().status_message.unwrap().len(),
        20
    );
    for (id, at) in [("t2", 2), ("t3", 3), ("t4", 4)] {
        ta.create(task(id, "alice", at, Some(60_000)), at)
            .await
            .unwrap();
    }
    tb.create(task("bob1", "bob", 5, Some(60_000)), 5)
        .await
        .unwrap();
    let alice = TaskFilter::Principal(Era::Modern, "alice".into());
    let (page, more) = tb.list(&alice, None, 2, 10).await;
    let ids: Vec<&str> = page.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["t1", "t2"]);
    assert!(more);
    let (page, more) = tb.list(&alice, Some(&page[1].list_key()), 2, 10).await;
    let ids: Vec<&str> = page.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["t3", "t4"]);
    assert!(!more);
    assert_eq!(tb.remove("t2").await.unwrap().id, "t2");
    assert!(ta.get("t2", 10).await.is_none());
    assert_eq!(ta.list(&alice, None, 10, 10).await.0.len(), 3);
    // The lease and answers of a task (one script over its slot).
    let mut answers = serde_json::Map::new();
    answers.insert("q1".into(), serde_json::json!({"ok": true}));
    tb.post_answers("t3", answers).await.unwrap();
    let renewal = ta.renew("t3", 10).await.unwrap();
    assert_eq!(renewal.record.unwrap().id, "t3");
    assert_eq!(
        renewal.answers.get("q1"),
        Some(&serde_json::json!({"ok": true}))
    );
    assert!(
        ta.renew("t3", 10).await.unwrap().answers.is_empty(),
        "taken once"
    );
    assert!(tb.lease_held("t3").await);
    ta.release("t3").await;
    assert!(!tb.lease_held("t3").await);
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bus_crosses_replicas_on_a_cluster_in_both_revisions() {
    let cluster = cluster();
    let url = cluster.url();
    let (ra, rb) = (Redis::connect(&url).unwrap(), Redis::connect(&url).unwrap());

    // Two buses: a message from A reaches B (a sharded channel), not A itself.
    let (bus_a, bus_b) = (RedisBus::new(&ra), RedisBus::new(&rb));
    let wait = tokio::task::block_in_place(|| cluster.wait_shard_subscribers("duomcp:bus", 2));
    wait.unwrap();
    let (mut on_a, mut on_b) = (bus_a.subscribe(), bus_b.subscribe());
    let reached = bus_a
        .publish_sent(BusMessage::change("greeting", serde_json::json!("hi")))
        .await;
    assert_eq!(reached, Some(1), "one other subscription on the shard");
    let got = tokio::time::timeout(Duration::from_secs(5), on_b.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(&*got, BusMessage::Change { name, .. } if name == "greeting"));
    assert!(on_a.try_recv().is_none(), "not looped back to its origin");
    assert!(bus_a.listening().is_some() && bus_b.listening().is_some());
    // A message for one replica goes to its inbox (a shard channel of its own) alone.
    let bus_c = RedisBus::new(&ra);
    let to_a = bus_a.inbox().unwrap();
    let inbox = format!("duomcp:bus:{to_a:016x}");
    tokio::task::block_in_place(|| cluster.wait_shard_subscribers(&inbox, 1)).unwrap();
    tokio::task::block_in_place(|| cluster.wait_shard_subscribers("duomcp:bus", 3)).unwrap();
    bus_c.publish_to(to_a, BusMessage::change("for-a", serde_json::json!(1)));
    bus_c.publish(BusMessage::change("for-all", serde_json::json!(2)));
    // Two channels, possibly on two shards: their messages may arrive in either order.
    for (who, rx, want) in [
        ("A", &mut on_a, &["for-a", "for-all"][..]),
        ("B", &mut on_b, &["for-all"][..]),
    ] {
        let mut got = Vec::new();
        for _ in want {
            let m = tokio::time::timeout(Duration::from_secs(5), rx.recv())
                .await
                .unwrap()
                .unwrap();
            match &*m {
                BusMessage::Change { name, .. } => got.push(name.clone()),
                other => panic!("{who}: {other:?}"),
            }
        }
        got.sort();
        assert_eq!(got, want, "{who}");
        assert!(rx.try_recv().is_none(), "{who}: nothing more");
    }
    drop((bus_a, bus_b, bus_c));

    // Two HTTP replicas: a resources/updated on A reaches a 2026-07-28 listen stream and a
    // 2025-11-25 session (its record in the cluster) on B.
    let (a, _) = replica(&ra).await;
    let (_b, b_url) = replica(&rb).await;
    tokio::task::block_in_place(|| cluster.wait_shard_subscribers("duomcp:bus", 2)).unwrap();
    let watched = || SubscriptionFilter {
        resource_subscriptions: Some(vec!["test://watched".into()]),
        ..Default::default()
    };
    let modern = Client::builder()
        .era(EraChoice::Modern)
        .connect_http(&b_url)
        .await
        .unwrap();
    let mut on_modern = modern.listen(watched()).await.unwrap();
    let legacy = Client::builder()
        .era(EraChoice::Legacy)
        .connect_http(&b_url)
        .await
        .unwrap();
    let mut on_legacy = legacy.listen(watched()).await.unwrap();
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

/// Retries `op` until it succeeds; how long that took (fails past `within`).
async fn until_ok<F, Fut, T, E>(what: &str, within: Duration, mut op: F) -> (T, Duration)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
    E: std::fmt::Display,
{
    let started = Instant::now();
    loop {
        match op().await {
            Ok(v) => return (v, started.elapsed()),
            Err(e) if started.elapsed() > within => {
                panic!("{what}: still failing after {:?}: {e}", started.elapsed())
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_killed_costs_operations_only_until_its_replica_is_promoted() {
    let mut cluster = cluster();
    let url = cluster.url();
    let handle = || {
        let mut config = RedisConfig::new(url.clone());
        config.timeout = Duration::from_millis(1_000);
        config.connect_timeout = Duration::from_millis(500);
        config.max_reconnect_delay = Duration::from_millis(500);
        Redis::with_config(config).unwrap()
    };
    let (ra, rb) = (handle(), handle());
    // The victim: the master of the bus's shard channel; a session whose slot it serves too.
    let victim = cluster.master_of("duomcp:bus").unwrap();
    let session = (0..)
        .map(|i| format!("f{i}"))
        .find(|s| cluster.master_of(&format!("duomcp:ev:{{{s}}}:1")).unwrap() == victim)
        .unwrap();
    let (a, b) = (
        RedisEventStore::new(ra.clone()),
        RedisEventStore::new(rb.clone()),
    );
    let (bus_a, bus_b) = (RedisBus::new(&ra), RedisBus::new(&rb));
    tokio::task::block_in_place(|| cluster.wait_shard_subscribers("duomcp:bus", 2)).unwrap();
    let mut on_b = bus_b.subscribe();
    a.append(&session, 1, 1, "before".into()).await.unwrap();
    // Replicated before the kill (replication is asynchronous; this test is about failover).
    let key = format!("duomcp:ev:{{{session}}}:1");
    let waited = cluster.command_on(victim, &["WAIT", "1", "2000"]).unwrap();
    assert_eq!(waited, "1", "the write reached the replica");

    cluster.kill(victim);
    let killed = Instant::now();
    let within = Duration::from_secs(15);
    // A write to the dead master's slot succeeds again once the replica is promoted.
    let (_, write_took) = until_ok("append after failover", within, || {
        a.append(&session, 1, 2, "after".into())
    })
    .await;
    // B reads both: the event from before the kill survived in the replica.
    let (events, _) = until_ok("replay after failover", within, || {
        b.replay_after(&session, 1, 0)
    })
    .await;
    assert_eq!(seqs(&events), [1, 2]);
    assert_eq!(events[0].message, "before");
    // The bus: B's subscription moved to the promoted node; a message from A reaches it.
    let bus_started = Instant::now();
    loop {
        let reached = bus_a
            .publish_sent(BusMessage::change("after", serde_json::json!(1)))
            .await;
        let heard = match reached {
            Some(n) if n >= 1 => {
                matches!(
                    tokio::time::timeout(Duration::from_millis(500), on_b.recv()).await,
                    Ok(Some(m)) if matches!(&*m, BusMessage::Change { name, .. } if name == "after")
                )
            }
            _ => false,
        };
        if heard {
            break;
        }
        assert!(
            bus_started.elapsed() < within,
            "bus after failover: B heard nothing for {:?} (last publish reached {reached:?})",
            bus_started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let bus_took = bus_started.elapsed();
    assert!(bus_b.listening().is_some());
    let total = killed.elapsed();
    // Settled: the subscription holds (no resubscribing over and over to the dead node).
    let settled = (bus_a.listening(), bus_b.listening());
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!((bus_a.listening(), bus_b.listening()), settled);
    assert!(settled.0.is_some() && settled.1.is_some());
    println!(
        "failover: writes back after {write_took:?}, bus after {bus_took:?} more, {total:?} in all (key {key})"
    );
    assert!(total < within, "{total:?}");
    tokio::task::block_in_place(|| cluster.wait_healthy()).unwrap();
}

#[tokio::test]
async fn the_holders_of_a_session_are_tracked_on_a_cluster() {
    use duomcp::redis::RedisSessionStore;
    use duomcp::transport::http::{CreateBounds, SessionStore};
    // Every script on the holders hash touches the session's slot only (CROSSSLOT otherwise).
    let c = cluster();
    let a = RedisSessionStore::new(Redis::connect(&c.url()).unwrap()).with_inbox(0xa1);
    let b = RedisSessionStore::new(Redis::connect(&c.url()).unwrap()).with_inbox(0xb2);
    let idle = Duration::from_secs(60);
    let v = a
        .create("c1", &session_record(), CreateBounds::new(idle, idle, 100))
        .await
        .unwrap()
        .unwrap();
    a.touch("c1", v, idle).await.unwrap();
    b.touch("c1", 0, idle).await.unwrap();
    b.hold_stream("c1", true).await.unwrap();
    let mut h = a.holders("c1", idle).await.unwrap().unwrap();
    h.replicas.sort();
    assert_eq!((h.replicas, h.stream), (vec![0xa1, 0xb2], Some(0xb2)));
    // A touched with its copy's version, B with none: only A may trust a copy; B's save
    // makes it one that may too.
    assert_eq!(h.caching, [0xa1]);
    b.save("c1", &session_record(), false, idle)
        .await
        .unwrap()
        .unwrap();
    let mut h = a.holders("c1", idle).await.unwrap().unwrap();
    h.caching.sort();
    assert_eq!(h.caching, [0xa1, 0xb2]);
    a.remove("c1").await.unwrap();
    assert_eq!(
        b.holders("c1", idle).await.unwrap().unwrap().stream,
        Some(0xb2)
    );
    assert!(
        !a.release("c1", Duration::ZERO).await.unwrap(),
        "gone already"
    );
}
