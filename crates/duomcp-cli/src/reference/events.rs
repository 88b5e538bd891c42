//! The events extension (experimental): the demo event type `demo.tick` and the tool that
//! emits an occurrence of it, `test_emit_event`, so that `duomcp serve` exercises
//! `events/list`, `events/poll` and `events/stream` in both revisions; with `--webhooks`,
//! `events/subscribe` and `events/unsubscribe` too (webhook delivery, which needs an
//! authenticated caller: `--auth-token TOKEN=SCOPES`). For the conformance suite's events
//! scenarios: `demo.tock` (push only, never emitted: a type to terminate), the tools
//! `events_conformance_yield_error`, `events_conformance_yield_gap` and
//! `events_conformance_terminate` (`{name}`: [`Events::report_error`], [`Events::gap`],
//! [`Events::terminate`]), and `--event-interval SECONDS` (`demo.tick` emitted by the server
//! itself, room `lobby`).
//!
//! [`Events::report_error`]: duomcp::server::events::Events::report_error
//! [`Events::gap`]: duomcp::server::events::Events::gap
//! [`Events::terminate`]: duomcp::server::events::Events::terminate

use duomcp::server::events::webhook::WebhookConfig;
use duomcp::server::events::{Delivery, EventType};
use duomcp::server::{Args, Context, HandlerError, ServerBuilder, ToolSpec};
use serde::Deserialize;
use serde_json::{json, Value};

/// The demo event type's name.
pub const DEMO_EVENT: &str = "demo.tick";
/// The push-only demo type, never emitted (the conformance suite terminates it).
pub const PUSH_ONLY_EVENT: &str = "demo.tock";

#[derive(Deserialize, schemars::JsonSchema)]
struct ControlArgs {
    /// The event type.
    name: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct EmitArgs {
    /// The room the occurrence happens in (a subscription naming a room hears only of it).
    #[serde(default)]
    room: Option<String>,
    /// A message carried in the occurrence's data.
    #[serde(default)]
    message: Option<String>,
}

/// Whether an occurrence's `data` is in the room a subscription's `arguments` name (every
/// room when they name none).
fn same_room(arguments: &Value, data: &Value) -> bool {
    match arguments.get("room") {
        Some(room) => data.get("room") == Some(room),
        None => true,
    }
}

pub(super) fn register(b: ServerBuilder) -> ServerBuilder {
    let tick = EventType::new(DEMO_EVENT)
        .description("A demo occurrence, emitted by the tool test_emit_event")
        .input_schema(json!({
            "type": "object",
            "properties": { "room": { "type": "string", "description": "Only this room's ticks" } },
            "additionalProperties": false
        }))
        .payload_schema(json!({
            "type": "object",
            "properties": { "room": { "type": "string" }, "message": { "type": "string" } }
        }))
        // Webhook is listed only when `--webhooks` configures it.
        .delivery([Delivery::Poll, Delivery::Push, Delivery::Webhook])
        .filter(same_room);
    let emit = ToolSpec::new("test_emit_event")
        .description("Emits an occurrence of the demo event demo.tick; returns its eventId")
        .input_schema(json!({
            "type": "object",
            "properties": {
                "room": { "type": "string" },
                "message": { "type": "string" }
            }
        }));
    let tock = EventType::new(PUSH_ONLY_EVENT)
        .description("A push-only demo type that nothing emits (for terminating a stream)")
        .payload_schema(json!({ "type": "object" }))
        .delivery([Delivery::Push]);
    let control = |name: &str, what: &str| {
        ToolSpec::new(name.to_owned())
            .description(what.to_owned())
            .input_schema(json!({
                "type": "object",
                "properties": { "name": { "type": "string", "description": "The event type" } },
                "required": ["name"]
            }))
    };
    let b = b
        .event(tock)
        .tool(
            control(
                "events_conformance_yield_error",
                "Tells the open streams of an event type of a recoverable error",
            ),
            |ctx: Context, Args(a): Args<ControlArgs>| async move {
                let error = duomcp::jsonrpc::ErrorObject::new(-32603, "UpstreamError")
                    .with_data(json!({ "reason": "a conformance control asked for it" }));
                ctx.server()
                    .events()
                    .report_error(&a.name, error)
                    .map(|n| format!("{n} stream(s) told"))
                    .map_err(|e| HandlerError::msg(e.to_string()))
            },
        )
        .tool(
            control(
                "events_conformance_yield_gap",
                "Declares that occurrences of an event type may have been lost",
            ),
            |ctx: Context, Args(a): Args<ControlArgs>| async move {
                ctx.server()
                    .events()
                    .gap(&a.name)
                    .map(|()| "gap declared".to_owned())
                    .map_err(|e| HandlerError::msg(e.to_string()))
            },
        )
        .tool(
            control(
                "events_conformance_terminate",
                "Ends the open streams of an event type (notifications/events/terminated)",
            ),
            |ctx: Context, Args(a): Args<ControlArgs>| async move {
                let error = duomcp::jsonrpc::ErrorObject::new(-32012, "Forbidden")
                    .with_data(json!({ "reason": "terminated by a conformance control" }));
                ctx.server()
                    .events()
                    .terminate(&a.name, error)
                    .map(|n| format!("{n} stream(s) ended"))
                    .map_err(|e| HandlerError::msg(e.to_string()))
            },
        );
    b.event(tick)
        .tool(emit, |ctx: Context, Args(a): Args<EmitArgs>| async move {
            let data = json!({
                "room": a.room.unwrap_or_else(|| "lobby".into()),
                "message": a.message.unwrap_or_else(|| "tick".into()),
            });
            ctx.server()
                .events()
                .emit(DEMO_EVENT, data)
                .map_err(|e| HandlerError::msg(e.to_string()))
        })
}

/// `duomcp serve`'s webhook flags (the events extension, experimental).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ServeWebhookArgs {
    /// Deliver `demo.tick` by webhook too (`events/subscribe`, `events/unsubscribe`; they need
    /// an authenticated caller, e.g. `--auth-token TOKEN=SCOPES`). Callback URLs must be
    /// `https`; each is verified by a challenge POST before its first delivery. Bounds:
    /// LIMITS.md.
    #[arg(long = "webhooks")]
    pub webhooks: bool,
    /// With --webhooks: also deliver to loopback, private and link-local addresses (refused
    /// by default, when connecting). For tests and private networks.
    #[arg(long = "webhook-allow-private", requires = "webhooks")]
    pub allow_private: bool,
    /// With --webhooks: trust the certificate authorities of this PEM file too, for callback
    /// endpoints with a private CA.
    #[arg(long = "webhook-ca", value_name = "FILE", requires = "webhooks")]
    pub ca: Option<std::path::PathBuf>,
    /// Emit `demo.tick` (room `lobby`) every SECONDS by the server itself, as an upstream
    /// would (from 0.01 to 3600).
    #[arg(long = "event-interval", value_name = "SECONDS", value_parser = parse_interval)]
    pub event_interval: Option<std::time::Duration>,
}

fn parse_interval(text: &str) -> Result<std::time::Duration, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if !(0.01..=3600.0).contains(&secs) {
        return Err(format!("{secs} s is outside 0.01 to 3600"));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// Emits `demo.tick` every `every` for as long as the process runs (`--event-interval`).
pub fn emit_every(server: &duomcp::server::Server, every: std::time::Duration) {
    let server = server.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.tick().await;
        let mut n: u64 = 0;
        loop {
            tick.tick().await;
            n += 1;
            let data = json!({ "room": "lobby", "message": format!("interval {n}") });
            if let Err(e) = server.events().emit(DEMO_EVENT, data) {
                tracing::warn!(error = %e, "--event-interval: not emitted");
            }
        }
    });
}

impl ServeWebhookArgs {
    /// The webhook configuration the flags ask for, `None` without `--webhooks`.
    ///
    /// ```
    /// use duomcp_cli::reference::events::ServeWebhookArgs;
    /// assert!(ServeWebhookArgs::default().config().unwrap().is_none());
    /// let args = ServeWebhookArgs { webhooks: true, allow_private: true, ..Default::default() };
    /// assert!(args.config().unwrap().unwrap().allow_private_networks);
    /// let args = ServeWebhookArgs { webhooks: true, ca: Some("/nonexistent.pem".into()), ..Default::default() };
    /// assert!(args.config().is_err());
    /// ```
    pub fn config(&self) -> Result<Option<WebhookConfig>, String> {
        if !self.webhooks {
            return Ok(None);
        }
        let mut config = WebhookConfig::default();
        config.allow_private_networks = self.allow_private;
        if let Some(path) = &self.ca {
            let pem =
                std::fs::read(path).map_err(|e| format!("--webhook-ca {}: {e}", path.display()))?;
            config = config
                .root_certificate_pem(&pem)
                .map_err(|e| format!("--webhook-ca {}: {e}", path.display()))?;
        }
        Ok(Some(config))
    }

    /// `builder` with webhook delivery when `--webhooks` asks for it.
    pub fn apply(&self, builder: ServerBuilder) -> Result<ServerBuilder, String> {
        Ok(match self.config()? {
            Some(config) => builder.webhooks(config),
            None => builder,
        })
    }
}
