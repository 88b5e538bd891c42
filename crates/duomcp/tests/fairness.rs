//! Fairness between callers over Streamable HTTP (`HttpConfig::principal_rate`, `peer_rate`,
//! `max_requests_per_principal`, `max_principals`, `limit_loopback_peers`): two principals
//! authenticated with real JWTs behind `AuthLayer`, one flooding, the other served.
#![cfg(feature = "http-server")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod auth_support;

use auth_support::*;
use duomcp::auth::{JwtValidator, ResourceServer};
use duomcp::server::Server;
use duomcp::transport::http::{HttpConfig, Rate, StreamableHttp};
use serde_json::{json, Value};
use std::time::Duration;

struct Env {
    mcp: String,
    issuer: String,
    key: SigningKey,
    http: reqwest::Client,
    endpoint: StreamableHttp,
}

fn mcp_server() -> Server {
    Server::builder()
        .tool("echo", || async { "ok" })
        .tool("slow", || async {
            tokio::time::sleep(Duration::from_secs(2)).await;
            "slow"
        })
        .build()
}

async fn setup(config: HttpConfig) -> Env {
    let key = SigningKey::es256("k1");
    let keys = KeyServer::new(&[&key]);
    let (as_listener, issuer) = bind().await;
    serve(as_listener, keys.router(issuer.clone()));
    let (listener, base) = bind().await;
    let mcp = format!("{base}/mcp");
    let validator = JwtValidator::builder(issuer.clone(), mcp.clone())
        .discover_jwks()
        .build()
        .unwrap();
    let rs = ResourceServer::builder(mcp.clone())
        .authorization_server(issuer.clone())
        .validator(validator)
        .build()
        .unwrap();
    let endpoint = StreamableHttp::with_config(mcp_server(), config);
    serve(listener, rs.protect(endpoint.router()));
    Env {
        mcp,
        issuer,
        key,
        http: reqwest::Client::new(),
        endpoint,
    }
}

impl Env {
    fn token(&self, sub: &str) -> String {
        let now = now();
        self.key
            .sign(&json!({ "iss": self.issuer, "aud": self.mcp, "sub": sub,
            "iat": now, "exp": now + 300 }))
    }
}

/// A 2026-07-28 `tools/call` to `url`, with `token` if any.
async fn modern_call(http: &reqwest::Client, url: &str, token: Option<&str>) -> reqwest::Response {
    call_tool(http, url, token, "echo").await
}

async fn call_tool(
    http: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    tool: &str,
) -> reqwest::Response {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": tool, "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {} } }
    });
    let mut req = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .body(body.to_string());
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    req.send().await.unwrap()
}

/// A 2025-11-25 `initialize` to `url` with `token`.
async fn legacy_initialize(http: &reqwest::Client, url: &str, token: &str) -> reqwest::Response {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": { "name": "fair", "version": "0" } } });
    http.post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {token}"))
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}

async fn assert_429(res: reqwest::Response) {
    assert_eq!(res.status(), 429);
    let retry: u64 = res
        .headers()
        .get("retry-after")
        .expect("Retry-After")
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry), "Retry-After {retry}");
    let body: Value = serde_json::from_str(&res.text().await.unwrap()).unwrap();
    assert_eq!(body["error"]["code"], -32603, "{body}");
    assert_eq!(body["jsonrpc"], "2.0");
}

#[tokio::test]
async fn a_flooding_principal_gets_429_while_another_is_served() {
    let mut config = HttpConfig::default();
    config.principal_rate = Some(Rate::new(1, 20));
    let env = setup(config).await;
    let (alice, bob) = (env.token("alice"), env.token("bob"));
    let mut refused = 0;
    let mut first_refusal = None;
    for i in 0..40 {
        let res = modern_call(&env.http, &env.mcp, Some(&alice)).await;
        match res.status().as_u16() {
            200 => {}
            429 => {
                refused += 1;
                if first_refusal.is_none() {
                    first_refusal = Some(res);
                }
            }
            other => panic!("unexpected {other}"),
        }
        // Bob, within his own rate and interleaved with the flood, is always served.
        if i % 4 != 0 {
            continue;
        }
        let res = modern_call(&env.http, &env.mcp, Some(&bob)).await;
        assert_eq!(res.status(), 200, "bob refused while alice floods");
    }
    assert!(refused >= 15, "alice was refused {refused} times of 40");
    assert_429(first_refusal.unwrap()).await;
    // A 2025-11-25 client of the same principal gets the same answer.
    assert_429(legacy_initialize(&env.http, &env.mcp, &alice).await).await;
    assert_eq!(
        legacy_initialize(&env.http, &env.mcp, &env.token("carol"))
            .await
            .status(),
        200
    );
}

#[tokio::test]
async fn the_table_of_callers_stays_bounded() {
    let mut config = HttpConfig::default();
    config.max_principals = 50;
    let env = setup(config).await;
    for i in 0..300 {
        let token = env.token(&format!("user-{i}"));
        let res = modern_call(&env.http, &env.mcp, Some(&token)).await;
        assert_eq!(res.status(), 200, "caller {i}");
        assert!(env.endpoint.tracked_callers() <= 50);
    }
    assert!(env.endpoint.tracked_callers() >= 1);
}

async fn unauthenticated(limit_loopback: bool) -> (usize, usize) {
    let mut config = HttpConfig::default();
    config.peer_rate = Some(Rate::new(1, 5));
    config.limit_loopback_peers = limit_loopback;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let endpoint = StreamableHttp::with_config(mcp_server(), config);
    tokio::spawn(endpoint.clone().serve(listener));
    let http = reqwest::Client::new();
    let (mut ok, mut refused) = (0, 0);
    for _ in 0..20 {
        let res = modern_call(&http, &url, None).await;
        match res.status().as_u16() {
            200 => ok += 1,
            429 => {
                refused += 1;
                assert_429(res).await;
            }
            other => panic!("unexpected {other}"),
        }
    }
    (ok, refused)
}

#[tokio::test]
async fn loopback_peers_are_limited_by_ip_only_when_asked() {
    assert_eq!(unauthenticated(false).await, (20, 0));
    let (ok, refused) = unauthenticated(true).await;
    assert!((5..=7).contains(&ok), "{ok} served");
    assert_eq!(ok + refused, 20);
}

#[tokio::test]
async fn in_flight_requests_of_one_principal_are_capped() {
    let mut config = HttpConfig::default();
    config.max_requests_per_principal = 1;
    let env = setup(config).await;
    let (alice, bob) = (env.token("alice"), env.token("bob"));
    let (http, url, slow_token) = (env.http.clone(), env.mcp.clone(), alice.clone());
    let slow = tokio::spawn(async move { call_tool(&http, &url, Some(&slow_token), "slow").await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let res = modern_call(&env.http, &env.mcp, Some(&alice)).await;
    assert_429(res).await;
    assert_eq!(
        modern_call(&env.http, &env.mcp, Some(&bob)).await.status(),
        200
    );
    assert_eq!(slow.await.unwrap().status(), 200);
    // The slot is given back when the answer is done.
    assert_eq!(
        modern_call(&env.http, &env.mcp, Some(&alice))
            .await
            .status(),
        200
    );
}
