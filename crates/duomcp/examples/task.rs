//! A long-running tool that runs as a task when the client can take one, and inline when it
//! cannot: the handler is the same either way.
//!
//! | ↔ | method | what it does |
//! |---|---|---|
//! | ← | `tools/call` `render` | renders `frames` frames (100 ms each), reporting progress |
//! | ← | `tasks/get` | the task's status; in 2026-07-28 the result too, once done |
//! | ← | `tasks/result` | 2025-11-25: waits for the task, then returns the tool's result |
//! | ← | `tasks/cancel` | stops the render |
//!
//! ```text
//! $ cargo run -q -p duomcp --example task
//! # 2025-11-25: the client asks for a task with `params.task`
//! {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sh","version":"0"}}}
//! {"jsonrpc":"2.0","method":"notifications/initialized"}
//! {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"render","arguments":{"frames":5},"task":{"ttl":60000}}}
//! # ← {"jsonrpc":"2.0","id":2,"result":{"task":{"taskId":"TASK","status":"working",…}}}
//! {"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"TASK"}}
//! # ← (half a second later) {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"Rendered 5 frames"}],…}}
//! ```
//!
//! ```text
//! # 2026-07-28: the client declares the tasks extension; the server decides
//! {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"render","arguments":{"frames":5},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}
//! # ← {"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"TASK","status":"working",…}}
//! {"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"TASK","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}
//! # ← {"jsonrpc":"2.0","id":2,"result":{"taskId":"TASK","status":"completed","result":{"content":[{"type":"text","text":"Rendered 5 frames"}],…},…}}
//! ```
//!
//! A client that declares neither gets the result of the same call directly, after the wait.

use duomcp::server::tasks::TaskConfig;
use duomcp::server::{Args, Context, HandlerError, Server, ToolSpec};
use std::time::Duration;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Render {
    /// How many frames to render (100 ms each).
    frames: u32,
}

/// Renders frames one by one; stops early when the task is cancelled.
async fn render(ctx: Context, Args(r): Args<Render>) -> Result<String, HandlerError> {
    for done in 1..=r.frames {
        if ctx.is_cancelled() {
            return Err(HandlerError::Cancelled);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        ctx.progress(f64::from(done), Some(f64::from(r.frames)), None)
            .await;
    }
    Ok(format!("Rendered {} frames", r.frames))
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let server = Server::builder()
        .name("task-example")
        .tool(
            ToolSpec::new("render")
                .description("Renders frames; runs as a task when the client can take one")
                .long_running(),
            render,
        )
        .tasks(TaskConfig::default().default_ttl(Duration::from_secs(600)))
        .build();
    server.serve_stdio().await
}
