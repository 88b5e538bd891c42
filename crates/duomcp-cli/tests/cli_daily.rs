//! The `duomcp` binary as a daily tool: the errors it prints (each one by running it), named
//! servers from a config file, shell completions, `--json` errors, `--timeout`, and the
//! `Host`/`Origin` allow-lists of `duomcp serve --http` and of `StreamableHttp`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::transport::http::{HttpConfig, StreamableHttp};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");

fn run(args: &[&str]) -> Output {
    run_with(args, &[], None)
}

/// Runs `duomcp ARGS` with extra environment variables and a working directory; `HOME` and
/// `XDG_CONFIG_HOME` point into the target directory so no config of the machine is read.
fn run_with(args: &[&str], env: &[(&str, &str)], cwd: Option<&Path>) -> Output {
    let home = scratch("home");
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .stdin(Stdio::null())
        .env("COLUMNS", "120")
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env_remove("DUOMCP_CONFIG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    cmd.output().expect("run duomcp")
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A fresh directory under the target directory.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("cli_daily")
        .join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A port nothing listens on (bound, then released).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

// ---------------------------------------------------------------------------------------------
// Errors a person can read.

#[test]
fn a_refused_connection_is_said_once_with_the_address() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let o = run(&["tools", &url]);
    assert_eq!(o.status.code(), Some(1));
    let e = err(&o);
    assert!(
        e.contains(&format!(
            "nothing is listening at 127.0.0.1:{port} (connection refused)"
        )),
        "{e}"
    );
    assert!(
        e.matches(&format!("127.0.0.1:{port}")).count() <= 2,
        "the address is not repeated layer after layer: {e}"
    );
    for layer in [
        "transport error",
        "i/o error",
        "error sending request",
        "tcp connect",
    ] {
        assert!(!e.contains(layer), "no `{layer}` layer: {e}");
    }
}

#[test]
fn a_url_without_a_scheme_gets_a_suggestion() {
    let o = run(&["tools", "127.0.0.1:3999/mcp"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("did you mean http://127.0.0.1:3999/mcp"),
        "{}",
        err(&o)
    );
    let o = run(&["tools", "--url", "localhost:3999/mcp"]);
    assert!(
        err(&o).contains("did you mean http://localhost:3999/mcp"),
        "{}",
        err(&o)
    );
}

#[test]
fn serve_http_without_a_port_names_host_port() {
    let o = run(&["serve", "--http", "localhost"]);
    assert_eq!(o.status.code(), Some(1));
    let e = err(&o);
    assert!(
        e.contains("HOST:PORT") && e.contains("localhost:3000"),
        "{e}"
    );
    let o = run(&["serve", "--http", "http://127.0.0.1:3000/mcp"]);
    assert!(err(&o).contains("`--http 127.0.0.1:3000`"), "{}", err(&o));
}

#[test]
fn an_address_in_use_is_named() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let o = run(&["serve", "--http", &addr]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains(&format!(
            "cannot listen on {addr}: the address is already in use"
        )),
        "{}",
        err(&o)
    );
}

#[test]
fn a_missing_server_program_is_said_plainly() {
    let o = run(&["tools", "--", "/nonexistent/mcp-server"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("the server program was not found"),
        "{}",
        err(&o)
    );
}

#[test]
fn timeout_bounds_connecting_to_a_server_that_never_answers() {
    let started = Instant::now();
    let o = run(&["tools", "--timeout", "1", "--", "sleep", "30"]);
    let took = started.elapsed();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("no answer within 1 s (--timeout)"),
        "{}",
        err(&o)
    );
    assert!(
        took < Duration::from_millis(2500),
        "--timeout 1 took {took:?}"
    );
}

#[test]
fn timeout_bounds_a_call_in_both_eras_task_or_not() {
    // Legacy: a plain call; modern: the tool runs as a task and is polled.
    for era in ["legacy", "modern"] {
        let started = Instant::now();
        let o = run(&[
            "call",
            "slow_compute",
            "seconds=30",
            "--timeout",
            "1",
            "--era",
            era,
            "--",
            BIN,
            "serve",
        ]);
        let took = started.elapsed();
        assert_eq!(o.status.code(), Some(1), "{era}: {}", err(&o));
        // The request's own timeout (legacy) or the bound of the whole call (a task polled).
        let e = err(&o);
        assert!(
            e.contains("no answer to tools/call within 1 s (--timeout)")
                || e.contains("the call of `slow_compute` did not finish within 1 s (--timeout)"),
            "{era}: {e}"
        );
        assert!(
            took < Duration::from_millis(3000),
            "{era}: --timeout 1 took {took:?}"
        );
    }
}

#[test]
fn invalid_arguments_of_a_task_tool_are_reported_before_any_task() {
    for era in ["legacy", "modern"] {
        let o = run(&[
            "call",
            "slow_compute",
            "seconds=\"soon\"",
            "--era",
            era,
            "--",
            BIN,
            "serve",
        ]);
        let (o_, e) = (out(&o), err(&o));
        assert_eq!(o.status.code(), Some(1), "{era}: {o_}\n{e}");
        assert!(
            format!("{o_}{e}").contains("Invalid arguments for tool `slow_compute`"),
            "{era}: {o_}\n{e}"
        );
        assert!(!e.contains("task "), "{era}: no task was created: {e}");
    }
}

#[test]
fn login_against_a_server_without_authorization_says_so() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let addr = rt.block_on(serve_in_process(HttpConfig::default()));
    let store = scratch("login").join("credentials.json");
    let url = format!("http://{addr}/mcp");
    let o = run(&[
        "login",
        "--no-browser",
        "--store",
        store.to_str().unwrap(),
        &url,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(
        err(&o).contains("does not ask for authorization"),
        "{}",
        err(&o)
    );
    assert!(!store.exists(), "nothing was stored");
}

// ---------------------------------------------------------------------------------------------
// --json errors.

#[test]
fn json_errors_are_json() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    for (args, code) in [
        (vec!["tools", "--json", url.as_str()], 1),
        (vec!["tools", "--json"], 2),
        (vec!["tools", "--json", "--no-such-flag"], 2),
        (vec!["tools", "--json", "no-such-server"], 2),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", err(&o));
        let v: Value = serde_json::from_str(out(&o).trim())
            .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {}", out(&o)));
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(!message.is_empty(), "{args:?}: {v}");
    }
    let o = run(&["tools", "--json", &url]);
    let v: Value = serde_json::from_str(out(&o).trim()).unwrap();
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nothing is listening"),
        "{v}"
    );
    // A JSON-RPC error keeps its code.
    let o = run(&[
        "prompt",
        "no_such_prompt",
        "--json",
        "--era",
        "legacy",
        "--",
        BIN,
        "serve",
    ]);
    let v: Value = serde_json::from_str(out(&o).trim())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", out(&o)));
    assert_eq!(v["error"]["code"], -32602, "{v}");
}

// ---------------------------------------------------------------------------------------------
// Named servers from a config file.

fn write(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

#[test]
fn servers_named_in_a_config_file_are_reached_by_name() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let addr = rt.block_on(serve_in_process(HttpConfig::default()));
    let dir = scratch("config");
    let file = dir.join("servers.json");
    // The environment of a stdio entry reaches the command: without it `sh` exits at once.
    let guarded = format!("test \"$DUOMCP_T\" = yes && exec '{BIN}' serve");
    write(
        &file,
        &serde_json::json!({ "mcpServers": {
            "ref": { "command": "sh", "args": ["-c", guarded], "env": { "DUOMCP_T": "yes" } },
            "web": { "type": "http", "url": format!("http://{addr}/mcp") },
        }}),
    );
    let f = file.to_str().unwrap();
    let o = run(&["tools", "ref", "--config", f]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("test_simple_text"), "{}", out(&o));
    let o = run_with(&["tools", "web"], &[("DUOMCP_CONFIG", f)], None);
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("test_simple_text"), "{}", out(&o));
    let o = run(&["call", "test_simple_text", "ref", "--config", f]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(!out(&o).trim().is_empty());
    // `duomcp servers` lists them.
    let o = run(&["servers", "--config", f]);
    assert!(o.status.success(), "{}", err(&o));
    let listing = out(&o);
    assert!(listing.starts_with("NAME"), "{listing}");
    assert!(
        listing.contains("ref") && listing.contains(&format!("http://{addr}/mcp")),
        "{listing}"
    );
    let o = run_with(&["servers", "--json"], &[("DUOMCP_CONFIG", f)], None);
    let v: Value = serde_json::from_str(out(&o).trim()).unwrap();
    assert_eq!(v[0]["name"], "ref", "{v}");
    assert_eq!(v[0]["command"], "sh", "{v}");
    assert_eq!(v[1]["url"], format!("http://{addr}/mcp"), "{v}");
    // An unknown name lists the names there are.
    let o = run(&["tools", "nope", "--config", f]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("no configured server has that name") && err(&o).contains("ref, web"),
        "{}",
        err(&o)
    );
    // A broken file is named.
    let broken = dir.join("broken.json");
    std::fs::write(&broken, "{ not json").unwrap();
    let o = run(&["tools", "ref", "--config", broken.to_str().unwrap()]);
    assert!(
        err(&o).contains("broken.json is not valid JSON"),
        "{}",
        err(&o)
    );
}

#[test]
fn the_usual_locations_are_searched_vs_code_format_included() {
    let project = scratch("project");
    write(
        &project.join(".vscode").join("mcp.json"),
        &serde_json::json!({ "servers": {
            "ref": { "type": "stdio", "command": BIN, "args": ["serve"] },
        }}),
    );
    let o = run_with(&["prompts", "ref"], &[], Some(&project));
    assert!(o.status.success(), "{}", err(&o));
    assert!(!out(&o).trim().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Completions.

#[test]
fn completions_name_the_subcommands_and_bash_parses_them() {
    for shell in ["bash", "zsh", "fish"] {
        let o = run(&["completions", shell]);
        assert!(o.status.success(), "{shell}: {}", err(&o));
        let script = out(&o);
        for word in [
            "tools",
            "call",
            "serve",
            "completions",
            "config",
            "allow-host",
        ] {
            assert!(script.contains(word), "{shell}: `{word}` missing");
        }
    }
    let script = scratch("completions").join("duomcp.bash");
    std::fs::write(&script, out(&run(&["completions", "bash"]))).unwrap();
    let check = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", err(&check));
}

// ---------------------------------------------------------------------------------------------
// Tables fit the width.

#[test]
fn tables_fit_the_terminal_width() {
    let o = run_with(&["tools", "--", BIN, "serve"], &[("COLUMNS", "60")], None);
    assert!(o.status.success(), "{}", err(&o));
    let text = out(&o);
    assert!(text.lines().count() > 10, "{text}");
    for line in text.lines() {
        assert!(line.chars().count() <= 60, "wider than 60: `{line}`");
    }
}

// ---------------------------------------------------------------------------------------------
// Host and Origin allow-lists.

async fn serve_in_process(config: HttpConfig) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let http = StreamableHttp::with_config(duomcp_cli::reference::server(), config);
    tokio::spawn(http.serve(listener));
    addr
}

/// POSTs an `initialize` with `host` (and `origin`) and returns the status code.
fn initialize_status(addr: SocketAddr, host: &str, origin: Option<&str>) -> u16 {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let origin = origin
        .map(|o| format!("Origin: {o}\r\n"))
        .unwrap_or_default();
    write!(
        tcp,
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{origin}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut status = String::new();
    BufReader::new(&mut tcp).read_line(&mut status).unwrap();
    status
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {status:?}"))
}

fn check_allow_lists(addr: SocketAddr) {
    assert_eq!(initialize_status(addr, "mcp.example.com", None), 200);
    assert_eq!(initialize_status(addr, "mcp.example.com:443", None), 200);
    assert_eq!(initialize_status(addr, "evil.example.com", None), 403);
    let local = format!("127.0.0.1:{}", addr.port());
    assert_eq!(initialize_status(addr, &local, None), 200);
    assert_eq!(
        initialize_status(addr, "mcp.example.com", Some("https://app.example.com")),
        200
    );
    assert_eq!(
        initialize_status(addr, "mcp.example.com", Some("https://evil.example.com")),
        403
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_accepts_the_hosts_and_origins_it_is_given() {
    let config = HttpConfig::default()
        .allow_host("mcp.example.com")
        .allow_origin("https://app.example.com");
    let addr = serve_in_process(config).await;
    tokio::task::spawn_blocking(move || check_allow_lists(addr))
        .await
        .unwrap();
    // Without them, the same host name is refused.
    let addr = serve_in_process(HttpConfig::default()).await;
    let status =
        tokio::task::spawn_blocking(move || initialize_status(addr, "mcp.example.com", None))
            .await
            .unwrap();
    assert_eq!(status, 403);
}

#[test]
fn serve_http_takes_allow_host_and_allow_origin() {
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--allow-host",
            "mcp.example.com",
            "--allow-origin",
            "https://app.example.com",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr: SocketAddr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    check_allow_lists(addr);
    child.kill().unwrap();
    let _ = child.wait();
    let mut rest = String::new();
    let _ = stderr.read_to_string(&mut rest);
}

// ---------------------------------------------------------------------------------------------
// A spinner on a terminal (util-linux `script` gives the command one).

#[test]
fn a_task_shows_a_spinner_with_elapsed_time_on_a_terminal() {
    let command = format!("'{BIN}' call slow_compute seconds=2 --era modern -- '{BIN}' serve");
    let o = Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .expect("util-linux `script` (Debian: bsdutils, essential)");
    let screen = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{screen}\n{}", err(&o));
    assert!(screen.contains("Computed job in 2s"), "{screen}");
    // The spinner line: status and elapsed time, redrawn in place.
    assert!(screen.contains(": working"), "{screen}");
    assert!(screen.contains("s]"), "elapsed time shown: {screen}");
    assert!(
        screen.contains('\r') || screen.contains("\u{1b}["),
        "drawn in place: {screen:?}"
    );
    assert!(screen.contains(": completed after "), "{screen}");
    // Off a terminal: plain lines, no control sequences.
    let o = run(&[
        "call",
        "slow_compute",
        "seconds=1",
        "--era",
        "modern",
        "--",
        BIN,
        "serve",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(err(&o).contains(": working"), "{}", err(&o));
    assert!(!err(&o).contains('\u{1b}'), "{:?}", err(&o));
}

// ---------------------------------------------------------------------------------------------
// `duomcp call --task`: a tool run as a task in either revision, shown as it goes.

/// The id of the task in stderr's first `task ID: STATUS` line.
fn task_id(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("task ")?.split_once(": ").map(|(id, _)| id))
        .unwrap_or_else(|| panic!("no task line in {stderr}"))
        .to_owned()
}

/// Runs `duomcp call slow_compute seconds=2 --task` with `extra` arguments (era, target) and
/// checks what a person sees: the task's id, its progress, its end, then the result. `progress`
/// is the line the revision shows progress with, after `task ID: ` or alone.
fn check_task_call(what: &str, extra: &[&str], progress: &str) {
    let mut args = vec!["call", "slow_compute", "seconds=2", "label=t", "--task"];
    args.extend_from_slice(extra);
    let o = run(&args);
    let (stdout, stderr) = (out(&o), err(&o));
    assert!(o.status.success(), "{what}: {stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "Computed t in 2s", "{what}: {stderr}");
    let id = task_id(&stderr);
    assert!(id.len() >= 16, "{what}: an opaque id: {id:?}");
    let lines: Vec<&str> = stderr.lines().collect();
    let at = |line: &str| {
        lines
            .iter()
            .position(|l| *l == line)
            .unwrap_or_else(|| panic!("{what}: no line {line:?} in\n{stderr}"))
    };
    at(&format!("task {id}: working"));
    let progress_at = at(&progress.replace("ID", &id));
    let completed_at = at(&format!("task {id}: completed"));
    assert!(progress_at < completed_at, "{what}: {stderr}");
    assert!(
        !stderr.contains("did not run as a task"),
        "{what}: {stderr}"
    );
}

#[test]
fn call_task_runs_a_tool_as_a_task_in_either_revision_with_its_progress() {
    // 2025-11-25 tasks carry the call's progress notifications; 2026-07-28 tasks carry none,
    // and the server's progress shows as the task's status message.
    for (era, progress) in [
        ("legacy", "progress 0/2"),
        ("modern", "task ID: working (0/2)"),
    ] {
        // A server of that revision alone, found by `--era auto`.
        check_task_call(
            &format!("stdio {era} server"),
            &["--", BIN, "serve", "--era", era],
            progress,
        );
    }
}

#[test]
fn call_task_over_http_in_both_eras() {
    let mut child = Command::new(BIN)
        .args(["serve", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_owned();
    // The server's later lines are not read: keep its stderr from filling up.
    let drain = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = stderr.read_to_string(&mut rest);
    });
    for (era, progress) in [
        ("legacy", "progress 0/2"),
        ("modern", "task ID: working (0/2)"),
    ] {
        check_task_call(
            &format!("HTTP, --era {era}"),
            &["--era", era, &url],
            progress,
        );
    }
    child.kill().unwrap();
    let _ = child.wait();
    let _ = drain.join();
}

#[test]
fn call_task_without_a_task_says_so_and_without_the_flag_there_is_none() {
    // `greet` never runs as a task: the result, and a note.
    for era in ["legacy", "modern"] {
        let o = run(&[
            "call", "greet", "name=Ada", "--task", "--era", era, "--", BIN, "serve",
        ]);
        let (stdout, stderr) = (out(&o), err(&o));
        assert!(o.status.success(), "{era}: {stderr}");
        assert_eq!(stdout.trim(), "Hello, Ada!");
        assert!(
            stderr.contains("`greet` did not run as a task"),
            "{era}: {stderr}"
        );
    }
    // 2025-11-25 without --task: an optional tool runs inline, its progress shown all the same.
    let o = run(&[
        "call",
        "slow_compute",
        "seconds=0.2",
        "--era",
        "legacy",
        "--",
        BIN,
        "serve",
    ]);
    let (stdout, stderr) = (out(&o), err(&o));
    assert!(o.status.success(), "{stderr}");
    assert_eq!(stdout.trim(), "Computed job in 0.2s");
    assert!(!stderr.contains("task "), "no task: {stderr}");
    assert!(stderr.contains("progress 0/0.2"), "{stderr}");
}

#[test]
fn a_task_asking_for_input_is_answered_as_any_call_is() {
    // Off a terminal the CLI declines what a server asks; a task's questions get the same answer
    // (2025-11-25: on the `tasks/result` stream; 2026-07-28: `inputRequests` and `tasks/update`).
    for era in ["legacy", "modern"] {
        let o = run(&[
            "call",
            "confirm_delete",
            "filename=notes.txt",
            "--task",
            "--era",
            era,
            "--",
            BIN,
            "serve",
        ]);
        let (stdout, stderr) = (out(&o), err(&o));
        assert!(o.status.success(), "{era}: {stderr}");
        assert_eq!(stdout.trim(), "Kept notes.txt", "{era}: {stderr}");
        let id = task_id(&stderr);
        assert!(
            stderr.contains("the server asked for input (Delete notes.txt?); declined"),
            "{era}: {stderr}"
        );
        assert!(
            stderr.contains(&format!("task {id}: completed")),
            "{era}: {stderr}"
        );
    }
}
