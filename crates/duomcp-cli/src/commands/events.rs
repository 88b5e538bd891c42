//! `duomcp events list|poll|watch|subscribe|unsubscribe|receive`: the MCP Events extension
//! (experimental) from the command line.

use super::{finish, parse_pairs, Failure, Outcome, Target, UrlTarget};
use clap::{Args, Subcommand, ValueEnum};
use duomcp::client::events::{
    DeliveryMode, EventItem, PollOptions, SubscribeOptions, Ttl, WebhookOptions,
};
use duomcp::webhook::receiver::{Outcome as Received, Receiver, ReceiverOptions};
use duomcp::webhook::Secret;
use serde_json::{json, Map, Value};
use std::time::Duration;

/// `duomcp events list|poll|watch|subscribe|unsubscribe|receive`
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
    /// Have the server POST occurrences to a webhook (`events/subscribe`), or refresh that
    /// subscription; prints the result as JSON:
    /// `duomcp events subscribe URL NAME --webhook HOOK_URL [--secret whsec_…] [--ttl S]`.
    Subscribe(SubscribeArgs),
    /// End a webhook subscription (`events/unsubscribe`):
    /// `duomcp events unsubscribe URL NAME --webhook HOOK_URL`.
    Unsubscribe(UnsubscribeArgs),
    /// Receive webhook deliveries: verify each, answer verification challenges, print each
    /// verified occurrence or envelope as a JSON line:
    /// `duomcp events receive --listen HOST:PORT --secret whsec_… [--count N]`.
    Receive(ReceiveArgs),
}

/// `duomcp events subscribe [URL] NAME [key=value ...] --webhook URL [--secret S | --secret-file F]`
#[derive(Debug, Args)]
pub struct SubscribeArgs {
    /// The event type (the server's URL may come before it).
    pub event: String,
    /// Arguments as `key=value`, as for `duomcp call`. A word starting with `http://` or
    /// `https://` is the server's URL.
    pub pairs: Vec<String>,
    /// Arguments as one JSON object (merged under any `key=value` pairs).
    #[arg(long, value_name = "JSON")]
    pub args: Option<String>,
    /// Where the server POSTs the occurrences (`delivery.url`; `https://` for a server that
    /// follows the design).
    #[arg(long, value_name = "URL")]
    pub webhook: String,
    /// The signing secret (`whsec_` and base64 of 24 to 64 bytes). Without it (or
    /// --secret-file) a new one is generated and printed on stderr, for the receiver.
    #[arg(long, value_name = "whsec_…", value_parser = parse_secret, conflicts_with = "secret_file")]
    pub secret: Option<Secret>,
    /// Read the secret from this file (its first line).
    #[arg(long, value_name = "PATH")]
    pub secret_file: Option<std::path::PathBuf>,
    /// Suggest this lifetime, in seconds (`ttlMs`); without it, the server's default.
    #[arg(long, value_name = "SECONDS", conflicts_with = "no_expiry")]
    pub ttl: Option<f64>,
    /// Ask for a subscription that does not expire (`ttlMs: null`).
    #[arg(long)]
    pub no_expiry: bool,
    /// Where to start (a cursor persisted earlier); without it, from now.
    #[arg(long, value_name = "CURSOR")]
    pub cursor: Option<String>,
    /// Skip occurrences older than this, in seconds, when replaying from --cursor (`maxAgeMs`).
    #[arg(long, value_name = "SECONDS")]
    pub max_age: Option<f64>,
    #[command(flatten)]
    pub target: Target,
}

/// `duomcp events unsubscribe [URL] NAME [key=value ...] --webhook URL`
#[derive(Debug, Args)]
pub struct UnsubscribeArgs {
    /// The event type (the server's URL may come before it).
    pub event: String,
    /// Arguments as `key=value`, as given to `subscribe`.
    pub pairs: Vec<String>,
    /// Arguments as one JSON object (merged under any `key=value` pairs).
    #[arg(long, value_name = "JSON")]
    pub args: Option<String>,
    /// The webhook URL the subscription delivers to.
    #[arg(long, value_name = "URL")]
    pub webhook: String,
    #[command(flatten)]
    pub target: Target,
}

/// `duomcp events receive --listen HOST:PORT --secret [ID=]whsec_… [--tls-cert F --tls-key F]`
#[derive(Debug, Args)]
pub struct ReceiveArgs {
    /// Where to listen (port 0 picks a free one). The URL to subscribe is printed as the first
    /// line of stdout.
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: String,
    /// A secret deliveries are verified with (repeatable): `whsec_…` for any subscription, or
    /// `ID=whsec_…` for the subscription whose `X-MCP-Subscription-Id` is ID only (then
    /// deliveries for other ids need a secret of their own, or one for any). Several for one
    /// ID all verify (while its secret is rotated).
    #[arg(long = "secret", value_name = "[ID=]whsec_…", required = true, value_parser = parse_routed_secret)]
    pub secrets: Vec<(Option<String>, Secret)>,
    /// Serve HTTPS with this certificate chain (PEM, leaf first). Needs --tls-key.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// With --tls-cert: the certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
    /// Exit (status 0) after printing this many deliveries (later ones get 503, never a 200
    /// for a delivery that is not printed).
    #[arg(long, value_name = "N")]
    pub count: Option<usize>,
    /// Exit (status 0) after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// The largest body taken, in bytes; larger ones get 413.
    #[arg(long, value_name = "BYTES", default_value_t = 256 * 1024)]
    pub max_body: usize,
}

fn parse_secret(text: &str) -> Result<Secret, String> {
    Secret::parse(text.trim()).map_err(|e| e.to_string())
}

fn parse_routed_secret(text: &str) -> Result<(Option<String>, Secret), String> {
    match text.split_once('=') {
        // base64 may end in `=`: an id is what comes before `=whsec_`.
        Some((id, rest)) if !id.is_empty() && rest.starts_with("whsec_") => {
            Ok((Some(id.to_owned()), parse_secret(rest)?))
        }
        _ => Ok((None, parse_secret(text)?)),
    }
}

/// The arguments of `--args` and `key=value` pairs, as one object.
fn arguments_of(args: Option<&str>, pairs: &[String]) -> Result<Map<String, Value>, Failure> {
    let mut arguments: Map<String, Value> = match args {
        None => Map::new(),
        Some(text) => match serde_json::from_str(text) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err(Failure::new("--args must be a JSON object")),
            Err(e) => return Err(Failure::new(format!("--args is not valid JSON: {e}"))),
        },
    };
    arguments.extend(parse_pairs(pairs, None)?);
    Ok(arguments)
}

/// `subscribe URL NAME`: the URL first, as `duomcp events subscribe https://… demo.tick`.
fn url_first(event: &mut String, pairs: &mut Vec<String>) {
    if super::is_url(event) && !pairs.is_empty() {
        let name = pairs.remove(0);
        pairs.push(std::mem::replace(event, name));
    }
}

impl SubscribeArgs {
    pub(crate) fn normalize(&mut self) {
        url_first(&mut self.event, &mut self.pairs);
        self.target.adopt_url_from(&mut self.pairs);
    }
}

impl UnsubscribeArgs {
    pub(crate) fn normalize(&mut self) {
        url_first(&mut self.event, &mut self.pairs);
        self.target.adopt_url_from(&mut self.pairs);
    }
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

pub(crate) async fn subscribe(args: &SubscribeArgs) -> Result<Outcome, Failure> {
    let target = &args.target;
    let arguments = arguments_of(args.args.as_deref(), &args.pairs)?;
    let (secret, generated) = match (&args.secret, &args.secret_file) {
        (Some(s), _) => (s.clone(), false),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Failure::new(format!("--secret-file {}: {e}", path.display())))?;
            let first = text.lines().next().unwrap_or_default();
            let secret = parse_secret(first)
                .map_err(|e| Failure::new(format!("--secret-file {}: {e}", path.display())))?;
            (secret, false)
        }
        (None, None) => (Secret::generate(), true),
    };
    let mut options = WebhookOptions::new(args.webhook.clone(), secret.clone());
    if let Some(c) = &args.cursor {
        options = options.cursor(c.clone());
    }
    if let Some(s) = args.ttl {
        options = options.ttl(Ttl::Suggest(seconds("--ttl", s)?));
    } else if args.no_expiry {
        options = options.ttl(Ttl::NoExpiry);
    }
    if let Some(s) = args.max_age {
        options = options.max_age(seconds("--max-age", s)?);
    }
    let (client, logs) = target.connect().await?;
    let sub = target
        .within(
            "events/subscribe",
            client.subscribe_webhook(&args.event, Value::Object(arguments), &options),
        )
        .await?;
    logs.flush().await;
    if generated {
        // On stderr: stdout is the result, which may be stored or piped.
        eprintln!(
            "duomcp: the deliveries are signed with this new secret (give it to the receiver, \
             e.g. `duomcp events receive --secret {}=…`):",
            sub.id
        );
        eprintln!("{}", secret.expose());
    }
    let status = sub.delivery_status.as_ref().map(|d| {
        json!({
            "active": d.active,
            "lastDeliveryAt": d.last_delivery_at,
            "lastError": d.last_error,
            "failedSince": d.failed_since,
        })
    });
    let mut out = json!({
        "id": sub.id,
        "refreshBefore": sub.refresh_before,
        "cursor": sub.cursor,
        "truncated": sub.truncated,
    });
    if let Some(s) = status {
        out["deliveryStatus"] = s;
    }
    target.print_json(&out)?;
    finish(client, Outcome::Ok).await
}

pub(crate) async fn unsubscribe(args: &UnsubscribeArgs) -> Result<Outcome, Failure> {
    let target = &args.target;
    let arguments = arguments_of(args.args.as_deref(), &args.pairs)?;
    let (client, logs) = target.connect().await?;
    target
        .within(
            "events/unsubscribe",
            client.unsubscribe_webhook(&args.event, Value::Object(arguments), &args.webhook),
        )
        .await?;
    logs.flush().await;
    if target.json {
        target.print_json(&json!({}))?;
    }
    finish(client, Outcome::Ok).await
}

/// `duomcp events receive`: serves until `--count` deliveries are printed, `--duration` has
/// passed, or Ctrl-C / SIGTERM; exit status 0 then, 1 when it cannot listen.
pub(crate) async fn receive(args: ReceiveArgs) -> Result<Outcome, Failure> {
    use duomcp::transport::http::{serve_with, tls, ServeOptions};
    let mut options = ReceiverOptions::default();
    options.max_body = args.max_body;
    // With --count, the N+1-th delivery gets 503 rather than a 200 for something never printed.
    options.max_deliveries = args.count;
    let (receiver, mut deliveries) = Receiver::new(options);
    // Several secrets for one id (or for any) all verify: a secret being rotated.
    let mut any = Vec::new();
    let mut routed: std::collections::BTreeMap<&str, Vec<Secret>> = Default::default();
    for (id, secret) in &args.secrets {
        match id {
            Some(id) => routed.entry(id).or_default().push(secret.clone()),
            None => any.push(secret.clone()),
        }
    }
    for (id, secrets) in routed {
        receiver.route_all(id, secrets);
    }
    receiver.set_fallback(any);
    let deadline = match args.duration {
        Some(s) => Some(tokio::time::Instant::now() + seconds("--duration", s)?),
        None => None,
    };
    // The certificate is read before binding: a bad file is reported before anything listens.
    let mut serve = ServeOptions::default();
    serve.shutdown_grace = Duration::from_secs(1);
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        serve.tls = Some(
            tls::server_config_from_pem_files(cert, key)
                .map_err(|e| Failure::new(e.to_string()))?,
        );
    }
    let scheme = if serve.tls.is_some() { "https" } else { "http" };
    let listener = crate::serve_addr::bind(&args.listen)
        .await
        .map_err(Failure::new)?;
    let local = listener.local_addr()?;
    let handler = {
        let receiver = receiver.clone();
        axum::routing::post(
            move |headers: axum::http::HeaderMap, body: axum::body::Body| {
                let receiver = receiver.clone();
                async move {
                    let outcome = receiver.handle(&headers, body).await;
                    let id = headers
                        .get(duomcp::webhook::ID)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("-");
                    match &outcome {
                        Received::Rejected(r) => eprintln!(
                            "duomcp: refused delivery {} ({}): {}",
                            super::output::safe(id),
                            r.status().as_u16(),
                            super::output::safe(&r.to_string())
                        ),
                        Received::Challenge(_) => eprintln!(
                            "duomcp: answered a verification challenge ({})",
                            super::output::safe(id)
                        ),
                        Received::Duplicate => eprintln!(
                            "duomcp: delivery {} again: already taken",
                            super::output::safe(id)
                        ),
                        _ => {}
                    }
                    outcome
                }
            },
        )
    };
    let app = axum::Router::new()
        .route("/", handler.clone())
        .route("/{*path}", handler);
    // Installed before the URL is printed: a signal sent as soon as it is seen stops the
    // receiver instead of killing it.
    let signal = duomcp::server::shutdown_signal();
    tokio::pin!(signal);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_with(listener, app, serve, async move {
        let _ = stop_rx.await;
    }));
    println!("{scheme}://{local}/");
    let mut printed = 0usize;
    while args.count.is_none_or(|n| printed < n) {
        let wait_deadline = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        let d = tokio::select! {
            d = deliveries.recv() => d,
            () = wait_deadline => break,
            () = &mut signal => break,
        };
        let Some(d) = d else { break };
        println!(
            "{}",
            json!({
                "subscriptionId": d.subscription_id,
                "webhookId": d.webhook_id,
                "body": d.body,
            })
        );
        printed += 1;
    }
    let _ = stop_tx.send(());
    match server.await {
        Ok(Ok(())) => Ok(Outcome::Ok),
        Ok(Err(e)) => Err(e.into()),
        Err(e) => Err(Failure::new(e.to_string())),
    }
}
