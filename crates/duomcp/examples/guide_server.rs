//! The server of the book's server guide (`docs/src/server/`): a small notebook served over
//! stdio, with one region per topic (`// ANCHOR: name`) that the guide's pages include.
//! `tests/guide_testing.rs` drives every handler of it in both revisions.
//!
//! | ↔ | method | what it does |
//! |---|---|---|
//! | ← | `tools/call` `add_note`, `word_count`, `shout` | typed arguments, structured output, a closure tool |
//! | ← | `tools/call` `open_note`, `fetch_quote` | a protocol error, and an `anyhow` error as `isError` |
//! | ← | `tools/call` `reindex` | logging, progress and cancellation |
//! | ← | `tools/call` `backup` | a long job: a task when the client can take one |
//! | ← | `tools/call` `delete_note`, `suggest_title`, `workspace` | elicitation, sampling, roots |
//! | ← | `resources/read` `notes://index`, `notes://note/{id}` | a resource and a template |
//! | ← | `prompts/get` `summarize`, `completion/complete` | a prompt, and completion of note ids |
//! | → | `notifications/resources/updated` | after `add_note`, to clients subscribed to the index |
//!
//! Run it with `cargo run -q -p duomcp --example guide_server`, or let the `duomcp` client
//! drive it: `duomcp call add_note text=hello -- cargo run -q -p duomcp --example guide_server`.

use duomcp::schema::{
    CompleteReference, CompleteRequestParams, CompleteResult, CreateMessageRequestParams,
    ElicitAction, ElicitRequestFormParams, ElicitRequestedSchema, LoggingLevel, SamplingMessage,
    StringSchema,
};
use duomcp::server::tasks::TaskConfig;
use duomcp::server::{Args, Context, HandlerError, Json, Server, State, ToolSpec, Uri};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

// ANCHOR: state
/// The notes, shared by every call and every connection: registered once with
/// `ServerBuilder::state`, taken by handlers with `State<Notebook>`.
#[derive(Clone, Default)]
pub struct Notebook(Arc<Mutex<BTreeMap<u32, String>>>);

impl Notebook {
    fn notes(&self) -> MutexGuard<'_, BTreeMap<u32, String>> {
        // A handler that panicked while holding the lock left the map whole: keep using it.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
// ANCHOR_END: state

// ANCHOR: tool
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct NewNote {
    /// The text of the note.
    text: String,
}

/// Adds a note to the notebook and returns its id.
#[duomcp::tool(idempotent = false, open_world = false)]
pub async fn add_note(
    ctx: Context,
    State(book): State<Notebook>,
    Args(NewNote { text }): Args<NewNote>,
) -> String {
    let id = {
        let mut notes = book.notes();
        let id = notes.keys().next_back().map_or(1, |last| last + 1);
        notes.insert(id, text);
        id
    };
    // Clients subscribed to the index hear that it changed (see "Resources").
    ctx.server().notify_resource_updated("notes://index");
    format!("note {id} added")
}
// ANCHOR_END: tool

// ANCHOR: structured
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Text {
    /// The text to count the words of.
    text: String,
}

/// What `word_count` returns: its schema is the tool's `outputSchema`.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct Counts {
    /// Words, split on whitespace.
    words: usize,
    /// Lines, as `str::lines` counts them.
    lines: usize,
}

/// Counts the words and lines of a text.
#[duomcp::tool(read_only, idempotent, open_world = false)]
pub async fn word_count(Args(Text { text }): Args<Text>) -> Json<Counts> {
    Json(Counts {
        words: text.split_whitespace().count(),
        lines: text.lines().count(),
    })
}
// ANCHOR_END: structured

// ANCHOR: errors
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct NoteId {
    /// The note's id, as `add_note` returned it.
    id: u32,
}

/// Returns the text of one note.
///
/// An unknown id is the caller's mistake, not the tool's: a protocol error (`-32602`).
#[duomcp::tool(read_only)]
pub async fn open_note(
    State(book): State<Notebook>,
    Args(NoteId { id }): Args<NoteId>,
) -> Result<String, HandlerError> {
    book.notes()
        .get(&id)
        .cloned()
        .ok_or_else(|| HandlerError::invalid_params(format!("no note {id}")))
}

/// A quote for the day, from a service this example has not configured.
///
/// The `anyhow` error, with its context, becomes an `isError: true` result: the model reads
/// it and can try something else.
#[duomcp::tool(read_only)]
pub async fn fetch_quote() -> anyhow::Result<String> {
    use anyhow::Context as _;
    let url = std::env::var("QUOTE_SERVICE_URL").context("no quote service configured")?;
    Ok(format!("a quote from {url}"))
}
// ANCHOR_END: errors

// ANCHOR: context
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Reindex {
    /// How many passes to make (50 ms each).
    passes: u32,
}

/// Rebuilds the notebook's index, one pass at a time; logs and reports progress; stops
/// when cancelled.
#[duomcp::tool(idempotent, open_world = false)]
pub async fn reindex(
    ctx: Context,
    Args(Reindex { passes }): Args<Reindex>,
) -> Result<String, HandlerError> {
    ctx.log(LoggingLevel::Info, format!("reindexing in {passes} passes"))
        .await;
    for done in 1..=passes {
        tokio::select! {
            // `cancelled()` completes on `notifications/cancelled` (or `tasks/cancel`).
            () = ctx.cancelled() => return Err(HandlerError::Cancelled),
            () = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
        // Sent only if the caller gave a progress token (or the call is a task).
        ctx.progress(f64::from(done), Some(f64::from(passes)), None)
            .await;
    }
    Ok(format!("reindexed in {passes} passes"))
}
// ANCHOR_END: context

// ANCHOR: tasks
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Backup {
    /// How many notes to copy per second (the backup is slow on purpose).
    per_second: u32,
}

/// Copies every note to the backup store: a long job, run as a task when the client can
/// take one (registered with `ToolSpec::long_running`), inline otherwise.
pub async fn backup(
    ctx: Context,
    State(book): State<Notebook>,
    Args(Backup { per_second }): Args<Backup>,
) -> Result<String, HandlerError> {
    let ids: Vec<u32> = book.notes().keys().copied().collect();
    let pause = Duration::from_millis(1000 / u64::from(per_second.max(1)));
    for (done, id) in ids.iter().enumerate() {
        tokio::select! {
            () = ctx.cancelled() => return Err(HandlerError::Cancelled),
            () = tokio::time::sleep(pause) => {}
        }
        // Shown by `tasks/get` as the task's `statusMessage` (a no-op outside a task).
        ctx.set_task_status(format!("copied note {id} ({} of {})", done + 1, ids.len()))
            .await;
    }
    Ok(format!("backed up {} notes", ids.len()))
}
// ANCHOR_END: tasks

// ANCHOR: elicit
/// Deletes a note, once the user has confirmed.
#[duomcp::tool(destructive)]
pub async fn delete_note(
    ctx: Context,
    State(book): State<Notebook>,
    Args(NoteId { id }): Args<NoteId>,
) -> Result<String, HandlerError> {
    let form = ElicitRequestFormParams::new(
        format!("Delete note {id}? Type its id again to confirm."),
        ElicitRequestedSchema::default().with_property("confirm", StringSchema::new(), true),
    );
    // 2025-11-25: a request to the client, awaited here. 2026-07-28: the first round ends at
    // this `?` with an input-required result; the retry runs the handler again and this line
    // returns the answer. Side effects come after the last question.
    let answer = ctx.elicit("confirm", form.into()).await?;
    let typed = answer.content.as_ref().and_then(|c| c.get("confirm"));
    let confirmed = answer.action == ElicitAction::Accept
        && typed.and_then(|v| v.as_str()) == Some(id.to_string().as_str());
    if !confirmed {
        return Ok(format!("note {id} kept"));
    }
    Ok(match book.notes().remove(&id) {
        Some(_) => format!("note {id} deleted"),
        None => format!("no note {id}"),
    })
}
// ANCHOR_END: elicit

// ANCHOR: sample
/// Asks the client's model for a title for a note.
#[duomcp::tool(read_only)]
pub async fn suggest_title(
    ctx: Context,
    State(book): State<Notebook>,
    Args(NoteId { id }): Args<NoteId>,
) -> Result<String, HandlerError> {
    let text = book.notes().get(&id).cloned();
    let text = text.ok_or_else(|| HandlerError::invalid_params(format!("no note {id}")))?;
    let question = SamplingMessage::user_text(format!("A title of five words at most for: {text}"));
    let mut params = CreateMessageRequestParams::new(vec![question], 30);
    params.system_prompt = Some("Answer with the title only.".into());
    let reply = ctx.sample("title", params).await?;
    let content = serde_json::to_value(&reply.content).unwrap_or_default();
    let title = content["text"].as_str().unwrap_or_default();
    Ok(format!("{title} (by {})", reply.model))
}
// ANCHOR_END: sample

// ANCHOR: roots
/// Names the folders the client lets this server see.
#[duomcp::tool(read_only)]
pub async fn workspace(ctx: Context) -> Result<String, HandlerError> {
    let roots = ctx.list_roots("roots").await?;
    let uris: Vec<&str> = roots.roots.iter().map(|r| r.uri.as_str()).collect();
    Ok(uris.join(", "))
}
// ANCHOR_END: roots

// ANCHOR: resources
/// Every note, one per line: `id: first line`.
#[duomcp::resource(uri = "notes://index", mime_type = "text/plain")]
pub async fn index(State(book): State<Notebook>) -> String {
    let notes = book.notes();
    let lines: Vec<String> = notes
        .iter()
        .map(|(id, text)| format!("{id}: {}", text.lines().next().unwrap_or_default()))
        .collect();
    lines.join("\n")
}

/// A template's variables, by name; they arrive as strings.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct NoteVars {
    id: String,
}

/// One note, by id.
#[duomcp::resource(
    template = "notes://note/{id}",
    name = "note",
    mime_type = "text/plain"
)]
pub async fn note(
    Uri(uri): Uri,
    State(book): State<Notebook>,
    Args(NoteVars { id }): Args<NoteVars>,
) -> Result<String, HandlerError> {
    let text = id
        .parse()
        .ok()
        .and_then(|id: u32| book.notes().get(&id).cloned());
    // Not found is a protocol error of its own (`-32002` in 2025-11-25).
    text.ok_or_else(|| HandlerError::resource_not_found(uri))
}
// ANCHOR_END: resources

// ANCHOR: prompts
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Summarize {
    /// The id of the note to summarize.
    id: String,
    /// How long the summary may be, in words (default 20).
    words: Option<String>,
}

/// Asks the model to summarize a note.
#[duomcp::prompt(title = "Summarize a note")]
pub async fn summarize(
    State(book): State<Notebook>,
    Args(Summarize { id, words }): Args<Summarize>,
) -> Result<String, HandlerError> {
    let text = id
        .parse()
        .ok()
        .and_then(|id: u32| book.notes().get(&id).cloned());
    let text = text.ok_or_else(|| HandlerError::invalid_params(format!("no note {id}")))?;
    // Prompt arguments are strings on the wire: parse what is not one.
    let words: u32 = words.and_then(|w| w.parse().ok()).unwrap_or(20);
    Ok(format!(
        "Summarize this note in {words} words at most:\n\n{text}"
    ))
}
// ANCHOR_END: prompts

// ANCHOR: completion
/// Completes note ids, for the `summarize` prompt's `id` and the `notes://note/{id}`
/// template alike: the ids that start with what the user typed so far.
async fn complete(p: CompleteRequestParams, ctx: Context) -> Result<CompleteResult, HandlerError> {
    let completes_ids = match &p.r#ref {
        CompleteReference::Prompt(prompt) => prompt.name == "summarize",
        CompleteReference::ResourceTemplate(t) => t.uri == "notes://note/{id}",
    };
    if !completes_ids || p.argument.name != "id" {
        return Ok(CompleteResult::new(Vec::new()));
    }
    let book = ctx.state::<Notebook>().unwrap_or_default();
    let ids = book
        .notes()
        .keys()
        .map(u32::to_string)
        .filter(|id| id.starts_with(&p.argument.value))
        .collect();
    Ok(CompleteResult::new(ids))
}
// ANCHOR_END: completion

// ANCHOR: server
/// The whole server: what `main` serves and what the tests drive.
pub fn server() -> Server {
    Server::builder()
        .name("notebook")
        .version("1.0.0")
        .instructions("Add notes with `add_note`; read `notes://index` for the list.")
        .state(Notebook::default())
        .tool(add_note::spec(), add_note)
        .tool(word_count::spec(), word_count)
        // A closure and a `ToolSpec` work as well as the macro; arguments may be any JSON.
        .tool(
            ToolSpec::new("shout").description("Repeats `text` in capitals"),
            |Args(v): Args<serde_json::Value>| async move {
                v["text"].as_str().unwrap_or_default().to_uppercase()
            },
        )
        .tool(open_note::spec(), open_note)
        .tool(fetch_quote::spec(), fetch_quote)
        .tool(reindex::spec(), reindex)
        // ANCHOR: register_task
        .tool(
            ToolSpec::new("backup")
                .description("Copies every note to the backup store; may run as a task")
                .long_running(),
            backup,
        )
        // How long a finished task's result is kept for the client to fetch.
        .tasks(TaskConfig::default().default_ttl(Duration::from_secs(600)))
        // ANCHOR_END: register_task
        .tool(delete_note::spec(), delete_note)
        .tool(suggest_title::spec(), suggest_title)
        .tool(workspace::spec(), workspace)
        .resource(index::spec(), index)
        .resource_template(note::spec(), note)
        .prompt(summarize::spec(), summarize)
        .completion(complete)
        // ANCHOR: middleware
        // At most 16 requests in the handlers at once (the others wait), each given 30 s.
        .layer(tower::limit::ConcurrencyLimitLayer::new(16))
        .layer(tower::timeout::TimeoutLayer::new(Duration::from_secs(30)))
        // ANCHOR_END: middleware
        .build()
}
// ANCHOR_END: server

// ANCHOR: main
#[tokio::main]
async fn main() -> std::io::Result<()> {
    // Ctrl-C or SIGTERM: stop taking work, end the listen streams, then return.
    server()
        .serve_stdio_with_shutdown(duomcp::server::shutdown_signal())
        .await
}
// ANCHOR_END: main
