//! Resource fixtures and completion.

use super::PNG_BASE64;
use duomcp::schema::{
    BlobResourceContents, CompleteResult, Resource, ResourceContents, ResourceTemplate,
    TextResourceContents,
};
use duomcp::server::{Args, ResourceSpec, ServerBuilder, TemplateSpec, Uri};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, schemars::JsonSchema)]
struct Id {
    id: String,
}

fn resource(uri: &str, name: &str, description: &str, mime: &str) -> Resource {
    let mut r = Resource::new(uri, name);
    r.description = Some(description.into());
    r.mime_type = Some(mime.into());
    r
}

pub(super) fn register(b: ServerBuilder, scoped: bool) -> ServerBuilder {
    let mut template = ResourceTemplate::new("test://template/{id}/data", "template");
    template.description = Some("Data for any id".into());
    template.mime_type = Some("application/json".into());
    let template = TemplateSpec::from(template)
        .scopes(super::fixture_scopes(scoped, "test://template/{id}/data"));
    let static_text = ResourceSpec::from(resource(
        "test://static-text",
        "static-text",
        "A static text resource",
        "text/plain",
    ))
    .scopes(super::fixture_scopes(scoped, "test://static-text"));
    b.resource(static_text, || async {
        "This is the content of the static text resource.".to_owned()
    })
    .resource(
        resource(
            "test://static-binary",
            "static-binary",
            "A static binary resource (PNG)",
            "image/png",
        ),
        |Uri(uri): Uri| async move {
            ResourceContents::Blob(BlobResourceContents {
                uri,
                mime_type: Some("image/png".into()),
                blob: PNG_BASE64.into(),
                ..Default::default()
            })
        },
    )
    .resource(
        resource(
            "test://watched-resource",
            "watched-resource",
            "A resource to subscribe to",
            "text/plain",
        ),
        || async { "Watched resource content.".to_owned() },
    )
    .resource_template(
        template,
        |Uri(uri): Uri, Args(Id { id }): Args<Id>| async move {
            let text =
                json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") })
                    .to_string();
            ResourceContents::Text(TextResourceContents {
                uri,
                mime_type: Some("application/json".into()),
                text,
                ..Default::default()
            })
        },
    )
    .completion(|params, _ctx| async move {
        let value = params.argument.value.to_lowercase();
        let candidates = ["paris", "park", "party", "test", "testValue1"];
        let values: Vec<String> = candidates
            .iter()
            .filter(|c| c.to_lowercase().starts_with(&value))
            .map(|c| (*c).to_owned())
            .collect();
        Ok(CompleteResult::new(values))
    })
}
