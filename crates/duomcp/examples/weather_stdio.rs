//! A stdio server with two tools (`forecast`: structured output; `alerts`: fails with an
//! `anyhow` error), a resource (`weather://stations`) and a prompt (`plan_day`); the server
//! itself is in `weather/server.rs`, shared with `weather_axum`.
//!
//! | ↔ | method | what it does |
//! |---|---|---|
//! | ← | `tools/call` `forecast` | `{"city":"Lisbon"}` → `structuredContent` with `Forecast`'s schema |
//! | ← | `tools/call` `alerts` | `isError: true`, the error and its context: `no alert feed for Lisbon: environment variable not found` |
//! | ← | `resources/read` `weather://stations` | a text resource |
//! | ← | `prompts/get` `plan_day` | a user message naming the city |
//!
//! Logs go to stderr (stdout is the protocol's: a `println!` or a stdout logger would corrupt
//! it); `RUST_LOG=debug` logs every request with its method, target, era, duration and outcome.
//!
//! ```sh
//! cargo build -q -p duomcp --example weather_stdio
//! duomcp call forecast city=Lisbon -- cargo run -q -p duomcp --example weather_stdio
//! ```
//!
//! ```text
//! {"city":"Lisbon","high_c":18,"sky":"sunny"}
//! ```

#[path = "weather/server.rs"]
mod weather;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    // ANCHOR: logging
    // Logging to stderr, never stdout, without colour codes when stderr is not a terminal.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    // ANCHOR_END: logging
    weather::server().serve_stdio().await
}
