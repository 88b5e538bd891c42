//! An MCP endpoint inside an existing axum application: the app keeps its own routes, and
//! `StreamableHttp::router()` adds `/mcp`, which speaks both revisions.
//!
//! | ↔ | HTTP | what it does |
//! |---|---|---|
//! | ← | `GET /` , `GET /health` | the application's own routes |
//! | ← | `POST /mcp` `initialize` | 2025-11-25: opens a session (`Mcp-Session-Id`) |
//! | ← | `POST /mcp` `tools/call` `greet` | either revision; 2026-07-28 mirrors method and name in headers |
//! | ← | `GET /mcp`, `DELETE /mcp` | 2025-11-25: the session's SSE stream, ending the session |
//!
//! ```text
//! $ cargo run -q -p duomcp --example axum_app -- 127.0.0.1:3000
//! listening on http://127.0.0.1:3000 (MCP at /mcp)
//! ```
//!
//! In another terminal, a 2026-07-28 call (stateless: no session, headers mirror the body):
//!
//! ```text
//! curl -s http://127.0.0.1:3000/mcp \
//!   -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
//!   -H 'mcp-protocol-version: 2026-07-28' -H 'mcp-method: tools/call' -H 'mcp-name: greet' \
//!   -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
//! # ← {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Hello, Ada!"}],"resultType":"complete",…}}
//! curl -s http://127.0.0.1:3000/health
//! # ← ok
//! ```
//!
//! Requests whose `Host` or `Origin` is not a loopback name are refused (`403`): widen
//! `HttpConfig::allowed_hosts` when serving a real host name, and authenticate clients first.

use axum::routing::get;
use axum::Router;
use duomcp::server::{Args, Server};
use duomcp::transport::http::StreamableHttp;
use tokio::net::TcpListener;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Greet {
    /// Who to greet.
    name: String,
}

/// Greets someone by name.
#[duomcp::tool(read_only)]
async fn greet(Args(Greet { name }): Args<Greet>) -> String {
    format!("Hello, {name}!")
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3000".to_owned());

    // ANCHOR: app
    let server = Server::builder()
        .name("axum-example")
        .tool(greet::spec(), greet)
        .build();
    let mcp = StreamableHttp::new(server);

    // The application: its own routes, plus the MCP endpoint merged in. Layers added here
    // (tracing, auth, limits) wrap the MCP endpoint too.
    let app = Router::new()
        .route("/", get(|| async { "An app with an MCP endpoint at /mcp" }))
        .route("/health", get(|| async { "ok" }))
        .merge(mcp.router());

    let listener = TcpListener::bind(&addr).await?;
    println!(
        "listening on http://{} (MCP at /mcp)",
        listener.local_addr()?
    );
    // Not `axum::serve`: it sets no header read timeout, so idle and slowloris connections
    // would stay open. This one closes them (30 s), as `duomcp serve --http` does.
    duomcp::transport::http::serve(listener, app).await
    // ANCHOR_END: app
}
