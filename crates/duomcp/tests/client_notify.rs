//! Caching per `ttlMs`, invalidation by notifications, and subscriptions in both eras.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod client_support;

use client_support::*;
use duomcp::client::{EraChoice, ServerEvent};
use duomcp::clock::ManualClock;
use duomcp::schema::{CacheScope, Resource, SubscriptionFilter};
use duomcp::server::{CachePolicy, Server, ServerConfig};
use serde_json::json;
use std::time::Duration;

fn server(page_size: usize) -> Server {
    let mut config = ServerConfig::default();
    config.page_size = page_size;
    config.tools_cache = CachePolicy {
        ttl_ms: 30_000,
        scope: CacheScope::Public,
    };
    config.read_cache = CachePolicy {
        ttl_ms: 30_000,
        scope: CacheScope::Private,
    };
    Server::builder()
        .config(config)
        .tool("a", || async { "a" })
        .tool("b", || async { "b" })
        .resource(Resource::new("test://r", "r"), || async { "r".to_owned() })
        .build()
}

async fn next(sub: &mut duomcp::client::Subscription) -> Option<ServerEvent> {
    tokio::time::timeout(Duration::from_secs(5), sub.next())
        .await
        .expect("a notification in time")
}

#[tokio::test]
async fn a_fresh_list_is_served_from_the_cache_page_by_page() {
    let clock = ManualClock::default();
    let (client, tap) = connect(
        &server(1),
        builder().era(EraChoice::Modern).clock(clock.clone()),
    )
    .await;
    assert_eq!(client.list_all_tools().await.unwrap().len(), 2);
    assert_eq!(sent(&tap).count("tools/list"), 2, "two pages");
    assert_eq!(client.list_all_tools().await.unwrap().len(), 2);
    assert_eq!(sent(&tap).count("tools/list"), 2, "both pages were fresh");
    clock.advance(Duration::from_millis(29_999));
    client.list_tools(None).await.unwrap();
    assert_eq!(sent(&tap).count("tools/list"), 2);
    clock.advance(Duration::from_millis(1));
    client.list_tools(None).await.unwrap();
    assert_eq!(sent(&tap).count("tools/list"), 3, "stale after ttlMs");

    client.read_resource("test://r").await.unwrap();
    client.read_resource("test://r").await.unwrap();
    assert_eq!(
        sent(&tap).count("resources/read"),
        1,
        "private results are cached too, per client"
    );
}

#[tokio::test]
async fn nothing_is_cached_without_ttl_or_when_switched_off() {
    // Legacy results carry no ttlMs.
    let (client, tap) = connect(&server(10), builder().era(EraChoice::Legacy)).await;
    client.list_tools(None).await.unwrap();
    client.list_tools(None).await.unwrap();
    assert_eq!(sent(&tap).count("tools/list"), 2);

    let (client, tap) = connect(&server(10), builder().era(EraChoice::Modern).cache(false)).await;
    client.list_tools(None).await.unwrap();
    client.list_tools(None).await.unwrap();
    assert_eq!(sent(&tap).count("tools/list"), 2);
}

#[tokio::test]
async fn input_required_and_retried_results_are_never_cached() {
    let (client, tap) = fake(
        builder().era(EraChoice::Modern).on_elicit(|_| async { Ok(duomcp::schema::ElicitResult::decline()) }),
        |msg| match msg["method"].as_str() {
            Some("server/discover") => vec![discover_result(msg)],
            Some("resources/read") if msg["params"].get("requestState").is_none() => vec![result(
                msg,
                json!({ "resultType": "input_required", "requestState": "s", "inputRequests": { "k": { "method": "elicitation/create",
                    "params": { "message": "ok?", "requestedSchema": { "type": "object", "properties": {} } } } } }),
            )],
            Some("resources/read") => vec![result(
                msg,
                json!({ "resultType": "complete", "ttlMs": 60000, "cacheScope": "private", "contents": [{ "uri": "x://1", "text": "t" }] }),
            )],
            _ => vec![],
        },
    )
    .await;
    let client = client.unwrap();
    client.read_resource("x://1").await.unwrap();
    client.read_resource("x://1").await.unwrap();
    assert_eq!(
        sent(&tap).count("resources/read"),
        4,
        "two rounds each time"
    );
}

#[tokio::test]
async fn modern_listen_invalidates_and_delivers_tagged_notifications() {
    let server = server(10);
    let (client, tap) = connect(&server, builder().era(EraChoice::Modern)).await;
    client.list_tools(None).await.unwrap();
    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        resource_subscriptions: Some(vec!["test://r".into()]),
        ..Default::default()
    };
    let mut sub = client.listen(filter).await.unwrap();
    let listen = &sent(&tap).requests("subscriptions/listen")[0];
    assert_eq!(
        Some(&serde_json::to_value(sub.id().unwrap()).unwrap()),
        listen.get("id")
    );
    assert_eq!(sub.acknowledged().tools_list_changed, Some(true));
    assert_eq!(
        listen["params"]["notifications"]["resourceSubscriptions"],
        json!(["test://r"])
    );

    client.read_resource("test://r").await.unwrap();
    server.add_tool("c", || async { "c" });
    assert_eq!(next(&mut sub).await, Some(ServerEvent::ToolsListChanged));
    let tools = client.list_tools(None).await.unwrap();
    assert_eq!(tools.tools.len(), 3, "the cached list was dropped");
    assert_eq!(sent(&tap).count("tools/list"), 2);

    server.notify_resource_updated("test://r");
    assert_eq!(
        next(&mut sub).await,
        Some(ServerEvent::ResourceUpdated {
            uri: "test://r".into()
        })
    );
    client.read_resource("test://r").await.unwrap();
    assert_eq!(
        sent(&tap).count("resources/read"),
        2,
        "the cached read was dropped"
    );

    // Dropping the subscription cancels the listen request on the wire.
    let id = listen["id"].clone();
    drop(sub);
    client.ping().await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let cancels = sent(&tap).notifications("notifications/cancelled");
    assert_eq!(cancels.len(), 1);
    assert_eq!(cancels[0]["params"]["requestId"], id);
}

#[tokio::test]
async fn only_notifications_tagged_with_the_subscription_id_arrive() {
    let (client, _) = fake(builder().era(EraChoice::Modern), |msg| match msg["method"].as_str() {
        Some("server/discover") => vec![discover_result(msg)],
        Some("subscriptions/listen") => {
            let id = msg["id"].clone();
            let note = |method: &str, tag: serde_json::Value| json!({ "jsonrpc": "2.0", "method": method, "params": { "_meta": { "io.modelcontextprotocol/subscriptionId": tag } } });
            vec![
                // Another subscription's acknowledgement and notification come first.
                note("notifications/subscriptions/acknowledged", json!(999)),
                json!({ "jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                        "params": { "notifications": { "toolsListChanged": true }, "_meta": { "io.modelcontextprotocol/subscriptionId": id } } }),
                note("notifications/tools/list_changed", json!(999)),
                json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }),
                note("notifications/prompts/list_changed", id.clone()),
                note("notifications/tools/list_changed", id.clone()),
                result(msg, json!({ "resultType": "complete", "_meta": { "io.modelcontextprotocol/subscriptionId": id } })),
            ]
        }
        _ => vec![],
    })
    .await;
    let client = client.unwrap();
    let mut all = client.notifications();
    let mut sub = client
        .listen(SubscriptionFilter {
            tools_list_changed: Some(true),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(sub.acknowledged().tools_list_changed, Some(true));
    // Only the last one: tagged with our id and of a requested type.
    assert_eq!(next(&mut sub).await, Some(ServerEvent::ToolsListChanged));
    assert_eq!(next(&mut sub).await, None);
    assert!(
        sub.ended_gracefully(),
        "the server answered the listen request"
    );
    // The connection-wide stream saw all four change notifications.
    let mut seen = 0;
    while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(100), all.recv()).await {
        seen += 1;
    }
    assert_eq!(seen, 4);
}

#[tokio::test]
async fn a_listen_error_is_returned_not_hung() {
    let (client, _) = fake(builder().era(EraChoice::Modern), |msg| {
        match msg["method"].as_str() {
            Some("server/discover") => vec![discover_result(msg)],
            Some("subscriptions/listen") => vec![error(msg, -32601, "Method not found", None)],
            _ => vec![],
        }
    })
    .await;
    let err = client
        .unwrap()
        .listen(SubscriptionFilter::default())
        .await
        .unwrap_err();
    assert_eq!(err.rpc_error().map(|e| e.code), Some(-32601));
}

#[tokio::test]
async fn legacy_listen_subscribes_and_filters_connection_notifications() {
    let server = server(10);
    let (client, tap) = connect(&server, builder().era(EraChoice::Legacy)).await;
    let mut all = client.notifications();
    let filter = SubscriptionFilter {
        resource_subscriptions: Some(vec!["test://r".into()]),
        ..Default::default()
    };
    let mut sub = client.listen(filter).await.unwrap();
    assert!(sub.id().is_none());
    assert_eq!(
        sent(&tap).requests("resources/subscribe")[0]["params"]["uri"],
        "test://r"
    );
    client.list_tools(None).await.unwrap();

    server.add_tool("c", || async { "c" });
    server.notify_resource_updated("test://r");
    // The tool change reaches the connection stream, not the subscription (not asked for).
    assert_eq!(
        next(&mut sub).await,
        Some(ServerEvent::ResourceUpdated {
            uri: "test://r".into()
        })
    );
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(5), all.recv())
            .await
            .unwrap(),
        Some(ServerEvent::ToolsListChanged)
    );
    assert_eq!(client.list_tools(None).await.unwrap().tools.len(), 3);

    drop(sub);
    tokio::time::sleep(Duration::from_millis(50)).await;
    client.ping().await.unwrap();
    assert_eq!(
        sent(&tap).requests("resources/unsubscribe")[0]["params"]["uri"],
        "test://r"
    );
}
