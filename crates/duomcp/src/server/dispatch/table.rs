//! The method table: every method both revisions have, written once against the era
//! [`Adapter`] surface. Adding a method both revisions share is one arm here.
//!
//! A request reaches [`run`] with its era known; the era's adapter admits it (and builds its
//! [`Context`](crate::server::Context)), the arm of its method runs the application through
//! [`invoke`], and the adapter shapes the outcome. Methods of one era only are the adapter's
//! ([`Adapter::own_method`]); skills, an extension of both, come last.

use super::adapter::{Adapter, Target, ToolCall};
use super::{error_reply, lists, ReadMeta, Reply, RequestEnv};
use crate::era::ProtocolError;
use crate::jsonrpc::IncomingRequest;
use crate::server::invoke;
use crate::server::params::ParamsIndex;
#[cfg(feature = "skills")]
use crate::server::skills;
use crate::server::Shared;
use duomcp_schema::methods::{self, RequestMethod};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::sync::Arc;

/// Runs one request of era `A` through the table.
pub(super) async fn run<A: Adapter>(
    shared: &Arc<Shared>,
    req: &IncomingRequest,
    params: &ParamsIndex<'_>,
    meta: ReadMeta<'_>,
    env: RequestEnv,
) -> Reply {
    let id = &req.id;
    let method = req.method.as_str();
    let (a, ctx) = match A::admit(shared, req, params, meta, env) {
        Ok(admitted) => admitted,
        Err(answer) => return answer,
    };
    let config = &shared.config;
    let outcome: Result<Reply, ProtocolError> = async {
        Ok(match method {
            m if m == <methods::ListTools as RequestMethod>::NAME => {
                lists::tools(shared, req, &a, config.tools_cache, &ctx)?
            }
            m if m == <methods::ListPrompts as RequestMethod>::NAME => {
                lists::prompts(shared, req, &a, config.prompts_cache)?
            }
            m if m == <methods::ListResources as RequestMethod>::NAME => {
                Box::pin(lists::resources(shared, req, &a, config.resources_cache)).await?
            }
            m if m == <methods::ListResourceTemplates as RequestMethod>::NAME => {
                lists::templates(shared, req, &a, config.resources_cache)?
            }
            m if m == <methods::CallTool as RequestMethod>::NAME => {
                let p: CallParams = params.parse()?;
                let arguments = params.get("arguments");
                let target = Target::Call {
                    name: &p.name,
                    arguments,
                };
                let state = p.request_state.as_deref();
                a.restore_input(&ctx, method, target, state, p.input_responses)?;
                let (ctx, r) = match a.call_tool(ctx, &p.name, p.arguments, p.task).await? {
                    ToolCall::Task(created) => return Ok(created),
                    ToolCall::Ran(ctx, r) => (ctx, r),
                };
                let is_error = matches!(&r, Ok(r) if r.is_error());
                let reply = a.finish(&ctx, id, method, target, r, None)?;
                Reply { is_error, ..reply }
            }
            m if m == <methods::GetPrompt as RequestMethod>::NAME => {
                let p: GetPromptParams = params.parse()?;
                let state = p.request_state.as_deref();
                let target = Target::Call {
                    name: &p.name,
                    arguments: params.get("arguments"),
                };
                a.restore_input(&ctx, method, target, state, p.input_responses)?;
                let r = Box::pin(invoke::get_prompt(&ctx, &p.name, p.arguments)).await;
                a.finish(&ctx, id, method, target, r, None)?
            }
            m if m == <methods::ReadResource as RequestMethod>::NAME => {
                let p: ReadParams = params.parse()?;
                let state = p.request_state.as_deref();
                let target = Target::Named(&p.uri);
                a.restore_input(&ctx, method, target, state, p.input_responses)?;
                let r = Box::pin(invoke::read_resource(&ctx, &p.uri)).await;
                a.finish(&ctx, id, method, target, r, Some(config.read_cache))?
            }
            m if m == <methods::Complete as RequestMethod>::NAME => {
                match Box::pin(invoke::complete(&ctx, req)).await {
                    Ok(r) => a.shape(shared, id, &r, None)?,
                    Err(e) => return Err(a.failure(e)),
                }
            }
            other => {
                if let Some(r) = a.own_method(&ctx, req, params).await {
                    return r;
                }
                #[cfg(feature = "events")]
                {
                    let params = req.params.as_ref().map(|p| p.get());
                    let hub = &shared.event_hub;
                    let r = crate::server::events::handle(hub, &ctx, other, params);
                    if let Some(r) = Box::pin(r).await {
                        return a.shape(shared, id, &r?, None);
                    }
                }
                #[cfg(feature = "skills")]
                {
                    let params = req.params.as_ref().map(|p| p.get());
                    let skill = skills::handle(&shared.skills, config, other, params);
                    if let Some(r) = Box::pin(skill).await {
                        let (r, cache) = r?;
                        return a.shape(shared, id, &r, cache);
                    }
                }
                return Err(ProtocolError::MethodNotFound(other.to_owned()));
            }
        })
    }
    .await;
    outcome.unwrap_or_else(|e| error_reply(A::ERA, id, e))
}

// ---------------------------------------------------------------------------------------------
// The params of the table's methods as the server reads them: only the fields it uses, parsed
// once.

#[derive(Deserialize)]
struct CallParams<'a> {
    /// Borrowed from the request unless it has escapes.
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default)]
    arguments: Option<Value>,
    /// 2025-11-25 task augmentation; ignored in 2026-07-28.
    #[serde(default)]
    task: Option<Value>,
    #[serde(rename = "inputResponses", default)]
    input_responses: Option<Map<String, Value>>,
    #[serde(rename = "requestState", default)]
    request_state: Option<String>,
}

#[derive(Deserialize)]
struct GetPromptParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
    #[serde(rename = "inputResponses", default)]
    input_responses: Option<Map<String, Value>>,
    #[serde(rename = "requestState", default)]
    request_state: Option<String>,
}

#[derive(Deserialize)]
struct ReadParams<'a> {
    #[serde(borrow)]
    uri: Cow<'a, str>,
    #[serde(rename = "inputResponses", default)]
    input_responses: Option<Map<String, Value>>,
    #[serde(rename = "requestState", default)]
    request_state: Option<String>,
}
