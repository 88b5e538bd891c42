//! Graceful shutdown of a connection on a signal: no new requests are read, requests in
//! flight finish within `shutdown_grace`, and the ones still running after it are cancelled.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::server::{Args, Server, ServerConfig};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{oneshot, Notify};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Sleep {
    ms: u64,
}

/// Sets its flag when dropped: the handler's future was torn down before it finished.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

struct Harness {
    started: Arc<Notify>,
    dropped: Arc<AtomicBool>,
    stop: Option<oneshot::Sender<()>>,
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    lines: tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
}

fn start(grace: Duration) -> Harness {
    let started = Arc::new(Notify::new());
    let dropped = Arc::new(AtomicBool::new(false));
    let (s, d) = (started.clone(), dropped.clone());
    let mut config = ServerConfig::default();
    config.shutdown_grace = grace;
    let server = Server::builder()
        .config(config)
        .tool("quick", || async { "quick" })
        .tool("sleep", move |Args(a): Args<Sleep>| {
            let (started, dropped) = (s.clone(), d.clone());
            async move {
                let flag = DropFlag(dropped);
                started.notify_one();
                tokio::time::sleep(Duration::from_millis(a.ms)).await;
                std::mem::forget(flag);
                format!("slept {} ms", a.ms)
            }
        })
        .build();
    // A byte duplex on purpose: `serve_connection_with_shutdown` (the stdio API) is under test.
    let (client, server_end) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_end);
    let (stop, stopped) = oneshot::channel::<()>();
    let served = tokio::spawn(server.serve_connection_with_shutdown(read, write, async {
        let _ = stopped.await;
    }));
    let (client_read, client_write) = tokio::io::split(client);
    Harness {
        started,
        dropped,
        stop: Some(stop),
        write: client_write,
        lines: BufReader::new(client_read).lines(),
        served,
    }
}

fn call(id: i64, name: &str, arguments: Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(&json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": name, "arguments": arguments, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        } }
    }))
    .unwrap();
    line.push(b'\n');
    line
}

impl Harness {
    async fn send(&mut self, line: &[u8]) {
        self.write.write_all(line).await.unwrap();
        self.write.flush().await.unwrap();
    }

    /// Every line the server writes until it closes the connection.
    async fn rest(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some(line) = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("the server neither answered nor closed")
            .unwrap()
        {
            out.push(serde_json::from_str(&line).unwrap());
        }
        out
    }

    fn signal(&mut self) {
        self.stop.take().unwrap().send(()).unwrap();
    }
}

#[tokio::test]
async fn a_request_in_flight_finishes_within_the_grace_period() {
    let mut h = start(Duration::from_secs(5));
    h.send(&call(1, "sleep", json!({ "ms": 300 }))).await;
    h.started.notified().await;
    let signalled = Instant::now();
    h.signal();
    // Sent after the signal: the server no longer reads, so this is never answered.
    tokio::time::sleep(Duration::from_millis(100)).await;
    h.send(&call(2, "quick", json!({}))).await;

    let out = h.rest().await;
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["id"], 1);
    assert_eq!(out[0]["result"]["content"][0]["text"], "slept 300 ms");
    h.served.await.unwrap().unwrap();
    // It waited for the handler, not for the whole grace period.
    assert!(signalled.elapsed() < Duration::from_secs(3));
    assert!(!h.dropped.load(Ordering::SeqCst));
}

#[tokio::test]
async fn a_request_still_running_after_the_grace_period_is_cancelled() {
    let mut h = start(Duration::from_millis(200));
    h.send(&call(1, "sleep", json!({ "ms": 30_000 }))).await;
    h.started.notified().await;
    let signalled = Instant::now();
    h.signal();

    // A cancelled request gets no response; the connection closes.
    let out = h.rest().await;
    assert!(out.is_empty(), "{out:?}");
    h.served.await.unwrap().unwrap();
    let took = signalled.elapsed();
    assert!(
        took >= Duration::from_millis(200),
        "stopped before the grace period: {took:?}"
    );
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(
        h.dropped.load(Ordering::SeqCst),
        "the handler was not cancelled"
    );
}

#[tokio::test]
async fn without_a_signal_the_connection_serves_until_its_input_ends() {
    let mut h = start(Duration::from_secs(5));
    h.send(&call(1, "quick", json!({}))).await;
    h.write.shutdown().await.unwrap();
    let out = h.rest().await;
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["result"]["content"][0]["text"], "quick");
    h.served.await.unwrap().unwrap();
}
