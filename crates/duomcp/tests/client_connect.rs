//! Era detection and the handshake of each era.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod client_support;

use client_support::*;
use duomcp::client::{ClientError, EraChoice};
use duomcp::era::Era;
use duomcp::server::Server;
use duomcp::transport::memory::Side;
use serde_json::json;
use std::time::Duration;

fn server() -> Server {
    Server::builder()
        .name("dual")
        .version("9.9")
        .instructions("Be nice.")
        .tool("hi", || async { "hello" })
        .build()
}

#[tokio::test]
async fn auto_finds_a_modern_server_with_discover() {
    let (client, tap) = connect(&server(), builder()).await;
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(client.protocol_version(), "2026-07-28");
    assert_eq!(
        client.server_info().map(|i| i.name).as_deref(),
        Some("dual")
    );
    assert_eq!(client.instructions().as_deref(), Some("Be nice."));
    assert!(client.server_capabilities().tools.is_some());
    assert_eq!(sent(&tap).count("initialize"), 0);
    let discover = &sent(&tap).requests("server/discover")[0];
    let meta = &discover["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"],
        "test-client"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({})
    );
}

#[tokio::test]
async fn forced_legacy_initializes_the_same_server() {
    let (client, tap) = connect(&server(), builder().era(EraChoice::Legacy)).await;
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.protocol_version(), "2025-11-25");
    assert_eq!(
        client.server_info().map(|i| i.version).as_deref(),
        Some("9.9")
    );
    assert_eq!(client.instructions().as_deref(), Some("Be nice."));
    assert_eq!(sent(&tap).count("server/discover"), 0);
    let init = &sent(&tap).requests("initialize")[0];
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["params"]["clientInfo"]["name"], "test-client");
    assert!(
        init["params"].get("_meta").is_none(),
        "legacy requests carry no era _meta"
    );
    // The legacy server answers a call after the handshake.
    let r = client.call_tool("hi", ()).await.unwrap();
    assert_eq!(
        sent(&tap).notifications("notifications/initialized").len(),
        1
    );
    assert_eq!(r.content[0].as_text(), Some("hello"));
    assert!(sent(&tap).requests("tools/call")[0]["params"]
        .get("_meta")
        .is_none());
}

#[tokio::test]
async fn forced_modern_skips_nothing_and_uses_meta_on_every_request() {
    let (client, tap) = connect(&server(), builder().era(EraChoice::Modern)).await;
    assert_eq!(client.era(), Era::Modern);
    client.call_tool("hi", ()).await.unwrap();
    let call = &sent(&tap).requests("tools/call")[0];
    assert_eq!(
        call["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert!(call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"].is_object());
}

#[tokio::test]
async fn auto_falls_back_to_initialize_on_method_not_found() {
    let (client, tap) = fake(builder(), |msg| match msg["method"].as_str() {
        Some("server/discover") => vec![error(msg, -32601, "Method not found", None)],
        Some("initialize") => vec![initialize_result(msg)],
        _ => vec![],
    })
    .await;
    let client = client.unwrap();
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(client.server_info().unwrap().name, "fake-legacy");
    assert_eq!(sent(&tap).count("server/discover"), 1);
    assert_eq!(sent(&tap).count("initialize"), 1);
}

#[tokio::test]
async fn auto_falls_back_on_any_other_error_code() {
    for code in [-32602, -32600, -32000, 1] {
        let (client, _) = fake(builder(), move |msg| match msg["method"].as_str() {
            Some("server/discover") => vec![error(msg, code, "nope", None)],
            Some("initialize") => vec![initialize_result(msg)],
            _ => vec![],
        })
        .await;
        assert_eq!(client.unwrap().era(), Era::Legacy, "code {code}");
    }
}

#[tokio::test]
async fn auto_falls_back_when_the_probe_gets_no_answer() {
    let (client, tap) = fake(
        builder().probe_timeout(Duration::from_millis(150)),
        |msg| match msg["method"].as_str() {
            Some("initialize") => vec![initialize_result(msg)],
            _ => vec![],
        },
    )
    .await;
    assert_eq!(client.unwrap().era(), Era::Legacy);
    // A pre-initialize legacy server must not be sent anything but initialize after the probe:
    // everything up to the handshake's last message has crossed the tap.
    tap.wait_for(
        Side::Client,
        "notifications/initialized",
        Duration::from_secs(5),
    )
    .await
    .expect("the handshake ended");
    assert!(sent(&tap)
        .notifications("notifications/cancelled")
        .is_empty());
}

#[tokio::test]
async fn unsupported_version_retries_with_a_supported_one_and_stays_modern() {
    let (client, tap) = fake(
        builder().protocol_version("2026-99-99"),
        move |msg| match msg["method"].as_str() {
            Some("server/discover")
                if msg["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
                    != "2026-07-28" =>
            {
                vec![error(
                    msg,
                    -32022,
                    "Unsupported protocol version",
                    Some(json!({ "supported": ["2099-01-01", "2026-07-28"], "requested": "x" })),
                )]
            }
            Some("server/discover") => vec![discover_result(msg)],
            Some("initialize") => panic!("must not fall back to initialize"),
            _ => vec![],
        },
    )
    .await;
    let client = client.unwrap();
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(client.server_info().unwrap().name, "fake-modern");
    let probes = sent(&tap).requests("server/discover");
    assert_eq!(probes.len(), 2);
    assert_ne!(probes[0]["id"], probes[1]["id"]);
    assert_eq!(
        probes[1]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(client.protocol_version(), "2026-07-28");
}

#[tokio::test]
async fn unsupported_version_without_a_common_one_is_an_error_not_a_fallback() {
    let (client, tap) = fake(builder(), |msg| match msg["method"].as_str() {
        Some("server/discover") => {
            vec![error(
                msg,
                -32022,
                "Unsupported protocol version",
                Some(json!({ "supported": ["2099-01-01"], "requested": "2026-07-28" })),
            )]
        }
        Some("initialize") => vec![initialize_result(msg)],
        _ => vec![],
    })
    .await;
    match client {
        Err(ClientError::UnsupportedVersion { supported, .. }) => {
            assert_eq!(supported, vec!["2099-01-01".to_owned()])
        }
        other => panic!("expected UnsupportedVersion, got {other:?}"),
    }
    assert_eq!(sent(&tap).count("initialize"), 0);
}

#[tokio::test]
async fn forced_modern_against_a_legacy_server_fails() {
    let (client, tap) = fake(builder().era(EraChoice::Modern), |msg| {
        match msg["method"].as_str() {
            Some("server/discover") => vec![error(msg, -32601, "Method not found", None)],
            Some("initialize") => vec![initialize_result(msg)],
            _ => vec![],
        }
    })
    .await;
    let err = client.unwrap_err();
    assert_eq!(err.rpc_error().map(|e| e.code), Some(-32601), "{err}");
    assert_eq!(sent(&tap).count("initialize"), 0);
}

#[tokio::test]
async fn a_legacy_server_answering_an_unknown_version_is_rejected() {
    let (client, _) = fake(builder().era(EraChoice::Legacy), |msg| match msg["method"].as_str() {
        Some("initialize") => vec![result(msg, json!({ "protocolVersion": "1999-01-01", "capabilities": {}, "serverInfo": { "name": "old", "version": "0" } }))],
        _ => vec![],
    })
    .await;
    assert!(
        matches!(client, Err(ClientError::UnsupportedVersion { .. })),
        "{client:?}"
    );
}

#[tokio::test]
async fn declared_capabilities_follow_the_registered_handlers() {
    use duomcp::schema::{CreateMessageResult, ElicitResult, Root};
    let b = builder()
        .on_elicit(|_| async { Ok(ElicitResult::decline()) })
        .on_sample(|_| async { Ok(CreateMessageResult::assistant_text("m", "x")) })
        .roots(vec![Root::new("file:///tmp")]);
    let (_, tap) = connect(&server(), b).await;
    let caps = &sent(&tap).requests("server/discover")[0]["params"]["_meta"]
        ["io.modelcontextprotocol/clientCapabilities"];
    assert_eq!(caps["elicitation"], json!({ "form": {}, "url": {} }));
    assert_eq!(caps["sampling"], json!({}));
    assert_eq!(caps["roots"], json!({}));

    let b = builder()
        .era(EraChoice::Legacy)
        .roots(vec![Root::new("file:///tmp")]);
    let (_, tap) = connect(&server(), b).await;
    let caps = &sent(&tap).requests("initialize")[0]["params"]["capabilities"];
    assert_eq!(caps, &json!({ "roots": { "listChanged": true } }));
}
