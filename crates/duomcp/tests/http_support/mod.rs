//! Shared pieces of the Streamable HTTP tests (`http_server`, `client_http`): a probe the tools
//! report to, and the tools both servers under test carry (plain, progress, eliciting, polling and
//! hanging ones). Each test file adds its own extra tools on top.
#![allow(dead_code)]

use duomcp::schema::{ElicitRequestFormParams, ElicitRequestParams};
use duomcp::server::{Context, HandlerError, ServerBuilder, State, ToolSpec};
use serde_json::{json, Value};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// The era header values.
pub const MODERN: &str = "2026-07-28";
pub const LEGACY: &str = "2025-11-25";

/// Fails the test instead of hanging it.
pub async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("timed out")
}

/// What the tools under test report back to the test.
#[derive(Clone, Default)]
pub struct Probe {
    /// Lets a waiting tool go on.
    pub release: Arc<Notify>,
    /// Set when a tool's future was torn down before it finished.
    pub dropped: Arc<AtomicBool>,
    /// Notified with `dropped`.
    pub dropped_notify: Arc<Notify>,
}

/// Sets the probe's flag when dropped.
pub struct DropFlag(pub Probe);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.dropped.store(true, Ordering::SeqCst);
        self.0.dropped_notify.notify_one();
    }
}

/// A tool without arguments.
pub fn no_args(name: &str) -> ToolSpec {
    ToolSpec::new(name)
        .description(name.to_owned())
        .input_schema(json!({ "type": "object", "properties": {} }))
}

/// Adds the tools every HTTP test server has: `plain`, `progress` (three progress steps), `ask`
/// (elicits a name), `poll` (closes its SSE stream mid-call, then waits for the probe) and `hang`
/// (reports progress, then never finishes; flags the probe when torn down).
pub fn common_tools(builder: ServerBuilder) -> ServerBuilder {
    builder
        .tool(no_args("plain"), || async { "plain" })
        .tool(no_args("progress"), |ctx: Context| async move {
            for i in 1..=3 {
                ctx.progress(f64::from(i), Some(3.0), None).await;
            }
            "done"
        })
        .tool(no_args("ask"), |ctx: Context| async move {
            let schema = serde_json::from_value(json!({
                "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"]
            }))
            .unwrap_or_default();
            let params = ElicitRequestParams::Form(ElicitRequestFormParams::new("Your name?", schema));
            let answer = ctx.elicit("name", params).await?;
            let name = answer
                .content
                .and_then(|c| c.get("name").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_default();
            Ok::<_, HandlerError>(format!("Hello {name}"))
        })
        .tool(no_args("poll"), |ctx: Context, State(p): State<Probe>| async move {
            ctx.progress(1.0, None, None).await;
            ctx.close_sse_stream().await;
            p.release.notified().await;
            ctx.progress(2.0, None, None).await;
            "polled"
        })
        .tool(no_args("hang"), |ctx: Context, State(p): State<Probe>| async move {
            let _flag = DropFlag(p);
            ctx.progress(0.0, None, None).await;
            std::future::pending::<&'static str>().await
        })
}
