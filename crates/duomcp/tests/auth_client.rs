//! The OAuth client against a local authorization server stand-in and a duomcp resource
//! server: the whole flow end to end, step-up, refresh, and every refusal path.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod auth_support;

use auth_support::*;
use duomcp::auth::{
    HeadlessRedirect, JwtValidator, MemoryTokenStore, OAuthClient, ResourceServer, TokenStore,
};
use duomcp::client::auth::{AuthError, AuthProvider, Challenge};
use duomcp::client::Client;
use duomcp::server::{Server, ToolSpec};
use duomcp::transport::http::StreamableHttp;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// How the stand-in misbehaves.
#[derive(Clone, Default)]
struct Quirks {
    no_pkce: bool,
    wrong_state: bool,
    iss: Option<&'static str>, // "wrong", "omit", "slash"
    advertise_iss: bool,
    metadata_issuer: Option<String>,
    error: Option<&'static str>,
    refresh_ttl: Option<u64>,
}

#[derive(Default)]
struct Seen {
    authorize: Vec<Vec<(String, String)>>,
    token: Vec<Vec<(String, String)>>,
    registrations: usize,
}

struct Stand {
    issuer: String,
    mcp: String,
    seen: Arc<Mutex<Seen>>,
}

fn query_pairs(q: &str) -> Vec<(String, String)> {
    url::form_urlencoded::parse(q.as_bytes())
        .into_owned()
        .collect()
}

fn get<'a>(pairs: &'a [(String, String)], k: &str) -> Option<&'a str> {
    pairs.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str())
}

/// An authorization server issuing JWTs for a duomcp MCP server with `read` (files:read) and
/// `write` (files:write) tools.
async fn stand(quirks: Quirks) -> Stand {
    let key = SigningKey::es256("k1");
    let (as_listener, issuer) = bind().await;
    let (mcp_listener, base) = bind().await;
    let mcp = format!("{base}/mcp");
    let seen = Arc::new(Mutex::new(Seen::default()));

    let meta_issuer = quirks
        .metadata_issuer
        .clone()
        .unwrap_or_else(|| issuer.clone());
    let mut meta = json!({
        "issuer": meta_issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "registration_endpoint": format!("{issuer}/register"),
        "jwks_uri": format!("{issuer}/jwks"),
        "response_types_supported": ["code"],
        "token_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": ["files:read", "files:write", "offline_access"],
    });
    if !quirks.no_pkce {
        meta["code_challenge_methods_supported"] = json!(["S256"]);
    }
    if quirks.advertise_iss {
        meta["authorization_response_iss_parameter_supported"] = json!(true);
    }
    let jwks_doc = jwks(&[&key]);
    let (s1, s2, s3) = (seen.clone(), seen.clone(), seen.clone());
    let (q1, iss1) = (quirks.clone(), issuer.clone());
    let (key2, iss2, q2) = (key.clone(), issuer.clone(), quirks.clone());
    let router = axum::Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            axum::routing::get(move || {
                let m = meta.clone();
                async move { json_response(m) }
            }),
        )
        .route(
            "/jwks",
            axum::routing::get(move || {
                let d = jwks_doc.clone();
                async move { json_response(d) }
            }),
        )
        .route(
            "/authorize",
            axum::routing::get(move |uri: http::Uri| {
                let (seen, q, issuer) = (s1.clone(), q1.clone(), iss1.clone());
                async move {
                    let pairs = query_pairs(uri.query().unwrap_or(""));
                    let redirect = get(&pairs, "redirect_uri").unwrap().to_owned();
                    let state = if q.wrong_state { "forged".to_owned() } else { get(&pairs, "state").unwrap().to_owned() };
                    seen.lock().unwrap().authorize.push(pairs);
                    let mut out = url::Url::parse(&redirect).unwrap();
                    {
                        let mut qp = out.query_pairs_mut();
                        match q.error {
                            Some(e) => qp.append_pair("error", e),
                            None => qp.append_pair("code", "the-code"),
                        };
                        qp.append_pair("state", &state);
                        match q.iss {
                            Some("wrong") => {
                                qp.append_pair("iss", "https://evil.example.com");
                            }
                            Some("slash") => {
                                qp.append_pair("iss", &format!("{issuer}/"));
                            }
                            Some(_) => {}
                            None => {
                                qp.append_pair("iss", &issuer);
                            }
                        }
                    }
                    let mut res = axum::response::Response::new(axum::body::Body::empty());
                    *res.status_mut() = http::StatusCode::FOUND;
                    res.headers_mut().insert(http::header::LOCATION, out.as_str().parse().unwrap());
                    res
                }
            }),
        )
        .route(
            "/token",
            axum::routing::post(move |body: axum::body::Bytes| {
                let (seen, key, issuer, q) = (s2.clone(), key2.clone(), iss2.clone(), q2.clone());
                async move {
                    let pairs = query_pairs(std::str::from_utf8(&body).unwrap());
                    let scope = match get(&pairs, "grant_type") {
                        Some("refresh_token") => "files:read".to_owned(),
                        _ => {
                            let s = seen.lock().unwrap();
                            s.authorize.last().and_then(|a| get(a, "scope")).unwrap_or("").to_owned()
                        }
                    };
                    let resource = get(&pairs, "resource").unwrap_or("").to_owned();
                    seen.lock().unwrap().token.push(pairs);
                    let token = key.sign(&json!({
                        "iss": issuer, "aud": resource, "sub": "alice", "scope": scope,
                        "exp": now() + 600, "iat": now(),
                    }));
                    let mut answer = json!({"access_token": token, "token_type": "Bearer", "expires_in": q.refresh_ttl.unwrap_or(600)});
                    if q.refresh_ttl.is_some() {
                        answer["refresh_token"] = json!(format!("rt-{}", now()));
                    }
                    json_response(answer)
                }
            }),
        )
        .route(
            "/register",
            axum::routing::post(move |body: axum::body::Bytes| {
                let seen = s3.clone();
                async move {
                    let req: Value = serde_json::from_slice(&body).unwrap();
                    assert_eq!(req["application_type"], "native");
                    seen.lock().unwrap().registrations += 1;
                    let mut res = json_response(json!({"client_id": "dyn-client", "redirect_uris": req["redirect_uris"]}));
                    *res.status_mut() = http::StatusCode::CREATED;
                    res
                }
            }),
        );
    serve(as_listener, router);

    let server = Server::builder()
        .tool(ToolSpec::new("read").scopes(["files:read"]), || async {
            "contents"
        })
        .tool(ToolSpec::new("write").scopes(["files:write"]), || async {
            "written"
        })
        .build();
    let rs = ResourceServer::builder(mcp.clone())
        .authorization_server(issuer.clone())
        .scopes_supported(["files:read"])
        .validator(
            JwtValidator::builder(issuer.clone(), mcp.clone())
                .discover_jwks()
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    serve(
        mcp_listener,
        rs.protect(StreamableHttp::new(server).router()),
    );
    Stand { issuer, mcp, seen }
}

fn oauth(store: MemoryTokenStore) -> OAuthClient {
    OAuthClient::builder()
        .client_name("test")
        .redirect(HeadlessRedirect::new("http://127.0.0.1:9/callback"))
        .store(store)
        .build()
        .unwrap()
}

#[tokio::test]
async fn code_flow_end_to_end_with_step_up() {
    let s = stand(Quirks::default()).await;
    let store = MemoryTokenStore::new();
    let client = Client::builder()
        .auth(oauth(store.clone()))
        .connect_http(&s.mcp)
        .await
        .unwrap();
    let r = client.call_tool("read", json!({})).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("contents"));
    // `write` needs files:write: 403, step-up with the union of scopes, retry.
    let r = client.call_tool("write", json!({})).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("written"));
    {
        let seen = s.seen.lock().unwrap();
        assert_eq!(
            seen.registrations, 1,
            "registered once, reused for the step-up"
        );
        assert_eq!(seen.authorize.len(), 2);
        let first = &seen.authorize[0];
        assert_eq!(get(first, "code_challenge_method"), Some("S256"));
        assert_eq!(get(first, "resource"), Some(s.mcp.as_str()));
        assert_eq!(get(first, "scope"), Some("files:read offline_access"));
        assert_eq!(
            get(&seen.authorize[1], "scope"),
            Some("files:read files:write offline_access")
        );
        for t in &seen.token {
            assert_eq!(get(t, "resource"), Some(s.mcp.as_str()));
            assert!(get(t, "code_verifier").is_some());
            assert_eq!(get(t, "client_id"), Some("dyn-client"));
        }
    }
    let stored = store.load_token(&s.mcp).await.unwrap().unwrap();
    assert_eq!(stored.issuer, s.issuer);
}

/// Runs a login that must fail before any code reaches the token endpoint.
async fn refused(quirks: Quirks, why: &str) -> AuthError {
    let s = stand(quirks).await;
    let err = oauth(MemoryTokenStore::new())
        .login(&s.mcp)
        .await
        .expect_err(why);
    assert!(
        s.seen.lock().unwrap().token.is_empty(),
        "{why}: the code was redeemed"
    );
    err
}

#[tokio::test]
async fn refusal_paths_never_redeem_the_code() {
    let e = refused(
        Quirks {
            wrong_state: true,
            ..Quirks::default()
        },
        "state",
    )
    .await;
    assert!(e.to_string().contains("state"), "{e}");
    let e = refused(
        Quirks {
            iss: Some("wrong"),
            ..Quirks::default()
        },
        "wrong iss",
    )
    .await;
    assert!(e.to_string().contains("issuer"), "{e}");
    let e = refused(
        Quirks {
            iss: Some("slash"),
            ..Quirks::default()
        },
        "normalised iss",
    )
    .await;
    assert!(e.to_string().contains("issuer"), "{e}");
    let e = refused(
        Quirks {
            iss: Some("omit"),
            advertise_iss: true,
            ..Quirks::default()
        },
        "missing iss",
    )
    .await;
    assert!(e.to_string().contains("iss"), "{e}");
    let e = refused(
        Quirks {
            error: Some("access_denied"),
            ..Quirks::default()
        },
        "denied",
    )
    .await;
    assert!(e.to_string().contains("access_denied"), "{e}");
}

#[tokio::test]
async fn refusal_paths_before_the_authorization_request() {
    let s = stand(Quirks {
        no_pkce: true,
        ..Quirks::default()
    })
    .await;
    let e = oauth(MemoryTokenStore::new())
        .login(&s.mcp)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("PKCE"), "{e}");
    assert!(s.seen.lock().unwrap().authorize.is_empty());

    let s = stand(Quirks {
        metadata_issuer: Some("https://attacker.example.com".into()),
        ..Quirks::default()
    })
    .await;
    let e = oauth(MemoryTokenStore::new())
        .login(&s.mcp)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("issuer"), "{e}");
    assert!(s.seen.lock().unwrap().authorize.is_empty());
    assert_eq!(s.seen.lock().unwrap().registrations, 0);
}

#[tokio::test]
async fn a_resource_that_is_not_the_server_is_refused() {
    // Metadata naming another resource, served where the client looks for it.
    let (listener, base) = bind().await;
    let prm = json!({"resource": "https://evil.example.com/mcp", "authorization_servers": ["http://127.0.0.1:9"]});
    let router = axum::Router::new().route(
        "/.well-known/oauth-protected-resource/mcp",
        axum::routing::get(move || {
            let p = prm.clone();
            async move { json_response(p) }
        }),
    );
    serve(listener, router);
    let e = oauth(MemoryTokenStore::new())
        .login(&format!("{base}/mcp"))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("evil.example.com"), "{e}");
}

#[tokio::test]
async fn repeated_scope_challenges_hit_the_retry_limit() {
    let s = stand(Quirks::default()).await;
    let client = oauth(MemoryTokenStore::new());
    let header = format!(
        r#"Bearer error="insufficient_scope", scope="files:admin", resource_metadata="{}""#,
        s.mcp
            .replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    );
    let challenge = |status| Challenge {
        resource_url: &s.mcp,
        status,
        www_authenticate: vec![header.as_str()],
        dpop_nonce: None,
    };
    assert!(client.on_challenge(challenge(401)).await.unwrap());
    assert!(client.on_challenge(challenge(403)).await.unwrap());
    assert!(client.on_challenge(challenge(403)).await.unwrap());
    match client.on_challenge(challenge(403)).await {
        Err(AuthError::Refused { attempts, .. }) => assert_eq!(attempts, 3),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(s.seen.lock().unwrap().authorize.len(), 3);
    // A 403 that is not about scope is not retried at all.
    let plain = Challenge {
        resource_url: &s.mcp,
        status: 403,
        www_authenticate: vec![],
        dpop_nonce: None,
    };
    assert!(!client.on_challenge(plain).await.unwrap());
}

#[tokio::test]
async fn expiring_tokens_are_refreshed_with_the_resource() {
    let s = stand(Quirks {
        refresh_ttl: Some(5),
        ..Quirks::default()
    })
    .await;
    let store = MemoryTokenStore::new();
    let client = oauth(store.clone());
    let first = client.login(&s.mcp).await.unwrap();
    assert!(first.refresh_token.is_some());
    // Five seconds left: refreshed before use.
    let header = client.authorization(&s.mcp).await.unwrap().unwrap();
    assert!(header.starts_with("Bearer "));
    {
        let seen = s.seen.lock().unwrap();
        let refresh = seen.token.last().unwrap();
        assert_eq!(get(refresh, "grant_type"), Some("refresh_token"));
        assert_eq!(
            get(refresh, "refresh_token"),
            first.refresh_token.as_deref()
        );
        assert_eq!(get(refresh, "resource"), Some(s.mcp.as_str()));
    }
    assert_ne!(
        store
            .load_token(&s.mcp)
            .await
            .unwrap()
            .unwrap()
            .access_token,
        first.access_token
    );
}
