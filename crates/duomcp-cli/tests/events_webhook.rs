//! `duomcp events receive` as a real process, over HTTP and HTTPS (a certificate made by
//! `rcgen`): deliveries POSTed by the test, signed with `duomcp::webhook::Secret` or by the
//! `standardwebhooks` crate, are printed once each when they verify and refused with the
//! documented status when they do not.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::webhook::{Secret, ID, SIGNATURE, SUBSCRIPTION_ID, TIMESTAMP};
use serde_json::{json, Value};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};
use tokio_rustls::rustls;

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");

struct Receiving {
    child: Child,
    url: String,
    lines: Lines<BufReader<ChildStdout>>,
}

/// `duomcp events receive --listen 127.0.0.1:0 ARGS…`, its URL read from its first line.
async fn receive(args: &[&str]) -> Receiving {
    let mut child = Command::new(BIN)
        .args(["events", "receive", "--listen", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("the receiver prints its URL")
        .unwrap()
        .expect("a first line");
    Receiving { child, url, lines }
}

impl Receiving {
    /// The next printed delivery.
    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("a delivery is printed")
            .unwrap()
            .expect("a line");
        serde_json::from_str(&line).unwrap()
    }

    /// Waits for the process to exit on its own; its status and what it printed after.
    async fn exit(mut self) -> (std::process::ExitStatus, Vec<String>) {
        let mut rest = Vec::new();
        while let Some(l) = tokio::time::timeout(Duration::from_secs(15), self.lines.next_line())
            .await
            .expect("stdout closes")
            .unwrap()
        {
            rest.push(l);
        }
        let status = tokio::time::timeout(Duration::from_secs(15), self.child.wait())
            .await
            .expect("the receiver exits by itself")
            .unwrap();
        (status, rest)
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .tls_backend_preconfigured(client_tls(None))
        .build()
        .unwrap()
}

fn client_tls(cert: Option<rustls::pki_types::CertificateDer<'static>>) -> rustls::ClientConfig {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    if let Some(c) = cert {
        roots.add(c).unwrap();
    }
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth()
}

/// POSTs `body` with the given headers; the status and the response body.
async fn post(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> (u16, String) {
    let mut req = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_vec());
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    let res = req.send().await.unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

/// The headers of a delivery signed with `secret` at `ts`.
fn signed(
    secret: &Secret,
    sub: &str,
    id: &str,
    ts: i64,
    body: &[u8],
) -> Vec<(&'static str, String)> {
    vec![
        (ID, id.to_owned()),
        (TIMESTAMP, ts.to_string()),
        (SIGNATURE, secret.sign(id, ts, body)),
        (SUBSCRIPTION_ID, sub.to_owned()),
    ]
}

fn event(id: &str) -> Vec<u8> {
    json!({"eventId": id, "name": "demo.tick", "timestamp": "2026-12-07T00:00:00Z", "data": {"n": 1}, "cursor": "c1"})
        .to_string()
        .into_bytes()
}

#[tokio::test]
async fn plain_http_receiver_verifies_refuses_dedups_echoes_and_stops_at_count() {
    let secret = Secret::generate();
    let text = secret.expose();
    let mut r = receive(&["--secret", &text, "--max-body", "1024", "--count", "2"]).await;
    assert!(r.url.starts_with("http://127.0.0.1:"), "{}", r.url);
    let c = http();

    // A delivery signed with the secret: 200, printed with its subscription id.
    let body = event("evt_1");
    let (status, _) = post(
        &c,
        &r.url,
        &signed(&secret, "sub_1", "evt_1", now(), &body),
        &body,
    )
    .await;
    assert_eq!(status, 200);
    let printed = r.next().await;
    assert_eq!(printed["subscriptionId"], "sub_1");
    assert_eq!(printed["webhookId"], "evt_1");
    assert_eq!(
        printed["body"],
        serde_json::from_slice::<Value>(&body).unwrap()
    );

    // Another secret's signature: 401.
    let other = Secret::generate();
    let body2 = event("evt_2");
    let (status, _) = post(
        &c,
        &r.url,
        &signed(&other, "sub_1", "evt_2", now(), &body2),
        &body2,
    )
    .await;
    assert_eq!(status, 401);
    // The right signature over another body: 401.
    let (status, _) = post(
        &c,
        &r.url,
        &signed(&secret, "sub_1", "evt_2", now(), &body),
        &body2,
    )
    .await;
    assert_eq!(status, 401);
    // Signed, but six minutes old: 401 (stale), and as far ahead: 401.
    let (status, _) = post(
        &c,
        &r.url,
        &signed(&secret, "sub_1", "evt_2", now() - 360, &body2),
        &body2,
    )
    .await;
    assert_eq!(status, 401);
    let (status, _) = post(
        &c,
        &r.url,
        &signed(&secret, "sub_1", "evt_2", now() + 360, &body2),
        &body2,
    )
    .await;
    assert_eq!(status, 401);
    // A header missing: 400.
    let mut h = signed(&secret, "sub_1", "evt_2", now(), &body2);
    h.retain(|(k, _)| *k != SUBSCRIPTION_ID);
    let (status, _) = post(&c, &r.url, &h, &body2).await;
    assert_eq!(status, 400);
    // The first delivery again (a retry: new timestamp, new signature): 200, not printed.
    let (status, _) = post(
        &c,
        &r.url,
        &signed(&secret, "sub_1", "evt_1", now(), &body),
        &body,
    )
    .await;
    assert_eq!(status, 200);
    // A verification challenge: echoed in the body, not printed.
    let ch = br#"{"type":"verification","challenge":"nonce-7f3a"}"#;
    let (status, text) = post(
        &c,
        &r.url,
        &signed(&secret, "sub_1", "msg_verification_1", now(), ch),
        ch,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"challenge": "nonce-7f3a"})
    );
    // A body over --max-body (1024): 413, signed or not.
    let big =
        json!({"eventId": "evt_big", "name": "demo.tick", "data": "x".repeat(2000)}).to_string();
    let (status, _) = post(
        &c,
        &r.url,
        &signed(&secret, "sub_1", "evt_big", now(), big.as_bytes()),
        big.as_bytes(),
    )
    .await;
    assert_eq!(status, 413);

    // A gap envelope, on another path: printed; it is the second, so the process ends, 0.
    let gap = br#"{"type":"gap","cursor":"c9"}"#;
    let url = format!("{}hooks/tenant", r.url);
    let (status, _) = post(
        &c,
        &url,
        &signed(&secret, "sub_1", "msg_gap_1", now(), gap),
        gap,
    )
    .await;
    assert_eq!(status, 200);
    let printed = r.next().await;
    assert_eq!(printed["body"], json!({"type": "gap", "cursor": "c9"}));
    assert_eq!(printed["webhookId"], "msg_gap_1");
    let (status, rest) = r.exit().await;
    assert!(status.success(), "{status}");
    assert!(rest.is_empty(), "printed nothing else: {rest:?}");
}

/// A self-signed certificate for 127.0.0.1 in PEM files under a fresh directory.
fn certificate() -> (
    std::path::PathBuf,
    rustls::pki_types::CertificateDer<'static>,
) {
    let made =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let dir = std::env::temp_dir().join(format!("duomcp-hook-{}-{}", std::process::id(), now()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("cert.pem"), made.cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), made.signing_key.serialize_pem()).unwrap();
    (dir, made.cert.der().clone())
}

#[tokio::test]
async fn https_receiver_keeps_two_tenants_apart() {
    let (dir, cert) = certificate();
    let (a, b, a2) = (Secret::generate(), Secret::generate(), Secret::generate());
    let (sa, sb) = (
        format!("sub_a={}", a.expose()),
        format!("sub_b={}", b.expose()),
    );
    // sub_a's secret being rotated: the new one verifies too, for sub_a only.
    let sa2 = format!("sub_a={}", a2.expose());
    let cert_path = dir.join("cert.pem");
    let key_path = dir.join("key.pem");
    let mut r = receive(&[
        "--secret",
        &sa,
        "--secret",
        &sb,
        "--secret",
        &sa2,
        "--tls-cert",
        cert_path.to_str().unwrap(),
        "--tls-key",
        key_path.to_str().unwrap(),
        "--count",
        "3",
    ])
    .await;
    assert!(r.url.starts_with("https://127.0.0.1:"), "{}", r.url);
    let c = reqwest::Client::builder()
        .tls_backend_preconfigured(client_tls(Some(cert)))
        .build()
        .unwrap();
    let body = event("evt_1");
    // Each tenant's secret verifies its own subscription only.
    let (status, _) = post(
        &c,
        &r.url,
        &signed(&b, "sub_a", "evt_1", now(), &body),
        &body,
    )
    .await;
    assert_eq!(status, 401, "b's secret for a's subscription");
    let (status, _) = post(
        &c,
        &r.url,
        &signed(&a, "sub_b", "evt_1", now(), &body),
        &body,
    )
    .await;
    assert_eq!(status, 401, "a's secret for b's subscription");
    let (status, _) = post(
        &c,
        &r.url,
        &signed(&a, "sub_c", "evt_1", now(), &body),
        &body,
    )
    .await;
    assert_eq!(status, 401, "no secret for sub_c");
    let (status, _) = post(
        &c,
        &r.url,
        &signed(&a, "sub_a", "evt_1", now(), &body),
        &body,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(r.next().await["subscriptionId"], "sub_a");
    // The same event id under the other subscription is its own delivery.
    let (status, _) = post(
        &c,
        &r.url,
        &signed(&b, "sub_b", "evt_1", now(), &body),
        &body,
    )
    .await;
    assert_eq!(status, 200);
    let printed = r.next().await;
    assert_eq!(
        (
            printed["subscriptionId"].as_str(),
            printed["webhookId"].as_str()
        ),
        (Some("sub_b"), Some("evt_1"))
    );
    // The rotated-in secret: for sub_a, not for sub_b.
    let body2 = event("evt_2");
    let (status, _) = post(
        &c,
        &r.url,
        &signed(&a2, "sub_b", "evt_2", now(), &body2),
        &body2,
    )
    .await;
    assert_eq!(status, 401, "sub_a's new secret for b's subscription");
    let (status, _) = post(
        &c,
        &r.url,
        &signed(&a2, "sub_a", "evt_2", now(), &body2),
        &body2,
    )
    .await;
    assert_eq!(status, 200);
    let printed = r.next().await;
    assert_eq!(printed["subscriptionId"], "sub_a");
    assert_eq!(printed["webhookId"], "evt_2");
    let (status, rest) = r.exit().await;
    assert!(status.success(), "{status}");
    assert!(rest.is_empty(), "{rest:?}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn signatures_of_the_standard_webhooks_library_are_accepted() {
    let secret = Secret::generate();
    let theirs = standardwebhooks::Webhook::new(&secret.expose()).unwrap();
    let text = secret.expose();
    let mut r = receive(&["--secret", &text, "--count", "1"]).await;
    let c = http();
    let body = event("evt_sw");
    let ts = now();
    let signature = theirs.sign("evt_sw", ts, &body).unwrap();
    let headers = |sig: &str| {
        vec![
            (ID, "evt_sw".to_owned()),
            (TIMESTAMP, ts.to_string()),
            (SIGNATURE, sig.to_owned()),
            (SUBSCRIPTION_ID, "sub_sw".to_owned()),
        ]
    };
    // Their signature over another body: refused.
    let (status, _) = post(&c, &r.url, &headers(&signature), &event("evt_other")).await;
    assert_eq!(status, 401);
    let (status, _) = post(&c, &r.url, &headers(&signature), &body).await;
    assert_eq!(status, 200);
    assert_eq!(r.next().await["webhookId"], "evt_sw");
    let (status, _) = r.exit().await;
    assert!(status.success());
}

#[tokio::test]
async fn duration_ends_the_receiver_with_status_0_and_bad_input_is_refused() {
    let text = Secret::generate().expose();
    let r = receive(&["--secret", &text, "--duration", "0.5"]).await;
    let (status, rest) = r.exit().await;
    assert!(status.success(), "{status}");
    assert!(rest.is_empty());
    // A secret that is not whsec_: a usage error (2), before listening.
    let out = Command::new(BIN)
        .args([
            "events",
            "receive",
            "--listen",
            "127.0.0.1:0",
            "--secret",
            "hunter2",
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A 2025-11-25 Streamable HTTP server that answers `events/subscribe` with `result` and
/// `events/unsubscribe` with `{}`, reporting each request's method and params: the server
/// side of webhooks is not in duomcp yet.
async fn scripted_server(
    result: Value,
) -> (
    String,
    tokio::sync::mpsc::UnboundedReceiver<(String, Value)>,
) {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let handler = move |body: axum::body::Bytes| {
        let tx = tx.clone();
        let result = result.clone();
        async move {
            let msg: Value = serde_json::from_slice(&body).unwrap();
            let Some(id) = msg.get("id").cloned() else {
                return StatusCode::ACCEPTED.into_response();
            };
            let method = msg["method"].as_str().unwrap_or_default().to_owned();
            let answer = match method.as_str() {
                "initialize" => json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": { "events": {} },
                    "serverInfo": { "name": "scripted", "version": "0" }
                }),
                "events/subscribe" => result,
                _ => json!({}),
            };
            if method != "initialize" {
                // Less the trace context the CLI adds (`_meta.traceparent`).
                let mut params = msg["params"].clone();
                if let Some(p) = params.as_object_mut() {
                    p.remove("_meta");
                }
                let _ = tx.send((method, params));
            }
            axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": answer})).into_response()
        }
    };
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(handler)
            .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
            .delete(|| async { StatusCode::METHOD_NOT_ALLOWED }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, rx)
}

async fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        Command::new(BIN).args(args).kill_on_drop(true).output(),
    )
    .await
    .expect("duomcp finishes")
    .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn subscribe_and_unsubscribe_from_the_command_line() {
    let granted = json!({
        "id": "sub_9", "refreshBefore": "2026-12-07T18:00:00Z", "cursor": "c5", "truncated": false,
        "deliveryStatus": {"active": true, "lastDeliveryAt": null, "lastError": null}
    });
    let (url, mut seen) = scripted_server(granted).await;

    // No secret given: one is generated, sent, and printed on stderr (the last line).
    let (code, out, err) = run(&[
        "events",
        "subscribe",
        &url,
        "incident.created",
        "severity=P1",
        "--webhook",
        "https://hooks.example.com/h",
        "--ttl",
        "600",
        "--cursor",
        "c4",
        "--era",
        "legacy",
    ])
    .await;
    assert_eq!(code, Some(0), "{err}");
    let printed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(printed["id"], "sub_9");
    assert_eq!(printed["refreshBefore"], "2026-12-07T18:00:00Z");
    assert_eq!(printed["cursor"], "c5");
    assert_eq!(printed["deliveryStatus"]["active"], true);
    let (method, params) = seen.recv().await.unwrap();
    assert_eq!(method, "events/subscribe");
    let secret = params["delivery"]["secret"].as_str().unwrap().to_owned();
    assert!(Secret::parse(&secret).is_ok(), "{secret}");
    assert_eq!(err.lines().last(), Some(secret.as_str()), "{err}");
    assert_eq!(
        params,
        json!({
            "name": "incident.created",
            "arguments": {"severity": "P1"},
            "delivery": {"mode": "webhook", "url": "https://hooks.example.com/h", "secret": secret},
            "cursor": "c4",
            "ttlMs": 600000
        })
    );

    // A secret from a file, arguments as JSON, the URL after the name: nothing on stderr.
    let dir =
        std::env::temp_dir().join(format!("duomcp-hook-sub-{}-{}", std::process::id(), now()));
    std::fs::create_dir_all(&dir).unwrap();
    let mine = Secret::generate().expose();
    std::fs::write(dir.join("secret"), format!("{mine}\n")).unwrap();
    let file = dir.join("secret");
    let (code, _, err) = run(&[
        "events",
        "subscribe",
        "incident.created",
        &url,
        "--args",
        r#"{"severity":"P2"}"#,
        "--webhook",
        "https://hooks.example.com/h",
        "--secret-file",
        file.to_str().unwrap(),
        "--no-expiry",
        "--era",
        "legacy",
    ])
    .await;
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("whsec_"), "{err}");
    let (_, params) = seen.recv().await.unwrap();
    assert_eq!(params["delivery"]["secret"], mine.as_str());
    assert_eq!(params["arguments"], json!({"severity": "P2"}));
    assert_eq!(params["cursor"], Value::Null);
    assert!(params.as_object().unwrap().contains_key("ttlMs") && params["ttlMs"].is_null());
    let _ = std::fs::remove_dir_all(dir);

    // A secret that is not whsec_: a usage error (2), nothing sent.
    let (code, _, _) = run(&[
        "events",
        "subscribe",
        &url,
        "x",
        "--webhook",
        "https://h",
        "--secret",
        "s3cret",
    ])
    .await;
    assert_eq!(code, Some(2));

    let (code, out, err) = run(&[
        "events",
        "unsubscribe",
        &url,
        "incident.created",
        "severity=P1",
        "--webhook",
        "https://hooks.example.com/h",
        "--era",
        "legacy",
    ])
    .await;
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out, "");
    let (method, params) = seen.recv().await.unwrap();
    assert_eq!(method, "events/unsubscribe");
    assert_eq!(
        params,
        json!({
            "name": "incident.created",
            "arguments": {"severity": "P1"},
            "delivery": {"url": "https://hooks.example.com/h"}
        })
    );
    assert!(seen.try_recv().is_err());
}

#[tokio::test]
async fn subscribe_to_a_server_without_webhooks_fails_with_status_1() {
    // The reference server has no `events/subscribe` (yet): the server's error, status 1.
    let (code, out, err) = run(&[
        "events",
        "subscribe",
        "demo.tick",
        "--webhook",
        "https://hooks.example.com/h",
        "--json",
        "--",
        BIN,
        "serve",
    ])
    .await;
    assert_eq!(code, Some(1), "{out}{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v["error"]["message"].is_string(), "{v}");
}
