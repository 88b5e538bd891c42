//! `duomcp gateway --http` serves its clients' connections on threads of its own (one per core,
//! or `--threads N`), calls of clients of both revisions on several connections work, and a
//! SIGTERM still stops it in order: the call in flight finishes, the stdio upstream is closed
//! (its process is gone) and the gateway exits 0.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::client::{Client, EraChoice};
use duomcp_testkit::text;
use serde_json::json;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("timed out")
}

/// The processes whose parent is `pid`.
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let path = task.unwrap().path().join("children");
        let list = std::fs::read_to_string(path).unwrap_or_default();
        out.extend(list.split_whitespace().map(|p| p.parse::<u32>().unwrap()));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_on_several_connections_of_both_revisions_work_and_sigterm_stops_it_in_order() {
    let mut gateway = Command::new(env!("CARGO_BIN_EXE_duomcp"))
        .args(["gateway", "--http", "127.0.0.1:0", "--threads", "2", "--"])
        .arg(env!("CARGO_BIN_EXE_duomcp"))
        .arg("serve")
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = gateway.id().unwrap();
    let mut stderr = BufReader::new(gateway.stderr.take().unwrap()).lines();
    let url = within(async {
        loop {
            let line = stderr
                .next_line()
                .await
                .unwrap()
                .expect("the gateway's banner");
            if let Some(rest) = line.split("serving at ").nth(1) {
                break rest.split_whitespace().next().unwrap().to_owned();
            }
        }
    })
    .await;
    // The upstream was started with the gateway.
    let upstream = children(pid);
    assert_eq!(upstream.len(), 1, "{upstream:?}");

    let mut clients = Vec::new();
    for (i, era) in [
        EraChoice::Modern,
        EraChoice::Legacy,
        EraChoice::Modern,
        EraChoice::Legacy,
    ]
    .into_iter()
    .enumerate()
    {
        let client = within(Client::builder().era(era).connect_http(&url))
            .await
            .unwrap();
        let name = format!("client {i}");
        let result = within(client.call_tool("greet", json!({ "name": name })))
            .await
            .unwrap();
        assert_eq!(text(&result), format!("Hello, {name}!"));
        clients.push(client);
    }
    // Calls of all four at once.
    let mut calls = tokio::task::JoinSet::new();
    for (i, c) in clients.iter().enumerate() {
        let c = c.clone();
        calls.spawn(async move {
            let name = format!("again {i}");
            let result = c.call_tool("greet", json!({ "name": name })).await.unwrap();
            assert_eq!(text(&result), format!("Hello, {name}!"));
        });
    }
    within(async {
        while let Some(done) = calls.join_next().await {
            done.unwrap();
        }
    })
    .await;

    // A call in flight when the signal comes finishes.
    let slow = {
        let client = clients[1].clone();
        tokio::spawn(async move {
            client
                .call_tool("slow_compute", json!({ "seconds": 1.0 }))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let result = within(slow).await.unwrap().unwrap();
    assert_eq!(text(&result), "Computed job in 1s");
    let status = within(gateway.wait()).await.unwrap();
    assert_eq!(status.code(), Some(0));
    // The upstream was closed before the gateway exited.
    for child in upstream {
        let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
        assert!(
            stat.is_empty() || stat.contains(") Z "),
            "upstream {child} still runs: {stat}"
        );
    }
}

#[test]
fn a_thread_count_out_of_range_is_refused_before_anything_starts() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_duomcp"))
        .args([
            "gateway",
            "--http",
            "127.0.0.1:0",
            "--threads",
            "5000",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--threads") && stderr.contains("1024"),
        "{stderr}"
    );
}
