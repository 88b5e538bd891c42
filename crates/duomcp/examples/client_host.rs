//! A host: starts an MCP server as a child process, finds out which revision it speaks, lists
//! its tools and calls one.
//!
//! | ↔ | method | what the client does |
//! |---|---|---|
//! | → | `server/discover` | probes for 2026-07-28 (`EraChoice::Auto`)… |
//! | → | `initialize` / `notifications/initialized` | …and falls back to 2025-11-25 |
//! | → | `tools/list` | every page, with the tools' schemas |
//! | → | `tools/call` | calls the tool with typed arguments |
//!
//! ```text
//! $ cargo build -q -p duomcp --examples
//! $ cargo run -q -p duomcp --example client_host -- cargo run -q -p duomcp --example quickstart
//! connected to duomcp-server 0.1.0, revision 2026-07-28
//! tools: greet (Greets someone by name.)
//! greet → Hello, Ada!
//! ```
//!
//! Any stdio server works: `… --example client_host -- duomcp serve` talks to the reference
//! server (whose `greet` is missing, so it says so), `… -- --era legacy target/…` forces the
//! 2025-11-25 handshake. With no arguments it starts the `quickstart` example next to itself.

use duomcp::client::{Client, ClientError, EraChoice};
use serde_json::json;
use tokio::process::Command;

#[tokio::main]
async fn main() -> Result<(), ClientError> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut era = EraChoice::Auto;
    if args.first().map(String::as_str) == Some("--era") && args.len() > 1 {
        era = args[1].parse().map_err(ClientError::InvalidArguments)?;
        args.drain(..2);
    }
    let command = match args.split_first() {
        Some((program, rest)) => {
            let mut command = Command::new(program);
            command.args(rest);
            command
        }
        None => Command::new(sibling("quickstart")),
    };

    // ANCHOR: connect
    let client = Client::builder()
        .name("client-host-example")
        .era(era)
        .connect_stdio(command)
        .await?;
    let info = client.server_info().unwrap_or_default();
    println!(
        "connected to {} {}, revision {}",
        info.name,
        info.version,
        client.protocol_version()
    );

    let tools = client.list_all_tools().await?;
    let listed: Vec<String> = tools
        .iter()
        .map(|t| format!("{} ({})", t.name, t.description.as_deref().unwrap_or("")))
        .collect();
    println!("tools: {}", listed.join(", "));

    if tools.iter().any(|t| t.name == "greet") {
        let result = client.call_tool("greet", json!({ "name": "Ada" })).await?;
        let text: Vec<&str> = result.content.iter().filter_map(|c| c.as_text()).collect();
        println!("greet → {}", text.join(" "));
    } else {
        println!("(no `greet` tool to call)");
    }
    client.close().await
    // ANCHOR_END: connect
}

/// An example binary built next to this one (`target/<profile>/examples/<name>`).
fn sibling(name: &str) -> std::path::PathBuf {
    let me = std::env::current_exe().unwrap_or_default();
    me.with_file_name(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}
