//! The typed API against an in-process server, in both eras.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod client_support;

use client_support::*;
use duomcp::client::{ClientError, EraChoice, RequestOptions, ServerEvent};
use duomcp::schema::{
    CompleteReference, CompleteRequestParams, CompleteResult, LoggingLevel, PromptMessage,
    PromptReference, Resource, ResourceTemplate,
};
use duomcp::server::{Args, Context, HandlerError, Json, PromptSpec, Server, ServerConfig};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const ERAS: [EraChoice; 2] = [EraChoice::Legacy, EraChoice::Modern];

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sum {
    sum: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Greet {
    name: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Item {
    id: String,
}

fn server() -> Server {
    let mut config = ServerConfig::default();
    config.page_size = 2;
    Server::builder()
        .config(config)
        .tool("add", |Args(Add { a, b }): Args<Add>| async move {
            Json(Sum { sum: a + b })
        })
        .tool("echo", |Args(v): Args<serde_json::Value>| async move {
            v.to_string()
        })
        .tool("fail", || async {
            Err::<String, _>(HandlerError::msg("it broke"))
        })
        .tool("t3", || async { "3" })
        .tool("t4", || async { "4" })
        .tool("logs", |ctx: Context| async move {
            ctx.log(LoggingLevel::Debug, "debug line").await;
            ctx.log(LoggingLevel::Warning, "warning line").await;
            "logged"
        })
        .tool("progress", |ctx: Context| async move {
            for i in 1..=3 {
                ctx.progress(i as f64, Some(3.0), Some(format!("step {i}")))
                    .await;
            }
            "done"
        })
        .prompt(
            PromptSpec::new("greet").argument("name", "Who", true),
            |Args(g): Args<Greet>| async move {
                PromptMessage::user_text(format!("Hello, {}!", g.name))
            },
        )
        .prompt("plain", || async { "plain prompt".to_owned() })
        .resource(Resource::new("test://a", "a"), || async {
            "alpha".to_owned()
        })
        .resource(Resource::new("test://b", "b"), || async {
            "beta".to_owned()
        })
        .resource(Resource::new("test://c", "c"), || async {
            "gamma".to_owned()
        })
        .resource_template(
            ResourceTemplate::new("test://item/{id}", "item"),
            |Args(i): Args<Item>| async move { format!("item {}", i.id) },
        )
        .completion(|p: CompleteRequestParams, _ctx: Context| async move {
            let values = ["fr", "en", "de"]
                .iter()
                .filter(|v| v.starts_with(&p.argument.value))
                .map(|v| v.to_string())
                .collect();
            Ok(CompleteResult::new(values))
        })
        .build()
}

#[tokio::test]
async fn lists_page_by_page_and_all_at_once() {
    for era in ERAS {
        let (client, _) = connect(&server(), builder().era(era)).await;
        let first = client.list_tools(None).await.unwrap();
        assert_eq!(first.tools.len(), 2, "{era:?}");
        let cursor = first.next_cursor.clone().expect("a second page");
        let second = client.list_tools(Some(cursor)).await.unwrap();
        assert_ne!(first.tools[0].name, second.tools[0].name);
        let all: Vec<String> = client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(
            all,
            ["add", "echo", "fail", "logs", "progress", "t3", "t4"],
            "{era:?}"
        );

        let prompts: Vec<String> = client
            .list_all_prompts()
            .await
            .unwrap()
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(prompts, ["greet", "plain"]);
        let resources: Vec<String> = client
            .list_all_resources()
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.uri)
            .collect();
        assert_eq!(resources, ["test://a", "test://b", "test://c"]);
        let templates = client.list_all_resource_templates().await.unwrap();
        assert_eq!(templates[0].uri_template, "test://item/{id}");
    }
}

#[tokio::test]
async fn call_tool_takes_any_serialize_and_returns_the_result() {
    for era in ERAS {
        let (client, _) = connect(&server(), builder().era(era)).await;
        client.list_all_tools().await.unwrap();
        let r = client.call_tool("add", Add2 { a: 2, b: 40 }).await.unwrap();
        assert_eq!(r.structured_content, Some(json!({ "sum": 42 })), "{era:?}");
        assert!(!r.is_error());
        let r = client
            .call_tool("echo", json!({ "x": [1, 2] }))
            .await
            .unwrap();
        assert_eq!(r.content[0].as_text(), Some(r#"{"x":[1,2]}"#));
        let r = client.call_tool("fail", ()).await.unwrap();
        assert!(r.is_error(), "a tool failure is a result, not an Err");
        let err = client.call_tool("nope", ()).await.unwrap_err();
        assert_eq!(err.rpc_error().map(|e| e.code), Some(-32602), "{err}");
        let err = client.call_tool("echo", json!([1, 2])).await.unwrap_err();
        assert!(matches!(err, ClientError::InvalidArguments(_)), "{err}");
    }
}

/// Every extractor sees the arguments, wherever it stands: the last one takes them (no copy),
/// those before it read them first.
#[tokio::test]
async fn argument_extractors_see_the_arguments_in_any_position() {
    let server = Server::builder()
        .tool(
            "twice",
            |Args(a): Args<serde_json::Value>, Args(b): Args<serde_json::Value>| async move {
                json!([a, b]).to_string()
            },
        )
        .tool(
            "value_then_typed",
            |Args(v): Args<serde_json::Value>, Args(g): Args<Greet>| async move {
                format!("{} {}", v["name"], g.name)
            },
        )
        .tool(
            "after_context",
            |_ctx: Context, Args(v): Args<serde_json::Value>| async move { v.to_string() },
        )
        .build();
    for era in ERAS {
        let (client, _) = connect(&server, builder().era(era)).await;
        let args = json!({ "name": "Ada" });
        let text = |r: duomcp::schema::CallToolResult| r.content[0].as_text().map(str::to_owned);
        let r = client.call_tool("twice", &args).await.unwrap();
        assert_eq!(text(r), Some(json!([args, args]).to_string()), "{era:?}");
        let r = client.call_tool("value_then_typed", &args).await.unwrap();
        assert_eq!(text(r).as_deref(), Some(r#""Ada" Ada"#), "{era:?}");
        let r = client.call_tool("after_context", &args).await.unwrap();
        assert_eq!(text(r), Some(args.to_string()), "{era:?}");
    }
}

#[derive(serde::Serialize)]
struct Add2 {
    a: i64,
    b: i64,
}

#[tokio::test]
async fn prompts_resources_and_completion() {
    for era in ERAS {
        let (client, _) = connect(&server(), builder().era(era)).await;
        let p = client
            .get_prompt("greet", json!({ "name": "Ada" }))
            .await
            .unwrap();
        assert_eq!(
            serde_json::to_value(&p.messages[0].content).unwrap()["text"],
            "Hello, Ada!"
        );
        let p = client.get_prompt("plain", ()).await.unwrap();
        assert_eq!(p.messages.len(), 1);
        let err = client.get_prompt("greet", ()).await.unwrap_err();
        assert_eq!(err.rpc_error().map(|e| e.code), Some(-32602));

        let r = client.read_resource("test://b").await.unwrap();
        assert_eq!(
            serde_json::to_value(&r.contents[0]).unwrap()["text"],
            "beta"
        );
        let r = client.read_resource("test://item/42").await.unwrap();
        assert_eq!(
            serde_json::to_value(&r.contents[0]).unwrap()["text"],
            "item 42"
        );
        let err = client.read_resource("test://missing").await.unwrap_err();
        let expected = if era == EraChoice::Legacy {
            -32002
        } else {
            -32602
        };
        assert_eq!(err.rpc_error().map(|e| e.code), Some(expected), "{era:?}");

        let reference = CompleteReference::Prompt(PromptReference {
            name: "greet".into(),
            ..Default::default()
        });
        let c = client
            .complete(CompleteRequestParams::new(reference, "language", "f"))
            .await
            .unwrap();
        assert_eq!(c.completion.values, ["fr"]);
    }
}

#[tokio::test]
async fn ping_works_in_both_eras() {
    for era in ERAS {
        let (client, tap) = connect(&server(), builder().era(era)).await;
        client.ping().await.unwrap();
        let expected = if era == EraChoice::Legacy {
            "ping"
        } else {
            "server/discover"
        };
        assert_eq!(
            sent(&tap).requests(expected).len(),
            if era == EraChoice::Legacy { 1 } else { 2 }
        );
    }
}

#[tokio::test]
async fn log_levels_reach_the_server_and_messages_reach_the_stream() {
    for era in ERAS {
        let (client, tap) = connect(&server(), builder().era(era)).await;
        let mut notes = client.notifications();
        // Without a level, the server sends no log messages.
        client.call_tool("logs", ()).await.unwrap();
        client.set_log_level(LoggingLevel::Warning).await.unwrap();
        client.call_tool("logs", ()).await.unwrap();
        let note = tokio::time::timeout(Duration::from_secs(5), notes.recv())
            .await
            .unwrap()
            .unwrap();
        match note {
            ServerEvent::Log(m) => {
                assert_eq!(m.level, LoggingLevel::Warning);
                assert_eq!(m.data, json!("warning line"));
            }
            other => panic!("expected a log message, got {other:?}"),
        }
        if era == EraChoice::Legacy {
            assert_eq!(
                sent(&tap).requests("logging/setLevel")[0]["params"]["level"],
                "warning"
            );
        } else {
            let calls = sent(&tap).requests("tools/call");
            assert!(calls[0]["params"]["_meta"]
                .get("io.modelcontextprotocol/logLevel")
                .is_none());
            assert_eq!(
                calls[1]["params"]["_meta"]["io.modelcontextprotocol/logLevel"],
                "warning"
            );
        }
    }
}

#[tokio::test]
async fn per_request_log_level_in_the_modern_era() {
    let (client, tap) = connect(&server(), builder().era(EraChoice::Modern)).await;
    let mut notes = client.notifications();
    client
        .call_tool_with(
            "logs",
            (),
            RequestOptions::new().log_level(LoggingLevel::Debug),
        )
        .await
        .unwrap();
    let first = tokio::time::timeout(Duration::from_secs(5), notes.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(first, ServerEvent::Log(ref m) if m.level == LoggingLevel::Debug),
        "{first:?}"
    );
    assert_eq!(
        sent(&tap).requests("tools/call")[0]["params"]["_meta"]["io.modelcontextprotocol/logLevel"],
        "debug"
    );
}

#[tokio::test]
async fn progress_reaches_the_callback_of_its_request() {
    for era in ERAS {
        let (client, tap) = connect(&server(), builder().era(era)).await;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let opts = RequestOptions::new().on_progress(move |p| {
            sink.lock()
                .unwrap()
                .push((p.progress, p.total, p.message.clone()))
        });
        let r = client.call_tool_with("progress", (), opts).await.unwrap();
        assert_eq!(r.content[0].as_text(), Some("done"));
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 3, "{era:?}: {seen:?}");
        assert_eq!(seen[2], (3.0, Some(3.0), Some("step 3".to_owned())));
        let call = &sent(&tap).requests("tools/call")[0];
        assert!(call["params"]["_meta"].get("progressToken").is_some());
    }
}

#[tokio::test]
async fn structured_content_is_checked_against_the_listed_output_schema() {
    // A server that lies about its output: the client catches it once it knows the schema.
    let (client, _) = fake(builder().era(EraChoice::Modern), |msg| match msg["method"].as_str() {
        Some("server/discover") => vec![discover_result(msg)],
        Some("tools/list") => vec![result(
            msg,
            json!({
                "resultType": "complete", "ttlMs": 0, "cacheScope": "public",
                "tools": [{ "name": "count", "inputSchema": { "type": "object" },
                            "outputSchema": { "type": "object", "properties": { "n": { "type": "integer" } }, "required": ["n"] } }]
            }),
        )],
        Some("tools/call") => {
            let structured = match msg["params"]["arguments"]["mode"].as_str() {
                Some("good") => json!({ "n": 3 }),
                _ => json!({ "n": "three" }),
            };
            vec![result(msg, json!({ "resultType": "complete", "content": [], "structuredContent": structured }))]
        }
        _ => vec![],
    })
    .await;
    let client = client.unwrap();
    // Unknown schema: nothing to check against.
    client
        .call_tool("count", json!({ "mode": "bad" }))
        .await
        .unwrap();
    client.list_tools(None).await.unwrap();
    client
        .call_tool("count", json!({ "mode": "good" }))
        .await
        .unwrap();
    let err = client
        .call_tool("count", json!({ "mode": "bad" }))
        .await
        .unwrap_err();
    match err {
        ClientError::InvalidStructuredContent { tool, message } => {
            assert_eq!(tool, "count");
            assert!(message.contains("/n"), "{message}");
        }
        other => panic!("expected InvalidStructuredContent, got {other:?}"),
    }
}

#[tokio::test]
async fn result_types_are_enforced() {
    let (client, _) = fake(builder().era(EraChoice::Modern), |msg| {
        match msg["method"].as_str() {
            Some("server/discover") => vec![discover_result(msg)],
            Some("tools/list") => vec![result(
                msg,
                json!({ "resultType": "input_required", "requestState": "x" }),
            )],
            Some("prompts/list") => vec![result(
                msg,
                json!({ "resultType": "surprise", "prompts": [] }),
            )],
            Some("resources/list") => vec![result(msg, json!({ "resources": [] }))],
            _ => vec![],
        }
    })
    .await;
    let client = client.unwrap();
    let err = client.list_tools(None).await.unwrap_err();
    assert!(
        matches!(err, ClientError::Protocol(_)),
        "input_required is not allowed on tools/list: {err}"
    );
    let err = client.list_prompts(None).await.unwrap_err();
    assert!(matches!(err, ClientError::Protocol(_)), "{err}");
    // An absent resultType counts as complete.
    assert!(client
        .list_resources(None)
        .await
        .unwrap()
        .resources
        .is_empty());
}

#[tokio::test]
async fn the_raw_request_escape_hatch() {
    for era in ERAS {
        let (client, _) = connect(&server(), builder().era(era)).await;
        let v = client
            .request("tools/call", json!({ "name": "t3" }), RequestOptions::new())
            .await
            .unwrap();
        assert_eq!(v["content"][0]["text"], "3");
        let page = client
            .send::<duomcp::schema::methods::ListPrompts>(Default::default())
            .await
            .unwrap();
        assert_eq!(page.prompts.len(), 2);
    }
}
