//! Interoperability with MCP implementations no one here wrote: the official TypeScript SDK
//! (`@modelcontextprotocol/server-everything`, `@modelcontextprotocol/sdk` as server and as
//! client, an older SDK that only speaks 2025-06-18) and the MCP Inspector CLI, all pinned in
//! `interop/package.json` + `interop/package-lock.json`.
//!
//! Built only with the `interop` feature, and run by `scripts/interop.sh`, which installs Node 22
//! and the packages (`npm install` from the lock file), builds the quickstart example and sets:
//!
//! - `DUOMCP_INTEROP_NODE`: the `node` binary;
//! - `DUOMCP_INTEROP_DIR`: the folder holding `node_modules` with the pinned packages;
//! - `DUOMCP_QUICKSTART_BIN`: the built `crates/duomcp/examples/quickstart`.
//!
//! When any of them is missing, every test fails saying so: these tests never skip.
//! Every child process is killed at the end of its test (`kill_on_drop`, and one-shot commands
//! run in their own process group, killed whole on timeout), and every step has a timeout.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// MCP Apps: the counter example in headless Chromium, the official vanilla-JS app server.
#[path = "apps_fixtures/apps.rs"]
mod apps;

/// `duomcp inspect`'s page in headless Chromium, against duomcp and server-everything.
#[path = "inspect_fixtures/inspect.rs"]
mod inspect;

use duomcp::client::{Client, EraChoice, InputError, RequestOptions, ServerEvent};
use duomcp::era::Era;
use duomcp::schema::{CreateMessageResult, ElicitRequestParams, ElicitResult, Root};
use duomcp_testkit::text;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

/// The longest any one test may take (server-everything's slowest tool sleeps 2 s).
const TEST_DEADLINE: Duration = Duration::from_secs(120);
/// The longest a one-shot Node command (a client script, the Inspector CLI) may take.
const COMMAND_DEADLINE: Duration = Duration::from_secs(60);

/// Where the pinned third-party packages and Node are.
struct Kit {
    node: PathBuf,
    dir: PathBuf,
}

fn env_path(name: &str) -> PathBuf {
    match std::env::var_os(name) {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => panic!(
            "{name} is not set: the interop tests need Node 22 and the pinned npm packages; \
             run them with scripts/interop.sh"
        ),
    }
}

fn kit() -> Kit {
    let node = env_path("DUOMCP_INTEROP_NODE");
    assert!(
        node.is_file(),
        "DUOMCP_INTEROP_NODE={} is not a file",
        node.display()
    );
    let dir = env_path("DUOMCP_INTEROP_DIR");
    for package in [
        "@modelcontextprotocol/sdk",
        "@modelcontextprotocol/server-everything",
        "@modelcontextprotocol/inspector",
        "sdk-2025-06-18",
    ] {
        let manifest = dir.join("node_modules").join(package).join("package.json");
        assert!(
            manifest.is_file(),
            "{} is missing: run scripts/interop.sh (it installs interop/)",
            manifest.display()
        );
    }
    Kit { node, dir }
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/interop_fixtures")
        .join(name)
}

impl Kit {
    /// `node SCRIPT ARGS...` with the packages' folder in `DUOMCP_INTEROP_DIR`.
    fn node(&self, script: &Path) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.node);
        cmd.arg(script)
            .env("DUOMCP_INTEROP_DIR", &self.dir)
            .kill_on_drop(true);
        cmd
    }

    fn package(&self, path: &str) -> PathBuf {
        self.dir.join("node_modules").join(path)
    }

    fn version_of(&self, package: &str) -> String {
        let manifest = std::fs::read_to_string(self.package(package).join("package.json"))
            .unwrap_or_else(|e| panic!("read the manifest of {package}: {e}"));
        let v: Value = serde_json::from_str(&manifest).unwrap();
        v["version"].as_str().unwrap().to_owned()
    }
}

/// Runs a one-shot command in its own process group, bounded by [`COMMAND_DEADLINE`]; on
/// timeout the whole group (the command and whatever it spawned) is killed.
async fn run_bounded(mut cmd: tokio::process::Command, what: &str) -> Output {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {what}: {e}"));
    let pid = child.id();
    match tokio::time::timeout(COMMAND_DEADLINE, child.wait_with_output()).await {
        Ok(out) => out.unwrap_or_else(|e| panic!("wait for {what}: {e}")),
        Err(_) => {
            if let Some(pid) = pid {
                let _ = std::process::Command::new("kill")
                    .args(["-KILL", "--", &format!("-{pid}")])
                    .status();
            }
            panic!("{what} did not finish within {COMMAND_DEADLINE:?}");
        }
    }
}

fn stdout_json(out: &Output, what: &str) -> Value {
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: stdout is not one JSON value ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// A child that prints `prefix<rest>` on one of its lines: waits for that line (30 s at most)
/// and returns `rest`.
async fn wait_for_line<R: tokio::io::AsyncRead + Unpin>(
    lines: &mut tokio::io::Lines<BufReader<R>>,
    prefix: &str,
    what: &str,
) -> String {
    let found = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(rest) = line.strip_prefix(prefix) {
                return Some(rest.trim().to_owned());
            }
        }
        None
    })
    .await;
    match found {
        Ok(Some(rest)) => rest,
        Ok(None) => panic!("{what} exited before printing `{prefix}`"),
        Err(_) => panic!("{what} did not print `{prefix}` within 30 s"),
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap()
}

/// Issue 3: our client against the official "everything" server over stdio: every tool it lists
/// is called (sampling, elicitation and roots answered by our handlers, progress reported to a
/// callback), every resource of the first page read, the templates listed and one expanded,
/// every prompt fetched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_against_server_everything_over_stdio() {
    let kit = kit();
    tokio::time::timeout(TEST_DEADLINE, everything_stdio(&kit, false))
        .await
        .expect("the test took too long");
}

/// Issue 18: the same, through `duomcp gateway` (stdio in front, server-everything behind),
/// our client speaking 2026-07-28 only: the server's elicitation and sampling requests arrive
/// as input-required rounds and complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_2026_client_against_server_everything_through_the_gateway() {
    let kit = kit();
    tokio::time::timeout(TEST_DEADLINE, everything_stdio(&kit, true))
        .await
        .expect("the test took too long");
}

/// Issue 18: the official Python SDK client (pinned in `interop/python/requirements.lock`,
/// installed by scripts/interop.sh, `DUOMCP_INTEROP_PYTHON`) in 2026-07-28 mode, through
/// `duomcp gateway`, against server-everything (2025-11-25): plain tools, elicitation and
/// sampling (input-required rounds), a resource, a prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_client_in_2026_mode_through_the_gateway() {
    let kit = kit();
    let python = env_path("DUOMCP_INTEROP_PYTHON");
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/python/gateway_client.py");
    let mut cmd = tokio::process::Command::new(python);
    cmd.arg(script)
        .arg(env!("CARGO_BIN_EXE_duomcp"))
        .arg(&kit.node)
        .arg(kit.package("@modelcontextprotocol/server-everything/dist/index.js"))
        .env("DUOMCP_INTEROP_DIR", &kit.dir);
    let out = run_bounded(cmd, "the Python SDK client").await;
    assert!(
        out.status.success(),
        "the Python client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = stdout_json(&out, "the Python SDK client");
    assert_eq!(v["protocol_version"], "2026-07-28", "{v}");
    assert!(
        v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "trigger-elicitation-request"),
        "{v}"
    );
    for (name, calls) in v["calls"].as_object().unwrap() {
        assert_eq!(calls["isError"], false, "{name}: {calls}");
    }
    let joined = |name: &str| v["calls"][name]["text"].to_string();
    assert!(joined("echo").contains("Echo: hello from python"), "{v}");
    assert!(
        joined("get-sum").contains("The sum of 2 and 3 is 5."),
        "{v}"
    );
    assert!(
        joined("trigger-elicitation-request").contains("Ada Lovelace"),
        "{v}"
    );
    assert!(
        joined("trigger-sampling-request").contains("python-sdk-model"),
        "{v}"
    );
    assert!(
        !v["elicited"].as_array().unwrap().is_empty(),
        "the elicitation reached the Python callback"
    );
    assert!(
        v["sampled"]
            .to_string()
            .contains("Say hi from the Python SDK"),
        "{v}"
    );
    assert_eq!(v["read"]["contents"], 1, "{v}");
    assert!(v["prompt_messages"].as_u64().unwrap() >= 1, "{v}");
}

async fn everything_stdio(kit: &Kit, through_gateway: bool) {
    let script = kit.package("@modelcontextprotocol/server-everything/dist/index.js");
    let cmd = if through_gateway {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_duomcp"));
        cmd.arg("gateway")
            .arg("--")
            .arg(&kit.node)
            .arg(&script)
            .arg("stdio")
            .env("DUOMCP_INTEROP_DIR", &kit.dir)
            .kill_on_drop(true);
        cmd
    } else {
        let mut cmd = kit.node(&script);
        cmd.arg("stdio");
        cmd
    };

    let elicited = Arc::new(Mutex::new(Vec::<String>::new()));
    let sampled = Arc::new(Mutex::new(Vec::<String>::new()));
    let (e, s) = (elicited.clone(), sampled.clone());
    let client = Client::builder()
        .name("duomcp-interop")
        .era(if through_gateway {
            EraChoice::Modern
        } else {
            EraChoice::Auto
        })
        .request_timeout(Duration::from_secs(30))
        .on_elicit(move |params| {
            let e = e.clone();
            async move {
                let answer = match &params {
                    ElicitRequestParams::Form(form) => {
                        e.lock().unwrap().push(format!("form: {}", form.message));
                        let mut content = serde_json::Map::new();
                        if form
                            .requested_schema
                            .properties
                            .contains_key("interpretation")
                        {
                            // simulate-research-query's clarification, inside its task.
                            content.insert("interpretation".into(), json!("programming"));
                        } else {
                            // Only some fields; the schema's defaults fill the rest (SEP-1034).
                            content.insert("name".into(), json!("Ada Lovelace"));
                            content.insert("check".into(), json!(true));
                            content.insert("email".into(), json!("ada@example.com"));
                        }
                        ElicitResult::accept(Some(content))
                    }
                    ElicitRequestParams::Url(url) => {
                        e.lock().unwrap().push(format!("url: {}", url.url));
                        ElicitResult::accept(None)
                    }
                };
                Ok::<_, InputError>(answer)
            }
        })
        .on_sample(move |params| {
            let s = s.clone();
            async move {
                let asked = to_json(&params.messages);
                s.lock().unwrap().push(asked.to_string());
                Ok::<_, InputError>(CreateMessageResult::assistant_text(
                    "duomcp-interop-model",
                    "A sampled answer from the duomcp test client.",
                ))
            }
        })
        .roots(vec![
            Root::new("file:///tmp/duomcp-interop-root").with_name("Interop root")
        ])
        // Directly, our client runs server-everything's async elicitation and sampling as
        // tasks of its own; through the gateway, the gateway does (for the call they belong
        // to, whose client is asked).
        .host_tasks(true)
        .connect_stdio(cmd)
        .await
        .expect("connect to server-everything over stdio");

    if through_gateway {
        // The gateway bridges: 2026-07-28 in front of a 2025-11-25-only server.
        assert_eq!(client.era(), Era::Modern);
        assert_eq!(client.protocol_version(), "2026-07-28");
    } else {
        // It speaks 2025-11-25 only: the probe fell back to initialize.
        assert_eq!(client.era(), Era::Legacy);
        assert_eq!(client.protocol_version(), "2025-11-25");
    }
    let info = client.server_info().expect("server info from initialize");
    assert_eq!(info.name, "mcp-servers/everything");
    assert!(client.instructions().is_some_and(|i| !i.trim().is_empty()));
    let caps = to_json(&client.server_capabilities());
    assert!(
        caps["tools"].is_object() && caps["resources"]["subscribe"] == true,
        "{caps}"
    );

    // The conditional tools are registered right after `notifications/initialized`; the first
    // list can race them, so list until they appear (bounded).
    let mut tools = Vec::new();
    for _ in 0..50 {
        tools = client.list_all_tools().await.expect("tools/list");
        if tools.iter().any(|t| t.name == "trigger-sampling-request") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let names: BTreeSet<String> = tools.iter().map(|t| t.name.clone()).collect();
    for expected in [
        "echo",
        "get-sum",
        "get-roots-list",
        "trigger-elicitation-request",
        "trigger-url-elicitation",
        "trigger-sampling-request",
        "trigger-long-running-operation",
        "simulate-research-query",
        // Registered only for a client that runs input requests as tasks (2025-11-25): ours,
        // or the gateway in front.
        "trigger-elicitation-request-async",
        "trigger-sampling-request-async",
    ] {
        assert!(names.contains(expected), "{expected} not listed: {names:?}");
    }

    let mut called = BTreeSet::new();
    for tool in &tools {
        let name = tool.name.as_str();
        call_everything_tool(&client, name).await;
        called.insert(name.to_owned());
    }
    assert_eq!(called, names, "every listed tool was called");
    assert!(
        elicited
            .lock()
            .unwrap()
            .iter()
            .any(|m| m.starts_with("form: ")),
        "the form elicitation reached our handler"
    );
    assert!(
        elicited
            .lock()
            .unwrap()
            .iter()
            .any(|m| m == "url: https://example.com/interop-consent"),
        "the URL elicitation reached our handler: {:?}",
        elicited.lock().unwrap()
    );
    assert!(
        sampled
            .lock()
            .unwrap()
            .iter()
            .any(|m| m.contains("Say hi from the interop test")),
        "the sampling request reached our handler: {:?}",
        sampled.lock().unwrap()
    );

    // Resources: the first page, each one read.
    let page = client.list_resources(None).await.expect("resources/list");
    assert!(
        !page.resources.is_empty(),
        "server-everything lists resources"
    );
    for resource in &page.resources {
        let read = client
            .read_resource(&resource.uri)
            .await
            .unwrap_or_else(|e| panic!("read {}: {e}", resource.uri));
        let read = to_json(&read);
        let contents = read["contents"].as_array().expect("contents");
        assert!(!contents.is_empty(), "{}: no contents", resource.uri);
        for c in contents {
            assert_eq!(c["uri"], resource.uri.as_str(), "{read}");
            let body = c["text"].as_str().or(c["blob"].as_str()).unwrap_or("");
            assert!(!body.is_empty(), "{}: empty contents: {read}", resource.uri);
        }
    }

    // Templates: listed, and one of them expanded and read.
    let templates = client
        .list_all_resource_templates()
        .await
        .expect("resources/templates/list");
    let uri_templates: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert!(
        uri_templates.contains(&"demo://resource/dynamic/text/{resourceId}")
            && uri_templates.contains(&"demo://resource/dynamic/blob/{resourceId}"),
        "{uri_templates:?}"
    );
    let read = to_json(
        &client
            .read_resource("demo://resource/dynamic/text/7")
            .await
            .expect("read a templated resource"),
    );
    let body = read["contents"][0]["text"].as_str().unwrap_or_default();
    assert!(
        body.starts_with("Resource 7: This is a plaintext resource"),
        "{read}"
    );

    // Prompts: every one fetched, with arguments.
    let prompts = client.list_all_prompts().await.expect("prompts/list");
    let prompt_names: BTreeSet<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        prompt_names,
        BTreeSet::from([
            "args-prompt",
            "completable-prompt",
            "resource-prompt",
            "simple-prompt"
        ]),
    );
    for prompt in &prompts {
        let (args, expect) = match prompt.name.as_str() {
            "simple-prompt" => (json!({}), "This is a simple prompt without arguments."),
            "args-prompt" => (
                json!({ "city": "Paris", "state": "Ile-de-France" }),
                "Paris",
            ),
            "completable-prompt" => (
                json!({ "department": "Engineering", "name": "Alice" }),
                "Please promote Alice to the head of the Engineering team.",
            ),
            "resource-prompt" => (
                json!({ "resourceType": "Text", "resourceId": "3" }),
                "This prompt includes the Text resource with id: 3",
            ),
            other => panic!("no arguments known for the prompt {other}"),
        };
        let got = to_json(
            &client
                .get_prompt(&prompt.name, args)
                .await
                .unwrap_or_else(|e| panic!("prompts/get {}: {e}", prompt.name)),
        );
        let messages = got["messages"].as_array().expect("messages");
        assert!(
            messages.iter().any(|m| m["content"]["text"]
                .as_str()
                .is_some_and(|t| t.contains(expect))),
            "{}: {got}",
            prompt.name
        );
        if prompt.name == "resource-prompt" {
            assert_eq!(
                messages[1]["content"]["resource"]["uri"], "demo://resource/dynamic/text/3",
                "{got}"
            );
        }
    }

    client.close().await.expect("close");
}

/// Calls one tool of server-everything with valid arguments and checks what it answers.
async fn call_everything_tool(client: &Client, name: &str) {
    let call = |args: Value| async move {
        let result = client
            .call_tool(name, args)
            .await
            .unwrap_or_else(|e| panic!("tools/call {name}: {e}"));
        let v = to_json(&result);
        assert_ne!(v["isError"], true, "{name}: {v}");
        v
    };
    match name {
        "echo" => {
            let v = call(json!({ "message": "hello from duomcp" })).await;
            assert_eq!(text(&v), "Echo: hello from duomcp");
        }
        "get-sum" => {
            let v = call(json!({ "a": 2, "b": 40 })).await;
            assert_eq!(text(&v), "The sum of 2 and 40 is 42.");
        }
        "get-env" => {
            let v = call(json!({})).await;
            let env: Value = serde_json::from_str(&text(&v)).expect("the environment as JSON");
            assert!(env["DUOMCP_INTEROP_DIR"].is_string(), "{env}");
        }
        "get-annotated-message" => {
            let v = call(json!({ "messageType": "error", "includeImage": true })).await;
            let content = v["content"].as_array().unwrap();
            assert_eq!(content[0]["text"], "Error: Operation failed", "{v}");
            assert_eq!(content[0]["annotations"]["priority"], 1.0, "{v}");
            assert!(
                content
                    .iter()
                    .any(|c| c["type"] == "image" && c["mimeType"] == "image/png"),
                "{v}"
            );
        }
        "get-resource-links" => {
            let v = call(json!({ "count": 3 })).await;
            let links: Vec<&Value> = v["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["type"] == "resource_link")
                .collect();
            assert_eq!(links.len(), 3, "{v}");
            for link in links {
                assert!(link["uri"]
                    .as_str()
                    .unwrap()
                    .starts_with("demo://resource/dynamic/"));
            }
        }
        "get-resource-reference" => {
            let v = call(json!({ "resourceType": "Blob", "resourceId": 5 })).await;
            let embedded = v["content"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["type"] == "resource")
                .unwrap_or_else(|| panic!("no embedded resource: {v}"));
            assert_eq!(
                embedded["resource"]["uri"],
                "demo://resource/dynamic/blob/5"
            );
            assert!(embedded["resource"]["blob"]
                .as_str()
                .is_some_and(|b| !b.is_empty()));
        }
        "get-structured-content" => {
            // The tool has an outputSchema: our client checked structuredContent against it.
            let v = call(json!({ "location": "Chicago" })).await;
            let s = &v["structuredContent"];
            assert!(
                s["temperature"].is_number() && s["humidity"].is_number(),
                "{v}"
            );
            assert!(s["conditions"].is_string(), "{v}");
        }
        "get-tiny-image" => {
            let v = call(json!({})).await;
            let image = v["content"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["type"] == "image")
                .unwrap_or_else(|| panic!("no image: {v}"));
            assert_eq!(image["mimeType"], "image/png");
            // A PNG, base64: starts with the signature 89 50 4E 47.
            assert!(
                image["data"].as_str().unwrap().starts_with("iVBORw0KGgo"),
                "{v}"
            );
        }
        "gzip-file-as-resource" => {
            // A data: URL, so the server fetches nothing from the network.
            let v = call(json!({
                "name": "interop.txt.gz",
                "data": "data:text/plain;base64,aW50ZXJvcCB0ZXN0IHBheWxvYWQ=",
                "outputType": "resourceLink",
            }))
            .await;
            let link = &v["content"][0];
            assert_eq!(link["type"], "resource_link", "{v}");
            assert_eq!(link["mimeType"], "application/gzip", "{v}");
            let uri = link["uri"].as_str().unwrap();
            let read = to_json(&client.read_resource(uri).await.expect("read the gzip link"));
            let blob = read["contents"][0]["blob"].as_str().expect("a blob");
            use base64::Engine as _;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(blob)
                .expect("base64");
            assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip magic");
        }
        "toggle-simulated-logging" | "toggle-subscriber-updates" => {
            // On, then off again so nothing keeps running.
            let on = call(json!({})).await;
            assert!(text(&on).starts_with("Started"), "{on}");
            let off = call(json!({})).await;
            assert!(text(&off).starts_with("Stopped"), "{off}");
        }
        "trigger-long-running-operation" => {
            let progress = Arc::new(Mutex::new(Vec::<(f64, Option<f64>)>::new()));
            let p = progress.clone();
            let options = RequestOptions::new()
                .on_progress(move |n| p.lock().unwrap().push((n.progress, n.total)));
            let result = client
                .call_tool_with(name, json!({ "duration": 1, "steps": 4 }), options)
                .await
                .expect("the long-running operation");
            let v = to_json(&result);
            assert_eq!(
                text(&v),
                "Long running operation completed. Duration: 1 seconds, Steps: 4."
            );
            let seen = progress.lock().unwrap().clone();
            assert_eq!(
                seen,
                vec![
                    (1.0, Some(4.0)),
                    (2.0, Some(4.0)),
                    (3.0, Some(4.0)),
                    (4.0, Some(4.0))
                ],
                "every progress report reached the callback, in order"
            );
        }
        "get-roots-list" => {
            let v = call(json!({})).await;
            let t = text(&v);
            assert!(
                t.contains("Current MCP Roots (1 total)")
                    && t.contains("Interop root")
                    && t.contains("file:///tmp/duomcp-interop-root"),
                "{t}"
            );
        }
        "trigger-elicitation-request" => {
            let v = call(json!({})).await;
            let t = text(&v);
            assert!(t.contains("User provided the requested information"), "{t}");
            assert!(t.contains("Ada Lovelace"), "{t}");
            // A default our client filled in from the schema.
            assert!(t.contains("It was a dark and stormy night."), "{t}");
        }
        "trigger-url-elicitation" => {
            let v = call(json!({
                "url": "https://example.com/interop-consent",
                "message": "Open the consent page",
                "elicitationId": "interop-1",
            }))
            .await;
            let t = text(&v);
            assert!(
                t.contains("User completed the URL elicitation flow") && t.contains("interop-1"),
                "{t}"
            );
        }
        "trigger-sampling-request" => {
            let v =
                call(json!({ "prompt": "Say hi from the interop test", "maxTokens": 20 })).await;
            let t = text(&v);
            assert!(
                t.contains("A sampled answer from the duomcp test client.")
                    && t.contains("duomcp-interop-model"),
                "{t}"
            );
        }
        "simulate-research-query" => research_task(client).await,
        // The server asks for input as a task the client runs, polls it with `tasks/get`, then
        // takes its `tasks/result`.
        "trigger-elicitation-request-async" => {
            let t = text(&call(json!({})).await);
            assert!(
                t.contains("[COMPLETED] User provided the requested information!")
                    && t.contains("Name: Ada Lovelace"),
                "{t}"
            );
        }
        "trigger-sampling-request-async" => {
            let v = call(json!({ "prompt": "Say hi as a task", "maxTokens": 20 })).await;
            let t = text(&v);
            assert!(
                t.contains("[COMPLETED] Async sampling completed!")
                    && t.contains("A sampled answer from the duomcp test client."),
                "{t}"
            );
        }
        other => panic!("no arguments known for the tool {other}: add it to this test"),
    }
}

/// `simulate-research-query` requires a task (2025-11-25 tasks): `tools/call` with `task`, then
/// `tasks/get` until the task needs input or ends, then `tasks/result`, which delivers the
/// server's queued elicitation (answered by our handler) and waits for the report.
async fn research_task(client: &Client) {
    if client.era() == Era::Modern {
        // Through the gateway (2026-07-28): the gateway's own task, which follows the
        // upstream's; the typed call polls it, answers its input request with our handler and
        // returns the report.
        let result = client
            .call_tool(
                "simulate-research-query",
                json!({ "topic": "python", "ambiguous": true }),
            )
            .await
            .expect("the research task completes");
        let t = text(&to_json(&result));
        assert!(
            t.contains("# Research Report: python (programming)")
                && t.contains("After receiving clarification (\"programming\")"),
            "{t}"
        );
        return;
    }
    let created = client
        .request(
            "tools/call",
            json!({
                "name": "simulate-research-query",
                "arguments": { "topic": "python", "ambiguous": true },
                "task": { "ttl": 60000 },
            }),
            RequestOptions::new(),
        )
        .await
        .expect("a task-augmented tools/call");
    let task_id = created["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("not a CreateTaskResult: {created}"))
        .to_owned();
    assert_eq!(created["task"]["status"], "working", "{created}");
    let mut status = String::new();
    for _ in 0..200 {
        let task = client
            .request(
                "tasks/get",
                json!({ "taskId": task_id }),
                RequestOptions::new(),
            )
            .await
            .expect("tasks/get");
        status = task["status"].as_str().unwrap_or_default().to_owned();
        if status != "working" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        status, "input_required",
        "the ambiguous query asks for clarification"
    );
    let result = client
        .request(
            "tasks/result",
            json!({ "taskId": task_id }),
            RequestOptions::new().timeout(Duration::from_secs(30)),
        )
        .await
        .expect("tasks/result");
    let t = text(&result);
    assert!(
        t.contains("# Research Report: python (programming)")
            && t.contains("After receiving clarification (\"programming\")"),
        "{t}"
    );
    let task = client
        .request(
            "tasks/get",
            json!({ "taskId": task_id }),
            RequestOptions::new(),
        )
        .await
        .expect("tasks/get");
    assert_eq!(task["status"], "completed", "{task}");
}

/// Issue 3: a server that only speaks 2025-06-18 (the official SDK at the last version whose
/// latest protocol version is 2025-06-18): the `server/discover` probe fails, `initialize`
/// follows, and 2025-06-18 is what is negotiated; tools work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_falls_back_to_a_2025_06_18_server() {
    let kit = kit();
    tokio::time::timeout(TEST_DEADLINE, async {
        let log = Path::new(env!("CARGO_TARGET_TMPDIR")).join("interop-legacy-methods.log");
        let _ = std::fs::remove_file(&log);
        let mut cmd = kit.node(&fixture("legacy_server.cjs"));
        cmd.env("INTEROP_METHOD_LOG", &log);
        let client = Client::builder()
            .era(EraChoice::Auto)
            .connect_stdio(cmd)
            .await
            .expect("connect to the 2025-06-18 server");
        assert_eq!(client.era(), Era::Legacy);
        assert_eq!(client.protocol_version(), "2025-06-18");
        let info = client.server_info().expect("server info");
        assert_eq!(info.name, "legacy-2025-06-18");
        assert_eq!(info.version, kit.version_of("sdk-2025-06-18"));

        let tools = client.list_all_tools().await.expect("tools/list");
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0].name, "add");
        let result = to_json(
            &client
                .call_tool("add", json!({ "a": 20, "b": 22 }))
                .await
                .expect("tools/call"),
        );
        assert_eq!(text(&result), "20 + 22 = 42");
        client.close().await.expect("close");

        let methods = std::fs::read_to_string(&log).expect("the server's method log");
        let methods: Vec<&str> = methods.lines().collect();
        assert_eq!(
            methods,
            [
                "server/discover",
                "initialize",
                "notifications/initialized",
                "tools/list",
                "tools/call"
            ],
            "the probe came first, then the 2025 handshake"
        );
    })
    .await
    .expect("the test took too long");
}

/// Spawns the TypeScript SDK Streamable HTTP fixture; returns it and its URL.
async fn ts_http_server(kit: &Kit) -> (tokio::process::Child, String) {
    let mut cmd = kit.node(&fixture("http_server.cjs"));
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = cmd.spawn().expect("spawn the TypeScript SDK HTTP server");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let port = wait_for_line(&mut lines, "LISTENING ", "the TypeScript SDK HTTP server").await;
    // Keep draining its stdout so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, format!("http://127.0.0.1:{port}/mcp"))
}

/// Issue 4: our client against the official TypeScript SDK over Streamable HTTP: tools listed
/// and called (structured output checked), a resource read, a prompt fetched, and the server's
/// log and progress notifications received.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_against_the_typescript_sdk_over_streamable_http() {
    let kit = kit();
    tokio::time::timeout(TEST_DEADLINE, async {
        let (mut server, url) = ts_http_server(&kit).await;
        let client = Client::builder()
            .connect_http(&url)
            .await
            .expect("connect over Streamable HTTP");
        assert_eq!(client.era(), Era::Legacy);
        assert_eq!(client.protocol_version(), "2025-11-25");
        let info = client.server_info().expect("server info");
        assert_eq!(info.name, "ts-sdk-http-fixture");
        assert_eq!(info.version, kit.version_of("@modelcontextprotocol/sdk"));
        assert_eq!(
            client.instructions().as_deref(),
            Some("A fixture of the duomcp interop tests.")
        );

        let tools = client.list_all_tools().await.expect("tools/list");
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["echo", "add", "notify"]);
        let v = to_json(
            &client
                .call_tool("echo", json!({ "text": "over HTTP" }))
                .await
                .expect("echo"),
        );
        assert_eq!(text(&v), "echo: over HTTP");
        let v = to_json(
            &client
                .call_tool("add", json!({ "a": 1.5, "b": 2 }))
                .await
                .expect("add"),
        );
        assert_eq!(v["structuredContent"], json!({ "sum": 3.5 }));

        let read = to_json(
            &client
                .read_resource("fixture://greeting")
                .await
                .expect("resources/read"),
        );
        assert_eq!(read["contents"][0]["text"], "Hello from the TypeScript SDK");
        let prompt = to_json(
            &client
                .get_prompt("greet-prompt", json!({ "name": "Grace" }))
                .await
                .expect("prompts/get"),
        );
        assert_eq!(
            prompt["messages"][0]["content"]["text"],
            "Please greet Grace."
        );

        // Notifications sent while the call runs, on the call's SSE stream.
        let mut notifications = client.notifications();
        let progress = Arc::new(Mutex::new(Vec::new()));
        let p = progress.clone();
        let options =
            RequestOptions::new().on_progress(move |n| p.lock().unwrap().push(n.progress));
        let v = to_json(
            &client
                .call_tool_with("notify", json!({ "count": 3 }), options)
                .await
                .expect("notify"),
        );
        assert_eq!(text(&v), "sent 3");
        assert_eq!(*progress.lock().unwrap(), vec![1.0, 2.0, 3.0]);
        let mut logs = Vec::new();
        while logs.len() < 3 {
            match tokio::time::timeout(Duration::from_secs(5), notifications.recv()).await {
                Ok(Some(ServerEvent::Log(log))) => logs.push(log.data),
                Ok(Some(_)) => {}
                Ok(None) => panic!("the notification stream ended"),
                Err(_) => panic!("only {} log messages arrived: {logs:?}", logs.len()),
            }
        }
        assert_eq!(
            logs,
            [
                json!("log 1 of 3"),
                json!("log 2 of 3"),
                json!("log 3 of 3")
            ]
        );

        client.close().await.expect("close");
        server.kill().await.expect("stop the TypeScript server");
    })
    .await
    .expect("the test took too long");
}

/// `node inspector --cli ARGS...`, its JSON output.
async fn inspector(kit: &Kit, args: &[&str]) -> Value {
    let mut cmd =
        kit.node(&kit.package("@modelcontextprotocol/inspector/clients/launcher/build/index.js"));
    // Its catalog and storage go to a scratch folder, not the user's home.
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("interop-inspector-home");
    std::fs::create_dir_all(&home).unwrap();
    cmd.arg("--cli")
        .args(args)
        .env("HOME", &home)
        .env("MCP_CATALOG_PATH", home.join("mcp.json"));
    let out = run_bounded(cmd, &format!("inspector --cli {args:?}")).await;
    stdout_json(&out, &format!("inspector --cli {args:?}"))
}

/// Lists the tools of `target` (a URL, or a command and its arguments) with the Inspector CLI,
/// calls `test_simple_text` and `greet` on it, and checks what it saw.
async fn inspect_our_server(kit: &Kit, target: &[&str]) {
    let with = |rest: &[&'static str]| -> Vec<&str> {
        target.iter().copied().chain(rest.iter().copied()).collect()
    };
    let tools = inspector(kit, &with(&["--method", "tools/list"])).await;
    let call = inspector(
        kit,
        &with(&["--method", "tools/call", "--tool-name", "test_simple_text"]),
    )
    .await;
    let greet = inspector(
        kit,
        &with(&[
            "--method",
            "tools/call",
            "--tool-name",
            "greet",
            "--tool-arg",
            "name=Ada",
        ]),
    )
    .await;
    assert_inspector_saw_our_server(&tools, &call, &greet);
}

fn assert_inspector_saw_our_server(tools: &Value, call: &Value, greet: &Value) {
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {tools}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for expected in ["test_simple_text", "greet", "test_tool_with_progress"] {
        assert!(names.contains(&expected), "{expected} not in {names:?}");
    }
    assert_eq!(
        call["content"][0]["text"], "This is a simple text response for testing.",
        "{call}"
    );
    assert_ne!(call["isError"], true, "{call}");
    assert!(
        greet["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Ada")),
        "{greet}"
    );
}

/// Issue 4: the official MCP Inspector CLI lists the tools of our reference server and calls
/// tools on it, over Streamable HTTP (`duomcp serve --http`) and over stdio (`duomcp serve`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_cli_against_our_server() {
    let kit = kit();
    tokio::time::timeout(TEST_DEADLINE, async {
        let bin = env!("CARGO_BIN_EXE_duomcp");

        // Over Streamable HTTP.
        let mut server = tokio::process::Command::new(bin)
            .args(["serve", "--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn duomcp serve --http");
        let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
        let rest = wait_for_line(
            &mut lines,
            "duomcp: serving the reference server at ",
            "duomcp serve --http",
        )
        .await;
        let url = rest.split_whitespace().next().unwrap().to_owned();
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

        inspect_our_server(&kit, &[&url]).await;
        server.kill().await.expect("stop duomcp serve --http");

        // Over stdio: the Inspector starts `duomcp serve` itself.
        inspect_our_server(&kit, &[bin, "serve"]).await;
    })
    .await
    .expect("the test took too long");
}

/// Issue 8: the README quickstart server (`crates/duomcp/examples/quickstart.rs`) works with the
/// official TypeScript SDK client over stdio: `greet` is listed as the README says and answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_client_against_the_quickstart_server() {
    let kit = kit();
    let quickstart = env_path("DUOMCP_QUICKSTART_BIN");
    assert!(
        quickstart.is_file(),
        "DUOMCP_QUICKSTART_BIN={} is not a file (cargo build -p duomcp --example quickstart)",
        quickstart.display()
    );
    let mut cmd = kit.node(&fixture("ts_client.cjs"));
    cmd.arg(&quickstart);
    let out = run_bounded(cmd, "the TypeScript SDK client").await;
    let v = stdout_json(&out, "the TypeScript SDK client");
    assert_eq!(v["sdkVersion"], kit.version_of("@modelcontextprotocol/sdk"));
    assert_eq!(v["protocolVersion"], "2025-11-25", "{v}");
    assert_eq!(v["serverInfo"]["name"], "duomcp-server", "{v}");
    let tools = v["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 1, "{v}");
    assert_eq!(tools[0]["name"], "greet");
    assert_eq!(tools[0]["description"], "Greets someone by name.");
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["name"]));
    assert_eq!(
        tools[0]["inputSchema"]["properties"]["name"]["type"],
        "string"
    );
    assert_eq!(
        v["call"]["content"],
        json!([{ "type": "text", "text": "Hello, Ada!" }])
    );
    assert_ne!(v["call"]["isError"], true);
}
