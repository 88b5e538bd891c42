//! Issue 16's defects measured on the real thing: a spawned `duomcp serve --http` (with
//! `--limit` settings where a test needs small bounds), whose resident memory is read from
//! `/proc/PID/status` (VmRSS) while a client that sends little tries to make it hold a lot.
//! Status and error codes of the same defects are also tested in-process, in
//! `crates/duomcp/tests/hardening.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{json, Value};
use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

use duomcp_testkit::process::spawn_announced;
use duomcp_testkit::raw_http::{exchange, parse, post_request, Raw};

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");
const MIB: u64 = 1024 * 1024;

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("timed out")
}

/// A `duomcp serve --http 127.0.0.1:0` child, killed when dropped.
struct Served {
    child: Child,
    addr: SocketAddr,
}

impl Served {
    async fn start(limits: &[&str]) -> Served {
        let mut cmd = Command::new(BIN);
        cmd.args(["serve", "--http", "127.0.0.1:0"]);
        for l in limits {
            cmd.args(["--limit", l]);
        }
        let (child, urls) = spawn_announced(
            &mut cmd,
            &["serving the reference server at"],
            Duration::from_secs(60),
        )
        .await;
        let url = &urls[0];
        let addr = url
            .trim_start_matches("http://")
            .split('/')
            .next()
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no address in {url}"));
        Served { child, addr }
    }

    /// Resident memory of the server process, in bytes.
    fn rss(&self) -> u64 {
        let pid = self.child.id().expect("running");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .expect("VmRSS");
        kb * 1024
    }
}

async fn post(addr: SocketAddr, extra: &[String], body: &Value) -> Raw {
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let req = post_request(addr, &extra, &body.to_string());
    exchange(addr, &req, Duration::from_secs(60)).await
}

async fn initialize(addr: SocketAddr) -> String {
    let res = post(
        addr,
        &[],
        &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},
            "clientInfo":{"name":"hardening","version":"0"}}}),
    )
    .await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.header("mcp-session-id").expect("session id")
}

async fn call(addr: SocketAddr, sid: &str, id: u64, method: &str, params: Value) -> Raw {
    post(
        addr,
        &[
            format!("Mcp-Session-Id: {sid}"),
            "MCP-Protocol-Version: 2025-11-25".into(),
        ],
        &json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}),
    )
    .await
}

/// Defect 1: bodies that stop one byte short. Before, each held its buffer for good (20 × 4 MB:
/// RSS +78 MiB); now their bytes come out of a bounded budget and the deadline ends them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn defect_1_unfinished_bodies_are_bounded_and_time_out() {
    let served = Served::start(&["body-timeout=3s", "body-bytes-in-flight=16M"]).await;
    let addr = served.addr;
    initialize(addr).await;
    let baseline = served.rss();
    let declared = 4_000_000usize;
    let chunk = vec![b' '; 64 * 1024];
    let mut conns = Vec::new();
    for _ in 0..20 {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {declared}\r\n\r\n"
        );
        tcp.write_all(head.as_bytes()).await.unwrap();
        let mut left = declared - 1;
        // A refused body's connection is closed by the server: stop writing then.
        while left > 0 {
            let n = left.min(chunk.len());
            match tokio::time::timeout(Duration::from_secs(2), tcp.write_all(&chunk[..n])).await {
                Ok(Ok(())) => left -= n,
                _ => break,
            }
        }
        conns.push(tcp);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let held = served.rss().saturating_sub(baseline);
    eprintln!(
        "RSS {} MiB → +{} MiB while 20 bodies of 4 MB stop short",
        baseline / MIB,
        held / MIB
    );
    assert!(
        held < 40 * MIB,
        "unfinished bodies hold {} MiB (the budget is 16 MiB)",
        held / MIB
    );
    let mut statuses = Vec::new();
    for mut tcp in conns {
        let mut buf = Vec::new();
        let _ = within(tcp.read_to_end(&mut buf)).await;
        statuses.push(parse(&buf).status);
    }
    assert!(statuses.contains(&408), "{statuses:?}");
    assert!(statuses.contains(&503), "{statuses:?}");
    assert!(
        statuses.iter().all(|s| *s == 408 || *s == 503),
        "{statuses:?}"
    );
    // The server is still there for everyone else.
    initialize(addr).await;
}

/// Defect 4: 1,000 sessions that only initialized, then 200 `tools/list_changed` events. Before,
/// every event was stored for every session (RSS grew with sessions × events); now nothing
/// is stored for a session that has no GET stream to resume.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn defect_4_events_of_idle_sessions_cost_no_memory() {
    let served = Served::start(&[]).await;
    let addr = served.addr;
    let caller = initialize(addr).await;
    for _ in 0..1000 {
        initialize(addr).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let baseline = served.rss();
    for i in 0..200 {
        let res = call(
            addr,
            &caller,
            10 + i,
            "tools/call",
            json!({"name":"test_trigger_tool_change"}),
        )
        .await;
        assert_eq!(res.status, 200, "{}", res.body);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let grown = served.rss().saturating_sub(baseline);
    eprintln!(
        "RSS {} MiB → +{} KiB after 200 events to 1,001 sessions",
        baseline / MIB,
        grown / 1024
    );
    assert!(
        grown < 8 * MIB,
        "200 events × 1,001 sessions took {} MiB",
        grown / MIB
    );
}

/// Defect 5: a 3 MB `capabilities.experimental` is refused, not kept for 30 minutes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn defect_5_oversize_client_data_is_refused_and_not_retained() {
    let served = Served::start(&[]).await;
    let addr = served.addr;
    initialize(addr).await;
    let baseline = served.rss();
    let blob = "x".repeat(3_000_000);
    for _ in 0..20 {
        let res = post(
            addr,
            &[],
            &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
                "protocolVersion":"2025-11-25","capabilities":{"experimental":{"blob":blob}},
                "clientInfo":{"name":"big","version":"0"}}}),
        )
        .await;
        assert_eq!(res.status, 400, "{}", res.body);
        assert_eq!(res.json()["error"]["code"], -32602);
        assert!(res.header("mcp-session-id").is_none());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let grown = served.rss().saturating_sub(baseline);
    eprintln!("RSS +{} MiB after 20 refused 3 MB initializes", grown / MIB);
    // Before: 20 sessions × 3.5 MiB kept (70 MiB).
    assert!(grown < 30 * MIB, "{} MiB", grown / MIB);
}

/// Defect 7: tasks whose results are 3 MB each. Before, every one was kept for an hour (40
/// tasks: 150 MiB); now one requestor's finished tasks stay within 16 MiB, so memory stops
/// growing once the budget is reached: 30 more tasks after the first 10 add next to nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn defect_7_task_results_stay_within_the_byte_budget() {
    let served = Served::start(&[]).await;
    let addr = served.addr;
    let sid = initialize(addr).await;
    let label = "x".repeat(3_000_000);
    let mut ids = Vec::new();
    let mut after_ten = 0;
    for i in 0..40 {
        let res = call(
            addr,
            &sid,
            100 + i,
            "tools/call",
            json!({"name":"slow_compute","arguments":{"seconds":0,"label":label},"task":{}}),
        )
        .await;
        assert_eq!(res.status, 200, "{}", res.body);
        let id = res.json()["result"]["task"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("no task: {}", res.body))
            .to_owned();
        ids.push(id);
        if i == 9 {
            tokio::time::sleep(Duration::from_millis(500)).await;
            after_ten = served.rss();
        }
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    let after_forty = served.rss();
    let grown = after_forty.saturating_sub(after_ten);
    eprintln!(
        "RSS {} MiB after 10 finished 3 MB tasks, {} MiB after 40 (+{} MiB)",
        after_ten / MIB,
        after_forty / MIB,
        grown / MIB
    );
    assert!(
        grown < 24 * MIB,
        "30 more tasks took {} MiB (90 MB if all were kept)",
        grown / MIB
    );
    // The newest is kept; the oldest made room.
    let last = call(addr, &sid, 500, "tasks/get", json!({"taskId": ids[39]})).await;
    assert_eq!(
        last.json()["result"]["status"],
        "completed",
        "{}",
        last.body
    );
    let first = call(addr, &sid, 501, "tasks/get", json!({"taskId": ids[0]})).await;
    assert_eq!(first.json()["error"]["code"], -32602, "{}", first.body);
    // Another session cannot see this session's task, even with its id.
    let other = initialize(addr).await;
    let res = call(addr, &other, 502, "tasks/get", json!({"taskId": ids[39]})).await;
    assert_eq!(res.json()["error"]["code"], -32602, "{}", res.body);
    let res = call(addr, &other, 503, "tasks/list", json!({})).await;
    assert_eq!(res.json()["result"]["tasks"], json!([]), "{}", res.body);
}

/// Defect 8 on stdio: `["2.0",1,"ping"]` is not answered as a ping.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn defect_8_a_json_array_on_stdio_is_not_a_request() {
    let mut child = Command::new(BIN)
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    stdin.write_all(b"[\"2.0\",1,\"ping\"]\n").await.unwrap();
    let line = within(out.next_line()).await.unwrap().unwrap();
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["error"]["code"], -32600, "{v}");
    assert!(v.get("result").is_none(), "{v}");
    assert_ne!(v["id"], 1, "{v}");
}
