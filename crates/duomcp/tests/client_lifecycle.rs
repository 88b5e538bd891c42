//! Time, cancellation and the end of connections: timeouts, dropped calls, dead servers,
//! graceful shutdown and restarts.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod client_support;

use client_support::*;
use duomcp::client::transport::{Outgoing, ProcessOptions, ProcessTransport, Transport};
use duomcp::client::{Client, ClientError, EraChoice, RequestOptions};
use duomcp::server::{Context, Server};
use std::time::Duration;
use tokio::process::Command;
use tokio::sync::mpsc;

const ERAS: [EraChoice; 2] = [EraChoice::Legacy, EraChoice::Modern];

/// Reports, when the handler's future goes away, whether the request was cancelled by the
/// client (the server drops a cancelled handler after firing its cancellation token).
struct Watch {
    ctx: Context,
    seen: mpsc::UnboundedSender<&'static str>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.seen.send(if self.ctx.is_cancelled() {
            "cancelled"
        } else {
            "dropped"
        });
    }
}

/// A server whose `wait` tool reports (on `seen`) that it started and whether it was cancelled.
fn waiting_server(seen: mpsc::UnboundedSender<&'static str>) -> Server {
    Server::builder()
        .tool("wait", move |ctx: Context| {
            let seen = seen.clone();
            async move {
                let _ = seen.send("started");
                let _watch = Watch {
                    ctx: ctx.clone(),
                    seen,
                };
                tokio::select! {
                    _ = ctx.cancelled() => {}
                    _ = tokio::time::sleep(Duration::from_secs(30)) => {}
                }
                "never seen"
            }
        })
        .tool("slow_progress", |ctx: Context| async move {
            for i in 0..6 {
                tokio::time::sleep(Duration::from_millis(60)).await;
                ctx.progress(i as f64, None, None).await;
            }
            "made it"
        })
        .build()
}

async fn expect(rx: &mut mpsc::UnboundedReceiver<&'static str>, what: &str) {
    let got = tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("in time");
    assert_eq!(got, Some(what));
}

#[tokio::test]
async fn dropping_a_call_cancels_it_on_the_server() {
    for era in ERAS {
        let (tx, mut seen) = mpsc::unbounded_channel();
        let (client, tap) = connect(&waiting_server(tx), builder().era(era)).await;
        let call = tokio::spawn({
            let client = client.clone();
            async move { client.call_tool("wait", ()).await }
        });
        expect(&mut seen, "started").await;
        call.abort();
        expect(&mut seen, "cancelled").await;
        let cancels = sent(&tap).notifications("notifications/cancelled");
        assert_eq!(cancels.len(), 1, "{era:?}");
        assert_eq!(
            cancels[0]["params"]["requestId"],
            sent(&tap).requests("tools/call")[0]["id"]
        );
        // The connection is still fine.
        client.list_tools(None).await.unwrap();
    }
}

#[tokio::test]
async fn a_timeout_fails_the_call_and_cancels_it() {
    for era in ERAS {
        let (tx, mut seen) = mpsc::unbounded_channel();
        let (client, tap) = connect(&waiting_server(tx), builder().era(era)).await;
        let err = client
            .call_tool_with(
                "wait",
                (),
                RequestOptions::new().timeout(Duration::from_millis(100)),
            )
            .await
            .unwrap_err();
        assert!(err.is_timeout(), "{err}");
        expect(&mut seen, "started").await;
        expect(&mut seen, "cancelled").await;
        assert_eq!(
            sent(&tap).notifications("notifications/cancelled")[0]["params"]["reason"],
            "timed out"
        );
    }
}

#[tokio::test]
async fn progress_can_keep_a_call_alive() {
    let (tx, _seen) = mpsc::unbounded_channel();
    let (client, _) = connect(&waiting_server(tx), builder()).await;
    // 6 × 60 ms with a 150 ms timeout: only resetting on progress lets it finish.
    let strict = RequestOptions::new()
        .timeout(Duration::from_millis(150))
        .on_progress(|_| {});
    assert!(client
        .call_tool_with("slow_progress", (), strict)
        .await
        .unwrap_err()
        .is_timeout());
    let lenient = RequestOptions::new()
        .timeout(Duration::from_millis(150))
        .reset_timeout_on_progress(Duration::from_secs(5))
        .on_progress(|_| {});
    let r = client
        .call_tool_with("slow_progress", (), lenient)
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("made it"));
    // The overall limit still holds.
    let capped = RequestOptions::new()
        .timeout(Duration::from_millis(150))
        .reset_timeout_on_progress(Duration::from_millis(200))
        .on_progress(|_| {});
    assert!(client
        .call_tool_with("slow_progress", (), capped)
        .await
        .unwrap_err()
        .is_timeout());
}

#[tokio::test]
async fn a_server_that_exits_at_once_is_a_clear_error() {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "exit 3"]);
    let err = Client::builder().connect_stdio(cmd).await.unwrap_err();
    match &err {
        ClientError::Closed { reason } => assert!(reason.contains("exit status: 3"), "{reason}"),
        other => panic!("expected Closed, got {other:?}"),
    }
}

#[tokio::test]
async fn a_missing_program_is_a_spawn_error() {
    let err = Client::builder()
        .connect_stdio(Command::new("/nonexistent/duomcp-test-server"))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Spawn(_)), "{err}");
}

#[tokio::test]
async fn in_flight_requests_fail_when_the_server_dies() {
    // Answers `initialize` by hand, then dies on the next message.
    let script = r#"read line; id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/');
printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"0"}}}\n' "$id";
read line; read line; exit 7"#;
    let mut cmd = Command::new("sh");
    cmd.args(["-c", script]);
    let client = Client::builder()
        .era(EraChoice::Legacy)
        .connect_stdio(cmd)
        .await
        .unwrap();
    assert_eq!(client.server_info().unwrap().name, "sh");
    let err = tokio::time::timeout(Duration::from_secs(5), client.list_tools(None))
        .await
        .expect("no hang")
        .unwrap_err();
    match &err {
        ClientError::Closed { reason } => assert!(reason.contains("exit status: 7"), "{reason}"),
        other => panic!("expected Closed, got {other:?}"),
    }
    // Later calls fail at once.
    assert!(client.list_tools(None).await.unwrap_err().is_closed());
    assert!(client.closed_reason().is_some());
}

#[tokio::test]
async fn closing_escalates_to_sigkill_for_a_stubborn_process() {
    let mut cmd = Command::new("sh");
    // Ignores stdin EOF and SIGTERM.
    cmd.args(["-c", "trap '' TERM; while true; do sleep 1; done"]);
    let opts = ProcessOptions {
        shutdown_grace: Duration::from_millis(200),
        ..ProcessOptions::default()
    };
    let transport = ProcessTransport::spawn(cmd, opts).unwrap();
    let started = std::time::Instant::now();
    transport.close().await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "waited after stdin and after SIGTERM"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn closing_a_polite_process_only_closes_stdin() {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "cat >/dev/null; exit 0"]);
    let opts = ProcessOptions {
        shutdown_grace: Duration::from_secs(5),
        ..ProcessOptions::default()
    };
    let transport = ProcessTransport::spawn(cmd, opts).unwrap();
    let started = std::time::Instant::now();
    transport.close().await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "exited on stdin EOF, no signal needed"
    );
    let mut msg = Outgoing::new(b"{}".to_vec());
    msg.method = Some("x".into());
    assert!(transport.send(msg).await.is_err());
}

/// A 2025-11-25 stdio server (a shell loop) whose every instance answers `initialize` and
/// `ping`, and exits with status 9 on `tools/list`.
fn crash_on_tools_list() -> Command {
    let script = r#"while read line; do
id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p');
case "$line" in
*'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"sh","version":"0"}}}\n' "$id";;
*'"ping"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id";;
*'"tools/list"'*) exit 9;;
esac; done"#;
    let mut cmd = Command::new("sh");
    cmd.args(["-c", script]);
    cmd
}

#[tokio::test]
async fn a_crashed_server_is_restarted_when_asked() {
    let cmd = crash_on_tools_list();
    let opts = ProcessOptions {
        max_restarts: 1,
        ..ProcessOptions::default()
    };
    let client = Client::builder()
        .era(EraChoice::Legacy)
        .process_options(opts)
        .connect_stdio(cmd)
        .await
        .unwrap();
    let err = client.list_tools(None).await.unwrap_err();
    assert!(err.is_closed(), "{err}");
    // The restarted process is initialized again and answers.
    let mut ok = false;
    for _ in 0..50 {
        if client.ping().await.is_ok() {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(ok, "the restarted server answers");
    // The second crash is final.
    assert!(client.list_tools(None).await.unwrap_err().is_closed());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(client.ping().await.unwrap_err().is_closed());
}

#[tokio::test]
async fn a_crashing_server_is_restarted_after_a_back_off_that_doubles() {
    let cmd = crash_on_tools_list();
    let backoff = Duration::from_millis(300);
    let opts = ProcessOptions {
        max_restarts: 2,
        restart_backoff: backoff,
        ..ProcessOptions::default()
    };
    let client = Client::builder()
        .era(EraChoice::Legacy)
        .process_options(opts)
        .connect_stdio(cmd)
        .await
        .unwrap();
    // How long after a crash the restarted process first answers; calls before then fail
    // at once (no hang).
    async fn crash_and_wait(client: &Client) -> Duration {
        let err = client.list_tools(None).await.unwrap_err();
        assert!(err.is_closed(), "{err}");
        let crashed = std::time::Instant::now();
        loop {
            let attempt = tokio::time::timeout(Duration::from_secs(5), client.ping()).await;
            match attempt.expect("a call during the back-off fails at once") {
                Ok(()) => return crashed.elapsed(),
                Err(e) => assert!(e.is_closed(), "{e}"),
            }
            assert!(
                crashed.elapsed() < Duration::from_secs(10),
                "never restarted"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let first = crash_and_wait(&client).await;
    assert!(first >= backoff, "restarted after {first:?}");
    let second = crash_and_wait(&client).await;
    assert!(
        second >= backoff * 2,
        "the second restart waited {second:?}"
    );
    // The third crash in a row is final.
    assert!(client.list_tools(None).await.unwrap_err().is_closed());
    tokio::time::sleep(backoff * 5).await;
    assert!(client.ping().await.unwrap_err().is_closed());
}

#[tokio::test]
async fn closing_the_client_ends_calls_on_every_clone() {
    let (tx, mut seen) = mpsc::unbounded_channel();
    let (client, _) = connect(&waiting_server(tx), builder()).await;
    let other = client.clone();
    let call = tokio::spawn(async move { other.call_tool("wait", ()).await });
    expect(&mut seen, "started").await;
    client.close().await.unwrap();
    let err = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("no hang")
        .unwrap()
        .unwrap_err();
    assert!(err.is_closed(), "{err}");
    assert!(client.list_tools(None).await.unwrap_err().is_closed());
}

#[tokio::test]
async fn a_server_that_writes_garbage_to_stdout_is_quoted_in_the_error() {
    // A server that logs to stdout, then echoes what it reads (so it never answers).
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "echo hello; cat"]);
    let err = Client::builder()
        .request_timeout(Duration::from_secs(2))
        .connect_stdio(cmd)
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Protocol(_)), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("\"hello\""), "{text}");
    assert!(text.contains("not a JSON-RPC message"), "{text}");
}

#[tokio::test]
async fn a_last_line_without_a_newline_is_said_so() {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "printf 'starting\\033[0m up'; exit 1"]);
    let err = Client::builder().connect_stdio(cmd).await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("exit status: 1"), "{text}");
    assert!(text.contains("without a newline"), "{text}");
    // Control characters are escaped, not written to the user's terminal.
    assert!(text.contains("\"starting\\u{1b}[0m up\""), "{text}");
}

#[tokio::test]
async fn a_stray_line_is_not_quoted_when_the_errors_go_to_others() {
    // As a gateway runs its upstreams: the line belongs to no call, so no caller sees it.
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "echo 'secret of another tenant'; cat"]);
    let err = Client::builder()
        .request_timeout(Duration::from_secs(2))
        .process_options(ProcessOptions {
            quote_stray_lines: false,
            ..ProcessOptions::default()
        })
        .connect_stdio(cmd)
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("not a JSON-RPC message"), "{text}");
    assert!(!text.contains("secret"), "{text}");
}
