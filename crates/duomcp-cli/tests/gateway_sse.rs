//! SSE polling (SEP-1699) through `duomcp gateway`: with `sse_poll_after_ms`, a 2025-11-25
//! client's call that runs longer has its stream closed by the gateway after an event naming
//! where to resume and when; the client's `GET` with `Last-Event-ID` brings the result. Raw
//! HTTP on the wire, so what closes when is seen as a client sees it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp_gateway::{Gateway, GatewayConfig, UpstreamConfig};
use duomcp_testkit::raw_http::{exchange, legacy_session, post_request_with};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BOUND: Duration = Duration::from_secs(90);

async fn gateway(poll_after_ms: Option<u64>) -> SocketAddr {
    let mut upstream = UpstreamConfig::stdio(
        "ref",
        env!("CARGO_BIN_EXE_duomcp"),
        vec!["serve".into(), "--era".into(), "modern".into()],
    );
    upstream.sse_poll_after_ms = poll_after_ms;
    let gw = Arc::new(
        Gateway::start(GatewayConfig::single(upstream))
            .await
            .expect("the gateway starts"),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = duomcp_gateway::http::app(gw, duomcp::transport::http::HttpConfig::default());
    tokio::spawn(duomcp::transport::http::serve(listener, app));
    addr
}

/// Calls `test_reconnection` (the upstream takes ~100 ms) on a 2025-11-25 session; returns
/// the session id and the POST's whole response.
async fn call_slow_tool(addr: SocketAddr) -> (String, String) {
    let sid = tokio::task::spawn_blocking(move || legacy_session(addr, serde_json::json!({}), "t"))
        .await
        .unwrap();
    let body =
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"test_reconnection"}}"#;
    let req = post_request_with(
        addr,
        &[
            ("Mcp-Session-Id", &sid),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        body,
    );
    let res = exchange(addr, &req, Duration::from_secs(30)).await;
    assert_eq!(res.status, 200, "{res:?}");
    (sid, res.body.clone())
}

/// The `id:` of the last SSE event in `body` that has one.
fn last_event_id(body: &str) -> Option<String> {
    body.lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .map(|v| v.trim().to_owned())
        .next_back()
}

#[tokio::test]
async fn a_slow_call_has_its_stream_closed_and_the_result_comes_on_resumption() {
    tokio::time::timeout(BOUND, async {
        let addr = gateway(Some(20)).await;
        let (sid, first) = call_slow_tool(addr).await;
        // The stream ended without the result, after an event with an id and a retry delay.
        assert!(!first.contains("Reconnection test completed"), "{first}");
        assert!(first.contains("retry:"), "{first}");
        let resume_from = last_event_id(&first).unwrap_or_else(|| panic!("no event id: {first}"));

        // Resume: the result arrives on the GET stream.
        let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let get = format!(
            "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\nLast-Event-ID: {resume_from}\r\n\r\n"
        );
        tcp.write_all(get.as_bytes()).await.unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&seen).contains("Reconnection test completed") {
            let n = tokio::time::timeout(Duration::from_secs(20), tcp.read(&mut buf))
                .await
                .unwrap_or_else(|_| {
                    panic!("no result on resumption: {}", String::from_utf8_lossy(&seen))
                })
                .unwrap();
            assert!(n > 0, "closed: {}", String::from_utf8_lossy(&seen));
            seen.extend_from_slice(&buf[..n]);
        }
        let seen = String::from_utf8_lossy(&seen);
        assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
        assert!(seen.contains(r#""id":7"#), "the result of request 7: {seen}");
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn without_the_setting_the_result_comes_on_the_post() {
    tokio::time::timeout(BOUND, async {
        let addr = gateway(None).await;
        let (_, body) = call_slow_tool(addr).await;
        assert!(body.contains("Reconnection test completed"), "{body}");
    })
    .await
    .expect("bounded");
}
