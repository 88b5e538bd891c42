//! `serve_with` on [`Workers`]: each connection is served on one worker thread for its whole
//! life, connections are spread over the workers, shutdown stays graceful, and an MCP server's
//! handlers run on the workers.
#![cfg(feature = "http-server")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::client::{Client, EraChoice};
use duomcp::server::Server;
use duomcp::transport::http::{serve_with, HttpConfig, ServeOptions, StreamableHttp, Workers};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("timed out")
}

fn thread_name() -> String {
    std::thread::current().name().unwrap_or("").to_owned()
}

/// Serves `app` on `workers`; the sender stops it, the handle ends with `serve_with`.
async fn start(
    app: axum::Router,
    workers: &Workers,
) -> (
    SocketAddr,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut options = ServeOptions::default();
    options.workers = Some(workers.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_with(listener, app, options, async {
        let _ = stopped.await;
    }));
    (addr, stop, server)
}

/// One `GET path` on a keep-alive connection; the response's status and body.
async fn get(conn: &mut BufReader<TcpStream>, path: &str) -> (u16, String) {
    conn.get_mut()
        .write_all(format!("GET {path} HTTP/1.1\r\nhost: test\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut status = 0;
    let mut length = 0;
    loop {
        let mut line = String::new();
        conn.read_line(&mut line).await.unwrap();
        if status == 0 {
            status = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap();
            }
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    conn.read_exact(&mut body).await.unwrap();
    (status, String::from_utf8(body).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_connection_stays_on_one_worker_and_connections_are_spread_over_them() {
    let workers = Workers::start(2).unwrap();
    assert_eq!(workers.threads(), 2);
    let app = axum::Router::new().route("/thread", axum::routing::get(|| async { thread_name() }));
    let (addr, stop, server) = start(app, &workers).await;

    let mut conns = Vec::new();
    let mut per_thread: BTreeMap<String, usize> = BTreeMap::new();
    for _ in 0..4 {
        let mut conn = BufReader::new(TcpStream::connect(addr).await.unwrap());
        let (status, first) = within(get(&mut conn, "/thread")).await;
        assert_eq!(status, 200);
        assert!(first.starts_with("duomcp-http-"), "{first}");
        for _ in 0..5 {
            assert_eq!(within(get(&mut conn, "/thread")).await.1, first);
        }
        *per_thread.entry(first).or_default() += 1;
        conns.push(conn);
    }
    // Each new connection went to the worker with the fewest: two each.
    assert_eq!(
        per_thread,
        BTreeMap::from([("duomcp-http-0".into(), 2), ("duomcp-http-1".into(), 2)])
    );
    assert_eq!(workers.open_connections(), vec![2, 2]);

    drop(conns);
    within(async {
        while workers.open_connections() != vec![0, 0] {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    stop.send(()).unwrap();
    within(server).await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_in_flight_on_a_worker_finishes_after_the_shutdown_signal() {
    let workers = Workers::start(1).unwrap();
    let app = axum::Router::new().route(
        "/slow",
        axum::routing::get(|| async {
            tokio::time::sleep(Duration::from_millis(400)).await;
            format!("done on {}", thread_name())
        }),
    );
    let (addr, stop, server) = start(app, &workers).await;
    let mut conn = BufReader::new(TcpStream::connect(addr).await.unwrap());
    let request = tokio::spawn(async move { get(&mut conn, "/slow").await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.send(()).unwrap();
    let (status, body) = within(request).await.unwrap();
    assert_eq!((status, body.as_str()), (200, "done on duomcp-http-0"));
    within(server).await.unwrap().unwrap();
    // No new connection is taken after the signal.
    assert!(TcpStream::connect(addr).await.is_err());
}

/// A server whose tool `where` answers the name of the thread it runs on.
fn where_server() -> Server {
    Server::builder()
        .tool("where", || async { thread_name() })
        .build()
}

/// Calls `where` at `url` `calls` times from a client of each revision: every call ran on a
/// worker thread.
async fn calls_run_on_the_workers(url: &str, calls: usize) {
    for era in [EraChoice::Modern, EraChoice::Legacy] {
        let client = within(Client::builder().era(era).connect_http(url))
            .await
            .unwrap();
        for _ in 0..calls {
            let result = within(client.call_tool("where", ())).await.unwrap();
            let text = result.content[0].as_text().unwrap_or_default();
            assert!(text.starts_with("duomcp-http-"), "{era:?}: {text}");
        }
        within(client.close()).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_servers_handlers_run_on_the_workers_in_both_revisions() {
    let workers = Workers::start(2).unwrap();
    let app = StreamableHttp::new(where_server()).router();
    let (addr, stop, serving) = start(app, &workers).await;
    calls_run_on_the_workers(&format!("http://{addr}/mcp"), 3).await;
    stop.send(()).unwrap();
    within(serving).await.unwrap().unwrap();
}

#[tokio::test]
async fn the_worker_threads_stop_with_the_last_clone() {
    let workers = Workers::start(2).unwrap();
    let clone = workers.clone();
    let handle = workers.handle(1).clone();
    assert_eq!(
        handle.spawn(async { thread_name() }).await.unwrap(),
        "duomcp-http-1"
    );
    drop(workers);
    // Still running: a clone is left.
    assert!(handle.spawn(async {}).await.is_ok());
    drop(clone);
    // The runtime is gone: what is spawned there never runs.
    assert!(handle.spawn(async {}).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_serve_takes_its_workers_from_the_config() {
    let workers = Workers::start(2).unwrap();
    let mut config = HttpConfig::default();
    config.workers = Some(workers.clone());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(
        StreamableHttp::with_config(where_server(), config).serve_with_shutdown(listener, async {
            let _ = stopped.await;
        }),
    );
    calls_run_on_the_workers(&url, 1).await;
    stop.send(()).unwrap();
    within(serving).await.unwrap().unwrap();
}
