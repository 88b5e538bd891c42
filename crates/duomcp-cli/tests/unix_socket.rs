//! Streamable HTTP over a Unix domain socket, with real processes: `duomcp serve --unix PATH`
//! reached by the duomcp client (library and CLI) in both revisions, two tenants at once, the
//! socket file's mode, stale / live / non-socket paths, its removal on SIGTERM, a gateway with
//! a `unix` upstream, and hostile peers on the socket (garbage, a huge header, a slow client).

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use duomcp::client::{Client, EraChoice};
use serde_json::{json, Value};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::process::{Child, Command};

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");
const ENDPOINT: &str = "http://localhost/mcp";

/// `duomcp serve --unix PATH` (and `extra`), running until dropped.
struct Served {
    child: Child,
    path: PathBuf,
}

impl Served {
    async fn start(path: &Path, extra: &[&str]) -> Served {
        let child = Command::new(BIN)
            .arg("serve")
            .arg("--unix")
            .arg(path)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn duomcp serve --unix");
        let served = Served {
            child,
            path: path.to_owned(),
        };
        served.wait_listening().await;
        served
    }

    /// Until a connection to the socket succeeds (at most 20 s).
    async fn wait_listening(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if UnixStream::connect(&self.path).await.is_ok() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "duomcp serve --unix did not listen on {}",
                self.path.display()
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.id().expect("running").to_string();
        let status = std::process::Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap();
        assert!(status.success());
    }

    async fn exit_code(mut self) -> i32 {
        let status = tokio::time::timeout(Duration::from_secs(15), self.child.wait())
            .await
            .expect("the server did not exit")
            .unwrap();
        status.code().expect("exited, not killed")
    }
}

/// A `duomcp` command run to its end (at most 30 s): exit code, stdout, stderr.
async fn run(args: &[&str]) -> (i32, String, String) {
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        Command::new(BIN)
            .args(args)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("duomcp did not finish")
    .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn client(path: &Path, era: EraChoice) -> Client {
    tokio::time::timeout(
        Duration::from_secs(20),
        Client::builder().era(era).connect_unix(path, ENDPOINT),
    )
    .await
    .expect("connect in time")
    .expect("connect over the socket")
}

async fn simple_text(client: &Client) -> String {
    let result = client
        .call_tool("test_simple_text", json!({}))
        .await
        .unwrap();
    result.content[0].as_text().unwrap().to_owned()
}

const SIMPLE: &str = "This is a simple text response for testing.";

/// One HTTP/1.1 request on a fresh connection to the socket (`Connection: close`): the raw
/// response, read to its end (at most 10 s).
async fn raw(path: &Path, request: &[u8]) -> String {
    let mut stream = UnixStream::connect(path).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response))
        .await
        .expect("response in time")
        .unwrap();
    String::from_utf8_lossy(&response).into_owned()
}

/// Like [`raw`], for a peer the server may reset: what was read before the connection ended,
/// however it ended.
async fn lossy(path: &Path, request: &[u8]) -> String {
    let mut stream = UnixStream::connect(path).await.unwrap();
    let _ = stream.write_all(request).await;
    let mut response = Vec::new();
    let mut chunk = [0u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut chunk)).await {
            Err(_) => panic!("the connection stayed open"),
            Ok(Ok(0) | Err(_)) => break,
            Ok(Ok(n)) => response.extend_from_slice(&chunk[..n]),
        }
    }
    String::from_utf8_lossy(&response).into_owned()
}

/// `POST /mcp` with `body` and the extra header lines `headers` (each ending in `\r\n`).
async fn post(path: &Path, headers: &str, body: &Value) -> String {
    let body = body.to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n{headers}\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    raw(path, request.as_bytes()).await
}

fn header<'a>(response: &'a str, name: &str) -> Option<&'a str> {
    let head = response.split("\r\n\r\n").next()?;
    head.lines().find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

fn initialize(name: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": { "name": name, "version": "1" } } })
}

#[tokio::test]
async fn both_revisions_over_the_socket_library_and_cli() {
    let dir = TempDir::new("unix-eras");
    let path = dir.0.join("mcp.sock");
    let _served = Served::start(&path, &[]).await;
    for (era, version) in [
        (EraChoice::Legacy, "2025-11-25"),
        (EraChoice::Modern, "2026-07-28"),
        (EraChoice::Auto, "2026-07-28"),
    ] {
        let c = client(&path, era).await;
        assert_eq!(c.protocol_version(), version);
        assert_eq!(simple_text(&c).await, SIMPLE);
        let _ = c.close().await;
    }
    let target = format!("unix:{}", path.display());
    for era in ["legacy", "modern", "auto"] {
        let (code, out, err) =
            run(&["call", "test_simple_text", &target, "--era", era, "--json"]).await;
        assert_eq!(code, 0, "{era}: {err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["content"][0]["text"], SIMPLE, "{era}");
    }
    // `--url unix://…` (Docker's spelling) too.
    let url = format!("unix://{}", path.display());
    let (code, out, err) = run(&["tools", "--url", &url, "--json"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("test_simple_text"), "{out}");
    // Nothing there: a clear failure, not a hang.
    let missing = format!("unix:{}", dir.0.join("nope.sock").display());
    let (code, _, err) = run(&["tools", &missing, "--timeout", "5"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("cannot connect to unix:"), "{err}");
}

#[tokio::test]
async fn two_tenants_at_once_each_get_their_own() {
    let dir = TempDir::new("unix-tenants");
    let path = dir.0.join("mcp.sock");
    let _served = Served::start(&path, &[]).await;
    let (alice, bob) = tokio::join!(
        client(&path, EraChoice::Legacy),
        client(&path, EraChoice::Modern)
    );
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..8 {
        for (who, c) in [("alice", alice.clone()), ("bob", bob.clone())] {
            calls.spawn(async move {
                let name = format!("{who}-{i}");
                let result = c.call_tool("greet", json!({ "name": name })).await.unwrap();
                let text = result.content[0].as_text().unwrap().to_owned();
                let other = if who == "alice" { "bob" } else { "alice" };
                assert!(text.contains(&name) && !text.contains(other), "{text}");
            });
        }
    }
    while let Some(done) = calls.join_next().await {
        done.unwrap();
    }

    // Two 2025-11-25 sessions: distinct ids; a request naming no session, or one never
    // issued, is refused; a session is reachable only by a request that names its id (the
    // id is the credential, as over TCP).
    let first = post(&path, "", &initialize("one")).await;
    let second = post(&path, "", &initialize("two")).await;
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    let one = header(&first, "mcp-session-id")
        .expect("a session id")
        .to_owned();
    let two = header(&second, "mcp-session-id")
        .expect("a session id")
        .to_owned();
    assert_ne!(one, two);
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    let versioned = "MCP-Protocol-Version: 2025-11-25\r\n";
    let none = post(&path, versioned, &list).await;
    assert!(none.starts_with("HTTP/1.1 400"), "{none}");
    let forged = post(
        &path,
        &format!("{versioned}Mcp-Session-Id: {one}x\r\n"),
        &list,
    )
    .await;
    assert!(forged.starts_with("HTTP/1.1 404"), "{forged}");
    // Ending one session leaves the other alone.
    let delete = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: localhost\r\n{versioned}Mcp-Session-Id: {one}\r\n\
         Connection: close\r\n\r\n"
    );
    let deleted = raw(&path, delete.as_bytes()).await;
    assert!(deleted.starts_with("HTTP/1.1 2"), "{deleted}");
    let gone = post(
        &path,
        &format!("{versioned}Mcp-Session-Id: {one}\r\n"),
        &list,
    )
    .await;
    assert!(gone.starts_with("HTTP/1.1 404"), "{gone}");
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let still = format!("{versioned}Mcp-Session-Id: {two}\r\n");
    post(&path, &still, &initialized).await;
    let listed = post(&path, &still, &list).await;
    assert!(listed.starts_with("HTTP/1.1 200"), "{listed}");
    assert!(listed.contains("test_simple_text"), "{listed}");
    let _ = alice.close().await;
    let _ = bob.close().await;
}

#[tokio::test]
async fn the_socket_file_is_0600_or_the_mode_given() {
    let dir = TempDir::new("unix-mode");
    let path = dir.0.join("mcp.sock");
    let served = Served::start(&path, &[]).await;
    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    served.signal("-TERM");
    assert_eq!(served.exit_code().await, 0);

    let served = Served::start(&path, &["--unix-mode", "0660"]).await;
    let mode = std::fs::symlink_metadata(&path)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o660);
    served.signal("-TERM");
    assert_eq!(served.exit_code().await, 0);

    let (code, _, err) = run(&["serve", "--unix", "x.sock", "--unix-mode", "999"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("octal mode"), "{err}");
}

#[tokio::test]
async fn stale_socket_replaced_live_one_and_other_files_refused() {
    let dir = TempDir::new("unix-stale");
    // A stale socket: bound, then its listener closed (the file stays).
    let path = dir.0.join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(std::fs::symlink_metadata(&path)
        .unwrap()
        .file_type()
        .is_socket());
    let served = Served::start(&path, &[]).await;
    let c = client(&path, EraChoice::Modern).await;
    assert_eq!(simple_text(&c).await, SIMPLE);

    // A live one: a second server is refused, and the first keeps serving.
    let (code, _, err) = run(&["serve", "--unix", path.to_str().unwrap()]).await;
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("a server is listening on this socket"),
        "{err}"
    );
    assert_eq!(simple_text(&c).await, SIMPLE);
    let _ = c.close().await;
    served.signal("-TERM");
    assert_eq!(served.exit_code().await, 0);

    // A regular file, a directory: refused and left alone.
    let file = dir.0.join("notes.txt");
    std::fs::write(&file, "keep me").unwrap();
    let (code, _, err) = run(&["serve", "--unix", file.to_str().unwrap()]).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("exists and is not a socket"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
    let (code, _, err) = run(&["serve", "--unix", dir.arg()]).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("exists and is not a socket"), "{err}");
    assert!(dir.0.is_dir());

    // --unix and --http exclude each other.
    let (code, _, err) = run(&["serve", "--unix", "a.sock", "--http", "127.0.0.1:0"]).await;
    assert_eq!(code, 2, "{err}");
}

#[tokio::test]
async fn sigterm_removes_the_socket_file() {
    let dir = TempDir::new("unix-sigterm");
    let path = dir.0.join("mcp.sock");
    let served = Served::start(&path, &[]).await;
    let c = client(&path, EraChoice::Legacy).await;
    assert_eq!(simple_text(&c).await, SIMPLE);
    served.signal("-TERM");
    assert_eq!(served.exit_code().await, 0);
    assert!(
        std::fs::symlink_metadata(&path).is_err(),
        "the socket file is still there"
    );
    // SIGINT too.
    let served = Served::start(&path, &[]).await;
    served.signal("-INT");
    assert_eq!(served.exit_code().await, 0);
    assert!(std::fs::symlink_metadata(&path).is_err());
}

#[tokio::test]
async fn gateway_with_a_unix_upstream_serves_its_tools_in_both_revisions() {
    let dir = TempDir::new("unix-gateway");
    let path = dir.0.join("upstream.sock");
    let _served = Served::start(&path, &[]).await;
    dir.write(
        "gateway.toml",
        &format!(
            "[[upstream]]\nname = \"local\"\nunix = \"{}\"\nera = \"legacy\"\n\n\
             [[upstream]]\nname = \"modern\"\nunix = \"{}\"\nurl = \"http://localhost/mcp\"\n\
             era = \"modern\"\n",
            path.display(),
            path.display()
        ),
    );
    let config = dir.0.join("gateway.toml");
    let config = config.to_str().unwrap();
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let mut cmd = Command::new(BIN);
        cmd.args(["gateway", "--config", config])
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let c = tokio::time::timeout(
            Duration::from_secs(30),
            Client::builder().era(era).connect_stdio(cmd),
        )
        .await
        .expect("gateway up in time")
        .unwrap();
        for tool in ["local_test_simple_text", "modern_test_simple_text"] {
            let result = c.call_tool(tool, json!({})).await.unwrap();
            assert_eq!(result.content[0].as_text(), Some(SIMPLE), "{era:?} {tool}");
        }
        let _ = c.close().await;
    }
    let (code, out, err) = run(&["gateway", "--check", config]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("2025-11-25") && out.contains("2026-07-28"),
        "{out}"
    );
}

#[tokio::test]
async fn hostile_peers_on_the_socket_do_not_stop_the_others() {
    let dir = TempDir::new("unix-hostile");
    let path = dir.0.join("mcp.sock");
    let _served = Served::start(&path, &["--limit", "header-timeout=2s"]).await;
    let good = client(&path, EraChoice::Legacy).await;

    // A slow client: half a request line, then nothing. It holds its connection open while
    // the others are served, and is closed after the header timeout.
    let mut slow = UnixStream::connect(&path).await.unwrap();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: loc")
        .await
        .unwrap();
    let started = Instant::now();

    // Garbage: an HTTP error, or the connection closed.
    let garbage = lossy(&path, b"\x00\x01\x02 this is not HTTP \xff\xfe\r\n\r\n").await;
    assert!(
        garbage.is_empty() || garbage.starts_with("HTTP/1.1 400"),
        "{garbage}"
    );
    // A header of 1 MiB: refused (431) or the connection closed, never buffered forever.
    let huge = format!(
        "GET /mcp HTTP/1.1\r\nHost: localhost\r\nX-Big: {}\r\n\r\n",
        "a".repeat(1024 * 1024)
    );
    // The server may close before it read everything: that is an answer too.
    let response = lossy(&path, huge.as_bytes()).await;
    assert!(
        response.is_empty() || response.starts_with("HTTP/1.1 431"),
        "{response}"
    );
    // A Host that is not allowed: 403 (DNS rebinding guard), `localhost` is.
    let hostile_host = raw(
        &path,
        b"GET /mcp HTTP/1.1\r\nHost: evil.example\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(hostile_host.starts_with("HTTP/1.1 403"), "{hostile_host}");

    // The others are served meanwhile.
    assert_eq!(simple_text(&good).await, SIMPLE);
    let other = client(&path, EraChoice::Modern).await;
    assert_eq!(simple_text(&other).await, SIMPLE);

    // The slow client is disconnected within the header timeout (2 s, plus slack).
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), slow.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the slow client was not disconnected");
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(8), "closed after {waited:?}");
    let rest = String::from_utf8_lossy(&rest);
    assert!(
        rest.is_empty() || rest.starts_with("HTTP/1.1 408"),
        "{rest}"
    );

    assert_eq!(simple_text(&good).await, SIMPLE);
    let _ = good.close().await;
    let _ = other.close().await;
}
