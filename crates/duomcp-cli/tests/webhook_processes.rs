//! Webhook delivery end to end, every part a real `duomcp` process on loopback: `duomcp serve
//! --webhooks` with two bearer tokens (two tenants), one `duomcp events receive` over HTTPS per
//! tenant (its certificate from a CA made here, trusted by the server through
//! `--webhook-ca`), `duomcp events subscribe` for each tenant in each revision, and `duomcp
//! call test_emit_event`: each receiver prints, verified, exactly its tenant's occurrence, with
//! the subscription id `subscribe` printed, and ends at `--count`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::webhook::Secret;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");

/// A scratch directory, removed on drop.
struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `ca.pem`, and `cert.pem`/`key.pem` for localhost signed by it, in a new directory.
fn pki() -> Dir {
    let dir = std::env::temp_dir().join(format!(
        "duomcp-webhook-processes-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name.push(
        rcgen::DnType::CommonName,
        "duomcp webhook processes test CA",
    );
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
    std::fs::write(dir.join("ca.pem"), ca_cert.pem()).unwrap();
    std::fs::write(dir.join("cert.pem"), leaf.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), leaf_key.serialize_pem()).unwrap();
    Dir(dir)
}

/// A child process killed on drop, with its stdout lines on a channel.
struct Proc {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    fn start(args: &[&str], lines_from_stderr: bool) -> Proc {
        let mut child = Command::new(BIN)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, lines) = mpsc::channel();
        let (out, err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
        let (watched, other): (Box<dyn std::io::Read + Send>, Box<dyn std::io::Read + Send>) =
            if lines_from_stderr {
                (Box::new(err), Box::new(out))
            } else {
                (Box::new(out), Box::new(err))
            };
        std::thread::spawn(move || {
            for line in BufReader::new(watched).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut BufReader::new(other), &mut std::io::sink());
        });
        Proc { child, lines }
    }

    fn line(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(15))
            .expect("a line within 15 s")
    }

    /// The exit status, within 15 s.
    fn exit(mut self) -> i32 {
        for _ in 0..300 {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("still running after 15 s");
    }
}

/// Runs `duomcp ARGS` to its end: its stdout, after checking it succeeded.
fn run(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "duomcp {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

struct Tenant {
    token: &'static str,
    room: &'static str,
    secret: String,
    receiver: Proc,
    hook: String,
}

fn tenant(dir: &Path, token: &'static str, room: &'static str) -> Tenant {
    let secret = Secret::generate().expose();
    let receiver = Proc::start(
        &[
            "events",
            "receive",
            "--listen",
            "127.0.0.1:0",
            "--secret",
            &secret,
            "--tls-cert",
            dir.join("cert.pem").to_str().unwrap(),
            "--tls-key",
            dir.join("key.pem").to_str().unwrap(),
            "--count",
            "2",
        ],
        false,
    );
    let url = receiver.line();
    let port = url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .to_owned();
    assert!(url.starts_with("https://"), "{url}");
    Tenant {
        token,
        room,
        secret,
        receiver,
        // The certificate names localhost.
        hook: format!("https://localhost:{port}/"),
    }
}

#[test]
fn two_tenants_each_receive_their_own_occurrences_in_both_revisions() {
    let dir = pki();
    let serve = Proc::start(
        &[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--auth-issuer",
            "http://127.0.0.1:9/",
            "--auth-token",
            "alice-token=mcp",
            "--auth-token",
            "bob-token=mcp",
            "--webhooks",
            "--webhook-allow-private",
            "--webhook-ca",
            dir.0.join("ca.pem").to_str().unwrap(),
        ],
        true,
    );
    let banner = serve.line();
    let url = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {banner:?}"))
        .to_owned();
    let alice = tenant(&dir.0, "alice-token", "room-a");
    let bob = tenant(&dir.0, "bob-token", "room-b");

    for (era, n) in [("legacy", 1), ("modern", 2)] {
        // Each tenant subscribes its receiver, in this revision, to its own room.
        let mut ids = Vec::new();
        for t in [&alice, &bob] {
            let auth = format!("Authorization: Bearer {}", t.token);
            let room = format!("room={}", t.room);
            let out = run(&[
                "events",
                "subscribe",
                &url,
                "demo.tick",
                &room,
                "--webhook",
                &t.hook,
                "--secret",
                &t.secret,
                "--header",
                &auth,
                "--era",
                era,
                "--json",
            ]);
            let sub: Value =
                serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
            let id = sub["id"].as_str().unwrap_or_else(|| panic!("{sub}"));
            assert!(id.starts_with("sub_"), "{sub}");
            ids.push(id.to_owned());
        }
        assert_ne!(ids[0], ids[1], "two principals, two subscriptions");
        // One occurrence per room (emitted by bob: who emits does not matter).
        for room in ["room-b", "room-a"] {
            let message = format!("message=hello {room} {era}");
            let room = format!("room={room}");
            run(&[
                "call",
                "test_emit_event",
                &room,
                &message,
                &url,
                "--header",
                "Authorization: Bearer bob-token",
            ]);
        }
        // Each receiver printed, verified, its own room's occurrence and nothing else.
        for (t, id) in [(&alice, &ids[0]), (&bob, &ids[1])] {
            let line = t.receiver.line();
            let got: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            assert_eq!(got["subscriptionId"], id.as_str(), "{got}");
            assert_eq!(got["body"]["name"], "demo.tick", "{got}");
            assert_eq!(got["body"]["data"]["room"], t.room, "{got}");
            assert_eq!(got["webhookId"], got["body"]["eventId"], "{got}");
            let text = got["body"]["data"].to_string();
            assert!(text.contains(era), "revision {era} (#{n}): {got}");
        }
        // Unsubscribed, the next revision's subscriptions are the only ones left.
        for t in [&alice, &bob] {
            let auth = format!("Authorization: Bearer {}", t.token);
            let room = format!("room={}", t.room);
            run(&[
                "events",
                "unsubscribe",
                &url,
                "demo.tick",
                &room,
                "--webhook",
                &t.hook,
                "--header",
                &auth,
                "--era",
                era,
            ]);
        }
    }
    // Both receivers got their `--count` (one per revision) and ended by themselves.
    let (Tenant { receiver: a, .. }, Tenant { receiver: b, .. }) = (alice, bob);
    assert_eq!(a.exit(), 0);
    assert_eq!(b.exit(), 0);
}
