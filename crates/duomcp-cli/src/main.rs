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
    /// Run the bundled reference server (every conformance fixture) over stdio, or over
    /// Streamable HTTP with `--http`.
    Serve {
        /// Serve over Streamable HTTP at `http://ADDR/mcp` instead of stdio (e.g. `127.0.0.1:3000`).
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
    },
    /// Load any MCP server (stdio or HTTP, either era) and report throughput and latency.
    Bench(duomcp_cli::bench::BenchArgs),
    /// Authorize against an MCP server (OAuth in the browser) and store the tokens: later
    /// client commands against that URL use them.
    Login(duomcp_cli::commands::login::LoginArgs),
    #[command(flatten)]
    Client(duomcp_cli::commands::ClientCommand),
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
    let command = match cli.command {
        Command::Client(command) => return runtime.block_on(duomcp_cli::commands::run(command)),
        Command::Login(args) => return runtime.block_on(duomcp_cli::commands::login::run(args)),
        Command::Bench(args) => return runtime.block_on(duomcp_cli::bench::run(args)),
        other => other,
    };
    let result = runtime.block_on(async {
        match command {
            Command::Serve { http: None } => duomcp_cli::reference::server().serve_stdio().await,
            Command::Serve { http: Some(addr) } => serve_http(&addr).await,
            Command::Client(_) | Command::Bench(_) | Command::Login(_) => Ok(()),
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

/// Serves the reference server over Streamable HTTP until Ctrl-C (or SIGTERM), then shuts down
/// gracefully: listen streams get their final response before the connections close.
async fn serve_http(addr: &str) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    eprintln!("duomcp: serving the reference server at http://{local}/mcp (2025-11-25 and 2026-07-28; Ctrl-C stops)");
    let http = duomcp::transport::http::StreamableHttp::new(duomcp_cli::reference::server());
    http.serve_with_shutdown(listener, stop_signal()).await
}

async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
