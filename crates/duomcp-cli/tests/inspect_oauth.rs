//! `duomcp inspect` against an HTTP server that requires OAuth, without a browser: the page's
//! Authorize (`POST /api/authorize`), followed here by a plain HTTP client through an
//! authorization server stand-in that approves at once; then the connect uses the stored
//! tokens, and so does an inspector started later on the URL (what `duomcp login URL` then
//! `duomcp inspect URL` does). An inspector with an empty credentials file is refused with the
//! server's 401, said plainly.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::auth::{ResourceServer, StaticTokens};
use duomcp::server::Principal;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");
const WITHIN: Duration = Duration::from_secs(30);

/// A running `duomcp inspect` with its own config directory, killed on drop.
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

/// `duomcp inspect ARGS…` with `XDG_CONFIG_HOME=config` (where the credentials file lives).
fn inspect(config: &Path, args: &[&str]) -> Inspect {
    let mut child = Command::new(BIN)
        .arg("inspect")
        .args(args)
        .env("XDG_CONFIG_HOME", config)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start duomcp inspect");
    let mut line = String::new();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut line).unwrap();
    let url = line
        .trim()
        .strip_prefix("duomcp inspect: http://127.0.0.1:")
        .unwrap_or_else(|| panic!("first line: {line:?}"));
    let (port, token) = url.split_once("/?token=").unwrap();
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

/// One HTTP/1.1 request to `host` (`127.0.0.1:PORT`) on its own connection.
fn http(
    host: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Reply {
    let mut s = TcpStream::connect(host).unwrap();
    s.set_read_timeout(Some(WITHIN)).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
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

/// `GET` of an absolute `http://` URL (a browser's one step, no redirect followed).
fn get_url(url: &str) -> Reply {
    let u = url::Url::parse(url).unwrap();
    let host = format!("{}:{}", u.host_str().unwrap(), u.port().unwrap());
    let path = match u.query() {
        Some(q) => format!("{}?{q}", u.path()),
        None => u.path().to_owned(),
    };
    http(&host, "GET", &path, &[], None)
}

impl Inspect {
    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
    fn get(&self, path: &str) -> Reply {
        let bearer = format!("Bearer {}", self.token);
        http(
            &self.host(),
            "GET",
            path,
            &[("Authorization", &bearer)],
            None,
        )
    }
    fn post(&self, path: &str, body: &Value) -> Reply {
        let bearer = format!("Bearer {}", self.token);
        let origin = format!("http://{}", self.host());
        http(
            &self.host(),
            "POST",
            path,
            &[("Authorization", &bearer), ("Origin", &origin)],
            Some(&body.to_string()),
        )
    }
    fn tool_names(&self) -> Vec<String> {
        let r = self.post("/api/rpc", &json!({ "method": "tools/list", "params": {} }));
        assert_eq!(r.status, 200, "{}", r.body);
        let v = r.json();
        v["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("no tools: {v}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }
}

/// An empty config directory of its own.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("inspect_oauth")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An authorization server that approves at once (metadata, dynamic registration, an
/// `/authorize` redirecting straight back with a code, `/token` issuing `access-1`), and the
/// reference server behind a resource server accepting only `access-1`; served by a thread of
/// their own until the test ends. Returns the MCP URL.
fn servers() -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let issuer = format!("http://{}", as_listener.local_addr().unwrap());
            let meta = json!({
                "issuer": issuer,
                "authorization_endpoint": format!("{issuer}/authorize"),
                "token_endpoint": format!("{issuer}/token"),
                "registration_endpoint": format!("{issuer}/register"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
            });
            let app = axum::Router::new()
                .route(
                    "/.well-known/oauth-authorization-server",
                    axum::routing::get(move || {
                        let m = meta.clone();
                        async move { axum::Json(m) }
                    }),
                )
                .route(
                    "/register",
                    axum::routing::post(|axum::Json(body): axum::Json<Value>| async move {
                        let mut answer = body;
                        answer["client_id"] = json!("client-1");
                        (axum::http::StatusCode::CREATED, axum::Json(answer))
                    }),
                )
                .route(
                    "/authorize",
                    axum::routing::get(
                        |axum::extract::RawQuery(q): axum::extract::RawQuery| async move {
                            let q = q.unwrap_or_default();
                            let pairs: Vec<(String, String)> =
                                url::form_urlencoded::parse(q.as_bytes())
                                    .into_owned()
                                    .collect();
                            let get = |k: &str| {
                                pairs
                                    .iter()
                                    .find(|(a, _)| a == k)
                                    .map(|(_, v)| v.clone())
                                    .unwrap_or_default()
                            };
                            let mut to = url::Url::parse(&get("redirect_uri")).unwrap();
                            to.query_pairs_mut()
                                .append_pair("code", "code-1")
                                .append_pair("state", &get("state"));
                            axum::response::Redirect::to(to.as_str())
                        },
                    ),
                )
                .route(
                    "/token",
                    axum::routing::post(|| async {
                        axum::Json(json!({
                            "access_token": "access-1",
                            "token_type": "Bearer",
                            "expires_in": 3600,
                            "refresh_token": "refresh-1",
                        }))
                    }),
                );
            tokio::spawn(duomcp::transport::http::serve(as_listener, app));

            let rs_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}/mcp", rs_listener.local_addr().unwrap());
            let rs = ResourceServer::builder(url.clone())
                .authorization_server(issuer)
                .validator(StaticTokens::new().with("access-1", Principal::new("alice")))
                .build()
                .unwrap();
            let app = rs.protect(duomcp_cli::reference::server().http_router());
            tx.send(url).unwrap();
            let _ = duomcp::transport::http::serve(rs_listener, app).await;
        });
    });
    rx.recv().unwrap()
}

/// Waits until `GET /api/authorize` leaves `pending`, and returns what it says.
fn settled(i: &Inspect) -> Value {
    let start = Instant::now();
    loop {
        let r = i.get("/api/authorize");
        assert_eq!(r.status, 200, "{}", r.body);
        let v = r.json();
        if v["state"] != "pending" {
            return v;
        }
        assert!(start.elapsed() < WITHIN, "the flow did not end: {v}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn authorize_in_the_page_then_connect_and_a_later_inspector_uses_the_stored_tokens() {
    let url = servers();
    let config = scratch("authorized");
    let i = inspect(&config, &[]);
    assert_eq!(i.get("/api/authorize").json()["state"], "idle");

    // Without a token, the server's 401 is what the page hears.
    let r = i.post("/api/connect", &json!({ "url": url }));
    assert_eq!(r.status, 502, "{}", r.body);
    let refused = r.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(refused.contains("401"), "{refused}");

    // The guard stands in front of it too.
    let r = http(
        &i.host(),
        "POST",
        "/api/authorize",
        &[],
        Some(&json!({ "url": url }).to_string()),
    );
    assert_eq!(r.status, 401, "{}", r.body);
    let r = i.post("/api/authorize", &json!({ "url": "ftp://example" }));
    assert_eq!(r.status, 400, "{}", r.body);

    let r = i.post("/api/authorize", &json!({ "url": url }));
    assert_eq!(r.status, 200, "{}", r.body);
    let authorization = r.json()["authorizationUrl"].as_str().unwrap().to_owned();
    assert!(authorization.contains("code_challenge="), "{authorization}");
    // One flow at a time.
    let r = i.post("/api/authorize", &json!({ "url": url }));
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(i.get("/api/authorize").json()["state"], "pending");

    // The browser's part: the authorization server redirects to the inspector's loopback
    // callback, which takes the code.
    let r = get_url(&authorization);
    assert!((300..400).contains(&r.status), "{} {}", r.status, r.body);
    let callback = r.header("location").unwrap();
    assert!(callback.starts_with("http://127.0.0.1:"), "{callback}");
    let r = get_url(&callback);
    assert_eq!(r.status, 200, "{}", r.body);

    let state = settled(&i);
    assert_eq!(state["state"], "authorized", "{state}");
    assert_eq!(state["url"], url.as_str());
    let stored = std::fs::read_to_string(config.join("duomcp").join("credentials.json")).unwrap();
    assert!(stored.contains("access-1"), "{stored}");

    let r = i.post("/api/connect", &json!({ "url": url }));
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(i.tool_names().iter().any(|t| t == "test_simple_text"));

    // `duomcp inspect URL` with the same credentials file connects at start.
    let later = inspect(&config, &["--timeout", "20", &url]);
    assert_eq!(later.get("/api/info").json()["connected"], true);
    assert!(later.tool_names().iter().any(|t| t == "test_simple_text"));

    // Another inspector, with no tokens of its own, is refused with the 401.
    let other = inspect(&scratch("anonymous"), &[]);
    let r = other.post("/api/connect", &json!({ "url": url }));
    assert_eq!(r.status, 502, "{}", r.body);
    let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("401"), "{message}");
}

/// The page's Authorize, the browser's part played here; returns the credentials file.
fn authorize_through(i: &Inspect, url: &str, config: &Path) -> Value {
    let r = i.post("/api/authorize", &json!({ "url": url }));
    assert_eq!(r.status, 200, "{}", r.body);
    let authorization = r.json()["authorizationUrl"].as_str().unwrap().to_owned();
    let callback = get_url(&authorization).header("location").unwrap();
    assert_eq!(get_url(&callback).status, 200);
    assert_eq!(settled(i)["state"], "authorized");
    let path = config.join("duomcp").join("credentials.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A config directory whose credentials file is `stored`.
fn config_with(name: &str, stored: &Value) -> PathBuf {
    let dir = scratch(name);
    std::fs::create_dir_all(dir.join("duomcp")).unwrap();
    std::fs::write(
        dir.join("duomcp").join("credentials.json"),
        stored.to_string(),
    )
    .unwrap();
    dir
}

#[test]
fn a_refused_stored_token_is_refreshed_or_reported_without_opening_a_browser() {
    let url = servers();
    let config = scratch("first");
    let i = inspect(&config, &[]);
    let mut stored = authorize_through(&i, &url, &config);
    drop(i);
    assert_eq!(
        stored["tokens"][url.as_str()]["access_token"],
        "access-1",
        "{stored}"
    );
    stored["tokens"][url.as_str()]["access_token"] = json!("revoked");

    // With its refresh token, the library gets a new access token and the connect goes on.
    let refreshable = config_with("refreshable", &stored);
    let i = inspect(&refreshable, &[]);
    let r = i.post("/api/connect", &json!({ "url": url }));
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(i.tool_names().iter().any(|t| t == "test_simple_text"));
    drop(i);

    // Without one, the connect fails at once, saying what to do (no browser, no loopback
    // listener waiting minutes).
    stored["tokens"][url.as_str()]
        .as_object_mut()
        .unwrap()
        .remove("refresh_token");
    let stale = config_with("stale", &stored);
    let i = inspect(&stale, &[]);
    let start = Instant::now();
    let r = i.post("/api/connect", &json!({ "url": url }));
    assert_eq!(r.status, 502, "{}", r.body);
    assert!(start.elapsed() < Duration::from_secs(10));
    let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("Authorize"), "{message}");
    // Authorize then works as for a first login.
    authorize_through(&i, &url, &stale);
    let r = i.post("/api/connect", &json!({ "url": url }));
    assert_eq!(r.status, 200, "{}", r.body);
}

/// Reads server-sent events until `want` returns something (within 30 s).
fn wait_event(events: &mut BufReader<TcpStream>, want: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WITHIN;
    let mut line = String::new();
    loop {
        assert!(Instant::now() < deadline, "no such event within 30 s");
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
    let mut s = TcpStream::connect(i.host()).unwrap();
    s.set_read_timeout(Some(WITHIN)).unwrap();
    write!(
        s,
        "GET /api/events HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\r\n",
        i.host(),
        i.token
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let _ = wait_event(&mut r, |v| v["type"] == "hello");
    r
}

#[test]
fn a_denied_authorization_is_reported_to_the_page_and_frees_the_flow() {
    let url = servers();
    let config = scratch("denied");
    let i = inspect(&config, &[]);
    let mut events = open_events(&i);
    let r = i.post("/api/authorize", &json!({ "url": url }));
    assert_eq!(r.status, 200, "{}", r.body);
    let authorization = url::Url::parse(r.json()["authorizationUrl"].as_str().unwrap()).unwrap();
    let param = |k: &str| {
        authorization
            .query_pairs()
            .find(|(a, _)| a == k)
            .map(|(_, v)| v.into_owned())
            .unwrap()
    };
    // The user says no: the authorization server sends the browser back with an error.
    let mut back = url::Url::parse(&param("redirect_uri")).unwrap();
    back.query_pairs_mut()
        .append_pair("error", "access_denied")
        .append_pair("error_description", "the user said no")
        .append_pair("state", &param("state"));
    assert_eq!(get_url(back.as_str()).status, 200);

    let event = wait_event(&mut events, |v| v["type"] == "authorization");
    assert_eq!(event["state"], "failed", "{event}");
    let message = event["error"]["message"].as_str().unwrap();
    assert!(message.contains("access_denied"), "{message}");
    assert_eq!(settled(&i)["state"], "failed");
    assert!(
        !config.join("duomcp").join("credentials.json").exists()
            || !std::fs::read_to_string(config.join("duomcp").join("credentials.json"))
                .unwrap()
                .contains("access-1")
    );

    // A flow that fails before the authorization URL (nothing listens there) is answered at
    // once, and frees the flow too.
    let nowhere = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/mcp", l.local_addr().unwrap())
    };
    let start = Instant::now();
    let r = i.post("/api/authorize", &json!({ "url": nowhere }));
    assert_eq!(r.status, 502, "{}", r.body);
    assert!(start.elapsed() < WITHIN);
    assert_eq!(settled(&i)["state"], "failed");

    // The next flow may start, and succeeds.
    authorize_through(&i, &url, &config);
    let r = i.post("/api/connect", &json!({ "url": url }));
    assert_eq!(r.status, 200, "{}", r.body);
}
