//! `duomcp prompts` and `duomcp prompt`.

use super::{finish, output, parse_pairs, Failure, Outcome, Target};
use clap::Args;
use serde_json::Value;

/// `duomcp prompt NAME [key=value ...] [URL | -- SERVER]`
#[derive(Debug, Args)]
pub struct PromptArgs {
    /// The prompt to get.
    pub name: String,
    /// Arguments as `key=value` (prompt arguments are text). A word starting with `http://`
    /// or `https://`, or `unix:PATH`, is the server's URL.
    pub pairs: Vec<String>,
    #[command(flatten)]
    pub target: Target,
}

pub(crate) async fn list(target: &Target) -> Result<Outcome, Failure> {
    let (client, logs) = target.connect().await?;
    let prompts = client.list_all_prompts().await?;
    logs.flush().await;
    if target.json {
        target.print_json(&prompts)?;
        return finish(client, Outcome::Ok).await;
    }
    if prompts.is_empty() {
        println!("(no prompts)");
        return finish(client, Outcome::Ok).await;
    }
    let rows: Vec<Vec<String>> = prompts
        .iter()
        .map(|p| {
            let args: Vec<String> = p
                .arguments
                .iter()
                .flatten()
                .map(|a| {
                    if a.required == Some(true) {
                        a.name.clone()
                    } else {
                        format!("{}?", a.name)
                    }
                })
                .collect();
            vec![
                p.name.clone(),
                args.join(" "),
                p.description.clone().unwrap_or_default(),
            ]
        })
        .collect();
    print!(
        "{}",
        output::table(&["NAME", "ARGUMENTS", "DESCRIPTION"], &rows)
    );
    finish(client, Outcome::Ok).await
}

pub(crate) async fn get(args: &PromptArgs) -> Result<Outcome, Failure> {
    let target = &args.target;
    let (client, logs) = target.connect().await?;
    // Prompt arguments are strings: never reinterpret `n=3` as a number.
    let text_schema = serde_json::json!({ "properties": args.pairs.iter().filter_map(|p| p.split_once('=')).map(|(k, _)| (k.to_owned(), serde_json::json!({ "type": "string" }))).collect::<serde_json::Map<String, Value>>() });
    let arguments = parse_pairs(&args.pairs, text_schema.as_object())?;
    let result = client
        .get_prompt(&args.name, Value::Object(arguments))
        .await?;
    logs.flush().await;
    if target.json {
        target.print_json(&result)?;
        return finish(client, Outcome::Ok).await;
    }
    if let Some(d) = &result.description {
        println!("{d}\n");
    }
    for message in &result.messages {
        let role = serde_json::to_value(message.role)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        println!("{role}: {}", output::content(&message.content));
    }
    finish(client, Outcome::Ok).await
}
