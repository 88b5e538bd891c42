//! The examples, run: each binary is started and spoken to by the duomcp client (over stdio) or
//! over HTTP, in both revisions, and the README's quickstart is checked to be the
//! `quickstart` example word for word.
//!
//! `cargo test` builds the examples before running tests; when only this file is selected
//! (`cargo test --test examples`), build them first with `cargo build -p duomcp --examples`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::client::{Client, EraChoice};
use duomcp::schema::{ElicitAction, ElicitRequestParams, ElicitResult};
use duomcp_testkit::text;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;
use tokio::process::Command;

/// The binary of example `name`, built next to this test (`target/<profile>/examples/`).
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let path = dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.exists(),
        "{} is missing: `cargo test` builds the examples; with a filter, run `cargo build -p duomcp --examples` first",
        path.display()
    );
    path
}

async fn connect(name: &str, era: EraChoice) -> Client {
    Client::builder()
        .name("examples-test")
        .era(era)
        .request_timeout(Duration::from_secs(20))
        .connect_stdio(Command::new(example(name)))
        .await
        .unwrap_or_else(|e| panic!("connecting to the {name} example ({era:?}): {e}"))
}

const ERAS: [(EraChoice, &str); 2] = [
    (EraChoice::Legacy, "2025-11-25"),
    (EraChoice::Modern, "2026-07-28"),
];

#[test]
fn readme_quickstart_is_the_quickstart_example() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/../../README.md")).unwrap();
    let example = std::fs::read_to_string(format!("{root}/examples/quickstart.rs")).unwrap();

    let section = readme
        .split("## A server in a few lines")
        .nth(1)
        .expect("the README's \"A server in a few lines\" section");
    let block = section
        .split("```rust")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a ```rust block in that section");
    let block = block.split_once('\n').map_or("", |(_, code)| code);
    let code: String = example
        .lines()
        .skip_while(|l| l.starts_with("//!") || l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        block.trim(),
        code.trim(),
        "README.md and examples/quickstart.rs differ"
    );
    let lines = code.lines().filter(|l| !l.trim().is_empty()).count();
    assert!(lines <= 15, "the quickstart has {lines} lines of code");
}

#[tokio::test]
async fn quickstart_serves_both_eras() {
    for (era, version) in ERAS {
        let client = connect("quickstart", era).await;
        assert_eq!(client.protocol_version(), version);

        let tools = client.list_all_tools().await.unwrap();
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0].name, "greet");
        assert_eq!(
            tools[0].description.as_deref(),
            Some("Greets someone by name.")
        );
        assert_eq!(
            tools[0].input_schema["required"],
            json!(["name"]),
            "{:?}",
            tools[0].input_schema
        );

        let result = client
            .call_tool("greet", json!({ "name": "Ada" }))
            .await
            .unwrap();
        assert_eq!(text(&result), "Hello, Ada!");
        assert_ne!(result.is_error, Some(true));

        // A bad argument is the model's to fix: an `isError` result, not a protocol error.
        let bad = client
            .call_tool("greet", json!({ "name": 7 }))
            .await
            .unwrap();
        assert_eq!(bad.is_error, Some(true), "{bad:?}");
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn stdio_server_offers_one_of_everything() {
    for (era, _) in ERAS {
        let client = connect("stdio_server", era).await;
        let tools = client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["add", "countdown", "visits"]);
        let add = &tools[0];
        let hints = add.annotations.as_ref().expect("add's annotations");
        assert_eq!(hints.read_only_hint, Some(true));
        assert_eq!(hints.open_world_hint, Some(false));
        assert!(
            add.output_schema.is_some(),
            "Json<Sum> gives an output schema"
        );
        assert_eq!(
            add.input_schema["properties"]["a"]["description"],
            "The first addend."
        );

        let sum = client
            .call_tool("add", json!({ "a": 2, "b": 3 }))
            .await
            .unwrap();
        assert_eq!(sum.structured_content, Some(json!({ "sum": 5 })));
        let countdown = client
            .call_tool("countdown", json!({ "from": 2 }))
            .await
            .unwrap();
        assert_eq!(text(&countdown), "liftoff");

        let prompts = client.list_all_prompts().await.unwrap();
        assert_eq!(prompts[0].name, "review");
        assert_eq!(prompts[0].title.as_deref(), Some("Code review"));
        let args = prompts[0].arguments.as_deref().unwrap_or_default();
        assert_eq!(args[0].name, "code");
        assert_eq!(args[0].required, Some(true));

        let resources = client.list_all_resources().await.unwrap();
        assert_eq!(resources[0].uri, "memo://readme");
        assert_eq!(resources[0].mime_type.as_deref(), Some("text/markdown"));
        let templates = client.list_all_resource_templates().await.unwrap();
        assert_eq!(templates[0].uri_template, "memo://notes/{id}");
        let note = client.read_resource("memo://notes/7").await.unwrap();
        assert_eq!(
            serde_json::to_value(&note.contents[0]).unwrap()["text"],
            "Note 7: buy milk"
        );
        assert!(client.read_resource("memo://notes/8").await.is_err());
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn elicitation_example_asks_in_both_eras() {
    for (era, version) in ERAS {
        for accept in [true, false] {
            let client = Client::builder()
                .era(era)
                .request_timeout(Duration::from_secs(20))
                .on_elicit(move |request: ElicitRequestParams| async move {
                    assert_eq!(request.message(), "Who is the table for?");
                    Ok(if accept {
                        let content = json!({ "name": "Ada" });
                        ElicitResult::accept(content.as_object().cloned())
                    } else {
                        ElicitResult::decline()
                    })
                })
                .connect_stdio(Command::new(example("elicitation")))
                .await
                .unwrap();
            assert_eq!(client.protocol_version(), version);
            let result = client
                .call_tool("book_table", json!({ "guests": 2 }))
                .await
                .unwrap();
            let expected = if accept {
                "Booked a table for 2, under the name Ada."
            } else {
                "No table booked."
            };
            assert_eq!(text(&result), expected, "{era:?}");
            client.close().await.unwrap();
        }
    }
    // The answer type the handler matches on.
    assert_ne!(ElicitAction::Accept, ElicitAction::Decline);
}

#[tokio::test]
async fn client_host_example_calls_the_quickstart() {
    for args in [&[][..], &["--era", "legacy"][..]] {
        let output = Command::new(example("client_host"))
            .args(args)
            .arg(example("quickstart"))
            .output()
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{args:?}: {output:?}");
        let version = if args.is_empty() {
            "2026-07-28"
        } else {
            "2025-11-25"
        };
        assert_eq!(
            stdout,
            format!(
                "connected to duomcp-server {}, revision {version}\n\
                 tools: greet (Greets someone by name.)\n\
                 greet → Hello, Ada!\n",
                env!("CARGO_PKG_VERSION")
            )
        );
    }
}

#[cfg(feature = "http-server")]
#[tokio::test]
async fn axum_app_serves_mcp_next_to_its_own_routes() {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

    let mut child = Command::new(example("axum_app"))
        .arg("127.0.0.1:0")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("the example prints its address")
        .unwrap()
        .unwrap();
    let addr = first
        .strip_prefix("listening on http://")
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("unexpected first line: {first}"))
        .to_owned();

    // One HTTP/1.1 exchange on a fresh connection: (status line, body).
    let exchange = |request: String| {
        let addr = addr.clone();
        async move {
            let mut tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
            tcp.write_all(request.as_bytes()).await.unwrap();
            let mut raw = String::new();
            tcp.read_to_string(&mut raw).await.unwrap();
            let (head, body) = raw.split_once("\r\n\r\n").unwrap();
            (head.lines().next().unwrap().to_owned(), body.to_owned())
        }
    };

    let (status, body) = exchange(format!(
        "GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    ))
    .await;
    assert_eq!((status.as_str(), body.as_str()), ("HTTP/1.1 200 OK", "ok"));

    let call = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": "greet", "arguments": { "name": "Ada" },
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    })
    .to_string();
    let (status, body) = exchange(format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: greet\r\n\
         Content-Length: {}\r\n\r\n{call}",
        call.len()
    ))
    .await;
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    let reply: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(reply["result"]["content"][0]["text"], "Hello, Ada!");

    child.kill().await.unwrap();
}

/// An example spoken to line by line over its stdin/stdout.
struct Lines {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    next_id: i64,
}

impl Lines {
    fn spawn(name: &str, args: &[&std::ffi::OsStr]) -> Lines {
        let mut child = Command::new(example(name))
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(
            child.stdout.take().unwrap(),
        ));
        Lines {
            child,
            stdin,
            stdout,
            next_id: 0,
        }
    }

    async fn send(&mut self, msg: Value) {
        use tokio::io::AsyncWriteExt;
        let mut line = serde_json::to_vec(&msg).unwrap();
        line.push(b'\n');
        self.stdin.write_all(&line).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// Sends a request (2026-07-28 `_meta` added when `modern` is given) and returns its
    /// response, skipping notifications.
    async fn request(&mut self, method: &str, mut params: Value, modern: Option<Value>) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        if let Some(caps) = modern {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": caps
            });
        }
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        loop {
            let line = tokio::time::timeout(Duration::from_secs(20), self.stdout.next_line())
                .await
                .expect("the example answers")
                .unwrap()
                .expect("the example closed its output");
            let msg: Value = serde_json::from_str(&line).unwrap();
            if msg["id"] == id && msg.get("method").is_none() {
                return msg;
            }
        }
    }

    async fn ok(&mut self, method: &str, params: Value, modern: Option<Value>) -> Value {
        let r = self.request(method, params, modern).await;
        r.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} failed: {r}"))
    }

    async fn initialize(&mut self) {
        let r = self
            .ok(
                "initialize",
                json!({ "protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": { "name": "examples-test", "version": "1" } }),
                None,
            )
            .await;
        assert_eq!(r["protocolVersion"], "2025-11-25");
        self.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
    }
}

#[tokio::test]
async fn task_example_runs_as_a_task_when_the_client_can_take_one() {
    // 2025-11-25: a task when the call asks for one, inline otherwise.
    let mut legacy = Lines::spawn("task", &[]);
    legacy.initialize().await;
    let created = legacy
        .ok(
            "tools/call",
            json!({ "name": "render", "arguments": { "frames": 3 }, "task": { "ttl": 60000 } }),
            None,
        )
        .await;
    assert_eq!(created["task"]["status"], "working", "{created}");
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    let result = legacy
        .ok("tasks/result", json!({ "taskId": id }), None)
        .await;
    assert_eq!(
        result["content"][0]["text"], "Rendered 3 frames",
        "{result}"
    );
    let inline = legacy
        .ok(
            "tools/call",
            json!({ "name": "render", "arguments": { "frames": 1 } }),
            None,
        )
        .await;
    assert_eq!(
        inline["content"][0]["text"], "Rendered 1 frames",
        "{inline}"
    );
    assert!(inline.get("task").is_none());
    legacy.child.kill().await.unwrap();

    // 2026-07-28: a task when the request declares the extension; poll `tasks/get`.
    let tasks = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    let mut modern = Lines::spawn("task", &[]);
    let created = modern
        .ok(
            "tools/call",
            json!({ "name": "render", "arguments": { "frames": 2 } }),
            Some(tasks.clone()),
        )
        .await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let mut done = Value::Null;
    for _ in 0..200 {
        let t = modern
            .ok("tasks/get", json!({ "taskId": id }), Some(tasks.clone()))
            .await;
        if t["status"] != "working" {
            done = t;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "Rendered 2 frames");
    let inline = modern
        .ok(
            "tools/call",
            json!({ "name": "render", "arguments": { "frames": 1 } }),
            Some(json!({})),
        )
        .await;
    assert_eq!(inline["resultType"], "complete", "{inline}");
    assert_eq!(inline["content"][0]["text"], "Rendered 1 frames");
    modern.child.kill().await.unwrap();
}

#[tokio::test]
async fn skill_example_serves_skills_from_memory_and_directories() {
    let dir = std::env::temp_dir().join(format!(
        "duomcp-skill-example-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let deploy = dir.join("team").join("deploy");
    std::fs::create_dir_all(&deploy).unwrap();
    std::fs::write(
        deploy.join("SKILL.md"),
        "---\nname: deploy\ndescription: Deploy the service.\n---\nRun the pipeline.\n",
    )
    .unwrap();

    for modern in [None, Some(json!({}))] {
        let mut ex = Lines::spawn("skill", &[dir.as_os_str()]);
        if modern.is_none() {
            ex.initialize().await;
        }
        let list = ex.ok("skills/list", json!({}), modern.clone()).await;
        let uris: Vec<&str> = list["skills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["uri"].as_str().unwrap())
            .collect();
        assert_eq!(
            uris,
            ["skill://greeting/SKILL.md", "skill://team/deploy/SKILL.md"],
            "{list}"
        );
        assert_eq!(
            list["skills"][1]["frontmatter"]["description"],
            "Deploy the service."
        );
        let read = ex
            .ok(
                "resources/read",
                json!({ "uri": "skill://greeting/phrases.md" }),
                modern.clone(),
            )
            .await;
        assert!(
            read["contents"][0]["text"]
                .as_str()
                .unwrap()
                .contains("Bonjour"),
            "{read}"
        );
        let read = ex
            .ok(
                "resources/read",
                json!({ "uri": "skill://team/deploy/SKILL.md" }),
                modern,
            )
            .await;
        assert!(read["contents"][0]["text"]
            .as_str()
            .unwrap()
            .ends_with("Run the pipeline.\n"));
        ex.child.kill().await.unwrap();
    }

    // A skill whose name is not its folder's: the example refuses to start, saying why.
    let bad = dir.join("wrong");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(
        bad.join("SKILL.md"),
        "---\nname: other\ndescription: Misnamed.\n---\n",
    )
    .unwrap();
    let output = Command::new(example("skill"))
        .arg(&dir)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("other"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What the weather server answers, over any transport and in either era: the structured
/// `forecast`, the `anyhow` failure of `alerts` (its context and cause), the resource and the
/// prompt.
async fn check_weather(client: &Client, what: &str) {
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["alerts", "forecast"], "{what}");
    let forecast = tools.iter().find(|t| t.name == "forecast").unwrap();
    let output = forecast
        .output_schema
        .as_ref()
        .expect("Json<Forecast> gives an outputSchema");
    assert_eq!(
        output["properties"]["high_c"]["description"], "Degrees Celsius.",
        "{what}"
    );
    assert_eq!(forecast.input_schema["required"], json!(["city"]), "{what}");

    let result = client
        .call_tool("forecast", json!({ "city": "Lisbon" }))
        .await
        .unwrap();
    assert_eq!(
        result.structured_content,
        Some(json!({ "city": "Lisbon", "high_c": 18, "sky": "sunny" })),
        "{what}"
    );
    assert_ne!(result.is_error, Some(true), "{what}");

    let failed = client
        .call_tool("alerts", json!({ "city": "Lisbon" }))
        .await
        .unwrap();
    assert_eq!(failed.is_error, Some(true), "{what}: {failed:?}");
    assert_eq!(
        text(&failed),
        "no alert feed for Lisbon: environment variable not found",
        "{what}"
    );

    let read = client.read_resource("weather://stations").await.unwrap();
    let contents = serde_json::to_value(&read.contents).unwrap();
    assert_eq!(contents[0]["text"], "Lisbon, Porto, Faro", "{what}");

    let prompt = client
        .get_prompt("plan_day", json!({ "city": "Faro" }))
        .await
        .unwrap();
    let messages = serde_json::to_value(&prompt.messages).unwrap();
    assert!(
        messages[0]["content"]["text"]
            .as_str()
            .unwrap_or("")
            .contains("Faro"),
        "{what}: {messages}"
    );
}

#[tokio::test]
async fn weather_stdio_example_serves_tools_resource_and_prompt() {
    for (era, _) in ERAS {
        let client = Client::builder()
            .name("examples-test")
            .era(era)
            .request_timeout(Duration::from_secs(20))
            .connect_stdio({
                let mut command = Command::new(example("weather_stdio"));
                command.env_remove("WEATHER_ALERTS_URL");
                command
            })
            .await
            .unwrap();
        check_weather(&client, &format!("stdio {era:?}")).await;
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn weather_axum_example_serves_the_same_server_over_http() {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut child = Command::new(example("weather_axum"))
        .arg("127.0.0.1:0")
        .env_remove("WEATHER_ALERTS_URL")
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("the example prints its address")
        .unwrap()
        .unwrap();
    let addr = first
        .strip_prefix("listening on http://")
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("unexpected first line: {first}"))
        .to_owned();
    for (era, _) in ERAS {
        let client = Client::builder()
            .name("examples-test")
            .era(era)
            .request_timeout(Duration::from_secs(20))
            .connect_http(&format!("http://{addr}/mcp"))
            .await
            .unwrap();
        check_weather(&client, &format!("http {era:?}")).await;
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn weather_host_example_calls_both_tools() {
    let output = Command::new(example("weather_host"))
        .env_remove("WEATHER_ALERTS_URL")
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "tools: alerts, forecast\n\
         forecast: Faro, 16 °C, sunny\n\
         alerts failed: no alert feed for Faro: environment variable not found\n"
    );
}

/// Issue 33 item 7: the MCP App example serves its view from a clone as it is (the view is
/// built into the binary; nothing from `target/interop-kit/` or npm), in both revisions, and
/// what it serves is the file the repository ships.
#[tokio::test]
async fn mcp_app_example_serves_its_shipped_view() {
    let shipped = include_str!("../examples/mcp_app/view/index.html");
    assert!(
        shipped.len() < 8 * 1024,
        "the view stays small: {} bytes",
        shipped.len()
    );
    for (era, _) in ERAS {
        let client = connect("mcp_app", era).await;
        let read = client
            .read_resource("ui://counter/view.html")
            .await
            .unwrap_or_else(|e| panic!("reading the view ({era:?}): {e}"));
        let read = serde_json::to_value(&read).unwrap();
        assert_eq!(read["contents"][0]["text"], shipped, "{era:?}");
        assert_eq!(
            read["contents"][0]["mimeType"], "text/html;profile=mcp-app",
            "{era:?}"
        );
        let shown = client.call_tool("show_counter", ()).await.unwrap();
        assert_eq!(text(&shown), "The counter is at 0.", "{era:?}");
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn guide_server_serves_the_notebook_in_both_eras() {
    for (era, version) in ERAS {
        let client = connect("guide_server", era).await;
        assert_eq!(client.protocol_version(), version);
        let added = client
            .call_tool("add_note", json!({ "text": "from the binary" }))
            .await
            .unwrap();
        assert_eq!(text(&added), "note 1 added");
        let index = client.read_resource("notes://index").await.unwrap();
        let index = serde_json::to_value(&index.contents[0]).unwrap();
        assert_eq!(index["text"], "1: from the binary", "{era:?}");
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn guide_server_stops_on_sigterm_with_its_stdin_still_open() {
    let mut child = Command::new(example("guide_server"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Let it install its signal handlers and block on reading stdin.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pid = child.id().unwrap().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("the server returned from main though stdin never closed")
        .unwrap();
    assert!(status.success(), "{status:?}");
}
