//! Server Cards (experimental, SEP-2127) over real HTTP: `duomcp serve --card` in each
//! revision's configuration, its ETag/304, CORS and refusals, the card following a tool added
//! at run time, two tenants, and `duomcp card` against it and against hostile endpoints.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::transport::http::card::{check_card, check_catalog, CARD_SCHEMA};
use duomcp_testkit::process::spawn_announced;
use serde_json::Value;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");
const NAME: &str = "io.github.duomcp/reference";

/// A `duomcp serve --http 127.0.0.1:0 ARGS` child (killed when dropped) and its endpoint URL.
struct Served {
    _child: Child,
    url: String,
    addr: String,
}

async fn serve(args: &[&str]) -> Served {
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--http", "127.0.0.1:0"]).args(args);
    let (child, urls) = spawn_announced(
        &mut cmd,
        &["serving the reference server at"],
        Duration::from_secs(60),
    )
    .await;
    let url = urls[0].clone();
    let addr = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    Served {
        _child: child,
        url,
        addr,
    }
}

/// One HTTP/1.1 exchange: status, headers (lower-case names), body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }
}

async fn request(addr: &str, method: &str, path: &str, headers: &[(&str, &str)]) -> Answer {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("Content-Length: 0\r\n\r\n");
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tcp.read_to_end(&mut raw).await.unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Answer {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    }
}

async fn get(addr: &str, path: &str, headers: &[(&str, &str)]) -> Answer {
    request(addr, "GET", path, headers).await
}

async fn run(args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("run duomcp")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_card_names_the_server_and_the_revisions_each_configuration_speaks() {
    let cases: [(&str, &[&str]); 3] = [
        ("both", &["2026-07-28", "2025-11-25"]),
        ("legacy", &["2025-11-25"]),
        ("modern", &["2026-07-28"]),
    ];
    for (era, speaks) in cases {
        let s = serve(&["--era", era, "--card", NAME]).await;
        let a = get(&s.addr, "/mcp/server-card", &[]).await;
        assert_eq!(a.status, 200, "{era}");
        assert_eq!(
            a.header("content-type"),
            Some("application/mcp-server-card+json")
        );
        let card = a.json();
        assert!(
            check_card(&card).is_empty(),
            "{era}: {:?}",
            check_card(&card)
        );
        assert_eq!(card["$schema"], CARD_SCHEMA);
        assert_eq!(card["name"], NAME);
        assert_eq!(card["version"], env!("CARGO_PKG_VERSION"));
        let remote = &card["remotes"][0];
        assert_eq!(remote["type"], "streamable-http");
        assert_eq!(remote["url"], s.url.as_str());
        let versions: Vec<&str> = remote["supportedProtocolVersions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        for v in speaks {
            assert!(versions.contains(v), "{era}: {versions:?}");
        }
        let other = if era == "legacy" {
            Some("2026-07-28")
        } else if era == "modern" {
            Some("2025-11-25")
        } else {
            None
        };
        if let Some(other) = other {
            assert!(!versions.contains(&other), "{era}: {versions:?}");
        }
        // Nothing published that was not asked for: no tools, no capabilities, no
        // instructions.
        assert!(card.get("_meta").is_none(), "{card}");
        assert!(card.get("capabilities").is_none());
        assert!(card.get("instructions").is_none());
        // The catalog lists it.
        let c = get(&s.addr, "/.well-known/ai-catalog.json", &[]).await;
        assert_eq!(c.status, 200);
        assert_eq!(
            c.header("content-type"),
            Some("application/ai-catalog+json")
        );
        let catalog = c.json();
        assert!(check_catalog(&catalog).is_empty());
        assert_eq!(
            catalog["entries"][0]["url"],
            format!("{}/server-card", s.url)
        );
        assert_eq!(
            catalog["entries"][0]["type"],
            "application/mcp-server-card+json"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_card_unless_the_operator_asks() {
    let s = serve(&[]).await;
    assert_eq!(get(&s.addr, "/mcp/server-card", &[]).await.status, 404);
    assert_eq!(
        get(&s.addr, "/.well-known/ai-catalog.json", &[])
            .await
            .status,
        404
    );
    let o = run(&["card", &s.url]).await;
    assert_eq!(o.status.code(), Some(1), "{o:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etag_304_cors_and_refusals() {
    let s = serve(&["--card", NAME]).await;
    let a = get(&s.addr, "/mcp/server-card", &[]).await;
    let tag = a.header("etag").expect("an ETag").to_owned();
    assert!(tag.starts_with('"') && tag.ends_with('"'), "strong: {tag}");
    assert_eq!(a.header("cache-control"), Some("public, max-age=3600"));
    assert_eq!(a.header("access-control-allow-origin"), Some("*"));
    assert_eq!(a.header("access-control-expose-headers"), Some("ETag"));
    // The same bytes twice: the same tag.
    let again = get(&s.addr, "/mcp/server-card", &[]).await;
    assert_eq!(again.header("etag"), Some(tag.as_str()));
    assert_eq!(again.body, a.body);
    // 304 on the tag, in a list, weak, or `*`; 200 on another.
    let weak = format!("W/{tag}");
    let list = format!("\"nope\", {tag}");
    for inm in [tag.as_str(), list.as_str(), weak.as_str(), "*"] {
        let r = get(&s.addr, "/mcp/server-card", &[("If-None-Match", inm)]).await;
        assert_eq!(r.status, 304, "{inm}");
        assert!(r.body.is_empty());
        assert_eq!(r.header("etag"), Some(tag.as_str()));
        assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    }
    let r = get(
        &s.addr,
        "/mcp/server-card",
        &[("If-None-Match", "\"nope\"")],
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, a.body);
    // A huge If-None-Match: 400, not a scan of it.
    let huge = format!("\"{}\"", "a".repeat(10_000));
    let r = get(&s.addr, "/mcp/server-card", &[("If-None-Match", &huge)]).await;
    assert_eq!(r.status, 400);
    // CORS preflight from any origin; a GET from another origin is served (the MCP endpoint
    // still refuses that origin).
    let r = request(
        &s.addr,
        "OPTIONS",
        "/mcp/server-card",
        &[
            ("Origin", "https://elsewhere.example"),
            ("Access-Control-Request-Method", "GET"),
            ("Access-Control-Request-Headers", "if-none-match"),
        ],
    )
    .await;
    assert_eq!(r.status, 204);
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    assert!(r
        .header("access-control-allow-methods")
        .unwrap()
        .contains("GET"));
    assert!(r
        .header("access-control-allow-headers")
        .unwrap()
        .contains("If-None-Match"));
    let r = get(
        &s.addr,
        "/mcp/server-card",
        &[("Origin", "https://elsewhere.example")],
    )
    .await;
    assert_eq!(r.status, 200);
    let r = request(
        &s.addr,
        "DELETE",
        "/mcp",
        &[("Origin", "https://elsewhere.example")],
    )
    .await;
    assert_eq!(r.status, 403, "the endpoint's Origin check is unchanged");
    // Other methods: 405 with Allow; an Accept the card cannot meet: 406; a Host not allowed:
    // 403.
    let r = request(&s.addr, "POST", "/mcp/server-card", &[]).await;
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET, HEAD, OPTIONS"));
    let r = get(&s.addr, "/mcp/server-card", &[("Accept", "text/html")]).await;
    assert_eq!(r.status, 406);
    for accept in [
        "application/mcp-server-card+json",
        "*/*",
        "application/json",
    ] {
        let r = get(&s.addr, "/mcp/server-card", &[("Accept", accept)]).await;
        assert_eq!(r.status, 200, "{accept}");
    }
    let mut tcp = tokio::net::TcpStream::connect(&s.addr).await.unwrap();
    tcp.write_all(
        b"GET /mcp/server-card HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    let mut raw = String::new();
    tcp.read_to_string(&mut raw).await.unwrap();
    assert!(raw.starts_with("HTTP/1.1 403"), "{raw}");
    // HEAD: the headers, no body.
    let r = request(&s.addr, "HEAD", "/mcp/server-card", &[]).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("etag"), Some(tag.as_str()));
    assert!(r.body.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_card_and_its_etag_follow_a_tool_added_at_run_time() {
    let s = serve(&["--card", NAME, "--card-tools"]).await;
    let before = get(&s.addr, "/mcp/server-card", &[]).await;
    let tag = before.header("etag").unwrap().to_owned();
    let names = |card: &Value| -> Vec<String> {
        card["_meta"]["dev.duomcp/tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let old = names(&before.json());
    assert!(old.iter().any(|n| n == "test_simple_text"), "{old:?}");
    // The reference server's test_trigger_tool_change adds a tool.
    for era in ["legacy", "modern"] {
        let o = run(&[
            "call",
            "test_trigger_tool_change",
            &s.url,
            "--era",
            era,
            "--json",
        ])
        .await;
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let after = get(&s.addr, "/mcp/server-card", &[("If-None-Match", &tag)]).await;
    assert_eq!(after.status, 200, "the old tag no longer matches");
    assert_ne!(after.header("etag"), Some(tag.as_str()));
    let new = names(&after.json());
    assert!(new.len() > old.len(), "{old:?} -> {new:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tenants_two_cards() {
    // Two servers with different definitions (name, revisions, tools listed or not).
    let a = serve(&["--card", "com.example/tenant-a", "--era", "legacy"]).await;
    let b = serve(&["--card", "org.example/tenant-b", "--card-tools"]).await;
    let ca = get(&a.addr, "/mcp/server-card", &[]).await;
    let cb = get(&b.addr, "/mcp/server-card", &[]).await;
    assert_ne!(ca.header("etag"), cb.header("etag"));
    assert_eq!(ca.json()["name"], "com.example/tenant-a");
    assert_eq!(cb.json()["name"], "org.example/tenant-b");
    assert!(ca.json().get("_meta").is_none());
    assert!(cb.json()["_meta"]["dev.duomcp/tools"].is_array());
    let ia = get(&a.addr, "/.well-known/ai-catalog.json", &[])
        .await
        .json();
    assert_eq!(
        ia["entries"][0]["identifier"],
        "urn:air:example.com:mcp:tenant-a"
    );

    // Two tenants in one application: one catalog lists both cards.
    use duomcp::server::Server;
    use duomcp::transport::http::{
        card::{ai_catalog_router, ServerCardConfig},
        HttpConfig, StreamableHttp,
    };
    let tenant = |path: &str, name: &str, version: &str| {
        let mut config = HttpConfig::default();
        config.path = path.into();
        config.server_card = Some(ServerCardConfig::new(name).unwrap().catalog(false));
        let server = Server::builder().name(name).version(version).build();
        StreamableHttp::with_config(server, config)
    };
    let x = tenant("/x/mcp", "com.example/x", "1.0.0");
    let y = tenant("/y/mcp", "com.example/y", "2.0.0");
    let app = x
        .router()
        .merge(y.router())
        .merge(ai_catalog_router(&[x.clone(), y.clone()]));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(duomcp::transport::http::serve(listener, app));
    let cx = get(&addr, "/x/mcp/server-card", &[]).await.json();
    let cy = get(&addr, "/y/mcp/server-card", &[]).await.json();
    assert_eq!(
        (cx["name"].as_str(), cx["version"].as_str()),
        (Some("com.example/x"), Some("1.0.0"))
    );
    assert_eq!(
        (cy["name"].as_str(), cy["version"].as_str()),
        (Some("com.example/y"), Some("2.0.0"))
    );
    assert_eq!(cx["remotes"][0]["url"], format!("http://{addr}/x/mcp"));
    let catalog = get(&addr, "/.well-known/ai-catalog.json", &[]).await.json();
    let urls: Vec<&str> = catalog["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["url"].as_str().unwrap())
        .collect();
    assert_eq!(
        urls,
        [
            format!("http://{addr}/x/mcp/server-card"),
            format!("http://{addr}/y/mcp/server-card")
        ]
    );
    // And `duomcp card` on that catalog checks both.
    let o = run(&[
        "card",
        &format!("http://{addr}/.well-known/ai-catalog.json"),
        "--json",
    ])
    .await;
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["cards"].as_array().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duomcp_card_against_duomcp_serve() {
    let s = serve(&["--card", NAME]).await;
    // From the endpoint, from the card's URL: the same card, printed as fetched.
    let served = get(&s.addr, "/mcp/server-card", &[]).await.json();
    for url in [s.url.clone(), format!("{}/server-card", s.url)] {
        let o = run(&["card", &url, "--json"]).await;
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v, served);
    }
    let o = run(&["card", &s.url]).await;
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains(NAME), "{text}");
    assert!(
        text.contains("2026-07-28") && text.contains("2025-11-25"),
        "{text}"
    );
    // The catalog.
    let o = run(&[
        "card",
        &format!("http://{}/.well-known/ai-catalog.json", s.addr),
    ])
    .await;
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("1 server card"));
}

/// A hostile server: every connection gets `response` (then the connection closes).
async fn hostile(response: Vec<u8>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let response = response.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = tcp.read(&mut buf).await;
                let _ = tcp.write_all(&response).await;
                let _ = tcp.shutdown().await;
            });
        }
    });
    addr
}

fn http_response(content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut r =
        format!("HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nConnection: close\r\n\r\n")
            .into_bytes();
    r.extend_from_slice(body);
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duomcp_card_against_hostile_endpoints() {
    let valid = br#"{"$schema":"https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json","name":"com.example/x","version":"1.0.0","description":"A card"}"#;
    let big = {
        // 2 MiB of valid-looking JSON, no Content-Length: the client must stop reading.
        let mut b = br#"{"$schema":"https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json","name":"com.example/x","version":"1.0.0","description":"A card","_meta":{"pad":""#.to_vec();
        b.extend(std::iter::repeat_n(b'a', 2 * 1024 * 1024));
        b.extend_from_slice(b"\"}}");
        b
    };
    let cases: Vec<(&str, Vec<u8>, i32, &str)> = vec![
        ("valid", http_response("application/mcp-server-card+json", valid), 0, ""),
        ("html", http_response("text/html", valid), 3, "content type"),
        ("not json", http_response("application/mcp-server-card+json", b"{not json"), 3, "not JSON"),
        (
            "no name",
            http_response(
                "application/mcp-server-card+json",
                br#"{"$schema":"https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json","version":"1","description":"d"}"#,
            ),
            3,
            "`name` is missing",
        ),
        ("oversized", http_response("application/mcp-server-card+json", &big), 3, "over 1048576 bytes"),
        ("404", b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(), 1, "404"),
    ];
    for (what, response, code, says) in cases {
        let addr = hostile(response).await;
        let o = run(&["card", &format!("http://{addr}/mcp")]).await;
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{what}: {stderr}");
        assert!(stderr.contains(says), "{what}: {stderr}");
    }
    // Nothing listening: could not fetch.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let o = run(&["card", &format!("http://127.0.0.1:{port}/mcp")]).await;
    assert_eq!(o.status.code(), Some(1));
    // --json: the error as JSON on stdout.
    let addr = hostile(http_response("text/html", valid)).await;
    let o = run(&["card", &format!("http://{addr}/mcp"), "--json"]).await;
    assert_eq!(o.status.code(), Some(3));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("content type"));
    // Not a URL: usage-level failure, never a panic.
    let o = run(&["card", "not a url"]).await;
    assert_eq!(o.status.code(), Some(1));
}
