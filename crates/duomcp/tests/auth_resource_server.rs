//! The resource-server half over real HTTP: a local authorization-server stand-in issues
//! signed JWTs and publishes its keys; the MCP server sits behind `AuthLayer`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod auth_support;

use auth_support::*;
use duomcp::auth::{
    IntrospectionValidator, JwtValidator, Principal, ResourceServer, ScopeHierarchy,
    WwwAuthenticate,
};
use duomcp::server::{Context, Server, ToolSpec};
use duomcp::transport::http::StreamableHttp;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

struct Env {
    mcp: String,
    issuer: String,
    keys: KeyServer,
    key: SigningKey,
    http: reqwest::Client,
}

fn mcp_server() -> Server {
    Server::builder()
        .tool("public", || async { "anyone" })
        .tool(ToolSpec::new("read").scopes(["files:read"]), || async {
            "contents"
        })
        .tool(ToolSpec::new("write").scopes(["files:write"]), || async {
            "written"
        })
        .tool(
            ToolSpec::new("both").scopes(["files:read", "admin"]),
            || async { "both" },
        )
        .tool("whoami", |ctx: Context| async move {
            let p = ctx.principal().expect("authenticated");
            format!(
                "{}|{}",
                p.subject().unwrap_or("-"),
                p.scopes().collect::<Vec<_>>().join(",")
            )
        })
        .build()
}

/// An authorization server stand-in and an MCP server trusting it (JWKS discovered from the
/// issuer's metadata), both on loopback.
async fn setup_with(
    configure: impl FnOnce(duomcp::auth::ResourceServerBuilder) -> duomcp::auth::ResourceServerBuilder,
) -> Env {
    let key = SigningKey::es256("k1");
    let keys = KeyServer::new(&[&key]);
    let (as_listener, issuer) = bind().await;
    serve(as_listener, keys.router(issuer.clone()));

    let (listener, base) = bind().await;
    let mcp = format!("{base}/mcp");
    let hierarchy = ScopeHierarchy::new().implies("files:write", ["files:read"]);
    let validator = JwtValidator::builder(issuer.clone(), mcp.clone())
        .discover_jwks()
        .min_refresh_interval(Duration::from_millis(0))
        .build()
        .unwrap();
    let rs = configure(
        ResourceServer::builder(mcp.clone())
            .authorization_server(issuer.clone())
            .scopes_supported(["files:read", "files:write", "offline_access"])
            .scope_hierarchy(hierarchy)
            .validator(validator),
    )
    .build()
    .unwrap();
    serve(
        listener,
        rs.protect(StreamableHttp::new(mcp_server()).router()),
    );
    Env {
        mcp,
        issuer,
        keys,
        key,
        http: reqwest::Client::new(),
    }
}

async fn setup() -> Env {
    setup_with(|b| b).await
}

impl Env {
    fn claims(&self, sub: &str, scope: &str) -> Value {
        let now = now();
        json!({ "iss": self.issuer, "aud": self.mcp, "sub": sub, "scope": scope, "iat": now, "exp": now + 300 })
    }

    fn token(&self, sub: &str, scope: &str) -> String {
        self.key.sign(&self.claims(sub, scope))
    }

    /// A 2026-07-28 `tools/call`.
    async fn call(&self, token: Option<&str>, tool: &str) -> reqwest::Response {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": tool, "arguments": {}, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {} } }
        });
        let mut req = self
            .http
            .post(&self.mcp)
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
}

fn challenge(res: &reqwest::Response) -> WwwAuthenticate {
    let v = res
        .headers()
        .get("www-authenticate")
        .expect("a WWW-Authenticate header")
        .to_str()
        .unwrap();
    WwwAuthenticate::parse_all(v).remove(0)
}

async fn text_of(res: reqwest::Response) -> String {
    let v: Value = serde_json::from_str(&res.text().await.unwrap()).unwrap();
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn metadata_is_served_at_the_path_suffixed_and_root_urls() {
    let env = setup().await;
    let base = env.mcp.trim_end_matches("/mcp");
    for url in [
        format!("{base}/.well-known/oauth-protected-resource/mcp"),
        format!("{base}/.well-known/oauth-protected-resource"),
    ] {
        let res = env.http.get(&url).send().await.unwrap();
        assert_eq!(res.status(), 200, "{url}");
        let doc: Value = res.json_body().await;
        assert_eq!(doc["resource"], env.mcp);
        assert_eq!(doc["authorization_servers"], json!([env.issuer]));
        assert_eq!(
            doc["scopes_supported"],
            json!(["files:read", "files:write"])
        );
    }
}

trait JsonBody {
    async fn json_body(self) -> Value;
}

impl JsonBody for reqwest::Response {
    async fn json_body(self) -> Value {
        serde_json::from_str(&self.text().await.unwrap()).unwrap()
    }
}

#[tokio::test]
async fn no_token_is_401_with_metadata_and_scope() {
    let env = setup().await;
    let res = env.call(None, "public").await;
    assert_eq!(res.status(), 401);
    let c = challenge(&res);
    assert!(c.is("Bearer"));
    assert_eq!(
        c.param("resource_metadata"),
        Some(
            format!(
                "{}/.well-known/oauth-protected-resource/mcp",
                env.mcp.trim_end_matches("/mcp")
            )
            .as_str()
        )
    );
    assert_eq!(c.param("scope"), Some("files:read files:write"));
    assert_eq!(c.param("error"), None);
    // Another scheme is no bearer token either.
    let res = env
        .http
        .post(&env.mcp)
        .header("authorization", "Basic dXNlcjpwYXNz")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
}

#[tokio::test]
async fn a_valid_token_reaches_the_handler_with_its_principal() {
    let env = setup().await;
    let t = env.token("alice", "files:write");
    let res = env.call(Some(&t), "whoami").await;
    assert_eq!(res.status(), 200);
    // files:write implies files:read through the hierarchy.
    assert_eq!(text_of(res).await, "alice|files:read,files:write");
    let res = env.call(Some(&t), "read").await;
    assert_eq!(res.status(), 200);
    assert_eq!(text_of(res).await, "contents");
}

async fn assert_invalid(env: &Env, token: &str, why: &str) {
    let res = env.call(Some(token), "public").await;
    assert_eq!(res.status(), 401, "{why}");
    let c = challenge(&res);
    assert_eq!(c.param("error"), Some("invalid_token"), "{why}");
    assert!(c.param("resource_metadata").is_some(), "{why}");
}

#[tokio::test]
async fn wrong_audience_issuer_expiry_and_signature_are_refused() {
    let env = setup().await;
    let mut c = env.claims("mallory", "files:read");
    c["aud"] = json!("https://other.example.com/mcp");
    assert_invalid(&env, &env.key.sign(&c), "wrong audience").await;

    let mut c = env.claims("mallory", "files:read");
    c["aud"] = json!(format!("{}/", env.mcp));
    assert_invalid(&env, &env.key.sign(&c), "audience with a trailing slash").await;

    let mut c = env.claims("mallory", "files:read");
    c["iss"] = json!("https://evil.example.com");
    assert_invalid(&env, &env.key.sign(&c), "wrong issuer").await;

    let mut c = env.claims("mallory", "files:read");
    c["exp"] = json!(now() - 3600);
    assert_invalid(&env, &env.key.sign(&c), "expired").await;

    let mut c = env.claims("mallory", "files:read");
    c["nbf"] = json!(now() + 3600);
    assert_invalid(&env, &env.key.sign(&c), "not yet valid").await;

    let mut c = env.claims("mallory", "files:read");
    c.as_object_mut().unwrap().remove("exp");
    assert_invalid(&env, &env.key.sign(&c), "no exp").await;

    // Same kid, another key: a forged signature.
    let forger = SigningKey::es256("k1");
    assert_invalid(
        &env,
        &forger.sign(&env.claims("mallory", "files:read")),
        "forged",
    )
    .await;

    // A signed token whose payload was swapped.
    let good = env.token("alice", "files:read");
    let evil = env.token("mallory", "files:write");
    let parts: Vec<&str> = good.split('.').collect();
    let evil_parts: Vec<&str> = evil.split('.').collect();
    let spliced = format!("{}.{}.{}", parts[0], evil_parts[1], parts[2]);
    assert_invalid(&env, &spliced, "spliced payload").await;

    // Not a JWT at all, and `alg: none`.
    assert_invalid(&env, "opaque-token", "not a JWT").await;
    let none = format!(
        "{}.{}.",
        base64url(&json!({"alg":"none","typ":"JWT"})),
        base64url(&env.claims("mallory", "files:write"))
    );
    let res = env.call(Some(&none), "public").await;
    assert!(res.status() == 401 || res.status() == 400, "alg none");
}

fn base64url(v: &Value) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

#[tokio::test]
async fn rotated_keys_are_fetched_again() {
    let env = setup().await;
    let t = env.token("alice", "files:read");
    assert_eq!(env.call(Some(&t), "read").await.status(), 200);
    let before = env.keys.fetch_count();
    // The issuer rotates to a new key with a new id.
    let k2 = SigningKey::es256("k2");
    env.keys.set_keys(&[&k2]);
    let t2 = k2.sign(&env.claims("alice", "files:read"));
    assert_eq!(env.call(Some(&t2), "read").await.status(), 200);
    assert_eq!(env.keys.fetch_count(), before + 1);
    // An RSA key works as well.
    let rsa = SigningKey::rs256("r1");
    env.keys.set_keys(&[&k2, &rsa]);
    let t3 = rsa.sign(&env.claims("alice", "files:read"));
    assert_eq!(env.call(Some(&t3), "read").await.status(), 200);
    // Tokens of the retired key stop working once the set no longer has it... after a fetch
    // for an unknown key; the cache still holds k1 until then, so send an unknown kid first.
    let k3 = SigningKey::es256("k3");
    assert_eq!(
        env.call(Some(&k3.sign(&env.claims("x", ""))), "public")
            .await
            .status(),
        401
    );
    assert_eq!(env.call(Some(&t), "read").await.status(), 401);
}

#[tokio::test]
async fn missing_scopes_are_403_naming_all_of_them() {
    let env = setup().await;
    let t = env.token("bob", "files:read");
    let res = env.call(Some(&t), "write").await;
    assert_eq!(res.status(), 403);
    let c = challenge(&res);
    assert_eq!(c.param("error"), Some("insufficient_scope"));
    assert_eq!(c.param("scope"), Some("files:write"));
    assert!(c
        .param("resource_metadata")
        .unwrap()
        .ends_with("/.well-known/oauth-protected-resource/mcp"));
    let body = res.json_body().await;
    assert_eq!(
        body["error"]["data"]["requiredScopes"],
        json!(["files:write"])
    );

    let res = env.call(Some(&t), "both").await;
    assert_eq!(res.status(), 403);
    assert_eq!(challenge(&res).param("scope"), Some("files:read admin"));
}

#[tokio::test]
async fn malformed_requests_are_400() {
    let env = setup().await;
    let t = env.token("alice", "files:read");
    // Two Authorization headers.
    let res = env
        .http
        .post(&env.mcp)
        .header("authorization", format!("Bearer {t}"))
        .header("authorization", format!("Bearer {t}"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    assert_eq!(challenge(&res).param("error"), Some("invalid_request"));
    // A token in the query string, even alongside a good header.
    let res = env
        .http
        .post(format!("{}?access_token={t}", env.mcp))
        .header("authorization", format!("Bearer {t}"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    // A token that is not a b64token.
    for bad in ["Bearer a b", "Bearer", "Bearer \"x\""] {
        let res = env
            .http
            .post(&env.mcp)
            .header("authorization", bad)
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 400, "{bad}");
    }
}

#[tokio::test]
async fn scopes_required_for_every_request_are_checked_by_the_layer() {
    let env = setup_with(|b| b.required_scopes(["mcp"])).await;
    let res = env.call(None, "public").await;
    assert_eq!(res.status(), 401);
    assert_eq!(challenge(&res).param("scope"), Some("mcp"));
    let res = env
        .call(Some(&env.token("a", "files:read")), "public")
        .await;
    assert_eq!(res.status(), 403);
    assert_eq!(challenge(&res).param("scope"), Some("mcp"));
    assert_eq!(
        env.call(Some(&env.token("a", "mcp")), "public")
            .await
            .status(),
        200
    );
}

async fn legacy_post(
    env: &Env,
    token: &str,
    session: Option<&str>,
    body: Value,
) -> reqwest::Response {
    let mut req = env
        .http
        .post(&env.mcp)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {token}"))
        .body(body.to_string());
    if let Some(s) = session {
        req = req
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", "2025-11-25");
    }
    req.send().await.unwrap()
}

#[tokio::test]
async fn legacy_sessions_are_bound_to_their_principal() {
    let env = setup().await;
    let alice = env.token("alice", "files:read");
    let bob = env.token("bob", "files:read files:write");
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let res = legacy_post(&env, &alice, None, init).await;
    assert_eq!(res.status(), 200);
    let sid = res.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let list = json!({"jsonrpc":"2.0","id":2,"method":"tools/list"});
    assert_eq!(
        legacy_post(&env, &alice, Some(&sid), list.clone())
            .await
            .status(),
        200
    );
    // Bob holds a valid token, but the session is Alice's.
    assert_eq!(
        legacy_post(&env, &bob, Some(&sid), list.clone())
            .await
            .status(),
        404
    );
    let get = env
        .http
        .get(&env.mcp)
        .header("accept", "text/event-stream")
        .header("authorization", format!("Bearer {bob}"))
        .header("mcp-session-id", &sid)
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 404);
    let del = env
        .http
        .delete(&env.mcp)
        .header("authorization", format!("Bearer {bob}"))
        .header("mcp-session-id", &sid)
        .send()
        .await
        .unwrap();
    assert_eq!(del.status(), 404);
    // Scope refusals are 403 in this era too.
    let call = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write","arguments":{}}});
    let res = legacy_post(&env, &alice, Some(&sid), call).await;
    assert_eq!(res.status(), 403);
    assert_eq!(challenge(&res).param("scope"), Some("files:write"));
    // And the session still works for Alice.
    assert_eq!(
        legacy_post(&env, &alice, Some(&sid), list).await.status(),
        200
    );
}

#[tokio::test]
async fn unreachable_keys_are_503() {
    let (listener, base) = bind().await;
    let mcp = format!("{base}/mcp");
    // Nothing listens on this port once the listener is dropped.
    let (dead, dead_url) = bind().await;
    drop(dead);
    let rs = ResourceServer::builder(mcp.clone())
        .authorization_server(dead_url.clone())
        .validator(
            JwtValidator::builder(dead_url.clone(), mcp.clone())
                .jwks_url(format!("{dead_url}/jwks"))
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    serve(
        listener,
        rs.protect(StreamableHttp::new(mcp_server()).router()),
    );
    let key = SigningKey::es256("k");
    let t = key.sign(&json!({"iss": dead_url, "aud": mcp, "sub": "a", "exp": now() + 60}));
    let res = reqwest::Client::new()
        .post(&mcp)
        .header("authorization", format!("Bearer {t}"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
}

#[tokio::test]
async fn introspection_validates_and_caches() {
    let calls = Arc::new(Mutex::new(0usize));
    let (as_listener, as_url) = bind().await;
    let (listener, base) = bind().await;
    let mcp = format!("{base}/mcp");
    let (c2, mcp2) = (calls.clone(), mcp.clone());
    let introspect = axum::Router::new().route(
        "/introspect",
        axum::routing::post(move |headers: http::HeaderMap, body: axum::body::Bytes| {
            let (calls, mcp) = (c2.clone(), mcp2.clone());
            async move {
                *calls.lock().unwrap() += 1;
                assert!(headers["authorization"].to_str().unwrap().starts_with("Basic "));
                let form: Vec<(String, String)> = url::form_urlencoded::parse(&body).into_owned().collect();
                let token = form.iter().find(|(k, _)| k == "token").map(|(_, v)| v.as_str()).unwrap();
                json_response(match token {
                    "good" => json!({"active": true, "sub": "carol", "aud": mcp, "scope": "files:read", "exp": now() + 60}),
                    "other-aud" => json!({"active": true, "sub": "carol", "aud": "https://x", "scope": "files:read"}),
                    _ => json!({"active": false}),
                })
            }
        }),
    );
    serve(as_listener, introspect);
    let rs = ResourceServer::builder(mcp.clone())
        .authorization_server(as_url.clone())
        .validator(
            IntrospectionValidator::builder(format!("{as_url}/introspect"), mcp.clone())
                .client_credentials("rs", "secret")
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    serve(
        listener,
        rs.protect(StreamableHttp::new(mcp_server()).router()),
    );
    let env = Env {
        mcp,
        issuer: as_url,
        keys: KeyServer::new(&[]),
        key: SigningKey::es256("unused"),
        http: reqwest::Client::new(),
    };
    assert_eq!(env.call(Some("good"), "read").await.status(), 200);
    assert_eq!(env.call(Some("good"), "read").await.status(), 200);
    assert_eq!(
        *calls.lock().unwrap(),
        1,
        "the second answer came from the cache"
    );
    assert_eq!(env.call(Some("good"), "write").await.status(), 403);
    assert_eq!(env.call(Some("revoked"), "read").await.status(), 401);
    assert_eq!(env.call(Some("other-aud"), "read").await.status(), 401);
}

#[tokio::test]
async fn principal_extractor_refuses_anonymous_calls_over_stdio_never() {
    // Over stdio the caller is the local user, who holds every scope.
    let server = Server::builder()
        .tool(
            ToolSpec::new("w").scopes(["files:write"]),
            |p: Principal| async move { p.subject().unwrap_or_default().to_owned() },
        )
        .build();
    // The in-memory pair serves the connection as stdio does.
    let (transport, _serving) = duomcp::transport::memory::pair(server);
    let client = duomcp::client::Client::builder()
        .connect_transport(transport)
        .await
        .unwrap();
    let r = client.call_tool("w", json!({})).await.unwrap();
    assert_eq!(r.is_error, None);
}

/// `exp` and `nbf` are compared with the validator's clock, with the leeway on both sides:
/// a token is refused once its clock passes `exp + leeway`, and before `nbf - leeway`.
#[tokio::test]
async fn expiry_and_not_before_follow_the_validators_clock() {
    use duomcp::auth::TokenValidator;
    use duomcp::clock::ManualClock;
    let key = SigningKey::es256("k1");
    let (issuer, mcp) = ("https://auth.example.com", "https://mcp.example.com/mcp");
    let start = 1_800_000_000u64;
    let clock = ManualClock::new(start * 1000);
    let validator = JwtValidator::builder(issuer, mcp)
        .jwks(&jwks(&[&key]))
        .leeway(Duration::from_secs(10))
        .clock(clock.clone())
        .build()
        .unwrap();
    // Far from the system clock: only the validator's clock can make these valid.
    let token = key.sign(&json!({
        "iss": issuer, "aud": mcp, "sub": "alice",
        "nbf": start + 100, "exp": start + 200
    }));
    let verdict = |v: Result<Principal, _>| {
        v.map(|p| p.subject().unwrap_or_default().to_owned())
            .map_err(|e| format!("{e}"))
    };
    let at = |secs: u64| clock.set(secs * 1000);

    at(start + 89);
    let early = verdict(validator.validate(&token).await);
    assert!(
        early.as_ref().is_err_and(|e| e.contains("not valid yet")),
        "{early:?}"
    );
    at(start + 90);
    assert_eq!(
        verdict(validator.validate(&token).await),
        Ok("alice".to_owned())
    );
    at(start + 210);
    assert_eq!(
        verdict(validator.validate(&token).await),
        Ok("alice".to_owned())
    );
    at(start + 211);
    let late = verdict(validator.validate(&token).await);
    assert!(
        late.as_ref().is_err_and(|e| e.contains("expired")),
        "{late:?}"
    );

    // `nbf` is a NumericDate: a fraction counts, anything else is refused.
    at(start + 150);
    for (nbf, why) in [
        (json!(start as f64 + 160.5), "not valid yet"),
        (json!("0"), "`nbf` is not a number"),
    ] {
        let token = key.sign(&json!({
            "iss": issuer, "aud": mcp, "sub": "alice", "nbf": nbf, "exp": start + 200
        }));
        let got = verdict(validator.validate(&token).await);
        assert!(
            got.as_ref().is_err_and(|e| e.contains(why)),
            "nbf {nbf}: {got:?}"
        );
    }
    let token = key.sign(&json!({
        "iss": issuer, "aud": mcp, "sub": "alice", "nbf": start as f64 + 159.5, "exp": start + 200
    }));
    assert_eq!(
        verdict(validator.validate(&token).await),
        Ok("alice".to_owned())
    );
}

#[tokio::test]
async fn anonymous_callers_run_as_the_given_principal_and_are_challenged_for_more() {
    let env =
        setup_with(|b| b.anonymous(Principal::new("guest").with_scopes(["files:read"]))).await;
    // No header: in, as the anonymous principal, with what it holds.
    let res = env.call(None, "whoami").await;
    assert_eq!(res.status(), 200);
    assert_eq!(text_of(res).await, "guest|files:read");
    assert_eq!(text_of(env.call(None, "read").await).await, "contents");
    // It lacks files:write: 401 (it has no token to step up), with the scopes this call needs
    // and the metadata, and no `error` (a token is asked for, none was refused).
    let res = env.call(None, "write").await;
    assert_eq!(res.status(), 401);
    let c = challenge(&res);
    assert_eq!(c.param("scope"), Some("files:write"));
    assert_eq!(c.param("error"), None);
    assert!(c
        .param("resource_metadata")
        .unwrap()
        .ends_with("/.well-known/oauth-protected-resource/mcp"));
    // A second tenant with a token holds its own scopes at the same time, not the guest's.
    let t = env.token("alice", "files:write");
    let (a, b) = tokio::join!(env.call(Some(&t), "write"), env.call(None, "whoami"));
    assert_eq!(text_of(a).await, "written");
    assert_eq!(text_of(b).await, "guest|files:read");
    // A token holder lacking a scope is 403 insufficient_scope, as without anonymous access.
    let res = env
        .call(Some(&env.token("bob", "files:read")), "both")
        .await;
    assert_eq!(res.status(), 403);
    assert_eq!(challenge(&res).param("error"), Some("insufficient_scope"));
    // A bad token is refused, never downgraded to anonymous.
    let res = env.call(Some("not-a-jwt"), "public").await;
    assert_eq!(res.status(), 401);
    assert_eq!(challenge(&res).param("error"), Some("invalid_token"));
}

#[tokio::test]
async fn anonymous_access_still_needs_the_layers_required_scopes() {
    let env = setup_with(|b| {
        b.required_scopes(["mcp"])
            .anonymous(Principal::new("guest").with_scopes(["files:read"]))
    })
    .await;
    let res = env.call(None, "public").await;
    assert_eq!(res.status(), 401);
    assert_eq!(challenge(&res).param("scope"), Some("mcp"));
    let env = setup_with(|b| {
        b.required_scopes(["mcp"])
            .anonymous(Principal::new("guest").with_all_scopes())
    })
    .await;
    assert_eq!(text_of(env.call(None, "write").await).await, "written");
}
