//! `duomcp gateway`: any MCP servers, served as one to clients of both revisions, bridged
//! (the `duomcp-gateway` crate does the work; this is its command line).
//!
//! ```text
//! duomcp gateway -- duomcp serve --era legacy          # one stdio upstream, served on stdio
//! duomcp gateway --http 127.0.0.1:3000 --upstream http://127.0.0.1:4000/mcp
//! duomcp gateway --http 127.0.0.1:3000 --config gateway.toml
//! duomcp gateway --http 127.0.0.1:3000 --config gateway.toml --watch   # reload when it changes
//! duomcp gateway --check gateway.toml                  # connect to each upstream, print a table
//! duomcp gateway --http 127.0.0.1:3000 --auth-issuer https://auth.example.com -- duomcp serve
//! ```

use clap::Args;
use duomcp::client::EraChoice;
use duomcp::transport::http::Workers;
use duomcp_gateway::{AuthConfig, Gateway, GatewayConfig, UpstreamConfig};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// The arguments of `duomcp gateway`.
#[derive(Debug, Args)]
pub struct GatewayArgs {
    /// The TOML configuration (upstreams and settings; the book's "The gateway" and
    /// `deploy/gateway.toml` show every key).
    /// `kill -HUP` reloads it: upstreams added, removed or changed take effect without a
    /// restart (calls in flight and client sessions go on; `[gateway]` and `[auth]` need one).
    #[arg(long, value_name = "PATH", conflicts_with_all = ["upstream", "command", "sse_poll_after_ms"])]
    pub config: Option<PathBuf>,
    /// With `--config`: also reload it when the file changes (checked every second).
    #[arg(long, requires = "config")]
    pub watch: bool,
    /// One Streamable HTTP (or 2024-11-05 HTTP+SSE) upstream at this URL.
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub upstream: Option<String>,
    /// With `--upstream` or `-- CMD`: the revision to speak to it (`auto`, `legacy`, `modern`).
    #[arg(long, value_name = "ERA", default_value = "auto")]
    pub upstream_era: String,
    /// Serve over Streamable HTTP at `http://HOST:PORT/mcp` (and `GET /healthz`) instead of
    /// stdio.
    #[arg(long, value_name = "HOST:PORT")]
    pub http: Option<String>,
    /// Connect to every upstream, print a table of their health and exit (1 if one is down).
    /// Takes the configuration file, or uses `--config` / `--upstream` / `-- CMD`.
    #[arg(long, value_name = "CONFIG", num_args = 0..=1, default_missing_value = "")]
    pub check: Option<String>,
    /// With `--upstream` or `-- CMD`: close a 2025-11-25 client's SSE stream once a call has
    /// run this many milliseconds (the client resumes it: SSE polling); default never.
    #[arg(long, value_name = "MS")]
    pub sse_poll_after_ms: Option<u64>,
    /// With `--http`: require OAuth bearer tokens (JWTs) from this issuer, meant for the
    /// gateway (`--auth-resource`); the config file's `[auth]` says more.
    #[arg(long, value_name = "URL", requires = "http")]
    pub auth_issuer: Option<String>,
    /// With `--auth-issuer`: the issuer's JWKS (default: the `jwks_uri` of its metadata).
    #[arg(long, value_name = "URL", requires = "auth_issuer")]
    pub auth_jwks_url: Option<String>,
    /// With `--auth-issuer`: the gateway's canonical URI, the audience tokens must name
    /// (default: `http://HOST:PORT/mcp` of `--http`).
    #[arg(long, value_name = "URL", requires = "auth_issuer")]
    pub auth_resource: Option<String>,
    /// With `--auth-issuer`: a scope every token must have (repeatable).
    #[arg(long, value_name = "SCOPE", requires = "auth_issuer")]
    pub auth_scope: Vec<String>,
    /// With `--http`: how many threads serve the clients' connections, each connection staying
    /// on one (default: one per core; 0 serves them on the shared async runtime instead; at
    /// most 1024).
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u16).range(0..=1024))]
    pub threads: Option<u16>,
    /// Telemetry: `--otlp`, `--metrics`, `--audit` (as `duomcp serve`'s): the gateway's
    /// spans, metrics and audit lines, each upstream call a client span.
    #[command(flatten)]
    pub telemetry: crate::telemetry::ServeArgs,
    /// With `--http`: change a limit of the HTTP endpoint, `KEY=VALUE` (repeatable), the keys
    /// of `duomcp serve --http --limit`, e.g. `principal-rate=50`, `max-principals=1000`.
    #[arg(long = "limit", value_name = "KEY=VALUE", requires = "http")]
    pub limits: Vec<String>,
    /// One stdio upstream: the command and its arguments, after `--`.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

impl GatewayArgs {
    fn config(&self) -> Result<GatewayConfig, String> {
        let era = match self.upstream_era.parse::<EraChoice>() {
            Ok(era) => era,
            Err(_) => {
                let other = &self.upstream_era;
                return Err(format!("--upstream-era `{other}`: auto, legacy or modern"));
            }
        };
        let file = match &self.check {
            Some(path) if !path.is_empty() => Some(PathBuf::from(path)),
            _ => self.config.clone(),
        };
        if let Some(path) = file {
            let mut config = GatewayConfig::from_file(&path).map_err(|e| e.to_string())?;
            if let Some(auth) = self.auth()? {
                if config.auth.is_some() {
                    return Err(format!(
                        "{} has an [auth] section: leave out --auth-issuer",
                        path.display()
                    ));
                }
                config.auth = Some(auth);
                config.validate().map_err(|e| e.to_string())?;
            }
            return Ok(config);
        }
        let mut upstream = match (&self.upstream, self.command.split_first()) {
            (Some(url), _) => UpstreamConfig::http("upstream", url.clone()),
            (None, Some((cmd, args))) => {
                UpstreamConfig::stdio("upstream", cmd.clone(), args.to_vec())
            }
            (None, None) => {
                return Err(
                    "give the upstream: --config FILE, --upstream URL, or -- CMD ARGS".into(),
                )
            }
        };
        upstream.era = era;
        upstream.sse_poll_after_ms = self.sse_poll_after_ms;
        let mut config = GatewayConfig::single(upstream);
        config.auth = self.auth()?;
        config.validate().map_err(|e| e.to_string())?;
        Ok(config)
    }

    /// `[auth]` from the `--auth-*` flags, if `--auth-issuer` is given.
    fn auth(&self) -> Result<Option<AuthConfig>, String> {
        let Some(issuer) = &self.auth_issuer else {
            return Ok(None);
        };
        let resource = match (&self.auth_resource, &self.http) {
            (Some(r), _) => r.clone(),
            (None, Some(addr)) if !addr.ends_with(":0") => format!("http://{addr}/mcp"),
            _ => return Err("--auth-issuer: give --auth-resource (the gateway's URL)".into()),
        };
        Ok(Some(AuthConfig {
            resource,
            authorization_servers: vec![issuer.clone()],
            jwks_url: self.auth_jwks_url.clone(),
            required_scopes: self.auth_scope.clone(),
            ..Default::default()
        }))
    }
}

/// Runs `duomcp gateway`.
pub async fn run(args: GatewayArgs) -> ExitCode {
    let config = match args.config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("duomcp gateway: {e}");
            return ExitCode::from(2);
        }
    };
    if args.check.is_some() {
        return check(&config).await;
    }
    // With `--http`, the gateway runs on the threads serving the clients' connections: the
    // upstreams' connections, opened at start, are then served by one of them too, and a call
    // crosses to another thread only when its client's connection is on another one.
    let workers = match (&args.http, args.threads) {
        (None, _) | (Some(_), Some(0)) => return serve(args, config, None).await,
        (Some(_), Some(n)) => Workers::start(usize::from(n)),
        (Some(_), None) => Workers::per_core(),
    };
    let workers = match workers {
        Ok(w) => w,
        Err(e) => {
            eprintln!("duomcp gateway: cannot start the threads serving HTTP: {e}");
            return ExitCode::FAILURE;
        }
    };
    let served = workers
        .handle(0)
        .spawn(serve(args, config, Some(workers.clone())));
    let code = served.await.unwrap_or(ExitCode::FAILURE);
    // The threads stop here, after the upstreams were closed.
    drop(workers);
    code
}

/// Starts the gateway and serves it until a shutdown signal, then closes the upstreams.
async fn serve(args: GatewayArgs, config: GatewayConfig, workers: Option<Workers>) -> ExitCode {
    // SIGHUP (and `--watch`) reload the file, with the `--auth-*` flags applied as at start.
    let reload_from = args
        .config
        .clone()
        .map(|path| (path, args.auth().ok().flatten(), args.watch));
    // Installed before the upstreams are started and anything is served: from here on a
    // SIGINT or SIGTERM stops the gateway in order instead of killing it.
    let stop = duomcp::server::shutdown_signal();
    // Kept to the end: dropping it exports what is pending.
    let (telemetry, _running) = match args.telemetry.start("duomcp-gateway").await {
        Ok(t) => t,
        Err(e) => {
            eprintln!("duomcp gateway: {e}");
            return ExitCode::FAILURE;
        }
    };
    let started = match telemetry {
        #[cfg(feature = "otel")]
        Some(t) => Gateway::start_with_telemetry(config, t).await,
        #[cfg(not(feature = "otel"))]
        Some(never) => match never {},
        None => Gateway::start(config).await,
    };
    let gateway = match started {
        Ok(g) => Arc::new(g),
        Err(e) => {
            eprintln!("duomcp gateway: {e}");
            return ExitCode::FAILURE;
        }
    };
    let reloader = reload_from.map(|(path, auth, watch)| {
        tokio::spawn(reload_when_asked(gateway.clone(), path, auth, watch))
    });
    let served = match &args.http {
        None => gateway
            .server()
            .clone()
            .serve_stdio_with_shutdown(stop)
            .await
            .map_err(|e| e.to_string()),
        Some(addr) => serve_http(gateway.clone(), addr, &args.limits, workers, stop).await,
    };
    if let Some(r) = reloader {
        r.abort();
    }
    for u in gateway.upstreams().iter() {
        if let Ok(c) = u.client().await {
            let _ = c.close().await;
        }
    }
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("duomcp gateway: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve_http(
    gateway: Arc<Gateway>,
    addr: &str,
    limits: &[String],
    workers: Option<Workers>,
    signal: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    use duomcp::transport::http::{serve_with, HttpConfig, ServeOptions};
    let mut config = HttpConfig::default();
    crate::limits::apply(&mut config, limits)?;
    let listener = crate::serve_addr::bind(addr).await?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    eprintln!(
        "duomcp gateway: serving at http://{local}/mcp (2025-11-25 and 2026-07-28; health at /healthz; Ctrl-C stops)"
    );
    if let Some(rs) = gateway.resource_server() {
        eprintln!(
            "duomcp gateway: OAuth: bearer tokens for {} from {} (metadata at {})",
            rs.metadata().resource,
            rs.metadata().authorization_servers.join(", "),
            rs.metadata_url()
        );
    }
    let server = gateway.server().clone();
    let app = duomcp_gateway::http::app(gateway, config);
    let stop = async move {
        signal.await;
        server.shutdown();
    };
    let mut options = ServeOptions::default();
    options.workers = workers;
    serve_with(listener, app, options, stop)
        .await
        .map_err(|e| e.to_string())
}

/// `--check`: one row per upstream.
async fn check(config: &GatewayConfig) -> ExitCode {
    let report = duomcp_gateway::check(config, Duration::from_secs(20)).await;
    let mut table = comfy_table::Table::new();
    table
        .load_preset(comfy_table::presets::NOTHING)
        .set_header(["UPSTREAM", "STATUS", "REVISION", "SERVER", "TOOLS", "ERROR"]);
    for h in &report {
        table.add_row([
            h.name.clone(),
            if h.ok { "ok".into() } else { "DOWN".into() },
            h.protocol_version.clone().unwrap_or_else(|| "-".into()),
            h.server.clone().unwrap_or_else(|| "-".into()),
            h.tools.to_string(),
            super::output::safe(h.error.as_deref().unwrap_or_default()),
        ]);
    }
    println!("{table}");
    // What the gateway would not serve: capped lists, refused names, names two upstreams have.
    for h in &report {
        for line in &h.dropped {
            println!("{}: not served: {}", h.name, super::output::safe(line));
        }
    }
    if report.iter().all(|h| h.ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Reloads the configuration file at `path` on SIGHUP, and with `watch` when its modification
/// time changes (checked every second); says on stderr what changed, or why the file was
/// refused (the configuration in use is then kept).
async fn reload_when_asked(
    gateway: Arc<Gateway>,
    path: PathBuf,
    flag_auth: Option<AuthConfig>,
    watch: bool,
) {
    #[cfg(unix)]
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
    let modified = |p: &PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let mut last = modified(&path);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let signalled = async {
            #[cfg(unix)]
            if let Some(h) = hangup.as_mut() {
                h.recv().await;
                return;
            }
            std::future::pending::<()>().await
        };
        tokio::select! {
            () = signalled => {}
            _ = tick.tick(), if watch => {
                let now = modified(&path);
                if now == last {
                    continue;
                }
                last = now;
            }
        }
        let outcome = match GatewayConfig::from_file(&path) {
            Ok(mut config) => {
                if config.auth.is_none() {
                    config.auth = flag_auth.clone();
                }
                gateway.reload(config).await.map_err(|e| e.to_string())
            }
            Err(e) => Err(e.to_string()),
        };
        match outcome {
            Ok(done) => {
                let mut line = format!(
                    "duomcp gateway: reloaded {}: added {:?}, removed {:?}, changed {:?}",
                    path.display(),
                    done.added,
                    done.removed,
                    done.changed
                );
                if !done.ignored.is_empty() {
                    line.push_str(&format!(
                        "; not reloaded (restart to apply): {}",
                        done.ignored.join(", ")
                    ));
                }
                eprintln!("{line}");
            }
            Err(e) => eprintln!(
                "duomcp gateway: reload of {} refused, the configuration in use is kept: {e}",
                path.display()
            ),
        }
    }
}
