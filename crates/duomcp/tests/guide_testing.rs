//! The book's "Testing your server" page (`docs/src/server/testing.md`) includes this file: it
//! tests the guide's server (`examples/guide_server.rs`) the way a user tests their own, with
//! a real client over the in-memory transport, in both revisions. It also proves each handler
//! of the guide's pages works, not only compiles.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

// ANCHOR: setup
// The server under test: the example's `server()`, compiled into this test.
#[allow(dead_code)]
#[path = "../examples/guide_server.rs"]
mod guide_server;

use duomcp::client::{Client, ClientBuilder, EraChoice, RequestOptions, ServerEvent, TaskStart};
use duomcp::schema::{
    CompleteReference, CompleteRequestParams, CreateMessageResult, ElicitResult, LoggingLevel,
    PromptReference, Root, SubscriptionFilter, TaskStatus,
};
use duomcp::transport::memory;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Both revisions: every test runs once with each.
const REVISIONS: [EraChoice; 2] = [EraChoice::Legacy, EraChoice::Modern];

/// A client connected to a fresh server in this process: no port, no child process.
async fn connect(builder: ClientBuilder) -> Client {
    let (transport, _serving) = memory::pair(guide_server::server());
    builder.connect_transport(transport).await.unwrap()
}
// ANCHOR_END: setup

// ANCHOR: tools
#[tokio::test]
async fn tools_take_typed_arguments_and_return_structured_output() {
    for era in REVISIONS {
        let client = connect(Client::builder().era(era)).await;

        let added = client
            .call_tool("add_note", json!({ "text": "buy milk" }))
            .await
            .unwrap();
        assert_eq!(added.content[0].as_text(), Some("note 1 added"), "{era:?}");

        let counts = client
            .call_tool("word_count", json!({ "text": "one two\nthree" }))
            .await
            .unwrap();
        assert_eq!(
            counts.structured_content,
            Some(json!({ "words": 3, "lines": 2 }))
        );

        // Arguments that do not match the schema never reach the handler.
        let wrong = client.call_tool("word_count", json!({ "text": 7 })).await;
        assert!(
            wrong.is_err() || wrong.unwrap().is_error == Some(true),
            "{era:?}"
        );
    }
}
// ANCHOR_END: tools

#[tokio::test]
async fn the_tool_list_carries_descriptions_annotations_and_schemas() {
    for era in REVISIONS {
        let client = connect(Client::builder().era(era)).await;
        let tools = client.list_all_tools().await.unwrap();
        let tool = |name: &str| tools.iter().find(|t| t.name == name).unwrap().clone();

        let count = tool("word_count");
        assert_eq!(
            count.description.as_deref(),
            Some("Counts the words and lines of a text.")
        );
        let schema = serde_json::to_value(&count.input_schema).unwrap();
        assert_eq!(
            schema["properties"]["text"]["description"],
            "The text to count the words of."
        );
        let output = serde_json::to_value(&count.output_schema).unwrap();
        assert_eq!(
            output["properties"]["words"]["description"],
            "Words, split on whitespace."
        );
        let annotations = count.annotations.unwrap();
        assert_eq!(annotations.read_only_hint, Some(true));
        assert_eq!(
            tool("delete_note").annotations.unwrap().destructive_hint,
            Some(true)
        );
        assert_eq!(
            tool("shout").description.as_deref(),
            Some("Repeats `text` in capitals")
        );
        assert_eq!(tools.len(), 10, "{era:?}");
    }
}

// ANCHOR: errors
#[tokio::test]
async fn a_tool_error_is_a_result_and_a_bad_call_is_a_protocol_error() {
    for era in REVISIONS {
        let client = connect(Client::builder().era(era)).await;

        // `anyhow::Result` from the handler: `isError: true`, the message for the model.
        let quote = client.call_tool("fetch_quote", json!({})).await.unwrap();
        assert_eq!(quote.is_error, Some(true));
        let text = quote.content[0].as_text().unwrap();
        assert!(text.starts_with("no quote service configured"), "{text}");

        // `HandlerError::invalid_params`: the call itself fails, with JSON-RPC code -32602.
        let missing = client
            .call_tool("open_note", json!({ "id": 42 }))
            .await
            .unwrap_err();
        assert_eq!(missing.rpc_error().map(|e| e.code), Some(-32602), "{era:?}");
    }
}
// ANCHOR_END: errors

#[tokio::test]
async fn resources_and_templates_read_the_notebook() {
    for era in REVISIONS {
        let client = connect(Client::builder().era(era)).await;
        for text in ["first\nsecond line", "another"] {
            client
                .call_tool("add_note", json!({ "text": text }))
                .await
                .unwrap();
        }
        let index = client.read_resource("notes://index").await.unwrap();
        let index = serde_json::to_value(&index.contents[0]).unwrap();
        assert_eq!(index["text"], "1: first\n2: another");
        assert_eq!(index["mimeType"], "text/plain");

        let note = client.read_resource("notes://note/2").await.unwrap();
        assert_eq!(
            serde_json::to_value(&note.contents[0]).unwrap()["text"],
            "another"
        );

        let templates = client.list_all_resource_templates().await.unwrap();
        assert_eq!(templates[0].uri_template, "notes://note/{id}");

        let missing = client.read_resource("notes://note/9").await.unwrap_err();
        let code = missing.rpc_error().map(|e| e.code);
        assert!(
            matches!(code, Some(-32002) | Some(-32602)),
            "{era:?}: {code:?}"
        );
    }
}

// ANCHOR: subscribe
#[tokio::test]
async fn a_subscriber_hears_that_the_index_changed() {
    for era in REVISIONS {
        let client = connect(Client::builder().era(era)).await;
        let mut updates = client
            .listen(SubscriptionFilter {
                resource_subscriptions: Some(vec!["notes://index".into()]),
                ..Default::default()
            })
            .await
            .unwrap();
        client
            .call_tool("add_note", json!({ "text": "hi" }))
            .await
            .unwrap();
        let heard = tokio::time::timeout(Duration::from_secs(5), updates.next()).await;
        assert_eq!(
            heard.unwrap(),
            Some(ServerEvent::ResourceUpdated {
                uri: "notes://index".into()
            }),
            "{era:?}"
        );
    }
}
// ANCHOR_END: subscribe

#[tokio::test]
async fn the_prompt_and_the_completion_of_note_ids() {
    for era in REVISIONS {
        let client = connect(Client::builder().era(era)).await;
        for n in 1..=12 {
            client
                .call_tool("add_note", json!({ "text": format!("note {n}") }))
                .await
                .unwrap();
        }
        let prompt = client
            .get_prompt("summarize", json!({ "id": "3", "words": "5" }))
            .await
            .unwrap();
        let message = serde_json::to_value(&prompt.messages[0]).unwrap();
        assert_eq!(message["role"], "user");
        assert_eq!(
            message["content"]["text"],
            "Summarize this note in 5 words at most:\n\nnote 3"
        );

        let reference = CompleteReference::Prompt(PromptReference {
            name: "summarize".into(),
            ..Default::default()
        });
        let ids = client
            .complete(CompleteRequestParams::new(reference, "id", "1"))
            .await
            .unwrap();
        assert_eq!(ids.completion.values, ["1", "10", "11", "12"], "{era:?}");
    }
}

// ANCHOR: progress
#[tokio::test]
async fn reindex_logs_and_reports_progress() {
    for era in REVISIONS {
        let client = connect(Client::builder().era(era).log_level(LoggingLevel::Info)).await;
        let mut notifications = client.notifications();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let progress = seen.clone();
        let options = RequestOptions::new()
            .on_progress(move |p| progress.lock().unwrap().push((p.progress, p.total)));
        let done = client
            .call_tool_with("reindex", json!({ "passes": 3 }), options)
            .await
            .unwrap();
        assert_eq!(done.content[0].as_text(), Some("reindexed in 3 passes"));
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))],
            "{era:?}"
        );

        let log = loop {
            match notifications.try_recv() {
                Some(ServerEvent::Log(log)) => break log,
                Some(_) => continue,
                None => panic!("{era:?}: no log message"),
            }
        };
        assert_eq!(log.data, json!("reindexing in 3 passes"));
    }
}
// ANCHOR_END: progress

// ANCHOR: tasks
#[tokio::test]
async fn backup_runs_as_a_task_and_stops_when_cancelled() {
    for era in REVISIONS {
        let client = connect(Client::builder().era(era)).await;
        for n in 1..=3 {
            client
                .call_tool("add_note", json!({ "text": format!("note {n}") }))
                .await
                .unwrap();
        }
        // `call_tool` would wait for the task and return its result; `start_tool_task`
        // returns the task at once.
        let started = client
            .start_tool_task(
                "backup",
                json!({ "per_second": 100 }),
                RequestOptions::new(),
            )
            .await
            .unwrap();
        let TaskStart::Task(task) = started else {
            panic!("{era:?}: a long-running tool runs as a task when asked")
        };
        let result = task.result().await.unwrap();
        assert_eq!(result.content[0].as_text(), Some("backed up 3 notes"));
        assert_eq!(task.get().await.unwrap().status, TaskStatus::Completed);

        let slow = client
            .start_tool_task("backup", json!({ "per_second": 1 }), RequestOptions::new())
            .await
            .unwrap();
        let TaskStart::Task(slow) = slow else {
            panic!("{era:?}: not a task")
        };
        slow.cancel().await.unwrap();
        let status = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                let status = slow.get().await.unwrap().status;
                if status != TaskStatus::Working {
                    break status;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .unwrap();
        assert_eq!(status, TaskStatus::Cancelled, "{era:?}");
    }
}
// ANCHOR_END: tasks

// ANCHOR: input
#[tokio::test]
async fn elicitation_sampling_and_roots_are_answered_by_the_client() {
    for era in REVISIONS {
        let builder = Client::builder()
            .era(era)
            // The user types the id again: the form's answer.
            .on_elicit(|_question| async {
                let answer = json!({ "confirm": "1" });
                Ok(ElicitResult::accept(Some(
                    serde_json::from_value(answer).unwrap(),
                )))
            })
            // The host's model: a canned reply.
            .on_sample(|_request| async {
                Ok(CreateMessageResult::assistant_text(
                    "test-model",
                    "Milk to buy",
                ))
            })
            .roots(vec![Root::new("file:///home/ada/notes")]);
        let client = connect(builder).await;
        client
            .call_tool("add_note", json!({ "text": "buy milk" }))
            .await
            .unwrap();

        let title = client
            .call_tool("suggest_title", json!({ "id": 1 }))
            .await
            .unwrap();
        assert_eq!(
            title.content[0].as_text(),
            Some("Milk to buy (by test-model)")
        );

        let roots = client.call_tool("workspace", json!({})).await.unwrap();
        assert_eq!(roots.content[0].as_text(), Some("file:///home/ada/notes"));

        let deleted = client
            .call_tool("delete_note", json!({ "id": 1 }))
            .await
            .unwrap();
        assert_eq!(
            deleted.content[0].as_text(),
            Some("note 1 deleted"),
            "{era:?}"
        );
        let index = client.read_resource("notes://index").await.unwrap();
        assert_eq!(
            serde_json::to_value(&index.contents[0]).unwrap()["text"],
            ""
        );
    }
}
// ANCHOR_END: input

#[tokio::test]
async fn a_client_without_the_capability_gets_an_error_not_a_hang() {
    for era in REVISIONS {
        let client = connect(Client::builder().era(era)).await;
        client
            .call_tool("add_note", json!({ "text": "keep me" }))
            .await
            .unwrap();
        let refused = client.call_tool("delete_note", json!({ "id": 1 })).await;
        let refused_somehow = match &refused {
            Err(e) => e.rpc_error().is_some(),
            Ok(r) => r.is_error == Some(true),
        };
        assert!(refused_somehow, "{era:?}: {refused:?}");
        let kept = client
            .call_tool("open_note", json!({ "id": 1 }))
            .await
            .unwrap();
        assert_eq!(kept.content[0].as_text(), Some("keep me"), "{era:?}");
    }
}
