//! The fixed workload of the instruction-count gate (`bench/icount.sh`, run under
//! `valgrind --tool=callgrind`): one scenario per run, in process, on a single-threaded Tokio
//! runtime, with no randomness or wall-clock time in what is counted.
//!
//! ```text
//! duomcp-icount list                  # the scenarios and their request counts
//! duomcp-icount stdio-modern          # runs one scenario, checks every answer
//! ```
//!
//! Only the work inside `duomcp_icount_counted` is counted (`--collect-atstart=no
//! --toggle-collect=*duomcp_icount_counted*`): building the server, the connection's setup (a
//! 2025-11-25 `initialize` where the scenario needs a session), building the request bytes,
//! checking the answers and the shutdown are not. The client side is raw bytes on an in-memory
//! pipe (`tokio::io::duplex`), so nearly everything counted is the server's own work: the stdio
//! transport ([`Server::serve_connection`]) or the Streamable HTTP endpoint on one HTTP/1.1
//! keep-alive connection ([`StreamableHttp::serve_connection`]), one request at a time.
//!
//! Built with the feature `count-allocs` (`bench/allocs.sh`), it also counts the heap
//! allocations made in that region, with a counting global allocator, and prints them per
//! unit: the gate's build has no such allocator, whose bookkeeping would add to the count.
//!
//! The server is `duomcp-echo`'s (one tool `echo {text}`, input validation on), plus `ask`, a
//! tool that elicits a name: in 2026-07-28 that is a multi-round-trip request (MRTR).

use duomcp::schema::{ElicitRequestFormParams, ElicitRequestParams};
use duomcp::server::{Args, Context, HandlerError, Server, ToolSpec};
use duomcp::transport::http::StreamableHttp;
use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    /// The text to send back.
    text: String,
}

async fn echo(Args(Echo { text }): Args<Echo>) -> String {
    text
}

async fn ask(ctx: Context) -> Result<String, HandlerError> {
    let schema = serde_json::from_value(serde_json::json!({
        "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"]
    }))
    .unwrap_or_default();
    let params = ElicitRequestParams::Form(ElicitRequestFormParams::new("Your name?", schema));
    let answer = ctx.elicit("name", params).await?;
    let name = answer
        .content
        .as_ref()
        .and_then(|c| c.get("name"))
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_owned();
    Ok(format!("Hello, {name}!"))
}

fn server() -> Server {
    let ask_spec = ToolSpec::new("ask")
        .description("Asks for a name")
        .input_schema(serde_json::json!({ "type": "object", "properties": {} }));
    let builder = Server::builder()
        .name("duomcp-echo")
        .tool("echo", echo)
        .tool(ask_spec, ask);
    with_telemetry(builder).build()
}

/// `DUOMCP_ICOUNT_OTEL=1` (by hand, not in the gate): the server gets OpenTelemetry with the
/// SDK's providers and no exporter, to measure what telemetry costs on the hot path.
#[cfg(feature = "otel")]
fn with_telemetry(builder: duomcp::server::ServerBuilder) -> duomcp::server::ServerBuilder {
    static PIPELINE: std::sync::OnceLock<Option<duomcp::otel::Pipeline>> =
        std::sync::OnceLock::new();
    if std::env::var_os("DUOMCP_ICOUNT_OTEL").is_none() {
        return builder;
    }
    match PIPELINE.get_or_init(|| duomcp::otel::Pipeline::builder().build().ok()) {
        Some(p) => builder.telemetry(p.telemetry()),
        None => builder,
    }
}

#[cfg(not(feature = "otel"))]
fn with_telemetry(builder: duomcp::server::ServerBuilder) -> duomcp::server::ServerBuilder {
    builder
}

/// 64 bytes, as in `bench/compare.sh`.
const TEXT: &str = "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl";
const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"icount","version":"1"}}"#;
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"icount","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// The scenarios: name, what one unit is, how many units a run counts.
const SCENARIOS: &[(&str, &str, u64)] = &[
    ("stdio-legacy", "tools/call (2025-11-25, stdio)", 10_000),
    ("stdio-modern", "tools/call (2026-07-28, stdio)", 10_000),
    (
        "http-legacy",
        "tools/call (2025-11-25, HTTP/1.1, one session)",
        1_000,
    ),
    ("http-modern", "tools/call (2026-07-28, HTTP/1.1)", 1_000),
    (
        "mrtr-modern",
        "MRTR round trip: call, input_required, retry, result (2026-07-28, HTTP/1.1)",
        100,
    ),
    (
        "handshake-legacy",
        "session handshake: initialize + notifications/initialized (2025-11-25, HTTP/1.1)",
        100,
    ),
];

type Work<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + 'a>>;

#[cfg(feature = "count-allocs")]
#[global_allocator]
static GLOBAL: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

/// What the counted regions of this run allocated (feature `count-allocs`).
#[cfg(feature = "count-allocs")]
static COUNTED_ALLOCS: std::sync::Mutex<(usize, usize)> = std::sync::Mutex::new((0, 0));

/// Everything counted runs inside this function (callgrind toggles collection on its entry and
/// exit). Not inlined, so that it exists under its name.
#[inline(never)]
fn duomcp_icount_counted(rt: &tokio::runtime::Runtime, work: Work<'_>) -> Result<(), String> {
    #[cfg(feature = "count-allocs")]
    let region = stats_alloc::Region::new(GLOBAL);
    let done = rt.block_on(work);
    #[cfg(feature = "count-allocs")]
    {
        let change = region.change();
        let mut counted = COUNTED_ALLOCS.lock().unwrap_or_else(|p| p.into_inner());
        // A reallocation is an allocation too (it may move the block).
        counted.0 += change.allocations + change.reallocations;
        counted.1 += change.bytes_allocated;
    }
    done
}

fn call(id: u64, modern: bool) -> String {
    let meta = if modern {
        format!(",{META}")
    } else {
        String::new()
    };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{TEXT}"}}{meta}}}}}"#
    )
}

/// Checks one `tools/call` answer: its id and the echoed text.
fn check_echo(answer: &[u8], id: u64) -> Result<(), String> {
    let v: serde_json::Value = serde_json::from_slice(answer).map_err(|e| {
        format!(
            "answer {id} is not JSON ({e}): {}",
            String::from_utf8_lossy(answer)
        )
    })?;
    let text = v["result"]["content"][0]["text"].as_str();
    if v["id"].as_u64() != Some(id) || text != Some(TEXT) {
        return Err(format!("unexpected answer to {id}: {v}"));
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        eprintln!("usage: duomcp-icount list | duomcp-icount SCENARIO");
        return ExitCode::FAILURE;
    };
    if name == "list" {
        for (name, unit, count) in SCENARIOS {
            println!("{name}\t{count}\t{unit}");
        }
        return ExitCode::SUCCESS;
    }
    let Some(&(_, _, count)) = SCENARIOS.iter().find(|(n, _, _)| n == name) else {
        eprintln!("duomcp-icount: unknown scenario {name} (try `duomcp-icount list`)");
        return ExitCode::FAILURE;
    };
    // By hand only (the gate never sets it): fewer units, for a quick comparison.
    let count = std::env::var("DUOMCP_ICOUNT_UNITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(count);
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("duomcp-icount: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match name.as_str() {
        "stdio-legacy" => stdio(&rt, count, false),
        "stdio-modern" => stdio(&rt, count, true),
        "http-legacy" => http_calls(&rt, count, false),
        "http-modern" => http_calls(&rt, count, true),
        "mrtr-modern" => mrtr(&rt, count),
        "handshake-legacy" => handshakes(&rt, count),
        _ => Err(format!("scenario {name} has no runner")),
    };
    match result {
        Ok(()) => {
            println!("{name}: {count} checked");
            #[cfg(feature = "count-allocs")]
            {
                let (allocs, bytes) = *COUNTED_ALLOCS.lock().unwrap_or_else(|p| p.into_inner());
                let units = count.max(1) as f64;
                println!(
                    "{name}: allocations per unit {:.2}, bytes allocated per unit {:.0}",
                    allocs as f64 / units,
                    bytes as f64 / units
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("duomcp-icount {name}: {e}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------------------------
// stdio: newline-delimited JSON-RPC on an in-memory pipe.

fn stdio(rt: &tokio::runtime::Runtime, count: u64, modern: bool) -> Result<(), String> {
    let (client, server_end) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_end);
    let serving = rt.spawn(server().serve_connection(read, write));
    let (mut from_server, mut to_server) = tokio::io::split(client);
    let mut input = Vec::new();
    for id in 1..=count {
        input.extend_from_slice(call(id, modern).as_bytes());
        input.push(b'\n');
    }
    let mut output = Vec::with_capacity(input.len() * 2);
    if !modern {
        rt.block_on(async {
            let hello = format!("{INITIALIZE}\n{INITIALIZED}\n");
            to_server.write_all(hello.as_bytes()).await?;
            read_lines(&mut from_server, &mut output, 1).await
        })
        .map_err(|e| format!("handshake: {e}"))?;
        output.clear();
    }
    duomcp_icount_counted(
        rt,
        Box::pin(async {
            let send = async {
                to_server.write_all(&input).await?;
                to_server.flush().await
            };
            let receive = read_lines(&mut from_server, &mut output, count);
            let (sent, received) = tokio::join!(send, receive);
            sent.and(received).map_err(|e| e.to_string())
        }),
    )?;
    // End of input (a split half's drop does not close the pipe; its shutdown does).
    rt.block_on(async {
        to_server.shutdown().await?;
        serving.await.map_err(std::io::Error::other)?
    })
    .map_err(|e| format!("shutdown: {e}"))?;
    let mut ids = 0;
    for (line, id) in output.split(|b| *b == b'\n').zip(1..=count) {
        check_echo(line, id)?;
        ids += 1;
    }
    if ids != count {
        return Err(format!("{ids} answers, expected {count}"));
    }
    Ok(())
}

/// Reads until `lines` newlines have arrived.
async fn read_lines(
    from: &mut (impl tokio::io::AsyncRead + Unpin),
    into: &mut Vec<u8>,
    lines: u64,
) -> std::io::Result<()> {
    let mut seen = 0;
    let mut buf = [0u8; 16 * 1024];
    while seen < lines {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        seen += buf[..n].iter().filter(|b| **b == b'\n').count() as u64;
        into.extend_from_slice(&buf[..n]);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Streamable HTTP: raw HTTP/1.1 on an in-memory pipe, one request in flight.

/// One keep-alive HTTP/1.1 connection to the endpoint.
struct Conn {
    io: DuplexStream,
    buf: Vec<u8>,
}

/// A response: status, the `mcp-session-id` header, the body.
struct Answer {
    status: u16,
    session: Option<String>,
    body: Vec<u8>,
}

impl Conn {
    fn open(
        rt: &tokio::runtime::Runtime,
        http: &StreamableHttp,
    ) -> (Self, tokio::task::JoinHandle<()>) {
        let (client, server_end) = tokio::io::duplex(64 * 1024);
        let http = http.clone();
        let serving = rt.spawn(async move { http.serve_connection(server_end).await });
        (
            Conn {
                io: client,
                buf: Vec::with_capacity(16 * 1024),
            },
            serving,
        )
    }

    fn request(
        method: &str,
        name: Option<&str>,
        era: &str,
        session: Option<&str>,
        body: &str,
    ) -> Vec<u8> {
        let mut head = String::from(
            "POST /mcp HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n",
        );
        head.push_str(&format!("mcp-protocol-version: {era}\r\n"));
        if era == "2026-07-28" {
            head.push_str(&format!("mcp-method: {method}\r\n"));
            if let Some(name) = name {
                head.push_str(&format!("mcp-name: {name}\r\n"));
            }
        }
        if let Some(s) = session {
            head.push_str(&format!("mcp-session-id: {s}\r\n"));
        }
        head.push_str(&format!("content-length: {}\r\n\r\n{body}", body.len()));
        head.into_bytes()
    }

    /// Sends `request` and reads its response (`content-length` framing only: the scenarios'
    /// answers are all single JSON bodies).
    async fn exchange(&mut self, request: &[u8]) -> Result<Answer, String> {
        self.io
            .write_all(request)
            .await
            .map_err(|e| e.to_string())?;
        self.buf.clear();
        let mut chunk = [0u8; 16 * 1024];
        let (head_end, length) = loop {
            if let Some(end) = find(&self.buf, b"\r\n\r\n") {
                let head = std::str::from_utf8(&self.buf[..end]).map_err(|e| e.to_string())?;
                let length = header(head, "content-length")
                    .and_then(|v| v.parse::<usize>().ok())
                    .ok_or_else(|| format!("no content-length in {head}"))?;
                break (end + 4, length);
            }
            let n = self.io.read(&mut chunk).await.map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("connection closed".into());
            }
            self.buf.extend_from_slice(&chunk[..n]);
        };
        while self.buf.len() < head_end + length {
            let n = self.io.read(&mut chunk).await.map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("connection closed mid-body".into());
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
        let head = std::str::from_utf8(&self.buf[..head_end]).map_err(|e| e.to_string())?;
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or("no status")?;
        Ok(Answer {
            status,
            session: header(head, "mcp-session-id").map(str::to_owned),
            body: self.buf[head_end..head_end + length].to_vec(),
        })
    }
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.split("\r\n").find_map(|line| {
        let (k, v) = line.split_once(':')?;
        k.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// Opens a 2025-11-25 session on `conn`: its id.
async fn handshake(conn: &mut Conn) -> Result<String, String> {
    let init = Conn::request("initialize", None, "2025-11-25", None, INITIALIZE);
    let answer = conn.exchange(&init).await?;
    let session = answer
        .session
        .ok_or_else(|| format!("no session id: {}", String::from_utf8_lossy(&answer.body)))?;
    let note = Conn::request(
        "notifications/initialized",
        None,
        "2025-11-25",
        Some(&session),
        INITIALIZED,
    );
    let answer = conn.exchange(&note).await?;
    if answer.status != 202 {
        return Err(format!(
            "notifications/initialized: status {}",
            answer.status
        ));
    }
    Ok(session)
}

fn http_calls(rt: &tokio::runtime::Runtime, count: u64, modern: bool) -> Result<(), String> {
    let http = StreamableHttp::new(server());
    let (mut conn, serving) = Conn::open(rt, &http);
    let session = if modern {
        None
    } else {
        Some(rt.block_on(handshake(&mut conn))?)
    };
    let era = if modern { "2026-07-28" } else { "2025-11-25" };
    let requests: Vec<Vec<u8>> = (1..=count)
        .map(|id| {
            Conn::request(
                "tools/call",
                Some("echo"),
                era,
                session.as_deref(),
                &call(id, modern),
            )
        })
        .collect();
    let mut answers = Vec::with_capacity(requests.len());
    duomcp_icount_counted(
        rt,
        Box::pin(async {
            for request in &requests {
                answers.push(conn.exchange(request).await?);
            }
            Ok(())
        }),
    )?;
    drop(conn);
    rt.block_on(serving).map_err(|e| e.to_string())?;
    for (answer, id) in answers.iter().zip(1..) {
        if answer.status != 200 {
            return Err(format!("status {} for {id}", answer.status));
        }
        check_echo(&answer.body, id)?;
    }
    Ok(())
}

fn mrtr(rt: &tokio::runtime::Runtime, count: u64) -> Result<(), String> {
    let http = StreamableHttp::new(server());
    let (mut conn, serving) = Conn::open(rt, &http);
    let first: Vec<Vec<u8>> = (1..=count)
        .map(|id| {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"ask",{META}}}}}"#);
            Conn::request("tools/call", Some("ask"), "2026-07-28", None, &body)
        })
        .collect();
    let mut finals = Vec::with_capacity(first.len());
    duomcp_icount_counted(
        rt,
        Box::pin(async {
            for (request, id) in first.iter().zip(1u64..) {
                let asked = conn.exchange(request).await?;
                let state =
                    between(&asked.body, br#""requestState":""#, b"\"").ok_or_else(|| {
                        format!("no requestState: {}", String::from_utf8_lossy(&asked.body))
                    })?;
                let state = std::str::from_utf8(state).map_err(|e| e.to_string())?;
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"ask",{META},"inputResponses":{{"name":{{"action":"accept","content":{{"name":"Ada"}}}}}},"requestState":"{state}"}}}}"#
                );
                let retry = Conn::request("tools/call", Some("ask"), "2026-07-28", None, &body);
                finals.push(conn.exchange(&retry).await?);
            }
            Ok(())
        }),
    )?;
    drop(conn);
    rt.block_on(serving).map_err(|e| e.to_string())?;
    for (answer, id) in finals.iter().zip(1u64..) {
        let v: serde_json::Value =
            serde_json::from_slice(&answer.body).map_err(|e| e.to_string())?;
        if v["id"].as_u64() != Some(id) || v["result"]["content"][0]["text"] != "Hello, Ada!" {
            return Err(format!("unexpected final answer to {id}: {v}"));
        }
    }
    Ok(())
}

/// Where `needle` first occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The bytes between `open` and the next `close` in `hay`.
fn between<'a>(hay: &'a [u8], open: &[u8], close: &[u8]) -> Option<&'a [u8]> {
    let start = find(hay, open)? + open.len();
    let len = find(&hay[start..], close)?;
    Some(&hay[start..start + len])
}

fn handshakes(rt: &tokio::runtime::Runtime, count: u64) -> Result<(), String> {
    let http = StreamableHttp::new(server());
    let (mut conn, serving) = Conn::open(rt, &http);
    let mut sessions = Vec::with_capacity(count as usize);
    duomcp_icount_counted(
        rt,
        Box::pin(async {
            for _ in 0..count {
                sessions.push(handshake(&mut conn).await?);
            }
            Ok(())
        }),
    )?;
    drop(conn);
    rt.block_on(serving).map_err(|e| e.to_string())?;
    let mut distinct = sessions.clone();
    distinct.sort();
    distinct.dedup();
    if distinct.len() != sessions.len() || http.session_count() != sessions.len() {
        return Err(format!(
            "{} sessions, {} distinct, {} alive",
            sessions.len(),
            distinct.len(),
            http.session_count()
        ));
    }
    Ok(())
}
