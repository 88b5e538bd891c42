//! Task fixtures (2025-11-25 core tasks and the 2026-07-28 tasks extension): the same handlers
//! run inline, as 2025-11-25 tasks (client asks with `params.task`) or as 2026-07-28 tasks
//! (server decides when the request declares `io.modelcontextprotocol/tasks`).

use super::tools::form;
use duomcp::schema::{ElicitAction, ElicitResult, TaskSupport};
use duomcp::server::{Args, Context, HandlerError, ServerBuilder, ToolSpec};
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;

#[derive(Deserialize, schemars::JsonSchema)]
struct Greet {
    /// Who to greet.
    name: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Compute {
    /// How long to work, in seconds (0 for an immediate result).
    seconds: f64,
    /// A label echoed in the result.
    #[serde(default)]
    label: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Filename {
    /// The file to delete.
    filename: String,
}

fn no_args(name: &str, description: &str) -> ToolSpec {
    ToolSpec::new(name)
        .description(description)
        .input_schema(json!({ "type": "object", "properties": {} }))
}

fn text_field(r: &ElicitResult, key: &str) -> Option<String> {
    r.content.as_ref()?.get(key).map(|v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

fn accepted(r: &ElicitResult) -> bool {
    r.action == ElicitAction::Accept
}

async fn sleep_secs(seconds: f64) {
    let ms = (seconds.clamp(0.0, 3600.0) * 1000.0) as u64;
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

#[allow(clippy::panic)] // the fixture exists to show a panic becoming a failed task
async fn protocol_error_job() -> String {
    tokio::time::sleep(Duration::from_millis(100)).await;
    panic!("protocol_error_job: deliberate crash (the task fails with -32603)")
}

pub(super) fn register(b: ServerBuilder) -> ServerBuilder {
    b.tool(
        ToolSpec::new("greet").description("Greets someone at once (never a task)"),
        |Args(g): Args<Greet>| async move { format!("Hello, {}!", g.name) },
    )
    .tool(
        ToolSpec::new("slow_compute")
            .description("Works for `seconds` seconds (progress 0, then `seconds`, when asked), then answers; a task when the client can take one")
            .long_running(),
        |ctx: Context, Args(c): Args<Compute>| async move {
            ctx.progress(0.0, Some(c.seconds), None).await;
            sleep_secs(c.seconds).await;
            ctx.progress(c.seconds, Some(c.seconds), None).await;
            let label = c.label.unwrap_or_else(|| "job".into());
            format!("Computed {label} in {}s", c.seconds)
        },
    )
    .tool(
        no_args("failing_job", "Fails with a tool error after about a second; only runs as a task")
            .task_support(TaskSupport::Required),
        || async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Err::<String, _>(HandlerError::msg("failing_job failed, as it always does"))
        },
    )
    .tool(
        no_args("protocol_error_job", "Crashes; as a task it ends `failed` with a JSON-RPC error")
            .long_running(),
        protocol_error_job,
    )
    .tool(
        ToolSpec::new("confirm_delete")
            .description("Asks the user to confirm, then deletes the file (pretend); a task when possible")
            .long_running(),
        |ctx: Context, Args(f): Args<Filename>| async move {
            let schema = json!({ "type": "object", "properties": { "confirm": { "type": "boolean" } }, "required": ["confirm"] });
            let r = ctx.elicit("confirm", form(format!("Delete {}?", f.filename), schema)).await?;
            let yes = accepted(&r) && r.content.as_ref().and_then(|c| c.get("confirm")).and_then(Value::as_bool) == Some(true);
            Ok::<_, HandlerError>(if yes { format!("Deleted {}", f.filename) } else { format!("Kept {}", f.filename) })
        },
    )
    .tool(
        no_args("multi_input", "Asks for a name and a confirmation at the same time; a task when possible").long_running(),
        |ctx: Context| async move {
            let name_schema = json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] });
            let confirm_schema = json!({ "type": "object", "properties": { "confirm": { "type": "boolean" } }, "required": ["confirm"] });
            let (name, confirm) = tokio::join!(
                ctx.elicit("name", form("What is your name?".into(), name_schema)),
                ctx.elicit("confirm", form("Shall I go on?".into(), confirm_schema)),
            );
            let (name, confirm) = (name?, confirm?);
            let who = text_field(&name, "name").unwrap_or_else(|| "stranger".into());
            let go = text_field(&confirm, "confirm").unwrap_or_else(|| "false".into());
            Ok::<_, HandlerError>(format!("Hello, {who} (confirmed: {go})"))
        },
    )
    .tool(
        no_args("test_tool_with_task", "Asks for your name (MRTR), then finishes as a task")
            .task_support(TaskSupport::Required)
            .defer_task(),
        |ctx: Context| async move {
            let schema = json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] });
            let r = ctx.elicit("user_name", form("What is your name?".into(), schema)).await?;
            let name = text_field(&r, "name").unwrap_or_else(|| "stranger".into());
            ctx.detach().await;
            tokio::time::sleep(Duration::from_millis(200)).await;
            Ok::<_, HandlerError>(format!("Hello, {name}! (finished as task {})", ctx.task_id().unwrap_or("-")))
        },
    )
}
