//! `duomcp events list|poll|watch` against `duomcp serve` (over stdio with `-- duomcp serve`,
//! and over `--http`) in both revisions, the occurrences emitted with
//! `duomcp call test_emit_event`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");
const ERAS: [&str; 2] = ["legacy", "modern"];

async fn run(args: &[&str]) -> (bool, String, String) {
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        Command::new(BIN).args(args).kill_on_drop(true).output(),
    )
    .await
    .expect("duomcp finishes")
    .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `duomcp serve --http 127.0.0.1:0` and its URL.
async fn serve_http() -> (Child, String) {
    let mut child = Command::new(BIN)
        .args(["serve", "--http", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(rest) = line.split("serving the reference server at ").nth(1) {
                return rest.split_whitespace().next().unwrap().to_owned();
            }
        }
        panic!("duomcp serve ended without announcing its URL");
    })
    .await
    .expect("duomcp serve announces its URL");
    // Keep draining its stderr.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

#[tokio::test]
async fn list_and_poll_over_stdio_in_both_revisions() {
    for era in ERAS {
        let (ok, out, err) = run(&["events", "list", "--era", era, "--", BIN, "serve"]).await;
        assert!(ok, "{era}: {err}");
        assert!(
            out.contains("demo.tick") && out.contains("poll,push"),
            "{out}"
        );

        let (ok, out, err) = run(&[
            "events",
            "poll",
            "demo.tick",
            "room=a",
            "--era",
            era,
            "--",
            BIN,
            "serve",
        ])
        .await;
        assert!(ok, "{era}: {err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["events"], serde_json::json!([]));
        assert!(v["cursor"].is_string());

        // A watch that hears nothing ends at its --duration, with the cursor on stderr.
        let (ok, out, err) = run(&[
            "events",
            "watch",
            "demo.tick",
            "--duration",
            "1",
            "--min-poll",
            "0.1",
            "--era",
            era,
            "--",
            BIN,
            "serve",
        ])
        .await;
        assert!(ok, "{era}: {err}");
        assert!(out.is_empty(), "{out}");
        assert!(err.contains("cursor "), "{era}: {err}");
    }
}

#[tokio::test]
async fn poll_over_http_sees_what_duomcp_call_emitted() {
    let (_serve, url) = serve_http().await;
    for era in ERAS {
        let (ok, out, err) = run(&["events", "poll", "demo.tick", &url, "--era", era]).await;
        assert!(ok, "{era}: {err}");
        let first: Value = serde_json::from_str(&out).unwrap();
        let cursor = first["cursor"].as_str().unwrap().to_owned();
        let (ok, _, err) = run(&["call", "test_emit_event", "message=hello", &url]).await;
        assert!(ok, "{err}");
        let (ok, out, err) = run(&[
            "events",
            "poll",
            "demo.tick",
            &url,
            "--cursor",
            &cursor,
            "--era",
            era,
        ])
        .await;
        assert!(ok, "{era}: {err}");
        let next: Value = serde_json::from_str(&out).unwrap();
        let events = next["events"].as_array().unwrap();
        assert_eq!(events.len(), 1, "{era}: {next}");
        assert_eq!(events[0]["data"]["message"], "hello");
        assert_ne!(next["cursor"], first["cursor"]);
    }
}

#[tokio::test]
async fn watch_over_http_prints_each_occurrence_once_in_both_modes_and_revisions() {
    let (_serve, url) = serve_http().await;
    for era in ERAS {
        for mode in ["poll", "push", "auto"] {
            let watch = Command::new(BIN)
                .args(["events", "watch", "demo.tick", "room=r1", &url])
                .args(["--era", era, "--mode", mode, "--count", "3"])
                .args(["--min-poll", "0.05", "--duration", "20"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .unwrap();
            let waiting = tokio::spawn(watch.wait_with_output());
            // Emit until the watcher has its three (it subscribes "from now").
            let mut n = 0;
            while !waiting.is_finished() && n < 60 {
                n += 1;
                let message = format!("message={n}");
                let (ok, _, err) =
                    run(&["call", "test_emit_event", "room=r1", &message, &url]).await;
                assert!(ok, "{err}");
                // Another room's ticks are not for this watcher.
                run(&["call", "test_emit_event", "room=r2", "message=x", &url]).await;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let out = tokio::time::timeout(Duration::from_secs(30), waiting)
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{era} {mode}: {stderr}");
            let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            assert_eq!(lines.len(), 3, "{era} {mode}: {lines:?}");
            let numbers: Vec<u64> = lines
                .iter()
                .map(|l| {
                    assert_eq!(l["data"]["room"], "r1");
                    l["data"]["message"].as_str().unwrap().parse().unwrap()
                })
                .collect();
            assert!(
                numbers.windows(2).all(|w| w[0] + 1 == w[1]),
                "{era} {mode}: in order, none twice or missed: {numbers:?}"
            );
            assert!(stderr.contains("cursor "), "{stderr}");
        }
    }
}
