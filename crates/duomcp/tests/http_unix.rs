//! The Streamable HTTP endpoint on a Unix domain socket, in process: `serve_unix_with_shutdown`
//! (also on `Workers`) and `serve_unix_with` (an axum application) reached by `connect_unix` in
//! both revisions and by raw HTTP; `bind_unix`'s mode and its stale / live / non-socket cases.
#![cfg(all(unix, feature = "http-server", feature = "http-client"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::client::{Client, EraChoice};
use duomcp::server::Server;
use duomcp::transport::http::{
    bind_unix, serve_unix_with, HttpConfig, ServeOptions, StreamableHttp, Workers,
};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("timed out")
}

/// A fresh directory, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let path =
            std::env::temp_dir().join(format!("duomcp-unix-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        Dir(path)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn server() -> Server {
    Server::builder().tool("hi", || async { "hello" }).build()
}

async fn call_in_both_revisions(socket: &Path) {
    for (era, version) in [
        (EraChoice::Legacy, "2025-11-25"),
        (EraChoice::Modern, "2026-07-28"),
    ] {
        let client = within(
            Client::builder()
                .era(era)
                .connect_unix(socket, "http://localhost/mcp"),
        )
        .await
        .unwrap();
        assert_eq!(client.protocol_version(), version);
        let result = within(client.call_tool("hi", ())).await.unwrap();
        assert_eq!(result.content[0].as_text(), Some("hello"));
        let _ = client.close().await;
    }
}

/// `GET path` on a fresh connection with `Host: host`; the raw response.
async fn get(socket: &Path, path: &str, host: &str) -> String {
    let mut stream = tokio::net::UnixStream::connect(socket).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    within(stream.read_to_string(&mut response)).await.unwrap();
    response
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_endpoint_on_a_socket_with_a_host_list_without_localhost_and_on_workers() {
    let dir = Dir::new("endpoint");
    let socket = dir.0.join("mcp.sock");
    let listener = bind_unix(&socket, 0o600).await.unwrap();
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let mut config = HttpConfig::default();
    config.allowed_hosts = Some(vec!["mcp.example.com".into()]);
    config.workers = Some(Workers::start(2).unwrap());
    let http = StreamableHttp::with_config(server(), config);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(http.serve_unix_with_shutdown(listener, async {
        let _ = stopped.await;
    }));
    call_in_both_revisions(&socket).await;
    // `localhost` is accepted on the socket although the list does not name it; a name that
    // is on neither list is not.
    let refused = get(&socket, "/mcp", "evil.example").await;
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    // A second server on the same path is refused while this one listens.
    let err = bind_unix(&socket, 0o600).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    stop.send(()).unwrap();
    within(served).await.unwrap().unwrap();
    // Stopped: the file stays (the caller removes it), and is then a stale socket that the next
    // bind replaces.
    assert!(socket.exists());
    let again = bind_unix(&socket, 0o640).await.unwrap();
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o640);
    drop(again);
    // A regular file is never replaced.
    let file = dir.0.join("file");
    std::fs::write(&file, "x").unwrap();
    let err = bind_unix(&file, 0o600).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_axum_application_on_a_socket() {
    let dir = Dir::new("app");
    let socket = dir.0.join("app.sock");
    let listener = bind_unix(&socket, 0o600).await.unwrap();
    let mcp = StreamableHttp::new(server());
    let app = axum::Router::new()
        .route("/health", axum::routing::get(|| async { "ok" }))
        .merge(mcp.router());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(serve_unix_with(
        listener,
        app,
        ServeOptions::default(),
        async {
            let _ = stopped.await;
        },
    ));
    let health = get(&socket, "/health", "localhost").await;
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    assert!(health.ends_with("ok"), "{health}");
    call_in_both_revisions(&socket).await;
    stop.send(()).unwrap();
    within(served).await.unwrap().unwrap();
}
