//! `duomcp inspect`: who may use it (the token, Host, Origin, loopback only), and its API
//! against the reference server in both revisions: tools, a call with its trace, an
//! elicitation answered by the page, cancel, bad input, two inspectors side by side. The page
//! itself, in a browser: tests/inspect_fixtures (run by tests/interop.rs).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");

/// A running `duomcp inspect`, killed on drop.
struct Inspect {
    child: Child,
    _stdout: BufReader<std::process::ChildStdout>,
    port: u16,
    token: String,
}

impl Drop for Inspect {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn inspect(era: &str) -> Inspect {
    inspect_with(&["--era", era, "--timeout", "20", "--", BIN, "serve"])
}

/// `duomcp inspect ARGS…`.
fn inspect_with(args: &[&str]) -> Inspect {
    let mut child = Command::new(BIN)
        .arg("inspect")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start duomcp inspect");
    let mut line = String::new();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut line).unwrap();
    // "duomcp inspect: http://127.0.0.1:PORT/?token=TOKEN"
    let url = line
        .trim()
        .strip_prefix("duomcp inspect: ")
        .unwrap_or_else(|| panic!("first line: {line:?}"));
    let rest = url.strip_prefix("http://127.0.0.1:").unwrap();
    let (port, token) = rest.split_once("/?token=").unwrap();
    Inspect {
        child,
        _stdout: stdout,
        port: port.parse().unwrap(),
        token: token.to_owned(),
    }
}

struct Reply {
    status: u16,
    head: String,
    body: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }
}

/// One HTTP/1.1 request on its own connection, headers as given (Host included).
fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Reply {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            b.len()
        ));
    }
    req.push_str("\r\n");
    if let Some(b) = body {
        req.push_str(b);
    }
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        unchunk(body)
    } else {
        body.to_owned()
    };
    Reply {
        status,
        head: head.to_owned(),
        body,
    }
}

fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap();
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        body = &rest[n + 2..];
    }
    out
}

impl Inspect {
    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
    fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }
    fn get(&self, path: &str) -> Reply {
        http(
            self.port,
            "GET",
            path,
            &[("Host", &self.host()), ("Authorization", &self.bearer())],
            None,
        )
    }
    fn post(&self, path: &str, body: &Value) -> Reply {
        let origin = format!("http://{}", self.host());
        http(
            self.port,
            "POST",
            path,
            &[
                ("Host", &self.host()),
                ("Authorization", &self.bearer()),
                ("Origin", &origin),
            ],
            Some(&body.to_string()),
        )
    }
    fn rpc(&self, method: &str, params: Value) -> Value {
        let r = self.post(
            "/api/rpc",
            &json!({ "method": method, "params": params, "call": format!("{method}-call") }),
        );
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()
    }
    fn trace(&self) -> Vec<Value> {
        let r = self.get("/api/trace.jsonl");
        assert_eq!(r.status, 200);
        assert!(r
            .header("content-type")
            .unwrap()
            .starts_with("application/jsonl"));
        r.body
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

#[test]
fn the_page_and_api_need_the_token_a_local_host_and_a_local_origin() {
    let i = inspect("auto");
    let host = i.host();
    let port = i.port;
    let token_path = format!("/?token={}", i.token);
    // No token, a wrong one: 401, page and API alike.
    for path in ["/", "/api/info", "/app.js", "/api/trace"] {
        assert_eq!(
            http(port, "GET", path, &[("Host", &host)], None).status,
            401,
            "{path}"
        );
    }
    let wrong = format!("/?token={}", "0".repeat(64));
    assert_eq!(
        http(port, "GET", &wrong, &[("Host", &host)], None).status,
        401
    );
    assert_eq!(
        http(
            port,
            "GET",
            "/api/info",
            &[("Host", &host), ("Authorization", "Bearer nope")],
            None
        )
        .status,
        401
    );
    // The token in the URL becomes a cookie named for this port, and the URL loses it.
    let first = http(port, "GET", &token_path, &[("Host", &host)], None);
    assert_eq!(first.status, 303);
    assert_eq!(first.header("location").as_deref(), Some("/"));
    let cookie = first.header("set-cookie").unwrap();
    assert!(
        cookie.starts_with(&format!("duomcp_inspect_{port}={}", i.token)),
        "{cookie}"
    );
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let jar = cookie.split(';').next().unwrap().to_owned();
    let page = http(port, "GET", "/", &[("Host", &host), ("Cookie", &jar)], None);
    assert_eq!(page.status, 200);
    assert!(page.body.contains("<title>duomcp inspect</title>"));
    let csp = page.header("content-security-policy").unwrap();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
        "{csp}"
    );
    // `localhost` at the port is this machine too.
    let local = format!("localhost:{port}");
    assert_eq!(
        http(
            port,
            "GET",
            "/api/info",
            &[("Host", &local), ("Cookie", &jar)],
            None
        )
        .status,
        200
    );
    // A foreign Host (DNS rebinding) or Origin: 403, token or not.
    for h in [
        "evil.example",
        &format!("evil.example:{port}"),
        "127.0.0.1:1",
        &format!("127.0.0.2:{port}"),
    ] {
        let r = http(
            port,
            "GET",
            "/api/info",
            &[("Host", h), ("Cookie", &jar)],
            None,
        );
        assert_eq!(r.status, 403, "Host {h}");
    }
    assert_eq!(
        http(port, "GET", "/api/info", &[("Cookie", &jar)], None).status,
        403,
        "no Host"
    );
    for o in [
        "http://evil.example",
        "null",
        &format!("http://127.0.0.1:{port}.evil.example"),
    ] {
        let r = http(
            port,
            "POST",
            "/api/rpc",
            &[("Host", &host), ("Cookie", &jar), ("Origin", o)],
            Some("{\"method\":\"tools/list\"}"),
        );
        assert_eq!(r.status, 403, "Origin {o}");
    }
    let own = format!("http://127.0.0.1:{port}");
    let r = http(
        port,
        "POST",
        "/api/rpc",
        &[("Host", &host), ("Cookie", &jar), ("Origin", &own)],
        Some("{\"method\":\"tools/list\"}"),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.json()["result"]["tools"].is_array(), "{}", r.body);
}

#[test]
fn the_views_origin_needs_its_own_token_a_local_host_and_a_local_origin() {
    let i = inspect("auto");
    let info = i.get("/api/info").json();
    let views = u16::try_from(info["sandbox"]["port"].as_u64().unwrap()).unwrap();
    let token = info["sandbox"]["token"].as_str().unwrap().to_owned();
    assert_ne!(views, i.port, "another port, so another origin");
    assert_ne!(token, i.token, "a token of its own");
    let host = format!("localhost:{views}");
    let path = format!("/sandbox.html?token={token}");
    // The page's CSP lets it frame the views' origin, and nothing else.
    let page = http(
        i.port,
        "GET",
        "/",
        &[("Host", &i.host()), ("Authorization", &i.bearer())],
        None,
    );
    let csp = page.header("content-security-policy").unwrap();
    assert!(
        csp.contains(&format!(
            "frame-src http://127.0.0.1:{views} http://localhost:{views};"
        )),
        "{csp}"
    );
    // With its token, at its Host (either name): the sandbox proxy, which only the
    // inspector's page may frame.
    for h in [host.clone(), format!("127.0.0.1:{views}")] {
        let r = http(views, "GET", &path, &[("Host", &h)], None);
        assert_eq!(r.status, 200, "Host {h}: {}", r.body);
        let csp = r.header("content-security-policy").unwrap();
        assert_eq!(
            csp,
            format!(
                "frame-ancestors http://127.0.0.1:{p} http://localhost:{p}",
                p = i.port
            )
        );
        assert!(
            r.body.contains(&format!("\"http://127.0.0.1:{}\"", i.port)),
            "{}",
            r.body
        );
        assert!(!r.body.contains(&i.token), "the page's token leaked");
    }
    // No token, a wrong one, the page's: 401.
    let page_token = format!("/sandbox.html?token={}", i.token);
    for p in [
        "/sandbox.html",
        "/sandbox.html?token=0",
        page_token.as_str(),
    ] {
        let r = http(views, "GET", p, &[("Host", &host)], None);
        assert_eq!(r.status, 401, "{p}");
    }
    let r = http(
        views,
        "GET",
        "/sandbox.html",
        &[("Host", &host), ("Authorization", &i.bearer())],
        None,
    );
    assert_eq!(r.status, 401, "the page's token as a bearer");
    // A foreign Host (the page's port included) or Origin: 403, token or not.
    for h in [
        "evil.example".to_owned(),
        format!("evil.example:{views}"),
        i.host(),
        format!("127.0.0.2:{views}"),
    ] {
        let r = http(views, "GET", &path, &[("Host", &h)], None);
        assert_eq!(r.status, 403, "Host {h}");
    }
    for o in [
        "http://evil.example".to_owned(),
        "null".to_owned(),
        format!("http://127.0.0.1:{}", i.port),
    ] {
        let r = http(
            views,
            "GET",
            &path,
            &[("Host", &host), ("Origin", &o)],
            None,
        );
        assert_eq!(r.status, 403, "Origin {o}");
    }
    // It serves the proxy and nothing else: not the API, not with the views' token on the page.
    let api = format!("/api/info?token={token}");
    assert_eq!(
        http(views, "GET", &api, &[("Host", &host)], None).status,
        404
    );
    let r = http(
        i.port,
        "GET",
        "/api/info",
        &[
            ("Host", &i.host()),
            ("Authorization", &format!("Bearer {token}")),
        ],
        None,
    );
    assert_eq!(r.status, 401, "the views' token opens the page's API");
    // On loopback only, as the page.
    let outward = outward_address();
    let refused =
        TcpStream::connect_timeout(&SocketAddr::new(outward, views), Duration::from_secs(3));
    assert!(refused.is_err(), "the views' origin answered on {outward}");
}

/// The reference server over Streamable HTTP on a free port, served by a thread of its own
/// until the test ends.
fn http_server() -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(format!("http://{}/mcp", listener.local_addr().unwrap()))
                .unwrap();
            let _ = duomcp::transport::http::StreamableHttp::new(duomcp_cli::reference::server())
                .serve(listener)
                .await;
        });
    });
    rx.recv().unwrap()
}

#[test]
fn over_http_each_trace_entry_has_the_headers_of_its_exchange_credentials_redacted() {
    let url = http_server();
    let secret = "s3cret-bearer-value-0123456789";
    for era in ["legacy", "modern"] {
        let auth = format!("Authorization: Bearer {secret}");
        let i = inspect_with(&["--era", era, "--timeout", "20", "--header", &auth, &url]);
        let called = i.rpc(
            "tools/call",
            json!({ "name": "test_simple_text", "arguments": {} }),
        );
        assert!(called["result"]["content"].is_array(), "{called}");
        let raw = i.get("/api/trace.jsonl").body;
        assert!(
            !raw.contains(secret),
            "{era}: the bearer token is in the trace"
        );
        let trace = i.trace();
        let response = trace
            .iter()
            .rev()
            .find(|e| e["kind"] == "response" && e["method"] == "tools/call")
            .unwrap_or_else(|| panic!("{era}: {trace:?}"));
        let x = &response["http"][0];
        assert_eq!(x["method"], "POST", "{era}: {response}");
        assert_eq!(x["url"], url.as_str());
        assert_eq!(x["status"], 200);
        let header = |side: &str, name: &str| -> Option<String> {
            x[side]
                .as_array()
                .unwrap()
                .iter()
                .find_map(|p| (p[0] == name).then(|| p[1].as_str().unwrap().to_owned()))
        };
        assert_eq!(
            header("request", "authorization").as_deref(),
            Some("Bearer [redacted]"),
            "{era}: {x}"
        );
        assert_eq!(
            header("request", "mcp-method").as_deref(),
            Some("tools/call")
        );
        assert!(header("response", "content-type").is_some(), "{era}: {x}");
        // A tool run as a task: its response has the exchanges of the call and of the requests
        // that followed the task to its result.
        let task = i.rpc(
            "tools/call",
            json!({ "name": "slow_compute", "arguments": { "seconds": 1 }, "task": {} }),
        );
        assert!(task["result"]["content"].is_array(), "{era}: {task}");
        let trace = i.trace();
        let done = trace
            .iter()
            .rev()
            .find(|e| e["kind"] == "response" && e["method"] == "tools/call")
            .unwrap();
        let methods: Vec<&str> = done["http"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                let header = x["request"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|p| p[0] == "mcp-method");
                header.and_then(|p| p[1].as_str()).unwrap_or_default()
            })
            .collect();
        assert!(
            methods.len() >= 2
                && methods[0] == "tools/call"
                && methods[1..].iter().all(|m| m.starts_with("tasks/")),
            "{era}: {methods:?}"
        );
        // A notification's exchange is an entry of its own (2025-11-25: `initialized`).
        if era == "legacy" {
            let initialized = trace
                .iter()
                .find(|e| e["kind"] == "http" && e["method"] == "notifications/initialized")
                .unwrap_or_else(|| panic!("{trace:?}"));
            assert_eq!(initialized["http"][0]["status"], 202, "{initialized}");
        }
        // The handshake's exchanges go with the connect entry.
        let connect = trace
            .iter()
            .find(|e| e["kind"] == "connect" && e["dir"] == "in")
            .unwrap();
        assert!(
            !connect["http"].as_array().unwrap().is_empty(),
            "{era}: {connect}"
        );
    }
}

/// This machine's address on its way out (a UDP "connect" sends nothing): not loopback.
fn outward_address() -> IpAddr {
    let s = UdpSocket::bind("0.0.0.0:0").unwrap();
    s.connect("192.0.2.1:9")
        .expect("a route out: the loopback check needs a non-loopback interface");
    let ip = s.local_addr().unwrap().ip();
    assert!(
        !ip.is_loopback() && !ip.is_unspecified(),
        "no non-loopback address here ({ip})"
    );
    ip
}

#[test]
fn it_listens_on_loopback_only() {
    let i = inspect("auto");
    let outward = outward_address();
    let refused =
        TcpStream::connect_timeout(&SocketAddr::new(outward, i.port), Duration::from_secs(3));
    assert!(
        refused.is_err(),
        "the inspector answered on {outward}:{}",
        i.port
    );
    assert!(TcpStream::connect(("127.0.0.1", i.port)).is_ok());
}

#[test]
fn tools_calls_and_the_trace_in_both_revisions() {
    for (era, shown) in [("legacy", "2025-11-25"), ("modern", "2026-07-28")] {
        let i = inspect(era);
        let info = i.get("/api/info").json();
        assert_eq!(info["connected"], true);
        assert!(
            info["era"].as_str().unwrap().contains(shown),
            "{era}: {info}"
        );
        assert_eq!(info["protocolVersion"], shown);
        assert_eq!(info["serverInfo"]["name"], "duomcp-reference");
        assert!(info["capabilities"]["tools"].is_object());

        let tools = i.rpc("tools/list", json!({}));
        let names: Vec<&str> = tools["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"json_schema_2020_12_tool")
                && names.contains(&"test_tool_with_progress"),
            "{names:?}"
        );

        let call = i.rpc(
            "tools/call",
            json!({ "name": "test_simple_text", "arguments": {} }),
        );
        assert_eq!(
            call["result"]["content"][0]["type"], "text",
            "{era}: {call}"
        );
        let progress = i.rpc(
            "tools/call",
            json!({ "name": "test_tool_with_progress", "arguments": {} }),
        );
        assert!(
            progress["result"]["content"].is_array(),
            "{era}: {progress}"
        );
        // An unknown tool: the server's error, code and message, as the page shows it.
        let missing = i.rpc(
            "tools/call",
            json!({ "name": "no_such_tool", "arguments": {} }),
        );
        assert!(
            missing["error"]["message"]
                .as_str()
                .unwrap()
                .contains("no_such_tool"),
            "{era}: {missing}"
        );

        let trace = i.trace();
        let requests = trace
            .iter()
            .filter(|e| e["kind"] == "request" && e["method"] == "tools/call")
            .count();
        let answers: Vec<&Value> = trace
            .iter()
            .filter(|e| e["kind"] == "response" && e["method"] == "tools/call")
            .collect();
        assert_eq!(requests, 3, "{era}");
        assert_eq!(answers.len(), 3, "{era}");
        assert!(answers.iter().all(|a| a["ms"].as_f64().unwrap() >= 0.0));
        assert!(answers.iter().any(|a| a["error"].is_object()));
        // The progress notifications of the call are in it, in order, between its request and answer.
        let progress: Vec<f64> = trace
            .iter()
            .filter(|e| e["method"] == "notifications/progress")
            .map(|e| e["params"]["progress"].as_f64().unwrap())
            .collect();
        assert!(
            !progress.is_empty() && progress.windows(2).all(|w| w[0] <= w[1]),
            "{era}: {progress:?}"
        );
        let seqs: Vec<u64> = trace.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]));
        // The same trace as one JSON document.
        let doc = i.get("/api/trace").json();
        assert_eq!(doc["entries"].as_array().unwrap().len(), trace.len());
        assert_eq!(doc["dropped"], 0);
    }
}

/// Reads server-sent events until `want` returns something (within 30 s: keep-alive comments
/// do not count).
fn wait_event(events: &mut BufReader<TcpStream>, want: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut line = String::new();
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "no such event within 30 s"
        );
        line.clear();
        let n = events.read_line(&mut line).unwrap();
        assert!(n > 0, "the event stream ended");
        if let Some(data) = line.trim_end().strip_prefix("data: ") {
            let v: Value = serde_json::from_str(data).unwrap();
            if want(&v) {
                return v;
            }
        }
    }
}

fn open_events(i: &Inspect) -> BufReader<TcpStream> {
    let mut s = TcpStream::connect(("127.0.0.1", i.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET /api/events HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\n\r\n",
        i.host(),
        i.bearer()
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let _ = wait_event(&mut r, |v| v["type"] == "hello");
    r
}

#[test]
fn the_page_answers_an_elicitation_in_both_revisions() {
    for era in ["legacy", "modern"] {
        let i = std::sync::Arc::new(inspect(era));
        let mut events = open_events(&i);
        let caller = {
            let i = i.clone();
            std::thread::spawn(move || {
                i.rpc("tools/call", json!({ "name": "test_elicitation", "arguments": { "message": "Who is there?" } }))
            })
        };
        let ask = wait_event(&mut events, |v| v["type"] == "input");
        assert_eq!(ask["kind"], "elicitation", "{era}: {ask}");
        assert_eq!(ask["params"]["message"], "Who is there?", "{era}: {ask}");
        assert!(
            ask["params"]["requestedSchema"]["properties"].is_object(),
            "{era}: {ask}"
        );
        let id = ask["id"].as_u64().unwrap();
        // A wrong id is refused; the right one is taken once.
        assert_eq!(
            i.post("/api/input/999999", &json!({ "action": "decline" }))
                .status,
            404
        );
        let content = json!({ "username": "ada", "email": "ada@example.com" });
        let answer = json!({ "action": "accept", "content": content });
        assert_eq!(i.post(&format!("/api/input/{id}"), &answer).status, 204);
        assert_eq!(i.post(&format!("/api/input/{id}"), &answer).status, 404);
        let result = caller.join().unwrap();
        let text = result["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{era}: {result}"));
        assert!(
            text.contains("accept") && text.contains("ada@example.com"),
            "{era}: {text}"
        );
    }
}

#[test]
fn bad_input_gets_a_clear_error() {
    let i = inspect("modern");
    let r = i.post(
        "/api/rpc",
        &json!({ "method": "tools/list", "params": [1, 2] }),
    );
    assert_eq!(r.status, 400);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("object"));
    let r = i.post("/api/rpc", &json!({ "params": {} }));
    assert!(r.status == 400 || r.status == 422, "{}", r.status);
    let r = i.post("/api/connect", &json!({}));
    assert_eq!(r.status, 400);
    let r = i.post(
        "/api/connect",
        &json!({ "url": "http://127.0.0.1:1/mcp", "command": ["x"] }),
    );
    assert_eq!(r.status, 400);
    let r = i.post("/api/connect", &json!({ "era": "1999" }));
    assert_eq!(r.status, 400);
    assert_eq!(i.post("/api/cancel/nothing", &json!({})).status, 404);
    // Over the body limit (4 MiB): refused before it is read whole.
    let big = json!({ "method": "tools/list", "params": { "x": "a".repeat(5 << 20) } });
    assert_eq!(i.post("/api/rpc", &big).status, 413);
    // Still serving. (2026-07-28 has no `ping`: the server's own answer is relayed as it is.)
    assert!(i.rpc("tools/list", json!({}))["result"]["tools"].is_array());
    let ping = i.rpc("ping", json!({}));
    assert_eq!(ping["error"]["code"], -32601, "{ping}");
}

#[test]
fn two_inspectors_side_by_side_keep_to_their_own() {
    let a = inspect("legacy");
    let b = inspect("modern");
    assert_ne!(a.token, b.token);
    // A's token (as a bearer or as A's cookie) does not open B.
    let host_b = b.host();
    let a_bearer = a.bearer();
    let a_cookie = format!("duomcp_inspect_{}={}", a.port, a.token);
    assert_eq!(
        http(
            b.port,
            "GET",
            "/api/info",
            &[("Host", &host_b), ("Authorization", &a_bearer)],
            None
        )
        .status,
        401
    );
    assert_eq!(
        http(
            b.port,
            "GET",
            "/api/info",
            &[("Host", &host_b), ("Cookie", &a_cookie)],
            None
        )
        .status,
        401
    );
    // Each has its own server and revision, and its own trace.
    a.rpc(
        "tools/call",
        json!({ "name": "test_simple_text", "arguments": {} }),
    );
    assert!(a.get("/api/info").json()["era"]
        .as_str()
        .unwrap()
        .contains("2025-11-25"));
    assert!(b.get("/api/info").json()["era"]
        .as_str()
        .unwrap()
        .contains("2026-07-28"));
    assert!(a.trace().iter().any(|e| e["method"] == "tools/call"));
    assert!(!b.trace().iter().any(|e| e["method"] == "tools/call"));
}

#[test]
fn the_revision_switches_on_the_fly() {
    let i = inspect("legacy");
    assert!(i.get("/api/info").json()["era"]
        .as_str()
        .unwrap()
        .contains("2025-11-25"));
    let r = i.post("/api/connect", &json!({ "era": "modern" }));
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.json()["era"].as_str().unwrap().contains("2026-07-28"));
    let call = i.rpc(
        "tools/call",
        json!({ "name": "test_simple_text", "arguments": {} }),
    );
    assert!(call["result"]["content"].is_array(), "{call}");
}

#[test]
fn roots_set_in_the_page_reach_the_server_in_both_revisions() {
    for era in ["legacy", "modern"] {
        let i = inspect(era);
        assert_eq!(i.get("/api/info").json()["roots"], json!([]), "{era}");
        // Refused, and nothing changes: not a file:// URI, too many.
        let r = i.post(
            "/api/roots",
            &json!({ "roots": [{ "uri": "https://example.com/" }] }),
        );
        assert_eq!(r.status, 400, "{era}");
        assert!(
            r.json()["error"]["message"]
                .as_str()
                .unwrap()
                .contains("file://"),
            "{}",
            r.body
        );
        let many: Vec<Value> = (0..65)
            .map(|n| json!({ "uri": format!("file:///r{n}") }))
            .collect();
        assert_eq!(
            i.post("/api/roots", &json!({ "roots": many })).status,
            400,
            "{era}"
        );
        assert_eq!(
            i.post("/api/roots", &json!({ "roots": "file:///x" }))
                .status,
            422,
            "{era}"
        );
        assert_eq!(i.get("/api/info").json()["roots"], json!([]), "{era}");
        // Taken: the server asks for them (2025-11-25: roots/list; 2026-07-28: an input round).
        let roots = json!([{ "uri": "file:///work/a", "name": "a" }, { "uri": "file:///work/b" }]);
        let r = i.post("/api/roots", &json!({ "roots": roots }));
        assert_eq!(r.status, 200, "{era}: {}", r.body);
        assert_eq!(i.get("/api/info").json()["roots"], roots, "{era}");
        let call = i.rpc(
            "tools/call",
            json!({ "name": "test_input_required_result_list_roots", "arguments": {} }),
        );
        let text = call["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{era}: {call}"));
        assert_eq!(
            text, "Client roots: file:///work/a, file:///work/b",
            "{era}"
        );
        // Kept across a reconnect in the other revision.
        let other = if era == "legacy" { "modern" } else { "legacy" };
        assert_eq!(i.post("/api/connect", &json!({ "era": other })).status, 200);
        let call = i.rpc(
            "tools/call",
            json!({ "name": "test_input_required_result_list_roots", "arguments": {} }),
        );
        assert!(
            call["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .ends_with("file:///work/b"),
            "{call}"
        );
    }
}

#[test]
fn resources_are_subscribed_and_unsubscribed_in_both_revisions() {
    for era in ["legacy", "modern"] {
        let i = inspect(era);
        let uri = json!({ "uri": "test://watched-resource" });
        let r = i.post("/api/subscribe", &uri);
        assert_eq!(r.status, 200, "{era}: {}", r.body);
        // Twice is once.
        assert_eq!(i.post("/api/subscribe", &uri).status, 200, "{era}");
        assert_eq!(
            i.get("/api/info").json()["subscriptions"],
            json!(["test://watched-resource"]),
            "{era}"
        );
        assert_eq!(
            i.post("/api/subscribe", &json!({ "uri": "" })).status,
            400,
            "{era}"
        );
        assert_eq!(i.post("/api/unsubscribe", &uri).status, 204, "{era}");
        assert_eq!(i.post("/api/unsubscribe", &uri).status, 404, "{era}");
        assert_eq!(
            i.get("/api/info").json()["subscriptions"],
            json!([]),
            "{era}"
        );
        let kinds: Vec<Value> = i.trace().into_iter().map(|e| e["kind"].clone()).collect();
        assert!(
            kinds.contains(&json!("subscribe")) && kinds.contains(&json!("unsubscribe")),
            "{era}: {kinds:?}"
        );
        // A subscription ends with its connection: none after switching revision.
        assert_eq!(i.post("/api/subscribe", &uri).status, 200, "{era}");
        assert_eq!(
            i.post("/api/connect", &json!({ "era": "auto" })).status,
            200,
            "{era}"
        );
        assert_eq!(
            i.get("/api/info").json()["subscriptions"],
            json!([]),
            "{era}"
        );
    }
}
