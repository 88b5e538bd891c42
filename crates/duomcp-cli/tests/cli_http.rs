//! The client commands against a Streamable HTTP server: the reference server served in-process
//! on 127.0.0.1:0, its URL given as TARGET.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::transport::http::StreamableHttp;
use serde_json::Value;
use std::process::Output;

const BIN: &str = env!("CARGO_BIN_EXE_duomcp");

async fn serve() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(StreamableHttp::new(duomcp_cli::reference::server()).serve(listener));
    url
}

async fn run(args: &[&str]) -> Output {
    tokio::process::Command::new(BIN)
        .args(args)
        .stdin(std::process::Stdio::null())
        .env("COLUMNS", "120")
        .output()
        .await
        .expect("run duomcp")
}

async fn json(args: &[&str]) -> Value {
    let o = run(args).await;
    assert!(
        o.status.success(),
        "duomcp {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("duomcp {args:?}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_form_of_url_target_reaches_the_server() {
    let url = serve().await;
    let u = url.as_str();
    // Positional, in both eras.
    let tools = json(&["tools", u, "--json"]).await;
    assert!(tools
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "test_simple_text"));
    for era in ["legacy", "modern"] {
        let v = json(&["discover", u, "--era", era, "--json"]).await;
        assert_eq!(v["era"], era);
    }
    // Among key=value pairs, with --url, and after `--`.
    let v = json(&[
        "call",
        "test_custom_header",
        "region=eu-west-1",
        u,
        "--json",
    ])
    .await;
    assert_ne!(v["isError"], true, "{v}");
    let v = json(&["call", "test_simple_text", "--json", "--url", u]).await;
    assert_ne!(v["isError"], true, "{v}");
    let v = json(&["read", "test://static-text", u, "--json"]).await;
    assert!(v["contents"].is_array(), "{v}");
    let v = json(&["prompts", "--json", "--header", "X-Test: 1", "--", u]).await;
    assert!(v.is_array(), "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_doubled_target_is_a_usage_error() {
    let url = serve().await;
    let o = run(&["tools"]).await;
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["tools", "--url", &url, "--", "duomcp", "serve"]).await;
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["tools", &url, "--header", "no colon"]).await;
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("Name: value"));
}
