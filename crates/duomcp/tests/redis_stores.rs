//! The Redis stores (feature `redis`) against a real `redis-server` (Debian package
//! `redis-server`, installed by `.ci/run`; started here on a free port with no persistence by
//! `duomcp_testkit::cluster`). A missing `redis-server` fails these tests.
//!
//! Each "replica" is its own [`Redis`] handle (its own connection), as separate processes
//! would have.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::era::Era;
use duomcp::redis::{Redis, RedisConfig, RedisEventStore, RedisTaskStore};
use duomcp::schema::TaskStatus;
use duomcp::server::tasks::{TaskFilter, TaskRecord, TaskStore, TaskStoreError};
use duomcp::transport::http::EventStore;
use duomcp_testkit::cluster::RedisServer;
use std::time::{Duration, Instant};

fn redis() -> RedisServer {
    RedisServer::start().expect("redis-server (Debian package redis-server)")
}

fn seqs(events: &[duomcp::transport::http::StoredEvent]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

#[tokio::test]
async fn events_appended_by_one_replica_replay_on_another_one_by_one() {
    let server = redis();
    let a = RedisEventStore::new(Redis::connect(&server.url()).unwrap());
    let b = RedisEventStore::new(Redis::connect(&server.url()).unwrap());
    for seq in 1..=50u64 {
        let msg = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{{\"n\":{seq}}}}}");
        a.append("sess-1", 3, seq, msg.into()).await.unwrap();
    }
    // Another stream of the same session, and another session, stay apart.
    a.append("sess-1", 4, 1, "other stream".into())
        .await
        .unwrap();
    a.append("sess-2", 3, 1, "other session".into())
        .await
        .unwrap();

    let all = b.replay_after("sess-1", 3, 0).await.unwrap();
    assert_eq!(seqs(&all), (1..=50).collect::<Vec<_>>());
    for e in &all {
        let want = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{{\"n\":{}}}}}",
            e.seq
        );
        assert_eq!(e.message, want.as_bytes());
    }
    let after = b.replay_after("sess-1", 3, 37).await.unwrap();
    assert_eq!(
        seqs(&after),
        (38..=50).collect::<Vec<_>>(),
        "no loss, no duplicate"
    );
    assert!(b.replay_after("sess-1", 3, 50).await.unwrap().is_empty());
    assert_eq!(
        b.replay_after("sess-1", 4, 0).await.unwrap()[0].message,
        "other stream"
    );

    // Binary-safe: a message with spaces, newlines and non-UTF-8 bytes comes back as it was.
    let odd: &[u8] = b"a b\r\n\xff\x00 c";
    a.append("sess-3", 1, 7, bytes::Bytes::from_static(odd))
        .await
        .unwrap();
    assert_eq!(
        b.replay_after("sess-3", 1, 0).await.unwrap()[0].message,
        odd
    );

    // Ending the session on B removes it for A too; other sessions stay.
    b.remove_session("sess-1").await;
    assert!(a.replay_after("sess-1", 3, 0).await.unwrap().is_empty());
    assert!(a.replay_after("sess-1", 4, 0).await.unwrap().is_empty());
    assert_eq!(a.replay_after("sess-2", 3, 0).await.unwrap().len(), 1);
    let left = server.command(&["KEYS", "duomcp:ev:{sess-1}*"]).unwrap();
    assert_eq!(left, "", "keys of the ended session remain");
}

#[tokio::test]
async fn the_log_is_bounded_per_stream_per_session_and_in_time() {
    let server = redis();
    let store = RedisEventStore::new(Redis::connect(&server.url()).unwrap()).bounds(3, 5);
    for seq in 1..=4 {
        store.append("s", 1, seq, "x".into()).await.unwrap();
    }
    assert_eq!(
        seqs(&store.replay_after("s", 1, 0).await.unwrap()),
        [2, 3, 4]
    );
    // The session bound (5) drops the oldest events, oldest stream first.
    for seq in 1..=3 {
        store.append("s", 2, seq, "y".into()).await.unwrap();
    }
    assert_eq!(seqs(&store.replay_after("s", 1, 0).await.unwrap()), [3, 4]);
    assert_eq!(
        seqs(&store.replay_after("s", 2, 0).await.unwrap()),
        [1, 2, 3]
    );
    // The stream bound trims stream 2 itself: the session is back at 5, stream 1 untouched.
    store.append("s", 2, 4, "y".into()).await.unwrap();
    assert_eq!(seqs(&store.replay_after("s", 1, 0).await.unwrap()), [3, 4]);
    assert_eq!(
        seqs(&store.replay_after("s", 2, 0).await.unwrap()),
        [2, 3, 4]
    );
    // A third stream empties stream 1 (the oldest), which then leaves the session's index.
    for seq in 1..=2 {
        store.append("s", 3, seq, "z".into()).await.unwrap();
    }
    assert!(store.replay_after("s", 1, 0).await.unwrap().is_empty());
    assert_eq!(
        seqs(&store.replay_after("s", 2, 0).await.unwrap()),
        [2, 3, 4]
    );
    assert_eq!(seqs(&store.replay_after("s", 3, 0).await.unwrap()), [1, 2]);
    assert_eq!(
        server.command(&["GET", "duomcp:ev:{s}:count"]).unwrap(),
        "5"
    );
    assert_eq!(
        server
            .command(&["LRANGE", "duomcp:ev:{s}:streams", "0", "-1"])
            .unwrap(),
        "duomcp:ev:{s}:2\nduomcp:ev:{s}:3"
    );

    // The TTL: a session's events go when it appends nothing for that long.
    let short = RedisEventStore::new(Redis::connect(&server.url()).unwrap())
        .ttl(Duration::from_millis(200));
    short.append("t", 1, 1, "z".into()).await.unwrap();
    assert_eq!(short.replay_after("t", 1, 0).await.unwrap().len(), 1);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(short.replay_after("t", 1, 0).await.unwrap().is_empty());
}

#[tokio::test]
async fn redis_down_is_an_error_in_bounded_time_naming_the_store_then_recovers() {
    let mut server = redis();
    let mut config = RedisConfig::new(server.url());
    config.timeout = Duration::from_millis(500);
    config.connect_timeout = Duration::from_millis(300);
    config.max_reconnect_delay = Duration::from_millis(200);
    let store = RedisEventStore::new(Redis::with_config(config).unwrap());
    store.append("s", 1, 1, "before".into()).await.unwrap();

    server.stop();
    let started = Instant::now();
    let err = store.append("s", 1, 2, "during".into()).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(err.to_string().contains("redis store"), "{err}");
    let started = Instant::now();
    assert!(store.replay_after("s", 1, 0).await.is_err());
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );

    // Back (empty: no persistence); the same handle reconnects by itself.
    server.restart().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match store.append("s", 1, 3, "after".into()).await {
            Ok(()) => break,
            Err(e) if Instant::now() > deadline => panic!("did not recover: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    assert_eq!(seqs(&store.replay_after("s", 1, 0).await.unwrap()), [3]);
}

#[tokio::test]
async fn the_shared_key_is_one_key_whoever_asks_first() {
    let server = redis();
    let a = Redis::connect(&server.url()).unwrap();
    let b = Redis::connect(&server.url()).unwrap();
    let (ka, kb) = tokio::join!(a.shared_keyring(), b.shared_keyring());
    assert_eq!(ka.unwrap().newest_id(), kb.unwrap().newest_id());
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

#[tokio::test]
async fn tasks_are_shared_and_their_edits_never_interleave() {
    let server = redis();
    let a = RedisTaskStore::new(Redis::connect(&server.url()).unwrap());
    let b = std::sync::Arc::new(RedisTaskStore::new(Redis::connect(&server.url()).unwrap()));
    let a = std::sync::Arc::new(a);
    a.create(task("t1", "alice", 1, Some(60_000)), 1)
        .await
        .unwrap();
    assert!(matches!(
        b.create(task("t1", "alice", 1, Some(60_000)), 1).await,
        Err(TaskStoreError::Duplicate(_))
    ));
    assert_eq!(
        b.get("t1", 2).await.unwrap().principal.as_deref(),
        Some("alice")
    );
    // Expired at the time given: not returned.
    assert!(b.get("t1", 60_002).await.is_none());

    // 40 edits from two "replicas" at once, each appending one character: none is lost.
    let mut edits = Vec::new();
    for i in 0..40 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
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
        a.get("t1", 4).await.unwrap().status_message.unwrap().len(),
        40
    );
    // The edit of an unknown task is not called.
    assert!(b
        .update("nope", 4, Box::new(|_: &mut TaskRecord| panic!("called")))
        .await
        .is_none());

    // Listing: the requestor's tasks only, in creation order, in pages; expired ones left out.
    for (id, at) in [("t2", 2), ("t3", 3), ("t4", 4)] {
        a.create(task(id, "alice", at, Some(60_000)), at)
            .await
            .unwrap();
    }
    a.create(task("old", "alice", 0, Some(5)), 0).await.unwrap();
    a.create(task("bob1", "bob", 5, Some(60_000)), 5)
        .await
        .unwrap();
    let alice = TaskFilter::Principal(Era::Modern, "alice".into());
    let (page, more) = b.list(&alice, None, 2, 10).await;
    let ids: Vec<&str> = page.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["t1", "t2"]);
    assert!(more);
    let (page, more) = b.list(&alice, Some(&page[1].list_key()), 2, 10).await;
    let ids: Vec<&str> = page.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["t3", "t4"]);
    assert!(!more);

    // Removal on B is seen on A.
    assert_eq!(b.remove("t2").await.unwrap().id, "t2");
    assert!(a.get("t2", 10).await.is_none());
    let (page, _) = a.list(&alice, None, 10, 10).await;
    assert_eq!(page.len(), 3);
}

/// A 2025-11-25 session record, as `initialize` writes it.
fn session_record() -> duomcp::transport::http::SessionRecord {
    serde_json::from_value(serde_json::json!({
        "protocol_version": "2025-11-25",
        "client_capabilities": {},
    }))
    .unwrap()
}

#[tokio::test]
async fn session_records_expire_after_the_handshake_and_are_bounded_fleet_wide() {
    use duomcp::redis::RedisSessionStore;
    use duomcp::transport::http::{CreateBounds, SessionStore, Touched};
    let server = redis();
    let a = RedisSessionStore::new(Redis::connect(&server.url()).unwrap());
    let b = RedisSessionStore::new(Redis::connect(&server.url()).unwrap());
    let record = session_record();
    let idle = Duration::from_secs(1800);
    let bounds = CreateBounds::new(Duration::from_secs(60), idle, 3);
    let pttl = |id: &str| -> i64 {
        server
            .command(&["PTTL", &format!("duomcp:session:{{{id}}}")])
            .unwrap()
            .parse()
            .unwrap()
    };

    // A new record lives for the handshake timeout; its first touch sets the idle expiry.
    assert!(a.create("s1", &record, bounds).await.unwrap().is_some());
    assert!((1..=60_000).contains(&pttl("s1")), "{}", pttl("s1"));
    assert!(matches!(
        b.touch("s1", 0, idle).await.unwrap(),
        Touched::Changed(..)
    ));
    assert!(pttl("s1") > 60_000, "{}", pttl("s1"));
    // Full (3): each new one ends the oldest never-used one, never s1 (used).
    assert!(a.create("s2", &record, bounds).await.unwrap().is_some());
    assert!(b.create("s3", &record, bounds).await.unwrap().is_some());
    assert!(a.create("s4", &record, bounds).await.unwrap().is_some());
    assert_eq!(a.touch("s2", 0, idle).await.unwrap(), Touched::Gone);
    assert!(b.create("s5", &record, bounds).await.unwrap().is_some());
    assert_eq!(a.touch("s3", 0, idle).await.unwrap(), Touched::Gone);
    // Now s1, s4, s5; s4 and s5 used: nothing to end, the next is refused.
    b.touch("s4", 0, idle).await.unwrap();
    a.touch("s5", 0, idle).await.unwrap();
    assert_eq!(b.create("s6", &record, bounds).await.unwrap(), None);
    assert_eq!(
        server.command(&["EXISTS", "duomcp:session:{s6}"]).unwrap(),
        "0"
    );
    assert_eq!(
        server.command(&["ZCARD", "duomcp:sessions:all"]).unwrap(),
        "3"
    );

    // Release: B touched s1 first, A last; A ending its copy keeps it while B's touch is
    // within `quiet`, and ends it once it is not.
    a.touch("s1", 1, idle).await.unwrap();
    assert!(!a.release("s1", Duration::from_secs(5)).await.unwrap());
    assert!(pttl("s1") > 0);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(a.release("s1", Duration::from_millis(10)).await.unwrap());
    assert_eq!(b.touch("s1", 0, idle).await.unwrap(), Touched::Gone);
    // B touched s4 last: B's own release ends it at once; A's keeps it.
    assert!(!a.release("s4", Duration::from_secs(5)).await.unwrap());
    assert!(b.release("s4", Duration::from_secs(5)).await.unwrap());
    // A never-used session is released whoever asks.
    assert!(a.create("s7", &record, bounds).await.unwrap().is_some());
    assert!(b.release("s7", Duration::from_secs(5)).await.unwrap());
    // Remove forgets it in the fleet's sets too: both are empty now.
    a.remove("s5").await.unwrap();
    assert_eq!(
        server.command(&["ZCARD", "duomcp:sessions:all"]).unwrap(),
        "0"
    );
    assert_eq!(
        server.command(&["ZCARD", "duomcp:sessions:fresh"]).unwrap(),
        "0"
    );
}

/// Two replicas' stores named by their inboxes, and one without (nothing tracked), on `url`;
/// `raw` runs a command on the Redis holding `key`.
async fn holders_are_tracked(url: &str, key_prefix: &str, raw: &dyn Fn(&str, &[&str]) -> String) {
    use duomcp::redis::RedisSessionStore;
    use duomcp::transport::http::{CreateBounds, SessionStore, Touched};
    let a = RedisSessionStore::new(Redis::connect(url).unwrap()).with_inbox(0xa1);
    let b = RedisSessionStore::new(Redis::connect(url).unwrap()).with_inbox(0xb2);
    let plain = RedisSessionStore::new(Redis::connect(url).unwrap());
    let idle = Duration::from_secs(60);
    let record = session_record();
    let bounds = CreateBounds::new(idle, idle, 100);
    for id in ["s1", "s2"] {
        a.create(id, &record, bounds).await.unwrap().unwrap();
    }
    // Nobody touched s1 yet: no holders. Then A and B touch it; only A touches s2.
    let h = a.holders("s1", idle).await.unwrap().unwrap();
    assert!(h.replicas.is_empty() && h.stream.is_none(), "{h:?}");
    assert!(matches!(
        a.touch("s1", 0, idle).await.unwrap(),
        Touched::Changed(..)
    ));
    let Touched::Changed(v1, _) = b.touch("s1", 0, idle).await.unwrap() else {
        panic!("B restores s1")
    };
    assert!(matches!(
        a.touch("s2", 0, idle).await.unwrap(),
        Touched::Changed(..)
    ));
    let mut h = a.holders("s1", idle).await.unwrap().unwrap();
    h.replicas.sort();
    assert_eq!(h.replicas, [0xa1, 0xb2]);
    // Touches without a copy in hand (known 0) make holders that trust none: no change of
    // the session needs to reach them.
    assert!(h.caching.is_empty(), "{h:?}");
    // B touches again with the version it restored, and A saves the record: both may trust
    // a copy now, and a later touch of B's without one does not take that back.
    assert_eq!(b.touch("s1", v1, idle).await.unwrap(), Touched::Unchanged);
    assert_eq!(
        a.holders("s1", idle).await.unwrap().unwrap().caching,
        [0xb2]
    );
    a.save("s1", &record, false, idle).await.unwrap().unwrap();
    b.touch("s1", 0, idle).await.unwrap();
    let mut h = a.holders("s1", idle).await.unwrap().unwrap();
    h.caching.sort();
    assert_eq!(h.caching, [0xa1, 0xb2]);
    assert_eq!(
        b.holders("s2", idle).await.unwrap().unwrap().replicas,
        [0xa1]
    );
    // A store without an inbox neither records nor reports.
    plain.touch("s2", 0, idle).await.unwrap();
    assert_eq!(plain.holders("s2", idle).await.unwrap(), None);
    assert_eq!(
        a.holders("s2", idle).await.unwrap().unwrap().replicas,
        [0xa1]
    );

    // The GET stream: B opens it, then A; B's stale close changes nothing, A's leaves nobody.
    b.hold_stream("s1", true).await.unwrap();
    assert_eq!(
        a.holders("s1", idle).await.unwrap().unwrap().stream,
        Some(0xb2)
    );
    a.hold_stream("s1", true).await.unwrap();
    b.hold_stream("s1", false).await.unwrap();
    assert_eq!(
        a.holders("s1", idle).await.unwrap().unwrap().stream,
        Some(0xa1)
    );
    a.hold_stream("s1", false).await.unwrap();
    assert_eq!(a.holders("s1", idle).await.unwrap().unwrap().stream, None);

    // A narrow window leaves out touches older than it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    b.touch("s1", 0, idle).await.unwrap();
    let h = a
        .holders("s1", Duration::from_millis(200))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(h.replicas, [0xb2], "A's touch is older than the window");

    // Ended: the holders are still readable (whom to tell), and go within a minute.
    a.remove("s1").await.unwrap();
    let mut h = b.holders("s1", idle).await.unwrap().unwrap();
    h.replicas.sort();
    assert_eq!(h.replicas, [0xa1, 0xb2]);
    let key = format!("{key_prefix}s1}}:holders");
    let ttl: i64 = raw(&key, &["PTTL", &key]).trim().parse().unwrap();
    assert!(ttl > 0 && ttl <= 60_000, "{ttl}");
    // A name in the hash that is no inbox (another kind of store, or a hostile write):
    // nothing is targeted, the caller broadcasts.
    let key = format!("{key_prefix}s2}}:holders");
    let now_ish = "99999999999999";
    raw(&key, &["HSET", &key, "not-an-inbox", now_ish]);
    assert_eq!(a.holders("s2", idle).await.unwrap(), None);
}

#[tokio::test]
async fn the_replicas_holding_a_session_and_its_stream_are_tracked() {
    let server = redis();
    let raw = |_: &str, args: &[&str]| server.command(args).unwrap();
    holders_are_tracked(&server.url(), "duomcp:session:{", &raw).await;
}
