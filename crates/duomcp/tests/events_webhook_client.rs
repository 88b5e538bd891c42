//! `Client::subscribe_webhook` and `unsubscribe_webhook` against a scripted 2025-11-25 server
//! on a byte pipe (the server side of webhooks is not in duomcp yet): the requests' shape as
//! the working group's design writes it, the results decoded, a malformed result an error, and
//! the secret handed over verifying, in [`duomcp::webhook::receiver::Receiver`], a delivery the
//! scripted server signs with it; and the receiver's axum handler served on a socket.

#![cfg(all(feature = "events", feature = "client", feature = "http-server"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::client::events::{Ttl, WebhookOptions, WebhookSubscription};
use duomcp::client::{Client, ClientError, EraChoice};
use duomcp::webhook::receiver::{DeliveryKind, Outcome, Receiver, ReceiverOptions};
use duomcp::webhook::{Secret, ID, SIGNATURE, SUBSCRIPTION_ID, TIMESTAMP};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

type Answer = Result<Value, Value>;

/// A server answering `events/subscribe` and `events/unsubscribe` with what `answer` holds at
/// the time (a result, or an error object), and reporting each request's method and params.
async fn scripted(
    answer: Arc<Mutex<Answer>>,
) -> (Client, mpsc::UnboundedReceiver<(String, Value)>) {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (read, mut write) = tokio::io::split(server_io);
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut lines = BufReader::new(read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let msg: Value = serde_json::from_str(&line).unwrap();
            let Some(id) = msg.get("id").cloned() else {
                continue;
            };
            let method = msg["method"].as_str().unwrap_or_default().to_owned();
            let reply = if method == "initialize" {
                Ok(json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": { "events": {} },
                    "serverInfo": { "name": "scripted", "version": "0" }
                }))
            } else {
                let _ = tx.send((method, msg["params"].clone()));
                answer.lock().unwrap().clone()
            };
            let reply = match reply {
                Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
                Err(error) => json!({ "jsonrpc": "2.0", "id": id, "error": error }),
            };
            let mut text = reply.to_string();
            text.push('\n');
            if write.write_all(text.as_bytes()).await.is_err() {
                break;
            }
        }
    });
    let (r, w) = tokio::io::split(client_io);
    let client = tokio::time::timeout(
        Duration::from_secs(10),
        Client::builder().era(EraChoice::Legacy).connect(r, w),
    )
    .await
    .unwrap()
    .unwrap();
    (client, rx)
}

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("timed out")
}

#[tokio::test]
async fn subscribe_sends_the_designed_params_and_decodes_the_result() {
    let answer = Arc::new(Mutex::new(Ok(json!({
        "id": "sub_a3f1c8e2b0d49f7e",
        "refreshBefore": "2026-02-19T17:00:00Z",
        "cursor": "cursor_xyz",
        "truncated": true,
        "deliveryStatus": {
            "active": false,
            "lastDeliveryAt": "2026-02-19T15:45:00Z",
            "lastError": "http_4xx",
            "failedSince": "2026-02-19T15:50:00.250+01:00"
        }
    }))));
    let (client, mut requests) = scripted(answer.clone()).await;
    let secret = Secret::generate();
    let options = WebhookOptions::new("https://hooks.example.com/h/1", secret.clone())
        .cursor("cursor_start_001")
        .max_age(Duration::from_secs(300))
        .ttl(Ttl::Suggest(Duration::from_secs(3600)));
    let sub =
        within(client.subscribe_webhook("incident.created", json!({"severity": "P1"}), &options))
            .await
            .unwrap();
    let (method, params) = requests.recv().await.unwrap();
    assert_eq!(method, "events/subscribe");
    assert_eq!(
        params,
        json!({
            "name": "incident.created",
            "arguments": {"severity": "P1"},
            "delivery": {
                "mode": "webhook",
                "url": "https://hooks.example.com/h/1",
                "secret": secret.expose()
            },
            "cursor": "cursor_start_001",
            "maxAgeMs": 300000,
            "ttlMs": 3600000
        })
    );
    assert_eq!(sub.id, "sub_a3f1c8e2b0d49f7e");
    assert_eq!(sub.refresh_before.as_deref(), Some("2026-02-19T17:00:00Z"));
    assert_eq!(sub.cursor.as_deref(), Some("cursor_xyz"));
    assert!(sub.truncated);
    let status = sub.delivery_status.unwrap();
    assert!(!status.active);
    assert_eq!(status.last_error.as_deref(), Some("http_4xx"));
    assert_eq!(
        status.last_delivery_at.as_deref(),
        Some("2026-02-19T15:45:00Z")
    );
    assert_eq!(
        status.failed_since.as_deref(),
        Some("2026-02-19T15:50:00.250+01:00")
    );

    // No expiry asked: `ttlMs: null`; from now: `cursor: null`; granted no expiry: `None`.
    *answer.lock().unwrap() = Ok(json!({"id": "sub_2", "refreshBefore": null, "cursor": null}));
    let options =
        WebhookOptions::new("https://hooks.example.com/h/2", secret.clone()).ttl(Ttl::NoExpiry);
    let sub: WebhookSubscription = within(client.subscribe_webhook("x", json!({}), &options))
        .await
        .unwrap();
    let (_, params) = requests.recv().await.unwrap();
    assert_eq!(params["ttlMs"], Value::Null);
    assert!(params.as_object().unwrap().contains_key("ttlMs"));
    assert_eq!(params["cursor"], Value::Null);
    assert!(!params.as_object().unwrap().contains_key("maxAgeMs"));
    assert_eq!(
        (sub.refresh_before, sub.cursor, sub.truncated),
        (None, None, false)
    );
    assert_eq!(sub.delivery_status, None);

    // The server's default: no `ttlMs` at all.
    let options = WebhookOptions::new("https://hooks.example.com/h/3", secret);
    within(client.subscribe_webhook("x", json!({}), &options))
        .await
        .unwrap();
    let (_, params) = requests.recv().await.unwrap();
    assert!(
        !params.as_object().unwrap().contains_key("ttlMs"),
        "{params}"
    );
}

#[tokio::test]
async fn unsubscribe_sends_name_arguments_and_url() {
    let (client, mut requests) = scripted(Arc::new(Mutex::new(Ok(json!({}))))).await;
    within(client.unsubscribe_webhook(
        "incident.created",
        json!({"severity": "P1"}),
        "https://hooks.example.com/h/1",
    ))
    .await
    .unwrap();
    let (method, params) = requests.recv().await.unwrap();
    assert_eq!(method, "events/unsubscribe");
    assert_eq!(
        params,
        json!({
            "name": "incident.created",
            "arguments": {"severity": "P1"},
            "delivery": {"url": "https://hooks.example.com/h/1"}
        })
    );
    // Arguments that are not an object are refused before anything is sent.
    let e = within(client.unsubscribe_webhook("x", json!([1]), "https://h"))
        .await
        .unwrap_err();
    assert!(matches!(e, ClientError::InvalidArguments(_)), "{e:?}");
    let e = within(client.subscribe_webhook(
        "x",
        json!("P1"),
        &WebhookOptions::new("https://h", Secret::generate()),
    ))
    .await
    .unwrap_err();
    assert!(matches!(e, ClientError::InvalidArguments(_)), "{e:?}");
    assert!(requests.try_recv().is_err());
}

#[tokio::test]
async fn malformed_results_and_refusals_are_errors() {
    let answer = Arc::new(Mutex::new(Ok(json!({}))));
    let (client, _requests) = scripted(answer.clone()).await;
    let options = WebhookOptions::new("https://hooks.example.com/h", Secret::generate());
    let ok = json!({"id": "s", "refreshBefore": "2026-02-19T17:00:00Z", "cursor": "c", "truncated": false});
    let malformed = [
        json!({}),
        json!({"refreshBefore": null, "cursor": null}),
        json!({"id": 7, "refreshBefore": null, "cursor": null}),
        // `refreshBefore` is always present (null: no expiry).
        json!({"id": "s", "cursor": null}),
        json!({"id": "s", "refreshBefore": "in an hour", "cursor": null}),
        json!({"id": "s", "refreshBefore": 1739980800, "cursor": null}),
        json!({"id": "s", "refreshBefore": null, "cursor": 5}),
        json!({"id": "s", "refreshBefore": null, "cursor": null, "truncated": "no"}),
        json!({"id": "s", "refreshBefore": null, "cursor": null, "deliveryStatus": {}}),
        json!({"id": "s", "refreshBefore": null, "cursor": null, "deliveryStatus": {"active": true, "failedSince": "yesterday"}}),
        json!({"id": "s", "refreshBefore": null, "cursor": null, "deliveryStatus": "fine"}),
    ];
    for bad in malformed {
        *answer.lock().unwrap() = Ok(bad.clone());
        let e = within(client.subscribe_webhook("x", json!({}), &options))
            .await
            .unwrap_err();
        assert!(matches!(e, ClientError::Protocol(_)), "{bad}: {e:?}");
    }
    *answer.lock().unwrap() = Ok(ok);
    within(client.subscribe_webhook("x", json!({}), &options))
        .await
        .unwrap();
    // The server refuses (no authenticated principal): the error as the server sent it.
    *answer.lock().unwrap() = Err(json!({"code": -32012, "message": "Forbidden"}));
    let e = within(client.subscribe_webhook("x", json!({}), &options))
        .await
        .unwrap_err();
    assert_eq!(e.rpc_error().map(|r| r.code), Some(-32012), "{e:?}");
    let e = within(client.unsubscribe_webhook("x", json!({}), "https://h"))
        .await
        .unwrap_err();
    assert_eq!(e.rpc_error().map(|r| r.code), Some(-32012), "{e:?}");
}

#[tokio::test]
async fn the_secret_handed_over_verifies_what_the_server_signs_with_it() {
    let answer = Arc::new(Mutex::new(Ok(json!({
        "id": "sub_1", "refreshBefore": "2026-02-19T17:00:00Z", "cursor": null
    }))));
    let (client, mut requests) = scripted(answer).await;
    let secret = Secret::generate();
    let sub = within(client.subscribe_webhook(
        "demo.tick",
        json!({}),
        &WebhookOptions::new("https://hooks.example.com/h", secret.clone()),
    ))
    .await
    .unwrap();
    let (receiver, mut deliveries) = Receiver::new(ReceiverOptions::default());
    receiver.route(sub.id.clone(), secret);
    // The server's side: the secret as it arrived in `events/subscribe`.
    let (_, params) = requests.recv().await.unwrap();
    let theirs = Secret::parse(params["delivery"]["secret"].as_str().unwrap()).unwrap();
    let body = br#"{"eventId":"evt_1","name":"demo.tick","timestamp":"2026-02-19T16:00:00Z","data":{},"cursor":null}"#;
    let mut h = http::HeaderMap::new();
    h.insert(ID, "evt_1".parse().unwrap());
    h.insert(TIMESTAMP, "1771516800".parse().unwrap());
    h.insert(
        SIGNATURE,
        theirs.sign("evt_1", 1_771_516_800, body).parse().unwrap(),
    );
    h.insert(SUBSCRIPTION_ID, sub.id.parse().unwrap());
    assert_eq!(
        receiver.receive(&h, body, 1_771_516_830),
        Outcome::Delivered
    );
    let d = deliveries.recv().await.unwrap();
    assert_eq!(
        (d.kind, d.subscription_id.as_str()),
        (DeliveryKind::Event, "sub_1")
    );
}

#[tokio::test]
async fn the_receivers_axum_handler_answers_over_http() {
    use duomcp_testkit::raw_http::{exchange, post_request_with};
    let secret = Secret::generate();
    let (receiver, mut deliveries) = Receiver::new(ReceiverOptions::default());
    receiver.route("sub_1", secret.clone());
    let app = axum::Router::new().route("/mcp", receiver.post_handler());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(duomcp::transport::http::serve(listener, app));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let send = |id: &'static str, body: &'static str, key: &Secret| {
        let ts = now.to_string();
        let sig = key.sign(id, now, body.as_bytes());
        let req = post_request_with(
            addr,
            &[
                (ID, id),
                (TIMESTAMP, &ts),
                (SIGNATURE, &sig),
                (SUBSCRIPTION_ID, "sub_1"),
            ],
            body,
        );
        async move { exchange(addr, &req, Duration::from_secs(10)).await }
    };
    let challenge = send(
        "msg_verification_1",
        r#"{"type":"verification","challenge":"abc"}"#,
        &secret,
    )
    .await;
    assert_eq!(challenge.status, 200);
    assert_eq!(challenge.json(), json!({"challenge": "abc"}));
    let forged = send(
        "msg_gap_1",
        r#"{"type":"gap","cursor":"c"}"#,
        &Secret::generate(),
    )
    .await;
    assert_eq!(forged.status, 401);
    let gap = send("msg_gap_1", r#"{"type":"gap","cursor":"c"}"#, &secret).await;
    assert_eq!(gap.status, 200);
    let d = within(deliveries.recv()).await.unwrap();
    assert_eq!(
        (d.kind, d.body),
        (DeliveryKind::Gap, json!({"type": "gap", "cursor": "c"}))
    );
}
