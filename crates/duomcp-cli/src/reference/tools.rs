//! Tool fixtures shared by both revisions.

use super::{PNG_BASE64, WAV_BASE64};
use duomcp::schema::{
    CallToolResult, ContentBlock, CreateMessageRequestParams, ElicitRequestFormParams,
    ElicitRequestParams, EmbeddedResource, LoggingLevel, ResourceContents, SamplingMessage,
    SamplingMessageContentBlock, TextContent, TextResourceContents,
};
use duomcp::server::{Args, Context, HandlerError, ServerBuilder, ToolSpec};
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;

fn no_args(name: &str, description: &str) -> ToolSpec {
    ToolSpec::new(name)
        .description(description)
        .input_schema(json!({ "type": "object", "properties": {} }))
}

fn text_resource(uri: &str, mime: &str, text: &str) -> ContentBlock {
    ContentBlock::Resource(EmbeddedResource::new(ResourceContents::Text(
        TextResourceContents {
            uri: uri.into(),
            mime_type: Some(mime.into()),
            text: text.into(),
            ..Default::default()
        },
    )))
}

#[derive(Deserialize, schemars::JsonSchema)]
struct PromptArg {
    /// The prompt to send to the LLM.
    prompt: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct MessageArg {
    /// The message to show the user.
    message: String,
}

pub(super) fn register(b: ServerBuilder, scoped: bool) -> ServerBuilder {
    let simple_text = no_args("test_simple_text", "Returns a simple text response")
        .scopes(super::fixture_scopes(scoped, "test_simple_text"));
    b.tool(simple_text, || async {
        "This is a simple text response for testing."
    })
    .tool(no_args("test_image_content", "Returns an image"), || async { ContentBlock::image(PNG_BASE64, "image/png") })
    .tool(no_args("test_audio_content", "Returns audio"), || async { ContentBlock::audio(WAV_BASE64, "audio/wav") })
    .tool(no_args("test_embedded_resource", "Returns an embedded resource"), || async {
        text_resource("test://embedded-resource", "text/plain", "This is an embedded resource content.")
    })
    .tool(no_args("test_multiple_content_types", "Returns text, an image and a resource"), || async {
        vec![
            ContentBlock::text("Multiple content types test:"),
            ContentBlock::image(PNG_BASE64, "image/png"),
            text_resource("test://mixed-content-resource", "application/json", r#"{"test":"data","value":123}"#),
        ]
    })
    .tool(no_args("test_tool_with_logging", "Sends three log messages while it runs"), |ctx: Context| async move {
        ctx.log_to(LoggingLevel::Info, Some("test_tool_with_logging"), "Tool execution started").await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        ctx.log_to(LoggingLevel::Info, Some("test_tool_with_logging"), "Tool processing data").await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        ctx.log_to(LoggingLevel::Info, Some("test_tool_with_logging"), "Tool execution completed").await;
        "Tool with logging executed successfully"
    })
    .tool(no_args("test_logging_tool", "Logs at every level the client asked for"), |ctx: Context| async move {
        ctx.log(LoggingLevel::Info, "test_logging_tool ran").await;
        "Logged (if a level was requested)"
    })
    .tool(no_args("test_tool_with_progress", "Reports progress 0, 50, 100 of 100"), |ctx: Context| async move {
        for (i, p) in [0.0, 50.0, 100.0].into_iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            ctx.progress(p, Some(100.0), None).await;
        }
        "Tool with progress executed successfully"
    })
    .tool(no_args("test_error_handling", "Always fails"), || async {
        Err::<String, _>(HandlerError::msg("This tool intentionally returns an error for testing"))
    })
    .tool(
        ToolSpec::new("test_sampling").description("Asks the client's model to answer a prompt"),
        |ctx: Context, Args(a): Args<PromptArg>| async move {
            let params = CreateMessageRequestParams::new(
                vec![SamplingMessage::new(duomcp::schema::Role::User, SamplingMessageContentBlock::Text(TextContent::new(a.prompt)))],
                100,
            );
            let r = ctx.sample("sampling", params).await?;
            Ok::<_, HandlerError>(format!("LLM response: {}", first_text(&serde_json::to_value(&r.content).unwrap_or(Value::Null))))
        },
    )
    .tool(
        ToolSpec::new("test_elicitation").description("Asks the user for a username and an email"),
        |ctx: Context, Args(a): Args<MessageArg>| async move {
            let schema = json!({
                "type": "object",
                "properties": {
                    "username": { "type": "string", "description": "User's response" },
                    "email": { "type": "string", "description": "User's email address" }
                },
                "required": ["username", "email"]
            });
            let r = ctx.elicit("elicitation", form(a.message, schema)).await?;
            Ok::<_, HandlerError>(format!("User response: {}", json!({ "action": r.action, "content": r.content })))
        },
    )
    .tool(no_args("test_streaming_elicitation", "Asks the user for a name (no server→client requests in 2026-07-28)"), |ctx: Context| async move {
        let schema = json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] });
        let r = ctx.elicit("user_name", form("What is your name?".into(), schema)).await?;
        Ok::<_, HandlerError>(format!("Elicitation completed: action={:?}", r.action))
    })
    .tool(no_args("test_elicitation_sep1034_defaults", "Elicitation with defaults for every primitive type"), |ctx: Context| async move {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": { "type": "string", "default": "John Doe" },
                "age": { "type": "integer", "default": 30 },
                "score": { "type": "number", "default": 95.5 },
                "status": { "type": "string", "enum": ["active", "inactive", "pending"], "default": "active" },
                "verified": { "type": "boolean", "default": true }
            }
        });
        let r = ctx.elicit("defaults", form("Please review your profile".into(), schema)).await?;
        Ok::<_, HandlerError>(completed(&r))
    })
    .tool(no_args("test_elicitation_sep1330_enums", "Elicitation with every enum schema variant"), |ctx: Context| async move {
        let schema = json!({
            "type": "object",
            "properties": {
                "untitledSingle": { "type": "string", "enum": ["option1", "option2", "option3"] },
                "titledSingle": { "type": "string", "oneOf": [
                    { "const": "value1", "title": "First Option" },
                    { "const": "value2", "title": "Second Option" },
                    { "const": "value3", "title": "Third Option" }
                ] },
                "legacyEnum": { "type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"] },
                "untitledMulti": { "type": "array", "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
                "titledMulti": { "type": "array", "items": { "anyOf": [
                    { "const": "value1", "title": "First Choice" },
                    { "const": "value2", "title": "Second Choice" },
                    { "const": "value3", "title": "Third Choice" }
                ] } }
            }
        });
        let r = ctx.elicit("enums", form("Choose your options".into(), schema)).await?;
        Ok::<_, HandlerError>(completed(&r))
    })
    .tool(
        ToolSpec::new("json_schema_2020_12_tool").description("Tool with JSON Schema 2020-12 features").input_schema(json_schema_2020_12()),
        |Args(v): Args<Value>| async move { format!("Received: {v}") },
    )
    .tool(no_args("test_reconnection", "Closes its stream mid-call; the result arrives after the client reconnects"), |ctx: Context| async move {
        ctx.close_sse_stream().await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        "Reconnection test completed"
    })
    .tool(no_args("test_missing_capability", "Needs the client's sampling capability"), |ctx: Context| async move {
        let params = CreateMessageRequestParams::new(
            vec![SamplingMessage::new(duomcp::schema::Role::User, SamplingMessageContentBlock::Text(TextContent::new("Say hi")))],
            10,
        );
        let r = ctx.sample("hi", params).await?;
        Ok::<_, HandlerError>(CallToolResult::new(vec![ContentBlock::text(format!("model said: {:?}", r.model))]))
    })
    // The extensions fixture (`server-legacy-extensions`): what the client declared, as this
    // server read it, so that a capability lost in either direction shows.
    .tool(
        no_args("test_legacy_extension_capabilities", "Returns the extensions the client declared, as JSON text"),
        |ctx: Context| async move {
            let extensions = ctx.client_capabilities().extensions.clone().unwrap_or_default();
            json!({ "extensions": extensions }).to_string()
        },
    )
    .tool(
        ToolSpec::new("test_custom_header").description("Echoes a region that travels in the Mcp-Param-Region header").input_schema(json!({
            "type": "object",
            "properties": { "region": { "type": "string", "x-mcp-header": "Region" }, "count": { "type": "integer", "x-mcp-header": "Count" } },
            "required": ["region"]
        })),
        |Args(v): Args<Value>| async move { format!("region={}", v.get("region").and_then(Value::as_str).unwrap_or_default()) },
    )
    // Named changes: with several replicas (`--redis`), every replica applies them, so a
    // client re-listing after the list_changed sees the new entry wherever it lands.
    .change("add_dynamic_tool", |server, _| {
        server.add_tool(no_args("test_dynamic_tool", "Added at run time"), || async { "dynamic" });
    })
    .change("add_dynamic_prompt", |server, _| {
        server.add_prompt(duomcp::server::PromptSpec::new("test_dynamic_prompt").description("Added at run time"), || async {
            "dynamic prompt".to_owned()
        });
    })
    .tool(no_args("test_trigger_tool_change", "Adds a tool at run time (tools list_changed)"), |ctx: Context| async move {
        ctx.server().apply_change("add_dynamic_tool", Value::Null);
        "tools changed"
    })
    .tool(no_args("test_trigger_prompt_change", "Adds a prompt at run time (prompts list_changed)"), |ctx: Context| async move {
        ctx.server().apply_change("add_dynamic_prompt", Value::Null);
        "prompts changed"
    })
}

pub(super) fn form(message: String, schema: Value) -> ElicitRequestParams {
    let requested_schema = serde_json::from_value(schema).unwrap_or_default();
    ElicitRequestParams::Form(ElicitRequestFormParams::new(message, requested_schema))
}

fn completed(r: &duomcp::schema::ElicitResult) -> String {
    let action = serde_json::to_value(r.action).unwrap_or(Value::Null);
    format!(
        "Elicitation completed: action={}, content={}",
        action.as_str().unwrap_or("?"),
        json!(r.content)
    )
}

pub(super) fn first_text(content: &Value) -> String {
    let block = if content.is_array() {
        content.get(0)
    } else {
        Some(content)
    };
    block
        .and_then(|b| b.get("text"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
            }
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" }
        },
        "allOf": [ { "anyOf": [ { "required": ["phone"] }, { "required": ["email"] } ] } ],
        "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false
    })
}
