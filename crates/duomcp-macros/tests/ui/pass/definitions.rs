//! Every attribute and argument, registered through the builder.
use duomcp::server::{Args, Context, HandlerError, Json, Server, State, Uri};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sum {
    total: i64,
}

#[derive(Clone)]
struct Offset(i64);

/// Adds two integers.
///
/// Then adds the offset.
#[duomcp::tool(title = "Adder", read_only, destructive = false, idempotent, open_world = false)]
async fn add(
    ctx: Context,
    State(Offset(offset)): State<Offset>,
    Args(Add { a, b }): Args<Add>,
) -> Result<Json<Sum>, HandlerError> {
    let _ = ctx.protocol_version();
    Ok(Json(Sum { total: a + b + offset }))
}

#[duomcp::tool(name = "r.now", description = "The time.")]
async fn r#now() -> &'static str {
    "12:00"
}

/// No result at all.
#[duomcp::tool(scopes = [])]
pub async fn forget() {}

/// A handler written without `async`.
#[duomcp::tool]
fn later() -> impl std::future::Future<Output = String> + Send {
    async { "later".to_owned() }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Topic {
    /// What to write about.
    topic: String,
}

/// Writes a haiku.
#[duomcp::prompt(title = "Haiku", scopes = ["poetry", "poetry:haiku"])]
async fn haiku(Args(Topic { topic }): Args<Topic>) -> String {
    format!("Write a haiku about {topic}.")
}

/// The readme.
#[duomcp::resource(uri = "file:///readme.md", mime_type = "text/markdown", title = "Readme")]
async fn readme(Uri(uri): Uri) -> String {
    format!("# {uri}")
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Id {
    id: String,
}

#[duomcp::resource(template = "note://{id}", name = "note", description = "A note.")]
async fn note(Args(Id { id }): Args<Id>) -> Result<String, HandlerError> {
    Ok(format!("note {id}"))
}

fn main() {
    let spec = add::spec();
    assert_eq!(spec.name(), "add");
    assert_eq!(r#now::spec().name(), "r.now");
    assert_eq!(haiku::spec().name(), "haiku");
    assert_eq!(readme::spec().uri, "file:///readme.md");
    assert_eq!(readme::spec().mime_type.as_deref(), Some("text/markdown"));
    assert_eq!(note::spec().uri_template, "note://{id}");
    assert_eq!(note::spec().description.as_deref(), Some("A note."));

    let _server = Server::builder()
        .state(Offset(1))
        .tool(add::spec(), add)
        .tool(r#now::spec(), r#now)
        .tool(forget::spec(), forget)
        .tool(later::spec(), later)
        .prompt(haiku::spec(), haiku)
        .resource(readme::spec(), readme)
        .resource_template(note::spec(), note)
        .build();
}
