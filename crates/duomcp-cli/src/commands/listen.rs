//! `duomcp listen`: print change notifications as they arrive.

use super::{finish, Failure, Outcome, Target};
use clap::Args;
use duomcp::client::ServerEvent;
use duomcp::schema::SubscriptionFilter;
use serde_json::json;
use std::time::Duration;

/// `duomcp listen [--tools] [--prompts] [--resources] [--resource URI ...] [URL | -- SERVER]`
#[derive(Debug, Args)]
pub struct ListenArgs {
    /// Tool list changes.
    #[arg(long)]
    pub tools: bool,
    /// Prompt list changes.
    #[arg(long)]
    pub prompts: bool,
    /// Resource list changes.
    #[arg(long)]
    pub resources: bool,
    /// Updates of this resource (repeatable).
    #[arg(long = "resource", value_name = "URI")]
    pub resource: Vec<String>,
    /// Stop after this many notifications.
    #[arg(long, value_name = "N")]
    pub count: Option<usize>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// The server's Streamable HTTP URL (or give a command after `--`).
    #[arg(value_name = "URL")]
    pub target_url: Option<String>,
    #[command(flatten)]
    pub target: Target,
}

fn describe(filter: &SubscriptionFilter) -> String {
    let mut parts = Vec::new();
    if filter.tools_list_changed == Some(true) {
        parts.push("tools".to_owned());
    }
    if filter.prompts_list_changed == Some(true) {
        parts.push("prompts".to_owned());
    }
    if filter.resources_list_changed == Some(true) {
        parts.push("resources".to_owned());
    }
    for uri in filter.resource_subscriptions.iter().flatten() {
        parts.push(uri.clone());
    }
    if parts.is_empty() {
        "nothing".to_owned()
    } else {
        parts.join(", ")
    }
}

pub(crate) async fn run(args: &ListenArgs) -> Result<Outcome, Failure> {
    // No choice means every list.
    let everything = !args.tools && !args.prompts && !args.resources && args.resource.is_empty();
    let filter = SubscriptionFilter {
        tools_list_changed: (args.tools || everything).then_some(true),
        prompts_list_changed: (args.prompts || everything).then_some(true),
        resources_list_changed: (args.resources || everything).then_some(true),
        resource_subscriptions: (!args.resource.is_empty()).then(|| args.resource.clone()),
        ..SubscriptionFilter::default()
    };
    let target = &args.target;
    let (client, logs) = target.connect().await?;
    let mut subscription = client.listen(filter).await?;
    logs.flush().await;
    if target.json {
        target.print_json(&json!({ "subscribed": subscription.acknowledged() }))?;
    } else {
        println!("listening for: {}", describe(subscription.acknowledged()));
    }
    let deadline = match args.duration {
        Some(s) => Some(
            tokio::time::Instant::now()
                + Duration::try_from_secs_f64(s)
                    .map_err(|e| Failure::new(format!("--duration: {e}")))?,
        ),
        None => None,
    };
    let mut seen = 0;
    while args.count.is_none_or(|n| seen < n) {
        let next = match deadline {
            Some(d) => match tokio::time::timeout_at(d, subscription.next()).await {
                Ok(n) => n,
                Err(_) => break,
            },
            None => subscription.next().await,
        };
        let Some(n) = next else {
            if !subscription.ended_gracefully() {
                return Err(Failure::new(
                    "the subscription ended: the connection was lost",
                ));
            }
            break;
        };
        seen += 1;
        let (kind, detail) = match &n {
            ServerEvent::ToolsListChanged => ("tools/list_changed", None),
            ServerEvent::PromptsListChanged => ("prompts/list_changed", None),
            ServerEvent::ResourcesListChanged => ("resources/list_changed", None),
            ServerEvent::ResourceUpdated { uri } => ("resources/updated", Some(uri.clone())),
            _ => continue,
        };
        if target.json {
            println!("{}", json!({ "notification": kind, "uri": detail }));
        } else {
            match detail {
                Some(d) => println!("{kind} {d}"),
                None => println!("{kind}"),
            }
        }
    }
    finish(client, Outcome::Ok).await
}
