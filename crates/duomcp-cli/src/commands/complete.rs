//! `duomcp complete`: argument completion for prompts and resource templates.

use super::{finish, Failure, Outcome, Target};
use clap::Args;
use duomcp::schema::{
    CompleteContext, CompleteReference, CompleteRequestParams, PromptReference,
    ResourceTemplateReference,
};

/// `duomcp complete (--prompt NAME | --template URI) ARGUMENT [VALUE] [URL | -- SERVER]`
#[derive(Debug, Args)]
pub struct CompleteArgs {
    /// Complete an argument of this prompt.
    #[arg(
        long,
        conflicts_with = "template",
        required_unless_present = "template"
    )]
    pub prompt: Option<String>,
    /// Complete a variable of this resource template (its `uriTemplate`).
    #[arg(long)]
    pub template: Option<String>,
    /// The argument (or template variable) to complete.
    pub argument: String,
    /// What has been typed so far.
    #[arg(default_value = "")]
    pub value: String,
    /// The server's Streamable HTTP URL (or give a command after `--`).
    #[arg(value_name = "URL")]
    pub target_url: Option<String>,
    /// Values of other arguments already chosen, as `key=value` (repeatable).
    #[arg(long = "context", value_name = "KEY=VALUE")]
    pub context: Vec<String>,
    #[command(flatten)]
    pub target: Target,
}

pub(crate) async fn run(args: &CompleteArgs) -> Result<Outcome, Failure> {
    let reference = match (&args.prompt, &args.template) {
        (Some(name), _) => CompleteReference::Prompt(PromptReference {
            name: name.clone(),
            ..Default::default()
        }),
        (None, Some(uri)) => CompleteReference::ResourceTemplate(ResourceTemplateReference {
            uri: uri.clone(),
            ..Default::default()
        }),
        (None, None) => return Err(Failure::new("give --prompt NAME or --template URI")),
    };
    let mut params =
        CompleteRequestParams::new(reference, args.argument.clone(), args.value.clone());
    if !args.context.is_empty() {
        let mut known = duomcp::schema::IndexMap::new();
        for pair in &args.context {
            let Some((k, v)) = pair.split_once('=') else {
                return Err(Failure::new(format!("--context `{pair}` is not key=value")));
            };
            known.insert(k.to_owned(), v.to_owned());
        }
        params.context = Some(CompleteContext {
            arguments: Some(known),
            ..Default::default()
        });
    }
    let target = &args.target;
    let (client, logs) = target.connect().await?;
    let result = client.complete(params).await?;
    logs.flush().await;
    if target.json {
        target.print_json(&result)?;
        return finish(client, Outcome::Ok).await;
    }
    for value in &result.completion.values {
        println!("{value}");
    }
    if result.completion.has_more == Some(true) {
        match result.completion.total {
            Some(total) => eprintln!("({} of {total} shown)", result.completion.values.len()),
            None => eprintln!("(more available)"),
        }
    }
    finish(client, Outcome::Ok).await
}
