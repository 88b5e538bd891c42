//! Shared helpers of the client tests: an in-process server over an in-memory connection whose
//! tap records every message both ways, and a scripted fake server for behaviour the real
//! server never shows (odd version errors, silent servers, invalid results).
#![allow(dead_code)]

use duomcp::client::{Client, ClientBuilder};
use duomcp::server::Server;
use duomcp::transport::memory::{self, Connection, MemoryTransport, Side};
use serde_json::Value;

pub use duomcp::transport::memory::Tap;
pub use duomcp_testkit::Messages;

/// A builder with short timeouts, so failing tests fail fast.
pub fn builder() -> ClientBuilder {
    Client::builder()
        .name("test-client")
        .version("0.0.1")
        .request_timeout(std::time::Duration::from_secs(10))
}

/// What the client sent so far, as the other end received it. The tap records a message as
/// it crosses: all a request's predecessors are in once it is answered.
pub fn sent(tap: &Tap) -> Vec<Value> {
    tap.from(Side::Client)
}

/// Connects `builder` to `server` over an in-memory connection; returns the client and its tap.
pub async fn connect(server: &Server, builder: ClientBuilder) -> (Client, Tap) {
    try_connect(server, builder).await.expect("connect")
}

pub async fn try_connect(
    server: &Server,
    builder: ClientBuilder,
) -> Result<(Client, Tap), duomcp::client::ClientError> {
    memory::connect_with(builder, server.clone()).await
}

/// A scripted server: `answer` gets each message the client sends and returns the messages to
/// send back (in order). Returns the connected client's result and the tap.
pub async fn fake<F>(
    builder: ClientBuilder,
    mut answer: F,
) -> (Result<Client, duomcp::client::ClientError>, Tap)
where
    F: FnMut(&Value) -> Vec<Value> + Send + 'static,
{
    let (client_end, mut server_end, tap) = Connection::tapped();
    tokio::spawn(async move {
        while let Some(message) = server_end.recv().await {
            let Ok(msg) = serde_json::from_slice::<Value>(&message) else {
                continue;
            };
            for reply in answer(&msg) {
                if server_end.send_json(&reply).await.is_err() {
                    return;
                }
            }
        }
    });
    let transport = MemoryTransport::new(client_end);
    (builder.connect_transport(transport).await, tap)
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
