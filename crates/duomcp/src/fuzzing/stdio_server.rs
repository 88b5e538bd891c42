//! A whole server over an in-memory stdio connection: the fuzzed bytes are what the client
//! writes (either revision, any mix of requests, notifications and responses), then the input
//! ends.
//!
//! Oracles: the connection finishes (no hang: everything in flight ends once input is over),
//! and every line the server writes is one well-formed JSON-RPC message.

use super::runtime::block_on;
use crate::clock::ManualClock;
use crate::jsonrpc::decode;
use crate::server::tasks::TaskConfig;
use crate::server::{Args, HandlerError, Json, SealingKey, Server, ToolSpec, Uri};
use duomcp_schema::{Resource, ResourceTemplate};
use serde_json::json;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::AsyncWrite;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sum {
    sum: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoteId {
    id: String,
}

async fn add(Args(Add { a, b }): Args<Add>) -> Json<Sum> {
    Json(Sum {
        sum: a.wrapping_add(b),
    })
}

async fn echo(Args(Echo { text }): Args<Echo>) -> String {
    text
}

async fn review(Args(Echo { text }): Args<Echo>) -> String {
    format!("Review: {text}")
}

async fn note(Uri(uri): Uri, Args(NoteId { id }): Args<NoteId>) -> Result<String, HandlerError> {
    match id.as_str() {
        "7" => Ok("Note 7".to_owned()),
        _ => Err(HandlerError::resource_not_found(uri)),
    }
}

fn server() -> Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER
        .get_or_init(|| {
            let readme: Resource =
                serde_json::from_value(json!({ "uri": "memo://readme", "name": "readme" }))
                    .unwrap();
            let notes: ResourceTemplate = serde_json::from_value(
                json!({ "uriTemplate": "memo://notes/{id}", "name": "note" }),
            )
            .unwrap();
            let annotated = ToolSpec::new("region").input_schema(json!({
                "type": "object",
                "properties": { "region": { "type": "string", "x-mcp-header": "Region" } }
            }));
            // A fixed sealing key and a clock that does not move: the `requestState` tokens
            // and task timestamps the server writes are the same in every run.
            Server::builder()
                .name("fuzz")
                .sealing_key(SealingKey::from_bytes([9; 32]))
                .tasks(TaskConfig::default().clock(ManualClock::new(1_800_000_000_000)))
                .tool("add", add)
                .tool("echo", echo)
                .tool(annotated, || async { "ok" })
                .prompt("review", review)
                .resource(readme, || async { "# readme".to_owned() })
                .resource_template(notes, note)
                .build()
        })
        .clone()
}

/// Collects what the server writes.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl AsyncWrite for Capture {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Input: the bytes a client writes to the server's stdin.
pub fn stdio_server(data: &[u8]) {
    if data.len() > 16 * 1024 {
        return;
    }
    let out = Capture::default();
    let writer = out.clone();
    let served = block_on(async move {
        tokio::time::timeout(
            Duration::from_secs(10),
            server().serve_connection(data, writer),
        )
        .await
    });
    let Ok(result) = served else {
        panic!("the connection did not finish after its input ended")
    };
    result.expect("in-memory I/O does not fail");
    let written = out.0.lock().unwrap().clone();
    for line in written.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        if decode(line).is_ok() {
            continue;
        }
        // The one message decode refuses: an error answering a request whose id could not
        // be read, which carries no `id` (MCP's schema allows no `null` id).
        let v: serde_json::Value = serde_json::from_slice(line).unwrap_or_else(|e| {
            panic!(
                "the server wrote invalid JSON {:?}: {e}",
                String::from_utf8_lossy(line)
            )
        });
        let keys: Vec<&str> = v
            .as_object()
            .map_or(vec![], |o| o.keys().map(String::as_str).collect());
        let error_ok =
            serde_json::from_value::<duomcp_schema::ErrorObject>(v["error"].clone()).is_ok();
        assert!(
            keys == ["jsonrpc", "error"] && v["jsonrpc"] == "2.0" && error_ok,
            "the server wrote a malformed message: {v}"
        );
    }
}
