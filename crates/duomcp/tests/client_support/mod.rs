//! Shared helpers of the client tests: an in-process server over an in-memory pipe, a tap that
//! records every message the client writes, and a scripted fake server for behaviour the real
//! server never shows (odd version errors, silent servers, invalid results).
#![allow(dead_code)]

use duomcp::client::{Client, ClientBuilder};
use duomcp::server::Server;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

pub use duomcp_testkit::tap::{Sent, Tap};

/// A builder with short timeouts, so failing tests fail fast.
pub fn builder() -> ClientBuilder {
    Client::builder()
        .name("test-client")
        .version("0.0.1")
        .request_timeout(std::time::Duration::from_secs(10))
}

/// Connects `builder` to `server` over an in-memory pipe; returns the client and its tap.
pub async fn connect(server: &Server, builder: ClientBuilder) -> (Client, Sent) {
    try_connect(server, builder).await.expect("connect")
}

pub async fn try_connect(
    server: &Server,
    builder: ClientBuilder,
) -> Result<(Client, Sent), duomcp::client::ClientError> {
    let (client_end, server_end) = tokio::io::duplex(1 << 20);
    let (sr, sw) = tokio::io::split(server_end);
    tokio::spawn(server.clone().serve_connection(sr, sw));
    let (cr, cw) = tokio::io::split(client_end);
    let sent = Sent::default();
    let tap = Tap::new(cw, sent.clone());
    let client = builder.connect(cr, tap).await?;
    Ok((client, sent))
}

/// A scripted server: `answer` gets each message the client sends and returns the messages to
/// write back (in order). Returns the connected client's result and the tap.
pub async fn fake<F>(
    builder: ClientBuilder,
    mut answer: F,
) -> (Result<Client, duomcp::client::ClientError>, Sent)
where
    F: FnMut(&Value) -> Vec<Value> + Send + 'static,
{
    let (client_end, server_end) = tokio::io::duplex(1 << 20);
    let (sr, mut sw) = tokio::io::split(server_end);
    tokio::spawn(async move {
        let mut lines = BufReader::new(sr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            for reply in answer(&msg) {
                let mut bytes = serde_json::to_vec(&reply).unwrap();
                bytes.push(b'\n');
                if sw.write_all(&bytes).await.is_err() {
                    return;
                }
            }
        }
    });
    let (cr, cw) = tokio::io::split(client_end);
    let sent = Sent::default();
    let tap = Tap::new(cw, sent.clone());
    (builder.connect(cr, tap).await, sent)
}

/// A JSON-RPC result for `msg`.
pub fn result(msg: &Value, result: Value) -> Value {
    serde_json::json!({ "jsonrpc": "2.0", "id": msg["id"], "result": result })
}

/// A JSON-RPC error for `msg`.
pub fn error(msg: &Value, code: i32, message: &str, data: Option<Value>) -> Value {
    let mut e = serde_json::json!({ "code": code, "message": message });
    if let Some(d) = data {
        e["data"] = d;
    }
    serde_json::json!({ "jsonrpc": "2.0", "id": msg["id"], "error": e })
}

/// A minimal legacy (2025-11-25) answer to `initialize`.
pub fn initialize_result(msg: &Value) -> Value {
    result(
        msg,
        serde_json::json!({
            "protocolVersion": "2025-11-25",
            "capabilities": { "tools": { "listChanged": true } },
            "serverInfo": { "name": "fake-legacy", "version": "1" }
        }),
    )
}

/// A minimal modern (2026-07-28) answer to `server/discover`.
pub fn discover_result(msg: &Value) -> Value {
    result(
        msg,
        serde_json::json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": { "tools": {} },
            "ttlMs": 0,
            "cacheScope": "public",
            "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "fake-modern", "version": "1" } }
        }),
    )
}
