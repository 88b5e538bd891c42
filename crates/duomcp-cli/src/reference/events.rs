//! The events extension (experimental): one demo event type, `demo.tick`, and the tool that
//! emits an occurrence of it, `test_emit_event`, so that `duomcp serve` exercises
//! `events/list`, `events/poll` and `events/stream` in both revisions; with `--webhooks`,
//! `events/subscribe` and `events/unsubscribe` too (webhook delivery, which needs an
//! authenticated caller: `--auth-token TOKEN=SCOPES`).

use duomcp::server::events::webhook::WebhookConfig;
use duomcp::server::events::{Delivery, EventType};
use duomcp::server::{Args, Context, HandlerError, ServerBuilder, ToolSpec};
use serde::Deserialize;
use serde_json::{json, Value};

/// The demo event type's name.
pub const DEMO_EVENT: &str = "demo.tick";

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
}

impl ServeWebhookArgs {
    /// The webhook configuration the flags ask for, `None` without `--webhooks`.
    ///
    /// ```
    /// use duomcp_cli::reference::events::ServeWebhookArgs;
    /// assert!(ServeWebhookArgs::default().config().unwrap().is_none());
    /// let args = ServeWebhookArgs { webhooks: true, allow_private: true, ca: None };
    /// assert!(args.config().unwrap().unwrap().allow_private_networks);
    /// let args = ServeWebhookArgs { webhooks: true, allow_private: false, ca: Some("/nonexistent.pem".into()) };
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
