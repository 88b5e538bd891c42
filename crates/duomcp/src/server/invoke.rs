//! Invoking what the application registered: a tool, a prompt, a resource, the completion
//! handler. The one place that checks a caller's scopes, a tool's input (and output) schema and
//! a prompt's required arguments before the handler runs, for every era and for tasks alike
//! (a task runs its tool through [`call_tool`] too).

use super::context::Context;
use super::handler::{CallParts, ToolOutput};
use super::rejection::ExtractRejection;
use super::HandlerError;
use crate::era::ProtocolError;
use crate::jsonrpc::{self, IncomingRequest};
use crate::schema_check::SchemaViolation;
use duomcp_schema::methods::{self, RequestMethod};
use duomcp_schema::{
    CallToolResult, CompleteRequestParams, CompleteResult, GetPromptResult, ReadResourceResult,
};
use serde_json::{Map, Value};

/// Calls the tool `name`: unknown tools and bad arguments are refused as the spec says
/// (`-32602`, or an `isError` result), a handler's failure becomes an `isError` result, and a
/// structured result is checked against the tool's `outputSchema`.
///
/// A call that ends in an error (an `isError` result, or a result the server refuses) is
/// logged at `warn` with the tool's name and the error's text (at most
/// [`EXCERPT_CHARS`](crate::util::EXCERPT_CHARS) characters, control characters escaped):
/// otherwise the server's operator never sees it, only the client does.
pub(crate) async fn call_tool(
    ctx: &Context,
    name: &str,
    arguments: Option<Value>,
) -> Result<ToolOutput, HandlerError> {
    let result = run_tool(ctx, name, arguments).await;
    let failure = match &result {
        Ok(out) if out.is_error() => Some(out.error_text()),
        Err(HandlerError::Protocol(ProtocolError::Internal(message))) => Some(message.clone()),
        // Refusals of the request itself (unknown tool, scopes), input still to come and
        // cancellations are not the tool's failures.
        _ => None,
    };
    if let Some(text) = failure {
        tracing::warn!(
            tool = %crate::util::excerpt(name, crate::util::EXCERPT_CHARS),
            error = %crate::util::excerpt(&text, crate::util::EXCERPT_CHARS),
            "tool call failed"
        );
    }
    result
}

async fn run_tool(
    ctx: &Context,
    name: &str,
    arguments: Option<Value>,
) -> Result<ToolOutput, HandlerError> {
    let entry = ctx.shared().registry().tools.get(name).cloned();
    let Some(entry) = entry else {
        return Err(HandlerError::invalid_params(format!(
            "Unknown tool: {name}"
        )));
    };
    crate::server::principal::require_scopes(ctx.principal(), &entry.scopes)?;
    let args = match arguments {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v,
        Some(_) => {
            let tool = name.to_owned();
            return Ok(CallToolResult::from(ExtractRejection::ArgumentsNotObject { tool }).into());
        }
    };
    let refused = match entry.input.check(&args) {
        Ok(()) => None,
        Err(SchemaViolation::Mismatch(problems)) => Some(ExtractRejection::SchemaMismatch {
            tool: name.to_owned(),
            problems,
        }),
        Err(SchemaViolation::BadSchema(error)) => Some(ExtractRejection::InvalidSchema {
            tool: name.to_owned(),
            error,
        }),
    };
    if let Some(rejection) = refused {
        return Ok(CallToolResult::from(rejection).into());
    }
    let result = (entry.call)(CallParts {
        ctx: ctx.clone(),
        args,
        uri: None,
    })
    .await;
    match result {
        // A result serialized already is parsed only when there is a schema to check.
        Ok(out) if entry.output.is_none() || out.is_error() => Ok(out),
        Ok(out) => {
            let r = out.into_typed()?;
            if let Some(schema) = &entry.output {
                let problem = match &r.structured_content {
                    None => {
                        Some("it has an outputSchema but returned no structuredContent".to_owned())
                    }
                    Some(sc) => match schema.check(sc) {
                        Ok(()) => None,
                        Err(SchemaViolation::BadSchema(e)) => {
                            Some(format!("its outputSchema is invalid: {e}"))
                        }
                        Err(SchemaViolation::Mismatch(e)) => Some(format!(
                            "structuredContent does not match outputSchema: {e}"
                        )),
                    },
                };
                if let Some(p) = problem {
                    return Err(ProtocolError::Internal(format!(
                        "Tool `{name}` returned an invalid result: {p}"
                    ))
                    .into());
                }
            }
            Ok(r.into())
        }
        Err(HandlerError::Failed(e)) => Ok(CallToolResult::error_text(e.to_string()).into()),
        Err(e) => Err(e),
    }
}

/// Gets the prompt `name`, after checking its required arguments.
pub(crate) async fn get_prompt(
    ctx: &Context,
    name: &str,
    arguments: Option<Map<String, Value>>,
) -> Result<GetPromptResult, HandlerError> {
    let entry = ctx.shared().registry().prompts.get(name).cloned();
    let Some(entry) = entry else {
        return Err(HandlerError::invalid_params(format!(
            "Unknown prompt: {name}"
        )));
    };
    crate::server::principal::require_scopes(ctx.principal(), &entry.scopes)?;
    let args = arguments.unwrap_or_default();
    for arg in entry.prompt.arguments.iter().flatten() {
        if arg.required == Some(true) && !args.contains_key(&arg.name) {
            return Err(HandlerError::invalid_params(format!(
                "Missing required argument `{}` for prompt `{name}`",
                arg.name
            )));
        }
    }
    (entry.get)(CallParts {
        ctx: ctx.clone(),
        args: Value::Object(args),
        uri: None,
    })
    .await
}

/// Reads `uri`: a registered resource, a skill file, or the first template that matches it.
pub(crate) async fn read_resource(
    ctx: &Context,
    uri: &str,
) -> Result<ReadResourceResult, HandlerError> {
    #[cfg(feature = "skills")]
    {
        let shared = ctx.shared();
        let registered = shared.registry().resources.contains_key(uri);
        if !registered && shared.skills.enabled() {
            if let Some(r) = shared.skills.snapshot().await?.read(uri).await {
                return r.map_err(HandlerError::from);
            }
        }
    }
    let (read, vars, scopes) = {
        let reg = ctx.shared().registry();
        if let Some(e) = reg.resources.get(uri) {
            (e.read.clone(), Map::new(), e.scopes.clone())
        } else {
            let found = reg.templates.iter().find_map(|t| {
                t.matcher
                    .as_ref()?
                    .matches(uri)
                    .map(|vars| (t.read.clone(), vars, t.scopes.clone()))
            });
            match found {
                Some(f) => f,
                None => return Err(HandlerError::resource_not_found(uri)),
            }
        }
    };
    let scopes = crate::server::principal::expand_template_scopes(scopes, &vars);
    crate::server::principal::require_scopes(ctx.principal(), &scopes)?;
    read(CallParts {
        ctx: ctx.clone(),
        args: Value::Object(vars),
        uri: Some(uri.to_owned()),
    })
    .await
}

/// `completion/complete`, when a completion handler is registered (`-32601` otherwise).
pub(crate) async fn complete(
    ctx: &Context,
    req: &IncomingRequest,
) -> Result<CompleteResult, HandlerError> {
    let completion = ctx.shared().registry().completion.clone();
    let Some(completion) = completion else {
        return Err(ProtocolError::MethodNotFound(
            <methods::Complete as RequestMethod>::NAME.to_owned(),
        )
        .into());
    };
    let p: CompleteRequestParams = jsonrpc::parse_params(req.params.as_ref().map(|p| p.get()))
        .map_err(|e| ProtocolError::InvalidParams(e.message))?;
    completion(p, ctx.clone()).await
}
