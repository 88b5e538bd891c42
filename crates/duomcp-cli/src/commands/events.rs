//! `duomcp events list|poll|watch`: the MCP Events extension (experimental) from the command
//! line.

use super::{finish, parse_pairs, Failure, Outcome, Target, UrlTarget};
use clap::{Args, Subcommand, ValueEnum};
use duomcp::client::events::{DeliveryMode, EventItem, PollOptions, SubscribeOptions};
use serde_json::{json, Map, Value};
use std::time::Duration;

/// `duomcp events list|poll|watch`
#[derive(Debug, Args)]
pub struct EventsArgs {
    #[command(subcommand)]
    pub command: EventsCommand,
}

/// What to do with the server's event types.
#[derive(Debug, Subcommand)]
pub enum EventsCommand {
    /// List the server's event types.
    List(UrlTarget),
    /// One `events/poll`, printed: `duomcp events poll NAME key=value ... [--cursor C]`.
    Poll(PollArgs),
    /// Print each occurrence as a JSON line (the cursor goes to stderr):
    /// `duomcp events watch NAME key=value ... [--mode poll|push|auto] [--count N]`.
    Watch(WatchArgs),
}

/// `duomcp events poll NAME [key=value ...] [--cursor C] [URL | -- SERVER]`
#[derive(Debug, Args)]
pub struct PollArgs {
    /// The event type.
    pub event: String,
    /// Arguments as `key=value`, as for `duomcp call`. A word starting with `http://` or
    /// `https://` is the server's URL.
    pub pairs: Vec<String>,
    /// Where to start (a cursor printed earlier); without it, from now.
    #[arg(long, value_name = "CURSOR")]
    pub cursor: Option<String>,
    #[command(flatten)]
    pub target: Target,
}

/// How `watch` receives occurrences.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Mode {
    /// `events/poll` in a loop.
    Poll,
    /// An `events/stream` held open.
    Push,
    /// Push when the type offers it, else poll.
    Auto,
}

/// `duomcp events watch NAME [key=value ...] [--mode M] [--count N] [--duration S]`
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The event type.
    pub event: String,
    /// Arguments as `key=value`, as for `duomcp call`.
    pub pairs: Vec<String>,
    /// Where to start (a cursor printed earlier); without it, from now.
    #[arg(long, value_name = "CURSOR")]
    pub cursor: Option<String>,
    /// Poll, push, or whichever the type offers (push first).
    #[arg(long, value_enum, default_value = "auto")]
    pub mode: Mode,
    /// Stop after this many occurrences.
    #[arg(long, value_name = "N")]
    pub count: Option<usize>,
    /// Stop after this many seconds (`--timeout` bounds each answer, as for every command).
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// The shortest wait between polls, in seconds, whatever the server suggests.
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0)]
    pub min_poll: f64,
    #[command(flatten)]
    pub target: Target,
}

fn seconds(flag: &str, s: f64) -> Result<Duration, Failure> {
    Duration::try_from_secs_f64(s).map_err(|e| Failure::new(format!("{flag}: {e}")))
}

pub(crate) async fn list(target: &Target) -> Result<Outcome, Failure> {
    let (client, logs) = target.connect().await?;
    let mut all = Vec::new();
    let mut cursor = None;
    for _ in 0..1000 {
        let page = target
            .within("events/list", client.list_events(cursor))
            .await?;
        all.extend(page.events);
        match page.next_cursor {
            Some(c) if !c.is_empty() => cursor = Some(c),
            _ => break,
        }
    }
    logs.flush().await;
    if target.json {
        let listed: Vec<Value> = all
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "delivery": t.delivery,
                    "inputSchema": t.input_schema,
                    "payloadSchema": t.payload_schema,
                })
            })
            .collect();
        target.print_json(&listed)?;
    } else if all.is_empty() {
        println!("(no event types)");
    } else {
        let rows: Vec<Vec<String>> = all
            .iter()
            .map(|t| {
                vec![
                    t.name.clone(),
                    t.delivery.join(","),
                    t.description.clone().unwrap_or_default(),
                ]
            })
            .collect();
        print!(
            "{}",
            super::output::table(&["NAME", "DELIVERY", "DESCRIPTION"], &rows)
        );
    }
    finish(client, Outcome::Ok).await
}

fn occurrence_json(e: &duomcp::client::events::Occurrence) -> Value {
    let mut v = json!({
        "eventId": e.event_id,
        "name": e.name,
        "timestamp": e.timestamp,
        "data": e.data,
    });
    if let Some(c) = &e.cursor {
        v["cursor"] = json!(c);
    }
    v
}

pub(crate) async fn poll(args: &PollArgs) -> Result<Outcome, Failure> {
    let target = &args.target;
    let (client, logs) = target.connect().await?;
    let arguments: Map<String, Value> = parse_pairs(&args.pairs, None)?;
    let r = target
        .within(
            "events/poll",
            client.poll_events(
                &args.event,
                Value::Object(arguments),
                args.cursor.clone(),
                PollOptions::default(),
            ),
        )
        .await?;
    logs.flush().await;
    let events: Vec<Value> = r.events.iter().map(occurrence_json).collect();
    target.print_json(&json!({
        "events": events,
        "cursor": r.cursor,
        "truncated": r.truncated,
        "hasMore": r.has_more,
        "nextPollMs": u64::try_from(r.next_poll.as_millis()).unwrap_or(u64::MAX),
    }))?;
    finish(client, Outcome::Ok).await
}

pub(crate) async fn watch(args: &WatchArgs) -> Result<Outcome, Failure> {
    let target = &args.target;
    let (client, logs) = target.connect().await?;
    let arguments: Map<String, Value> = parse_pairs(&args.pairs, None)?;
    let mode = match args.mode {
        Mode::Poll => DeliveryMode::Poll,
        Mode::Push => DeliveryMode::Push,
        Mode::Auto => DeliveryMode::Auto,
    };
    let mut options = SubscribeOptions::new(mode).min_poll(seconds("--min-poll", args.min_poll)?);
    if let Some(c) = &args.cursor {
        options = options.cursor(c.clone());
    }
    let deadline = match args.duration {
        Some(s) => Some(tokio::time::Instant::now() + seconds("--duration", s)?),
        None => None,
    };
    let mut sub = target
        .within(
            "the subscription",
            client.subscribe_events(&args.event, Value::Object(arguments), options),
        )
        .await?;
    logs.flush().await;
    let mut seen = 0;
    let mut last_cursor = sub.cursor();
    while args.count.is_none_or(|n| seen < n) {
        let next = match deadline {
            Some(d) => match tokio::time::timeout_at(d, sub.next()).await {
                Ok(n) => n,
                Err(_) => break,
            },
            None => sub.next().await,
        };
        match next {
            None => break,
            Some(Err(e)) => return Err(e.into()),
            Some(Ok(EventItem::Truncated)) => {
                eprintln!("duomcp: occurrences were lost (truncated)");
            }
            Some(Ok(EventItem::Event(e))) => {
                seen += 1;
                println!("{}", occurrence_json(&e));
            }
            Some(Ok(_)) => {}
        }
        let cursor = sub.cursor();
        if cursor != last_cursor {
            if let Some(c) = &cursor {
                eprintln!("cursor {c}");
            }
            last_cursor = cursor;
        }
    }
    // The cursor to resume from, last.
    if let Some(c) = sub.cursor() {
        eprintln!("cursor {c}");
    }
    drop(sub);
    finish(client, Outcome::Ok).await
}
