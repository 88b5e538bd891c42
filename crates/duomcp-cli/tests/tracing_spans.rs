//! Every request runs in an `mcp.request` span carrying method, era, request id, target (tool or
//! prompt name, resource URI) and, once it finishes, its outcome.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use duomcp::server::{Args, HandlerError, Server, ToolSpec};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use support::{modern, Wire, LEGACY, MODERN};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

type Fields = BTreeMap<String, String>;

/// Collects the fields of every closed `mcp.request` span.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Fields>>>);

struct Collect<'a>(&'a mut Fields);

impl Visit for Collect<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().name() != "mcp.request" {
            return;
        }
        let mut fields = Fields::new();
        attrs.record(&mut Collect(&mut fields));
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            if let Some(fields) = span.extensions_mut().get_mut::<Fields>() {
                values.record(&mut Collect(fields));
            }
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(&id) {
            if let Some(fields) = span.extensions_mut().remove::<Fields>() {
                self.0.lock().unwrap().push(fields);
            }
        }
    }
}

impl Capture {
    /// The spans closed so far, then forgets them.
    fn take(&self) -> Vec<Fields> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn fields(pairs: &[(&str, &str)]) -> Fields {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Text {
    text: String,
}

#[tokio::test]
async fn each_request_gets_a_span_with_its_outcome() {
    let capture = Capture::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(capture.clone()))
        .unwrap();

    let server = Server::builder()
        .tool("echo", |Args(t): Args<Text>| async move { t.text })
        .tool(
            ToolSpec::new("fails").input_schema(json!({ "type": "object" })),
            || async { Err::<String, _>(HandlerError::msg("it failed")) },
        )
        .prompt("hello", || async { String::from("Hello!") })
        .build();

    let mut legacy = Wire::in_process(server.clone(), LEGACY);
    legacy.initialize(json!({})).await;
    legacy
        .ok(
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "hi" } }),
        )
        .await;
    legacy.ok("tools/call", json!({ "name": "fails" })).await;
    legacy.err("tools/call", json!({ "name": "missing" })).await;
    legacy.ok("prompts/get", json!({ "name": "hello" })).await;
    // Spans close once the connection's task lets go of them: wait until all five are in.
    let mut spans = Vec::new();
    for _ in 0..200 {
        spans.extend(capture.take());
        if spans.len() >= 5 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(
        spans,
        [
            fields(&[
                ("method", "initialize"),
                ("era", "legacy"),
                ("request_id", "1"),
                ("outcome", "ok")
            ]),
            fields(&[
                ("method", "tools/call"),
                ("era", "legacy"),
                ("request_id", "2"),
                ("target", "echo"),
                ("outcome", "ok")
            ]),
            fields(&[
                ("method", "tools/call"),
                ("era", "legacy"),
                ("request_id", "3"),
                ("target", "fails"),
                ("outcome", "isError")
            ]),
            fields(&[
                ("method", "tools/call"),
                ("era", "legacy"),
                ("request_id", "4"),
                ("target", "missing"),
                ("outcome", "error"),
                ("error_code", "-32602")
            ]),
            fields(&[
                ("method", "prompts/get"),
                ("era", "legacy"),
                ("request_id", "5"),
                ("target", "hello"),
                ("outcome", "ok")
            ]),
        ]
    );

    let mut modern_wire = Wire::in_process(server, MODERN);
    modern_wire
        .ok(
            "tools/call",
            modern(
                json!({ "name": "echo", "arguments": { "text": "hi" } }),
                json!({}),
            ),
        )
        .await;
    // A 2026-07-28 resource that does not exist: -32602 in that revision.
    modern_wire
        .err(
            "resources/read",
            modern(json!({ "uri": "file:///nowhere" }), json!({})),
        )
        .await;
    let mut spans = Vec::new();
    for _ in 0..200 {
        spans.extend(capture.take());
        if spans.len() >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(
        spans,
        [
            fields(&[
                ("method", "tools/call"),
                ("era", "modern"),
                ("request_id", "1"),
                ("target", "echo"),
                ("outcome", "ok")
            ]),
            fields(&[
                ("method", "resources/read"),
                ("era", "modern"),
                ("request_id", "2"),
                ("target", "file:///nowhere"),
                ("outcome", "error"),
                ("error_code", "-32602")
            ]),
        ]
    );
}

/// Collects the fields of every `warn` event from `duomcp`.
#[derive(Clone, Default)]
struct Warnings(Arc<Mutex<Vec<Fields>>>);

impl<S: Subscriber> Layer<S> for Warnings {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let meta = event.metadata();
        if *meta.level() != tracing::Level::WARN || !meta.target().starts_with("duomcp") {
            return;
        }
        let mut fields = Fields::new();
        event.record(&mut Collect(&mut fields));
        self.0.lock().unwrap().push(fields);
    }
}

#[tokio::test]
async fn a_failed_tool_call_is_logged_at_warn_with_the_tool_and_its_error() {
    let warnings = Warnings::default();
    // This thread only (the test runtime's one thread): the other test owns the global one.
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(warnings.clone()));

    let server = Server::builder()
        .tool("echo", |Args(t): Args<Text>| async move { t.text })
        .tool(
            ToolSpec::new("broken").input_schema(json!({ "type": "object" })),
            || async { Err::<String, _>(HandlerError::msg("disk full\non /var")) },
        )
        .tool(
            ToolSpec::new("refuses").input_schema(json!({ "type": "object" })),
            || async { duomcp_schema::CallToolResult::error_text("quota exceeded for alice") },
        )
        .build();

    // Two clients, one per revision, each making its own tool fail.
    let mut legacy = Wire::in_process(server.clone(), LEGACY);
    legacy.initialize(json!({})).await;
    legacy
        .ok(
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "hi" } }),
        )
        .await;
    let r = legacy.ok("tools/call", json!({ "name": "broken" })).await;
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(
        warnings.0.lock().unwrap().clone(),
        [fields(&[
            ("message", "tool call failed"),
            ("tool", "broken"),
            // The newline is escaped: one log line per failure.
            ("error", "disk full\\non /var"),
        ])]
    );

    let mut modern_wire = Wire::in_process(server, MODERN);
    let r = modern_wire
        .ok(
            "tools/call",
            modern(json!({ "name": "refuses" }), json!({})),
        )
        .await;
    assert_eq!(r["isError"], true, "{r}");
    // A call refused before any tool runs is the client's mistake, not a tool's failure.
    modern_wire
        .err(
            "tools/call",
            modern(json!({ "name": "missing" }), json!({})),
        )
        .await;
    modern_wire
        .ok(
            "tools/call",
            modern(
                json!({ "name": "echo", "arguments": { "text": "hi" } }),
                json!({}),
            ),
        )
        .await;
    assert_eq!(
        warnings.0.lock().unwrap()[1..],
        [fields(&[
            ("message", "tool call failed"),
            ("tool", "refuses"),
            ("error", "quota exceeded for alice"),
        ])]
    );
}
