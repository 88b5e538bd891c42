//! `duomcp bench`: a load generator for any MCP server, either era, stdio or Streamable HTTP.
//!
//! It calls one tool (`echo` by default) with a payload of N bytes and checks that every
//! response echoes it back. stdio: one spawned process, pipelined with a window of W requests
//! in flight. HTTP: C keep-alive connections, one request in flight on each (HTTP/1.1), or S
//! streams on each (`--http2`). It prints
//! requests/s, latency percentiles, errors, and the server's peak RSS and CPU time when it
//! knows the server's pid.
//!
//! ```text
//! duomcp bench --era modern --window 32 -- duomcp-echo stdio
//! duomcp bench --era legacy --connections 32 --url http://127.0.0.1:8080/mcp --pid 1234
//! duomcp bench --http2 --connections 1 --streams 32 --url http://127.0.0.1:8080/mcp
//! ```

mod http;
mod proc_stats;
mod stats;
mod stdio;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::Args;
use duomcp::era::Era;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

pub use stats::Report;

/// Which wire to speak: an [`Era`]; the name it had is kept so code naming it compiles.
#[doc(hidden)]
pub type BenchEra = Era;

/// `--era`: `legacy` or `modern`, described in `--help` as the `ValueEnum` it was did.
fn era_parser() -> impl TypedValueParser<Value = Era> {
    PossibleValuesParser::new([
        PossibleValue::new("legacy")
            .help("2025-11-25: initialize once (per connection), then calls"),
        PossibleValue::new("modern")
            .help("2026-07-28: `_meta` (and on HTTP the mirrored headers) on every call"),
    ])
    .map(|name| match name.as_str() {
        "legacy" => Era::Legacy,
        _ => Era::Modern,
    })
}

/// Options of `duomcp bench`.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// The era to speak.
    #[arg(long, value_parser = era_parser(), default_value = "modern")]
    pub era: Era,
    /// Streamable HTTP endpoint to load (instead of a server command after `--`).
    #[arg(long)]
    pub url: Option<String>,
    /// HTTP: concurrent keep-alive connections.
    #[arg(long, default_value_t = 32)]
    pub connections: usize,
    /// HTTP: speak HTTP/2 with prior knowledge (h2c) instead of HTTP/1.1.
    #[arg(long)]
    pub http2: bool,
    /// HTTP/2: requests in flight on each connection, one per stream (`--http2
    /// --connections 1 --streams 32` multiplexes 32 streams on one connection).
    #[arg(long, default_value_t = 1, requires = "http2")]
    pub streams: usize,
    /// stdio: requests in flight at once.
    #[arg(long, default_value_t = 32)]
    pub window: usize,
    /// Seconds of measurement (after a short warm-up).
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Seconds of warm-up, not measured.
    #[arg(long, default_value_t = 1.0)]
    pub warmup: f64,
    /// Bytes of text in each request.
    #[arg(long, default_value_t = 64)]
    pub payload: usize,
    /// The tool to call; it must echo `{"text": …}` back as its first text content.
    #[arg(long, default_value = "echo")]
    pub tool: String,
    /// The server's process id (HTTP), to report its peak RSS and CPU time.
    #[arg(long)]
    pub pid: Option<u32>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// A label for the report (e.g. the server's name).
    #[arg(long)]
    pub label: Option<String>,
    /// The server command and its arguments (stdio), after `--`.
    #[arg(last = true, value_name = "SERVER")]
    pub server: Vec<String>,
}

impl BenchArgs {
    fn payload_text(&self) -> String {
        // Printable ASCII, no characters that need escaping in JSON.
        (0..self.payload)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect()
    }

    fn measure(&self) -> Duration {
        Duration::from_secs_f64(self.duration.max(0.1))
    }

    fn warmup(&self) -> Duration {
        Duration::from_secs_f64(self.warmup.max(0.0))
    }
}

/// Runs the benchmark described by `args` and prints its report.
pub async fn run(args: BenchArgs) -> ExitCode {
    let progress = std::io::stderr().is_terminal() && !args.json;
    let result = match (&args.url, args.server.is_empty()) {
        (Some(url), true) => http::run(&args, url, progress).await,
        (None, false) => stdio::run(&args, progress).await,
        _ => Err("give either --url URL or a server command after `--`, not both".to_owned()),
    };
    match result {
        Ok(report) => {
            if args.json {
                match serde_json::to_string_pretty(&report) {
                    Ok(s) => println!("{s}"),
                    Err(e) => eprintln!("duomcp bench: {e}"),
                }
            } else {
                println!("{report}");
            }
            if report.errors > 0 {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("duomcp bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The request's `_meta` in the modern era.
fn modern_meta() -> &'static str {
    r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"duomcp-bench","version":"1"}}"#
}

/// The body of one `tools/call` with request id `id`.
fn call_body(out: &mut Vec<u8>, id: u64, era: Era, tool: &str, text: &str) {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id.to_string().as_bytes());
    out.extend_from_slice(br#","method":"tools/call","params":{"name":"#);
    let _ = serde_json::to_writer(&mut *out, tool);
    out.extend_from_slice(br#","arguments":{"text":"#);
    let _ = serde_json::to_writer(&mut *out, text);
    out.push(b'}');
    if era == Era::Modern {
        out.push(b',');
        out.extend_from_slice(modern_meta().as_bytes());
    }
    out.extend_from_slice(b"}}");
}

#[derive(serde::Deserialize)]
struct Response<'a> {
    id: Option<u64>,
    #[serde(borrow)]
    result: Option<CallResult<'a>>,
}

#[derive(serde::Deserialize)]
struct CallResult<'a> {
    #[serde(borrow, default)]
    content: Vec<Content<'a>>,
    #[serde(rename = "isError", default)]
    is_error: bool,
}

#[derive(serde::Deserialize)]
struct Content<'a> {
    #[serde(borrow, default)]
    text: Option<std::borrow::Cow<'a, str>>,
}

/// Checks one response: returns its id and whether it echoed `text` back.
fn check_response(line: &[u8], text: &str) -> Option<(u64, bool)> {
    let r: Response<'_> = serde_json::from_slice(line).ok()?;
    let id = r.id?;
    let ok = r.result.is_some_and(|c| {
        !c.is_error && c.content.first().and_then(|b| b.text.as_deref()) == Some(text)
    });
    Some((id, ok))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--era` parses as the `ValueEnum` it was did (`legacy`, `modern`, default `modern`),
    /// and the report writes it as before.
    #[test]
    fn the_era_flag_reads_legacy_and_modern() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            args: BenchArgs,
        }
        let era = |flags: &[&str]| {
            let argv = ["bench", "--url", "http://127.0.0.1:1/mcp"];
            Cli::try_parse_from(argv.iter().chain(flags)).map(|c| c.args.era)
        };
        assert_eq!(era(&[]).unwrap(), Era::Modern);
        assert_eq!(era(&["--era", "legacy"]).unwrap(), Era::Legacy);
        assert_eq!(era(&["--era", "modern"]).unwrap(), Era::Modern);
        let err = era(&["--era", "2025-11-25"]).err().unwrap().to_string();
        assert!(err.contains("[possible values: legacy, modern]"), "{err}");
        assert_eq!(serde_json::to_value(Era::Legacy).unwrap(), "legacy");
    }

    #[test]
    fn request_bodies_are_valid_json_and_responses_are_checked() {
        let mut out = Vec::new();
        call_body(&mut out, 7, Era::Modern, "echo", "hi");
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["params"]["arguments"]["text"], "hi");
        assert_eq!(
            v["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        let ok = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}"#;
        assert_eq!(check_response(ok, "hi"), Some((7, true)));
        assert_eq!(check_response(ok, "ho"), Some((7, false)));
        let err = br#"{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"x"}}"#;
        assert_eq!(check_response(err, "hi"), Some((8, false)));
        assert_eq!(check_response(b"garbage", "hi"), None);
    }
}
