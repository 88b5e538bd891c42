//! The `weather_stdio` server inside an axum application: the app keeps its own routes and
//! `StreamableHttp::router()` adds `/mcp`, which speaks both revisions.
//!
//! ```sh
//! cargo run -q -p duomcp --features http-server --example weather_axum 127.0.0.1:3005 &
//! cargo run -q -p duomcp-cli -- call forecast city=Porto http://127.0.0.1:3005/mcp
//! ```
//!
//! ```text
//! {"city":"Porto","high_c":17,"sky":"sunny"}
//! ```

use axum::routing::get;
use axum::Router;
use duomcp::transport::http::StreamableHttp;
use tokio::net::TcpListener;

#[path = "weather/server.rs"]
mod weather;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3000".to_owned());
    let app = Router::new()
        .route("/health", get(|| async { "ok" }))
        .merge(StreamableHttp::new(weather::server()).router());
    let listener = TcpListener::bind(&addr).await?;
    eprintln!(
        "listening on http://{} (MCP at /mcp)",
        listener.local_addr()?
    );
    axum::serve(listener, app).await
}
