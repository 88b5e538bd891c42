//! 2026-07-28 tasks on the wire: a `tools/call` the server makes a task, and `tasks/get`,
//! `tasks/update`, `tasks/cancel`.

use super::handlers::{
    argument_problem, check_scopes, drive, parse, principal_key, support_of, tasks_capability,
    CallPlan, TaskIdParams,
};
use super::runtime::DetachHook;
use super::EXTENSION_ID;
use crate::era::Era;
use crate::era::ProtocolError;
use crate::server::context::Context;
use crate::server::HandlerError;
use duomcp_proto::era::modern::tasks::ModernTasks;
use duomcp_proto::era::tasks::TaskWire as _;
use duomcp_schema::methods::{self, RequestMethod};
use duomcp_schema::{CallToolResult, TaskSupport};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use tokio::sync::oneshot;

/// How 2026-07-28 writes tasks.
const WIRE: ModernTasks = ModernTasks;

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

/// What a 2026-07-28 task-capable `tools/call` produced.
pub(crate) enum ModernCall {
    /// A task: the `CreateTaskResult` (without `_meta`).
    Created(Value),
    /// The handler finished without becoming a task (it may have asked for input, MRTR):
    /// the context it ran with and its outcome.
    Inline(Context, Result<CallToolResult, HandlerError>),
}

fn create_task_result(record: &super::TaskRecord) -> Value {
    WIRE.created(record)
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
struct UpdateParams {
    #[serde(rename = "taskId")]
    task_id: String,
    #[serde(rename = "inputResponses")]
    input_responses: Map<String, Value>,
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
    params: Option<&str>,
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
            let record = tasks.lookup(&p.task_id, Era::Modern, principal).await?;
            Ok(WIRE.task_value(&record))
        }
        ModernMethod::Update => {
            let p: UpdateParams = parse(params)?;
            tasks.lookup(&p.task_id, Era::Modern, principal).await?;
            tasks.answer(&p.task_id, p.input_responses).await;
            Ok(json!({}))
        }
        ModernMethod::Cancel => {
            let p: TaskIdParams = parse(params)?;
            // Cancelling a finished task is acknowledged the same way: cancellation is
            // cooperative and the ack promises nothing about the final status.
            tasks.cancel(&p.task_id, Era::Modern, principal).await?;
            Ok(json!({}))
        }
    }
}
