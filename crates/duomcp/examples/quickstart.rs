//! The README's server: one typed tool, served over stdio.
//!
//! | ↔ | method | what it does |
//! |---|---|---|
//! | ↔ | `initialize` / `notifications/initialized` | the 2025-11-25 handshake (2026-07-28 needs none) |
//! | ← | `tools/list` | lists `greet`, its description from the doc comment, its schema from `Greet` |
//! | ← | `tools/call` `greet` | `{"name":"Ada"}` → `Hello, Ada!` |
//!
//! ```text
//! $ cargo run -q -p duomcp --example quickstart
//! # a 2026-07-28 call: no handshake, `_meta` on the request
//! {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
//! # ← {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Hello, Ada!"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"duomcp-server","version":"0.1.0"}}}}
//! ```
//!
//! Or let the `duomcp` client do the talking:
//! `duomcp call greet name=Ada -- cargo run -q -p duomcp --example quickstart`.

use duomcp::server::{Args, Server};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Greet {
    name: String,
}

/// Greets someone by name.
#[duomcp::tool]
async fn greet(Args(Greet { name }): Args<Greet>) -> String {
    format!("Hello, {name}!")
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let server = Server::builder().tool(greet::spec(), greet).build();
    server.serve_stdio().await
}
