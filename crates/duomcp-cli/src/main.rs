//! `duomcp`: serve the reference server, or talk to any MCP server.

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "duomcp",
    version,
    about = "Model Context Protocol, both revisions (2025-11-25 and 2026-07-28)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the bundled reference server (every conformance fixture) over stdio.
    Serve,
}

fn main() -> std::process::ExitCode {
    // Logs go to stderr: stdout belongs to the protocol.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("DUOMCP_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .init();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("duomcp: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve => duomcp_cli::reference::server().serve_stdio().await,
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("duomcp: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
