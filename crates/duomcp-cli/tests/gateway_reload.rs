//! `duomcp gateway --config FILE`: the configuration reloaded on SIGHUP and with `--watch`,
//! without a restart. Upstreams added, changed and removed take effect; a call in flight on a
//! replaced upstream finishes there, and its old process then ends; both clients (one of each
//! revision) keep their sessions and hear `list_changed`; a file that does not validate
//! changes nothing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use duomcp::client::{Client, EraChoice, ServerEvent};
use duomcp_testkit::text;
use serde_json::json;
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::{pids_with, tool_names as names, TempDir};
use tokio::process::{Child, Command};

const BOUND: Duration = Duration::from_secs(120);

/// An upstream `name`: `duomcp serve --era ERA`, with `marker` (a directory) on its command
/// line so that its process can be found.
fn upstream(name: &str, era: &str, marker: &str) -> String {
    format!(
        "[[upstream]]\nname = \"{name}\"\ncommand = \"{}\"\n\
         args = [\"serve\", \"--era\", \"{era}\", \"--skills\", \"{marker}\"]\n",
        env!("CARGO_BIN_EXE_duomcp")
    )
}

fn write_config(dir: &TempDir, upstreams: &[String]) {
    let mut toml = String::from("[gateway]\nprefix = \"always\"\n");
    for u in upstreams {
        toml.push_str(u);
    }
    dir.write("gateway.toml", &toml);
}

/// `duomcp gateway --http 127.0.0.1:0 --config …` (and `extra` flags), its stderr in
/// `gateway.log`; the child and its MCP URL.
async fn gateway(dir: &TempDir, extra: &[&str]) -> (Child, String) {
    let log = std::fs::File::create(dir.0.join("gateway.log")).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_duomcp"))
        .args(["gateway", "--http", "127.0.0.1:0", "--config"])
        .arg(dir.0.join("gateway.toml"))
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .expect("the duomcp binary runs");
    let line = wait_for_log(dir, "serving at ", 0).await;
    let url = line.split("serving at ").nth(1).unwrap();
    (child, url.split_whitespace().next().unwrap().to_owned())
}

/// The first line of the gateway's log containing `needle` after the first `skip` such lines,
/// within 30 s.
async fn wait_for_log(dir: &TempDir, needle: &str, skip: usize) -> String {
    let t0 = Instant::now();
    loop {
        let log = std::fs::read_to_string(dir.0.join("gateway.log")).unwrap_or_default();
        if let Some(line) = log.lines().filter(|l| l.contains(needle)).nth(skip) {
            return line.to_owned();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no {needle:?} in the gateway's log:\n{log}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn hangup(child: &Child) {
    let pid = child.id().unwrap().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .unwrap()
        .success());
}

/// SIGHUP: `b` added and `a` changed while a call runs on `a`; then `a` removed; then a file
/// that does not validate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_adds_changes_and_removes_upstreams_without_dropping_calls_or_sessions() {
    tokio::time::timeout(BOUND, async {
        let dir = TempDir::new("reload");
        let (a1, a2, b) = (
            format!("{}/a1", dir.arg()),
            format!("{}/a2", dir.arg()),
            format!("{}/b", dir.arg()),
        );
        for m in [&a1, &a2, &b] {
            std::fs::create_dir_all(m).unwrap();
        }
        write_config(&dir, &[upstream("a", "legacy", &a1)]);
        let (child, url) = gateway(&dir, &[]).await;
        let legacy = Client::builder()
            .era(EraChoice::Legacy)
            .connect_http(&url)
            .await
            .unwrap();
        let modern = Client::builder()
            .era(EraChoice::Modern)
            .connect_http(&url)
            .await
            .unwrap();
        let mut heard = legacy.notifications();
        assert!(names(&modern).await.contains(&"a_slow_compute".to_owned()));
        assert_eq!(pids_with(&a1).len(), 1);

        // A call on `a` runs for 2 s while `a` is replaced (its `--skills` changes) and `b`
        // is added.
        let slow = {
            let legacy = legacy.clone();
            tokio::spawn(async move {
                legacy
                    .call_tool("a_slow_compute", json!({ "seconds": 2 }))
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        write_config(
            &dir,
            &[upstream("a", "legacy", &a2), upstream("b", "modern", &b)],
        );
        hangup(&child);
        let line = wait_for_log(&dir, "reloaded", 0).await;
        assert!(
            line.contains(r#"added ["b"]"#) && line.contains(r#"changed ["a"]"#),
            "{line}"
        );
        // The call in flight finished on the old `a`.
        let r = slow
            .await
            .unwrap()
            .expect("the call in flight is not dropped");
        assert_ne!(r.is_error, Some(true), "{r:?}");
        // Both sessions go on; both see `b`, the legacy one was told the list changed.
        for client in [&legacy, &modern] {
            let n = names(client).await;
            assert!(
                n.contains(&"a_slow_compute".to_owned())
                    && n.contains(&"b_slow_compute".to_owned()),
                "{n:?}"
            );
        }
        let told = tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(n) = heard.recv().await {
                if n == ServerEvent::ToolsListChanged {
                    break;
                }
            }
        })
        .await;
        assert!(
            told.is_ok(),
            "the legacy client heard no tools/list_changed"
        );
        let r = modern
            .call_tool("b_test_simple_text", json!({}))
            .await
            .unwrap();
        assert_eq!(text(&r), "This is a simple text response for testing.");
        let r = legacy
            .call_tool("a_test_simple_text", json!({}))
            .await
            .unwrap();
        assert_eq!(text(&r), "This is a simple text response for testing.");
        // The new `a` runs; the old one ended once its call was done.
        let t0 = Instant::now();
        while !pids_with(&a1).is_empty() && t0.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!((pids_with(&a1).len(), pids_with(&a2).len()), (0, 1));

        // `a` removed: its tools are gone for both clients, a call to one is an unknown tool.
        write_config(&dir, &[upstream("b", "modern", &b)]);
        hangup(&child);
        let line = wait_for_log(&dir, "reloaded", 1).await;
        assert!(line.contains(r#"removed ["a"]"#), "{line}");
        for client in [&legacy, &modern] {
            let n = names(client).await;
            assert!(
                !n.iter().any(|n| n.starts_with("a_"))
                    && n.contains(&"b_test_simple_text".to_owned()),
                "{n:?}"
            );
        }
        let gone = legacy.call_tool("a_test_simple_text", json!({})).await;
        match gone {
            Err(e) => assert_eq!(e.rpc_error().map(|e| e.code), Some(-32602), "{e}"),
            Ok(r) => assert_eq!(r.is_error, Some(true), "{r:?}"),
        }
        let t0 = Instant::now();
        while !pids_with(&a2).is_empty() && t0.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(
            pids_with(&a2).len(),
            0,
            "the removed upstream's process ended"
        );

        // A file that does not validate: refused, the configuration in use kept.
        dir.write("gateway.toml", "[[upstream]]\nname = \"broken\"\n");
        hangup(&child);
        let line = wait_for_log(&dir, "refused", 0).await;
        assert!(line.contains("configuration in use is kept"), "{line}");
        let r = modern
            .call_tool("b_test_simple_text", json!({}))
            .await
            .unwrap();
        assert_eq!(text(&r), "This is a simple text response for testing.");
    })
    .await
    .expect("bounded");
}

/// `--watch`: writing the file is enough.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_reloads_when_the_file_changes() {
    tokio::time::timeout(BOUND, async {
        let dir = TempDir::new("reload-watch");
        let (a, b) = (format!("{}/a", dir.arg()), format!("{}/b", dir.arg()));
        for m in [&a, &b] {
            std::fs::create_dir_all(m).unwrap();
        }
        write_config(&dir, &[upstream("a", "legacy", &a)]);
        let (_child, url) = gateway(&dir, &["--watch"]).await;
        let client = Client::builder()
            .era(EraChoice::Modern)
            .connect_http(&url)
            .await
            .unwrap();
        assert!(!names(&client).await.iter().any(|n| n.starts_with("b_")));
        // A later modification time than the file's first one, however coarse the clock.
        tokio::time::sleep(Duration::from_millis(1100)).await;
        write_config(
            &dir,
            &[upstream("a", "legacy", &a), upstream("b", "legacy", &b)],
        );
        let line = wait_for_log(&dir, "reloaded", 0).await;
        assert!(line.contains(r#"added ["b"]"#), "{line}");
        assert!(names(&client)
            .await
            .contains(&"b_test_simple_text".to_owned()));
    })
    .await
    .expect("bounded");
}
