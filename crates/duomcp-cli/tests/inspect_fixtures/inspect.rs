//! `duomcp inspect`'s page in a real browser (a module of `tests/interop.rs`;
//! `scripts/interop.sh -- inspect`): headless Chromium (Debian `chromium` at
//! `/usr/bin/chromium`, through `playwright-core`) driven by `browser.mjs` through the page as a
//! person would — connect, list, a nested-object form filled and run, progress and log messages,
//! an elicitation answered in the page's dialog, a tool run as a task to its end, a resource
//! template filled with the server's completion and read, the trace exported as JSON Lines —
//! against `duomcp serve` in each revision and against the official server-everything, with
//! every request that leaves the inspector's origin refused (the page works offline).
//!
//! And MCP Apps: the `mcp_app` example's counter view rendered by the inspector (its sandbox on
//! the views' origin, through the App SDK's host bridge), its button clicked, the app-only
//! tool's answer in the view; the trace's HTTP headers with the bearer token redacted; the
//! checked-in bridge bundle compared with what its sources build.
//!
//! Screenshots of each step: `target/inspect-artifacts/ERA-STEP.png` (`apps-ERA-STEP.png` for
//! the view).

use super::{kit, run_bounded, stdout_json, Kit, TEST_DEADLINE};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, BufReader};

/// Debian's `chromium` package.
const CHROMIUM: &str = "/usr/bin/chromium";

fn shots_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let dir = target.join("inspect-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `duomcp inspect --era ERA -- SERVER…`: the child (killed on drop), the stdout it keeps
/// writing to, and the page's URL.
async fn inspector(
    era: &str,
    server: &[&std::ffi::OsStr],
    kit: &Kit,
) -> (
    tokio::process::Child,
    tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    String,
) {
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "--era".as_ref(),
        era.as_ref(),
        "--timeout".as_ref(),
        "30".as_ref(),
        "--".as_ref(),
    ];
    args.extend_from_slice(server);
    inspector_with(&args, kit).await
}

/// `duomcp inspect ARGS…`: as [`inspector`].
async fn inspector_with(
    args: &[&std::ffi::OsStr],
    kit: &Kit,
) -> (
    tokio::process::Child,
    tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    String,
) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_duomcp"))
        .arg("inspect")
        .args(args)
        .env("DUOMCP_INTEROP_DIR", &kit.dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("start duomcp inspect");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line())
        .await
        .expect("duomcp inspect printed nothing within 30 s")
        .unwrap()
        .expect("duomcp inspect ended");
    let url = first
        .strip_prefix("duomcp inspect: ")
        .unwrap_or_else(|| panic!("first line: {first:?}"))
        .to_owned();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.contains("/?token="),
        "{url}"
    );
    (child, lines, url)
}

async fn drive(kit: &Kit, url: &str, label: &str, flavour: &str) -> Value {
    drive_with(kit, url, label, flavour, "").await
}

async fn drive_with(kit: &Kit, url: &str, label: &str, flavour: &str, secret: &str) -> Value {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/inspect_fixtures/browser.mjs");
    let mut cmd = kit.node(&fixture);
    cmd.arg(url)
        .arg(CHROMIUM)
        .arg(shots_dir())
        .arg(label)
        .arg(flavour)
        .arg(secret);
    let out = run_bounded(cmd, "inspect_fixtures/browser.mjs (headless Chromium)").await;
    stdout_json(&out, "inspect_fixtures/browser.mjs")
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

/// What every run must have seen, whatever the server: the page loaded offline, without
/// errors, the token turned into a cookie, and a trace exported line by line.
fn common(seen: &Value) {
    assert_eq!(
        seen["offsite"],
        serde_json::json!([]),
        "requests left the inspector: {seen}"
    );
    assert_eq!(
        seen["console"],
        serde_json::json!([]),
        "errors in the page: {seen}"
    );
    let url = text(&seen["url"]);
    assert!(
        !url.contains("token"),
        "the token stayed in the address bar: {url}"
    );
    let shots = seen["shots"].as_array().unwrap();
    assert!(shots.len() >= 5, "{seen}");
    for shot in shots {
        let size = std::fs::metadata(text(shot)).map(|m| m.len()).unwrap_or(0);
        assert!(size > 10_000, "screenshot {shot} is {size} bytes");
    }
    let rows = seen["traceRows"].as_u64().unwrap();
    assert!(rows > 10, "{seen}");
    assert!(seen["exported"].as_u64().unwrap() >= rows, "{seen}");
    let filtered = seen["filteredRows"].as_u64().unwrap();
    assert!(
        filtered > 0 && filtered < rows,
        "the filter kept {filtered} of {rows} rows"
    );
    let methods: Vec<&str> = seen["exportedMethods"]
        .as_array()
        .unwrap()
        .iter()
        .map(text)
        .collect();
    for m in [
        "tools/list",
        "tools/call",
        "elicitation/create",
        "completion/complete",
        "resources/read",
    ] {
        assert!(
            methods.contains(&m),
            "{m} not in the exported trace: {methods:?}"
        );
    }
    assert_eq!(seen["dialogOpen"], false, "the dialog stayed open: {seen}");
    assert!(
        seen["progressBar"]["value"].as_f64().unwrap() > 0.0,
        "{seen}"
    );
    assert!(
        !seen["completions"].as_array().unwrap().is_empty(),
        "{seen}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_page_against_duomcp_serve_in_both_revisions() {
    let kit = kit();
    assert!(
        Path::new(CHROMIUM).is_file(),
        "{CHROMIUM} is missing: the browser test needs Debian's `chromium` (.ci/run installs it)"
    );
    tokio::time::timeout(TEST_DEADLINE * 2, async {
        for (era, version) in [("legacy", "2025-11-25"), ("modern", "2026-07-28")] {
            let serve = [env!("CARGO_BIN_EXE_duomcp").as_ref(), "serve".as_ref()];
            let (_child, _stdout, url) = inspector(era, &serve, &kit).await;
            let seen = drive(&kit, &url, era, "reference").await;
            assert!(seen.get("error").is_none(), "{era}: {seen}");
            common(&seen);
            assert_eq!(seen["era"], era, "{seen}");
            assert!(text(&seen["status"]).contains(version), "{seen}");
            assert_eq!(seen["serverInfo"]["protocolVersion"], version, "{seen}");
            assert!(seen["tools"].as_array().unwrap().len() > 20, "{seen}");
            // The nested object went out as one, and the server read it back.
            assert_eq!(seen["nestedSent"]["address"]["city"], "Paris", "{seen}");
            assert!(
                text(&seen["nested"]).contains(r#""city":"Paris""#),
                "{seen}"
            );
            // A required field left empty was caught in the page.
            assert!(text(&seen["refused"]).contains("name: required"), "{seen}");
            assert_eq!(seen["progress"], "100 / 100", "{seen}");
            let logs = seen["logs"].as_array().unwrap();
            assert_eq!(logs.len(), 3, "{seen}");
            assert_eq!(seen["asked"], "Who is there?", "{seen}");
            assert!(
                text(&seen["elicited"]).contains("ada@example.com"),
                "{seen}"
            );
            // The task: its status line followed it to `completed`, then its result.
            let task = text(&seen["taskLine"]);
            assert!(
                task.starts_with("task ") && task.ends_with(": completed"),
                "{era}: {task}"
            );
            assert!(text(&seen["taskResult"]).contains("Computed"), "{seen}");
            // Roots edited on the Server tab reached the server; a canned reply answered its
            // sampling request without a dialog.
            assert_eq!(seen["rootsStatus"], "offered: 2 root(s)", "{seen}");
            assert!(
                text(&seen["rootsResult"])
                    .starts_with("Client roots: file:///work/a, file:///work/b"),
                "{seen}"
            );
            assert!(
                text(&seen["sampled"]).starts_with("The model answered: Paris"),
                "{seen}"
            );
            assert_eq!(seen["completions"][0], "paris", "{seen}");
            assert!(text(&seen["read"]).contains("Data for ID: paris"), "{seen}");
        }
    })
    .await
    .expect("the test took too long");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_page_against_server_everything() {
    let kit = kit();
    assert!(Path::new(CHROMIUM).is_file(), "{CHROMIUM} is missing");
    tokio::time::timeout(TEST_DEADLINE, async {
        let script = kit.package("@modelcontextprotocol/server-everything/dist/index.js");
        let server = [kit.node.as_os_str(), script.as_os_str(), "stdio".as_ref()];
        let (_child, _stdout, url) = inspector("auto", &server, &kit).await;
        let seen = drive(&kit, &url, "everything", "everything").await;
        assert!(seen.get("error").is_none(), "{seen}");
        common(&seen);
        assert_eq!(
            seen["serverInfo"]["protocolVersion"], "2025-11-25",
            "{seen}"
        );
        assert_eq!(seen["nestedSent"]["location"], "New York", "{seen}");
        assert!(text(&seen["nested"]).contains("temperature"), "{seen}");
        assert_eq!(seen["progress"], "3 / 3", "{seen}");
        // The elicitation form: its one required field filled, the defaults sent as they were.
        let elicited = text(&seen["elicited"]);
        assert!(
            elicited.contains("Name: Ada Lovelace") && elicited.contains("Favorite Integer: 42"),
            "{elicited}"
        );
        // A task the tool requires: followed to `completed`, then its report.
        let task = text(&seen["taskLine"]);
        assert!(
            task.starts_with("task ") && task.contains(": completed"),
            "{task}"
        );
        assert!(
            text(&seen["taskResult"]).contains("Research Report: inspectors"),
            "{seen}"
        );
        assert!(
            text(&seen["read"]).starts_with("demo://resource/dynamic/text/1"),
            "{seen}"
        );
        // Subscribed from the page: the server's updates of that resource arrived.
        assert!(
            text(&seen["updatedUri"]).starts_with("demo://resource/"),
            "{seen}"
        );
        assert!(
            text(&seen["updates"][0]).starts_with("updated at "),
            "{seen}"
        );
    })
    .await
    .expect("the test took too long");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_page_renders_the_mcp_app_view_and_shows_http_headers() {
    let kit = kit();
    assert!(Path::new(CHROMIUM).is_file(), "{CHROMIUM} is missing");
    tokio::time::timeout(TEST_DEADLINE * 2, async {
        for (era, version) in [("legacy", "2025-11-25"), ("modern", "2026-07-28")] {
            apps_view(&kit, era, version).await;
        }
    })
    .await
    .expect("the test took too long");
}

/// The counter (a fresh one) in the inspector in revision `era`.
async fn apps_view(kit: &Kit, era: &str, version: &str) {
    {
        let (_server, url, log) = super::apps::counter_server().await;
        let secret = "inspect-test-bearer-5f2c9d0e7a";
        let auth = format!("Authorization: Bearer {secret}");
        let args: [&std::ffi::OsStr; 7] = [
            "--era".as_ref(),
            era.as_ref(),
            "--timeout".as_ref(),
            "30".as_ref(),
            "--header".as_ref(),
            auth.as_ref(),
            url.as_ref(),
        ];
        let (_child, _stdout, page) = inspector_with(&args, kit).await;
        let label = format!("apps-{era}");
        let seen = drive_with(kit, &page, &label, "apps", secret).await;
        assert!(seen.get("error").is_none(), "{seen}");
        assert_eq!(seen["info"]["protocolVersion"], version, "{seen}");
        assert_eq!(seen["offsite"], serde_json::json!([]), "{seen}");
        assert_eq!(seen["console"], serde_json::json!([]), "{seen}");
        // The app-only tool is kept from the list; the tool with the view is there.
        let tools: Vec<&str> = seen["tools"].as_array().unwrap().iter().map(text).collect();
        assert_eq!(tools, ["show_counter"], "{seen}");
        assert!(
            text(&seen["appOnlyNote"]).starts_with("1 app-only tool"),
            "{seen}"
        );
        // The view ran on the views' origin: another port, the one the page was told.
        let port = seen["info"]["sandbox"]["port"].as_u64().unwrap();
        let views = format!("http://localhost:{port}");
        assert_eq!(seen["sandboxOrigin"], views.as_str(), "{seen}");
        assert_eq!(seen["views"], serde_json::json!([views]), "{seen}");
        assert!(!page.contains(&format!(":{port}/")), "{seen}");
        // It got the tool result (the text for hosts that render views: the inspector said so),
        // and its button called the app-only tool through the inspector.
        assert_eq!(seen["initial"]["count"], "0", "{seen}");
        assert_eq!(
            seen["initial"]["said"], "The counter is at 0; the view can increment it.",
            "{seen}"
        );
        assert_eq!(seen["after"]["count"], "1", "{seen}");
        assert_eq!(
            seen["after"]["said"], "Incremented: the counter is at 1.",
            "{seen}"
        );
        assert_eq!(
            seen["viewCalls"],
            serde_json::json!(["the view called increment_counter: ok"]),
            "{seen}"
        );
        assert!(
            log.lock()
                .unwrap()
                .iter()
                .any(|l| l == "mcp_app: increment_counter called, count is now 1"),
            "{:?}",
            log.lock().unwrap()
        );
        // The trace: the headers of each exchange, the bearer token never in clear.
        assert_eq!(seen["exportHasSecret"], false, "{seen}");
        assert_eq!(
            seen["exportedAuthorization"],
            serde_json::json!(["Bearer [redacted]"]),
            "{seen}"
        );
        assert!(seen["exportedWithHttp"].as_u64().unwrap() >= 3, "{seen}");
        assert_eq!(seen["viewCallTraced"], true, "{seen}");
        let detail = text(&seen["traceDetail"]);
        assert!(
            detail.starts_with("POST ") && detail.contains("authorization: Bearer [redacted]"),
            "{detail}"
        );
        assert!(!detail.contains(secret), "{detail}");
        for shot in seen["shots"].as_array().unwrap() {
            let size = std::fs::metadata(text(shot)).map(|m| m.len()).unwrap_or(0);
            assert!(size > 10_000, "screenshot {shot} is {size} bytes");
        }
        eprintln!("screenshots: {}", seen["shots"]);
    }
}

/// The host bridge the binary embeds (page/bridge.js, checked in) is what its sources build
/// with the pinned packages (scripts/interop.sh builds it into DUOMCP_APPS_KIT, and compares
/// too).
#[test]
fn inspect_bridge_bundle_is_what_its_sources_build() {
    let built = super::env_path("DUOMCP_APPS_KIT").join("inspect-bridge.js");
    let built = std::fs::read(&built)
        .unwrap_or_else(|e| panic!("{}: {e} (scripts/interop.sh builds it)", built.display()));
    let embedded = include_bytes!("../../src/inspect/page/bridge.js");
    assert!(
        built == embedded,
        "crates/duomcp-cli/src/inspect/page/bridge.js ({} bytes) is not what \
         interop/build-apps.mjs builds ({} bytes): copy the built one over it",
        embedded.len(),
        built.len()
    );
}
