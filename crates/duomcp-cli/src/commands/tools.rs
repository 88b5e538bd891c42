//! `duomcp tools` and `duomcp call`.

use super::{finish, output, parse_pairs, progress, stderr_is_terminal, Failure, Outcome, Target};
use clap::Args;
use duomcp::client::RequestOptions;
use serde_json::{Map, Value};

/// `duomcp call NAME [key=value ...] [--args JSON] [URL | -- SERVER]`
#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool to call.
    pub tool: String,
    /// Arguments as `key=value`; values are JSON where they parse (`n=3`, `ok=true`), text
    /// otherwise, and always text for properties the tool types as `string`. A word starting
    /// with `http://` or `https://`, or `unix:PATH`, is the server's URL.
    pub pairs: Vec<String>,
    /// Arguments as one JSON object (merged under any `key=value` pairs).
    #[arg(long, value_name = "JSON")]
    pub args: Option<String>,
    /// Run the tool as a task: a 2025-11-25 server is asked for one when the tool's
    /// `taskSupport` is `optional` (a `required` tool always runs as one); a 2026-07-28 server
    /// decides itself. The task's id, status changes and progress go to stderr as they come,
    /// the result to stdout; the server's questions are asked as for any call.
    #[arg(long)]
    pub task: bool,
    #[command(flatten)]
    pub target: Target,
}

pub(crate) async fn list(target: &Target) -> Result<Outcome, Failure> {
    let (client, logs) = target.connect().await?;
    let tools = client.list_all_tools().await?;
    logs.flush().await;
    if target.json {
        target.print_json(&tools)?;
        return finish(client, Outcome::Ok).await;
    }
    if tools.is_empty() {
        println!("(no tools)");
        return finish(client, Outcome::Ok).await;
    }
    let rows: Vec<Vec<String>> = tools
        .iter()
        .map(|t| {
            let params: Vec<String> = t
                .input_schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|props| {
                    let required: Vec<&str> = t
                        .input_schema
                        .get("required")
                        .and_then(Value::as_array)
                        .map(|r| r.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    props
                        .keys()
                        .map(|k| {
                            if required.contains(&k.as_str()) {
                                k.clone()
                            } else {
                                format!("{k}?")
                            }
                        })
                        .collect()
                })
                .unwrap_or_default();
            vec![
                t.name.clone(),
                params.join(" "),
                t.description.clone().unwrap_or_default(),
            ]
        })
        .collect();
    // MCP Apps: a VIEW column when a tool has a view (or is only for views).
    let (headers, rows) =
        super::apps::with_view_column(&["NAME", "ARGUMENTS", "DESCRIPTION"], &tools, rows);
    print!("{}", output::table(&headers, &rows));
    finish(client, Outcome::Ok).await
}

pub(crate) async fn call(args: &CallArgs) -> Result<Outcome, Failure> {
    let target = &args.target;
    let (client, logs) = target.connect().await?;
    // The listing gives the argument types (for key=value) and the output schema (checked).
    let tools = client.list_all_tools().await.unwrap_or_default();
    let schema = tools
        .iter()
        .find(|t| t.name == args.tool)
        .map(|t| &t.input_schema);
    let mut arguments: Map<String, Value> = match &args.args {
        Some(text) => match serde_json::from_str(text) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err(Failure::new("--args must be a JSON object")),
            Err(e) => return Err(Failure::new(format!("--args is not valid JSON: {e}"))),
        },
        None => Map::new(),
    };
    arguments.extend(parse_pairs(&args.pairs, schema)?);
    let mut options = RequestOptions::new();
    if args.task {
        options = options.as_task();
    }
    let status = progress::Status::new(stderr_is_terminal() && !target.json);
    if !target.json {
        // Progress, and how a task goes (polling is transparent otherwise), on stderr.
        let on_progress = status.clone();
        options = options.on_progress(move |p| on_progress.progress(p));
        let on_task = status.clone();
        options = options.on_task_status(move |t| on_task.task(t));
    }
    let what = format!("the call of `{}`", args.tool);
    let result = target
        .within(
            &what,
            client.call_tool_with(&args.tool, Value::Object(arguments), options),
        )
        .await;
    status.done();
    let result = match result {
        Ok(result) => result,
        Err(failure) => {
            // Past --timeout a task goes on on the server unless it is cancelled.
            if let Some(task) = status.task_id() {
                let _ = tokio::time::timeout(
                    std::time::Duration::from_secs(1),
                    client.cancel_task(&task),
                )
                .await;
            }
            return Err(failure);
        }
    };
    logs.flush().await;
    if args.task && !target.json && status.task_id().is_none() {
        eprintln!(
            "duomcp: `{}` did not run as a task (the server answered at once{})",
            output::safe(&args.tool),
            match client.era() {
                duomcp::era::Era::Legacy => ": the tool or the server does not offer tasks",
                _ => "",
            }
        );
    }
    let outcome = if result.is_error() {
        Outcome::Failed
    } else {
        Outcome::Ok
    };
    if target.json {
        target.print_json(&result)?;
        return finish(client, outcome).await;
    }
    if result.is_error() {
        eprintln!("the tool reported an error:");
    }
    for block in &result.content {
        println!("{}", output::content(block));
    }
    if let (Some(structured), true) = (&result.structured_content, result.content.is_empty()) {
        println!(
            "{}",
            serde_json::to_string_pretty(structured).unwrap_or_default()
        );
    }
    finish(client, outcome).await
}
