//! Any extension, declared (SEP-2133): `ServerBuilder::extension` and `duomcp serve --extension`
//! on the server, `ClientBuilder::extension` on the client, each side's settings read back
//! unchanged by the other, in both revisions (2025-11-25 at `initialize`, 2026-07-28 in
//! `server/discover` and every request's `_meta`), over Streamable HTTP and stdio, with two
//! clients declaring different extensions to one server at once. The fixture is the one of the
//! conformance suite's `server-legacy-extensions` / `legacy-extensions` scenarios.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::client::{Client, EraChoice};
use duomcp::schema::JsonObject;
use duomcp::server::{BuildError, Context, Server};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");

fn object(v: Value) -> JsonObject {
    v.as_object().cloned().unwrap()
}

/// The server's declarations of the conformance fixture.
fn server_fixture() -> Value {
    json!({
        "io.modelcontextprotocol/ui": {},
        "com.example/conformance": { "nested": { "enabled": true, "limit": 3 }, "values": [null, "b", 4] },
        "com.example/empty": {}
    })
}

/// The client's declarations of the conformance fixture.
fn client_fixture() -> Value {
    json!({
        "io.modelcontextprotocol/ui": { "mimeTypes": ["text/html;profile=mcp-app"] },
        "com.example/conformance": { "nested": { "enabled": false, "limit": 0 }, "values": ["a", 2, null] },
        "com.example/empty": {}
    })
}

/// `duomcp serve --http 127.0.0.1:0` with the fixture's extensions; its URL, and the child.
struct Served {
    child: std::process::Child,
    url: String,
    drain: Option<std::thread::JoinHandle<()>>,
}

impl Served {
    fn start(extra: &[&str]) -> Served {
        let conformance = r#"com.example/conformance={"nested":{"enabled":true,"limit":3},"values":[null,"b",4]}"#;
        let mut child = Command::new(BIN)
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(["--extension", "io.modelcontextprotocol/ui"])
            .args(["--extension", conformance])
            .args(["--extension", "com.example/empty"])
            .args(extra)
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
        let drain = std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = stderr.read_to_string(&mut rest);
        });
        Served {
            child,
            url,
            drain: Some(drain),
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(d) = self.drain.take() {
            let _ = d.join();
        }
    }
}

// ANCHOR: client
fn declaring(era: EraChoice, extensions: &Value) -> duomcp::client::ClientBuilder {
    let mut b = Client::builder().era(era);
    for (id, settings) in object(extensions.clone()) {
        b = b.extension(id, object(settings));
    }
    b
}
// ANCHOR_END: client

/// What the reference server's diagnostic tool says the client declared.
async fn reported(client: &Client) -> Value {
    let r = client
        .call_tool("test_legacy_extension_capabilities", json!({}))
        .await
        .unwrap();
    assert!(!r.is_error(), "{:?}", r.content);
    let text = r.content[0].as_text().unwrap().to_owned();
    serde_json::from_str::<Value>(&text).unwrap()["extensions"].clone()
}

/// Every declared extension is in `seen` with exactly its settings.
fn assert_preserved(seen: &Value, declared: &Value, what: &str) {
    for (id, settings) in declared.as_object().unwrap() {
        assert_eq!(
            &seen[id], settings,
            "{what}: {id} lost or altered in {seen}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_extensions_cross_both_ways_in_both_revisions_over_http() {
    let served = Served::start(&[]);
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let client = declaring(era, &client_fixture())
            .connect_http(&served.url)
            .await
            .unwrap();
        let server_side = serde_json::to_value(client.server_capabilities().extensions).unwrap();
        assert_preserved(
            &server_side,
            &server_fixture(),
            &format!("{era:?} server→client"),
        );
        let client_side = reported(&client).await;
        assert_preserved(
            &client_side,
            &client_fixture(),
            &format!("{era:?} client→server"),
        );
        client.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_declaring_different_extensions_each_see_their_own() {
    let served = Served::start(&[]);
    let a_decl = json!({ "com.tenant-a/feature": { "level": 1 } });
    let b_decl = json!({ "com.tenant-b/feature": { "level": 2 }, "com.example/empty": {} });
    // One of each revision, connected at once, calls interleaved.
    let a = declaring(EraChoice::Legacy, &a_decl)
        .connect_http(&served.url)
        .await
        .unwrap();
    let b = declaring(EraChoice::Modern, &b_decl)
        .connect_http(&served.url)
        .await
        .unwrap();
    for _ in 0..3 {
        let (ra, rb) = tokio::join!(reported(&a), reported(&b));
        // (A 2026-07-28 client also declares the tasks extension it implements.)
        assert_preserved(&ra, &a_decl, "tenant a");
        assert_preserved(&rb, &b_decl, "tenant b");
        assert!(ra.get("com.tenant-b/feature").is_none(), "a sees b's: {ra}");
        assert!(rb.get("com.tenant-a/feature").is_none(), "b sees a's: {rb}");
    }
    a.close().await.unwrap();
    b.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_2025_handshake_carries_them_in_capabilities_extensions_on_the_wire() {
    let served = Served::start(&[]);
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = served
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let request = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": { "extensions": client_fixture() },
            "clientInfo": { "name": "wire", "version": "1" }
        }
    })
    .to_string();
    let mut tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        request.len()
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    tcp.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let text = response.split_once("\r\n\r\n").unwrap().1;
    let body: Value = match text.lines().find_map(|l| l.strip_prefix("data:")) {
        Some(data) => serde_json::from_str(data.trim()).unwrap(),
        None => serde_json::from_str(text.trim()).unwrap(),
    };
    assert_eq!(body["result"]["protocolVersion"], "2025-11-25");
    let caps = &body["result"]["capabilities"];
    assert_preserved(
        &caps["extensions"],
        &server_fixture(),
        "2025-11-25 initialize",
    );
    assert!(
        caps.get("experimental").is_none(),
        "not mirrored elsewhere: {caps}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_in_both_revisions() {
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let mut cmd = tokio::process::Command::new(BIN);
        cmd.args([
            "serve",
            "--extension",
            r#"com.example/conformance={"k":[1,{"x":null}]}"#,
        ]);
        let client = declaring(era, &client_fixture())
            .connect_stdio(cmd)
            .await
            .unwrap();
        let server_side = serde_json::to_value(client.server_capabilities().extensions).unwrap();
        assert_eq!(
            server_side["com.example/conformance"],
            json!({ "k": [1, { "x": null }] }),
            "{era:?}"
        );
        assert_preserved(
            &reported(&client).await,
            &client_fixture(),
            &format!("{era:?} stdio"),
        );
        client.close().await.unwrap();
    }
}

#[test]
fn a_bad_extension_argument_stops_the_server_with_the_reason() {
    for (arg, says) in [
        ("feature", "is not an extension identifier"),
        ("com.example/x=[1]", "not a JSON object"),
        ("com.example/x={", "not JSON"),
        ("example/x", "reverse domain"),
        ("com.example/", "the name is empty"),
    ] {
        let o = Command::new(BIN)
            .args(["serve", "--http", "127.0.0.1:0", "--extension", arg])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{arg}: served anyway");
        assert!(stderr.contains(says), "{arg}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_builder_refuses_a_bad_id_and_the_applications_settings_win() {
    let refused = Server::builder()
        .extension("not-an-id", JsonObject::new())
        .try_build();
    assert!(
        matches!(&refused, Err(BuildError::InvalidExtension { id, .. }) if id == "not-an-id"),
        "{:?}",
        refused.as_ref().err()
    );
    // The MCP Apps extension duomcp declares as `{}` when a view is registered: the
    // application's settings replace it, and a handler reads what the client declared.
    // ANCHOR: declare
    let server = Server::builder()
        .extension(
            "io.modelcontextprotocol/ui",
            object(json!({ "note": "mine" })),
        )
        .tool("seen", |ctx: Context| async move {
            serde_json::to_string(&ctx.client_capabilities().extensions).unwrap()
        })
        .build();
    // ANCHOR_END: declare
    for era in [EraChoice::Legacy, EraChoice::Modern] {
        let (transport, _serving) = duomcp::transport::memory::pair(server.clone());
        let client = declaring(era, &json!({ "com.example/empty": {} }))
            .connect_transport(transport)
            .await
            .unwrap();
        let caps = client.server_capabilities().extensions.unwrap();
        assert_eq!(
            caps["io.modelcontextprotocol/ui"],
            json!({ "note": "mine" }),
            "{era:?}"
        );
        let r = client.call_tool("seen", json!({})).await.unwrap();
        let text = r.content[0].as_text().unwrap().to_owned();
        let seen = serde_json::from_str::<Value>(&text).unwrap();
        assert_eq!(seen["com.example/empty"], json!({}), "{era:?}: {seen}");
        client.close().await.unwrap();
    }
}
