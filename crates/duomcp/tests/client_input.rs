//! Server-initiated input: elicitation, sampling and roots, answered by the application's
//! handlers: server→client requests in 2025-11-25, the MRTR loop in 2026-07-28.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod client_support;

use client_support::*;
use duomcp::client::{ClientError, EraChoice, InputError};
use duomcp::schema::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestFormParams, ElicitRequestParams,
    ElicitResult, Root, SamplingMessage,
};
use duomcp::server::{Context, HandlerError, Server};
use duomcp::transport::memory::{Connection, MemoryTransport};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const ERAS: [EraChoice; 2] = [EraChoice::Legacy, EraChoice::Modern];

fn form(message: &str, schema: Value) -> ElicitRequestParams {
    ElicitRequestParams::Form(ElicitRequestFormParams::new(
        message,
        serde_json::from_value(schema).unwrap(),
    ))
}

fn text_of(content: &Option<serde_json::Map<String, Value>>, key: &str) -> String {
    content
        .as_ref()
        .and_then(|c| c.get(key))
        .map(|v| {
            v.as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| v.to_string())
        })
        .unwrap_or_default()
}

fn server() -> Server {
    Server::builder()
        .tool("two_rounds", |ctx: Context| async move {
            let name = ctx.elicit("name", form("Name?", json!({ "type": "object", "properties": { "name": { "type": "string" } } }))).await?;
            let color = ctx.elicit("color", form("Color?", json!({ "type": "object", "properties": { "color": { "type": "string" } } }))).await?;
            Ok::<_, HandlerError>(format!("{} likes {}", text_of(&name.content, "name"), text_of(&color.content, "color")))
        })
        .tool("defaults", |ctx: Context| async move {
            let schema = json!({ "type": "object", "properties": {
                "name": { "type": "string", "default": "Ada" },
                "age": { "type": "integer", "default": 36 },
                "subscribed": { "type": "boolean", "default": true },
                "email": { "type": "string" }
            }});
            let r = ctx.elicit("details", form("Details?", schema)).await?;
            Ok::<_, HandlerError>(serde_json::to_string(&r.content).unwrap())
        })
        .tool("sample", |ctx: Context| async move {
            let msg = SamplingMessage::user_text("Capital of France?");
            let mut params = CreateMessageRequestParams::new(vec![msg], 50);
            params.system_prompt = Some("Be brief.".into());
            let r = ctx.sample("q", params).await?;
            let answer = serde_json::to_value(&r.content).unwrap();
            Ok::<_, HandlerError>(format!("{} via {}", answer["text"].as_str().unwrap_or("?"), r.model))
        })
        .tool("roots", |ctx: Context| async move {
            let r = ctx.list_roots("roots").await?;
            Ok::<_, HandlerError>(r.roots.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>().join(","))
        })
        .tool("all_three", |ctx: Context| async move {
            let name = ctx.elicit("name", form("Name?", json!({ "type": "object", "properties": { "name": { "type": "string" } } }))).await;
            let answer = ctx.sample("q", CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hi")], 10)).await;
            let roots = ctx.list_roots("roots").await;
            let (name, _answer, roots) = (name?, answer?, roots?);
            Ok::<_, HandlerError>(format!("{} {}", text_of(&name.content, "name"), roots.roots.len()))
        })
        .build()
}

fn answering_builder(
    era: EraChoice,
    elicited: Arc<Mutex<Vec<String>>>,
) -> duomcp::client::ClientBuilder {
    builder()
        .era(era)
        .on_elicit(move |req| {
            let elicited = elicited.clone();
            async move {
                elicited.lock().unwrap().push(req.message().to_owned());
                let content = match req.message() {
                    "Name?" => json!({ "name": "Ada" }),
                    "Color?" => json!({ "color": "green" }),
                    "Details?" => json!({ "age": 40 }),
                    _ => json!({}),
                };
                Ok(ElicitResult::accept(Some(
                    serde_json::from_value(content).unwrap(),
                )))
            }
        })
        .on_sample(|req: CreateMessageRequestParams| async move {
            let model = if req.system_prompt.as_deref() == Some("Be brief.") {
                "test-model"
            } else {
                "other-model"
            };
            Ok(CreateMessageResult::assistant_text(model, "Paris"))
        })
        .roots(vec![Root::new("file:///a"), Root::new("file:///b")])
}

#[tokio::test]
async fn several_rounds_of_elicitation() {
    for era in ERAS {
        let elicited = Arc::new(Mutex::new(Vec::new()));
        let (client, tap) = connect(&server(), answering_builder(era, elicited.clone())).await;
        let r = client.call_tool("two_rounds", ()).await.unwrap();
        assert_eq!(r.content[0].as_text(), Some("Ada likes green"), "{era:?}");
        assert_eq!(*elicited.lock().unwrap(), ["Name?", "Color?"]);
        let calls = sent(&tap).requests("tools/call");
        if era == EraChoice::Modern {
            // Three attempts: none, name, name + color. Each a new id, the same name.
            assert_eq!(calls.len(), 3);
            let ids: std::collections::HashSet<String> =
                calls.iter().map(|c| c["id"].to_string()).collect();
            assert_eq!(ids.len(), 3, "every retry has a new id");
            assert!(calls[0]["params"].get("inputResponses").is_none());
            assert!(calls[0]["params"].get("requestState").is_none());
            for retry in &calls[1..] {
                assert_eq!(retry["params"]["name"], "two_rounds");
                assert!(retry["params"]["requestState"].is_string());
            }
            assert_eq!(
                calls[1]["params"]["inputResponses"]["name"]["action"],
                "accept"
            );
            assert_eq!(
                calls[2]["params"]["inputResponses"]["color"]["content"]["color"],
                "green"
            );
            assert!(sent(&tap).requests("elicitation/create").is_empty());
        } else {
            assert_eq!(
                calls.len(),
                1,
                "legacy input travels as server→client requests"
            );
        }
    }
}

#[tokio::test]
async fn elicitation_defaults_fill_what_the_user_left_out() {
    for era in ERAS {
        let (client, _) = connect(&server(), answering_builder(era, Arc::default())).await;
        let r = client.call_tool("defaults", ()).await.unwrap();
        let content: Value = serde_json::from_str(r.content[0].as_text().unwrap()).unwrap();
        assert_eq!(
            content,
            json!({ "age": 40, "name": "Ada", "subscribed": true }),
            "{era:?}"
        );
    }
}

#[tokio::test]
async fn sampling_and_roots_in_both_eras() {
    for era in ERAS {
        let (client, _) = connect(&server(), answering_builder(era, Arc::default())).await;
        let r = client.call_tool("sample", ()).await.unwrap();
        assert_eq!(
            r.content[0].as_text(),
            Some("Paris via test-model"),
            "{era:?}"
        );
        let r = client.call_tool("roots", ()).await.unwrap();
        assert_eq!(
            r.content[0].as_text(),
            Some("file:///a,file:///b"),
            "{era:?}"
        );
        let r = client.call_tool("all_three", ()).await.unwrap();
        assert_eq!(r.content[0].as_text(), Some("Ada 2"), "{era:?}");
    }
}

#[tokio::test]
async fn changed_roots_are_announced_in_the_legacy_era() {
    let (client, tap) = connect(
        &server(),
        answering_builder(EraChoice::Legacy, Arc::default()),
    )
    .await;
    client
        .set_roots(vec![Root::new("file:///c")])
        .await
        .unwrap();
    let r = client.call_tool("roots", ()).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("file:///c"));
    assert_eq!(
        sent(&tap)
            .notifications("notifications/roots/list_changed")
            .len(),
        1
    );
}

#[tokio::test]
async fn roots_from_a_handler() {
    for era in ERAS {
        let b = builder()
            .era(era)
            .on_roots(|| async { Ok(vec![Root::new("file:///from-handler")]) });
        let (client, _) = connect(&server(), b).await;
        let r = client.call_tool("roots", ()).await.unwrap();
        assert_eq!(r.content[0].as_text(), Some("file:///from-handler"));
        assert!(matches!(
            client.set_roots(vec![]).await,
            Err(ClientError::Unsupported(_))
        ));
    }
}

#[tokio::test]
async fn a_declining_user_and_a_failing_handler() {
    for era in ERAS {
        let b = builder()
            .era(era)
            .on_elicit(|_| async { Ok(ElicitResult::decline()) });
        let (client, _) = connect(&server(), b).await;
        let r = client.call_tool("defaults", ()).await.unwrap();
        assert_eq!(
            r.content[0].as_text(),
            Some("null"),
            "declining sends no content, and no defaults: {era:?}"
        );

        let b = builder().era(era).on_sample(|_| async {
            Err(InputError::with_code(-1, "User rejected sampling request"))
        });
        let (client, _) = connect(&server(), b).await;
        let outcome = client.call_tool("sample", ()).await;
        match era {
            // The server sees the error response; its tool fails.
            EraChoice::Legacy => assert!(outcome.unwrap().is_error()),
            _ => match outcome.unwrap_err() {
                ClientError::Handler { method, message } => {
                    assert_eq!(method, "sampling/createMessage");
                    assert_eq!(message, "User rejected sampling request");
                }
                other => panic!("{other:?}"),
            },
        }
    }
}

/// A fake 2026-07-28 server that asks for input a number of times, recording every retry.
fn mrtr_fake(
    rounds: usize,
    state: Option<&'static str>,
) -> impl FnMut(&Value) -> Vec<Value> + Send + 'static {
    let mut seen = 0;
    move |msg| match msg["method"].as_str() {
        Some("server/discover") => vec![discover_result(msg)],
        Some("tools/call") if seen < rounds => {
            seen += 1;
            let mut r = json!({
                "resultType": "input_required",
                "inputRequests": { format!("q{seen}"): { "method": "elicitation/create", "params": {
                    "message": format!("round {seen}"),
                    "requestedSchema": { "type": "object", "properties": { "x": { "type": "string" } } }
                }}}
            });
            if let Some(s) = state {
                r["requestState"] = json!(s);
            }
            vec![result(msg, r)]
        }
        Some("tools/call") => vec![result(
            msg,
            json!({ "resultType": "complete", "content": [{ "type": "text", "text": "done" }] }),
        )],
        _ => vec![],
    }
}

fn accepting() -> duomcp::client::ClientBuilder {
    builder().era(EraChoice::Modern).on_elicit(|_| async {
        Ok(ElicitResult::accept(Some(
            serde_json::from_value(json!({ "x": "y" })).unwrap(),
        )))
    })
}

#[tokio::test]
async fn request_state_is_echoed_exactly() {
    // Escapes, non-ASCII, a lookalike of JSON: the client must not touch it.
    const STATE: &str = "opaque\u{e9}\"\\/\n{\"not\":\"json\"}\u{1F600}==";
    let (client, tap) = fake(accepting(), mrtr_fake(2, Some(STATE))).await;
    let r = client
        .unwrap()
        .call_tool("t", json!({ "k": 1 }))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("done"));
    let calls = sent(&tap).requests("tools/call");
    assert_eq!(calls.len(), 3);
    for retry in &calls[1..] {
        assert_eq!(retry["params"]["requestState"].as_str(), Some(STATE));
        assert_eq!(
            retry["params"]["arguments"],
            json!({ "k": 1 }),
            "the original params are resent"
        );
    }
    assert_eq!(
        calls[2]["params"]["inputResponses"],
        json!({ "q2": { "action": "accept", "content": { "x": "y" } } }),
        "responses are per round"
    );
}

#[tokio::test]
async fn no_request_state_is_invented() {
    let (client, tap) = fake(accepting(), mrtr_fake(1, None)).await;
    client.unwrap().call_tool("t", ()).await.unwrap();
    let calls = sent(&tap).requests("tools/call");
    assert_eq!(calls.len(), 2);
    assert!(calls[1]["params"].get("requestState").is_none());
    assert!(calls[1]["params"]["inputResponses"]["q1"].is_object());
}

#[tokio::test]
async fn too_many_rounds_is_an_error() {
    let (client, tap) = fake(accepting().max_input_rounds(3), mrtr_fake(100, Some("s"))).await;
    let err = client.unwrap().call_tool("t", ()).await.unwrap_err();
    assert!(
        matches!(err, ClientError::TooManyInputRounds { rounds: 3, .. }),
        "{err}"
    );
    assert_eq!(
        sent(&tap).count("tools/call"),
        4,
        "the first attempt plus three retries"
    );
}

#[tokio::test]
async fn input_without_a_handler_is_an_error() {
    let (client, _) = fake(builder().era(EraChoice::Modern), mrtr_fake(1, Some("s"))).await;
    let err = client.unwrap().call_tool("t", ()).await.unwrap_err();
    assert!(
        matches!(err, ClientError::NoHandler { ref method } if method == "elicitation/create"),
        "{err}"
    );
}

#[tokio::test]
async fn legacy_server_requests_do_not_block_other_traffic() {
    // The elicitation handler waits until a second call has completed: the reader must keep
    // going while a handler runs.
    let gate = Arc::new(tokio::sync::Notify::new());
    let calls = Arc::new(AtomicUsize::new(0));
    let server = Server::builder()
        .tool("ask", |ctx: Context| async move {
            let r = ctx
                .elicit(
                    "k",
                    form("Name?", json!({ "type": "object", "properties": {} })),
                )
                .await?;
            Ok::<_, HandlerError>(format!("{:?}", r.action))
        })
        .tool("quick", || async { "quick" })
        .build();
    let g = gate.clone();
    let b = builder().era(EraChoice::Legacy).on_elicit(move |_| {
        let g = g.clone();
        async move {
            g.notified().await;
            Ok(ElicitResult::cancel())
        }
    });
    let (client, _) = connect(&server, b).await;
    let slow = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("ask", ()).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let quick = client.call_tool("quick", ()).await.unwrap();
    calls.fetch_add(1, Ordering::SeqCst);
    assert_eq!(quick.content[0].as_text(), Some("quick"));
    gate.notify_one();
    let slow = slow.await.unwrap().unwrap();
    assert_eq!(slow.content[0].as_text(), Some("Cancel"));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn sampling_with_tools_needs_the_tools_capability() {
    use duomcp::schema::{SamplingCapability, Tool, ToolChoice};
    let server = Server::builder()
        .tool("agent", |ctx: Context| async move {
            let mut params =
                CreateMessageRequestParams::new(vec![SamplingMessage::user_text("weather?")], 20);
            params.tools = Some(vec![Tool::new("get_weather", serde_json::Map::new())]);
            params.tool_choice =
                Some(serde_json::from_value::<ToolChoice>(json!({ "mode": "required" })).unwrap());
            let r = ctx.sample("q", params).await?;
            Ok::<_, HandlerError>(r.model)
        })
        .build();
    for era in ERAS {
        // The handler sees the tools and the tool choice.
        let with_tools = SamplingCapability {
            tools: Some(Default::default()),
            ..Default::default()
        };
        let b = builder().era(era).on_sample_with(
            with_tools,
            |req: CreateMessageRequestParams| async move {
                let tools: Vec<String> = req
                    .tools
                    .unwrap_or_default()
                    .into_iter()
                    .map(|t| t.name)
                    .collect();
                let choice = serde_json::to_value(req.tool_choice).unwrap();
                Ok(CreateMessageResult::assistant_text(
                    format!(
                        "{}:{}",
                        tools.join(","),
                        choice["mode"].as_str().unwrap_or("?")
                    ),
                    "ok",
                ))
            },
        );
        let (client, tap) = connect(&server, b).await;
        let r = client.call_tool("agent", ()).await.unwrap();
        assert_eq!(
            r.content[0].as_text(),
            Some("get_weather:required"),
            "{era:?}"
        );
        let declared = if era == EraChoice::Legacy {
            sent(&tap).requests("initialize")[0]["params"]["capabilities"]["sampling"].clone()
        } else {
            sent(&tap).requests("tools/call")[0]["params"]["_meta"]
                ["io.modelcontextprotocol/clientCapabilities"]["sampling"]
                .clone()
        };
        assert_eq!(declared, json!({ "tools": {} }));

        // Without `sampling.tools` the server refuses to send a tool-enabled request.
        let b = builder()
            .era(era)
            .on_sample(|_| async { Ok(CreateMessageResult::assistant_text("m", "x")) });
        let (client, _) = connect(&server, b).await;
        let outcome = client.call_tool("agent", ()).await;
        let refused = match outcome {
            Err(e) => e.rpc_error().is_some(),
            Ok(r) => r.is_error(),
        };
        assert!(refused, "{era:?}");
    }
}

/// The server's requests running in the client are tracked by id (the client's correlation
/// engine): a second request reusing a running id is refused with `-32600`, and
/// `notifications/cancelled` stops the handler of the first, which then sends no answer.
#[tokio::test]
async fn the_servers_requests_are_refused_on_a_reused_id_and_stopped_by_cancellation() {
    struct Dropped(Arc<AtomicUsize>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let (started, dropped, finished) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let (s, d, f) = (started.clone(), dropped.clone(), finished.clone());
    let b = builder().era(EraChoice::Legacy).on_elicit(move |_| {
        let (s, d, f) = (s.clone(), d.clone(), f.clone());
        async move {
            let _guard = Dropped(d);
            s.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            f.fetch_add(1, Ordering::SeqCst);
            Ok(ElicitResult::decline())
        }
    });
    // A scripted server: the handshake, then the two requests with one id; the cancellation
    // and a ping once the first one's handler runs.
    let (client_end, mut server_end) = Connection::memory();
    let answers = Arc::new(Mutex::new(Vec::<Value>::new()));
    let (a, running) = (answers.clone(), started.clone());
    tokio::spawn(async move {
        while let Some(message) = server_end.recv().await {
            let msg: Value = serde_json::from_slice(&message).unwrap();
            match msg["method"].as_str() {
                Some("initialize") => {
                    server_end
                        .send_json(&initialize_result(&msg))
                        .await
                        .unwrap();
                }
                Some("notifications/initialized") => {
                    let elicit = json!({ "jsonrpc": "2.0", "id": "s-0",
                        "method": "elicitation/create", "params": { "message": "Name?",
                        "requestedSchema": { "type": "object", "properties": {} } } });
                    server_end.send_json(&elicit).await.unwrap();
                    server_end.send_json(&elicit).await.unwrap();
                    while running.load(Ordering::SeqCst) == 0 {
                        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    }
                    let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": { "requestId": "s-0", "reason": "no longer needed" } });
                    server_end.send_json(&cancel).await.unwrap();
                    let ping = json!({ "jsonrpc": "2.0", "id": "s-1", "method": "ping" });
                    server_end.send_json(&ping).await.unwrap();
                }
                _ => a.lock().unwrap().push(msg),
            }
        }
    });
    let _client = b
        .connect_transport(MemoryTransport::new(client_end))
        .await
        .unwrap();
    let answers_to = |id: &str| -> Vec<Value> {
        let all = answers.lock().unwrap();
        all.iter()
            .filter(|m| m["id"] == json!(id))
            .cloned()
            .collect()
    };
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while answers_to("s-1").is_empty() || dropped.load(Ordering::SeqCst) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            answers.lock().unwrap()
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(answers_to("s-1")[0]["result"], json!({}));
    // Give a wrongly surviving handler time to answer.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let s0 = answers_to("s-0");
    assert_eq!(s0.len(), 1, "only the refusal answers s-0: {s0:?}");
    assert_eq!(s0[0]["error"]["code"], json!(-32600), "{s0:?}");
    assert!(
        s0[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already in use"),
        "{s0:?}"
    );
    assert_eq!(
        started.load(Ordering::SeqCst),
        1,
        "the reused id ran no handler"
    );
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "the cancelled handler was stopped"
    );
    assert_eq!(finished.load(Ordering::SeqCst), 0);
}
