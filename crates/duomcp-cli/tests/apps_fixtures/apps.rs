//! MCP Apps interop (a module of `tests/interop.rs`; `scripts/interop.sh -- apps`):
//!
//! - the counter example (`crates/duomcp/examples/mcp_app.rs`) served over Streamable HTTP and
//!   driven in headless Chromium (Debian `chromium` at `/usr/bin/chromium`, through
//!   `playwright-core`) by a minimal web host built on the App SDK's host bridge
//!   (`browser.mjs`, `host.src.js`, `sandbox.html`): the view renders in its sandboxed iframe,
//!   shows the tool result, and its button calls the app-only tool on our server;
//! - our client and CLI against the official `@modelcontextprotocol/server-basic-vanillajs`:
//!   its tools list with their views, its view read and saved.
//!
//! Besides the interop variables, `scripts/interop.sh` sets `DUOMCP_MCP_APP_BIN` (the built
//! example, with its view built in) and `DUOMCP_APPS_KIT` (holding `apps-host/`, bundled by
//! `interop/build-apps.mjs`). Without Chromium, or any of them, the tests fail.

use super::{env_path, kit, run_bounded, stdout_json, wait_for_line, Kit, TEST_DEADLINE};
use duomcp::client::{apps, Client};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

/// Debian's `chromium` package.
const CHROMIUM: &str = "/usr/bin/chromium";
/// The official example server's view.
const BASIC_VIEW: &str = "ui://get-time/mcp-app.html";

fn apps_kit(kit: &Kit) -> PathBuf {
    for package in [
        "@modelcontextprotocol/ext-apps",
        "@modelcontextprotocol/server-basic-vanillajs",
        "playwright-core",
    ] {
        let manifest = kit.package(package).join("package.json");
        assert!(
            manifest.is_file(),
            "{} is missing: run scripts/interop.sh (it installs interop/)",
            manifest.display()
        );
    }
    let dir = env_path("DUOMCP_APPS_KIT");
    let host = dir.join("apps-host/host.js");
    assert!(
        host.is_file(),
        "{} is missing: scripts/interop.sh builds it (interop/build-apps.mjs)",
        host.display()
    );
    dir
}

/// Where the screenshot goes: `target/apps-artifacts/apps-screenshot.png`.
fn screenshot_path() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let dir = target.join("apps-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("apps-screenshot.png")
}

/// The counter example over Streamable HTTP on a free port: the child, its URL, and its stderr
/// lines as they come.
pub(super) async fn counter_server() -> (tokio::process::Child, String, Arc<Mutex<Vec<String>>>) {
    let bin = env_path("DUOMCP_MCP_APP_BIN");
    let mut child = tokio::process::Command::new(&bin)
        .args(["--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", bin.display()));
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = wait_for_line(&mut lines, "mcp_app: listening on ", "the mcp_app example").await;
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = log.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            sink.lock().unwrap().push(line);
        }
    });
    (child, url, log)
}

fn structured_count(result: &duomcp::schema::CallToolResult) -> u64 {
    result
        .structured_content
        .as_ref()
        .and_then(|s| s["count"].as_u64())
        .unwrap_or_else(|| panic!("no structuredContent.count in {result:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apps_counter_view_in_headless_chromium() {
    let kit = kit();
    let dir = apps_kit(&kit);
    assert!(
        Path::new(CHROMIUM).is_file(),
        "{CHROMIUM} is missing: the browser test needs Debian's `chromium` (.ci/run installs it)"
    );
    tokio::time::timeout(TEST_DEADLINE, counter_in_browser(&kit, &dir))
        .await
        .expect("the test took too long");
}

async fn counter_in_browser(kit: &Kit, dir: &Path) {
    let (_server, url, log) = counter_server().await;
    let shot = screenshot_path();
    let _ = std::fs::remove_file(&shot);

    let mut cmd = kit.node(&fixture_apps("browser.mjs"));
    cmd.arg(&url)
        .arg(dir.join("apps-host"))
        .arg(CHROMIUM)
        .arg(&shot);
    let out = run_bounded(cmd, "browser.mjs (headless Chromium)").await;
    let seen = stdout_json(&out, "browser.mjs");

    // The view rendered the tool result; the text is the one for hosts that render views, so
    // the host's capability reached the tool (2025-11-25: the SDK client's `initialize`).
    assert_eq!(seen["initial"]["count"], "0", "{seen}");
    assert_eq!(
        seen["initial"]["said"], "The counter is at 0; the view can increment it.",
        "{seen}"
    );
    // The button called the app-only tool, and the view shows its answer.
    assert_eq!(seen["after"]["count"], "1", "{seen}");
    assert_eq!(
        seen["after"]["said"], "Incremented: the counter is at 1.",
        "{seen}"
    );
    // The host kept the app-only tool from its model (the SDK reads our `_meta.ui.visibility`),
    // and got the view's `_meta.ui`.
    assert_eq!(seen["modelTools"], "show_counter", "{seen}");
    assert_eq!(
        seen["viewMeta"],
        serde_json::json!({"prefersBorder": true}),
        "{seen}"
    );
    // The view ran in the sandbox proxy, on another origin than the host page.
    let (host, sandbox) = (
        seen["hostOrigin"].as_str().unwrap(),
        seen["sandboxOrigin"].as_str().unwrap(),
    );
    assert!(
        host.starts_with("http://127.0.0.1:") && sandbox.starts_with("http://localhost:"),
        "{seen}"
    );

    // Server side: the example saw the call...
    let called = "mcp_app: increment_counter called, count is now 1";
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !log.lock().unwrap().iter().any(|l| l == called) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server did not log `{called}`: {:?}",
            log.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // ...and its state changed: our own client reads the count (2026-07-28 here), as a host
    // without views (text only, the app-only tool not listed)...
    let plain = Client::builder().connect_http(&url).await.unwrap();
    let names: Vec<String> = plain
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["show_counter"]);
    let shown = plain
        .call_tool("show_counter", serde_json::json!({}))
        .await
        .unwrap();
    assert_eq!(structured_count(&shown), 1);
    assert_eq!(duomcp_testkit::text(&shown), "The counter is at 1.");
    plain.close().await.unwrap();
    // ...and as a host with views (the app-only tool listed, kept from the model).
    let host = Client::builder().apps().connect_http(&url).await.unwrap();
    assert!(host.offers_apps());
    assert_eq!(host.list_all_tools().await.unwrap().len(), 2);
    let model: Vec<String> = host
        .list_model_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(model, ["show_counter"]);
    let shown = host
        .call_tool("show_counter", serde_json::json!({}))
        .await
        .unwrap();
    assert_eq!(
        duomcp_testkit::text(&shown),
        "The counter is at 1; the view can increment it."
    );
    let view = host.read_view("ui://counter/view.html").await.unwrap();
    // The view the browser rendered is the file the repository ships, built into the example.
    assert_eq!(
        view.html,
        include_str!("../../../duomcp/examples/mcp_app/view/index.html")
    );
    host.close().await.unwrap();

    // The screenshot, a test artifact.
    let png =
        std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot at {}: {e}", shot.display()));
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 2000,
        "not a screenshot: {} bytes",
        png.len()
    );
    eprintln!("screenshot: {} ({} bytes)", shot.display(), png.len());
}

fn fixture_apps(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/apps_fixtures")
        .join(name)
}

fn basic_vanillajs(kit: &Kit) -> tokio::process::Command {
    let mut cmd =
        kit.node(&kit.package("@modelcontextprotocol/server-basic-vanillajs/dist/index.js"));
    cmd.arg("--stdio");
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apps_our_client_reads_the_views_of_server_basic_vanillajs() {
    let kit = kit();
    apps_kit(&kit);
    tokio::time::timeout(TEST_DEADLINE, basic_vanillajs_views(&kit))
        .await
        .expect("the test took too long");
}

async fn basic_vanillajs_views(kit: &Kit) {
    let client = Client::builder()
        .apps()
        .connect_stdio(basic_vanillajs(kit))
        .await
        .unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let tool = tools
        .iter()
        .find(|t| t.name == "get-time")
        .expect("get-time is listed");
    assert_eq!(apps::view_of(tool).as_deref(), Some(BASIC_VIEW));
    let ui = apps::ui_of(tool).unwrap();
    assert_eq!(ui.resource_uri.as_deref(), Some(BASIC_VIEW));
    assert!(ui.model_visible() && ui.app_visible());
    assert!(client
        .list_model_tools()
        .await
        .unwrap()
        .iter()
        .any(|t| t.name == "get-time"));

    let view = client.read_view(BASIC_VIEW).await.unwrap();
    assert_eq!(view.mime_type, duomcp::schema::apps::RESOURCE_MIME_TYPE);
    assert_eq!(view.uri, BASIC_VIEW);
    assert!(
        view.html.to_ascii_lowercase().contains("<!doctype html>"),
        "{}",
        &view.html[..200.min(view.html.len())]
    );
    assert!(
        view.html.len() > 10_000,
        "a single-file view with its SDK bundled: {} bytes",
        view.html.len()
    );

    let time = client
        .call_tool("get-time", serde_json::json!({}))
        .await
        .unwrap();
    let text = duomcp_testkit::text(&time);
    assert!(
        text.len() >= 20 && text.contains('T') && text.ends_with('Z'),
        "an ISO time: {text}"
    );
    client.close().await.unwrap();

    // The CLI: `duomcp tools` marks the tool with its view, `duomcp read --output` saves it.
    let bin = env!("CARGO_BIN_EXE_duomcp");
    let server = [
        kit.node.to_str().unwrap().to_owned(),
        kit.package("@modelcontextprotocol/server-basic-vanillajs/dist/index.js")
            .to_str()
            .unwrap()
            .to_owned(),
        "--stdio".to_owned(),
    ];
    let mut cmd = tokio::process::Command::new(bin);
    cmd.arg("tools").arg("--").args(&server);
    let out = run_bounded(cmd, "duomcp tools").await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "duomcp tools: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let header = stdout.lines().next().unwrap_or_default();
    assert!(header.contains("VIEW"), "{stdout}");
    let row = stdout
        .lines()
        .find(|l| l.starts_with("get-time"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(row.trim_end().ends_with(BASIC_VIEW), "{stdout}");

    let saved = std::env::temp_dir().join(format!("duomcp-view-{}.html", std::process::id()));
    let mut cmd = tokio::process::Command::new(bin);
    cmd.args(["read", BASIC_VIEW, "--output"])
        .arg(&saved)
        .arg("--")
        .args(&server);
    let out = run_bounded(cmd, "duomcp read --output").await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "duomcp read: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&saved).unwrap();
    let _ = std::fs::remove_file(&saved);
    assert_eq!(html, view.html, "the saved file is the view");
    assert!(
        stdout.contains(&format!(
            "saved {BASIC_VIEW} ({} bytes, {})",
            html.len(),
            duomcp::schema::apps::RESOURCE_MIME_TYPE
        )),
        "{stdout}"
    );
}
