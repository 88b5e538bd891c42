//! The ceilings of the benchmark: what the transport itself allows, with no MCP logic.
//!
//! It answers every `tools/call` line with a canned echo response, found by plain byte
//! scanning (the request's `id` and `arguments.text`), so `duomcp bench` can measure how close
//! a real server gets to the transport's limit — and show that the load generator is not the
//! bottleneck.
//!
//! ```text
//! duomcp-ceiling stdio        # newline-delimited JSON on stdin/stdout
//! duomcp-ceiling http 8080    # bare hyper on http://127.0.0.1:8080/mcp
//! ```

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};

/// Finds `"key":` and returns the raw JSON token after it (a number, or a string's contents).
fn scan<'a>(line: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let at = line.windows(key.len()).position(|w| w == key)? + key.len();
    let rest = &line[at..];
    if let Some(s) = rest.strip_prefix(b"\"") {
        let end = s.iter().position(|b| *b == b'"')?;
        Some(&s[..end])
    } else {
        let end = rest.iter().position(|b| matches!(b, b',' | b'}'))?;
        Some(&rest[..end])
    }
}

/// The canned response to one request line; `None` for notifications.
fn answer(line: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let id = scan(line, br#""id":"#)?;
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id);
    if line.windows(12).any(|w| w == br#""initialize""#) {
        out.extend_from_slice(br#","result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"ceiling","version":"0"}}}"#);
    } else {
        let text = scan(line, br#""text":"#).unwrap_or_default();
        out.extend_from_slice(br#","result":{"content":[{"type":"text","text":""#);
        out.extend_from_slice(text);
        out.extend_from_slice(br#""}],"resultType":"complete"}}"#);
    }
    Some(())
}

type Input = Box<dyn tokio::io::AsyncRead + Unpin + Send>;
type Output = Box<dyn tokio::io::AsyncWrite + Unpin + Send>;

/// stdin and stdout as non-blocking pipes on the reactor when they are pipes (how the bench
/// starts it; the same streams `Server::serve_stdio` uses), else Tokio's blocking-pool stdio.
fn std_streams() -> (Input, Output) {
    #[cfg(unix)]
    {
        use tokio::net::unix::pipe;
        let input: Input = match pipe::OpenOptions::new().open_receiver("/proc/self/fd/0") {
            Ok(rx) => Box::new(rx),
            Err(_) => Box::new(tokio::io::stdin()),
        };
        let output: Output = match pipe::OpenOptions::new().open_sender("/proc/self/fd/1") {
            Ok(tx) => Box::new(tx),
            Err(_) => Box::new(tokio::io::stdout()),
        };
        (input, output)
    }
    #[cfg(not(unix))]
    {
        (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
    }
}

/// As `duomcp::transport::stdio` writes (see there).
const ANSWERS_PER_WRITE: usize = 16;

async fn stdio() -> std::io::Result<()> {
    let (input, output) = std_streams();
    let mut r = BufReader::with_capacity(256 * 1024, input);
    let mut w = BufWriter::with_capacity(256 * 1024, output);
    let mut line = Vec::new();
    let mut out = Vec::new();
    let mut unflushed = 0;
    loop {
        line.clear();
        if r.read_until(b'\n', &mut line).await? == 0 {
            return w.flush().await;
        }
        out.clear();
        if answer(&line, &mut out).is_some() {
            out.push(b'\n');
            w.write_all(&out).await?;
            unflushed += 1;
        }
        // The write policy of duomcp's stdio transport: once input runs out, or every
        // `ANSWERS_PER_WRITE` answers.
        if r.buffer().is_empty() || unflushed >= ANSWERS_PER_WRITE {
            w.flush().await?;
            unflushed = 0;
        }
    }
}

async fn handle(req: Request<hyper::body::Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let mut out = Vec::with_capacity(256);
    let status = if answer(&body, &mut out).is_some() {
        200
    } else {
        202
    };
    let mut resp = Response::new(Full::new(Bytes::from(out)));
    *resp.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or_default();
    resp.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static("application/json"),
    );
    resp.headers_mut().insert(
        "mcp-session-id",
        hyper::header::HeaderValue::from_static("ceiling"),
    );
    Ok(resp)
}

async fn http(port: u16) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        tokio::spawn(async move {
            let service = hyper::service::service_fn(handle);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    else {
        return std::process::ExitCode::FAILURE;
    };
    let result = runtime.block_on(async {
        match args
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice()
        {
            ["stdio"] => stdio().await,
            ["http", port] => http(port.parse().unwrap_or(8080)).await,
            _ => Err(std::io::Error::other(
                "usage: duomcp-ceiling stdio | duomcp-ceiling http PORT",
            )),
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("duomcp-ceiling: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
