//! `duomcp resources`, `duomcp read` and `duomcp templates`.

use super::{finish, output, Failure, Outcome, Target};
use clap::Args;

/// `duomcp read URI [URL | -- SERVER]`
#[derive(Debug, Args)]
pub struct ReadArgs {
    /// The resource to read.
    pub uri: String,
    /// Saves the contents (text as is, a blob decoded) to FILE instead of printing them; for an
    /// MCP Apps view (`ui://…`), the HTML document. Its `_meta.ui` is printed.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// The server's Streamable HTTP URL (or give a command after `--`).
    #[arg(value_name = "URL")]
    pub target_url: Option<String>,
    #[command(flatten)]
    pub target: Target,
}

pub(crate) async fn list(target: &Target) -> Result<Outcome, Failure> {
    let (client, logs) = target.connect().await?;
    let resources = client.list_all_resources().await?;
    logs.flush().await;
    if target.json {
        target.print_json(&resources)?;
        return finish(client, Outcome::Ok).await;
    }
    if resources.is_empty() {
        println!("(no resources)");
        return finish(client, Outcome::Ok).await;
    }
    let rows: Vec<Vec<String>> = resources
        .iter()
        .map(|r| {
            vec![
                r.uri.clone(),
                r.name.clone(),
                r.mime_type.clone().unwrap_or_default(),
                r.description.clone().unwrap_or_default(),
            ]
        })
        .collect();
    print!(
        "{}",
        output::table(&["URI", "NAME", "TYPE", "DESCRIPTION"], &rows)
    );
    finish(client, Outcome::Ok).await
}

pub(crate) async fn templates(target: &Target) -> Result<Outcome, Failure> {
    let (client, logs) = target.connect().await?;
    let templates = client.list_all_resource_templates().await?;
    logs.flush().await;
    if target.json {
        target.print_json(&templates)?;
        return finish(client, Outcome::Ok).await;
    }
    if templates.is_empty() {
        println!("(no resource templates)");
        return finish(client, Outcome::Ok).await;
    }
    let rows: Vec<Vec<String>> = templates
        .iter()
        .map(|t| {
            vec![
                t.uri_template.clone(),
                t.name.clone(),
                t.description.clone().unwrap_or_default(),
            ]
        })
        .collect();
    print!(
        "{}",
        output::table(&["URI TEMPLATE", "NAME", "DESCRIPTION"], &rows)
    );
    finish(client, Outcome::Ok).await
}

pub(crate) async fn read(args: &ReadArgs) -> Result<Outcome, Failure> {
    let target = &args.target;
    let (client, logs) = target.connect().await?;
    let result = client.read_resource(&args.uri).await?;
    logs.flush().await;
    if let Some(path) = &args.output {
        if let Err(e) = super::apps::save(&result, path) {
            let _ = finish(client, Outcome::Failed).await;
            return Err(e);
        }
        return finish(client, Outcome::Ok).await;
    }
    if target.json {
        target.print_json(&result)?;
        return finish(client, Outcome::Ok).await;
    }
    let several = result.contents.len() > 1;
    for contents in &result.contents {
        if several {
            println!("--- {}", contents.uri());
        }
        println!("{}", output::resource_contents(contents));
    }
    finish(client, Outcome::Ok).await
}
