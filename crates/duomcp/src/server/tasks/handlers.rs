//! Tasks on the wire: how `tools/call` becomes a task in each era, and the `tasks/*` methods.

use super::runtime::{Cancelled, DetachHook};
use super::store::{TaskEra, TaskOutcome};
use super::{wire, EXTENSION_ID};
use crate::era::ProtocolError;
use crate::jsonrpc;
use crate::schema_check::SchemaViolation;
use crate::server::context::Context;
use crate::server::cursor;
use crate::server::invoke::call_tool;
use crate::server::registry::ToolEntry;
use crate::server::session::Sink;
use crate::server::HandlerError;
use crate::server::ToolOutput;
use crate::util::catch_unwind;
use duomcp_schema::methods::{self, RequestMethod};
use duomcp_schema::{error_code, meta, CallToolResult, TaskSupport};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use tokio::sync::oneshot;

/// How a `tools/call` is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallPlan {
    /// As a plain call.
    Inline,
    /// As a task created before the handler runs.
    Task,
    /// Inline until the handler calls [`Context::detach`] (2026-07-28 MRTR first, then a task).
    Deferred,
}

fn method_not_found(message: String) -> ProtocolError {
    ProtocolError::Custom(jsonrpc::error(error_code::METHOD_NOT_FOUND, message))
}

/// The tool's task support and its registry entry (whose `deferred_task` says whether its task
/// starts on `detach`, and `scopes` what a caller needs); `None` for unknown tools (the call
/// then reports the unknown tool as usual).
fn support_of(ctx: &Context, name: &str) -> Option<(TaskSupport, Arc<ToolEntry>)> {
    let entry = ctx.shared().registry().tools.get(name)?.clone();
    let support = entry
        .tool
        .execution
        .as_ref()
        .and_then(|e| e.task_support)
        .unwrap_or_default();
    Some((support, entry))
}

/// Why `args` do not fit the tool's `inputSchema` (the message a plain call's `isError` result
/// carries): checked before a task is created, so that a bad call is refused at once instead
/// of becoming a task that fails. `None` when they fit, or the tool is unknown (the call
/// reports that as usual).
fn argument_problem(ctx: &Context, name: &str, args: Option<&Value>) -> Option<String> {
    let entry = ctx.shared().registry().tools.get(name)?.clone();
    let empty = Value::Object(Map::new());
    let args = match args {
        None | Some(Value::Null) => &empty,
        Some(v @ Value::Object(_)) => v,
        Some(_) => {
            return Some(format!(
                "Invalid arguments for tool `{name}`: `arguments` must be an object"
            ))
        }
    };
    match entry.input.check(args) {
        Ok(()) => None,
        Err(SchemaViolation::Mismatch(problems)) => {
            Some(format!("Invalid arguments for tool `{name}`: {problems}"))
        }
        // Reported by the call itself.
        Err(SchemaViolation::BadSchema(_)) => None,
    }
}

/// A caller without the tool's scopes gets no task (the refusal a plain call would get).
fn check_scopes(ctx: &Context, scopes: &[String]) -> Result<(), ProtocolError> {
    match crate::server::principal::require_scopes(ctx.principal(), scopes) {
        Ok(()) => Ok(()),
        Err(HandlerError::Protocol(p)) => Err(p),
        Err(e) => Err(ProtocolError::Internal(e.to_string())),
    }
}

/// 2025-11-25: the client decides with `params.task`; the tool's `taskSupport` says whether it
/// may (`-32601` otherwise, as the spec prescribes). Returns the plan and the requested ttl.
pub(crate) fn legacy_plan(
    ctx: &Context,
    name: &str,
    task: Option<&Value>,
) -> Result<(CallPlan, Option<u64>), ProtocolError> {
    let ttl = match task {
        None => None,
        Some(Value::Object(t)) => match t.get("ttl") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_u64().ok_or_else(|| {
                ProtocolError::InvalidParams(format!(
                    "Invalid params: task.ttl must be a non-negative integer (milliseconds), got {v}"
                ))
            })?),
        },
        Some(other) => {
            return Err(ProtocolError::InvalidParams(format!(
                "Invalid params: `task` must be an object, got {other}"
            )))
        }
    };
    let Some((support, entry)) = support_of(ctx, name) else {
        return Ok((CallPlan::Inline, None));
    };
    if task.is_some() {
        check_scopes(ctx, &entry.scopes)?;
    }
    match (task.is_some(), support) {
        (true, TaskSupport::Forbidden) => Err(method_not_found(format!(
            "Tool `{name}` does not support task-augmented calls (execution.taskSupport is \"forbidden\")"
        ))),
        (false, TaskSupport::Required) => Err(method_not_found(format!(
            "Tool `{name}` must be called as a task (execution.taskSupport is \"required\"): add `task` to the params"
        ))),
        (true, _) => Ok((CallPlan::Task, ttl)),
        (false, _) => Ok((CallPlan::Inline, None)),
    }
}

/// The `-32021` data naming the tasks extension.
fn tasks_capability() -> ProtocolError {
    ProtocolError::MissingClientCapability(json!({ "extensions": { EXTENSION_ID: {} } }))
}

/// 2026-07-28: the server decides, but only for requests that declared the extension; a tool
/// that can only run as a task refuses the others with `-32021`. A legacy `task` param is
/// ignored.
pub(crate) fn modern_plan(ctx: &Context, name: &str) -> Result<CallPlan, ProtocolError> {
    let Some((support, entry)) = support_of(ctx, name) else {
        return Ok(CallPlan::Inline);
    };
    let deferred = entry.deferred_task;
    let declared = ctx.client_capabilities().has_extension(EXTENSION_ID);
    let plan = match support {
        TaskSupport::Forbidden => CallPlan::Inline,
        TaskSupport::Required if !declared => return Err(tasks_capability()),
        _ if !declared => CallPlan::Inline,
        _ if deferred => CallPlan::Deferred,
        _ => CallPlan::Task,
    };
    if plan == CallPlan::Task {
        check_scopes(ctx, &entry.scopes)?;
    }
    Ok(plan)
}

/// Runs the tool for a call that is, or may become, a task. When the call is a task by the
/// end, the outcome goes into the task and `None` is returned; otherwise the outcome.
async fn drive(
    ctx: Context,
    name: String,
    args: Option<Value>,
) -> Option<Result<CallToolResult, HandlerError>> {
    let cancel = ctx.cancel_token().clone();
    let outcome = tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(HandlerError::Cancelled),
        // A task stores the result: one serialized already is parsed here.
        r = catch_unwind(call_tool(&ctx, &name, args)) => r.map(|r| r.and_then(ToolOutput::into_typed)).unwrap_or_else(|panic| {
            tracing::error!("a tool handler panicked: {panic}");
            Err(ProtocolError::Internal("Internal error: the tool handler panicked".into()).into())
        }),
    };
    match ctx.task_live() {
        Some(live) => {
            ctx.shared().tasks.complete(&live, outcome).await;
            None
        }
        None => Some(outcome),
    }
}

/// 2025-11-25 task-augmented `tools/call`: creates the task, starts the tool, and returns the
/// `CreateTaskResult`.
pub(crate) async fn legacy_call(
    ctx: &Context,
    name: String,
    args: Option<Value>,
    ttl: Option<u64>,
) -> Result<Value, ProtocolError> {
    // The client asked for a task, so the answer is a task or a JSON-RPC error: arguments
    // that cannot work are the latter, before any task exists.
    if let Some(problem) = argument_problem(ctx, &name, args.as_ref()) {
        return Err(ProtocolError::InvalidParams(problem));
    }
    let task_ctx = ctx.fork_for_task();
    let record = ctx.shared().tasks.start(&task_ctx, &name, ttl).await?;
    tokio::spawn(crate::server::telemetry::in_current_context(drive(
        task_ctx, name, args,
    )));
    Ok(json!({ "task": wire::legacy_task_value(&record) }))
}

/// What a 2026-07-28 task-capable `tools/call` produced.
pub(crate) enum ModernCall {
    /// A task: the `CreateTaskResult` (without `_meta`).
    Created(Value),
    /// The handler finished without becoming a task (it may have asked for input, MRTR):
    /// the context it ran with and its outcome.
    Inline(Context, Result<CallToolResult, HandlerError>),
}

fn create_task_result(record: &super::TaskRecord) -> Value {
    let mut v = wire::modern_task_value(record, false);
    v["resultType"] = json!("task");
    v
}

/// 2026-07-28 `tools/call` of a task-capable tool for a client that declared the extension.
pub(crate) async fn modern_call(
    ctx: &Context,
    name: String,
    args: Option<Value>,
    plan: CallPlan,
) -> Result<ModernCall, ProtocolError> {
    if plan != CallPlan::Deferred {
        // The server decides what becomes a task: a call whose arguments cannot work is
        // answered at once, as a plain call would be (an `isError` result), not as a task.
        if let Some(problem) = argument_problem(ctx, &name, args.as_ref()) {
            return Ok(ModernCall::Inline(
                ctx.clone(),
                Ok(CallToolResult::error_text(problem)),
            ));
        }
    }
    let task_ctx = ctx.fork_for_task();
    if plan != CallPlan::Deferred {
        let record = ctx.shared().tasks.start(&task_ctx, &name, None).await?;
        tokio::spawn(crate::server::telemetry::in_current_context(drive(
            task_ctx, name, args,
        )));
        return Ok(ModernCall::Created(create_task_result(&record)));
    }
    let (tx, mut detached) = oneshot::channel();
    task_ctx.set_detach_hook(DetachHook {
        target: name.clone(),
        tx,
    });
    // Until the handler detaches, the call belongs to this request: dropping the request
    // (client gone, cancelled) stops the handler.
    let abort = task_ctx.cancel_token().clone().drop_guard();
    let mut handler = tokio::spawn(crate::server::telemetry::in_current_context(drive(
        task_ctx.clone(),
        name,
        args,
    )));
    tokio::select! {
        biased;
        d = &mut detached => match d {
            Ok(Ok(record)) => {
                abort.disarm();
                Ok(ModernCall::Created(create_task_result(&record)))
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(ProtocolError::Internal("Internal error: the task was lost".into())),
        },
        joined = &mut handler => match joined {
            Ok(Some(outcome)) => Ok(ModernCall::Inline(task_ctx, outcome)),
            // It detached and finished before we looked: the task exists.
            Ok(None) => match detached.await {
                Ok(Ok(record)) => {
                    abort.disarm();
                    Ok(ModernCall::Created(create_task_result(&record)))
                }
                Ok(Err(e)) => Err(e),
                Err(_) => Err(ProtocolError::Internal("Internal error: the task was lost".into())),
            },
            Err(e) => Err(ProtocolError::Internal(format!("Internal error: the tool handler failed: {e}"))),
        },
    }
}

#[derive(Deserialize)]
struct TaskIdParams {
    #[serde(rename = "taskId")]
    task_id: String,
}

#[derive(Deserialize)]
struct UpdateParams {
    #[serde(rename = "taskId")]
    task_id: String,
    #[serde(rename = "inputResponses")]
    input_responses: Map<String, Value>,
}

#[derive(Deserialize, Default)]
struct ListParams {
    #[serde(default)]
    cursor: Option<String>,
}

fn parse<T: serde::de::DeserializeOwned>(params: Option<&RawValue>) -> Result<T, ProtocolError> {
    jsonrpc::parse_params(params).map_err(|e| ProtocolError::InvalidParams(e.message))
}

fn principal_key(ctx: &Context) -> Option<String> {
    ctx.principal().map(|p| p.key())
}

/// Which `tasks/*` request of 2026-07-28 a method is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModernMethod {
    Get,
    Update,
    Cancel,
}

impl ModernMethod {
    pub(crate) fn of(method: &str) -> Option<Self> {
        match method {
            m if m == <methods::GetTask as RequestMethod>::NAME => Some(ModernMethod::Get),
            m if m == <methods::UpdateTask as RequestMethod>::NAME => Some(ModernMethod::Update),
            m if m == <methods::CancelTask as RequestMethod>::NAME => Some(ModernMethod::Cancel),
            _ => None,
        }
    }
}

/// A 2026-07-28 `tasks/get`, `tasks/update` or `tasks/cancel`: the result before the fields
/// every modern result carries (`resultType: "complete"`, `serverInfo`).
pub(crate) async fn modern_method(
    ctx: &Context,
    method: ModernMethod,
    params: Option<&RawValue>,
) -> Result<Value, ProtocolError> {
    if !ctx.client_capabilities().has_extension(EXTENSION_ID) {
        return Err(tasks_capability());
    }
    let tasks = &ctx.shared().tasks;
    let principal = principal_key(ctx);
    let principal = principal.as_deref();
    match method {
        ModernMethod::Get => {
            let p: TaskIdParams = parse(params)?;
            let record = tasks.lookup(&p.task_id, TaskEra::Modern, principal).await?;
            Ok(wire::modern_task_value(&record, true))
        }
        ModernMethod::Update => {
            let p: UpdateParams = parse(params)?;
            tasks.lookup(&p.task_id, TaskEra::Modern, principal).await?;
            tasks.answer(&p.task_id, p.input_responses).await;
            Ok(json!({}))
        }
        ModernMethod::Cancel => {
            let p: TaskIdParams = parse(params)?;
            // Cancelling a finished task is acknowledged the same way: cancellation is
            // cooperative and the ack promises nothing about the final status.
            tasks.cancel(&p.task_id, TaskEra::Modern, principal).await?;
            Ok(json!({}))
        }
    }
}

const LIST_CURSOR_PREFIX: &str = "task:";

/// A 2025-11-25 `tasks/*` request; `None` for other methods.
pub(crate) async fn legacy_method(
    ctx: &Context,
    method: &str,
    params: Option<&RawValue>,
    sink: &Sink,
) -> Option<Result<Value, ProtocolError>> {
    let tasks = &ctx.shared().tasks;
    let principal = principal_key(ctx);
    let principal = principal.as_deref();
    let outcome = async {
        match method {
            m if m == <methods::GetTask as RequestMethod>::NAME => {
                let p: TaskIdParams = parse(params)?;
                tasks.check_session(&p.task_id, ctx.session()).await?;
                let record = tasks.lookup(&p.task_id, TaskEra::Legacy, principal).await?;
                Ok(wire::legacy_task_value(&record))
            }
            m if m == <methods::GetTaskPayload as RequestMethod>::NAME => {
                let p: TaskIdParams = parse(params)?;
                tasks.check_session(&p.task_id, ctx.session()).await?;
                let Some(record) = tasks.await_terminal(&p.task_id, principal, sink).await? else {
                    // Nobody reads the answer any more.
                    return Err(ProtocolError::Internal("the client went away".into()));
                };
                match record.outcome {
                    Some(TaskOutcome::Result(mut result)) => {
                        let m = result.entry("_meta").or_insert_with(|| json!({}));
                        if let Value::Object(m) = m {
                            m.insert(meta::RELATED_TASK.into(), json!({ "taskId": record.id }));
                        }
                        Ok(Value::Object(result))
                    }
                    Some(TaskOutcome::Error(e)) => Err(ProtocolError::Custom(e)),
                    None => Err(ProtocolError::InvalidParams(format!(
                        "Task {} was {} before it produced a result",
                        record.id,
                        record.status.as_str()
                    ))),
                }
            }
            m if m == <methods::ListTasks as RequestMethod>::NAME => {
                let p: ListParams = match params {
                    Some(_) => parse(params)?,
                    None => ListParams::default(),
                };
                let after = cursor::decode(LIST_CURSOR_PREFIX, p.cursor.as_deref())?;
                let Some(session) = ctx.session() else {
                    return Ok(json!({ "tasks": [] }));
                };
                let filter = tasks.legacy_filter(principal, session)?;
                let size = ctx.shared().config.page_size;
                let (page, more) = tasks
                    .store()
                    .list(&filter, after.as_deref(), size, tasks.now())
                    .await;
                let mut r = json!({
                    "tasks": page.iter().map(wire::legacy_task_value).collect::<Vec<_>>()
                });
                if let (true, Some(last)) = (more, page.last()) {
                    r["nextCursor"] = json!(cursor::encode(LIST_CURSOR_PREFIX, &last.list_key()));
                }
                Ok(r)
            }
            m if m == <methods::CancelTask as RequestMethod>::NAME => {
                let p: TaskIdParams = parse(params)?;
                tasks.check_session(&p.task_id, ctx.session()).await?;
                match tasks.cancel(&p.task_id, TaskEra::Legacy, principal).await? {
                    Cancelled::Now(record) => Ok(wire::legacy_task_value(&record)),
                    Cancelled::AlreadyTerminal(record) => {
                        Err(ProtocolError::InvalidParams(format!(
                            "Cannot cancel task: already in terminal status '{}'",
                            record.status.as_str()
                        )))
                    }
                }
            }
            _ => Err(ProtocolError::MethodNotFound(String::new())),
        }
    };
    let is_tasks_method = [
        <methods::GetTask as RequestMethod>::NAME,
        <methods::GetTaskPayload as RequestMethod>::NAME,
        <methods::ListTasks as RequestMethod>::NAME,
        <methods::CancelTask as RequestMethod>::NAME,
    ]
    .contains(&method);
    if !is_tasks_method {
        return None;
    }
    Some(outcome.await)
}

/// Whether a registered tool may run as a task (then the server advertises tasks).
pub(crate) fn any_task_tool(ctx_tools: impl Iterator<Item = Option<TaskSupport>>) -> bool {
    ctx_tools
        .flatten()
        .any(|s| matches!(s, TaskSupport::Optional | TaskSupport::Required))
}
