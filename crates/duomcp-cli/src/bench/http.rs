//! Loading a server over Streamable HTTP: C keep-alive connections, one request in flight each
//! (HTTP/1.1), or S streams in flight on each (HTTP/2 with prior knowledge).

use super::proc_stats::{cpu_seconds, peak_rss_kib};
use super::stats::{Report, Samples};
use super::{call_body, check_response, BenchArgs};
use bytes::Bytes;
use duomcp::era::Era;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Endpoint {
    addr: String,
    host: String,
    path: String,
}

fn parse_url(url: &str) -> Result<Endpoint, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or("only http:// URLs can be benchmarked")?;
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let addr = if host.contains(':') {
        host.to_owned()
    } else {
        format!("{host}:80")
    };
    Ok(Endpoint {
        addr,
        host: host.to_owned(),
        path: path.to_owned(),
    })
}

/// One connection's request sender: HTTP/1.1 (one request at a time) or HTTP/2 (a clone per
/// stream).
enum Sender {
    Http1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    Http2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

async fn connect(ep: &Endpoint, http2: bool) -> Result<Sender, String> {
    let stream = tokio::net::TcpStream::connect(&ep.addr)
        .await
        .map_err(|e| format!("connect {}: {e}", ep.addr))?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let io = TokioIo::new(stream);
    if http2 {
        let (sender, conn) =
            hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), io)
                .await
                .map_err(|e| e.to_string())?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        return Ok(Sender::Http2(sender));
    }
    let (sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(Sender::Http1(sender))
}

fn request(
    ep: &Endpoint,
    era: Era,
    session: Option<&str>,
    method: &str,
    name: Option<&str>,
    body: Vec<u8>,
) -> Result<Request<Full<Bytes>>, String> {
    let mut b = Request::post(&ep.path)
        .header("host", &ep.host)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    match era {
        Era::Modern => {
            b = b
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", method);
            if let Some(name) = name {
                b = b.header("mcp-name", name);
            }
        }
        Era::Legacy => {
            b = b.header("mcp-protocol-version", "2025-11-25");
            if let Some(s) = session {
                b = b.header("mcp-session-id", s);
            }
        }
    }
    b.body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())
}

/// Sends a request and returns the session id header and the JSON-RPC message in the body.
async fn exchange(
    sender: &mut Sender,
    req: Request<Full<Bytes>>,
) -> Result<(Option<String>, Bytes), String> {
    let resp = match sender {
        Sender::Http1(s) => {
            s.ready().await.map_err(|e| e.to_string())?;
            s.send_request(req).await
        }
        Sender::Http2(s) => {
            s.ready().await.map_err(|e| e.to_string())?;
            s.send_request(req).await
        }
    }
    .map_err(|e| e.to_string())?;
    let session = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let sse = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("text/event-stream"));
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    if !sse {
        return Ok((session, body));
    }
    // SSE: the response is the `data:` line that carries an id.
    let found = body
        .split(|b| *b == b'\n')
        .filter_map(|l| l.strip_prefix(b"data:"))
        .map(|d| d.strip_prefix(b" ").unwrap_or(d))
        .find(|d| check_response(d, "").is_some())
        .map(|d| body.slice_ref(d));
    Ok((session, found.unwrap_or_default()))
}

pub(crate) async fn run(args: &BenchArgs, url: &str, progress: bool) -> Result<Report, String> {
    let ep = Arc::new(parse_url(url)?);
    let text: Arc<str> = Arc::from(args.payload_text());
    let connections = args.connections.max(1);
    let streams = if args.http2 { args.streams.max(1) } else { 1 };
    // One sender per worker: an HTTP/2 connection's is shared by its streams.
    let mut workers = Vec::with_capacity(connections * streams);
    for _ in 0..connections {
        match connect(&ep, args.http2).await? {
            Sender::Http2(h) => workers.extend((0..streams).map(|_| Sender::Http2(h.clone()))),
            one => workers.push(one),
        }
    }
    let start = Instant::now();
    let measure_from = start + args.warmup() + Duration::from_millis(200);
    let end = measure_from + args.measure();
    let done = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::with_capacity(connections * streams);
    for (c, mut sender) in workers.into_iter().enumerate() {
        let (ep, text, done, args) = (ep.clone(), text.clone(), done.clone(), args.clone());
        tasks.push(tokio::spawn(async move {
            let mut session = None;
            if args.era == Era::Legacy {
                let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"duomcp-bench","version":"1"}}}"#;
                let (s, _) = exchange(&mut sender, request(&ep, args.era, None, "initialize", None, init.to_vec())?).await?;
                session = Some(s.ok_or("the server sent no Mcp-Session-Id")?);
                let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec();
                exchange(&mut sender, request(&ep, args.era, session.as_deref(), "notifications/initialized", None, note)?).await?;
            }
            let mut samples = Samples::default();
            let mut id = (c as u64) << 40;
            let mut body = Vec::with_capacity(256);
            loop {
                let sent = Instant::now();
                if sent >= end {
                    break;
                }
                id += 1;
                body.clear();
                call_body(&mut body, id, args.era, &args.tool, &text);
                let req = request(&ep, args.era, session.as_deref(), "tools/call", Some(&args.tool), body.clone())?;
                let (_, reply) = exchange(&mut sender, req).await?;
                let received = Instant::now();
                let ok = check_response(&reply, &text).is_some_and(|(rid, ok)| ok && rid == id);
                if sent >= measure_from && received <= end {
                    samples.record(received - sent, ok);
                }
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<Samples, String>(samples)
        }));
    }
    let ticker = progress.then(|| {
        let done = done.clone();
        tokio::spawn(async move {
            let mut last = 0;
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let now = done.load(Ordering::Relaxed);
                eprint!("\r  {:>8} req/s   ", now - last);
                last = now;
            }
        })
    });
    let mut samples = Samples::default();
    for t in tasks {
        match t.await {
            Ok(Ok(s)) => samples.merge(s),
            Ok(Err(e)) => return Err(e),
            Err(e) => return Err(e.to_string()),
        }
    }
    if let Some(t) = ticker {
        t.abort();
        eprintln!();
    }
    let label = args.label.clone().unwrap_or_else(|| url.to_owned());
    let mut report = Report::new(
        label,
        if args.http2 { "http2" } else { "http" },
        args.era,
        connections,
        args.payload,
        samples,
        end - measure_from,
    );
    report.streams = streams;
    if let Some(pid) = args.pid {
        report.server_peak_rss_kib = peak_rss_kib(pid);
        report.server_cpu_s = cpu_seconds(pid);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    #[test]
    fn urls() {
        let e = super::parse_url("http://127.0.0.1:8080/mcp").unwrap();
        assert_eq!(
            (e.addr.as_str(), e.host.as_str(), e.path.as_str()),
            ("127.0.0.1:8080", "127.0.0.1:8080", "/mcp")
        );
        assert!(super::parse_url("https://x/mcp").is_err());
    }
}
