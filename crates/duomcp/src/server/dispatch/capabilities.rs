//! What the server advertises (`initialize`'s and `server/discover`'s `capabilities`), from
//! what is registered; the one difference between the eras, where tasks are declared, is the
//! adapter's to say.

#[cfg(feature = "skills")]
use crate::server::skills;
use crate::server::{apps, tasks, Shared};
use duomcp_schema::ServerCapabilities;
use serde_json::{json, Map, Value};

/// Where an era declares that tools may run as tasks.
#[derive(Clone, Copy)]
pub(super) enum TasksDeclared {
    /// 2025-11-25: a `tasks` capability of its own.
    AsCapability,
    /// 2026-07-28: the `io.modelcontextprotocol/tasks` extension.
    AsExtension,
}

/// The capabilities the server advertises, from what is registered.
pub(super) fn capabilities(shared: &Shared, tasks_declared: TasksDeclared) -> ServerCapabilities {
    let reg = shared.registry();
    let mut caps = json!({});
    if !reg.tools.is_empty() {
        caps["tools"] = json!({ "listChanged": true });
    }
    if !reg.prompts.is_empty() {
        caps["prompts"] = json!({ "listChanged": true });
    }
    if !reg.resources.is_empty() || !reg.templates.is_empty() || skills_enabled(shared) {
        caps["resources"] = json!({ "subscribe": true, "listChanged": true });
    }
    if reg.completion.is_some() {
        caps["completions"] = json!({});
    }
    caps["logging"] = json!({});
    #[cfg(feature = "events")]
    if let Some(events) = crate::server::events::capability(&shared.event_hub) {
        caps["events"] = events;
    }
    let task_tools = tasks::any_task_tool(
        reg.tools
            .values()
            .map(|e| e.tool.execution.as_ref().and_then(|x| x.task_support)),
    );
    let mut extensions = Map::new();
    match tasks_declared {
        TasksDeclared::AsCapability if task_tools => {
            caps["tasks"] =
                json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } });
        }
        TasksDeclared::AsExtension if task_tools => {
            extensions.insert(tasks::EXTENSION_ID.into(), json!({}));
        }
        _ => {}
    }
    // The events extension, also under its id: the design declares `capabilities.events`,
    // later drafts (and the conformance suite) read `extensions["io.modelcontextprotocol/events"]`.
    #[cfg(feature = "events")]
    if let Some(events) = crate::server::events::capability(&shared.event_hub) {
        extensions.insert(crate::server::events::EXTENSION_ID.into(), events);
    }
    #[cfg(feature = "skills")]
    if shared.skills.enabled() {
        extensions.insert(
            skills::EXTENSION_ID.into(),
            json!({ "directoryRead": true }),
        );
    }
    apps::declare(&reg, &mut extensions);
    // The application's own declarations last: its settings win.
    for (id, settings) in &shared.extensions {
        extensions.insert(id.clone(), settings.clone());
    }
    if !extensions.is_empty() {
        caps["extensions"] = Value::Object(extensions);
    }
    serde_json::from_value(caps).unwrap_or_default()
}

/// Whether skills are served (never without the feature `skills`).
fn skills_enabled(shared: &Shared) -> bool {
    #[cfg(feature = "skills")]
    return shared.skills.enabled();
    #[cfg(not(feature = "skills"))]
    {
        let _ = shared;
        false
    }
}
