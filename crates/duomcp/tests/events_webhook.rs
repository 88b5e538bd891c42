//! Webhook delivery of the events extension (experimental, feature `webhooks`): a real TLS
//! receiver on 127.0.0.1 (hyper + tokio-rustls, its certificate issued by a test CA made with
//! rcgen) that checks every signature with `duomcp::webhook::Secret::verify` and records what
//! it got; an MCP server behind the auth layer (static bearer tokens, two principals) over
//! Streamable HTTP, called in both revisions.

#![cfg(all(feature = "webhooks", feature = "http-server", feature = "auth"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::Bytes;
use duomcp::auth::{ResourceServer, StaticTokens};
use duomcp::server::events::webhook::WebhookConfig;
use duomcp::server::events::EventType;
use duomcp::server::{Principal, Server};
use duomcp::transport::http::StreamableHttp;
use duomcp::webhook::{Secret, Signed};
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::net::TcpListener;

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";
const EVENT: &str = "order.created";

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("timed out")
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

// ---------------------------------------------------------------------------------------------
// The receiver's PKI: a CA and a certificate for localhost and 127.0.0.1.

struct Pki {
    ca_pem: String,
    server: Arc<rustls::ServerConfig>,
}

fn pki() -> &'static Pki {
    static PKI: OnceLock<Pki> = OnceLock::new();
    PKI.get_or_init(|| {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "duomcp webhook test CA");
        ca.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])
            .unwrap()
            .signed_by(&leaf_key, &issuer)
            .unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut server = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
            )
            .unwrap();
        server.alpn_protocols = vec![b"http/1.1".to_vec()];
        Pki {
            ca_pem: ca_cert.pem(),
            server: Arc::new(server),
        }
    })
}

// ---------------------------------------------------------------------------------------------
// The receiver.

/// One request the receiver got.
#[derive(Clone, Debug)]
struct Got {
    path: String,
    id: String,
    timestamp: String,
    signature: String,
    subscription: String,
    content_type: String,
    body: Vec<u8>,
    at: Instant,
}

impl Got {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    fn kind(&self) -> Option<String> {
        self.json()
            .get("type")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    fn is_verification(&self) -> bool {
        self.kind().as_deref() == Some("verification")
    }

    /// Whether `secret` verifies it (one of its signatures), now.
    fn verifies(&self, secret: &Secret) -> bool {
        let signed = Signed {
            id: &self.id,
            timestamp: &self.timestamp,
            signature: &self.signature,
        };
        secret.verify(&signed, &self.body, unix_now()).is_ok()
    }
}

/// How the receiver answers.
#[derive(Default)]
struct Plan {
    /// Echo verification challenges (else answers a wrong one).
    no_echo: bool,
    /// Statuses for the next deliveries (not verifications); 200 once empty.
    statuses: VecDeque<u16>,
    /// Answer every request with a redirect to `/elsewhere`.
    redirect: bool,
}

struct Receiver {
    addr: SocketAddr,
    got: Arc<Mutex<Vec<Got>>>,
    plan: Arc<Mutex<Plan>>,
}

impl Receiver {
    async fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let got: Arc<Mutex<Vec<Got>>> = Arc::default();
        let plan: Arc<Mutex<Plan>> = Arc::default();
        let acceptor = tokio_rustls::TlsAcceptor::from(pki().server.clone());
        let (g, p) = (got.clone(), plan.clone());
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let acceptor = acceptor.clone();
                let (g, p) = (g.clone(), p.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |req| {
                        let (g, p) = (g.clone(), p.clone());
                        async move { Ok::<_, std::convert::Infallible>(answer(req, &g, &p).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Receiver { addr, got, plan }
    }

    fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.addr.port())
    }

    fn all(&self) -> Vec<Got> {
        self.got.lock().unwrap().clone()
    }

    /// What is not a verification.
    fn deliveries(&self) -> Vec<Got> {
        self.all()
            .into_iter()
            .filter(|g| !g.is_verification())
            .collect()
    }

    /// Waits until `n` deliveries (not verifications) came.
    async fn wait_for(&self, n: usize) -> Vec<Got> {
        within(async {
            loop {
                let d = self.deliveries();
                if d.len() >= n {
                    return d;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
    }
}

async fn answer(
    req: http::Request<hyper::body::Incoming>,
    got: &Mutex<Vec<Got>>,
    plan: &Mutex<Plan>,
) -> http::Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await.unwrap().to_bytes().to_vec();
    let header = |n: &str| {
        parts
            .headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let g = Got {
        path: parts.uri.path().to_owned(),
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp"),
        signature: header("webhook-signature"),
        subscription: header("x-mcp-subscription-id"),
        content_type: header("content-type"),
        body,
        at: Instant::now(),
    };
    let verification = serde_json::from_slice::<Value>(&g.body)
        .ok()
        .filter(|v| v["type"] == "verification");
    got.lock().unwrap().push(g);
    let mut plan = plan.lock().unwrap();
    let respond = |status: u16, body: String| {
        http::Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))
            .unwrap()
    };
    if plan.redirect {
        return http::Response::builder()
            .status(307)
            .header("location", "/elsewhere")
            .body(Full::new(Bytes::new()))
            .unwrap();
    }
    if let Some(v) = verification {
        let challenge = if plan.no_echo {
            json!("not-the-nonce")
        } else {
            v["challenge"].clone()
        };
        return respond(200, json!({ "challenge": challenge }).to_string());
    }
    let status = plan.statuses.pop_front().unwrap_or(200);
    respond(status, "{}".into())
}

// ---------------------------------------------------------------------------------------------
// The MCP server and its clients.

fn config() -> WebhookConfig {
    let mut c = WebhookConfig::default()
        .root_certificate_pem(pki().ca_pem.as_bytes())
        .unwrap();
    c.allow_private_networks = true;
    c.initial_backoff = Duration::from_millis(100);
    c.max_backoff = Duration::from_secs(1);
    c.max_attempts = 3;
    c.timeout = Duration::from_secs(2);
    c.min_ttl = Duration::from_millis(300);
    c.max_ttl = Duration::from_secs(600);
    c.max_subscriptions_per_principal = 3;
    c
}

fn server(config: WebhookConfig) -> Server {
    Server::builder()
        .name("webhook-test")
        .event(
            EventType::new(EVENT)
                .input_schema(json!({
                    "type": "object",
                    "properties": { "shop": { "type": "string" } },
                    "additionalProperties": false
                }))
                .filter(|args, data| match args.get("shop") {
                    Some(shop) => data.get("shop") == Some(shop),
                    None => true,
                }),
        )
        .webhooks(config)
        .build()
}

struct Mcp {
    url: String,
    server: Server,
}

fn serve(listener: TcpListener, router: axum::Router) -> String {
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let service = hyper_util::service::TowerToHyperService::new(router);
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let service = service.clone();
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    url
}

/// The server behind the auth layer: `alice-token` is alice, `bob-token` bob.
async fn mcp(config: WebhookConfig) -> Mcp {
    let server = server(config);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let rs = ResourceServer::builder(url.clone())
        .authorization_server("https://auth.example.com")
        .validator(
            StaticTokens::new()
                .with("alice-token", Principal::new("alice"))
                .with("bob-token", Principal::new("bob")),
        )
        .build()
        .unwrap();
    let url = serve(
        listener,
        rs.protect(StreamableHttp::new(server.clone()).router()),
    );
    Mcp { url, server }
}

struct Client {
    http: reqwest::Client,
    url: String,
    token: Option<String>,
    session: Option<String>,
}

fn text_json(text: &str) -> Value {
    let msg = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .rfind(|d| !d.trim().is_empty())
        .map_or(text, str::trim);
    serde_json::from_str(msg).unwrap_or_else(|e| panic!("{e}: {text}"))
}

impl Client {
    fn modern(url: &str, token: Option<&str>) -> Client {
        Client {
            http: reqwest::Client::new(),
            url: url.to_owned(),
            token: token.map(str::to_owned),
            session: None,
        }
    }

    async fn legacy(url: &str, token: Option<&str>) -> Client {
        let mut c = Client::modern(url, token);
        let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
        let res = c.post(&init, &[]).await;
        let sid = res
            .headers()
            .get("mcp-session-id")
            .expect("a session")
            .to_str()
            .unwrap()
            .to_owned();
        let _ = res.text().await.unwrap();
        c.session = Some(sid);
        let done = c
            .post(
                &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
                &[("mcp-protocol-version", LEGACY)],
            )
            .await;
        assert_eq!(done.status(), 202);
        c
    }

    async fn post(&self, body: &Value, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut req = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(serde_json::to_vec(body).unwrap());
        if let Some(t) = &self.token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        if let Some(s) = &self.session {
            req = req.header("mcp-session-id", s);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        within(req.send()).await.unwrap()
    }

    /// The whole JSON-RPC answer.
    async fn call(&self, method: &str, mut params: Value) -> Value {
        let res = if self.session.is_some() {
            let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
            self.post(&body, &[("mcp-protocol-version", LEGACY)]).await
        } else {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {}
            });
            let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
            self.post(
                &body,
                &[("mcp-protocol-version", MODERN), ("mcp-method", method)],
            )
            .await
        };
        text_json(&within(res.text()).await.unwrap())
    }

    async fn result(&self, method: &str, params: Value) -> Value {
        let v = self.call(method, params).await;
        assert!(v.get("error").is_none(), "{v}");
        v["result"].clone()
    }

    async fn error(&self, method: &str, params: Value) -> Value {
        let v = self.call(method, params).await;
        assert!(v.get("error").is_some(), "{v}");
        v["error"].clone()
    }
}

fn subscribe_params(url: &str, secret: &Secret, shop: &str) -> Value {
    json!({
        "name": EVENT,
        "arguments": { "shop": shop },
        "delivery": { "mode": "webhook", "url": url, "secret": secret.expose() },
        "cursor": null,
    })
}

fn unsubscribe_params(url: &str, shop: &str) -> Value {
    json!({ "name": EVENT, "arguments": { "shop": shop }, "delivery": { "url": url } })
}

fn emit(mcp: &Mcp, shop: &str, n: u64) -> String {
    mcp.server
        .events()
        .emit(EVENT, json!({ "shop": shop, "n": n }))
        .unwrap()
}

/// RFC 3339 → Unix milliseconds (the form `iso8601` writes: `YYYY-MM-DDTHH:MM:SS.mmmZ`).
fn parse_time(text: &str) -> i64 {
    let b = text.as_bytes();
    let num = |r: std::ops::Range<usize>| text[r].parse::<i64>().unwrap();
    assert_eq!(b[10], b'T', "{text}");
    let (y, m, d) = (num(0..4), num(5..7), num(8..10));
    let (h, mi, s) = (num(11..13), num(14..16), num(17..19));
    let ms = if b.get(19) == Some(&b'.') {
        num(20..23)
    } else {
        0
    };
    // Howard Hinnant's days_from_civil.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    ((days * 86_400 + h * 3600 + mi * 60 + s) * 1000) + ms
}

fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// The position a cursor names (a test may look inside; clients may not).
fn pos(cursor: &Value) -> u64 {
    cursor
        .as_str()
        .and_then(|c| c.rsplit('.').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a cursor: {cursor}"))
}

// ---------------------------------------------------------------------------------------------
// The tests.

#[tokio::test]
async fn delivery_signature_and_headers_in_both_revisions() {
    let rx = Receiver::start().await;
    let mcp = mcp(config()).await;
    let clients = [
        (LEGACY, Client::legacy(&mcp.url, Some("alice-token")).await),
        (MODERN, Client::modern(&mcp.url, Some("alice-token"))),
    ];
    for (i, (rev, client)) in clients.iter().enumerate() {
        let listed = client.result("events/list", json!({})).await;
        assert_eq!(
            listed["events"][0]["delivery"],
            json!(["poll", "push", "webhook"]),
            "{rev}"
        );
        let shop = format!("shop-{i}");
        let url = rx.url(&format!("/hook/{i}"));
        let secret = Secret::generate();
        let r = client
            .result("events/subscribe", subscribe_params(&url, &secret, &shop))
            .await;
        let id = r["id"].as_str().unwrap().to_owned();
        assert!(id.starts_with("sub_") && id.len() == 20, "{rev}: {r}");
        assert_eq!(r["truncated"], false);
        assert!(r["cursor"].is_string());
        assert!(r.get("deliveryStatus").is_none(), "a new subscription: {r}");
        let ttl = parse_time(r["refreshBefore"].as_str().unwrap()) - unix_ms();
        // The default (30 min) lowered to this server's maximum (10 min).
        assert!((598_000..=600_500).contains(&ttl), "{ttl}");

        // The verification came first, signed, to this URL.
        let verification = rx
            .all()
            .into_iter()
            .filter(|g| g.is_verification() && g.path == format!("/hook/{i}"))
            .collect::<Vec<_>>();
        assert_eq!(verification.len(), 1, "{rev}");
        assert!(verification[0].verifies(&secret));
        assert!(verification[0].id.starts_with("msg_verification_"));
        assert_eq!(verification[0].subscription, id);

        // An occurrence of another shop is filtered out; this shop's is delivered.
        let before = rx.deliveries().len();
        emit(&mcp, "elsewhere", 0);
        let event_id = emit(&mcp, &shop, 1);
        let got = rx.wait_for(before + 1).await;
        let d = &got[before];
        assert_eq!(d.path, format!("/hook/{i}"));
        assert_eq!(d.content_type, "application/json");
        assert_eq!(d.id, event_id);
        assert_eq!(d.subscription, id);
        assert!(d.verifies(&secret), "{rev}: the signature");
        assert!(!d.verifies(&Secret::generate()));
        assert!((d.timestamp.parse::<i64>().unwrap() - unix_now()).abs() <= 5);
        let body = d.json();
        assert_eq!(body["eventId"], event_id.as_str());
        assert_eq!(body["name"], EVENT);
        assert_eq!(body["data"], json!({ "shop": shop, "n": 1 }));
        assert!(body["timestamp"].is_string());
        assert!(body["cursor"].is_string());
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(rx.deliveries().len(), before + 1, "{rev}: nothing else");
    }
}

#[tokio::test]
async fn two_principals_get_different_ids_and_cannot_unsubscribe_each_other() {
    let rx = Receiver::start().await;
    let mcp = mcp(config()).await;
    let alice = Client::modern(&mcp.url, Some("alice-token"));
    let bob = Client::legacy(&mcp.url, Some("bob-token")).await;
    let url = rx.url("/shared");
    let a = alice
        .result(
            "events/subscribe",
            subscribe_params(&url, &Secret::generate(), "s"),
        )
        .await;
    // Bob cannot remove alice's subscription: with his principal the key is another.
    let e = bob
        .error("events/unsubscribe", unsubscribe_params(&url, "s"))
        .await;
    assert_eq!(e["code"], -32011);
    assert_eq!(e["data"]["kind"], "subscription");
    let b = bob
        .result(
            "events/subscribe",
            subscribe_params(&url, &Secret::generate(), "s"),
        )
        .await;
    assert_ne!(a["id"], b["id"]);
    // One verification each: one principal's never covers the other.
    assert_eq!(rx.all().iter().filter(|g| g.is_verification()).count(), 2);
    bob.result("events/unsubscribe", unsubscribe_params(&url, "s"))
        .await;
    emit(&mcp, "s", 1);
    let got = rx.wait_for(1).await;
    assert_eq!(got[0].subscription, a["id"].as_str().unwrap());
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(
        rx.deliveries().len(),
        1,
        "only alice's subscription is left"
    );
}

#[tokio::test]
async fn a_refresh_keeps_the_id_grants_the_ttl_again_and_dual_signs_after_rotation() {
    let rx = Receiver::start().await;
    let mcp = mcp(config()).await;
    let alice = Client::modern(&mcp.url, Some("alice-token"));
    let url = rx.url("/rotate");
    let (old, new) = (Secret::generate(), Secret::generate());
    let mut p = subscribe_params(&url, &old, "r");
    p["ttlMs"] = json!(60_000);
    let first = alice.result("events/subscribe", p).await;
    let t1 = parse_time(first["refreshBefore"].as_str().unwrap());
    assert!((t1 - unix_ms() - 60_000).abs() < 2_000);

    let mut p = subscribe_params(&url, &new, "r");
    p["ttlMs"] = json!(120_000);
    let second = alice.result("events/subscribe", p).await;
    assert_eq!(second["id"], first["id"]);
    let t2 = parse_time(second["refreshBefore"].as_str().unwrap());
    assert!(t2 > t1 + 50_000, "{first} {second}");
    assert_eq!(second["deliveryStatus"]["active"], true);
    assert_eq!(second["deliveryStatus"]["lastError"], Value::Null);
    assert_eq!(
        rx.all().iter().filter(|g| g.is_verification()).count(),
        1,
        "a refresh is not verified again"
    );

    // Both secrets sign while the old one's grace lasts.
    emit(&mcp, "r", 1);
    let d = rx.wait_for(1).await.remove(0);
    assert_eq!(d.signature.split(' ').count(), 2, "{}", d.signature);
    assert!(d.verifies(&old) && d.verifies(&new));

    // `ttlMs: null` (no expiry) gets the maximum, never `null`.
    let mut p = subscribe_params(&url, &new, "r");
    p["ttlMs"] = Value::Null;
    let third = alice.result("events/subscribe", p).await;
    let t3 = parse_time(third["refreshBefore"].as_str().unwrap());
    assert!((t3 - unix_ms() - 600_000).abs() < 2_000, "{third}");
}

#[tokio::test]
async fn a_failing_endpoint_gets_the_event_after_retries_with_growing_back_off() {
    let rx = Receiver::start().await;
    let mcp = mcp(config()).await;
    let alice = Client::modern(&mcp.url, Some("alice-token"));
    let secret = Secret::generate();
    alice
        .result(
            "events/subscribe",
            subscribe_params(&rx.url("/retry"), &secret, "x"),
        )
        .await;
    rx.plan.lock().unwrap().statuses = [500, 503].into();
    let event_id = emit(&mcp, "x", 1);
    let got = rx.wait_for(3).await;
    assert!(got.iter().all(|g| g.id == event_id && g.verifies(&secret)));
    let first = got[1].at - got[0].at;
    let second = got[2].at - got[1].at;
    assert!(first >= Duration::from_millis(90), "{first:?}");
    assert!(
        second > first + Duration::from_millis(50),
        "{first:?} then {second:?}"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        rx.deliveries().len(),
        3,
        "acknowledged at the third attempt"
    );
}

#[tokio::test]
async fn payload_too_large_and_gone_are_not_retried() {
    for status in [413, 410] {
        too_large_or_gone(status).await;
    }
}

async fn too_large_or_gone(status: u16) {
    let rx = Receiver::start().await;
    let mcp = mcp(config()).await;
    let alice = Client::modern(&mcp.url, Some("alice-token"));
    alice
        .result(
            "events/subscribe",
            subscribe_params(&rx.url("/413"), &Secret::generate(), "x"),
        )
        .await;
    rx.plan.lock().unwrap().statuses = [status].into();
    let big = emit(&mcp, "x", 1);
    let next = emit(&mcp, "x", 2);
    let got = rx.wait_for(2).await;
    assert_eq!(got[0].id, big);
    assert_eq!(got[1].id, next, "the {status} was given up at once");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(rx.deliveries().len(), 2);
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let rx = Receiver::start().await;
    rx.plan.lock().unwrap().redirect = true;
    // The verification answered with a redirect fails.
    let mcp1 = mcp(config()).await;
    let alice = Client::modern(&mcp1.url, Some("alice-token"));
    let e = alice
        .error(
            "events/subscribe",
            subscribe_params(&rx.url("/hook"), &Secret::generate(), "x"),
        )
        .await;
    assert_eq!(e["code"], -32015);
    assert_eq!(e["data"]["reason"], "challenge_failed");
    // A delivery answered with one is a failure, retried at the same URL.
    let mut c = config();
    c.verified_prefixes.push(rx.url("/"));
    let mcp2 = mcp(c).await;
    let alice = Client::modern(&mcp2.url, Some("alice-token"));
    alice
        .result(
            "events/subscribe",
            subscribe_params(&rx.url("/hook"), &Secret::generate(), "x"),
        )
        .await;
    emit(&mcp2, "x", 1);
    rx.wait_for(3).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        rx.all().iter().all(|g| g.path == "/hook"),
        "never /elsewhere"
    );
}

#[tokio::test]
async fn loopback_is_refused_without_the_switch() {
    let rx = Receiver::start().await;
    let mut c = config();
    c.allow_private_networks = false;
    let mcp1 = mcp(c.clone()).await;
    let alice = Client::modern(&mcp1.url, Some("alice-token"));
    // At subscribe time, by the verification POST: an IP literal, and a name resolving to
    // loopback only.
    for url in [
        format!("https://127.0.0.1:{}/hook", rx.addr.port()),
        rx.url("/hook"),
    ] {
        let e = alice
            .error(
                "events/subscribe",
                subscribe_params(&url, &Secret::generate(), "x"),
            )
            .await;
        assert_eq!(e["code"], -32015, "{url}");
        assert_eq!(e["data"]["reason"], "connection_refused", "{url}");
    }
    // At delivery time, when the URL needs no verification.
    c.verified_prefixes.push(rx.url("/"));
    let mcp2 = mcp(c).await;
    let alice = Client::modern(&mcp2.url, Some("alice-token"));
    let p = subscribe_params(&rx.url("/hook"), &Secret::generate(), "x");
    alice.result("events/subscribe", p.clone()).await;
    emit(&mcp2, "x", 1);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let refreshed = alice.result("events/subscribe", p).await;
    assert_eq!(
        refreshed["deliveryStatus"]["lastError"], "connection_refused",
        "{refreshed}"
    );
    assert!(refreshed["deliveryStatus"]["failedSince"].is_string());
    assert!(rx.all().is_empty(), "nothing reached the receiver");
}

#[tokio::test]
async fn invalid_urls_secrets_and_arguments_are_invalid_params() {
    let rx = Receiver::start().await;
    let mcp = mcp(config()).await;
    let alice = Client::modern(&mcp.url, Some("alice-token"));
    let good = Secret::generate().expose();
    let cases = [
        json!({ "name": EVENT, "delivery": { "mode": "webhook", "url": format!("http://localhost:{}/h", rx.addr.port()), "secret": good } }),
        json!({ "name": EVENT, "delivery": { "mode": "webhook", "url": "not a url", "secret": good } }),
        json!({ "name": EVENT, "delivery": { "mode": "webhook", "url": rx.url("/h"), "secret": "whsec_c2hvcnQ=" } }),
        json!({ "name": EVENT, "delivery": { "mode": "webhook", "url": rx.url("/h"), "secret": "secret" } }),
        json!({ "name": EVENT, "delivery": { "mode": "webhook", "url": rx.url("/h") } }),
        json!({ "name": EVENT, "arguments": { "other": 1 }, "delivery": { "mode": "webhook", "url": rx.url("/h"), "secret": good } }),
    ];
    for p in cases {
        let e = alice.error("events/subscribe", p.clone()).await;
        assert_eq!(e["code"], -32602, "{p}: {e}");
    }
    let e = alice
        .error(
            "events/subscribe",
            json!({ "name": "nope", "delivery": { "mode": "webhook", "url": rx.url("/h"), "secret": good } }),
        )
        .await;
    assert_eq!(e["code"], -32011);
    assert!(rx.all().is_empty());
}

#[tokio::test]
async fn without_a_principal_it_is_forbidden() {
    let rx = Receiver::start().await;
    let server = server(config());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = serve(listener, StreamableHttp::new(server).router());
    for client in [Client::modern(&url, None), Client::legacy(&url, None).await] {
        let e = client
            .error(
                "events/subscribe",
                subscribe_params(&rx.url("/h"), &Secret::generate(), "x"),
            )
            .await;
        assert_eq!(e["code"], -32012, "{e}");
        let e = client
            .error("events/unsubscribe", unsubscribe_params(&rx.url("/h"), "x"))
            .await;
        assert_eq!(e["code"], -32012, "{e}");
    }
    assert!(rx.all().is_empty());
}

#[tokio::test]
async fn a_verification_that_does_not_echo_fails() {
    let rx = Receiver::start().await;
    rx.plan.lock().unwrap().no_echo = true;
    let mcp = mcp(config()).await;
    let alice = Client::modern(&mcp.url, Some("alice-token"));
    let e = alice
        .error(
            "events/subscribe",
            subscribe_params(&rx.url("/h"), &Secret::generate(), "x"),
        )
        .await;
    assert_eq!(e["code"], -32015);
    assert_eq!(e["data"], json!({ "reason": "challenge_failed" }));
    assert!(!e["message"].as_str().unwrap().contains("not-the-nonce"));
    emit(&mcp, "x", 1);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(rx.deliveries().is_empty());
    // The host is not asked again during the cooldown, whoever asks, whatever the path.
    let bob = Client::modern(&mcp.url, Some("bob-token"));
    let e = bob
        .error(
            "events/subscribe",
            subscribe_params(&rx.url("/other"), &Secret::generate(), "x"),
        )
        .await;
    assert_eq!(e["data"], json!({ "reason": "challenge_failed" }));
    assert_eq!(rx.all().len(), 1, "one verification POST in all");
}

#[tokio::test]
async fn nothing_listening_is_connection_refused() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let mcp = mcp(config()).await;
    let alice = Client::modern(&mcp.url, Some("alice-token"));
    let url = format!("https://localhost:{port}/h");
    let e = alice
        .error(
            "events/subscribe",
            subscribe_params(&url, &Secret::generate(), "x"),
        )
        .await;
    assert_eq!(e["code"], -32015);
    assert_eq!(e["data"]["reason"], "connection_refused");
}

#[tokio::test]
async fn the_per_principal_cap_is_resource_exhausted() {
    let rx = Receiver::start().await;
    let mcp = mcp(config()).await;
    let alice = Client::modern(&mcp.url, Some("alice-token"));
    let bob = Client::modern(&mcp.url, Some("bob-token"));
    for shop in ["a", "b", "c"] {
        alice
            .result(
                "events/subscribe",
                subscribe_params(&rx.url("/h"), &Secret::generate(), shop),
            )
            .await;
    }
    let e = alice
        .error(
            "events/subscribe",
            subscribe_params(&rx.url("/h"), &Secret::generate(), "d"),
        )
        .await;
    assert_eq!(e["code"], -32013);
    assert_eq!(
        e["data"],
        json!({ "limit": "webhookSubscriptionsPerPrincipal", "max": 3 })
    );
    // A refresh of one of the three is not a fourth; another principal has its own count.
    alice
        .result(
            "events/subscribe",
            subscribe_params(&rx.url("/h"), &Secret::generate(), "a"),
        )
        .await;
    bob.result(
        "events/subscribe",
        subscribe_params(&rx.url("/h"), &Secret::generate(), "d"),
    )
    .await;
}

#[tokio::test]
async fn unsubscribe_stops_deliveries() {
    let rx = Receiver::start().await;
    let mcp = mcp(config()).await;
    let alice = Client::legacy(&mcp.url, Some("alice-token")).await;
    let url = rx.url("/h");
    alice
        .result(
            "events/subscribe",
            subscribe_params(&url, &Secret::generate(), "x"),
        )
        .await;
    emit(&mcp, "x", 1);
    rx.wait_for(1).await;
    let r = alice
        .result("events/unsubscribe", unsubscribe_params(&url, "x"))
        .await;
    assert_eq!(r, json!({}));
    emit(&mcp, "x", 2);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rx.deliveries().len(), 1);
    let e = alice
        .error("events/unsubscribe", unsubscribe_params(&url, "x"))
        .await;
    assert_eq!(e["code"], -32011);
}

#[tokio::test]
async fn an_expired_ttl_stops_deliveries() {
    let rx = Receiver::start().await;
    let mcp = mcp(config()).await;
    let alice = Client::modern(&mcp.url, Some("alice-token"));
    let mut p = subscribe_params(&rx.url("/h"), &Secret::generate(), "x");
    p["ttlMs"] = json!(1);
    let r = alice.result("events/subscribe", p.clone()).await;
    let ttl = parse_time(r["refreshBefore"].as_str().unwrap()) - unix_ms();
    assert!(
        (0..=400).contains(&ttl),
        "raised to the 300 ms minimum: {ttl}"
    );
    emit(&mcp, "x", 1);
    rx.wait_for(1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    emit(&mcp, "x", 2);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rx.deliveries().len(), 1, "nothing after the expiry");
    // Subscribing again makes a new subscription (no deliveryStatus), already verified.
    let again = alice.result("events/subscribe", p).await;
    assert_eq!(again["id"], r["id"]);
    assert!(again.get("deliveryStatus").is_none(), "{again}");
    assert_eq!(rx.all().iter().filter(|g| g.is_verification()).count(), 1);
}

#[tokio::test]
async fn repeated_failures_suspend_until_a_refresh_and_a_backlog_gets_a_gap() {
    let rx = Receiver::start().await;
    let mut c = config();
    c.max_attempts = 1;
    c.suspend_after = 2;
    c.max_pending = 2;
    let mcp = mcp(c).await;
    let alice = Client::modern(&mcp.url, Some("alice-token"));
    let p = subscribe_params(&rx.url("/h"), &Secret::generate(), "x");
    alice.result("events/subscribe", p.clone()).await;
    rx.plan.lock().unwrap().statuses = [500, 500].into();
    let first = emit(&mcp, "x", 1);
    let second = emit(&mcp, "x", 2);
    rx.wait_for(2).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    // Suspended, the second occurrence still pending; more pile up behind it.
    let mut ids = Vec::new();
    for n in 3..8 {
        ids.push(emit(&mcp, "x", n));
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    let got = rx.deliveries();
    assert_eq!(got.len(), 2, "nothing while suspended");
    assert_eq!(
        (got[0].id.as_str(), got[1].id.as_str()),
        (first.as_str(), second.as_str())
    );
    let r = alice.result("events/subscribe", p).await;
    let status = &r["deliveryStatus"];
    assert_eq!(status["active"], false, "{r}");
    assert_eq!(status["lastError"], "http_5xx");
    assert!(status["failedSince"].is_string());
    // The watermark stops before the occurrence still pending (the first was given up).
    assert_eq!(pos(&r["cursor"]), 1, "{r}");
    // Resumed: the pending one again, then a gap (the backlog was beyond 2), then the newest 2.
    let got = rx.wait_for(6).await;
    assert_eq!(got[2].id, second);
    assert_eq!(got[3].json()["type"], "gap", "{:?}", got[3].json());
    assert!(got[3].id.starts_with("msg_gap_"));
    assert_eq!(got[4].id, ids[3]);
    assert_eq!(got[5].id, ids[4]);
}

#[tokio::test]
async fn ending_a_principals_subscriptions_sends_terminated() {
    let rx = Receiver::start().await;
    let mcp = mcp(config()).await;
    let alice = Client::modern(&mcp.url, Some("alice-token"));
    let secret = Secret::generate();
    alice
        .result(
            "events/subscribe",
            subscribe_params(&rx.url("/h"), &secret, "x"),
        )
        .await;
    let key = Principal::new("alice").key();
    let ended = mcp
        .server
        .events()
        .end_webhooks(Some(&key), "authorization revoked")
        .await;
    assert_eq!(ended, 1);
    let got = rx.wait_for(1).await;
    assert_eq!(got[0].json()["type"], "terminated");
    assert_eq!(got[0].json()["error"]["code"], -32012);
    assert!(got[0].id.starts_with("msg_terminated_"));
    assert!(got[0].verifies(&secret));
    emit(&mcp, "x", 1);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(rx.deliveries().len(), 1);
}

#[tokio::test]
async fn an_untrusted_certificate_is_tls_error_and_silence_is_timeout() {
    let rx = Receiver::start().await;
    let mut c = WebhookConfig::default();
    c.allow_private_networks = true;
    c.timeout = Duration::from_millis(300);
    // Both endpoints are on localhost: no cooldown after the first failure.
    c.verification_cooldown = Duration::ZERO;
    let mcp = mcp(c).await;
    let alice = Client::modern(&mcp.url, Some("alice-token"));
    // The receiver's CA is not trusted by this server.
    let e = alice
        .error(
            "events/subscribe",
            subscribe_params(&rx.url("/h"), &Secret::generate(), "x"),
        )
        .await;
    assert_eq!(e["data"], json!({ "reason": "tls_error" }), "{e}");
    // An endpoint that accepts the connection and never answers.
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = silent.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((tcp, _)) = silent.accept().await {
            open.push(tcp);
        }
    });
    let url = format!("https://localhost:{port}/h");
    let started = Instant::now();
    let e = alice
        .error(
            "events/subscribe",
            subscribe_params(&url, &Secret::generate(), "x"),
        )
        .await;
    assert_eq!(e["data"], json!({ "reason": "timeout" }), "{e}");
    assert!(started.elapsed() < Duration::from_secs(3));
    held.abort();
}

#[tokio::test]
async fn a_cursor_replays_what_followed_it_and_max_age_truncates() {
    let rx = Receiver::start().await;
    let mcp = mcp(config()).await;
    let alice = Client::modern(&mcp.url, Some("alice-token"));
    let start = alice
        .result(
            "events/poll",
            json!({ "name": EVENT, "arguments": { "shop": "x" }, "cursor": null }),
        )
        .await["cursor"]
        .clone();
    let a = emit(&mcp, "x", 1);
    emit(&mcp, "y", 2);
    let b = emit(&mcp, "x", 3);
    let mut p = subscribe_params(&rx.url("/replay"), &Secret::generate(), "x");
    p["cursor"] = start.clone();
    let r = alice.result("events/subscribe", p).await;
    assert_eq!(r["truncated"], false);
    assert_eq!(r["cursor"], start, "nothing delivered yet: {r}");
    let got = rx.wait_for(2).await;
    assert_eq!(
        (got[0].id.as_str(), got[1].id.as_str()),
        (a.as_str(), b.as_str())
    );
    assert_eq!(pos(&got[0].json()["cursor"]), 1);
    assert_eq!(pos(&got[1].json()["cursor"]), 3);

    // maxAgeMs past the cursor: truncated, the old occurrences skipped.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let c = emit(&mcp, "z", 4);
    let mut p = subscribe_params(&rx.url("/aged"), &Secret::generate(), "z");
    p["cursor"] = start;
    p["maxAgeMs"] = json!(100);
    let r = alice.result("events/subscribe", p).await;
    assert_eq!(r["truncated"], true, "{r}");
    let got = rx.wait_for(4).await;
    let aged: Vec<_> = got.iter().filter(|g| g.path == "/aged").collect();
    assert_eq!(aged[0].json()["type"], "gap", "{:?}", aged[0].json());
    assert_eq!(aged[1].id, c);
}

#[tokio::test]
async fn a_server_shut_down_delivers_nothing_more() {
    let rx = Receiver::start().await;
    let mcp = mcp(config()).await;
    let alice = Client::modern(&mcp.url, Some("alice-token"));
    alice
        .result(
            "events/subscribe",
            subscribe_params(&rx.url("/h"), &Secret::generate(), "x"),
        )
        .await;
    emit(&mcp, "x", 1);
    rx.wait_for(1).await;
    mcp.server.shutdown();
    tokio::time::sleep(Duration::from_millis(50)).await;
    emit(&mcp, "x", 2);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rx.deliveries().len(), 1);
}

#[tokio::test]
async fn an_occurrence_over_the_body_limit_is_replaced_by_a_gap() {
    let rx = Receiver::start().await;
    let mut c = config();
    c.max_body = 300;
    let mcp = mcp(c).await;
    let alice = Client::modern(&mcp.url, Some("alice-token"));
    alice
        .result(
            "events/subscribe",
            subscribe_params(&rx.url("/h"), &Secret::generate(), "x"),
        )
        .await;
    mcp.server
        .events()
        .emit(EVENT, json!({ "shop": "x", "blob": "y".repeat(400) }))
        .unwrap();
    let small = emit(&mcp, "x", 2);
    let got = rx.wait_for(2).await;
    let gap = got[0].json();
    assert_eq!(gap["type"], "gap", "{gap}");
    assert_eq!(pos(&gap["cursor"]), 1, "past the large one");
    assert!(got[0].id.starts_with("msg_gap_"));
    assert!(got[0].body.len() < 300);
    assert_eq!(got[1].id, small);
}

/// Two replicas on one Redis: a webhook subscription held by one is delivered what the other
/// emits, in order, with no gap (positions there are stream ids, far apart).
#[cfg(feature = "redis")]
#[tokio::test]
async fn on_redis_a_replica_delivers_what_another_emitted() {
    use duomcp::transport::http::HttpConfig;
    let redis_server = duomcp_testkit::cluster::RedisServer::start()
        .expect("redis-server (Debian package redis-server)");
    let redis = duomcp::redis::Redis::connect(&redis_server.url()).unwrap();
    let rx = Receiver::start().await;
    let holder = server(config());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let rs = ResourceServer::builder(url.clone())
        .authorization_server("https://auth.example.com")
        .validator(StaticTokens::new().with("alice-token", Principal::new("alice")))
        .build()
        .unwrap();
    let http = StreamableHttp::with_config(holder.clone(), HttpConfig::default().redis(&redis));
    let url = serve(listener, rs.protect(http.router()));
    let other = server(config());
    let other_http =
        StreamableHttp::with_config(other.clone(), HttpConfig::default().redis(&redis));
    let _other_router = other_http.router();
    tokio::time::sleep(Duration::from_millis(200)).await;

    let alice = Client::modern(&url, Some("alice-token"));
    alice
        .result(
            "events/subscribe",
            subscribe_params(&rx.url("/h"), &Secret::generate(), "x"),
        )
        .await;
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(
            other
                .events()
                .emit(EVENT, json!({ "shop": "x", "n": n }))
                .unwrap(),
        );
    }
    let got = rx.wait_for(3).await;
    let seen: Vec<&str> = got.iter().map(|g| g.id.as_str()).collect();
    assert_eq!(seen, ids.iter().map(String::as_str).collect::<Vec<_>>());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(rx.deliveries().len(), 3, "no gap envelope");
}

/// The whole loop with the crate's own other half: `Client::subscribe_webhook` (both
/// revisions) against this server, and `duomcp::webhook::receiver::Receiver` as the endpoint
/// (served over TLS here), which verifies, answers the challenge and hands the event over.
#[cfg(feature = "http-client")]
#[tokio::test]
async fn the_crates_client_and_receiver_work_with_this_server() {
    use duomcp::client::events::{Ttl, WebhookOptions};
    use duomcp::client::{Client as McpClient, EraChoice};
    use duomcp::webhook::receiver::{DeliveryKind, Receiver as Endpoint, ReceiverOptions};

    let (endpoint, mut deliveries) = Endpoint::new(ReceiverOptions::default());
    let app = axum::Router::new().route("/hooks", endpoint.post_handler());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let acceptor = tokio_rustls::TlsAcceptor::from(pki().server.clone());
    let service = hyper_util::service::TowerToHyperService::new(app);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, service) = (acceptor.clone(), service.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    let mcp = mcp(config()).await;
    for (i, era) in [EraChoice::Legacy, EraChoice::Modern]
        .into_iter()
        .enumerate()
    {
        let client = McpClient::builder()
            .era(era)
            .header("authorization", "Bearer alice-token")
            .connect_http(&mcp.url)
            .await
            .unwrap();
        let secret = Secret::generate();
        // The id is known only from the answer; the challenge comes before it.
        endpoint.set_fallback(vec![secret.clone()]);
        let shop = format!("s{i}");
        let url = format!("https://localhost:{port}/hooks");
        let options = WebhookOptions::new(url.clone(), secret.clone())
            .ttl(Ttl::Suggest(Duration::from_secs(120)));
        let sub = client
            .subscribe_webhook(EVENT, json!({ "shop": shop }), &options)
            .await
            .unwrap();
        assert!(sub.id.starts_with("sub_"));
        assert!(sub.refresh_before.is_some());
        endpoint.route(sub.id.clone(), secret.clone());
        let event_id = emit(&mcp, &shop, 7);
        let d = within(async {
            loop {
                let d = deliveries.recv().await.unwrap();
                if matches!(d.kind, DeliveryKind::Event) {
                    return d;
                }
            }
        })
        .await;
        assert_eq!(d.subscription_id, sub.id);
        assert_eq!(d.webhook_id, event_id);
        assert_eq!(d.body["data"], json!({ "shop": shop, "n": 7 }));
        // A refresh through the client shows a healthy status.
        let again = client
            .subscribe_webhook(EVENT, json!({ "shop": shop }), &options)
            .await
            .unwrap();
        assert_eq!(again.id, sub.id);
        let status = again.delivery_status.unwrap();
        assert!(status.active && status.last_error.is_none());
        assert!(status.last_delivery_at.is_some());
        client
            .unsubscribe_webhook(EVENT, json!({ "shop": shop }), &url)
            .await
            .unwrap();
    }
}
