//! Asking the user for input with `ctx.elicit`: one handler, both revisions.
//!
//! In 2025-11-25 the server sends an `elicitation/create` request on the connection and waits
//! for the answer. In 2026-07-28 it cannot: the call ends with an `input_required` result
//! carrying the question and a sealed `requestState`; the client asks the user and calls
//! again with `inputResponses`, and the handler runs again, this time getting the answer.
//! The handler is the same code in both: `ctx.elicit(…).await?`. (It may run more than once,
//! so do side effects after the last question.)
//!
//! | ↔ | method | what it does |
//! |---|---|---|
//! | ← | `tools/call` `book_table` | asks who the table is for, then books it |
//! | → | `elicitation/create` | 2025-11-25: the question, as a request to the client |
//! | ← | `resultType: "input_required"` | 2026-07-28: the question, as a result (`inputRequests`) |
//!
//! ```text
//! $ cargo run -q -p duomcp --example elicitation
//! # 1. 2025-11-25: declare the elicitation capability, call, answer the server's request
//! #    (paste one line at a time: each after the answer to the one before)
//! {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"sh","version":"0"}}}
//! {"jsonrpc":"2.0","method":"notifications/initialized"}
//! {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"book_table","arguments":{"guests":2}}}
//! # ← {"jsonrpc":"2.0","id":"s-0","method":"elicitation/create","params":{"message":"Who is the table for?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}
//! {"jsonrpc":"2.0","id":"s-0","result":{"action":"accept","content":{"name":"Ada"}}}
//! # ← {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"Booked a table for 2, under the name Ada."}]}}
//! ```
//!
//! ```text
//! # 2. 2026-07-28: the first call returns the question…
//! {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"book_table","arguments":{"guests":2},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}
//! # ← {"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"v1.eyJt…","_meta":{…},"inputRequests":{"name":{"method":"elicitation/create","params":{"message":"Who is the table for?","requestedSchema":{…}}}}}}
//! # …and the same call again, with the answer and the requestState it got:
//! {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"book_table","arguments":{"guests":2},"inputResponses":{"name":{"action":"accept","content":{"name":"Ada"}}},"requestState":"v1.eyJt…","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}
//! # ← {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"Booked a table for 2, under the name Ada."}],"resultType":"complete",…}}
//! ```
//!
//! The `duomcp` client does all of this itself, in either revision (`--era legacy` or
//! `--era modern`), asking on the terminal:
//! `duomcp call book_table guests=2 -- cargo run -q -p duomcp --example elicitation`.

use duomcp::schema::{ElicitAction, ElicitRequestFormParams, ElicitRequestedSchema, StringSchema};
use duomcp::server::{Args, Context, HandlerError, Server};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Booking {
    /// How many people.
    guests: u32,
}

/// Books a table; asks the user for the name to book it under.
#[duomcp::tool]
async fn book_table(
    ctx: Context,
    Args(Booking { guests }): Args<Booking>,
) -> Result<String, HandlerError> {
    let form = ElicitRequestFormParams::new(
        "Who is the table for?",
        ElicitRequestedSchema::default().with_property("name", StringSchema::new(), true),
    );
    // 2025-11-25: a request to the client, awaited here. 2026-07-28: `?` ends this round with
    // an `input_required` result; on the retry the same line returns the answer.
    let answer = ctx.elicit("name", form.into()).await?;
    let name = answer
        .content
        .as_ref()
        .and_then(|c| c.get("name"))
        .and_then(|n| n.as_str());
    Ok(match (answer.action, name) {
        (ElicitAction::Accept, Some(name)) => {
            format!("Booked a table for {guests}, under the name {name}.")
        }
        _ => "No table booked.".to_owned(),
    })
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    Server::builder()
        .name("elicitation-example")
        .tool(book_table::spec(), book_table)
        .build()
        .serve_stdio()
        .await
}
