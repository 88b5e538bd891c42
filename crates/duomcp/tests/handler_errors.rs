//! The error types a handler may return, as the caller sees them, and `State<T>` checked when
//! the server is built.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::client::Client;
use duomcp::server::{BuildError, HandlerError, Server, State};
use duomcp::transport::memory;
use serde_json::json;

async fn connect(server: Server) -> Client {
    let (client, _tap) = memory::connect_with(Client::builder().name("test"), server)
        .await
        .unwrap();
    client
}

#[derive(Debug, thiserror::Error)]
#[error("the station is offline")]
struct Offline(#[source] std::io::Error);

#[tokio::test]
async fn every_error_type_becomes_an_is_error_result_with_its_causes() {
    let server = Server::builder()
        .tool("anyhow", || async {
            let cause = std::io::Error::other("connection reset");
            Err::<String, _>(anyhow::Error::new(cause).context("fetching the forecast"))
        })
        .tool("string", || async {
            Err::<String, _>(format!("no city {}", 7))
        })
        .tool("str", || async { Err::<String, _>("no city") })
        .tool("boxed", || async {
            Err::<String, Box<dyn std::error::Error + Send + Sync>>("boxed failure".into())
        })
        .tool("std", || async {
            Err::<String, _>(Offline(std::io::Error::other("no route to host")))
        })
        .tool("handler", || async {
            Err::<String, _>(HandlerError::msg("plain"))
        })
        .build();
    let client = connect(server).await;
    for (tool, message) in [
        ("anyhow", "fetching the forecast: connection reset"),
        ("string", "no city 7"),
        ("str", "no city"),
        ("boxed", "boxed failure"),
        ("std", "the station is offline: no route to host"),
        ("handler", "plain"),
    ] {
        let result = client.call_tool(tool, json!({})).await.unwrap();
        assert_eq!(result.is_error, Some(true), "{tool}: {result:?}");
        let text: Vec<&str> = result.content.iter().filter_map(|c| c.as_text()).collect();
        assert_eq!(text, [message], "{tool}");
    }
    client.close().await.unwrap();
}

#[derive(Clone)]
struct Counter;

#[derive(Clone)]
struct Clock;

async fn visits(State(_): State<Counter>) -> String {
    "1".into()
}

async fn both(State(_): State<Counter>, State(_): State<Clock>) -> String {
    "2".into()
}

#[test]
fn state_never_registered_is_refused_when_building() {
    let refused = Server::builder()
        .state(Counter)
        .tool("visits", visits)
        .tool("both", both)
        .try_build()
        .err()
        .expect("Clock was never registered");
    let BuildError::MissingState { missing } = &refused else {
        panic!("{refused:?}");
    };
    assert_eq!(missing.len(), 1, "{missing:?}");
    assert_eq!(missing[0].0, "tool `both`");
    assert!(missing[0].1.ends_with("::Clock"), "{missing:?}");
    let message = refused.to_string();
    assert!(
        message.contains("tool `both` takes `State<") && message.contains("Clock>`"),
        "{message}"
    );
    assert!(message.contains(".state(value)"), "{message}");

    assert!(Server::builder()
        .state(Counter)
        .state(Clock)
        .tool("both", both)
        .try_build()
        .is_ok());
}

#[test]
fn build_panics_with_the_same_message() {
    let panic = std::panic::catch_unwind(|| Server::builder().prompt("visits", visits).build())
        .err()
        .expect("build() refuses a missing state");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        message.starts_with(
            "duomcp: handlers take state that was never registered: prompt `visits` takes `State<"
        ),
        "{message}"
    );
}

#[test]
fn a_handler_registered_again_without_state_needs_none() {
    let server = Server::builder()
        .tool("visits", visits)
        .tool("visits", || async { "no state" })
        .try_build();
    assert!(server.is_ok());
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Loose {
    /// Anything, as far as the schema goes: only serde refuses a bad value.
    #[schemars(with = "serde_json::Value")]
    inner: Strict,
}

#[derive(serde::Deserialize)]
struct Strict {
    n: u8,
    #[serde(default)]
    tags: Vec<String>,
}

async fn loose(duomcp::server::Args(Loose { inner }): duomcp::server::Args<Loose>) -> String {
    format!("{} {}", inner.n, inner.tags.len())
}

#[tokio::test]
async fn arguments_serde_refuses_name_the_member_at_fault() {
    let server = Server::builder().tool("loose", loose).build();
    let client = connect(server).await;
    for (args, message) in [
        (
            json!({"inner": {"n": 300}}),
            "invalid argument `inner.n`: invalid value: integer `300`, expected u8",
        ),
        (
            json!({"inner": {"n": 1, "tags": ["a", 2]}}),
            "invalid argument `inner.tags[1]`: invalid type: integer `2`, expected a string",
        ),
        (
            json!({"inner": {}}),
            "invalid argument `inner`: missing field `n`",
        ),
    ] {
        let result = client.call_tool("loose", args.clone()).await.unwrap();
        assert_eq!(result.is_error, Some(true), "{args}: {result:?}");
        let text: Vec<&str> = result.content.iter().filter_map(|c| c.as_text()).collect();
        assert_eq!(text, [message], "{args}");
    }
    let result = client
        .call_tool("loose", json!({"inner": {"n": 7}}))
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    client.close().await.unwrap();
}
