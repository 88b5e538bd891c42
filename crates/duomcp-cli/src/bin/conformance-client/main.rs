//! `conformance-client`: the client side of the official MCP conformance suite.
//!
//! The suite starts a mock server for one scenario and runs `conformance-client <server-url>`
//! with the scenario's name in `MCP_CONFORMANCE_SCENARIO`, the protocol version to speak in
//! `MCP_CONFORMANCE_PROTOCOL_VERSION` (a dated legacy version: `initialize`; `2026-07-28`:
//! stateless requests) and, for some scenarios, JSON in `MCP_CONFORMANCE_CONTEXT`. The client
//! does what the scenario asks through the public client API and exits 0, or 1 with the reason
//! on stderr.
//!
//! ```text
//! MCP_CONFORMANCE_SCENARIO=tools_call conformance-client http://localhost:4000/mcp
//! ```
//!
//! Each scenario is one function in [`scenarios`]; the `auth/*` ones are in [`auth`].

mod auth;
mod scenarios;

use std::process::ExitCode;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("DUOMCP_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .init();
    let run = match scenarios::Run::from_env() {
        Ok(run) => run,
        Err(e) => {
            eprintln!("conformance-client: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("conformance-client: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(scenarios::run(&run)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance-client: {}: {e}", run.scenario);
            ExitCode::FAILURE
        }
    }
}
