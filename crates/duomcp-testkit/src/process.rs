//! Child processes of a test that say on stderr where they listen (`duomcp serve --http`
//! prints `serving the reference server at http://…/mcp`), and waiting for something that
//! arrives later (exported spans, a log line) with a deadline.
//!
//! ```no_run
//! # async fn demo() {
//! use duomcp_testkit::process::spawn_announced;
//! use std::time::Duration;
//! let mut cmd = tokio::process::Command::new("duomcp");
//! cmd.args(["serve", "--http", "127.0.0.1:0"]);
//! let (child, urls) =
//!     spawn_announced(&mut cmd, &["serving the reference server at"], Duration::from_secs(20)).await;
//! assert!(urls[0].starts_with("http://127.0.0.1:"));
//! # drop(child);
//! # }
//! ```
// A test helper: a child that cannot start, or exits before it says where it listens, fails
// the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Spawns `cmd` (stdin and stdout null, stderr piped, killed when the [`Child`] is dropped)
/// and reads its stderr until it has printed a line containing each of `markers`, for at most
/// `within`. Returns the child and, for each marker, the first word of its line that starts
/// with `http://` or `https://`. Stderr is drained after that, so the child never blocks on it.
pub async fn spawn_announced(
    cmd: &mut Command,
    markers: &[&str],
    within: Duration,
) -> (Child, Vec<String>) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut urls: Vec<Option<String>> = vec![None; markers.len()];
    let mut seen = Vec::new();
    let read = async {
        while urls.iter().any(Option::is_none) {
            let Some(line) = lines.next_line().await.unwrap() else {
                panic!("{cmd:?} exited before saying where it listens: {seen:#?}");
            };
            for (marker, url) in markers.iter().zip(urls.iter_mut()) {
                if url.is_none() && line.contains(marker) {
                    let word = line
                        .split_whitespace()
                        .find(|w| w.starts_with("http://") || w.starts_with("https://"))
                        .unwrap_or_else(|| panic!("no URL on the line {line:?}"));
                    *url = Some(word.to_owned());
                }
            }
            seen.push(line);
        }
    };
    if tokio::time::timeout(within, read).await.is_err() {
        panic!("{cmd:?} did not say where it listens within {within:?}");
    }
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, urls.into_iter().map(Option::unwrap).collect())
}

/// Calls `probe` every `every` until it returns `Ok`, for at most `within`; then panics with
/// `what` and the last `Err` (what the probe saw so far).
pub async fn wait_until<T, E: std::fmt::Debug>(
    what: &str,
    within: Duration,
    every: Duration,
    mut probe: impl FnMut() -> Result<T, E>,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        match probe() {
            Ok(v) => return v,
            Err(e) if Instant::now() >= deadline => panic!("{what}: {e:#?}"),
            Err(_) => tokio::time::sleep(every).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_announced_url_is_read_from_stderr_and_a_silent_child_fails() {
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "echo starting >&2; echo 'up at http://127.0.0.1:1/x now' >&2; sleep 5",
        ]);
        let (mut child, urls) = spawn_announced(&mut cmd, &["up at"], Duration::from_secs(5)).await;
        assert_eq!(urls, ["http://127.0.0.1:1/x"]);
        child.start_kill().unwrap();

        let mut quiet = Command::new("sh");
        quiet.args(["-c", "echo nothing >&2"]);
        let failed = tokio::spawn(async move {
            spawn_announced(&mut quiet, &["up at"], Duration::from_secs(5)).await
        })
        .await;
        assert!(failed.is_err(), "a child that never announced was accepted");
    }

    #[tokio::test]
    async fn waiting_ends_with_the_value_or_fails_with_what_was_seen() {
        let mut n = 0;
        let got = wait_until(
            "never",
            Duration::from_secs(5),
            Duration::from_millis(1),
            || {
                n += 1;
                if n == 3 {
                    Ok(n)
                } else {
                    Err(n)
                }
            },
        )
        .await;
        assert_eq!(got, 3);
        let failed = tokio::spawn(wait_until(
            "the thing never came",
            Duration::from_millis(20),
            Duration::from_millis(5),
            || Err::<(), _>("still nothing"),
        ))
        .await
        .unwrap_err();
        let msg = failed.into_panic();
        let msg = msg.downcast_ref::<String>().unwrap();
        assert!(
            msg.contains("the thing never came") && msg.contains("still nothing"),
            "{msg}"
        );
    }
}
