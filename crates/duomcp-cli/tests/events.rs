//! The reference server's demo event (experimental events extension): `duomcp serve` over
//! stdio, in both revisions, lists `demo.tick`, polls it, and pushes it on an `events/stream`,
//! the tool `test_emit_event` emitting the occurrences; a subscription naming a room hears
//! only of that room.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

const LEGACY: &str = "2025-11-25";
const MODERN: &str = "2026-07-28";

struct Serve {
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    modern: bool,
    /// Notifications received while waiting for a response.
    side: Vec<Value>,
    _child: Child,
}

impl Serve {
    async fn start(modern: bool) -> Serve {
        Serve::start_with(modern, &[]).await
    }

    async fn start_with(modern: bool, args: &[&str]) -> Serve {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_duomcp"))
            .arg("serve")
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn duomcp serve");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut s = Serve {
            stdin,
            lines,
            modern,
            side: Vec::new(),
            _child: child,
        };
        if !modern {
            let init = s
                .call(
                    0,
                    "initialize",
                    json!({ "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }),
                )
                .await;
            assert_eq!(
                init["result"]["capabilities"]["events"],
                json!({ "listChanged": false })
            );
            s.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
                .await;
        }
        s
    }

    async fn send(&mut self, v: Value) {
        let mut line = serde_json::to_vec(&v).unwrap();
        line.push(b'\n');
        self.stdin.write_all(&line).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    async fn request(&mut self, id: i64, method: &str, mut params: Value) {
        if self.modern {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {}
            });
        }
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
            .await
            .expect("an answer in time")
            .unwrap()
            .expect("the server ended");
        serde_json::from_str(&line).unwrap()
    }

    /// Sends a request; its response (notifications before it are skipped).
    async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.request(id, method, params).await;
        loop {
            let m = self.recv().await;
            if m["id"] == id && m.get("method").is_none() {
                return m;
            }
            self.side.push(m);
        }
    }

    async fn emit(&mut self, id: i64, room: &str) {
        let r = self
            .call(
                id,
                "tools/call",
                json!({ "name": "test_emit_event", "arguments": { "room": room, "message": format!("hi {room}") } }),
            )
            .await;
        assert_ne!(r["result"]["isError"], true, "{r}");
        assert!(r["result"]["content"][0]["text"].is_string(), "{r}");
    }
}

#[tokio::test]
async fn duomcp_serve_lists_polls_and_pushes_its_demo_event_in_both_revisions() {
    for modern in [false, true] {
        let mut s = Serve::start(modern).await;
        if modern {
            let d = s.call(1, "server/discover", json!({})).await;
            assert_eq!(
                d["result"]["capabilities"]["events"],
                json!({ "listChanged": false })
            );
        }
        let list = s.call(2, "events/list", json!({})).await;
        assert_eq!(list["result"]["events"][0]["name"], "demo.tick", "{list}");
        assert_eq!(
            list["result"]["events"][0]["delivery"],
            json!(["poll", "push"])
        );

        let p = json!({ "name": "demo.tick", "arguments": { "room": "x" }, "cursor": null });
        let first = s.call(3, "events/poll", p).await;
        let cursor = first["result"]["cursor"].clone();
        assert!(cursor.is_string(), "{first}");

        s.emit(4, "x").await;
        s.emit(5, "y").await;
        let p = json!({ "name": "demo.tick", "arguments": { "room": "x" }, "cursor": cursor });
        let second = s.call(6, "events/poll", p).await;
        let events = second["result"]["events"].as_array().unwrap();
        assert_eq!(events.len(), 1, "{second}");
        assert_eq!(events[0]["data"], json!({ "room": "x", "message": "hi x" }));

        // Arguments outside the inputSchema are refused.
        let p = json!({ "name": "demo.tick", "arguments": { "floor": 1 }, "cursor": null });
        let bad = s.call(7, "events/poll", p).await;
        assert_eq!(bad["error"]["code"], -32602, "{bad}");
        let p = json!({ "name": "demo.nope", "cursor": null });
        let unknown = s.call(8, "events/poll", p).await;
        assert_eq!(unknown["error"]["code"], -32011, "{unknown}");

        // Push: room y only.
        let p = json!({ "name": "demo.tick", "arguments": { "room": "y" }, "cursor": null });
        s.request(9, "events/stream", p).await;
        let active = s.recv().await;
        assert_eq!(active["method"], "notifications/events/active", "{active}");
        s.emit(10, "x").await;
        s.emit(11, "y").await;
        let mut got = Vec::new();
        // The emitting calls' answers and the stream's notifications interleave.
        while got.is_empty() {
            let m = match s.side.is_empty() {
                true => s.recv().await,
                false => s.side.remove(0),
            };
            if m["method"] == "notifications/events/event" {
                assert_eq!(
                    m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
                    9
                );
                got.push(m["params"]["data"].clone());
            }
        }
        assert_eq!(got, vec![json!({ "room": "y", "message": "hi y" })]);
        s.send(json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 9 } }))
            .await;
    }
}

#[tokio::test]
async fn with_webhooks_the_demo_event_lists_webhook_and_subscribe_verifies_the_endpoint() {
    let mut s = Serve::start_with(true, &["--webhooks", "--webhook-allow-private"]).await;
    let list = s.call(1, "events/list", json!({})).await;
    assert_eq!(
        list["result"]["events"][0]["delivery"],
        json!(["poll", "push", "webhook"]),
        "{list}"
    );
    // Over stdio the principal is the local user: the subscription goes as far as the
    // verification POST, which nothing answers.
    let p = json!({
        "name": "demo.tick",
        "delivery": {
            "mode": "webhook",
            "url": "https://localhost:9/hook",
            "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
        }
    });
    let e = s.call(2, "events/subscribe", p).await;
    assert_eq!(e["error"]["code"], -32015, "{e}");
    assert_eq!(e["error"]["data"]["reason"], "connection_refused", "{e}");
    // Without the flag, no webhook.
    let mut s = Serve::start(true).await;
    let p = json!({
        "name": "demo.tick",
        "delivery": { "mode": "webhook", "url": "https://localhost:9/hook", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }
    });
    let e = s.call(3, "events/subscribe", p).await;
    assert_eq!(e["error"]["code"], -32014, "{e}");
}
