//! Prompt fixtures.

use super::tools::form;
use super::PNG_BASE64;
use duomcp::schema::{
    ContentBlock, EmbeddedResource, PromptMessage, ResourceContents, Role, TextResourceContents,
};
use duomcp::server::{Args, Context, HandlerError, PromptSpec, ServerBuilder};
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Deserialize, schemars::JsonSchema)]
struct TwoArgs {
    /// First test argument.
    arg1: String,
    /// Second test argument.
    arg2: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct ResourceArg {
    /// URI of the resource to embed.
    #[serde(rename = "resourceUri")]
    resource_uri: String,
}

fn message(content: ContentBlock) -> PromptMessage {
    PromptMessage::new(Role::User, content)
}

pub(super) fn register(b: ServerBuilder, scoped: bool) -> ServerBuilder {
    let simple = PromptSpec::new("test_simple_prompt")
        .description("A simple prompt without arguments")
        .scopes(super::fixture_scopes(scoped, "test_simple_prompt"));
    b.prompt(simple, || async {
        "This is a simple prompt for testing.".to_owned()
    })
    .prompt(
        PromptSpec::new("test_prompt_with_arguments").description("A prompt with two required arguments"),
        |Args(a): Args<TwoArgs>| async move { format!("Prompt with arguments: arg1='{}', arg2='{}'", a.arg1, a.arg2) },
    )
    .prompt(
        PromptSpec::new("test_prompt_with_embedded_resource").description("A prompt embedding a resource"),
        |Args(a): Args<ResourceArg>| async move {
            let resource = ResourceContents::Text(TextResourceContents {
                uri: a.resource_uri,
                mime_type: Some("text/plain".into()),
                text: "Embedded resource content for testing.".into(),
                ..Default::default()
            });
            vec![
                message(ContentBlock::Resource(EmbeddedResource::new(resource))),
                message(ContentBlock::text("Please process the embedded resource above.")),
            ]
        },
    )
    .prompt(PromptSpec::new("test_prompt_with_image").description("A prompt with an image"), || async {
        vec![message(ContentBlock::image(PNG_BASE64, "image/png")), message(ContentBlock::text("Please analyze the image above."))]
    })
    .prompt(
        PromptSpec::new("test_input_required_result_prompt").description("A prompt that asks the user for context first"),
        |ctx: Context| async move {
            let schema = json!({ "type": "object", "properties": { "context": { "type": "string" } }, "required": ["context"] });
            let r = ctx.elicit("user_context", form("What context should the prompt use?".into(), schema)).await?;
            let context = r.content.as_ref().and_then(|c| c.get("context")).and_then(Value::as_str).unwrap_or_default().to_owned();
            Ok::<_, HandlerError>(format!("Use this context: {context}"))
        },
    )
}
