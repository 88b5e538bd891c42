//! `duomcp`: serve the reference server, or talk to any MCP server.

use clap::{CommandFactory, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "duomcp",
    version,
    about = "Model Context Protocol, both revisions (2025-11-25 and 2026-07-28)",
    after_help = "Logging (to stderr): DUOMCP_LOG, else RUST_LOG, sets the filter (default `warn`; \
                  `DUOMCP_LOG=debug` logs every request with method, target, era, duration and outcome)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per run: the size of `Serve`, the largest, costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Run the bundled reference server (every conformance fixture) over stdio, or over
    /// Streamable HTTP with `--http` (TCP) or `--unix` (a Unix domain socket).
    #[command(group(clap::ArgGroup::new("listen").args(["http", "unix"])))]
    Serve {
        /// Serve over Streamable HTTP at `http://HOST:PORT/mcp` instead of stdio (e.g.
        /// `127.0.0.1:3000`; port 0 picks a free one). HTTP/1.1 and HTTP/2 (h2c, prior
        /// knowledge) on the same port.
        #[arg(long, value_name = "HOST:PORT")]
        http: Option<String>,
        /// Serve over Streamable HTTP (HTTP/1.1 and h2c) on a Unix domain socket at PATH
        /// instead of stdio; clients reach it as `unix:PATH` (`duomcp tools unix:PATH`), the
        /// endpoint being `http://localhost/mcp`. The socket file is made with mode 0600
        /// (--unix-mode), a stale one (nobody listening) is replaced, and it is removed on
        /// Ctrl-C / SIGTERM. PATH being something else, or a socket in use, is an error.
        #[arg(long, value_name = "PATH", conflicts_with = "http")]
        unix: Option<std::path::PathBuf>,
        /// With --unix: the socket file's permissions, in octal (default 0600: only this user
        /// may connect; 0660: this group too).
        #[arg(long, value_name = "MODE", requires = "unix", value_parser = parse_mode)]
        unix_mode: Option<u32>,
        /// With --http: serve HTTPS with this certificate chain (PEM, leaf first); HTTP/2 or
        /// HTTP/1.1 as the client's ALPN picks. Needs --tls-key.
        #[arg(long, value_name = "PEM", requires_all = ["http", "tls_key"])]
        tls_cert: Option<std::path::PathBuf>,
        /// With --tls-cert: the certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
        #[arg(long, value_name = "PEM", requires = "tls_cert")]
        tls_key: Option<std::path::PathBuf>,
        /// With --http: also accept this `Host` header (repeatable), e.g. `mcp.example.com` or
        /// `mcp.example.com:443`, for a server reached by a real host name (behind a reverse
        /// proxy). Loopback names and the bound address are always accepted; others get 403.
        #[arg(long = "allow-host", value_name = "HOST", requires = "listen")]
        allow_hosts: Vec<String>,
        /// With --http: also accept this `Origin` (repeatable), e.g. `https://app.example.com`,
        /// for browser clients served from elsewhere. Requests without `Origin` are not affected.
        #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "listen")]
        allow_origins: Vec<String>,
        /// Also serve the skills under DIR (repeatable): every folder below it holding a
        /// `SKILL.md` is a skill named after the folder, its path the skill's URI path
        /// (`DIR/acme/notes/SKILL.md` is `skill://acme/notes/SKILL.md`). They are served in
        /// addition to the reference server's demo skills, re-read from disk at each request.
        /// A skill that breaks the naming rules or the limits (512 files, 16 MiB) stops the
        /// server from starting, with every problem listed.
        #[arg(long = "skills", value_name = "DIR")]
        skills: Vec<std::path::PathBuf>,
        /// With `--http`: change a limit, `KEY=VALUE` (repeatable), e.g. `body-timeout=10s`,
        /// `max-sessions=500`, `event-log-bytes=16M`. Every limit, its default and the error
        /// a client gets: LIMITS.md.
        #[arg(long = "limit", value_name = "KEY=VALUE")]
        limits: Vec<String>,
        /// With --http or --unix: on Ctrl-C / SIGTERM, first say `503` at `GET /readyz` (the
        /// readiness probe, `200` while serving) for this many seconds while still serving
        /// everything, so that a load balancer's health check takes this replica out of
        /// rotation; then shut down gracefully. Default 0: shut down at once. Behind HAProxy
        /// with deploy/haproxy.cfg's checks, 3. Fractions allowed (`0.5`); at most 300.
        #[arg(long, value_name = "SECONDS", requires = "listen", value_parser = parse_drain)]
        drain: Option<std::time::Duration>,
        /// With --http: keep the state replicas share in Redis (`redis://HOST:PORT`, or a Redis
        /// Cluster: `redis+cluster://HOST:PORT,HOST:PORT,…`, its seed nodes): the SSE event log
        /// and, without --state-key-file, the `requestState` key. The book: "Replicas on Redis".
        #[arg(long, value_name = "URL", requires = "listen")]
        redis: Option<String>,
        /// With --redis: a 2025-11-25 request id in flight is refused on every replica, not
        /// only on the one running it (each request claims its id in Redis: two more round
        /// trips a request). `HttpConfig::fleet_request_ids`.
        #[arg(long, requires = "redis")]
        fleet_request_ids: bool,
        /// The `requestState` keyring: one base64 key of >= 32 random bytes per line, newest
        /// first (`head -c 32 /dev/urandom | base64`). The newest seals; all open.
        #[arg(long, value_name = "PATH")]
        state_key_file: Option<std::path::PathBuf>,
        /// Speak only one revision (`legacy`: 2025-11-25, `modern`: 2026-07-28), as a server
        /// of that revision alone would; default both.
        #[arg(long, value_enum, default_value = "both")]
        era: duomcp_cli::reference::era::ServeEra,
        /// Also declare the extension ID in the server's capabilities (repeatable), with its
        /// settings as a JSON object: `--extension 'com.example/feature={"level":2}'`, or
        /// `--extension com.example/feature` for `{}`. ID is `vendor.prefix/name` (SEP-2133).
        #[arg(long = "extension", value_name = "ID[=JSON]")]
        extensions: Vec<String>,
        #[command(flatten)]
        telemetry: duomcp_cli::telemetry::ServeArgs,
        #[command(flatten)]
        card: duomcp_cli::commands::card::ServeCardArgs,
        #[command(flatten)]
        auth: duomcp_cli::serve_auth::ServeAuthArgs,
        #[command(flatten)]
        webhooks: duomcp_cli::reference::events::ServeWebhookArgs,
    },
    /// Serve other MCP servers (stdio commands, URLs) as one, to clients of both revisions,
    /// bridging between them: `duomcp gateway -- CMD ARGS`, `--upstream URL`, `--config FILE`.
    Gateway(duomcp_cli::commands::gateway::GatewayArgs),
    /// Load any MCP server (stdio or HTTP, either era) and report throughput and latency.
    Bench(duomcp_cli::bench::BenchArgs),
    /// Authorize against an MCP server (OAuth in the browser) and store the tokens: later
    /// client commands against that URL use them.
    Login(duomcp_cli::commands::login::LoginArgs),
    /// A web inspector for any MCP server, in either revision: `duomcp inspect -- CMD ARGS`,
    /// `duomcp inspect URL`, or `duomcp inspect` for a connect form. Serves a page on
    /// 127.0.0.1 only, behind a token in the URL it prints.
    Inspect(duomcp_cli::inspect::InspectArgs),
    /// Fetch a Server Card (experimental, SEP-2127) and check it: `duomcp card URL`, URL the
    /// MCP endpoint (its card is `URL/server-card`), a card, or an AI Catalog
    /// (`https://host/.well-known/ai-catalog.json`). Exit 3 when it is not valid.
    Card(duomcp_cli::commands::card::CardArgs),
    /// Print a shell completion script: `duomcp completions bash > ~/.local/share/bash-completion/completions/duomcp`
    /// (zsh: into a directory of `$fpath` as `_duomcp`; fish: `~/.config/fish/completions/duomcp.fish`).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// List the servers named in config files (`mcpServers` JSON), which client commands
    /// accept by name: `duomcp tools NAME`.
    Servers {
        /// Read only this file (default: `$DUOMCP_CONFIG`, else the usual locations: see
        /// `duomcp tools --help`, `--config`).
        #[arg(long, value_name = "PATH")]
        config: Option<std::path::PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    #[command(flatten)]
    Client(duomcp_cli::commands::ClientCommand),
}

/// Whether the command line asks for JSON output (`--json` before any `--`).
fn wants_json() -> bool {
    std::env::args()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json")
}

/// Parses the command line; with `--json`, a usage error is printed as JSON too.
fn parse() -> Result<Cli, std::process::ExitCode> {
    match Cli::try_parse() {
        Ok(cli) => Ok(cli),
        Err(e) if wants_json() && e.use_stderr() => {
            let message = e
                .render()
                .to_string()
                .lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches("error: ")
                .to_owned();
            duomcp_cli::commands::Failure::new(message).report(true);
            Err(std::process::ExitCode::from(2))
        }
        Err(e) => {
            let _ = e.print();
            Err(std::process::ExitCode::from(if e.use_stderr() {
                2
            } else {
                0
            }))
        }
    }
}

/// Logs go to stderr (stdout belongs to the protocol), filtered by `DUOMCP_LOG`, else
/// `RUST_LOG`, else `warn`; coloured only when stderr is a terminal.
fn init_logging() {
    use std::io::IsTerminal;
    let filter = ["DUOMCP_LOG", "RUST_LOG"]
        .into_iter()
        .find_map(|var| tracing_subscriber::EnvFilter::try_from_env(var).ok())
        .unwrap_or_else(|| "warn".into());
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(filter)
        .init();
}

/// `duomcp tools … | head`: once the reader of stdout has gone, `println!` panics ("failed
/// printing to stdout: Broken pipe"). Exit as a Unix tool killed by `SIGPIPE` does instead
/// (status 141, nothing on stderr). Rust ignores `SIGPIPE`, and restoring its default action
/// takes `unsafe`, which the workspace forbids; so the panic is caught here.
fn exit_quietly_on_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.contains("stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

fn main() -> std::process::ExitCode {
    exit_quietly_on_broken_pipe();
    init_logging();
    let cli = match parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    if let Command::Servers { config, json } = &cli.command {
        return duomcp_cli::commands::config::list(config.as_deref(), *json);
    }
    if let Command::Completions { shell } = cli.command {
        let mut command = Cli::command();
        clap_complete::generate(shell, &mut command, "duomcp", &mut std::io::stdout());
        return std::process::ExitCode::SUCCESS;
    }
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
        Command::Inspect(args) => return runtime.block_on(duomcp_cli::inspect::run(args)),
        Command::Card(args) => return runtime.block_on(duomcp_cli::commands::card::run(args)),
        Command::Bench(args) => return runtime.block_on(duomcp_cli::bench::run(args)),
        Command::Gateway(args) => {
            return runtime.block_on(duomcp_cli::commands::gateway::run(args))
        }
        other => other,
    };
    let result = runtime.block_on(async {
        match command {
            Command::Serve {
                http,
                unix,
                unix_mode,
                tls_cert,
                tls_key,
                skills,
                allow_hosts,
                allow_origins,
                limits,
                drain,
                redis,
                fleet_request_ids,
                state_key_file,
                era,
                extensions,
                telemetry,
                card,
                auth,
                webhooks,
            } => {
                auth.check().map_err(Some)?;
                let scoped = auth.enabled();
                let mut builder = match duomcp_cli::reference::builder_for_era(&skills, era, scoped)
                {
                    Ok(builder) => builder,
                    Err(e) => {
                        eprintln!("duomcp: cannot serve the skills: {e}");
                        return Err(None);
                    }
                };
                builder = webhooks.apply(builder).map_err(Some)?;
                for arg in &extensions {
                    let (id, settings) = duomcp_cli::reference::parse_extension(arg)
                        .map_err(|e| Some(format!("--extension {arg}: {e}")))?;
                    builder = builder.extension(id, settings);
                }
                // Exports what is pending when it is dropped, at the end of this block.
                let (builder, _telemetry) = telemetry.apply(builder).await.map_err(Some)?;
                let server = builder.try_build().map_err(|e| Some(e.to_string()))?;
                if let Some(every) = webhooks.event_interval {
                    duomcp_cli::reference::events::emit_every(&server, every);
                }
                let listen = match (http, unix) {
                    (Some(addr), _) => Some(Listen::Tcp(addr)),
                    (None, Some(path)) => Some(Listen::Unix(path, unix_mode.unwrap_or(0o600))),
                    (None, None) => None,
                };
                match listen {
                    // Ctrl-C / SIGTERM: stop reading, let requests in flight finish within
                    // the grace period, cancel the rest, exit 0.
                    None => {
                        duomcp_cli::shared_state::apply(
                            &server,
                            &mut duomcp::transport::http::HttpConfig::default(),
                            None,
                            state_key_file.as_deref(),
                        )
                        .await
                        .map_err(Some)?;
                        // Before anything is read: a signal at any point stops, never kills.
                        let stop = duomcp::server::shutdown_signal();
                        say_what_stdio_waits_for();
                        server
                            .serve_stdio_with_shutdown(stop)
                            .await
                            .map_err(|e| Some(e.to_string()))
                    }
                    Some(listen) => {
                        let mut config = duomcp::transport::http::HttpConfig::default();
                        config.readiness_path = Some(READINESS_PATH.to_owned());
                        config.drain_delay = drain.unwrap_or_default();
                        config.fleet_request_ids = fleet_request_ids;
                        for host in allow_hosts {
                            config = config.allow_host(host);
                        }
                        for origin in allow_origins {
                            config = config.allow_origin(origin);
                        }
                        // After the limits: `--redis` replaces the in-memory event log they size.
                        duomcp_cli::limits::apply(&mut config, &limits).map_err(Some)?;
                        card.apply(&mut config, &era.versions()).map_err(Some)?;
                        duomcp_cli::shared_state::apply(
                            &server,
                            &mut config,
                            redis.as_deref(),
                            state_key_file.as_deref(),
                        )
                        .await
                        .map_err(Some)?;
                        match listen {
                            Listen::Tcp(addr) => {
                                serve_http(&addr, tls_cert.zip(tls_key), server, config, &auth)
                                    .await
                            }
                            Listen::Unix(path, mode) => {
                                serve_unix(&path, mode, server, config).await
                            }
                        }
                    }
                }
            }
            Command::Client(_)
            | Command::Bench(_)
            | Command::Gateway(_)
            | Command::Login(_)
            | Command::Inspect(_)
            | Command::Card(_)
            | Command::Completions { .. }
            | Command::Servers { .. } => Ok(()),
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

/// Where `duomcp serve` serves HTTP.
enum Listen {
    /// `--http HOST:PORT`.
    Tcp(String),
    /// `--unix PATH`, with the socket file's mode.
    Unix(std::path::PathBuf, u32),
}

/// Where `duomcp serve --http` / `--unix` answers readiness probes.
const READINESS_PATH: &str = "/readyz";

/// The largest `--drain`: longer than any health check needs.
const MAX_DRAIN_SECS: f64 = 300.0;

/// `--drain`: seconds, fractions allowed, from 0 to [`MAX_DRAIN_SECS`].
fn parse_drain(s: &str) -> Result<std::time::Duration, String> {
    match s.trim().parse::<f64>() {
        Ok(secs) if (0.0..=MAX_DRAIN_SECS).contains(&secs) => {
            Ok(std::time::Duration::from_secs_f64(secs))
        }
        _ => Err(format!(
            "`{s}` is not a number of seconds from 0 to {MAX_DRAIN_SECS}"
        )),
    }
}

/// `--unix-mode`: octal permission bits (`600`, `0600`, `0o600`).
fn parse_mode(s: &str) -> Result<u32, String> {
    let digits = s.strip_prefix("0o").unwrap_or(s);
    match u32::from_str_radix(digits, 8) {
        Ok(mode) if mode <= 0o777 => Ok(mode),
        _ => Err(format!("`{s}` is not an octal mode like 0600 or 0660")),
    }
}

/// Serves the reference server over Streamable HTTP on a Unix domain socket at `path` (its
/// file made with `mode`) until Ctrl-C (or SIGTERM), then shuts down gracefully and removes
/// the socket file.
#[cfg(unix)]
async fn serve_unix(
    path: &std::path::Path,
    mode: u32,
    server: duomcp::server::Server,
    config: duomcp::transport::http::HttpConfig,
) -> Result<(), Option<String>> {
    use duomcp::transport::http::{bind_unix, StreamableHttp};
    let stop = duomcp::server::shutdown_signal();
    let listener = bind_unix(path, mode)
        .await
        .map_err(|e| Some(e.to_string()))?;
    eprintln!(
        "duomcp: serving the reference server on the Unix socket {} at http://localhost/mcp (2025-11-25 and 2026-07-28; Ctrl-C stops)",
        path.display()
    );
    let served = StreamableHttp::with_config(server, config)
        .serve_unix_with_shutdown(listener, stop)
        .await;
    if let Err(e) = std::fs::remove_file(path) {
        tracing::warn!(path = %path.display(), "socket file not removed: {e}");
    }
    served.map_err(|e| Some(e.to_string()))
}

#[cfg(not(unix))]
async fn serve_unix(
    _path: &std::path::Path,
    _mode: u32,
    _server: duomcp::server::Server,
    _config: duomcp::transport::http::HttpConfig,
) -> Result<(), Option<String>> {
    Err(Some(
        "--unix: Unix domain sockets are not supported on this platform".to_owned(),
    ))
}

/// On a terminal, a silent `duomcp serve` looks hung: say what it waits for (on stderr, which
/// is not the protocol's). Piped or spawned by a client, it says nothing.
fn say_what_stdio_waits_for() {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        eprintln!(
            "duomcp: the reference server is waiting for JSON-RPC messages on stdin, one per line \
             (2025-11-25: `initialize` first; 2026-07-28: `_meta` on every request). \
             An MCP client usually starts it: `duomcp tools -- duomcp serve`. Ctrl-D or Ctrl-C stops."
        );
    }
}

/// Serves the reference server over Streamable HTTP (HTTPS with `tls`: certificate and key
/// files) until Ctrl-C (or SIGTERM), then shuts down gracefully: listen streams get their final
/// response before the connections close.
async fn serve_http(
    addr: &str,
    tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
    server: duomcp::server::Server,
    mut config: duomcp::transport::http::HttpConfig,
    auth: &duomcp_cli::serve_auth::ServeAuthArgs,
) -> Result<(), Option<String>> {
    use duomcp::transport::http::{tls as http_tls, StreamableHttp};
    // Read the certificate before binding: a bad file is reported before anything listens.
    let tls = match tls {
        Some((cert, key)) => Some(
            http_tls::server_config_from_pem_files(&cert, &key).map_err(|e| Some(e.to_string()))?,
        ),
        None => None,
    };
    let listener = duomcp_cli::serve_addr::bind(addr).await.map_err(Some)?;
    let local = listener.local_addr().map_err(|e| Some(e.to_string()))?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    // Installed before the line below announces the server: a signal sent as soon as it is
    // seen stops the server instead of killing it.
    let stop = duomcp::server::shutdown_signal();
    eprintln!("duomcp: serving the reference server at {scheme}://{local}/mcp (2025-11-25 and 2026-07-28, HTTP/1.1 and HTTP/2; Ctrl-C stops)");
    let rs = auth.resource_server(local, tls.is_some()).map_err(Some)?;
    if rs.is_some() {
        // Served below, outside the auth layer: a health check has no token.
        config.readiness_path = None;
    }
    let http = StreamableHttp::with_config(server, config);
    let Some(rs) = rs else {
        return match tls {
            Some(tls) => http.serve_tls_with_shutdown(listener, tls, stop).await,
            None => http.serve_with_shutdown(listener, stop).await,
        }
        .map_err(|e| Some(e.to_string()));
    };
    eprintln!(
        "duomcp: OAuth: bearer tokens for {} from {} (metadata at {})",
        rs.metadata().resource,
        rs.metadata().authorization_servers.join(", "),
        rs.metadata_url()
    );
    // The endpoint behind the auth layer, served as an app: on the signal, the drain (the
    // readiness probe, outside the auth layer, says 503), then listen streams get their final
    // response (the endpoint's own shutdown), then the connections close.
    let probe = http.clone();
    let app = rs.protect(http.router()).route(
        READINESS_PATH,
        axum::routing::get(move || {
            let ready = probe.is_ready();
            async move {
                if ready {
                    (axum::http::StatusCode::OK, "ready\n")
                } else {
                    (axum::http::StatusCode::SERVICE_UNAVAILABLE, "draining\n")
                }
            }
        }),
    );
    let stop = async move {
        stop.await;
        http.drain().await;
        http.shutdown();
    };
    let mut options = duomcp::transport::http::ServeOptions::default();
    options.tls = tls;
    duomcp::transport::http::serve_with(listener, app, options, stop)
        .await
        .map_err(|e| Some(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::parse_drain;
    use std::time::Duration;

    #[test]
    fn drain_takes_seconds_from_0_to_300_with_fractions() {
        assert_eq!(parse_drain("0"), Ok(Duration::ZERO));
        assert_eq!(parse_drain("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_drain("300"), Ok(Duration::from_secs(300)));
        for bad in ["-1", "300.5", "nan", "inf", "3s", ""] {
            assert!(parse_drain(bad).is_err(), "{bad}");
        }
    }
}
