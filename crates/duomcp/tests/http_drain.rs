//! The readiness probe and the drain before a graceful shutdown (`HttpConfig::readiness_path`,
//! `HttpConfig::drain_delay`, `StreamableHttp::is_ready` / `drain`), on a real listener.
#![cfg(feature = "http-server")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::server::Server;
use duomcp::transport::http::{HttpConfig, StreamableHttp};
use duomcp_testkit::raw_http::{exchange, post_request};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"drain","version":"1"}}}"#;

fn get(addr: SocketAddr, path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").into_bytes()
}

fn server() -> Server {
    Server::builder()
        .tool("hello", || async { "Hello!" })
        .build()
}

#[tokio::test]
async fn the_probe_says_503_during_the_drain_while_mcp_still_serves_then_the_server_stops() {
    let mut config = HttpConfig::default();
    config.readiness_path = Some("/readyz".into());
    config.drain_delay = Duration::from_millis(800);
    let http = StreamableHttp::with_config(server(), config);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(http.clone().serve_with_shutdown(listener, async {
        let _ = stopped.await;
    }));
    let within = Duration::from_secs(5);

    let ready = exchange(addr, &get(addr, "/readyz"), within).await;
    assert_eq!((ready.status, ready.body.as_str()), (200, "ready\n"));
    assert_eq!(ready.header("cache-control").as_deref(), Some("no-store"));
    assert!(http.is_ready());
    // Outside the Host check: a health check names whatever host it likes.
    let foreign = b"GET /readyz HTTP/1.1\r\nHost: lb.internal\r\nConnection: close\r\n\r\n";
    assert_eq!(exchange(addr, foreign, within).await.status, 200);

    let signalled = Instant::now();
    stop.send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!http.is_ready());
    let draining = exchange(addr, &get(addr, "/readyz"), within).await;
    assert_eq!(
        (draining.status, draining.body.as_str()),
        (503, "draining\n")
    );
    // Still accepting and serving the endpoint meanwhile.
    let init = exchange(addr, &post_request(addr, &[], INIT), within).await;
    assert_eq!(init.status, 200, "{}", init.body);

    // Then the usual graceful shutdown: stopped once the drain is over, not before.
    tokio::time::timeout(within, running)
        .await
        .expect("stops after the drain")
        .unwrap()
        .unwrap();
    let took = signalled.elapsed();
    assert!(took >= Duration::from_millis(750), "{took:?}");
    assert!(TcpStream::connect(addr).await.is_err(), "still listening");
}

#[tokio::test]
async fn without_the_settings_there_is_no_probe_and_no_drain() {
    let http = StreamableHttp::new(server());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(http.clone().serve_with_shutdown(listener, async {
        let _ = stopped.await;
    }));
    let within = Duration::from_secs(5);
    assert_eq!(
        exchange(addr, &get(addr, "/readyz"), within).await.status,
        404
    );
    let signalled = Instant::now();
    stop.send(()).unwrap();
    tokio::time::timeout(within, running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(signalled.elapsed() < Duration::from_millis(500));
    assert!(!http.is_ready());
}

#[tokio::test]
async fn shutdown_during_the_drain_ends_it_at_once() {
    let mut config = HttpConfig::default();
    config.drain_delay = Duration::from_secs(30);
    let http = StreamableHttp::with_config(server(), config);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(http.clone().serve_with_shutdown(listener, async {
        let _ = stopped.await;
    }));
    stop.send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!running.is_finished(), "the drain lasts 30 s");
    http.shutdown();
    tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .expect("shutdown() ends the drain")
        .unwrap()
        .unwrap();
}
