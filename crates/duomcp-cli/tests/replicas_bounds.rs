//! The bounds of 2025-11-25 session records kept in Redis by `duomcp serve --http --redis`
//! replicas (issue 32 item 3): the handshake timeout, local ends (eviction, `DELETE`) released
//! fleet-wide, the fleet-wide bound `max-fleet-sessions`, and Redis memory under a flood of
//! `initialize`. Two real replicas on a real `redis-server` started by the test
//! (`duomcp_testkit::cluster`); a missing binary fails the test, nothing skips. Every request
//! goes to a chosen replica on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp_testkit::cluster::{replicas_with, RedisServer};
use duomcp_testkit::raw_http::{exchange_blocking, legacy_session, post_request_with, session_id};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");
const LEGACY: &str = "2025-11-25";

/// `initialize` only (no request after it): the whole response.
fn initialize_raw(addr: SocketAddr, capabilities: &Value) -> String {
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion": LEGACY, "capabilities": capabilities,
        "clientInfo": {"name": "replicas-bounds", "version": "1"}}});
    exchange_blocking(
        addr,
        &post_request_with(addr, &[], &init.to_string()),
        Duration::from_secs(30),
    )
}

/// A session that made no request after `initialize`: its id.
fn initialize_only(addr: SocketAddr) -> String {
    let raw = initialize_raw(addr, &json!({}));
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    session_id(&raw)
}

/// The status of a `ping` in session `sid` on `addr`.
fn ping(addr: SocketAddr, sid: &str) -> u16 {
    let raw = exchange_blocking(
        addr,
        &post_request_with(
            addr,
            &[("Mcp-Session-Id", sid), ("MCP-Protocol-Version", LEGACY)],
            r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#,
        ),
        Duration::from_secs(30),
    );
    status(&raw)
}

fn status(raw: &str) -> u16 {
    raw.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// The status of `DELETE` of session `sid` on `addr`.
fn delete(addr: SocketAddr, sid: &str) -> u16 {
    let req = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: {addr}\r\nMcp-Session-Id: {sid}\r\n\
         MCP-Protocol-Version: {LEGACY}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    status(&exchange_blocking(
        addr,
        req.as_bytes(),
        Duration::from_secs(30),
    ))
}

/// The Redis key of session `sid`'s record (default prefix `duomcp:`).
fn record_key(sid: &str) -> String {
    format!("duomcp:session:{{{sid}}}")
}

fn exists(redis: &RedisServer, sid: &str) -> bool {
    redis.command(&["EXISTS", &record_key(sid)]).unwrap() == "1"
}

/// Session records in Redis, counted with `SCAN` (`KEYS` is fine too at this size, but `SCAN`
/// is what an operator runs).
/// Session records in Redis (the holders hashes beside them left out, and counted by
/// [`holders`]).
fn records(redis: &RedisServer) -> usize {
    count_keys(redis, "duomcp:session:*") - holders(redis)
}

/// The sessions' holders hashes in Redis.
fn holders(redis: &RedisServer) -> usize {
    count_keys(redis, "duomcp:session:*:holders")
}

fn count_keys(redis: &RedisServer, pattern: &str) -> usize {
    let script = "local n, c = 0, '0' repeat local r = redis.call('SCAN', c, 'MATCH', \
                  ARGV[1], 'COUNT', 1000) c = r[1] n = n + #r[2] until c == '0' return n";
    redis
        .command(&["EVAL", script, "0", pattern])
        .unwrap()
        .parse()
        .unwrap()
}

fn used_memory(redis: &RedisServer) -> u64 {
    let info = redis.command(&["INFO", "memory"]).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

/// Waits up to 5 s for `f`.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < deadline, "not within 5 s: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_session_that_never_makes_a_request_ends_on_every_replica_after_the_handshake_timeout() {
    let redis = RedisServer::start().unwrap();
    let rs = replicas_with(BIN, &redis, 2, &["--limit", "session-handshake-timeout=1s"]).unwrap();
    let (a, b) = (rs[0].addr(), rs[1].addr());
    let silent = initialize_only(a);
    // `notifications/initialized` is its first request after `initialize`.
    let talking = legacy_session(a, json!({}), "replicas-bounds");

    let pttl = |sid: &str| -> i64 {
        redis
            .command(&["PTTL", &record_key(sid)])
            .unwrap()
            .parse()
            .unwrap()
    };
    let silent_ttl = pttl(&silent);
    assert!(
        (1..=1000).contains(&silent_ttl),
        "a new record expires after the handshake timeout, not the idle timeout: {silent_ttl} ms"
    );
    let talking_ttl = pttl(&talking);
    assert!(
        talking_ttl > 60_000,
        "after its first request it expires after the idle timeout: {talking_ttl} ms"
    );

    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        !exists(&redis, &silent),
        "the silent session's record is gone"
    );
    assert_eq!(ping(b, &silent), 404, "the replica that did not mint it");
    assert_eq!(ping(a, &silent), 404, "the replica that minted it");
    // The other session, on both replicas, lives on.
    assert_eq!(ping(b, &talking), 200);
    assert_eq!(ping(a, &talking), 200);
    assert!(exists(&redis, &talking));
}

#[test]
fn an_evicted_or_deleted_session_is_gone_on_the_other_replica_but_one_in_use_there_is_not() {
    let redis = RedisServer::start().unwrap();
    // A 5 s touch interval: the margin within which a session B used is kept when A ends its
    // copy (a loaded machine cannot outlast it between two requests).
    let rs = replicas_with(
        BIN,
        &redis,
        2,
        &[
            "--limit",
            "max-sessions=2",
            "--limit",
            "session-touch-interval=5s",
        ],
    )
    .unwrap();
    let (a, b) = (rs[0].addr(), rs[1].addr());

    // A full table on A ends its least recently used session that made no request: s1.
    let s1 = initialize_only(a);
    let s2 = initialize_only(a);
    let s3 = initialize_only(a);
    eventually("the evicted session's record is released", || {
        !exists(&redis, &s1)
    });
    assert_eq!(ping(b, &s1), 404, "evicted on A: gone on B too");
    assert_eq!(ping(a, &s1), 404);

    // s3 is used on B, then once on A (A touches it last): B may go on serving it from its
    // liveness cache without touching it for the touch interval.
    assert_eq!(ping(b, &s3), 200);
    assert_eq!(ping(a, &s3), 200);
    // A's table {s2, s3} makes room twice: s2 (never used anywhere) is released, s3 (used on
    // B within the touch interval) only leaves A's table.
    let s4 = legacy_session(a, json!({}), "replicas-bounds");
    let s5 = legacy_session(a, json!({}), "replicas-bounds");
    eventually("s2 released", || !exists(&redis, &s2));
    assert_eq!(ping(b, &s2), 404);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        exists(&redis, &s3),
        "a session another replica uses is kept"
    );
    assert_eq!(ping(b, &s3), 200);

    // DELETE on A: 404 on B, and no record or fleet entry is left.
    assert_eq!(ping(b, &s5), 200);
    assert_eq!(delete(a, &s5), 204);
    assert_eq!(ping(b, &s5), 404);
    assert!(!exists(&redis, &s5));
    assert_eq!(
        redis
            .command(&["ZSCORE", "duomcp:sessions:all", &s5])
            .unwrap(),
        "",
        "the fleet's set forgets it"
    );
    assert_eq!(ping(a, &s4), 200);
}

#[test]
fn the_fleet_bound_holds_over_two_replicas() {
    let redis = RedisServer::start().unwrap();
    let rs = replicas_with(BIN, &redis, 2, &["--limit", "max-fleet-sessions=20"]).unwrap();
    let (a, b) = (rs[0].addr(), rs[1].addr());
    // 5 sessions in use (`notifications/initialized` is a request), the oldest of all.
    let used: Vec<String> = (0..5)
        .map(|i| legacy_session(if i % 2 == 0 { a } else { b }, json!({}), "replicas-bounds"))
        .collect();
    // 60 sessions that never make a request, alternating replicas: once the fleet is full,
    // each new one ends the oldest such session fleet-wide, never one in use.
    let sids: Vec<String> = (0..60)
        .map(|i| initialize_only(if i % 2 == 0 { a } else { b }))
        .collect();
    let held = records(&redis);
    let members: usize = redis
        .command(&["ZCARD", "duomcp:sessions:all"])
        .unwrap()
        .parse()
        .unwrap();
    let dbsize: usize = redis.command(&["DBSIZE"]).unwrap().parse().unwrap();
    eprintln!("records {held}, fleet set {members}, DBSIZE {dbsize}");
    assert!(held <= 20, "{held} session records in Redis");
    // Holders only for sessions that made a request: the 5 in use.
    assert!(holders(&redis) <= 5, "{} holders hashes", holders(&redis));
    assert!(members <= 20, "{members} in the fleet's set");
    for (i, sid) in used.iter().enumerate() {
        assert!(exists(&redis, sid), "used session {i} was evicted");
        assert_eq!(ping(a, sid), 200, "used session {i} on A");
        assert_eq!(ping(b, sid), 200, "used session {i} on B");
    }
    // The oldest fresh ones ended on both replicas, whichever minted them (each crossed over).
    for (i, sid) in sids.iter().take(10).enumerate() {
        let other = if i % 2 == 0 { b } else { a };
        let own = if i % 2 == 0 { a } else { b };
        assert_eq!(ping(other, sid), 404, "session {i} on the other replica");
        assert_eq!(ping(own, sid), 404, "session {i} on its own replica");
    }
    // The newest 15 live, each asked on the replica that did not mint it (a request: from
    // now on none of them can be ended to make room).
    for (i, sid) in sids.iter().enumerate().skip(45) {
        let other = if i % 2 == 0 { b } else { a };
        assert_eq!(ping(other, sid), 200, "session {i}");
    }
    // Full of sessions in use: `initialize` is refused on both replicas, with Retry-After.
    for addr in [a, b] {
        let raw = initialize_raw(addr, &json!({}));
        assert!(raw.starts_with("HTTP/1.1 503"), "{raw}");
        assert!(
            raw.to_ascii_lowercase().contains("\r\nretry-after:"),
            "{raw}"
        );
        let body = raw.split("\r\n\r\n").nth(1).unwrap_or_default();
        let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {raw}"));
        assert_eq!(v["error"]["code"], -32603, "{v}");
    }
    assert!(records(&redis) <= 20);
    // Ending one makes room again.
    assert_eq!(delete(a, &sids[59]), 204);
    assert!(initialize_raw(b, &json!({})).starts_with("HTTP/1.1 200"));
}

#[test]
fn redis_memory_stays_bounded_under_a_flood_of_initialize() {
    let redis = RedisServer::start().unwrap();
    let rs = replicas_with(BIN, &redis, 2, &["--limit", "max-fleet-sessions=100"]).unwrap();
    let addrs = [rs[0].addr(), rs[1].addr()];
    // Each `initialize` keeps about 32 KiB of client capabilities (the bound is 64 KiB).
    let capabilities = json!({"experimental": {"pad": {"x": "x".repeat(32 * 1024)}}});
    let before = used_memory(&redis);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..4 {
            let capabilities = &capabilities;
            scope.spawn(move || {
                for i in 0..375 {
                    let raw = initialize_raw(addrs[(t + i) % 2], capabilities);
                    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
                }
            });
        }
    });
    let took = started.elapsed();
    let after = used_memory(&redis);
    let held = records(&redis);
    let grown = after.saturating_sub(before);
    let dbsize = redis.command(&["DBSIZE"]).unwrap();
    let all = redis.command(&["ZCARD", "duomcp:sessions:all"]).unwrap();
    let fresh = redis.command(&["ZCARD", "duomcp:sessions:fresh"]).unwrap();
    eprintln!(
        "1500 inits in {took:?}: used_memory {before} -> {after} bytes (+{grown}), \
         {held} session records, DBSIZE {dbsize}, sessions:all {all}, sessions:fresh {fresh}"
    );
    // Both sets expire with their newest member (the handshake timeout at most here).
    for set in ["duomcp:sessions:all", "duomcp:sessions:fresh"] {
        let ttl: i64 = redis.command(&["PTTL", set]).unwrap().parse().unwrap();
        assert!((1..=60_000).contains(&ttl), "{set} PTTL {ttl}");
    }
    assert!(held <= 100, "{held} records");
    // 1,500 × 32 KiB would be about 48 MiB; 100 records about 3.2 MiB.
    assert!(grown < 8 * 1024 * 1024, "Redis grew by {grown} bytes");
}

#[test]
fn sessions_ending_and_beginning_while_redis_is_down_neither_hang_nor_panic() {
    let mut redis = RedisServer::start().unwrap();
    let rs = replicas_with(
        BIN,
        &redis,
        2,
        &[
            "--limit",
            "max-sessions=1",
            "--limit",
            "session-handshake-timeout=300ms",
        ],
    )
    .unwrap();
    let (a, b) = (rs[0].addr(), rs[1].addr());
    initialize_only(a);
    initialize_only(b);
    redis.stop();
    // A's full table ends its session to make room (a release that fails), then the store
    // refuses the new one: 503, in bounded time.
    let started = Instant::now();
    let raw = initialize_raw(a, &json!({}));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(raw.starts_with("HTTP/1.1 503"), "{raw}");
    assert!(raw.contains("session store"), "{raw}");
    // B's session passes its handshake timeout meanwhile (a release that fails too).
    std::thread::sleep(Duration::from_millis(600));
    redis.restart().unwrap();
    // Both replicas recover by themselves (a replica's first command on its broken
    // connection may still fail: `503`, and the client retries).
    for (addr, other) in [(a, b), (b, a)] {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let raw = initialize_raw(addr, &json!({}));
            if raw.starts_with("HTTP/1.1 200") && ping(other, &session_id(&raw)) == 200 {
                break;
            }
            assert!(Instant::now() < deadline, "no recovery: {raw}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
