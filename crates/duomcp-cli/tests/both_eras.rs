//! One handler that elicits, samples, lists roots, reports progress and logs: unchanged in
//! both eras. In 2025-11-25 the client answers real server→client requests; in 2026-07-28 it
//! answers `InputRequiredResult`s by retrying.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use duomcp::schema::{
    CreateMessageRequestParams, LoggingLevel, SamplingMessage, SamplingMessageContentBlock,
    TextContent,
};
use duomcp::server::{Context, HandlerError, Server, ToolSpec};
use serde_json::{json, Value};
use support::{modern, Wire, LEGACY, MODERN};

async fn everything(ctx: Context) -> Result<String, HandlerError> {
    ctx.progress(1.0, Some(3.0), Some("asking".into())).await;
    ctx.log(LoggingLevel::Info, "asking the user").await;
    let schema = serde_json::from_value(
        json!({ "type": "object", "properties": { "name": { "type": "string" } } }),
    )
    .unwrap();
    let who = ctx
        .elicit(
            "who",
            duomcp::schema::ElicitRequestParams::Form(
                duomcp::schema::ElicitRequestFormParams::new("Name?".to_owned(), schema),
            ),
        )
        .await?;
    ctx.progress(2.0, Some(3.0), None).await;
    let sampled = ctx
        .sample(
            "say",
            CreateMessageRequestParams::new(
                vec![SamplingMessage::new(
                    duomcp::schema::Role::User,
                    SamplingMessageContentBlock::Text(TextContent::new("hi")),
                )],
                10,
            ),
        )
        .await?;
    let roots = ctx.list_roots("roots").await?;
    ctx.progress(3.0, Some(3.0), None).await;
    let name = who
        .content
        .as_ref()
        .and_then(|c| c.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_owned();
    Ok(format!("{name}|{}|{}", sampled.model, roots.roots.len()))
}

fn server() -> Server {
    Server::builder()
        .tool(
            ToolSpec::new("everything").description("uses every context feature"),
            everything,
        )
        .build()
}

const CAPS: fn() -> Value = || json!({ "elicitation": {}, "sampling": {}, "roots": {} });

#[tokio::test]
async fn legacy_answers_server_requests() {
    let mut w = Wire::in_process(server(), LEGACY);
    w.initialize(CAPS()).await;
    w.ok("logging/setLevel", json!({ "level": "info" })).await;
    w.send(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "everything", "_meta": { "progressToken": "t" } } })).await;
    let mut progress = 0;
    let mut logs = 0;
    let result = loop {
        let m = w.recv().await;
        match m["method"].as_str() {
            Some("notifications/progress") => progress += 1,
            Some("notifications/message") => logs += 1,
            Some("elicitation/create") => {
                w.send(json!({ "jsonrpc": "2.0", "id": m["id"], "result": { "action": "accept", "content": { "name": "Ada" } } })).await
            }
            Some("sampling/createMessage") => {
                w.send(json!({ "jsonrpc": "2.0", "id": m["id"], "result": { "role": "assistant", "content": { "type": "text", "text": "yo" }, "model": "m1" } }))
                    .await
            }
            Some("roots/list") => w.send(json!({ "jsonrpc": "2.0", "id": m["id"], "result": { "roots": [{ "uri": "file:///r" }] } })).await,
            Some(other) => panic!("unexpected {other}"),
            None => break m,
        }
    };
    assert_eq!(result["result"]["content"][0]["text"], "Ada|m1|1");
    assert_eq!((progress, logs), (3, 1));
}

#[tokio::test]
async fn modern_retries_with_input_responses() {
    let mut w = Wire::in_process(server(), MODERN);
    let mut call = modern(json!({ "name": "everything" }), CAPS());
    call["_meta"]["io.modelcontextprotocol/logLevel"] = json!("info");
    call["_meta"]["progressToken"] = json!("t");
    let mut answers = json!({});
    let mut state = Value::Null;
    for round in 1..=4 {
        let mut attempt = call.clone();
        if round > 1 {
            attempt["inputResponses"] = answers.clone();
            attempt["requestState"] = state.clone();
        }
        let r = w.ok("tools/call", attempt).await;
        if r["resultType"] == "complete" {
            assert_eq!(r["content"][0]["text"], "Ada|m1|1");
            assert_eq!(round, 4, "one round per sequential input");
            assert!(w
                .side
                .iter()
                .all(|m| m["method"].as_str().unwrap().starts_with("notifications/")));
            return;
        }
        state = r["requestState"].clone();
        let mut this_round = json!({});
        for (key, req) in r["inputRequests"].as_object().unwrap() {
            this_round[key] = match req["method"].as_str().unwrap() {
                "elicitation/create" => json!({ "action": "accept", "content": { "name": "Ada" } }),
                "sampling/createMessage" => {
                    json!({ "role": "assistant", "content": { "type": "text", "text": "yo" }, "model": "m1" })
                }
                "roots/list" => json!({ "roots": [{ "uri": "file:///r" }] }),
                other => panic!("unexpected input request {other}"),
            };
        }
        // Only this round's answers are sent: earlier ones travel in requestState.
        answers = this_round;
    }
    panic!("did not complete in 4 rounds");
}
