//! The echo benchmark server, written with the public API the way a user would write it:
//! one tool `echo {text: string}` returning `[{type: "text", text}]`, input validation on.
//!
//! ```text
//! duomcp-echo stdio          # both eras on stdin/stdout
//! duomcp-echo http 8080      # both eras on http://127.0.0.1:8080/mcp
//! duomcp-echo http 8080 redis://127.0.0.1:6379/   # a replica sharing its state in Redis
//!                                                  # (built with `--features redis`)
//! ```
//!
//! A replica on Redis prints this process's bus counts to stderr on `SIGUSR1`
//! (`duomcp-echo: bus published N received M`; bench/scale.sh reads them).

use duomcp::server::{Args, Server};

// ANCHOR: tool
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    /// The text to send back.
    text: String,
}

async fn echo(Args(Echo { text }): Args<Echo>) -> String {
    text
}

fn server() -> Server {
    Server::builder()
        .name("duomcp-echo")
        .tool("echo", echo)
        .build()
}
// ANCHOR_END: tool

/// On each `SIGUSR1`, one line on stderr with this process's bus counts.
#[cfg(all(feature = "redis", unix))]
fn report_bus_counts() -> std::io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut usr1 = signal(SignalKind::user_defined1())?;
    tokio::spawn(async move {
        while usr1.recv().await.is_some() {
            let c = duomcp::redis::BusCounts::current();
            eprintln!(
                "duomcp-echo: bus published {} received {}",
                c.published, c.received
            );
        }
    });
    Ok(())
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("duomcp-echo: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match args
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice()
        {
            // ANCHOR: serve
            ["stdio"] => server().serve_stdio().await,
            ["http", port] => {
                let listener = tokio::net::TcpListener::bind((
                    "127.0.0.1",
                    port.parse::<u16>().unwrap_or(8080),
                ))
                .await?;
                duomcp::transport::http::StreamableHttp::new(server())
                    .serve(listener)
                    .await
            }
            // ANCHOR_END: serve
            #[cfg(feature = "redis")]
            ["http", port, redis] => {
                #[cfg(unix)]
                report_bus_counts()?;
                let listener = tokio::net::TcpListener::bind((
                    "127.0.0.1",
                    port.parse::<u16>().unwrap_or(8080),
                ))
                .await?;
                let redis = duomcp::redis::Redis::connect(redis).map_err(std::io::Error::other)?;
                let config = duomcp::transport::http::HttpConfig::default().redis(&redis);
                duomcp::transport::http::StreamableHttp::with_config(server(), config)
                    .serve(listener)
                    .await
            }
            _ => Err(std::io::Error::other(
                "usage: duomcp-echo stdio | duomcp-echo http PORT [REDIS_URL]",
            )),
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("duomcp-echo: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
