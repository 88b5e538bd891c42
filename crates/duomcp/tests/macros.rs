//! `#[tool]`, `#[prompt]` and `#[resource]` at run time: what a client sees of the definitions
//! they produce (names, doc-comment descriptions, titles, hints, schemas), over an in-memory
//! connection. Compile-time behaviour (errors, hygiene) is pinned in `duomcp-macros/tests/ui`.

#![cfg(feature = "macros")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use duomcp::client::Client;
use duomcp::server::{Args, Context, HandlerError, Json, Server, Uri};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    /// The first addend.
    a: i64,
    b: i64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sum {
    total: i64,
}

/// Adds two integers.
///
/// Overflow wraps.
#[duomcp::tool(title = "Adder", read_only, destructive = false, open_world = false)]
async fn add(Args(Add { a, b }): Args<Add>) -> Result<Json<Sum>, HandlerError> {
    Ok(Json(Sum {
        total: a.wrapping_add(b),
    }))
}

/// Ignored: the attribute's description wins.
#[duomcp::tool(name = "clock.now", description = "The time.")]
async fn now(_ctx: Context) -> &'static str {
    "12:00"
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Topic {
    /// What the poem is about.
    topic: String,
    /// How many lines.
    lines: Option<u8>,
}

/// Asks for a short poem.
#[duomcp::prompt(title = "Poem")]
async fn poem(Args(Topic { topic, lines }): Args<Topic>) -> String {
    format!("Write {} lines about {topic}.", lines.unwrap_or(3))
}

/// The changelog.
#[duomcp::resource(
    uri = "docs://changelog",
    mime_type = "text/markdown",
    title = "Changes"
)]
async fn changelog(Uri(uri): Uri) -> String {
    format!("# {uri}")
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Page {
    n: String,
}

/// A page of the manual.
#[duomcp::resource(template = "docs://manual/{n}", name = "manual")]
async fn manual(Args(Page { n }): Args<Page>) -> String {
    format!("page {n}")
}

async fn connect(server: Server) -> Client {
    let (transport, _serving) = duomcp::transport::memory::pair(server);
    Client::builder()
        .connect_transport(transport)
        .await
        .unwrap()
}

fn server() -> Server {
    Server::builder()
        .tool(add::spec(), add)
        .tool(now::spec(), now)
        .prompt(poem::spec(), poem)
        .resource(changelog::spec(), changelog)
        .resource_template(manual::spec(), manual)
        .build()
}

#[tokio::test]
async fn tools_carry_their_docs_attributes_and_schemas() {
    let client = connect(server()).await;
    let tools = client.list_all_tools().await.unwrap();
    let add = tools.iter().find(|t| t.name == "add").unwrap();
    assert_eq!(
        add.description.as_deref(),
        Some("Adds two integers.\n\nOverflow wraps.")
    );
    assert_eq!(add.title.as_deref(), Some("Adder"));
    let hints = serde_json::to_value(add.annotations.as_ref().unwrap()).unwrap();
    assert_eq!(
        hints,
        json!({ "readOnlyHint": true, "destructiveHint": false, "openWorldHint": false })
    );
    assert_eq!(
        add.input_schema["properties"]["a"]["description"],
        "The first addend."
    );
    assert_eq!(add.input_schema["required"], json!(["a", "b"]));
    let output = add.output_schema.as_ref().expect("Json<Sum> implies one");
    assert_eq!(output["required"], json!(["total"]));

    let now = tools.iter().find(|t| t.name == "clock.now").unwrap();
    assert_eq!(now.description.as_deref(), Some("The time."));
    assert!(now.annotations.is_none());

    let sum = client
        .call_tool("add", json!({ "a": 2, "b": 3 }))
        .await
        .unwrap();
    assert_eq!(sum.structured_content, Some(json!({ "total": 5 })));
    let time = client.call_tool("clock.now", json!({})).await.unwrap();
    assert_eq!(time.content[0].as_text(), Some("12:00"));
}

#[tokio::test]
async fn prompts_and_resources_carry_their_docs_and_attributes() {
    let client = connect(server()).await;

    let prompts = client.list_all_prompts().await.unwrap();
    assert_eq!(prompts[0].name, "poem");
    assert_eq!(prompts[0].title.as_deref(), Some("Poem"));
    assert_eq!(
        prompts[0].description.as_deref(),
        Some("Asks for a short poem.")
    );
    let args = serde_json::to_value(prompts[0].arguments.as_ref().unwrap()).unwrap();
    assert_eq!(
        args,
        json!([
            { "name": "topic", "description": "What the poem is about.", "required": true },
            { "name": "lines", "description": "How many lines.", "required": false }
        ])
    );

    let resources = client.list_all_resources().await.unwrap();
    let r = serde_json::to_value(&resources[0]).unwrap();
    assert_eq!(
        r,
        json!({
            "uri": "docs://changelog", "name": "changelog", "title": "Changes",
            "description": "The changelog.", "mimeType": "text/markdown"
        })
    );
    let templates = client.list_all_resource_templates().await.unwrap();
    assert_eq!(templates[0].name, "manual");
    assert_eq!(
        templates[0].description.as_deref(),
        Some("A page of the manual.")
    );

    let read = client.read_resource("docs://manual/4").await.unwrap();
    assert_eq!(
        serde_json::to_value(&read.contents[0]).unwrap()["text"],
        "page 4"
    );
}

#[tokio::test]
async fn specs_are_values_the_builder_api_still_edits() {
    let server = Server::builder().build();
    server.add_tool(add::spec().title("Renamed").description("Edited."), add);
    let client = connect(server.clone()).await;
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools[0].title.as_deref(), Some("Renamed"));
    assert_eq!(tools[0].description.as_deref(), Some("Edited."));
    assert!(server.remove_tool(add::spec().name()));
    // The same function registers without the macro's spec too.
    server.add_tool("plus", add);
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools[0].name, "plus");
    assert_eq!(tools[0].description, None);
}

/// Deletes a file (pretend).
#[duomcp::tool(scopes = ["files:read", "files:write"])]
async fn delete_file() -> &'static str {
    "deleted"
}

/// A prompt only administrators get.
#[duomcp::prompt(scopes = ["admin"])]
async fn audit() -> String {
    "Audit everything.".into()
}

/// Answers one 2026-07-28 request without a connection, hence without a caller.
async fn anonymous(server: &Server, method: &str, params: serde_json::Value) -> serde_json::Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let request = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let out = server
        .respond(&serde_json::to_vec(&request).unwrap())
        .await
        .unwrap();
    serde_json::from_slice(&out).unwrap()
}

#[tokio::test]
async fn scopes_in_the_attribute_guard_the_handler() {
    let server = Server::builder()
        .tool(delete_file::spec(), delete_file)
        .tool(now::spec(), now)
        .prompt(audit::spec(), audit)
        .build();

    // No caller: the scoped tool and prompt are refused, naming every scope they need.
    let refused = anonymous(&server, "tools/call", json!({ "name": "delete_file" })).await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredScopes"],
        json!(["files:read", "files:write"])
    );
    let refused = anonymous(&server, "prompts/get", json!({ "name": "audit" })).await;
    assert_eq!(
        refused["error"]["data"]["requiredScopes"],
        json!(["admin"]),
        "{refused}"
    );
    // The unscoped tool answers anyone.
    let open = anonymous(&server, "tools/call", json!({ "name": "clock.now" })).await;
    assert_eq!(open["result"]["content"][0]["text"], "12:00", "{open}");

    // Over stdio the caller is the local user, who holds every scope.
    let client = connect(server).await;
    let r = client.call_tool("delete_file", json!({})).await.unwrap();
    assert_eq!(
        serde_json::to_value(&r.content[0]).unwrap()["text"],
        "deleted"
    );
}
