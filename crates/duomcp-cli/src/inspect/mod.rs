//! `duomcp inspect`: a web inspector for any MCP server, in either revision, served by the
//! `duomcp` binary itself (no Node, nothing fetched from the network).
//!
//! ```text
//! duomcp inspect -- duomcp serve            # a stdio server
//! duomcp inspect http://127.0.0.1:3000/mcp  # a Streamable HTTP server
//! duomcp inspect                            # a connect form
//! ```
//!
//! It prints `http://127.0.0.1:PORT/?token=…`: the page and its JSON API answer only on
//! loopback, only with that token (the first load turns it into a cookie scoped to this
//! port), and only to a `Host` and `Origin` naming 127.0.0.1 or localhost at that port (a
//! page elsewhere cannot reach it through DNS rebinding). The page's files are compiled into
//! the binary (module `page`).
//!
//! The page talks to the server through one connection held here (module `session`): a request
//! relay (`POST /api/rpc`), the server's notifications, progress and input requests as a
//! stream of server-sent events (`GET /api/events`), answers to those requests
//! (`POST /api/input/{id}`), and a bounded trace of every exchange (`GET /api/trace`, JSON
//! Lines at `GET /api/trace.jsonl`). Over HTTP, each trace entry carries the headers of its
//! exchanges (`Authorization` and cookies redacted).
//!
//! OAuth (module `oauth`): a connect to an HTTP URL uses the tokens `duomcp login` stored for
//! it; the page's Authorize runs the library's flow from here (`POST /api/authorize`), the
//! redirect coming back to a loopback port of its own, and stores the tokens the same way.
//!
//! MCP Apps: a tool's `ui://` view renders in the page inside the sandbox proxy of the Apps
//! spec, served by a second loopback listener (another port, so another origin than the page:
//! the view cannot reach into the page), with a token of its own and the same Host/Origin
//! checks (module `guard`). The page connects the view with the App SDK's host bridge
//! (`page/bridge.js`, bundled from `page/bridge.src.js` and checked in).

mod api;
mod guard;
mod oauth;
mod page;
mod session;

use crate::commands::{Failure, Target};
use clap::Args;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;

/// `duomcp inspect [URL | -- SERVER]`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The server's Streamable HTTP URL, or the name of a server in the config file; or give
    /// the command that starts a stdio server after `--`. Without one, the page opens on a
    /// connect form.
    #[arg(value_name = "URL|NAME")]
    pub target_url: Option<String>,
    /// The port to serve the page on, on 127.0.0.1 only (0, the default: a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Open the page in the desktop's browser (`xdg-open`, or `open` on macOS).
    #[arg(long)]
    pub open: bool,
    /// The server to inspect and how to reach it.
    #[command(flatten)]
    pub target: Target,
}

/// Runs `duomcp inspect` until Ctrl-C.
pub async fn run(args: InspectArgs) -> ExitCode {
    match inspect(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            failure.report(false);
            ExitCode::FAILURE
        }
    }
}

async fn inspect(args: InspectArgs) -> Result<(), Failure> {
    let mut target = args.target;
    target.adopt_url(args.target_url);
    target.resolve()?;
    let listener =
        tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, args.port)))
            .await
            .map_err(|e| Failure::new(format!("cannot listen on 127.0.0.1:{}: {e}", args.port)))?;
    let port = listener.local_addr()?.port();
    // The views' origin: another port, on loopback too.
    let sandbox = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .map_err(|e| Failure::new(format!("cannot listen on 127.0.0.1 for the views: {e}")))?;
    let sandbox_port = sandbox.local_addr()?.port();
    let token = guard::new_token()?;
    let sandbox_token = guard::new_token()?;
    let state = Arc::new(session::Inspector::new(
        token.clone(),
        port,
        (sandbox_token, sandbox_port),
        target,
    ));
    if state.has_target() {
        // Connected before the page is offered: a wrong command or URL is said here, at once.
        state.connect_configured().await?;
    }
    let app = api::router(state.clone());
    let views = api::sandbox_router(state.clone());
    let url = format!("http://127.0.0.1:{port}/?token={token}");
    // Not println!: a closed stdout (a script that read the URL and left) must not stop it.
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "duomcp inspect: {url}");
        let _ = writeln!(out, "(serving on 127.0.0.1:{port} only; Ctrl-C stops it)");
        let _ = out.flush();
    }
    if args.open {
        open_browser(&url);
    }
    // Served until the page's server stops (the views have nothing to finish).
    let views = tokio::spawn(async move { axum::serve(sandbox, views).await });
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await;
    views.abort();
    served.map_err(|e| Failure::new(format!("the page server failed: {e}")))?;
    state.close().await;
    Ok(())
}

fn open_browser(url: &str) {
    let program = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    match std::process::Command::new(program)
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(_) => {}
        Err(e) => {
            eprintln!("duomcp inspect: cannot run `{program}` ({e}); open the URL above by hand")
        }
    }
}
