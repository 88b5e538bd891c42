//! `duomcp gateway`'s two OAuth roles, configured as an operator writes them: `[auth]` (the
//! gateway as a resource server: tokens meant for it, checked by introspection here, JWTs by
//! the flags), and `[upstream.oauth]` (the gateway's own client-credentials token for an HTTP
//! upstream). An authorization server stand-in records what it is asked; the upstream records
//! every `Authorization` header it receives, so "the client's token never goes upstream" is
//! asserted on what arrived, not assumed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use duomcp::auth::{ResourceServer, StaticTokens};
use duomcp::client::{Client, EraChoice};
use duomcp::server::Principal;
use duomcp_gateway::{Gateway, GatewayConfig};
use duomcp_testkit::raw_http::{exchange, post_request_with};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::RecordAuth;

const BOUND: Duration = Duration::from_secs(90);
const WITHIN: Duration = Duration::from_secs(20);

/// A form's fields, and the request's `Authorization` header.
type Asked = (Vec<(String, String)>, Option<String>);

/// What the authorization server stand-in was asked.
#[derive(Default)]
struct AsSeen {
    /// Each token request.
    token: Vec<Asked>,
    /// Each introspection request.
    introspect: Vec<Asked>,
}

fn form(body: &[u8]) -> Vec<(String, String)> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

fn field<'a>(pairs: &'a [(String, String)], k: &str) -> Option<&'a str> {
    pairs.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str())
}

fn basic(id: &str, secret: &str) -> String {
    use base64::Engine as _;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"))
    )
}

async fn bind() -> (tokio::net::TcpListener, SocketAddr) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let a = l.local_addr().unwrap();
    (l, a)
}

/// The authorization server: metadata, a token endpoint issuing `upstream-token-1` for the
/// client-credentials grant, and an introspection endpoint that knows two client tokens
/// meant for `gateway_resource` (`client-token` with scope `mcp`, `weak-token` without it).
async fn authorization_server(gateway_resource: String) -> (String, Arc<Mutex<AsSeen>>) {
    let (listener, addr) = bind().await;
    let issuer = format!("http://{addr}");
    let seen = Arc::new(Mutex::new(AsSeen::default()));
    let meta = json!({
        "issuer": issuer,
        "token_endpoint": format!("{issuer}/token"),
        "introspection_endpoint": format!("{issuer}/introspect"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["client_credentials"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
    });
    let (s1, s2) = (seen.clone(), seen.clone());
    let auth_header = |h: &axum::http::HeaderMap| {
        h.get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let app = axum::Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            axum::routing::get(move || {
                let m = meta.clone();
                async move { axum::Json(m) }
            }),
        )
        .route(
            "/token",
            axum::routing::post(
                move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                    let seen = s1.clone();
                    async move {
                        seen.lock()
                            .unwrap()
                            .token
                            .push((form(&body), auth_header(&headers)));
                        axum::Json(json!({
                            "access_token": "upstream-token-1",
                            "token_type": "Bearer",
                            "expires_in": 600,
                        }))
                    }
                },
            ),
        )
        .route(
            "/introspect",
            axum::routing::post(
                move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                    let (seen, aud) = (s2.clone(), gateway_resource.clone());
                    async move {
                        let pairs = form(&body);
                        let token = field(&pairs, "token").unwrap_or("").to_owned();
                        seen.lock()
                            .unwrap()
                            .introspect
                            .push((pairs, auth_header(&headers)));
                        axum::Json(match token.as_str() {
                            "client-token" => {
                                json!({"active": true, "sub": "alice", "aud": aud, "scope": "mcp"})
                            }
                            "weak-token" => {
                                json!({"active": true, "sub": "bob", "aud": aud, "scope": "other"})
                            }
                            _ => json!({"active": false}),
                        })
                    }
                },
            ),
        );
    tokio::spawn(duomcp::transport::http::serve(listener, app));
    (issuer, seen)
}

/// The reference server over HTTP, behind a resource server of its own that accepts only the
/// token the authorization server issues to the gateway; returns its URL and what it received.
async fn protected_upstream(issuer: &str) -> (String, Arc<Mutex<Vec<String>>>) {
    let (listener, addr) = bind().await;
    let url = format!("http://{addr}/mcp");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorder = {
        let seen = seen.clone();
        duomcp::server::middleware::layer_fn(move |inner| RecordAuth {
            inner,
            seen: seen.clone(),
        })
    };
    let rs = ResourceServer::builder(url.clone())
        .authorization_server(issuer)
        .validator(StaticTokens::new().with("upstream-token-1", Principal::new("the-gateway")))
        .build()
        .unwrap();
    let app = rs
        .protect(duomcp_cli::reference::server().http_router())
        .layer(recorder);
    tokio::spawn(duomcp::transport::http::serve(listener, app));
    (url, seen)
}

fn mcp_post(addr: SocketAddr, token: Option<&str>) -> Vec<u8> {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "server/discover"),
    ];
    if let Some(b) = &bearer {
        headers.push(("Authorization", b.as_str()));
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    post_request_with(addr, &headers, &body.to_string())
}

fn get_request(addr: SocketAddr, path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").into_bytes()
}

#[tokio::test]
async fn auth_section_fronts_the_gateway_and_upstream_oauth_sends_only_the_gateways_own_token() {
    tokio::time::timeout(BOUND, async {
        let (gw_listener, gw_addr) = bind().await;
        let gw_url = format!("http://{gw_addr}/mcp");
        let (issuer, as_seen) = authorization_server(gw_url.clone()).await;
        let (up_url, up_seen) = protected_upstream(&issuer).await;

        // The configuration as an operator writes it.
        let config = GatewayConfig::from_toml(&format!(
            r#"
            [auth]
            resource = "{gw_url}"
            authorization_servers = ["{issuer}"]
            introspection_url = "{issuer}/introspect"
            client_id = "gateway-rs"
            client_secret = "rs-secret"
            required_scopes = ["mcp"]

            [[upstream]]
            name = "remote"
            url = "{up_url}"
            [upstream.oauth]
            client_id = "gateway"
            client_secret = "up-secret"
            "#
        ))
        .unwrap();
        let gateway = Arc::new(Gateway::start(config).await.expect("the gateway starts"));
        let app =
            duomcp_gateway::http::app(gateway, duomcp::transport::http::HttpConfig::default());
        tokio::spawn(duomcp::transport::http::serve(gw_listener, app));

        // No token: 401 with a challenge naming the gateway's metadata.
        let res = exchange(gw_addr, &mcp_post(gw_addr, None), WITHIN).await;
        assert_eq!(res.status, 401, "{res:?}");
        let challenge = res.header("www-authenticate").unwrap();
        let metadata_url = format!("http://{gw_addr}/.well-known/oauth-protected-resource/mcp");
        assert!(challenge.contains(&metadata_url), "{challenge}");
        // The metadata names the resource and the authorization server.
        let res = exchange(
            gw_addr,
            &get_request(gw_addr, "/.well-known/oauth-protected-resource/mcp"),
            WITHIN,
        )
        .await;
        assert_eq!(res.status, 200, "{res:?}");
        let meta = res.json();
        assert_eq!(meta["resource"], gw_url.as_str());
        assert_eq!(meta["authorization_servers"], json!([issuer]));
        // A token the authorization server does not know: 401; one without the required
        // scope: 403 insufficient_scope.
        let res = exchange(gw_addr, &mcp_post(gw_addr, Some("forged")), WITHIN).await;
        assert_eq!(res.status, 401, "{res:?}");
        let res = exchange(gw_addr, &mcp_post(gw_addr, Some("weak-token")), WITHIN).await;
        assert_eq!(res.status, 403, "{res:?}");
        assert!(
            res.header("www-authenticate")
                .unwrap()
                .contains("insufficient_scope"),
            "{res:?}"
        );
        // /healthz stays open for load balancers.
        let res = exchange(gw_addr, &get_request(gw_addr, "/healthz"), WITHIN).await;
        assert_eq!(res.status, 200, "{res:?}");

        // With a good token, calls go through, in both revisions.
        for era in [EraChoice::Modern, EraChoice::Legacy] {
            let client = Client::builder()
                .era(era)
                .header("Authorization", "Bearer client-token")
                .connect_http(&gw_url)
                .await
                .unwrap();
            let r = client.call_tool("test_simple_text", ()).await.unwrap();
            assert_eq!(
                serde_json::to_value(&r).unwrap()["content"][0]["text"],
                "This is a simple text response for testing."
            );
            client.close().await.unwrap();
        }

        // The gateway checked the client's token with its own introspection credentials.
        let seen = as_seen.lock().unwrap();
        let asked: Vec<&str> = seen
            .introspect
            .iter()
            .filter_map(|(f, _)| field(f, "token"))
            .collect();
        assert!(asked.contains(&"client-token"), "{asked:?}");
        assert!(seen
            .introspect
            .iter()
            .all(|(_, auth)| auth.as_deref() == Some(basic("gateway-rs", "rs-secret").as_str())));
        // It got its own upstream token with the client-credentials grant, for the upstream
        // as the resource, authenticated as itself; once, shared by every session.
        assert_eq!(seen.token.len(), 1, "one token for the upstream");
        let (f, auth) = &seen.token[0];
        assert_eq!(field(f, "grant_type"), Some("client_credentials"));
        assert_eq!(field(f, "resource"), Some(up_url.as_str()));
        assert_eq!(
            auth.as_deref(),
            Some(basic("gateway", "up-secret").as_str())
        );
        drop(seen);

        // The upstream received the gateway's token (after its first 401) and never the
        // client's.
        let received = up_seen.lock().unwrap().clone();
        assert!(
            received.iter().any(|a| a == "Bearer upstream-token-1"),
            "{received:?}"
        );
        assert!(
            received
                .iter()
                .all(|a| a == "Bearer upstream-token-1" || a == "<none>"),
            "the upstream received: {received:?}"
        );
        assert!(!received.iter().any(|a| a.contains("client-token")));
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn auth_flags_put_a_jwt_resource_server_in_front_of_the_gateway_command() {
    tokio::time::timeout(BOUND, async {
        let issuer = "http://127.0.0.1:9";
        let resource = "https://gateway.example.com/mcp";
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_duomcp"));
        cmd.args([
            "gateway",
            "--http",
            "127.0.0.1:0",
            "--auth-issuer",
            issuer,
            "--auth-resource",
            resource,
            "--auth-scope",
            "mcp",
            "--",
            env!("CARGO_BIN_EXE_duomcp"),
            "serve",
        ]);
        let (_child, urls) = duomcp_testkit::process::spawn_announced(
            &mut cmd,
            &["serving at", "OAuth: bearer tokens for"],
            WITHIN,
        )
        .await;
        assert_eq!(urls[1], resource);
        let addr: SocketAddr = urls[0]
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .parse()
            .unwrap();
        // No token, and a token that is not a JWT of the issuer: 401 with the challenge.
        for token in [None, Some("not-a-jwt")] {
            let res = exchange(addr, &mcp_post(addr, token), WITHIN).await;
            assert_eq!(res.status, 401, "{token:?}: {res:?}");
            let challenge = res.header("www-authenticate").unwrap();
            assert!(
                challenge.contains(
                    "https://gateway.example.com/.well-known/oauth-protected-resource/mcp"
                ),
                "{challenge}"
            );
        }
        let res = exchange(
            addr,
            &get_request(addr, "/.well-known/oauth-protected-resource/mcp"),
            WITHIN,
        )
        .await;
        assert_eq!(res.status, 200, "{res:?}");
        let meta: Value = res.json();
        assert_eq!(meta["resource"], resource);
        assert_eq!(meta["authorization_servers"], json!([issuer]));
        let res = exchange(addr, &get_request(addr, "/healthz"), WITHIN).await;
        assert_eq!(res.status, 200, "{res:?}");
    })
    .await
    .expect("bounded");
}

#[test]
fn auth_flags_need_a_resource_when_the_port_is_picked_by_the_system() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_duomcp"))
        .args([
            "gateway",
            "--http",
            "127.0.0.1:0",
            "--auth-issuer",
            "https://auth.example.com",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("give --auth-resource"), "{err}");
}

/// `duomcp gateway --limit`: the fairness bounds of its HTTP endpoint, as `duomcp serve` takes
/// them. A loopback peer is exempt by default (every request answered); with
/// `limit-loopback-peers=true`, `peer-rate=1` and `peer-burst=3`, a peer sending eight requests
/// at once gets its burst, then `429` with `Retry-After` and a JSON-RPC error.
#[tokio::test]
async fn limit_flags_bound_a_flooding_peer_of_the_gateway_command() {
    tokio::time::timeout(BOUND, async {
        let mut statuses = Vec::new();
        for limits in [
            &[][..],
            &["limit-loopback-peers=true", "peer-rate=1", "peer-burst=3"][..],
        ] {
            let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_duomcp"));
            cmd.args(["gateway", "--http", "127.0.0.1:0"]);
            for l in limits {
                cmd.args(["--limit", l]);
            }
            cmd.args(["--", env!("CARGO_BIN_EXE_duomcp"), "serve"]);
            let (_child, urls) =
                duomcp_testkit::process::spawn_announced(&mut cmd, &["serving at"], WITHIN).await;
            let addr: SocketAddr = urls[0]
                .trim_start_matches("http://")
                .trim_end_matches("/mcp")
                .parse()
                .unwrap();
            let mut seen = Vec::new();
            for _ in 0..8 {
                let res = exchange(addr, &mcp_post(addr, None), WITHIN).await;
                if res.status == 429 {
                    let retry = res.header("retry-after").unwrap_or_default();
                    assert!(retry.parse::<u64>().is_ok_and(|s| s >= 1), "{res:?}");
                    assert_eq!(res.json()["error"]["code"], -32603, "{res:?}");
                }
                seen.push(res.status);
            }
            statuses.push(seen);
        }
        assert!(statuses[0].iter().all(|s| *s == 200), "{statuses:?}");
        let ok = statuses[1].iter().filter(|s| **s == 200).count();
        let refused = statuses[1].iter().filter(|s| **s == 429).count();
        assert!((3..=5).contains(&ok) && ok + refused == 8, "{statuses:?}");
        assert_eq!(&statuses[1][..3], &[200, 200, 200], "{statuses:?}");
    })
    .await
    .expect("bounded");
}
