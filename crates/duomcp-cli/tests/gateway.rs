//! `duomcp gateway` (the `duomcp-gateway` crate) in front of real `duomcp serve` processes:
//! revision bridging both ways, held upstream calls and their timeout, several upstreams as
//! one server (prefixes, URI rewriting, globs, paging), and `duomcp serve --era`. Every message
//! the gateway sends is checked against the official schema of the client's revision.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use duomcp_cli::reference::era::ServeEra;
use duomcp_gateway::{Gateway, GatewayConfig, UpstreamConfig};
use duomcp_testkit::text;
use serde_json::{json, Value};
use std::time::Duration;
use support::{modern, RecordAuth, Wire, LEGACY, MODERN};

/// Every test is bounded: a hang fails it.
const BOUND: Duration = Duration::from_secs(90);

fn serve(era: &str) -> UpstreamConfig {
    UpstreamConfig::stdio(
        "ref",
        env!("CARGO_BIN_EXE_duomcp"),
        vec!["serve".into(), "--era".into(), era.into()],
    )
}

async fn gateway(config: GatewayConfig) -> Gateway {
    Gateway::start(config).await.expect("the gateway starts")
}

/// Serves `app` over Streamable HTTP on a free local port; its address.
async fn serve_http(app: axum::Router) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(duomcp::transport::http::serve(listener, app));
    addr
}

/// The HTTP upstream `remote` at `addr`, its revision taken as `era`.
fn remote(addr: std::net::SocketAddr, era: duomcp_gateway::UpstreamEra) -> UpstreamConfig {
    let mut up = UpstreamConfig::http("remote", format!("http://{addr}/mcp"));
    up.era = era;
    up
}

#[tokio::test]
async fn modern_client_reaches_a_legacy_upstream_and_its_elicitation_becomes_an_input_round() {
    tokio::time::timeout(BOUND, async {
        let gw = gateway(GatewayConfig::single(serve("legacy"))).await;
        let up = gw.upstreams()[0].client().await.unwrap();
        assert_eq!(
            up.protocol_version(),
            LEGACY,
            "the upstream speaks 2025-11-25 only"
        );
        let mut wire = Wire::in_process(gw.server().clone(), MODERN);
        let caps = json!({ "elicitation": {} });

        // server/discover, answered from the upstream's initialize.
        let d = wire
            .ok("server/discover", modern(json!({}), caps.clone()))
            .await;
        assert_eq!(d["serverInfo"]["name"], "duomcp-reference");
        assert!(d["capabilities"]["tools"].is_object());

        let plain = wire
            .ok(
                "tools/call",
                modern(json!({ "name": "test_simple_text" }), caps.clone()),
            )
            .await;
        assert_eq!(plain["resultType"], "complete");
        assert_eq!(text(&plain), "This is a simple text response for testing.");

        // The upstream's elicitation/create request comes back as an input request...
        let call =
            json!({ "name": "test_elicitation", "arguments": { "message": "Who are you?" } });
        let first = wire
            .ok("tools/call", modern(call.clone(), caps.clone()))
            .await;
        assert_eq!(first["resultType"], "input_required", "{first}");
        let requests = first["inputRequests"].as_object().unwrap();
        assert_eq!(requests.len(), 1);
        let (key, request) = requests.iter().next().unwrap();
        assert_eq!(request["method"], "elicitation/create");
        assert_eq!(request["params"]["message"], "Who are you?");
        assert_eq!(gw.holds().len(), 1, "the upstream call is held");

        // ...and the retry's answer is the upstream's response: the call completes.
        let mut retry = call.clone();
        retry["requestState"] = first["requestState"].clone();
        retry["inputResponses"] = json!({ key: {
            "action": "accept", "content": { "username": "ada", "email": "ada@example.com" }
        } });
        let done = wire
            .ok("tools/call", modern(retry.clone(), caps.clone()))
            .await;
        assert_eq!(done["resultType"], "complete", "{done}");
        let t = text(&done);
        assert!(
            t.contains("\"username\":\"ada\"") && t.contains("accept"),
            "{t}"
        );
        assert!(gw.holds().is_empty());

        // The same requestState again: its hold is gone, the client is told so.
        let again = wire.ok("tools/call", modern(retry, caps)).await;
        assert_eq!(again["isError"], true, "{again}");
        assert!(text(&again).contains("call the tool again"), "{again}");
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn legacy_client_reaches_a_modern_upstream_and_gets_real_requests() {
    tokio::time::timeout(BOUND, async {
        let gw = gateway(GatewayConfig::single(serve("modern"))).await;
        let up = gw.upstreams()[0].client().await.unwrap();
        assert_eq!(
            up.protocol_version(),
            MODERN,
            "the upstream speaks 2026-07-28 only"
        );
        let mut wire = Wire::in_process(gw.server().clone(), LEGACY);
        let init = wire
            .initialize(json!({ "sampling": {}, "elicitation": {} }))
            .await;
        assert_eq!(init["serverInfo"]["name"], "duomcp-reference");
        assert_eq!(init["protocolVersion"], LEGACY);
        let pong = wire.ok("ping", json!({})).await;
        assert_eq!(pong, json!({}), "ping is answered by the gateway");

        // The upstream's InputRequiredResult becomes a sampling/createMessage request.
        wire.send(json!({ "jsonrpc": "2.0", "id": 50, "method": "tools/call",
            "params": { "name": "test_sampling", "arguments": { "prompt": "2+2?" } } }))
            .await;
        let result = loop {
            let msg = wire.recv().await;
            if msg["method"] == "sampling/createMessage" {
                assert_eq!(msg["params"]["messages"][0]["content"]["text"], "2+2?");
                wire.send(json!({ "jsonrpc": "2.0", "id": msg["id"], "result": {
                    "role": "assistant", "content": { "type": "text", "text": "four" },
                    "model": "test-model" } }))
                    .await;
            } else if msg["id"] == 50 {
                break msg;
            }
        };
        assert_eq!(text(&result["result"]), "LLM response: four", "{result}");
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn an_abandoned_hold_times_out_and_cancels_the_upstream_call() {
    tokio::time::timeout(BOUND, async {
        let mut config = GatewayConfig::single(serve("legacy"));
        config.gateway.hold_timeout_secs = 1;
        let gw = gateway(config).await;
        let mut wire = Wire::in_process(gw.server().clone(), MODERN);
        let caps = json!({ "elicitation": {} });
        let call = json!({ "name": "test_elicitation", "arguments": { "message": "m" } });
        let first = wire
            .ok("tools/call", modern(call.clone(), caps.clone()))
            .await;
        assert_eq!(first["resultType"], "input_required");
        assert_eq!(gw.holds().len(), 1);
        tokio::time::sleep(Duration::from_millis(1600)).await;
        assert!(gw.holds().is_empty(), "the hold timed out");
        let key = first["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        let mut retry = call;
        retry["requestState"] = first["requestState"].clone();
        retry["inputResponses"] = json!({ key: { "action": "decline" } });
        let late = wire.ok("tools/call", modern(retry, caps.clone())).await;
        assert_eq!(late["isError"], true, "{late}");
        // The upstream session is still usable (the held call was cancelled, not wedged).
        let plain = wire
            .ok(
                "tools/call",
                modern(json!({ "name": "test_simple_text" }), caps),
            )
            .await;
        assert_eq!(text(&plain), "This is a simple text response for testing.");
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn two_upstreams_are_one_server_with_prefixes_globs_uris_and_pages() {
    tokio::time::timeout(BOUND, async {
        let config = GatewayConfig::from_toml(&format!(
            r#"
            [gateway]
            page_size = 7
            [[upstream]]
            name = "a"
            command = "{bin}"
            args = ["serve", "--era", "legacy"]
            [[upstream]]
            name = "b"
            command = "{bin}"
            args = ["serve", "--era", "modern"]
            allow_tools = ["test_*"]
            deny_tools = ["test_elicitation*"]
            "#,
            bin = env!("CARGO_BIN_EXE_duomcp")
        ))
        .unwrap();
        let gw = gateway(config).await;
        let mut wire = Wire::in_process(gw.server().clone(), MODERN);
        let caps = json!({});

        let mut names = Vec::new();
        let mut cursor: Option<Value> = None;
        let mut pages = 0;
        loop {
            let mut params = json!({});
            if let Some(c) = &cursor {
                params["cursor"] = c.clone();
            }
            let page = wire.ok("tools/list", modern(params, caps.clone())).await;
            pages += 1;
            let tools = page["tools"].as_array().unwrap();
            assert!(tools.len() <= 7);
            names.extend(tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
            match page.get("nextCursor") {
                Some(c) => cursor = Some(c.clone()),
                None => break,
            }
        }
        let a: Vec<&str> = names.iter().filter_map(|n| n.strip_prefix("a_")).collect();
        let b: Vec<&str> = names.iter().filter_map(|n| n.strip_prefix("b_")).collect();
        assert_eq!(
            a.len() + b.len(),
            names.len(),
            "every name is prefixed: {names:?}"
        );
        let unique: std::collections::BTreeSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "no name twice across pages");
        assert!(pages > 2, "the list pages across upstreams ({pages} pages)");
        assert!(
            a.contains(&"test_simple_text") && b.contains(&"test_simple_text"),
            "the clash is resolved by prefixes"
        );
        assert!(
            a.contains(&"test_elicitation") && !b.iter().any(|n| n.starts_with("test_elicitation")),
            "deny glob"
        );
        assert!(
            b.iter().all(|n| n.starts_with("test_")),
            "allow glob: {b:?}"
        );
        assert!(names.iter().all(|n| n
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))));

        for name in ["a_test_simple_text", "b_test_simple_text"] {
            let r = wire
                .ok("tools/call", modern(json!({ "name": name }), caps.clone()))
                .await;
            assert_eq!(
                text(&r),
                "This is a simple text response for testing.",
                "{name}"
            );
        }

        // Resource URIs: rewritten in lists, and back on the way upstream and down again.
        let resources = list_all(&mut wire, "resources/list", "resources").await;
        let uris: Vec<&str> = resources
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert!(
            uris.contains(&"a+test://static-text") && uris.contains(&"b+test://static-text"),
            "{uris:?}"
        );
        let read = wire
            .ok(
                "resources/read",
                modern(json!({ "uri": "b+test://static-text" }), caps.clone()),
            )
            .await;
        assert_eq!(read["contents"][0]["uri"], "b+test://static-text");
        assert!(read["contents"][0]["text"].as_str().is_some());
        let templ = wire
            .ok(
                "resources/read",
                modern(json!({ "uri": "a+test://template/42/data" }), caps.clone()),
            )
            .await;
        assert_eq!(
            templ["contents"][0]["uri"], "a+test://template/42/data",
            "{templ}"
        );
        assert!(
            templ["contents"][0]["text"]
                .as_str()
                .unwrap()
                .contains("42"),
            "{templ}"
        );
        let missing = wire
            .err(
                "resources/read",
                modern(json!({ "uri": "test://static-text" }), caps),
            )
            .await;
        assert!(missing["code"].is_i64(), "{missing}");
    })
    .await
    .expect("bounded");
}

/// Every item of a paged list (2026-07-28).
async fn list_all(wire: &mut Wire, method: &str, key: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut params = json!({});
    loop {
        let page = wire.ok(method, modern(params.clone(), json!({}))).await;
        items.extend(page[key].as_array().unwrap().iter().cloned());
        match page.get("nextCursor") {
            Some(c) => params["cursor"] = c.clone(),
            None => return items,
        }
    }
}

#[tokio::test]
async fn serve_era_switch_refuses_the_other_revision() {
    let none: Vec<String> = Vec::new();
    let legacy = duomcp_cli::reference::server_for_era(&none, ServeEra::Legacy).unwrap();
    let mut w = Wire::in_process(legacy, MODERN);
    let e = w
        .err(
            "tools/call",
            modern(json!({ "name": "test_simple_text" }), json!({})),
        )
        .await;
    assert_eq!(e["code"], -32600, "{e}");
    let modern_only = duomcp_cli::reference::server_for_era(&none, ServeEra::Modern).unwrap();
    let mut w = Wire::in_process(modern_only.clone(), LEGACY);
    let e = w
        .err("initialize", json!({ "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }))
        .await;
    assert_eq!(e["code"], -32601, "{e}");
    let mut w = Wire::in_process(modern_only, MODERN);
    let ok = w
        .ok(
            "tools/call",
            modern(json!({ "name": "test_simple_text" }), json!({})),
        )
        .await;
    assert_eq!(text(&ok), "This is a simple text response for testing.");
}

#[tokio::test]
async fn modern_client_and_modern_upstream_relay_the_upstreams_own_input_rounds() {
    tokio::time::timeout(BOUND, async {
        let gw = gateway(GatewayConfig::single(serve("modern"))).await;
        let mut wire = Wire::in_process(gw.server().clone(), MODERN);
        let caps = json!({ "elicitation": {} });
        let call = json!({ "name": "test_streaming_elicitation" });
        let first = wire
            .ok("tools/call", modern(call.clone(), caps.clone()))
            .await;
        assert_eq!(first["resultType"], "input_required", "{first}");
        // The upstream's own key, not one the gateway made up; no call is held.
        assert!(first["inputRequests"]["user_name"].is_object(), "{first}");
        assert!(gw.holds().is_empty());
        let mut retry = call;
        retry["requestState"] = first["requestState"].clone();
        retry["inputResponses"] =
            json!({ "user_name": { "action": "accept", "content": { "name": "Ada" } } });
        let done = wire.ok("tools/call", modern(retry, caps.clone())).await;
        assert_eq!(done["resultType"], "complete", "{done}");
        assert!(text(&done).contains("Accept"), "{done}");
        // Answers brought unasked on a first call (and one nobody asked for) go upstream as
        // they came: the upstream takes its own and completes in one round.
        let mut first = json!({ "name": "test_streaming_elicitation" });
        first["inputResponses"] = json!({
            "user_name": { "action": "accept", "content": { "name": "Ada" } },
            "not_asked": { "action": "decline" }
        });
        let done = wire.ok("tools/call", modern(first, caps)).await;
        assert_eq!(done["resultType"], "complete", "{done}");
        assert!(text(&done).contains("Accept"), "{done}");
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn healthz_reports_every_upstream() {
    tokio::time::timeout(BOUND, async {
        let mut config = GatewayConfig::single(serve("legacy"));
        config.gateway.health_token = Some("operator-secret".into());
        let gw = std::sync::Arc::new(gateway(config).await);
        let app = duomcp_gateway::http::app(gw, duomcp::transport::http::HttpConfig::default());
        let addr = serve_http(app).await.to_string();
        let get = |path: &'static str, auth: &'static str| support::http_get(&addr, path, auth);
        // Without the operator's credential (or with a wrong one): up or down, nothing more.
        for auth in ["", "Authorization: Bearer wrong\r\n"] {
            let response = get("/healthz", auth).await;
            assert!(response.starts_with("HTTP/1.1 200"), "{response}");
            let body = response.split("\r\n\r\n").nth(1).unwrap();
            assert_eq!(body, r#"{"ok":true}"#);
        }
        let response = get("/readyz", "").await;
        assert!(response.starts_with("HTTP/1.1 200") && response.ends_with("ready\n"));
        let response = get("/healthz", "Authorization: Bearer operator-secret\r\n").await;
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        let body: Value = serde_json::from_str(response.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!(body["ok"], true);
        assert_eq!(body["upstreams"][0]["name"], "ref");
        assert_eq!(body["upstreams"][0]["protocol_version"], LEGACY);
        assert!(
            body["upstreams"][0]["tools"].as_u64().unwrap() > 10,
            "{body}"
        );
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn a_dead_stdio_upstream_fails_its_calls_clearly_and_is_restarted() {
    tokio::time::timeout(BOUND, async {
        let dir = support::TempDir::new("gateway-death");
        let mut up = serve("legacy");
        up.args.extend(["--skills".into(), dir.arg().to_owned()]);
        let gw = gateway(GatewayConfig::single(up)).await;
        let mut wire = Wire::in_process(gw.server().clone(), MODERN);
        // A call in flight when the upstream dies...
        wire.send(
            json!({ "jsonrpc": "2.0", "id": 77, "method": "tools/call", "params":
            modern(json!({ "name": "slow_compute", "arguments": { "seconds": 30 } }), json!({})) }),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = support::pids_with(dir.arg());
        // One process: a stdio upstream's sessions are not pooled per capability set.
        assert_eq!(before.len(), 1, "{before:?}");
        for pid in &before {
            let killed = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status()
                .unwrap();
            assert!(killed.success());
        }
        // ...gets a clear error naming the upstream, long before the call would have ended.
        let r = wire.response_to(&json!(77)).await;
        assert_eq!(r["result"]["isError"], true, "{r}");
        let msg = text(&r["result"]);
        assert!(msg.contains("upstream `ref`"), "{msg}");
        // The process is restarted after a back-off (100 ms, a new pid); calls meanwhile fail
        // as clearly, and the first call after it works.
        let t0 = std::time::Instant::now();
        let plain = loop {
            let r = wire
                .ok(
                    "tools/call",
                    modern(json!({ "name": "test_simple_text" }), json!({})),
                )
                .await;
            if r["isError"] != true {
                break r;
            }
            assert!(text(&r).contains("upstream `ref`"), "{r}");
            assert!(t0.elapsed() < Duration::from_secs(20), "not restarted: {r}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(
            text(&plain),
            "This is a simple text response for testing.",
            "{plain}"
        );
        let again = support::pids_with(dir.arg());
        assert!(
            !again.is_empty() && again.iter().all(|p| !before.contains(p)),
            "{before:?} {again:?}"
        );
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn the_oauth_resource_server_fronts_the_gateway_and_the_clients_token_never_goes_upstream() {
    use duomcp::auth::{ResourceServer, StaticTokens};
    use duomcp::server::Principal;
    tokio::time::timeout(BOUND, async {
        // The upstream: the reference server over Streamable HTTP, recording what it receives.
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let recorder = {
            let seen = seen.clone();
            duomcp::server::middleware::layer_fn(move |inner| RecordAuth {
                inner,
                seen: seen.clone(),
            })
        };
        let upstream_app = duomcp_cli::reference::server()
            .http_router()
            .layer(recorder);
        let up_addr = serve_http(upstream_app).await;

        // The gateway, with its own credential for the upstream, behind the resource server.
        let mut upstream = UpstreamConfig::http("remote", format!("http://{up_addr}/mcp"));
        upstream
            .headers
            .insert("Authorization".into(), "Bearer gateway-own-token".into());
        let gw = std::sync::Arc::new(gateway(GatewayConfig::single(upstream)).await);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let rs = ResourceServer::builder(format!("http://{addr}/mcp"))
            .authorization_server("https://auth.example.com")
            .validator(StaticTokens::new().with("client-secret-token", Principal::new("alice")))
            .build()
            .unwrap();
        let app = rs.protect(duomcp_gateway::http::app(
            gw,
            duomcp::transport::http::HttpConfig::default(),
        ));
        tokio::spawn(duomcp::transport::http::serve(listener, app));
        let url = format!("http://{addr}/mcp");

        // Without a token the gateway refuses; with one, the call goes through.
        assert!(duomcp::client::Client::builder()
            .connect_http(&url)
            .await
            .is_err());
        let client = duomcp::client::Client::builder()
            .header("Authorization", "Bearer client-secret-token")
            .connect_http(&url)
            .await
            .unwrap();
        let r = client.call_tool("test_simple_text", ()).await.unwrap();
        assert_eq!(
            serde_json::to_value(&r).unwrap()["content"][0]["text"],
            "This is a simple text response for testing."
        );
        let seen = seen.lock().unwrap().clone();
        assert!(!seen.is_empty());
        assert!(
            seen.iter().all(|a| a == "Bearer gateway-own-token"),
            "the upstream received: {seen:?}"
        );
        assert!(!seen.iter().any(|a| a.contains("client-secret-token")));
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn per_upstream_timeout_and_concurrency_limit_hold() {
    tokio::time::timeout(BOUND, async {
        let config = GatewayConfig::from_toml(&format!(
            r#"
            [[upstream]]
            name = "slow"
            command = "{bin}"
            args = ["serve", "--era", "legacy"]
            timeout_secs = 1
            [[upstream]]
            name = "one"
            command = "{bin}"
            args = ["serve", "--era", "legacy"]
            max_concurrency = 1
            [[upstream]]
            name = "free"
            command = "{bin}"
            args = ["serve", "--era", "legacy"]
            "#,
            bin = env!("CARGO_BIN_EXE_duomcp")
        ))
        .unwrap();
        let gw = gateway(config).await;
        let mut wire = Wire::in_process(gw.server().clone(), MODERN);
        let call = |id: u64, upstream: &str, seconds: u64| {
            json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params":
                modern(json!({ "name": format!("{upstream}_slow_compute"),
                               "arguments": { "seconds": seconds } }), json!({})) })
        };
        // Each upstream started (at first use) before anything is timed: a loaded machine
        // takes a while to start three servers, which is not what the limits are about.
        for (id, upstream) in [(100, "slow"), (101, "one"), (102, "free")] {
            wire.send(call(id, upstream, 0)).await;
            let r = wire.response_to(&json!(id)).await;
            assert_ne!(r["result"]["isError"], true, "{r}");
        }
        // `timeout_secs = 1`: a 5 s call fails after about a second, naming the upstream.
        let t0 = std::time::Instant::now();
        wire.send(call(1, "slow", 5)).await;
        let r = wire.response_to(&json!(1)).await;
        let took = t0.elapsed();
        assert_eq!(r["result"]["isError"], true, "{r}");
        assert!(text(&r["result"]).contains("upstream `slow`"), "{r}");
        assert!(
            took >= Duration::from_millis(900) && took < Duration::from_secs(4),
            "{took:?}"
        );
        // `max_concurrency = 1`: the second of two 1 s calls waits for the first.
        let t0 = std::time::Instant::now();
        wire.send(call(4, "one", 1)).await;
        wire.send(call(5, "one", 1)).await;
        for id in [4, 5] {
            let r = wire.response_to(&json!(id)).await;
            assert_ne!(r["result"]["isError"], true, "{r}");
        }
        let serial = t0.elapsed();
        assert!(serial >= Duration::from_millis(1900), "{serial:?}");
        // The same two calls on an upstream without a limit overlap.
        let t0 = std::time::Instant::now();
        wire.send(call(6, "free", 1)).await;
        wire.send(call(7, "free", 1)).await;
        for id in [6, 7] {
            let r = wire.response_to(&json!(id)).await;
            assert_ne!(r["result"]["isError"], true, "{r}");
        }
        let parallel = t0.elapsed();
        assert!(
            parallel < serial,
            "limited {serial:?}, unlimited {parallel:?}"
        );
    })
    .await
    .expect("bounded");
}

/// The upstream's last log message goes out just before its result: the gateway routes every
/// log message received before the result to the call, then answers (no fixed wait).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_messages_sent_just_before_a_result_reach_the_client_before_it() {
    tokio::time::timeout(BOUND, async {
        const ROUNDS: usize = 20;
        let gw = gateway(GatewayConfig::single(serve("legacy"))).await;
        let logs = |side: &[Value]| -> Vec<String> {
            side.iter()
                .filter(|m| m["method"] == "notifications/message")
                .map(|m| m["params"]["data"].as_str().unwrap_or_default().to_owned())
                .collect()
        };
        let expected = [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ];
        // A 2025-11-25 client, its level set for the session.
        let mut wire = Wire::in_process(gw.server().clone(), LEGACY);
        wire.initialize(json!({})).await;
        wire.ok("logging/setLevel", json!({ "level": "info" }))
            .await;
        for _ in 0..ROUNDS {
            wire.side.clear();
            let r = wire
                .ok("tools/call", json!({ "name": "test_tool_with_logging" }))
                .await;
            assert_ne!(r["isError"], true, "{r}");
            assert_eq!(logs(&wire.side), expected);
        }
        // A 2026-07-28 client, its level in the request's _meta.
        let mut wire = Wire::in_process(gw.server().clone(), MODERN);
        for _ in 0..ROUNDS {
            wire.side.clear();
            let mut params = modern(json!({ "name": "test_tool_with_logging" }), json!({}));
            params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("info");
            let r = wire.ok("tools/call", params).await;
            assert_eq!(r["resultType"], "complete", "{r}");
            assert_eq!(logs(&wire.side), expected);
        }
    })
    .await
    .expect("bounded");
}

/// A 2025-11-25 stdio upstream's log message does not say which call it belongs to: while two
/// clients' calls run at once, it is neither client's to see. Client A's tool logs, then client
/// B's call starts (the newest in flight, where log messages used to go) and A's tool logs twice
/// more: B, which takes every level, must see none of A's messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_messages_during_calls_of_two_clients_at_once_reach_neither_other_client() {
    tokio::time::timeout(BOUND, async {
        let gw = gateway(GatewayConfig::single(serve("legacy"))).await;
        let is_log = |m: &Value| m["method"] == "notifications/message";
        let mut a = Wire::in_process(gw.server().clone(), LEGACY);
        a.initialize(json!({})).await;
        a.ok("logging/setLevel", json!({ "level": "debug" })).await;
        let mut b = Wire::in_process(gw.server().clone(), LEGACY);
        b.initialize(json!({})).await;
        b.ok("logging/setLevel", json!({ "level": "debug" })).await;
        a.send(json!({ "jsonrpc": "2.0", "id": 101, "method": "tools/call",
            "params": { "name": "test_tool_with_logging" } }))
            .await;
        // A's call runs upstream: its first message reached A (no other call was in flight).
        let first = a.recv().await;
        assert!(is_log(&first), "{first}");
        assert_eq!(first["params"]["data"], "Tool execution started", "{first}");
        // B's call (a second, quiet one) runs while A's tool logs twice more, 50 and 100 ms on.
        b.send(json!({ "jsonrpc": "2.0", "id": 201, "method": "tools/call",
            "params": { "name": "slow_compute", "arguments": { "seconds": 1 } } }))
            .await;
        let r = a.response_to(&json!(101)).await;
        assert_ne!(r["result"]["isError"], true, "{r}");
        let r = b.response_to(&json!(201)).await;
        assert_ne!(r["result"]["isError"], true, "{r}");
        let foreign: Vec<&Value> = b.side.iter().filter(|m| is_log(m)).collect();
        assert!(
            foreign.is_empty(),
            "B was sent log messages of A's call: {foreign:?}"
        );
        // What A got is its own tool's (the two sent while B ran belong to no one call).
        for m in a.side.iter().filter(|m| is_log(m)) {
            assert_eq!(m["params"]["logger"], "test_tool_with_logging", "{m}");
        }
        // One call at a time, every message reaches its call again.
        a.side.clear();
        let r = a
            .ok("tools/call", json!({ "name": "test_tool_with_logging" }))
            .await;
        assert_ne!(r["isError"], true, "{r}");
        assert_eq!(
            a.side.iter().filter(|m| is_log(m)).count(),
            3,
            "{:?}",
            a.side
        );
    })
    .await
    .expect("bounded");
}

/// A 2026-07-28 upstream logs only for a request that names a level: a call whose client takes
/// no log messages (here B's, running all along) cannot have sent one, so it does not make A's
/// messages ambiguous. A, which set a level, gets each of its tool's messages; B gets none.
/// (Dropped while B's call was in flight before: the conformance suite's
/// `tools-call-with-logging` failed through the gateway when an earlier scenario's call lingered.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_upstreams_log_messages_reach_the_one_call_that_asked_while_quiet_calls_run() {
    tokio::time::timeout(BOUND, async {
        let gw = gateway(GatewayConfig::single(serve("modern"))).await;
        let is_log = |m: &Value| m["method"] == "notifications/message";
        let mut a = Wire::in_process(gw.server().clone(), LEGACY);
        a.initialize(json!({})).await;
        a.ok("logging/setLevel", json!({ "level": "debug" })).await;
        let mut b = Wire::in_process(gw.server().clone(), LEGACY);
        b.initialize(json!({})).await;
        b.send(json!({ "jsonrpc": "2.0", "id": 201, "method": "tools/call",
            "params": { "name": "slow_compute", "arguments": { "seconds": 2 } } }))
            .await;
        // B's call is upstream before A's starts.
        tokio::time::sleep(Duration::from_millis(200)).await;
        for _ in 0..3 {
            a.side.clear();
            let r = a
                .ok("tools/call", json!({ "name": "test_tool_with_logging" }))
                .await;
            assert_ne!(r["isError"], true, "{r}");
            let got: Vec<&Value> = a.side.iter().filter(|m| is_log(m)).collect();
            assert_eq!(got.len(), 3, "A's tool logs three times: {:?}", a.side);
        }
        let r = b.response_to(&json!(201)).await;
        assert_ne!(r["result"]["isError"], true, "{r}");
        let foreign: Vec<&Value> = b.side.iter().filter(|m| is_log(m)).collect();
        assert!(foreign.is_empty(), "B was sent log messages: {foreign:?}");
    })
    .await
    .expect("bounded");
}

/// Two calls in flight together are answered in the order they finish, and the test's wire
/// finds each response whichever came first. (The two tests above and below "hung" about half
/// of their runs: the second response had come while the helper waited for the first one and
/// was set aside in `Wire::side`, where `response_to` did not look.)
#[tokio::test]
async fn responses_to_calls_in_flight_together_come_in_the_order_they_finish() {
    tokio::time::timeout(BOUND, async {
        let gw = gateway(GatewayConfig::single(serve("legacy"))).await;
        let mut wire = Wire::in_process(gw.server().clone(), MODERN);
        let call = |id: u64, seconds: u64| {
            json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params":
                modern(json!({ "name": "slow_compute", "arguments": { "seconds": seconds } }),
                       json!({})) })
        };
        wire.send(call(1, 1)).await;
        wire.send(call(2, 0)).await;
        let slow = wire.response_to(&json!(1)).await;
        assert_ne!(slow["result"]["isError"], true, "{slow}");
        // The quick call overtook the slow one: its response came first, and waits aside.
        assert!(
            wire.side.iter().any(|m| m["id"] == 2),
            "the 0 s call was not answered before the 1 s one: {:?}",
            wire.side
        );
        let quick = wire.response_to(&json!(2)).await;
        assert_ne!(quick["result"]["isError"], true, "{quick}");
        assert!(
            !wire.side.iter().any(|m| m["id"] == 2),
            "taken from the side once"
        );
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn list_changes_of_several_upstreams_reach_the_client_as_one_list_changed() {
    tokio::time::timeout(BOUND, async {
        // A window wide enough for two debug upstreams on a loaded machine to answer in it
        // (the default 30 ms is not, there: two list_changed, one per upstream).
        let config = GatewayConfig::from_toml(&format!(
            r#"
            [gateway]
            list_change_window_ms = 500
            [[upstream]]
            name = "a"
            command = "{bin}"
            args = ["serve", "--era", "legacy"]
            [[upstream]]
            name = "b"
            command = "{bin}"
            args = ["serve", "--era", "legacy"]
            "#,
            bin = env!("CARGO_BIN_EXE_duomcp")
        ))
        .unwrap();
        let gw = gateway(config).await;
        let mut wire = Wire::in_process(gw.server().clone(), LEGACY);
        wire.initialize(json!({})).await;
        // Both upstreams add a tool at (nearly) the same time.
        for (id, up) in [(1, "a"), (2, "b")] {
            wire.send(json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": format!("{up}_test_trigger_tool_change") } }))
                .await;
        }
        for id in [1, 2] {
            let r = wire.response_to(&json!(id)).await;
            assert!(r.get("result").is_some(), "{r}");
        }
        // Everything the gateway sends in the next second.
        let until = tokio::time::Instant::now() + Duration::from_secs(1);
        let mut seen = std::mem::take(&mut wire.side);
        while let Ok(Some(msg)) = tokio::time::timeout_at(until, wire.recv_opt()).await {
            seen.push(msg);
        }
        let changed = seen
            .iter()
            .filter(|m| m["method"] == "notifications/tools/list_changed")
            .count();
        assert_eq!(changed, 1, "{seen:?}");
        let tools = wire.ok("tools/list", json!({})).await;
        let names: Vec<&str> = tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert!(names.contains(&"a_test_dynamic_tool"), "{names:?}");
        assert!(names.contains(&"b_test_dynamic_tool"), "{names:?}");
    })
    .await
    .expect("bounded");
}

/// Counts the HTTP requests an upstream receives per `Mcp-Method` header.
#[derive(Clone)]
struct CountMethods<S> {
    inner: S,
    seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl<S, B> duomcp::server::middleware::Service<hyper::Request<B>> for CountMethods<S>
where
    S: duomcp::server::middleware::Service<hyper::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: hyper::Request<B>) -> S::Future {
        if let Some(m) = req
            .headers()
            .get("mcp-method")
            .and_then(|v| v.to_str().ok())
        {
            self.seen.lock().unwrap().push(m.to_owned());
        }
        self.inner.call(req)
    }
}

#[tokio::test]
async fn list_results_are_served_from_the_gateway_until_the_upstream_says_they_changed() {
    tokio::time::timeout(BOUND, async {
        // A 2026-07-28 upstream over HTTP (every request names its method in `Mcp-Method`).
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let recorder = {
            let seen = seen.clone();
            duomcp::server::middleware::layer_fn(move |inner| CountMethods {
                inner,
                seen: seen.clone(),
            })
        };
        let app = duomcp_cli::reference::server()
            .http_router()
            .layer(recorder);
        let addr = serve_http(app).await;
        let up = remote(addr, duomcp_gateway::UpstreamEra::Modern);
        let gw = gateway(GatewayConfig::single(up)).await;
        let lists = || {
            seen.lock()
                .unwrap()
                .iter()
                .filter(|m| *m == "tools/list")
                .count()
        };
        let at_start = lists();
        assert!(at_start >= 1, "the gateway lists at start");
        let mut wire = Wire::in_process(gw.server().clone(), MODERN);
        for _ in 0..5 {
            let page = wire.ok("tools/list", modern(json!({}), json!({}))).await;
            assert!(!page["tools"].as_array().unwrap().is_empty());
        }
        assert_eq!(lists(), at_start, "five client lists, no upstream list");
        // The upstream's list changes: one re-list, and the new tool is served.
        wire.ok(
            "tools/call",
            modern(json!({ "name": "test_trigger_tool_change" }), json!({})),
        )
        .await;
        let mut found = false;
        for _ in 0..50 {
            let page = wire.ok("tools/list", modern(json!({}), json!({}))).await;
            if page["tools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["name"] == "test_dynamic_tool")
            {
                found = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            found,
            "the new tool is served after the upstream's list_changed"
        );
        assert_eq!(lists(), at_start + 1, "one re-list for one change");
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn a_modern_upstreams_lists_are_re_read_when_their_ttl_runs_out() {
    tokio::time::timeout(BOUND, async {
        // A 2026-07-28 upstream whose tool list stays fresh 200 ms (re-read at most once a
        // second: duomcp_gateway's MIN_LIST_TTL).
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let recorder = {
            let seen = seen.clone();
            duomcp::server::middleware::layer_fn(move |inner| CountMethods {
                inner,
                seen: seen.clone(),
            })
        };
        let mut config = duomcp::server::ServerConfig::default();
        config.tools_cache.ttl_ms = 200;
        let no_dirs: &[&str] = &[];
        let app = duomcp_cli::reference::builder_with_skill_dirs(no_dirs)
            .unwrap()
            .config(config)
            .build()
            .http_router()
            .layer(recorder);
        let addr = serve_http(app).await;
        let up = remote(addr, duomcp_gateway::UpstreamEra::Modern);
        let gw = gateway(GatewayConfig::single(up)).await;
        let lists = || {
            seen.lock()
                .unwrap()
                .iter()
                .filter(|m| *m == "tools/list")
                .count()
        };
        let at_start = lists();
        assert!(at_start >= 1, "the gateway lists at start");
        // No client asks anything: the gateway re-reads the stale list on its own, about
        // once a second (not every 200 ms).
        let t0 = std::time::Instant::now();
        tokio::time::sleep(Duration::from_millis(2600)).await;
        let relisted = lists() - at_start;
        let took = t0.elapsed().as_secs_f64();
        assert!(relisted >= 1, "not re-read after {took:.1} s");
        assert!(relisted <= 3, "{relisted} re-reads in {took:.1} s");
        // And serves it still.
        let mut wire = Wire::in_process(gw.server().clone(), MODERN);
        let page = wire.ok("tools/list", modern(json!({}), json!({}))).await;
        assert!(!page["tools"].as_array().unwrap().is_empty());
    })
    .await
    .expect("bounded");
}

/// Makes an upstream forget its sessions: once `forget` is set, a request naming a session
/// seen before gets an unknown session id instead, which the real server answers with 404.
#[derive(Clone)]
struct Forgetful<S> {
    inner: S,
    sessions: std::sync::Arc<std::sync::Mutex<(Vec<String>, Vec<String>)>>,
}

impl<S, B> duomcp::server::middleware::Service<hyper::Request<B>> for Forgetful<S>
where
    S: duomcp::server::middleware::Service<hyper::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: hyper::Request<B>) -> S::Future {
        if let Some(id) = req
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
        {
            let mut s = self.sessions.lock().unwrap();
            if s.1.contains(&id) {
                req.headers_mut().insert(
                    "mcp-session-id",
                    hyper::header::HeaderValue::from_static("forgotten-session"),
                );
            } else if !s.0.contains(&id) {
                s.0.push(id);
            }
        }
        self.inner.call(req)
    }
}

#[tokio::test]
async fn an_http_upstream_that_forgets_its_session_is_re_initialized_transparently() {
    tokio::time::timeout(BOUND, async {
        // A 2025-11-25 upstream over Streamable HTTP (sessions), which will forget them.
        let sessions = std::sync::Arc::new(std::sync::Mutex::new((Vec::new(), Vec::new())));
        let layer = {
            let sessions = sessions.clone();
            duomcp::server::middleware::layer_fn(move |inner| Forgetful {
                inner,
                sessions: sessions.clone(),
            })
        };
        let app = duomcp_cli::reference::server().http_router().layer(layer);
        let addr = serve_http(app).await;
        let up = remote(addr, duomcp_gateway::UpstreamEra::Legacy);
        let gw = gateway(GatewayConfig::single(up)).await;
        let mut wire = Wire::in_process(gw.server().clone(), MODERN);
        let call = json!({ "name": "test_simple_text" });
        let first = wire.ok("tools/call", modern(call.clone(), json!({}))).await;
        assert_eq!(text(&first), "This is a simple text response for testing.");
        let before = {
            let mut s = sessions.lock().unwrap();
            assert!(!s.0.is_empty(), "the gateway has an upstream session");
            s.1 = std::mem::take(&mut s.0);
            s.1.clone()
        };
        // The upstream no longer knows the session (404): the client's call still succeeds.
        let again = wire.ok("tools/call", modern(call, json!({}))).await;
        assert_eq!(
            text(&again),
            "This is a simple text response for testing.",
            "{again}"
        );
        let after = sessions.lock().unwrap().0.clone();
        assert!(
            !after.is_empty() && after.iter().all(|id| !before.contains(id)),
            "a new upstream session: {before:?} then {after:?}"
        );
    })
    .await
    .expect("bounded");
}

/// Signals when dropped: a handler's future is dropped, or returns, once its call is cancelled
/// (a 2026-07-28 HTTP server drops it when the client closes the request's stream).
struct SignalOnDrop(std::sync::Arc<tokio::sync::Notify>);

impl Drop for SignalOnDrop {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

/// An upstream over HTTP (speaking `era`) whose tool `wait` runs until it is cancelled, and the
/// signal it gives then.
async fn waiting_upstream(
    era: duomcp_gateway::UpstreamEra,
) -> (UpstreamConfig, std::sync::Arc<tokio::sync::Notify>) {
    let cancelled = std::sync::Arc::new(tokio::sync::Notify::new());
    let server = {
        let cancelled = cancelled.clone();
        duomcp::server::Server::builder()
            .name("waiting")
            .tool("wait", move |ctx: duomcp::server::Context| {
                let cancelled = cancelled.clone();
                async move {
                    let _signal = SignalOnDrop(cancelled);
                    ctx.cancelled().await;
                    "cancelled".to_owned()
                }
            })
            .build()
    };
    let addr = serve_http(server.http_router()).await;
    (remote(addr, era), cancelled)
}

#[tokio::test]
async fn a_client_cancelling_a_call_cancels_the_upstream_call_in_both_revisions() {
    tokio::time::timeout(BOUND, async {
        // Both sides one revision: the upstream call runs in the gateway's handler (no task of
        // its own); cancelling the client's call must still reach the upstream.
        for (era, revision) in [
            (duomcp_gateway::UpstreamEra::Modern, MODERN),
            (duomcp_gateway::UpstreamEra::Legacy, LEGACY),
        ] {
            let (up, cancelled) = waiting_upstream(era).await;
            let gw = gateway(GatewayConfig::single(up)).await;
            let mut wire = Wire::in_process(gw.server().clone(), revision);
            let params = if revision == LEGACY {
                wire.initialize(json!({})).await;
                json!({ "name": "wait" })
            } else {
                modern(json!({ "name": "wait" }), json!({}))
            };
            wire.send(
                json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params }),
            )
            .await;
            // Not cancelled before the client says so.
            let early =
                tokio::time::timeout(Duration::from_millis(300), cancelled.notified()).await;
            assert!(
                early.is_err(),
                "{revision}: the upstream call runs until cancelled"
            );
            wire.send(
                json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": { "requestId": 7, "reason": "test" } }),
            )
            .await;
            tokio::time::timeout(Duration::from_secs(10), cancelled.notified())
                .await
                .unwrap_or_else(|_| panic!("{revision}: the upstream call is cancelled"));
        }
    })
    .await
    .expect("bounded");
}

/// A 2026-07-28 upstream's task asks a second question while its first still waits for an
/// answer (its handler waits on both): the gateway's task shows its client both at once, as
/// the upstream's does, and the client answers them together. (The gateway asked the second
/// only once the first was answered: a client waiting to see both, as the conformance suite's
/// `tasks-mrtr-input` does, saw one of two.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relayed_tasks_question_asked_while_another_waits_reaches_the_client_at_once() {
    use duomcp::schema::{ElicitRequestFormParams, ElicitRequestParams};
    use duomcp::server::{Context, HandlerError, Server, ToolSpec};
    tokio::time::timeout(BOUND, async {
        let ask = |message: &str| {
            let schema = json!({ "type": "object", "properties": { "ok": { "type": "boolean" } } });
            ElicitRequestParams::Form(ElicitRequestFormParams::new(
                message.to_owned(),
                serde_json::from_value(schema).unwrap(),
            ))
        };
        let upstream = Server::builder()
            .tasks(
                duomcp::server::tasks::TaskConfig::default()
                    .poll_interval(Duration::from_millis(50)),
            )
            .tool(
                ToolSpec::new("two_questions").long_running(),
                move |ctx: Context| async move {
                    let (a, b) = tokio::join!(ctx.elicit("first", ask("first")), async {
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        ctx.elicit("second", ask("second")).await
                    });
                    let (a, b) = (a?, b?);
                    Ok::<_, HandlerError>(format!(
                        "{} {}",
                        a.content.is_some(),
                        b.content.is_some()
                    ))
                },
            )
            .build();
        let addr = serve_http(upstream.http_router()).await;
        let gw = gateway(GatewayConfig::single(remote(
            addr,
            duomcp_gateway::UpstreamEra::Modern,
        )))
        .await;
        let mut wire = Wire::in_process(gw.server().clone(), MODERN);
        let caps = json!({ "elicitation": {},
                           "extensions": { "io.modelcontextprotocol/tasks": {} } });
        let r = wire
            .ok(
                "tools/call",
                modern(json!({ "name": "two_questions" }), caps.clone()),
            )
            .await;
        assert_eq!(r["resultType"], "task", "{r}");
        let id = r["taskId"].as_str().unwrap().to_owned();
        let get = |id: &str| modern(json!({ "taskId": id }), caps.clone());
        // The client answers nothing before it has seen both questions.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        let keys = loop {
            let t = wire.ok("tasks/get", get(&id)).await;
            let keys: Vec<String> = t["inputRequests"]
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            if keys.len() >= 2 || tokio::time::Instant::now() > deadline {
                break keys;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(
            keys.len(),
            2,
            "both questions, before either is answered: {keys:?}"
        );
        let answers: serde_json::Map<String, Value> = keys
            .iter()
            .map(|k| {
                (
                    k.clone(),
                    json!({ "action": "accept", "content": { "ok": true } }),
                )
            })
            .collect();
        let mut update = get(&id);
        update["inputResponses"] = Value::Object(answers);
        wire.ok("tasks/update", update).await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let done = loop {
            let t = wire.ok("tasks/get", get(&id)).await;
            if t["status"] == "completed" || tokio::time::Instant::now() > deadline {
                break t;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(text(&done["result"]), "true true", "{done}");
    })
    .await
    .expect("bounded");
}
