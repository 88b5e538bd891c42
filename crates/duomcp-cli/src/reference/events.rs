//! The events extension (experimental): one demo event type, `demo.tick`, and the tool that
//! emits an occurrence of it, `test_emit_event`, so that `duomcp serve` exercises
//! `events/list`, `events/poll` and `events/stream` in both revisions.

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
        .delivery([Delivery::Poll, Delivery::Push])
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
