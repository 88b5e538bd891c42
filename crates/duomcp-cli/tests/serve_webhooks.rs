//! `duomcp serve --webhooks --webhook-allow-private --webhook-ca FILE` over real HTTP with a
//! static bearer token: `events/subscribe` for `demo.tick` to a TLS receiver on 127.0.0.1
//! (its certificate issued by a CA made in the test, trusted through `--webhook-ca`), the
//! verification, then an occurrence emitted by `test_emit_event` delivered and signed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::Bytes;
use duomcp::webhook::{Secret, Signed};
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_rustls::rustls;

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");
const MODERN: &str = "2026-07-28";

/// The CA's PEM and the receiver's TLS configuration (a certificate for localhost).
fn pki() -> (String, Arc<rustls::ServerConfig>) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "duomcp serve webhook test CA");
    ca.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["localhost".into()])
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
        )
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    (ca_cert.pem(), Arc::new(config))
}

type Got = Arc<Mutex<Vec<(hyper::HeaderMap, Vec<u8>)>>>;

/// A receiver that echoes verification challenges and records every request.
async fn receiver(tls: Arc<rustls::ServerConfig>) -> (u16, Got) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let got: Got = Arc::default();
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let g = got.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, g) = (acceptor.clone(), g.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(move |req: hyper::Request<_>| {
                    let g = g.clone();
                    async move {
                        let (parts, body) = req.into_parts();
                        let body: Bytes = BodyExt::collect(body).await.unwrap().to_bytes();
                        let v: Value = serde_json::from_slice(&body).unwrap_or_default();
                        g.lock().unwrap().push((parts.headers, body.to_vec()));
                        let answer = match v["type"].as_str() {
                            Some("verification") => json!({ "challenge": v["challenge"] }),
                            _ => json!({}),
                        };
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                            Bytes::from(answer.to_string()),
                        )))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (port, got)
}

struct Served {
    child: std::process::Child,
    url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(args: &[&str]) -> Served {
    let mut child = Command::new(BIN)
        .args(["serve", "--http", "127.0.0.1:0"])
        .args(args)
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
    std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = stderr.read_to_string(&mut rest);
    });
    Served { child, url }
}

async fn call(url: &str, token: &str, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let mut req = reqwest::Client::new().post(url);
    if method == "tools/call" {
        req = req.header("mcp-name", params["name"].as_str().unwrap_or_default());
    }
    let res = req
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {token}"))
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", method)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let text = res.text().await.unwrap();
    let msg = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .rfind(|d| !d.trim().is_empty())
        .map_or(text.as_str(), str::trim);
    serde_json::from_str(msg).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[tokio::test]
async fn serve_with_webhooks_delivers_demo_tick_to_a_verified_receiver() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (ca_pem, tls) = pki();
    let ca_file = std::env::temp_dir().join(format!(
        "duomcp-webhook-ca-{}-{}.pem",
        std::process::id(),
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::write(&ca_file, ca_pem).unwrap();
    let (port, got) = receiver(tls).await;
    let served = serve(&[
        "--auth-issuer",
        "http://127.0.0.1:9/",
        "--auth-token",
        "hook-token=mcp",
        "--webhooks",
        "--webhook-allow-private",
        "--webhook-ca",
        ca_file.to_str().unwrap(),
    ]);
    let list = call(&served.url, "hook-token", "events/list", json!({})).await;
    assert_eq!(
        list["result"]["events"][0]["delivery"],
        json!(["poll", "push", "webhook"]),
        "{list}"
    );
    let secret = Secret::generate();
    let hook = format!("https://localhost:{port}/hook");
    let r = call(
        &served.url,
        "hook-token",
        "events/subscribe",
        json!({
            "name": "demo.tick",
            "arguments": { "room": "r1" },
            "delivery": { "mode": "webhook", "url": hook, "secret": secret.expose() },
            "cursor": null,
        }),
    )
    .await;
    let id = r["result"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned();
    let emitted = call(
        &served.url,
        "hook-token",
        "tools/call",
        json!({ "name": "test_emit_event", "arguments": { "room": "r1", "message": "hello" } }),
    )
    .await;
    assert!(
        emitted["result"]["content"][0]["text"].is_string(),
        "{emitted}"
    );
    let delivery = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Some(d) = got.lock().unwrap().get(1).cloned() {
                return d;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| {
        let seen: Vec<String> = got
            .lock()
            .unwrap()
            .iter()
            .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
            .collect();
        panic!("no delivery in time; the receiver got {seen:?}; subscribed: {r}")
    });
    let _ = std::fs::remove_file(&ca_file);
    let (headers, body) = delivery;
    let h = |n: &str| headers.get(n).unwrap().to_str().unwrap().to_owned();
    assert_eq!(h("x-mcp-subscription-id"), id);
    let (wid, ts, sig) = (
        h("webhook-id"),
        h("webhook-timestamp"),
        h("webhook-signature"),
    );
    let signed = Signed {
        id: &wid,
        timestamp: &ts,
        signature: &sig,
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    secret.verify(&signed, &body, now).unwrap();
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["name"], "demo.tick");
    assert_eq!(v["data"], json!({ "room": "r1", "message": "hello" }));
    assert_eq!(v["eventId"], json!(wid));
}
