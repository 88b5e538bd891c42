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
        /// HTTP/1.1 and HTTP/2 (h2c, prior knowledge) on the same port.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// With `--http`: serve HTTPS with this certificate chain (PEM, leaf first); HTTP/2 or
        /// HTTP/1.1 as the client's ALPN picks. Needs `--tls-key`.
        #[arg(long, value_name = "PEM", requires_all = ["http", "tls_key"])]
        tls_cert: Option<std::path::PathBuf>,
        /// With `--tls-cert`: the certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
        #[arg(long, value_name = "PEM", requires = "tls_cert")]
        tls_key: Option<std::path::PathBuf>,
        /// Also serve the skills under DIR (repeatable): every folder below it holding a
        /// `SKILL.md` is a skill named after the folder, its path the skill's URI path
        /// (`DIR/acme/notes/SKILL.md` is `skill://acme/notes/SKILL.md`). They are served in
        /// addition to the reference server's demo skills, re-read from disk at each request.
        /// A skill that breaks the naming rules or the limits (512 files, 16 MiB) stops the
        /// server from starting, with every problem listed.
        #[arg(long = "skills", value_name = "DIR")]
        skills: Vec<std::path::PathBuf>,
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
            Command::Serve {
                http,
                tls_cert,
                tls_key,
                skills,
            } => {
                let server = match duomcp_cli::reference::server_with_skill_dirs(&skills) {
                    Ok(server) => server,
                    Err(e) => {
                        eprintln!("duomcp: cannot serve the skills: {e}");
                        return Err(None);
                    }
                };
                match http {
                    // Ctrl-C / SIGTERM: stop reading, let requests in flight finish within
                    // the grace period, cancel the rest, exit 0.
                    None => server
                        .serve_stdio_with_shutdown(duomcp::server::shutdown_signal())
                        .await
                        .map_err(Some),
                    Some(addr) => serve_http(&addr, tls_cert.zip(tls_key), server)
                        .await
                        .map_err(Some),
                }
            }
            Command::Client(_) | Command::Bench(_) | Command::Login(_) => Ok(()),
        }
    });
    // The stdin reader thread cannot be interrupted: do not wait for it after a signal.
    runtime.shutdown_background();
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(Some(e)) => {
            eprintln!("duomcp: {e}");
            std::process::ExitCode::FAILURE
        }
        // Already reported.
        Err(None) => std::process::ExitCode::FAILURE,
    }
}

/// Serves the reference server over Streamable HTTP (HTTPS with `tls`: certificate and key
/// files) until Ctrl-C (or SIGTERM), then shuts down gracefully: listen streams get their final
/// response before the connections close.
async fn serve_http(
    addr: &str,
    tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
    server: duomcp::server::Server,
) -> std::io::Result<()> {
    use duomcp::transport::http::{tls as http_tls, StreamableHttp};
    // Read the certificate before binding: a bad file is reported before anything listens.
    let tls = match tls {
        Some((cert, key)) => Some(
            http_tls::server_config_from_pem_files(&cert, &key).map_err(std::io::Error::other)?,
        ),
        None => None,
    };
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    eprintln!("duomcp: serving the reference server at {scheme}://{local}/mcp (2025-11-25 and 2026-07-28, HTTP/1.1 and HTTP/2; Ctrl-C stops)");
    let http = StreamableHttp::new(server);
    match tls {
        Some(config) => {
            http.serve_tls_with_shutdown(listener, config, stop_signal())
                .await
        }
        None => http.serve_with_shutdown(listener, stop_signal()).await,
    }
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
