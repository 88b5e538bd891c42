//! The surface an era adapter offers the method table: everything the table needs to know
//! about a revision, and nothing else.
//!
//! [`legacy::Legacy`](super::legacy::Legacy) (2025-11-25) and
//! [`modern::Modern`](super::modern::Modern) (2026-07-28) implement it; the
//! [table](super::table) is written once against it. The adapters never import the table.

use super::{ReadMeta, Reply, RequestEnv};
use crate::era::{Era, ProtocolError};
use crate::jsonrpc::IncomingRequest;
use crate::server::context::Context;
use crate::server::params::ParamsIndex;
use crate::server::{CachePolicy, HandlerError, Shared, ToolOutput};
use duomcp_schema::{RequestId, Tool};
use serde::Serialize;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;

/// What a `tools/call` became.
pub(super) enum ToolCall {
    /// A task: the answer is its `CreateTaskResult`, already shaped.
    Task(Reply),
    /// The tool ran within the request: the context it ran with, and its outcome.
    Ran(Context, Result<ToolOutput, HandlerError>),
}

/// What the input of a multi-round-trip request is bound to (sealed `requestState` names
/// it). Only an era that seals state reads it, and only when state is restored or sealed:
/// binding a `tools/call` digests its arguments, which most calls never need.
#[derive(Clone, Copy)]
pub(super) enum Target<'t> {
    /// `prompts/get`'s name, `resources/read`'s URI.
    Named(&'t str),
    /// A `tools/call` or `prompts/get`: the tool or prompt, and its `arguments` as the request
    /// sent them (both are bound: a state for one set of arguments is not one for another).
    Call {
        name: &'t str,
        arguments: Option<&'t str>,
    },
}

/// One revision of MCP, as the method table sees it.
pub(super) trait Adapter: Sized + Send + Sync {
    /// The revision (for error objects and the request span).
    const ERA: Era;

    /// Admits a request of this era: the adapter and the request's [`Context`], or the answer
    /// when the era gives one before any context exists (a refusal; the 2025-11-25 handshake,
    /// `initialize` and `ping`).
    fn admit(
        shared: &Arc<Shared>,
        req: &IncomingRequest,
        params: &ParamsIndex<'_>,
        meta: ReadMeta<'_>,
        env: RequestEnv,
    ) -> Result<(Self, Context), Reply>;

    /// A method only this era has (`resources/subscribe`, `logging/setLevel`, the 2025-11-25
    /// `tasks/*`; `server/discover`, `subscriptions/listen`, the 2026-07-28 `tasks/*`).
    /// `None`: the era has no method of that name.
    fn own_method(
        &self,
        ctx: &Context,
        req: &IncomingRequest,
        params: &ParamsIndex<'_>,
    ) -> impl Future<Output = Option<Result<Reply, ProtocolError>>> + Send;

    /// Restores the input of earlier rounds of a multi-round-trip request (`requestState`,
    /// `inputResponses`) before the handler runs again.
    fn restore_input(
        &self,
        ctx: &Context,
        method: &str,
        target: Target<'_>,
        state: Option<&str>,
        responses: Option<Map<String, Value>>,
    ) -> Result<(), ProtocolError>;

    /// Plans a `tools/call` (inline, or as a task) and runs it.
    fn call_tool(
        &self,
        ctx: Context,
        name: &str,
        arguments: Option<Value>,
        task: Option<Value>,
    ) -> impl Future<Output = Result<ToolCall, ProtocolError>> + Send;

    /// The answer to a request whose handler may ask for input (`tools/call`, `prompts/get`,
    /// `resources/read`): its shaped result, or what a handler's failure becomes.
    fn finish<T: Serialize>(
        &self,
        ctx: &Context,
        id: &RequestId,
        method: &str,
        target: Target<'_>,
        result: Result<T, HandlerError>,
        cache: Option<CachePolicy>,
    ) -> Result<Reply, ProtocolError>;

    /// A result as this era sends it (`cache`: the policy of a cacheable result; `shared`:
    /// whose `serverInfo` 2026-07-28 results carry).
    fn shape<T: Serialize>(
        &self,
        shared: &Shared,
        id: &RequestId,
        result: &T,
        cache: Option<CachePolicy>,
    ) -> Result<Reply, ProtocolError>;

    /// The protocol error a handler's failure becomes when it is not a result of its own.
    fn failure(&self, e: HandlerError) -> ProtocolError;

    /// A tool as `tools/list` shows it in this era.
    fn listed_tool<'t>(&self, tool: &'t Tool) -> Cow<'t, Tool>;
}

/// [`Adapter::failure`] but for the one case the eras word differently: a handler that asked
/// for input where it may not.
pub(super) fn failure(
    e: HandlerError,
    input_required: impl FnOnce() -> ProtocolError,
) -> ProtocolError {
    e.into_protocol_error(input_required)
}
