//! 2026-07-28 multi-round-trip fixtures (`InputRequiredResult`). The same handlers work in
//! 2025-11-25, where `ctx.elicit` and friends are real server→client requests.

use super::tools::{first_text, form};
use duomcp::schema::{
    CreateMessageRequestParams, SamplingMessage, SamplingMessageContentBlock, TextContent,
};
use duomcp::server::{Context, HandlerError, ServerBuilder, ToolSpec};
use serde_json::{json, Value};

fn no_args(name: &str, description: &str) -> ToolSpec {
    ToolSpec::new(name)
        .description(description)
        .input_schema(json!({ "type": "object", "properties": {} }))
}

fn name_schema(field: &str) -> Value {
    json!({ "type": "object", "properties": { field: { "type": "string" } }, "required": [field] })
}

fn ask(text: &str, max_tokens: u64) -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(
        vec![SamplingMessage::new(
            duomcp::schema::Role::User,
            SamplingMessageContentBlock::Text(TextContent::new(text)),
        )],
        max_tokens,
    )
}

fn field(content: &Option<serde_json::Map<String, Value>>, key: &str) -> String {
    content
        .as_ref()
        .and_then(|c| c.get(key))
        .map(|v| {
            v.as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| v.to_string())
        })
        .unwrap_or_default()
}

pub(super) fn register(b: ServerBuilder) -> ServerBuilder {
    b.tool(no_args("test_input_required_result_elicitation", "Asks for the user's name"), |ctx: Context| async move {
        let r = ctx.elicit("user_name", form("What is your name?".into(), name_schema("name"))).await?;
        Ok::<_, HandlerError>(format!("Hello, {}!", field(&r.content, "name")))
    })
    .tool(no_args("test_input_required_result_sampling", "Asks the client's model a question"), |ctx: Context| async move {
        let r = ctx.sample("capital_question", ask("What is the capital of France?", 100)).await?;
        let content = serde_json::to_value(&r.content).unwrap_or(Value::Null);
        Ok::<_, HandlerError>(format!("The model answered: {}", first_text(&content)))
    })
    .tool(no_args("test_input_required_result_list_roots", "Asks for the client's roots"), |ctx: Context| async move {
        let r = ctx.list_roots("client_roots").await?;
        let uris: Vec<&str> = r.roots.iter().map(|root| root.uri.as_str()).collect();
        Ok::<_, HandlerError>(format!("Client roots: {}", uris.join(", ")))
    })
    .tool(no_args("test_input_required_result_request_state", "Round-trips requestState"), |ctx: Context| async move {
        ctx.set_request_state(json!({ "phase": "confirm" }));
        let schema = json!({ "type": "object", "properties": { "ok": { "type": "boolean" } }, "required": ["ok"] });
        let r = ctx.elicit("confirm", form("Please confirm".into(), schema)).await?;
        let state: Option<Value> = ctx.request_state();
        let verified = state.as_ref().and_then(|s| s.get("phase")).and_then(Value::as_str) == Some("confirm");
        if !verified {
            return Err(HandlerError::invalid_params("requestState did not come back"));
        }
        Ok(format!("state-ok: confirmed={}", field(&r.content, "ok")))
    })
    .tool(no_args("test_input_required_result_multiple_inputs", "Asks for three inputs at once"), |ctx: Context| async move {
        // Asked together (in 2025-11-25 too: three requests in flight at once).
        let (name, greeting, roots) = tokio::join!(
            ctx.elicit("user_name", form("What is your name?".into(), name_schema("name"))),
            ctx.sample("greeting", ask("Generate a greeting", 50)),
            ctx.list_roots("client_roots"),
        );
        let (name, greeting, roots) = (name?, greeting?, roots?);
        let greeting = first_text(&serde_json::to_value(&greeting.content).unwrap_or(Value::Null));
        Ok::<_, HandlerError>(format!("{greeting} {} ({} roots)", field(&name.content, "name"), roots.roots.len()))
    })
    .tool(no_args("test_input_required_result_multi_round", "Asks in two rounds"), |ctx: Context| async move {
        let step1 = ctx.elicit("step1", form("Step 1: What is your name?".into(), name_schema("name"))).await?;
        let step2 = ctx.elicit("step2", form("Step 2: What is your favorite color?".into(), name_schema("color"))).await?;
        Ok::<_, HandlerError>(format!("{} likes {}", field(&step1.content, "name"), field(&step2.content, "color")))
    })
    .tool(no_args("test_input_required_result_tampered_state", "Rejects a tampered requestState"), |ctx: Context| async move {
        let schema = json!({ "type": "object", "properties": { "ok": { "type": "boolean" } }, "required": ["ok"] });
        ctx.set_request_state(json!({ "guard": true }));
        ctx.elicit("confirm", form("Please confirm".into(), schema)).await?;
        Ok::<_, HandlerError>("state verified")
    })
    .tool(no_args("test_input_required_result_capabilities", "Asks only for what the client can give"), |ctx: Context| async move {
        let caps = ctx.client_capabilities().clone();
        let mut parts = Vec::new();
        let elicit = if caps.elicitation.is_some() { Some(ctx.elicit("user_name", form("What is your name?".into(), name_schema("name"))).await) } else { None };
        let sample = if caps.sampling.is_some() { Some(ctx.sample("capital_question", ask("What is the capital of France?", 100)).await) } else { None };
        let roots = if caps.roots.is_some() { Some(ctx.list_roots("client_roots").await) } else { None };
        if let Some(r) = elicit {
            parts.push(format!("name={}", field(&r?.content, "name")));
        }
        if let Some(r) = sample {
            parts.push(format!("answer={}", first_text(&serde_json::to_value(&r?.content).unwrap_or(Value::Null))));
        }
        if let Some(r) = roots {
            parts.push(format!("roots={}", r?.roots.len()));
        }
        Ok::<_, HandlerError>(if parts.is_empty() { "no input capabilities declared".to_owned() } else { parts.join(", ") })
    })
}
