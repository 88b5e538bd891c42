//! The rmcp echo server for bench/compare.sh: one tool `echo {text}` returning the text,
//! written the way rmcp's docs show (`#[tool_router]` / `#[tool]`), with rmcp's defaults.
//!
//! ```text
//! rmcp-echo stdio          # stdin/stdout (both eras: rmcp picks the lifecycle per client)
//! rmcp-echo http 8080      # Streamable HTTP on http://127.0.0.1:8080/mcp (axum)
//! ```

use axum::serve::ListenerExt;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{schemars, tool, tool_router, ServiceExt};

// ANCHOR: tool
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(Clone)]
struct Echo;

#[tool_router(server_handler)]
impl Echo {
    #[tool(description = "Echo the text back")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }
}
// ANCHOR_END: tool

// ANCHOR: serve
async fn stdio() -> Result<(), Box<dyn std::error::Error>> {
    // `stdio_pipes` is what rmcp's docs recommend when both streams are pipes (as here).
    let running = Echo.serve(rmcp::transport::io::stdio_pipes()).await?;
    running.waiting().await?;
    Ok(())
}

async fn http(port: u16) -> Result<(), Box<dyn std::error::Error>> {
    let service = StreamableHttpService::new(
        || Ok(Echo),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router).await?;
    Ok(())
}
// ANCHOR_END: serve

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["stdio"] => stdio().await,
        ["http", port] => match port.parse() {
            Ok(port) => http(port).await,
            Err(e) => Err(e.into()),
        },
        _ => Err("usage: rmcp-echo stdio | rmcp-echo http PORT".into()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rmcp-echo: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
