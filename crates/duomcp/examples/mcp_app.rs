//! An MCP App: a tool with an interactive view (extension `io.modelcontextprotocol/ui`).
//!
//! | ↔ | method | what it does |
//! |---|---|---|
//! | ← | `tools/list` | `show_counter` linked to `ui://counter/view.html`; `increment_counter` only for the view |
//! | ← | `resources/read` `ui://counter/view.html` | the view: `mcp_app/view/index.html`, built into the binary |
//! | ← | `tools/call` `show_counter` | the count, as text and as `structuredContent` for the view |
//! | ← | `tools/call` `increment_counter` | what the view's button calls (logged on stderr) |
//!
//! The view (`examples/mcp_app/view/index.html`) is one small HTML file that speaks the MCP
//! Apps protocol to its host itself (no SDK, nothing to build); `include_str!` puts it in the
//! binary, so the example runs from a clone as it is. `scripts/interop.sh -- apps` renders it
//! in headless Chromium inside a host built on the official App SDK's host bridge.
//!
//! ```text
//! $ cargo run -q -p duomcp --example mcp_app -- --http 127.0.0.1:3001
//! mcp_app: listening on http://127.0.0.1:3001/mcp
//! $ cargo run -q -p duomcp-cli -- tools http://127.0.0.1:3001/mcp
//! $ cargo run -q -p duomcp-cli -- read ui://counter/view.html --output view.html http://127.0.0.1:3001/mcp
//! ```

// ANCHOR: app
use duomcp::schema::CallToolResult;
use duomcp::server::apps::View;
use duomcp::server::{Context, Server, State};
use duomcp::transport::http::StreamableHttp;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const VIEW: &str = "ui://counter/view.html";

/// The count, shared by every request.
#[derive(Clone, Default)]
struct Counter(Arc<AtomicU64>);

/// The count as the view reads it (`structuredContent.count`) plus a text for the model.
fn counted(count: u64, text: String) -> CallToolResult {
    let mut result = CallToolResult::text(text);
    result.structured_content = Some(serde_json::json!({ "count": count }));
    result
}

/// Shows the counter. Hosts that render views show it in the counter's view.
#[duomcp::tool(ui = "ui://counter/view.html", read_only)]
async fn show_counter(ctx: Context, State(counter): State<Counter>) -> CallToolResult {
    let count = counter.0.load(Ordering::SeqCst);
    if ctx.renders_views() {
        counted(
            count,
            format!("The counter is at {count}; the view can increment it."),
        )
    } else {
        // No view: everything goes in the text.
        counted(count, format!("The counter is at {count}."))
    }
}

/// Adds one to the counter. Only the view calls it (its button).
#[duomcp::tool(ui = "ui://counter/view.html", visibility = ["app"])]
async fn increment_counter(State(counter): State<Counter>) -> CallToolResult {
    let count = counter.0.fetch_add(1, Ordering::SeqCst) + 1;
    eprintln!("mcp_app: increment_counter called, count is now {count}");
    counted(count, format!("Incremented: the counter is at {count}."))
}

/// The server: the view plus its two tools.
fn server() -> Server {
    let view = View::html(VIEW, include_str!("mcp_app/view/index.html"))
        .name("counter")
        .title("Counter")
        .description("The counter, with a button that increments it")
        .prefers_border(true);
    Server::builder()
        .name("mcp-app-example")
        .state(Counter::default())
        .view(view)
        .tool(show_counter::spec(), show_counter)
        .tool(increment_counter::spec(), increment_counter)
        .build()
}
// ANCHOR_END: app

// ANCHOR: main
#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut http = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => http = args.next(),
            other => {
                eprintln!("usage: mcp_app [--http ADDR] (unknown argument {other:?})");
                std::process::exit(2);
            }
        }
    }
    let server = server();
    match http {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(&addr).await?;
            eprintln!(
                "mcp_app: listening on http://{}/mcp",
                listener.local_addr()?
            );
            StreamableHttp::new(server).serve(listener).await
        }
        None => server.serve_stdio().await,
    }
}
// ANCHOR_END: main
