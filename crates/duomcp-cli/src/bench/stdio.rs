//! Loading a server over stdio: one process, a window of requests in flight.

use super::proc_stats::{cpu_seconds, peak_rss_kib};
use super::stats::{Report, Samples};
use super::{call_body, check_response, BenchArgs};
use duomcp::era::Era;
use std::collections::HashMap;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"duomcp-bench","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

pub(crate) async fn run(args: &BenchArgs, progress: bool) -> Result<Report, String> {
    let text = args.payload_text();
    let window = args.window.max(1);
    let spawned = Instant::now();
    let mut child = tokio::process::Command::new(&args.server[0])
        .args(&args.server[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start `{}`: {e}", args.server[0]))?;
    let pid = child.id();
    let mut w = BufWriter::with_capacity(64 * 1024, child.stdin.take().ok_or("no stdin")?);
    let mut r = BufReader::with_capacity(256 * 1024, child.stdout.take().ok_or("no stdout")?);
    let mut line = Vec::with_capacity(1024);
    let mut body = Vec::with_capacity(256);

    // The first answer: `initialize` (legacy) or a first call (modern) — startup time.
    match args.era {
        Era::Legacy => w.write_all(INITIALIZE.as_bytes()).await,
        Era::Modern => {
            call_body(&mut body, 0, args.era, &args.tool, &text);
            w.write_all(&body).await
        }
    }
    .map_err(|e| e.to_string())?;
    w.write_all(b"\n").await.map_err(|e| e.to_string())?;
    w.flush().await.map_err(|e| e.to_string())?;
    read_line(&mut r, &mut line).await?;
    let startup = spawned.elapsed();
    if args.era == Era::Legacy {
        w.write_all(INITIALIZED.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        w.write_all(b"\n").await.map_err(|e| e.to_string())?;
    }

    let start = Instant::now();
    let measure_from = start + args.warmup();
    let end = measure_from + args.measure();
    let mut sent: HashMap<u64, Instant> = HashMap::with_capacity(window * 2);
    let mut samples = Samples::default();
    let mut next_id = 1u64;
    let mut last_report = Instant::now();
    let mut done_since_report = 0u64;
    loop {
        let now = Instant::now();
        if now < end {
            while sent.len() < window {
                body.clear();
                call_body(&mut body, next_id, args.era, &args.tool, &text);
                body.push(b'\n');
                w.write_all(&body).await.map_err(|e| e.to_string())?;
                sent.insert(next_id, Instant::now());
                next_id += 1;
            }
            w.flush().await.map_err(|e| e.to_string())?;
        } else if sent.is_empty() {
            break;
        }
        read_line(&mut r, &mut line).await?;
        let received = Instant::now();
        let Some((id, ok)) = check_response(&line, &text) else {
            continue; // a notification or something unrelated
        };
        let Some(at) = sent.remove(&id) else { continue };
        if at >= measure_from && received <= end {
            samples.record(received - at, ok);
        }
        done_since_report += 1;
        if progress
            && done_since_report.is_multiple_of(1024)
            && last_report.elapsed() >= Duration::from_secs(1)
        {
            let rate = done_since_report as f64 / last_report.elapsed().as_secs_f64();
            eprint!(
                "\r  {:>8.0} req/s  ({} measured)   ",
                rate,
                samples.latencies_us.len()
            );
            last_report = Instant::now();
            done_since_report = 0;
        }
    }
    if progress {
        eprintln!();
    }
    let label = args.label.clone().unwrap_or_else(|| args.server.join(" "));
    let mut report = Report::new(
        label,
        "stdio",
        args.era,
        window,
        args.payload,
        samples,
        end - measure_from,
    );
    if let Some(pid) = pid {
        report.server_peak_rss_kib = peak_rss_kib(pid);
        report.server_cpu_s = cpu_seconds(pid);
    }
    report.startup_ms = Some(startup.as_secs_f64() * 1e3);
    drop(w);
    if tokio::time::timeout(Duration::from_secs(2), child.wait())
        .await
        .is_err()
    {
        let _ = child.kill().await;
    }
    Ok(report)
}

async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(
    r: &mut R,
    line: &mut Vec<u8>,
) -> Result<(), String> {
    line.clear();
    match r.read_until(b'\n', line).await {
        Ok(0) => Err("the server closed its stdout".to_owned()),
        Ok(_) => Ok(()),
        Err(e) => Err(format!("reading from the server: {e}")),
    }
}
