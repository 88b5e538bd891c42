//! 2025-11-25 tasks on the wire: a task-augmented `tools/call` and the `tasks/*` methods.

use super::handlers::{
    argument_problem, check_scopes, drive, method_not_found, parse, principal_key, support_of,
    CallPlan, TaskIdParams,
};
use super::runtime::Cancelled;
use super::store::TaskOutcome;
use crate::era::Era;
use crate::era::ProtocolError;
use crate::server::context::Context;
use crate::server::cursor;
use crate::server::session::Sink;
use duomcp_proto::era::legacy::tasks::LegacyTasks;
use duomcp_proto::era::tasks::relate_to_task;
use duomcp_proto::era::tasks::TaskWire as _;
use duomcp_schema::methods::{self, RequestMethod};
use duomcp_schema::TaskSupport;
use serde::Deserialize;
use serde_json::{json, Value};

/// How 2025-11-25 writes tasks.
const WIRE: LegacyTasks = LegacyTasks;

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
    Ok(WIRE.created(&record))
}

#[derive(Deserialize, Default)]
struct ListParams {
    #[serde(default)]
    cursor: Option<String>,
}

const LIST_CURSOR_PREFIX: &str = "task:";

/// A 2025-11-25 `tasks/*` request; `None` for other methods.
pub(crate) async fn legacy_method(
    ctx: &Context,
    method: &str,
    params: Option<&str>,
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
                let record = tasks.lookup(&p.task_id, Era::Legacy, principal).await?;
                Ok(WIRE.task_value(&record))
            }
            m if m == <methods::GetTaskPayload as RequestMethod>::NAME => {
                let p: TaskIdParams = parse(params)?;
                tasks.check_session(&p.task_id, ctx.session()).await?;
                let Some(record) = tasks.await_terminal(&p.task_id, principal, sink).await? else {
                    // Nobody reads the answer any more.
                    return Err(ProtocolError::Internal("the client went away".into()));
                };
                match record.outcome {
                    Some(TaskOutcome::Result(result)) => {
                        let mut result = Value::Object(result);
                        relate_to_task(&mut result, &record.id);
                        Ok(result)
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
                    "tasks": page.iter().map(|r| WIRE.task_value(r)).collect::<Vec<_>>()
                });
                if let (true, Some(last)) = (more, page.last()) {
                    r["nextCursor"] = json!(cursor::encode(LIST_CURSOR_PREFIX, &last.list_key()));
                }
                Ok(r)
            }
            m if m == <methods::CancelTask as RequestMethod>::NAME => {
                let p: TaskIdParams = parse(params)?;
                tasks.check_session(&p.task_id, ctx.session()).await?;
                match tasks.cancel(&p.task_id, Era::Legacy, principal).await? {
                    Cancelled::Now(record) => Ok(WIRE.task_value(&record)),
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
