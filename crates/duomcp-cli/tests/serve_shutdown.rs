//! `duomcp serve` (stdio) on SIGTERM / SIGINT: stops reading, lets the call in flight finish
//! and write its response, then exits 0 although stdin is still open.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{json, Value};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

fn spawn() -> (
    Child,
    ChildStdin,
    tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_duomcp"))
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn duomcp serve");
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    (child, stdin, BufReader::new(stdout).lines())
}

async fn send(stdin: &mut ChildStdin, msg: Value) {
    let mut line = serde_json::to_vec(&msg).unwrap();
    line.push(b'\n');
    stdin.write_all(&line).await.unwrap();
    stdin.flush().await.unwrap();
}

async fn next(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
) -> Option<Value> {
    tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("timed out waiting for the server")
        .unwrap()
        .map(|l| serde_json::from_str(&l).unwrap())
}

fn kill(child: &Child, signal: &str) {
    let pid = child.id().expect("running").to_string();
    let status = std::process::Command::new("kill")
        .args([signal, &pid])
        .status()
        .unwrap();
    assert!(status.success());
}

async fn exit_code(mut child: Child) -> i32 {
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("the server did not exit")
        .unwrap();
    status.code().expect("exited, not killed")
}

#[tokio::test]
async fn sigterm_lets_the_call_in_flight_finish_then_exits_zero() {
    let (child, mut stdin, mut lines) = spawn();
    send(&mut stdin, json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } }))
    .await;
    assert_eq!(next(&mut lines).await.unwrap()["id"], 1);
    send(
        &mut stdin,
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    )
    .await;
    // Without the tasks capability, `slow_compute` runs inline: a call in flight for 1 s.
    send(
        &mut stdin,
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "slow_compute", "arguments": { "seconds": 1.0 } } }),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let signalled = Instant::now();
    kill(&child, "-TERM");

    let response = next(&mut lines)
        .await
        .expect("the response to the call in flight");
    assert_eq!(response["id"], 2);
    assert_eq!(
        response["result"]["content"][0]["text"], "Computed job in 1s",
        "{response}"
    );
    assert!(next(&mut lines).await.is_none(), "stdout should close");
    // stdin is still open: the signal, not EOF, ended the server.
    assert_eq!(exit_code(child).await, 0);
    assert!(signalled.elapsed() < Duration::from_secs(4));
    drop(stdin);
}

#[tokio::test]
async fn sigint_with_nothing_in_flight_exits_zero_at_once() {
    let (child, mut stdin, mut lines) = spawn();
    send(
        &mut stdin,
        json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }),
    )
    .await;
    assert_eq!(next(&mut lines).await.unwrap()["id"], 1);
    let signalled = Instant::now();
    kill(&child, "-INT");
    assert!(next(&mut lines).await.is_none(), "stdout should close");
    assert_eq!(exit_code(child).await, 0);
    assert!(signalled.elapsed() < Duration::from_secs(2));
    drop(stdin);
}
