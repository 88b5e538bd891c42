//! `duomcp gateway` shared by two tenants on purpose: alice and bob, two authenticated
//! principals with clients of their own, over Streamable HTTP, in front of real `duomcp serve`
//! upstreams. An upstream's request for input reaches only the client whose call it belongs to
//! (or nobody, with an error to the upstream); one client's unanswered calls never starve the
//! other's; isolation gives each principal an upstream session of its own.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::auth::{ResourceServer, StaticTokens};
use duomcp::client::{Client, EraChoice, RequestOptions};
use duomcp::schema::{ElicitRequestParams, ElicitResult, JsonObject};
use duomcp::server::Principal;
use duomcp::transport::http::StreamableHttp;
use duomcp_gateway::{Gateway, GatewayConfig, UpstreamConfig};
use duomcp_testkit::text;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Every test is bounded: a hang fails it.
const BOUND: Duration = Duration::from_secs(120);

/// The gateway's MCP endpoint over HTTP, behind a resource server that knows two tokens:
/// `alice-token` (principal `alice`, scope `files:write`) and `bob-token` (principal `bob`, no
/// scopes).
async fn serve_gateway(gw: &Gateway) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let rs = ResourceServer::builder(url.clone())
        .authorization_server("http://127.0.0.1:9/unused-issuer")
        .validator(
            StaticTokens::new()
                .with(
                    "alice-token",
                    Principal::new("alice").with_scopes(["files:write"]),
                )
                .with("bob-token", Principal::new("bob")),
        )
        .build()
        .unwrap();
    let app = rs.protect(StreamableHttp::new(gw.server().clone()).router());
    tokio::spawn(duomcp::transport::http::serve(listener, app));
    url
}

/// The reference server over Streamable HTTP on a free local port; its address.
async fn reference_over_http() -> std::net::SocketAddr {
    let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = upstream.local_addr().unwrap();
    tokio::spawn(duomcp::transport::http::serve(
        upstream,
        duomcp_cli::reference::server().http_router(),
    ));
    addr
}

/// The questions a client was asked.
type Asked = Arc<Mutex<Vec<String>>>;

/// `who`'s client of the gateway at `url`, speaking `era`: it answers every elicitation with
/// its own name (and records the question), after `delay`.
async fn tenant(url: &str, who: &str, era: EraChoice, delay: Duration) -> (Client, Asked) {
    let asked: Asked = Arc::default();
    let (name, seen) = (who.to_owned(), asked.clone());
    let client = Client::builder()
        .name(format!("{who}-client"))
        .era(era)
        .header("Authorization", format!("Bearer {who}-token"))
        .request_timeout(Duration::from_secs(60))
        .on_elicit(move |p: ElicitRequestParams| {
            let (name, seen) = (name.clone(), seen.clone());
            async move {
                let message = match &p {
                    ElicitRequestParams::Form(f) => f.message.clone(),
                    ElicitRequestParams::Url(u) => u.message.clone(),
                };
                seen.lock().unwrap().push(message);
                tokio::time::sleep(delay).await;
                let content: JsonObject = serde_json::from_value(json!({
                    "name": name, "color": format!("{name}-blue"),
                    "username": name, "email": format!("{name}@example.com")
                }))
                .unwrap();
                Ok(ElicitResult::accept(Some(content)))
            }
        })
        .connect_http(url)
        .await
        .unwrap_or_else(|e| panic!("{who} connects: {e}"));
    (client, asked)
}

fn legacy_stdio(isolation: &str) -> GatewayConfig {
    GatewayConfig::from_toml(&format!(
        r#"
        [[upstream]]
        name = "ref"
        command = "{bin}"
        args = ["serve", "--era", "legacy"]
        isolation = "{isolation}"
        "#,
        bin = env!("CARGO_BIN_EXE_duomcp")
    ))
    .unwrap()
}

/// The attack of the review: alice's call asks for input in two rounds; between them, bob's
/// slow call starts on the same upstream session. The upstream's second question is asked
/// while two calls are in flight on its stdio session, so it belongs to no call the gateway can
/// name: before, it went to the newest call (bob's: bob was asked alice's question, alice's
/// retry timed out); now it reaches nobody, the upstream gets an error, and alice's call fails
/// at once, saying why. Bob's call is untouched.
async fn shared_stdio_upstream_never_gives_bob_alices_question(era: EraChoice) {
    let gw = Gateway::start(legacy_stdio("shared")).await.unwrap();
    let url = serve_gateway(&gw).await;
    // Alice answers her first question after a second: bob's call starts meanwhile.
    let (alice, alice_asked) = tenant(&url, "alice", era, Duration::from_secs(1)).await;
    let (bob, bob_asked) = tenant(&url, "bob", era, Duration::ZERO).await;

    let alice_call = tokio::spawn(async move {
        let t0 = Instant::now();
        let r = alice
            .call_tool("test_input_required_result_multi_round", json!({}))
            .await;
        (r, t0.elapsed())
    });
    // Bob's slow call starts while alice's first question is open.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let bob_result = bob
        .call_tool("slow_compute", json!({ "seconds": 3, "label": "bob" }))
        .await
        .expect("bob's call");
    assert_eq!(
        text(&bob_result),
        "Computed bob in 3s",
        "bob gets his own result"
    );
    assert_ne!(bob_result.is_error, Some(true));
    assert!(
        bob_asked.lock().unwrap().is_empty(),
        "bob was asked nothing (his call asks nothing): {:?}",
        bob_asked.lock().unwrap()
    );

    let (alice_result, took) = alice_call.await.unwrap();
    let asked = alice_asked.lock().unwrap().clone();
    assert_eq!(
        asked,
        ["Step 1: What is your name?"],
        "alice was asked her first question only"
    );
    // The second question could not be attributed: alice's call fails now, saying so (as a
    // tool error, or as the call's error), not after a timeout.
    let failure = match &alice_result {
        Ok(r) => {
            assert_eq!(r.is_error, Some(true), "{r:?}");
            text(r)
        }
        Err(e) => e.to_string(),
    };
    assert!(
        failure.contains("cannot tell which call"),
        "alice learns why: {failure}"
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_clients_shared_stdio_upstream_never_gives_bob_alices_question() {
    tokio::time::timeout(
        BOUND,
        shared_stdio_upstream_never_gives_bob_alices_question(EraChoice::Legacy),
    )
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_clients_shared_stdio_upstream_never_gives_bob_alices_question() {
    tokio::time::timeout(
        BOUND,
        shared_stdio_upstream_never_gives_bob_alices_question(EraChoice::Modern),
    )
    .await
    .expect("bounded");
}

/// The same interleaving with `isolation = "principal"`: alice and bob each have an upstream
/// process of their own, so alice's second question is hers alone and her call completes with
/// her answers; bob's completes with his. Both revisions of client at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn principal_isolation_gives_each_tenant_its_own_upstream_session() {
    tokio::time::timeout(BOUND, async {
        let gw = Gateway::start(legacy_stdio("principal")).await.unwrap();
        let url = serve_gateway(&gw).await;
        for (alice_era, bob_era) in [
            (EraChoice::Modern, EraChoice::Legacy),
            (EraChoice::Legacy, EraChoice::Modern),
        ] {
            let (alice, alice_asked) =
                tenant(&url, "alice", alice_era, Duration::from_millis(800)).await;
            let (bob, bob_asked) = tenant(&url, "bob", bob_era, Duration::ZERO).await;
            let alice_call = tokio::spawn(async move {
                alice
                    .call_tool("test_input_required_result_multi_round", json!({}))
                    .await
            });
            tokio::time::sleep(Duration::from_millis(300)).await;
            // Bob's slow call runs while alice's second question is asked and answered; then
            // bob asks on his own session. (Two calls of bob's at once on his stdio session
            // could not be told apart: isolation separates tenants, not one tenant's calls.)
            let bob_slow = bob
                .call_tool("slow_compute", json!({ "seconds": 2, "label": "bob" }))
                .await;
            assert_eq!(text(&bob_slow.unwrap()), "Computed bob in 2s");
            let bob_asks = bob
                .call_tool("test_elicitation", json!({ "message": "for bob" }))
                .await;
            let bob_asks = text(&bob_asks.unwrap());
            assert!(bob_asks.contains("\"username\":\"bob\""), "{bob_asks}");
            let alice_result = alice_call.await.unwrap().expect("alice's call");
            assert_eq!(
                text(&alice_result),
                "alice likes alice-blue",
                "alice's two rounds were answered by alice"
            );
            assert_eq!(
                alice_asked.lock().unwrap().clone(),
                [
                    "Step 1: What is your name?",
                    "Step 2: What is your favorite color?"
                ]
            );
            assert_eq!(bob_asked.lock().unwrap().clone(), ["for bob"]);
        }
        let ups = gw.upstreams();
        let up = &ups[0];
        assert_eq!(
            up.isolated_sessions(),
            2,
            "one upstream session per principal, reused by each principal's clients"
        );
    })
    .await
    .expect("bounded");
}

/// A 2025-11-25 upstream over Streamable HTTP sends each question on its call's POST stream:
/// every question is attributable, so many tenants' eliciting calls at once on one shared
/// upstream session each get their own question (the review saw 7–20 of 32 get their own).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_eliciting_calls_of_two_tenants_each_get_their_own_question() {
    tokio::time::timeout(BOUND, async {
        let up_addr = reference_over_http().await;
        let mut up = UpstreamConfig::http("ref", format!("http://{up_addr}/mcp"));
        up.era = duomcp_gateway::UpstreamEra::Legacy;
        let gw = Gateway::start(GatewayConfig::single(up)).await.unwrap();
        let url = serve_gateway(&gw).await;
        let mut calls = Vec::new();
        for (who, era) in [("alice", EraChoice::Modern), ("bob", EraChoice::Legacy)] {
            let (client, asked) = tenant(&url, who, era, Duration::from_millis(50)).await;
            for i in 0..16 {
                let client = client.clone();
                let message = format!("for {who} #{i}");
                calls.push(tokio::spawn(async move {
                    let r = client
                        .call_tool("test_elicitation", json!({ "message": message }))
                        .await
                        .unwrap();
                    (who, text(&r))
                }));
            }
            calls.push(tokio::spawn(async move {
                // Keeps the client (and its record of questions) alive to the end.
                tokio::time::sleep(Duration::from_secs(5)).await;
                let asked = asked.lock().unwrap().clone();
                (who, asked.join("\n"))
            }));
        }
        let mut own = 0;
        for c in calls {
            let (who, t) = c.await.unwrap();
            if t.starts_with("User response") {
                assert!(t.contains(&format!("\"username\":\"{who}\"")), "{who}: {t}");
                own += 1;
            } else {
                // The record of questions: each was the tenant's own.
                assert!(
                    t.lines().all(|q| q.starts_with(&format!("for {who} #"))),
                    "{who} was asked: {t}"
                );
                assert_eq!(t.lines().count(), 16, "{who} was asked: {t}");
            }
        }
        assert_eq!(own, 32, "every call got its own answer");
    })
    .await
    .expect("bounded");
}

/// One principal's calls waiting for input hold no upstream slot: alice leaves four eliciting
/// calls unanswered on an upstream limited to two calls at once, and bob's plain call still
/// runs at once (before, it waited for alice's holds to time out: 57.8 s in the review).
/// Alice's fifth held call is refused by her own bound (`max_holds_per_principal = 4`), and
/// her own further calls still run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unanswered_calls_of_one_tenant_never_starve_another() {
    tokio::time::timeout(BOUND, async {
        let up_addr = reference_over_http().await;
        let config = GatewayConfig::from_toml(&format!(
            r#"
            [gateway]
            hold_timeout_secs = 60
            max_holds_per_principal = 4
            [[upstream]]
            name = "ref"
            url = "http://{up_addr}/mcp"
            era = "legacy"
            max_concurrency = 2
            "#
        ))
        .unwrap();
        let gw = Gateway::start(config).await.unwrap();
        let url = serve_gateway(&gw).await;
        // Alice speaks 2026-07-28 and relays input rounds herself (never answers them).
        let (alice, _) = tenant(&url, "alice", EraChoice::Modern, Duration::ZERO).await;
        let relay = || RequestOptions::new().relay_input_required();
        for i in 0..4 {
            let r = alice
                .request_object(
                    "tools/call",
                    json_object(json!({ "name": "test_elicitation",
                                        "arguments": { "message": format!("held {i}") } })),
                    relay(),
                )
                .await
                .unwrap();
            assert_eq!(r["resultType"], "input_required", "{r}");
        }
        assert_eq!(gw.holds().len(), 4, "alice's four calls are held");
        // The fifth is refused at once, and holds nothing.
        let fifth = alice
            .request_object(
                "tools/call",
                json_object(json!({ "name": "test_elicitation",
                                    "arguments": { "message": "held 5" } })),
                relay(),
            )
            .await
            .unwrap();
        assert_eq!(fifth["isError"], true, "{fifth}");
        assert!(
            fifth.to_string().contains("waiting for your input already"),
            "{fifth}"
        );
        assert_eq!(gw.holds().len(), 4);

        let (bob, _) = tenant(&url, "bob", EraChoice::Legacy, Duration::ZERO).await;
        let t0 = Instant::now();
        let r = bob
            .call_tool("slow_compute", json!({ "seconds": 0, "label": "bob" }))
            .await
            .unwrap();
        assert_eq!(text(&r), "Computed bob in 0s");
        let took = t0.elapsed();
        assert!(took < Duration::from_secs(5), "bob waited {took:?}");
        // Alice herself is not locked out of plain calls either.
        let r = alice
            .call_tool("slow_compute", json!({ "seconds": 0, "label": "alice" }))
            .await
            .unwrap();
        assert_eq!(text(&r), "Computed alice in 0s");
    })
    .await
    .expect("bounded");
}

/// A round one tenant leaves unanswered takes input away from nobody: alice (2026-07-28,
/// relaying rounds herself) never answers her call's question, so the gateway holds her call on
/// the shared stdio upstream session, its handler blocked on that question. Bob's eliciting call
/// then runs beside it: its question is the only one a call in flight could have asked, and
/// reaches bob, and only bob (before, with two calls in flight, it reached nobody until alice's
/// hold timed out).
async fn held_round_of_one_tenant_leaves_the_other_his_questions(bob_era: EraChoice) {
    tokio::time::timeout(BOUND, async {
        let gw = Gateway::start(legacy_stdio("shared")).await.unwrap();
        let url = serve_gateway(&gw).await;
        let (alice, alice_asked) = tenant(&url, "alice", EraChoice::Modern, Duration::ZERO).await;
        let held = alice
            .request_object(
                "tools/call",
                json_object(json!({ "name": "test_elicitation",
                                    "arguments": { "message": "alice's question" } })),
                RequestOptions::new().relay_input_required(),
            )
            .await
            .unwrap();
        assert_eq!(held["resultType"], "input_required", "{held}");
        assert_eq!(gw.holds().len(), 1, "alice's call is held");

        let (bob, bob_asked) = tenant(&url, "bob", bob_era, Duration::ZERO).await;
        let r = bob
            .call_tool("test_elicitation", json!({ "message": "bob's question" }))
            .await
            .expect("bob's call");
        assert_ne!(r.is_error, Some(true), "{r:?}");
        assert!(text(&r).contains("bob"), "bob's own answer: {}", text(&r));
        assert_eq!(*bob_asked.lock().unwrap(), ["bob's question"]);
        assert!(
            alice_asked.lock().unwrap().is_empty(),
            "alice's handlers were asked nothing (she relays her rounds)"
        );
        assert_eq!(gw.holds().len(), 1, "alice's call is still held, untouched");
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_round_of_one_tenant_leaves_a_legacy_client_its_questions() {
    held_round_of_one_tenant_leaves_the_other_his_questions(EraChoice::Legacy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_round_of_one_tenant_leaves_a_modern_client_its_questions() {
    held_round_of_one_tenant_leaves_the_other_his_questions(EraChoice::Modern).await;
}

/// Per-tool authorization (`[[upstream.access]]`): a tool only alice may call, and a tool that
/// needs a scope only alice holds. Bob is refused both, each saying why; alice gets both; a
/// tool no rule covers serves both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_rules_refuse_bob_what_only_alice_may_call() {
    tokio::time::timeout(BOUND, async {
        let config = GatewayConfig::from_toml(&format!(
            r#"
            [[upstream]]
            name = "ref"
            command = "{bin}"
            args = ["serve", "--era", "legacy"]
            [[upstream.access]]
            tools = ["slow_*"]
            allow_principals = ["ali?e"]
            [[upstream.access]]
            tools = ["test_image_content"]
            require_scopes = ["files:write"]
            "#,
            bin = env!("CARGO_BIN_EXE_duomcp")
        ))
        .unwrap();
        let gw = Gateway::start(config).await.unwrap();
        let url = serve_gateway(&gw).await;
        for era in [EraChoice::Legacy, EraChoice::Modern] {
            let (alice, _) = tenant(&url, "alice", era, Duration::ZERO).await;
            let (bob, _) = tenant(&url, "bob", era, Duration::ZERO).await;
            let slow = json!({ "seconds": 0, "label": "x" });
            let r = alice.call_tool("slow_compute", slow.clone()).await.unwrap();
            assert_eq!(text(&r), "Computed x in 0s", "{era:?}");
            let refused = bob.call_tool("slow_compute", slow).await.unwrap_err();
            assert!(
                refused.to_string().contains("not available to you"),
                "{era:?}: {refused}"
            );
            let r = alice
                .call_tool("test_image_content", json!({}))
                .await
                .unwrap();
            assert_ne!(r.is_error, Some(true), "{era:?}: {r:?}");
            let refused = bob
                .call_tool("test_image_content", json!({}))
                .await
                .unwrap_err();
            assert!(
                refused.to_string().contains("files:write"),
                "{era:?}: the refusal names the scope: {refused}"
            );
            let r = bob.call_tool("test_simple_text", json!({})).await.unwrap();
            assert_ne!(r.is_error, Some(true), "{era:?}: {r:?}");
        }
    })
    .await
    .expect("bounded");
}

fn json_object(v: Value) -> serde_json::Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!(),
    }
}
