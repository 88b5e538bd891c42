//! What both eras' task requests share: the plan of a `tools/call`, the checks made before a
//! task is created, and running the tool. Each era's requests are in `legacy.rs` and
//! `modern.rs`.

use super::EXTENSION_ID;
use crate::era::ProtocolError;
use crate::jsonrpc;
use crate::schema_check::SchemaViolation;
use crate::server::context::Context;
use crate::server::invoke::call_tool;
use crate::server::registry::ToolEntry;
use crate::server::ToolOutput;
use crate::server::{ExtractRejection, HandlerError};
use crate::util::catch_unwind;
use duomcp_schema::{error_code, CallToolResult, TaskSupport};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;

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

pub(super) fn method_not_found(message: String) -> ProtocolError {
    ProtocolError::Custom(jsonrpc::error(error_code::METHOD_NOT_FOUND, message))
}

/// The tool's task support and its registry entry (whose `deferred_task` says whether its task
/// starts on `detach`, and `scopes` what a caller needs); `None` for unknown tools (the call
/// then reports the unknown tool as usual).
pub(super) fn support_of(ctx: &Context, name: &str) -> Option<(TaskSupport, Arc<ToolEntry>)> {
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
pub(super) fn argument_problem(ctx: &Context, name: &str, args: Option<&Value>) -> Option<String> {
    let entry = ctx.shared().registry().tools.get(name)?.clone();
    let empty = Value::Object(Map::new());
    let args = match args {
        None | Some(Value::Null) => &empty,
        Some(v @ Value::Object(_)) => v,
        Some(_) => {
            let tool = name.to_owned();
            return Some(ExtractRejection::ArgumentsNotObject { tool }.to_string());
        }
    };
    match entry.input.check(args) {
        Ok(()) => None,
        Err(SchemaViolation::Mismatch(problems)) => {
            let tool = name.to_owned();
            Some(ExtractRejection::SchemaMismatch { tool, problems }.to_string())
        }
        // Reported by the call itself.
        Err(SchemaViolation::BadSchema(_)) => None,
    }
}

/// A caller without the tool's scopes gets no task (the refusal a plain call would get).
pub(super) fn check_scopes(ctx: &Context, scopes: &[String]) -> Result<(), ProtocolError> {
    match crate::server::principal::require_scopes(ctx.principal(), scopes) {
        Ok(()) => Ok(()),
        Err(HandlerError::Protocol(p)) => Err(p),
        Err(e) => Err(ProtocolError::Internal(e.to_string())),
    }
}

/// The `-32021` data naming the tasks extension.
pub(super) fn tasks_capability() -> ProtocolError {
    ProtocolError::MissingClientCapability(json!({ "extensions": { EXTENSION_ID: {} } }))
}

/// Runs the tool for a call that is, or may become, a task. When the call is a task by the
/// end, the outcome goes into the task and `None` is returned; otherwise the outcome.
pub(super) async fn drive(
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

#[derive(Deserialize)]
pub(super) struct TaskIdParams {
    #[serde(rename = "taskId")]
    pub(super) task_id: String,
}

pub(super) fn parse<T: serde::de::DeserializeOwned>(
    params: Option<&str>,
) -> Result<T, ProtocolError> {
    jsonrpc::parse_params(params).map_err(|e| ProtocolError::InvalidParams(e.message))
}

pub(super) fn principal_key(ctx: &Context) -> Option<String> {
    ctx.principal().map(|p| p.key())
}

/// Whether a registered tool may run as a task (then the server advertises tasks).
pub(crate) fn any_task_tool(ctx_tools: impl Iterator<Item = Option<TaskSupport>>) -> bool {
    ctx_tools
        .flatten()
        .any(|s| matches!(s, TaskSupport::Optional | TaskSupport::Required))
}
