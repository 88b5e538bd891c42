//! A stdio server with one of everything: typed tools (structured output, progress, logging,
//! shared state), a prompt, a resource and a resource template, all defined with the macros.
//!
//! | ↔ | method | what it does |
//! |---|---|---|
//! | ↔ | `initialize` / `notifications/initialized` | the 2025-11-25 handshake (2026-07-28 needs none) |
//! | ← | `server/discover` | 2026-07-28: versions, capabilities, server info |
//! | ← | `tools/list` | `add`, `countdown`, `visits` |
//! | ← | `tools/call` `add` | `{"a":2,"b":3}` → `structuredContent: {"sum":5}` (schema from `Sum`) |
//! | ← | `tools/call` `countdown` | `{"from":3}` → progress and log notifications, then `liftoff` |
//! | ← | `tools/call` `visits` | counts calls in shared `State` |
//! | ← | `prompts/list`, `prompts/get` `review` | a user message asking to review `code` |
//! | ← | `resources/list`, `resources/read` `memo://readme` | a fixed text resource |
//! | ← | `resources/templates/list`, `resources/read` `memo://notes/{id}` | a note by number |
//! | → | `notifications/progress`, `notifications/message` | sent by `countdown` when asked for |
//!
//! ```text
//! $ cargo run -q -p duomcp --example stdio_server
//! # 1. 2025-11-25: initialize; once answered, initialized (no answer), then call
//! {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sh","version":"0"}}}
//! # ← {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{…},"serverInfo":{"name":"stdio-example","version":"1.0.0"},"instructions":"…"}}
//! {"jsonrpc":"2.0","method":"notifications/initialized"}
//! {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}
//! # ← {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"{\"sum\":5}"}],"structuredContent":{"sum":5}}}
//! # 2. progress: give a token, get notifications before the result
//! {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"countdown","arguments":{"from":2},"_meta":{"progressToken":"t"}}}
//! # ← {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1.0,"total":2.0,"message":"2"}}
//! # ← {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":2.0,"total":2.0,"message":"1"}}
//! # ← {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"liftoff"}]}}
//! # 3. a template, and a URI it matches but that does not exist
//! {"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"memo://notes/7"}}
//! # ← {"jsonrpc":"2.0","id":4,"result":{"contents":[{"uri":"memo://notes/7","mimeType":"text/plain","text":"Note 7: buy milk"}]}}
//! {"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"memo://notes/8"}}
//! # ← {"jsonrpc":"2.0","id":5,"error":{"code":-32002,"message":"Resource not found: memo://notes/8","data":{"uri":"memo://notes/8"}}}
//! ```
//!
//! A 2026-07-28 client sends no handshake; every request carries its version and
//! capabilities in `_meta` (see the `quickstart` example).

use duomcp::schema::LoggingLevel;
use duomcp::server::{Args, Context, HandlerError, Json, Server, State, Uri};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sum {
    sum: i64,
}

/// Adds two integers.
#[duomcp::tool(read_only, idempotent, open_world = false)]
async fn add(Args(Add { a, b }): Args<Add>) -> Json<Sum> {
    Json(Sum { sum: a + b })
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Countdown {
    /// Where to count down from (at most 10).
    from: u32,
}

/// Counts down, reporting progress and logging each step; stops early when cancelled.
#[duomcp::tool(title = "Countdown")]
async fn countdown(
    ctx: Context,
    Args(Countdown { from }): Args<Countdown>,
) -> Result<&'static str, HandlerError> {
    let from = from.min(10);
    for (done, left) in (1..=from).rev().enumerate() {
        if ctx.is_cancelled() {
            return Err(HandlerError::Cancelled);
        }
        ctx.log(LoggingLevel::Info, format!("{left}…")).await;
        let step = (done + 1) as f64;
        ctx.progress(step, Some(from as f64), Some(left.to_string()))
            .await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok("liftoff")
}

/// Shared by every call and every connection: registered once with `ServerBuilder::state`.
#[derive(Clone, Default)]
struct Visits(Arc<AtomicU64>);

/// Counts how often it was called since the server started.
#[duomcp::tool]
async fn visits(State(Visits(count)): State<Visits>) -> String {
    let n = count.fetch_add(1, Ordering::Relaxed) + 1;
    format!("visit #{n}")
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Review {
    /// The code to review.
    code: String,
}

/// Asks the model for a code review.
#[duomcp::prompt(title = "Code review")]
async fn review(Args(Review { code }): Args<Review>) -> String {
    format!("Please review this code and list its bugs:\n\n{code}")
}

/// What this server is for.
#[duomcp::resource(uri = "memo://readme", mime_type = "text/markdown")]
async fn readme() -> String {
    "# Memo\n\nNotes live at `memo://notes/{id}`.".to_owned()
}

/// A template's variables, by name; they arrive as strings.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoteId {
    id: String,
}

/// A note, by number.
#[duomcp::resource(
    template = "memo://notes/{id}",
    name = "note",
    mime_type = "text/plain"
)]
async fn note(Uri(uri): Uri, Args(NoteId { id }): Args<NoteId>) -> Result<String, HandlerError> {
    match id.as_str() {
        "7" => Ok("Note 7: buy milk".to_owned()),
        _ => Err(HandlerError::resource_not_found(uri)),
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    Server::builder()
        .name("stdio-example")
        .version("1.0.0")
        .instructions("Call `add` to add numbers; read `memo://readme` first.")
        .state(Visits::default())
        .tool(add::spec(), add)
        .tool(countdown::spec(), countdown)
        .tool(visits::spec(), visits)
        .prompt(review::spec(), review)
        .resource(readme::spec(), readme)
        .resource_template(note::spec(), note)
        .build()
        .serve_stdio()
        .await
}
