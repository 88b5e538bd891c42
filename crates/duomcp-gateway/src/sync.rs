//! The upstreams' lists, registered on the gateway's server (and re-synced on list_changed),
//! and the upstream subscriptions a client's `resources/subscribe` or `subscriptions/listen`
//! needs.

use crate::bridge;
use crate::names;
use crate::upstream::Upstream;
use crate::Shared;
use duomcp::client::Client;
use duomcp::server::middleware::{McpRequest, McpResponse, McpService, Service};
use duomcp::server::{Args, Context, HandlerError, ListKind, PromptSpec, ToolSpec, Uri};
use duomcp_schema::{
    CompleteReference, GetPromptResult, ReadResourceResult, ResourceContents, SubscriptionFilter,
};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::Poll;

/// Upstream resource subscriptions the gateway keeps open at most, over all upstreams.
pub const MAX_UPSTREAM_SUBSCRIPTIONS: usize = 1024;

/// What one upstream has registered on the gateway's server, by client-side name or URI, with
/// the definition as registered (to skip unchanged ones on a re-sync).
#[derive(Default)]
struct Registered {
    tools: HashMap<String, Value>,
    prompts: HashMap<String, Value>,
    resources: HashMap<String, Value>,
    templates: HashMap<String, Value>,
    /// A 2026-07-28 upstream's list_changed notifications come on a listen stream.
    listening: bool,
    /// The upstream whose handlers these registrations call (its address): another one of the
    /// same name (a reload changed it) registers every item again, with handlers calling it.
    origin: usize,
}

/// The registrations of every upstream, and the upstream subscriptions open.
#[derive(Default)]
pub(crate) struct SyncState {
    registered: Mutex<HashMap<String, Registered>>,
    subscriptions: Mutex<HashMap<(String, String), tokio::task::JoinHandle<()>>>,
    /// One re-sync at a time.
    running: tokio::sync::Mutex<()>,
    /// When each upstream was last re-synced for a read of an unknown URI.
    last_miss: Mutex<HashMap<String, std::time::Instant>>,
    /// Upstreams whose lists changed, waiting for the re-sync already scheduled.
    changed: Mutex<Changed>,
    /// The re-sync scheduled for when a 2026-07-28 upstream's lists go stale (`ttlMs`), per
    /// upstream (one each).
    stale_timers: Mutex<HashMap<String, tokio::task::JoinHandle<()>>>,
    /// What the last re-sync of each upstream did not serve, and why.
    notes: Mutex<HashMap<String, Vec<String>>>,
    /// The listen stream kept open for each 2026-07-28 upstream's list changes.
    listeners: Mutex<HashMap<String, tokio::task::JoinHandle<()>>>,
}

/// A 2026-07-28 upstream whose lists say a shorter `ttlMs` is re-listed this often at most.
pub const MIN_LIST_TTL: std::time::Duration = std::time::Duration::from_secs(1);

/// One page of a list: its items, the next cursor, its `ttlMs`.
type Page<T> = (Vec<T>, Option<String>, Option<u64>);

/// What the gateway kept of one upstream list.
pub(crate) struct Listed<T> {
    /// The items, at most `max_list_items` of them and `max_list_bytes` as JSON.
    pub items: Vec<T>,
    /// The shortest non-zero `ttlMs` its pages gave.
    pub ttl: Option<u64>,
    /// Why paging stopped early, when it did.
    pub capped: Option<String>,
}

/// Counts the bytes of an item's JSON without keeping them.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Pages a list to its end or to the upstream's caps (`max_list_items`, `max_list_bytes`),
/// whichever comes first: an upstream listing without end, or huge items, cannot grow the
/// gateway past them.
pub(crate) async fn all_pages<P, T, F, Fut>(
    mut fetch: F,
    split: fn(P) -> Page<T>,
    u: &Upstream,
) -> Result<Listed<T>, duomcp::client::ClientError>
where
    T: serde::Serialize,
    F: FnMut(Option<String>) -> Fut,
    Fut: std::future::Future<Output = Result<P, duomcp::client::ClientError>>,
{
    let (max_items, max_bytes) = (u.config.list_items(), u.config.list_bytes());
    let mut listed = Listed {
        items: Vec::new(),
        ttl: None,
        capped: None,
    };
    let mut bytes = 0usize;
    let mut cursor = None;
    for _ in 0..MAX_LIST_PAGES {
        let (items, next, page_ttl) = split(fetch(cursor).await?);
        listed.ttl = match (listed.ttl, page_ttl.filter(|t| *t > 0)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let mut left_out = 0usize;
        for item in items {
            let mut size = Counter(0);
            let _ = serde_json::to_writer(&mut size, &item);
            if left_out > 0
                || listed.items.len() >= max_items
                || bytes.saturating_add(size.0) > max_bytes
            {
                left_out += 1;
                continue;
            }
            bytes += size.0;
            listed.items.push(item);
        }
        let more = next.as_deref().is_some_and(|c| !c.is_empty());
        if left_out > 0 || (more && listed.items.len() >= max_items) {
            listed.capped = Some(format!(
                "list capped at {} items, {bytes} bytes (max_list_items = {max_items}, \
                 max_list_bytes = {max_bytes}): {left_out} more on the last page read{}",
                listed.items.len(),
                if more { ", further pages not read" } else { "" }
            ));
            return Ok(listed);
        }
        match next {
            Some(c) if !c.is_empty() => cursor = Some(c),
            _ => return Ok(listed),
        }
    }
    Err(duomcp::client::ClientError::Protocol(format!(
        "a list of more than {MAX_LIST_PAGES} pages"
    )))
}

/// What the gateway did not serve of one upstream's lists (capped lists, names it refused,
/// names another upstream has), at most [`MAX_NOTES`] lines, each logged as it is noted.
pub(crate) struct Notes {
    upstream: String,
    lines: Vec<String>,
    more: usize,
}

/// Lines of [`Notes`] kept (and logged) per upstream and re-sync; the rest are counted.
pub const MAX_NOTES: usize = 20;

impl Notes {
    pub(crate) fn new(upstream: &str) -> Self {
        Notes {
            upstream: upstream.to_owned(),
            lines: Vec::new(),
            more: 0,
        }
    }

    pub(crate) fn add(&mut self, line: String) {
        if self.lines.len() < MAX_NOTES {
            tracing::warn!(upstream = %self.upstream, "{line}");
            self.lines.push(line);
        } else {
            self.more += 1;
        }
    }

    pub(crate) fn finish(mut self) -> Vec<String> {
        if self.more > 0 {
            let line = format!("and {} more not served", self.more);
            tracing::warn!(upstream = %self.upstream, "{line}");
            self.lines.push(line);
        }
        self.lines
    }
}

/// The longest resource URI (or template) the gateway serves, in characters.
pub const MAX_URI_CHARS: usize = 2048;

/// Pages of one upstream list the gateway follows at most.
const MAX_LIST_PAGES: usize = 10_000;

/// After a re-sync of a 2026-07-28 upstream whose lists said `ttlMs`: re-sync it again when
/// they go stale (clients hear of it only when something changed).
fn schedule_stale_resync(shared: &Arc<Shared>, name: &str, ttl_ms: Option<u64>) {
    let mut timers = lock(&shared.sync.stale_timers);
    if let Some(old) = timers.remove(name) {
        old.abort();
    }
    let Some(ttl) = ttl_ms.filter(|t| *t > 0) else {
        return;
    };
    let delay = std::time::Duration::from_millis(ttl).max(MIN_LIST_TTL);
    let weak = Arc::downgrade(shared);
    let upstream = name.to_owned();
    let task: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> =
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            if let Some(shared) = weak.upgrade() {
                resync(&shared, &upstream).await;
            }
        });
    timers.insert(name.to_owned(), tokio::spawn(task));
}

/// What changed upstream since the last re-sync was scheduled.
#[derive(Default)]
struct Changed {
    upstreams: std::collections::BTreeSet<String>,
    lists: Vec<ListKind>,
    scheduled: bool,
}

/// Upstream list changes within this window are re-synced together and reach the clients as
/// one `list_changed` per list (several upstreams changing at once, or one changing often).
/// The default of `[gateway] list_change_window_ms`.
pub const LIST_CHANGE_WINDOW: std::time::Duration = std::time::Duration::from_millis(30);

/// An upstream said one of its lists changed: re-sync it (with every other upstream that
/// changes within the window, [`LIST_CHANGE_WINDOW`] unless configured) and tell the clients, once per list. They are told
/// even when the re-sync finds nothing new (the upstream may have replaced a tool by the same).
pub(crate) fn list_changed(shared: Arc<Shared>, name: &str, list: ListKind) {
    let schedule = {
        let mut c = lock(&shared.sync.changed);
        c.upstreams.insert(name.to_owned());
        if !c.lists.contains(&list) {
            c.lists.push(list);
        }
        !std::mem::replace(&mut c.scheduled, true)
    };
    if !schedule {
        return;
    }
    tokio::spawn(async move {
        tokio::time::sleep(shared.list_change_window).await;
        let Some(server) = shared.server.get() else {
            return;
        };
        let _batch = server.batch_list_changes();
        let changed = std::mem::take(&mut *lock(&shared.sync.changed));
        for name in changed.upstreams {
            resync(&shared, &name).await;
        }
        for list in changed.lists {
            server.notify_list_changed(list);
        }
    });
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl SyncState {
    /// What the last re-sync of `upstream` did not serve, and why.
    pub(crate) fn notes(&self, upstream: &str) -> Vec<String> {
        lock(&self.notes).get(upstream).cloned().unwrap_or_default()
    }

    /// How many tools `upstream` registered.
    pub(crate) fn tool_count(&self, upstream: &str) -> usize {
        lock(&self.registered)
            .get(upstream)
            .map_or(0, |r| r.tools.len())
    }

    /// The other upstream that registered something `has` finds, if any.
    fn owner(&self, me: &str, has: impl Fn(&Registered) -> bool) -> Option<String> {
        lock(&self.registered)
            .iter()
            .find(|(name, r)| name.as_str() != me && has(r))
            .map(|(name, _)| name.clone())
    }

    /// Whether `upstream` registered the prompt or template `r` names (client-side names).
    pub(crate) fn owns(&self, upstream: &str, r: &CompleteReference) -> bool {
        let reg = lock(&self.registered);
        let Some(reg) = reg.get(upstream) else {
            return false;
        };
        match r {
            CompleteReference::Prompt(p) => reg.prompts.contains_key(&p.name),
            CompleteReference::ResourceTemplate(t) => {
                reg.templates.contains_key(&t.uri) || reg.resources.contains_key(&t.uri)
            }
        }
    }

    fn owns_uri(&self, upstream: &str, uri: &str) -> bool {
        lock(&self.registered)
            .get(upstream)
            .is_some_and(|r| r.resources.contains_key(uri) || !r.templates.is_empty())
    }
}

/// A reload removed the upstream `name` (`unregister`: its items leave the server) or replaced
/// it: what the gateway keeps for it stops (its list and resource subscriptions upstream, the
/// re-sync timer).
pub(crate) async fn forget(shared: &Arc<Shared>, name: &str, unregister: bool) {
    let _one = shared.sync.running.lock().await;
    if let Some(t) = lock(&shared.sync.stale_timers).remove(name) {
        t.abort();
    }
    if let Some(t) = lock(&shared.sync.listeners).remove(name) {
        t.abort();
    }
    lock(&shared.sync.subscriptions).retain(|(upstream, _), task| {
        let theirs = upstream == name;
        if theirs {
            task.abort();
        }
        !theirs
    });
    lock(&shared.sync.last_miss).remove(name);
    if !unregister {
        return;
    }
    lock(&shared.sync.notes).remove(name);
    let (Some(server), Some(old)) = (
        shared.server.get(),
        lock(&shared.sync.registered).remove(name),
    ) else {
        return;
    };
    for n in old.tools.keys() {
        server.remove_tool(n);
    }
    for n in old.prompts.keys() {
        server.remove_prompt(n);
    }
    for uri in old.resources.keys() {
        server.remove_resource(uri);
    }
    for t in old.templates.keys() {
        server.remove_resource_template(t);
    }
}

/// Reads the upstream's lists and brings the server's registrations in line with them.
pub(crate) async fn resync(shared: &Arc<Shared>, name: &str) {
    let _one = shared.sync.running.lock().await;
    let (Some(server), Some(u)) = (shared.server.get(), shared.upstream(name)) else {
        return;
    };
    let u = &u;
    // Everything this re-sync adds and removes is announced once.
    let _batch = server.batch_list_changes();
    let client = match u.client().await {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(upstream = %u.name(), "cannot list: {e}");
            return;
        }
    };
    let caps = client.server_capabilities();
    let modern = client.era() == duomcp::era::Era::Modern;
    let origin = Arc::as_ptr(u) as usize;
    // (Listening already: for this upstream, not one a reload replaced.)
    let listening = lock(&shared.sync.registered)
        .get(u.name())
        .is_some_and(|r| r.listening && r.origin == origin);
    let listen_now = modern && !listening;
    if listen_now {
        let task = listen_for_changes(&client, u.name());
        if let Some(old) = lock(&shared.sync.listeners).insert(u.name().to_owned(), task) {
            old.abort();
        }
    }
    let mut fresh = Registered {
        listening: listen_now || listening,
        ..Default::default()
    };
    let mut old = lock(&shared.sync.registered)
        .remove(u.name())
        .unwrap_or_default();
    fresh.origin = origin;
    // Registered by the upstream a reload replaced: every item again, calling this one (what
    // is in the lists of both is replaced in place, never missing in between).
    if old.origin != fresh.origin {
        for defs in [
            &mut old.tools,
            &mut old.prompts,
            &mut old.resources,
            &mut old.templates,
        ] {
            for def in defs.values_mut() {
                *def = Value::Null;
            }
        }
    }
    // The shortest `ttlMs` over the lists; a list without one (or 0: "do not cache") is kept
    // until the upstream's list_changed, as a 2025-11-25 upstream's.
    let mut ttl = None;
    let mut notes = Notes::new(u.name());
    let mut shortest = |t: Option<u64>| {
        ttl = match (ttl, t.filter(|t| *t > 0)) {
            (Some(a), Some(b)) => Some(std::cmp::min(a, b)),
            (a, b) => a.or(b),
        }
    };
    if caps.tools.is_some() {
        let listed = all_pages(
            |c| client.list_tools(c),
            |p: duomcp_schema::ListToolsResult| (p.tools, p.next_cursor, p.ttl_ms),
            u,
        )
        .await;
        match listed.map(|l| {
            shortest(l.ttl);
            if let Some(why) = l.capped {
                notes.add(format!("tools: {why}"));
            }
            l.items
        }) {
            Ok(tools) => {
                for mut tool in tools.into_iter().filter(|t| u.filter.admits(&t.name)) {
                    if !names::valid_tool_name(&tool.name) {
                        notes.add(format!(
                            "tool `{}` not served: a tool name is 1 to 128 of A-Z a-z 0-9 _ - .",
                            names::escaped(&tool.name)
                        ));
                        continue;
                    }
                    let inner = std::mem::take(&mut tool.name);
                    tool.name = u.naming.outer(&inner);
                    if tool.name.len() > names::MAX_NAME_CHARS {
                        notes.add(format!(
                            "tool `{inner}` not served: `{}` is longer than 128 characters",
                            tool.name
                        ));
                        continue;
                    }
                    if fresh.tools.contains_key(&tool.name) {
                        notes.add(format!(
                            "tool `{inner}` listed twice: the first one is served"
                        ));
                        continue;
                    }
                    let name = tool.name.as_str();
                    if let Some(other) = shared.sync.owner(u.name(), |r| r.tools.contains_key(name))
                    {
                        notes.add(format!(
                            "tool `{inner}` not served: `{}` is upstream `{other}`'s",
                            tool.name
                        ));
                        continue;
                    }
                    let def = serde_json::to_value(&tool).unwrap_or_default();
                    if old.tools.get(&tool.name) != Some(&def) {
                        // A 2025-11-25 upstream's task tool that a duomcp upstream says is
                        // deferred: a 2026-07-28 client gets its input rounds first, then
                        // the task (see `bridge::forward`).
                        let deferred = !modern
                            && tool.meta.as_ref().is_some_and(|m| {
                                m.get(duomcp::server::DEFER_TASK_META) == Some(&Value::Bool(true))
                            });
                        let mut spec =
                            ToolSpec::from(tool.clone()).scopes(u.config.scopes_for(&inner));
                        if deferred {
                            spec = spec.defer_task();
                        }
                        if modern {
                            // A 2026-07-28 upstream decides per call whether a tool runs as a
                            // task (its list does not say): any tool may become one, when the
                            // upstream answers with a task (see `bridge::follow_task`).
                            spec = spec
                                .task_support(duomcp_schema::TaskSupport::Optional)
                                .defer_task();
                        }
                        let plain = !modern
                            && tool
                                .execution
                                .as_ref()
                                .and_then(|e| e.task_support)
                                .is_none_or(|t| t == duomcp_schema::TaskSupport::Forbidden);
                        let flags = bridge::ToolFlags { deferred, plain };
                        server.add_tool(spec, tool_handler(shared, u, inner, flags));
                    }
                    fresh.tools.insert(tool.name, def);
                }
            }
            Err(e) => tracing::warn!(upstream = %u.name(), "tools/list failed: {e}"),
        }
    }
    if caps.prompts.is_some() {
        let listed = all_pages(
            |c| client.list_prompts(c),
            |p: duomcp_schema::ListPromptsResult| (p.prompts, p.next_cursor, p.ttl_ms),
            u,
        )
        .await;
        match listed.map(|l| {
            shortest(l.ttl);
            if let Some(why) = l.capped {
                notes.add(format!("prompts: {why}"));
            }
            l.items
        }) {
            Ok(prompts) => {
                for mut prompt in prompts {
                    if !names::printable_name(&prompt.name, names::MAX_NAME_CHARS) {
                        notes.add(format!(
                            "prompt `{}` not served: control or bidirectional characters, or \
                             longer than 128 characters",
                            names::escaped(&prompt.name)
                        ));
                        continue;
                    }
                    let inner = std::mem::take(&mut prompt.name);
                    prompt.name = u.naming.outer(&inner);
                    let name = prompt.name.as_str();
                    if fresh.prompts.contains_key(name) {
                        notes.add(format!(
                            "prompt `{inner}` listed twice: the first one is served"
                        ));
                        continue;
                    }
                    if let Some(other) = shared
                        .sync
                        .owner(u.name(), |r| r.prompts.contains_key(name))
                    {
                        notes.add(format!(
                            "prompt `{inner}` not served: `{name}` is upstream `{other}`'s"
                        ));
                        continue;
                    }
                    let def = serde_json::to_value(&prompt).unwrap_or_default();
                    if old.prompts.get(&prompt.name) != Some(&def) {
                        server.add_prompt(
                            PromptSpec::from(prompt.clone()),
                            prompt_handler(shared, u, inner),
                        );
                    }
                    fresh.prompts.insert(prompt.name, def);
                }
            }
            Err(e) => tracing::warn!(upstream = %u.name(), "prompts/list failed: {e}"),
        }
    }
    if caps.resources.is_some() {
        let listed = all_pages(
            |c| client.list_resources(c),
            |p: duomcp_schema::ListResourcesResult| (p.resources, p.next_cursor, p.ttl_ms),
            u,
        )
        .await;
        match listed.map(|l| {
            shortest(l.ttl);
            if let Some(why) = l.capped {
                notes.add(format!("resources: {why}"));
            }
            l.items
        }) {
            Ok(resources) => {
                for mut r in resources {
                    if !names::printable_name(&r.uri, MAX_URI_CHARS) {
                        notes.add(format!(
                            "resource `{}` not served: control or bidirectional characters, or \
                             a URI longer than {MAX_URI_CHARS} characters",
                            names::escaped(&r.uri)
                        ));
                        continue;
                    }
                    r.uri = u.naming.outer_uri(&r.uri);
                    let uri = r.uri.as_str();
                    if let Some(other) = shared
                        .sync
                        .owner(u.name(), |o| o.resources.contains_key(uri))
                    {
                        notes.add(format!(
                            "resource `{uri}` not served: it is upstream `{other}`'s"
                        ));
                        continue;
                    }
                    let def = serde_json::to_value(&r).unwrap_or_default();
                    if old.resources.get(&r.uri) != Some(&def) {
                        server.add_resource(r.clone(), read_handler(u));
                    }
                    fresh.resources.insert(r.uri, def);
                }
            }
            Err(e) => tracing::warn!(upstream = %u.name(), "resources/list failed: {e}"),
        }
        let listed = all_pages(
            |c| client.list_resource_templates(c),
            |p: duomcp_schema::ListResourceTemplatesResult| {
                (p.resource_templates, p.next_cursor, p.ttl_ms)
            },
            u,
        )
        .await;
        match listed.map(|l| {
            shortest(l.ttl);
            if let Some(why) = l.capped {
                notes.add(format!("resource templates: {why}"));
            }
            l.items
        }) {
            Ok(templates) => {
                for mut t in templates {
                    if !names::printable_name(&t.uri_template, MAX_URI_CHARS) {
                        notes.add(format!(
                            "resource template `{}` not served: control or bidirectional \
                             characters, or longer than {MAX_URI_CHARS} characters",
                            names::escaped(&t.uri_template)
                        ));
                        continue;
                    }
                    t.uri_template = u.naming.outer_uri(&t.uri_template);
                    let uri = t.uri_template.as_str();
                    if let Some(other) = shared
                        .sync
                        .owner(u.name(), |o| o.templates.contains_key(uri))
                    {
                        notes.add(format!(
                            "resource template `{uri}` not served: it is upstream `{other}`'s"
                        ));
                        continue;
                    }
                    let def = serde_json::to_value(&t).unwrap_or_default();
                    if old.templates.get(&t.uri_template) != Some(&def) {
                        if old.templates.contains_key(&t.uri_template) {
                            server.remove_resource_template(&t.uri_template);
                        }
                        server.add_resource_template(t.clone(), read_handler(u));
                    }
                    fresh.templates.insert(t.uri_template, def);
                }
            }
            Err(e) => tracing::warn!(upstream = %u.name(), "resources/templates/list failed: {e}"),
        }
    }
    for name in old.tools.keys().filter(|k| !fresh.tools.contains_key(*k)) {
        server.remove_tool(name);
    }
    for name in old
        .prompts
        .keys()
        .filter(|k| !fresh.prompts.contains_key(*k))
    {
        server.remove_prompt(name);
    }
    for uri in old
        .resources
        .keys()
        .filter(|k| !fresh.resources.contains_key(*k))
    {
        server.remove_resource(uri);
    }
    for t in old
        .templates
        .keys()
        .filter(|k| !fresh.templates.contains_key(*k))
    {
        server.remove_resource_template(t);
    }
    lock(&shared.sync.registered).insert(u.name().to_owned(), fresh);
    lock(&shared.sync.notes).insert(u.name().to_owned(), notes.finish());
    if modern {
        schedule_stale_resync(shared, u.name(), ttl);
    }
}

/// A 2026-07-28 upstream sends list changes only on a `subscriptions/listen` stream: keep one
/// open (its notifications reach the gateway through the connection-wide stream).
fn listen_for_changes(client: &Client, upstream: &str) -> tokio::task::JoinHandle<()> {
    let client = client.clone();
    let name = upstream.to_owned();
    tokio::spawn(async move {
        let filter = SubscriptionFilter {
            tools_list_changed: Some(true),
            prompts_list_changed: Some(true),
            resources_list_changed: Some(true),
            ..Default::default()
        };
        match client.listen(filter).await {
            Ok(mut sub) => while sub.next().await.is_some() {},
            Err(e) => tracing::debug!(upstream = %name, "no listen stream for list changes: {e}"),
        }
    })
}

type ToolFuture = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<duomcp::server::ToolOutput, HandlerError>> + Send>,
>;

fn tool_handler(
    shared: &Shared,
    u: &Arc<Upstream>,
    inner: String,
    flags: bridge::ToolFlags,
) -> impl Fn(Context, Args<Value>) -> ToolFuture + Clone + Send + Sync + 'static {
    let (u, holds) = (u.clone(), shared.holds.clone());
    move |ctx: Context, Args(args): Args<Value>| {
        let fut = bridge::call_tool(u.clone(), holds.clone(), ctx, inner.clone(), args, flags);
        Box::pin(fut) as ToolFuture
    }
}

type PromptFuture = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<GetPromptResult, HandlerError>> + Send>,
>;

fn prompt_handler(
    shared: &Shared,
    u: &Arc<Upstream>,
    inner: String,
) -> impl Fn(Context, Args<Map<String, Value>>) -> PromptFuture + Clone + Send + Sync + 'static {
    let (u, holds) = (u.clone(), shared.holds.clone());
    move |ctx: Context, Args(args): Args<Map<String, Value>>| {
        let fut = bridge::get_prompt(u.clone(), holds.clone(), ctx, inner.clone(), args);
        Box::pin(fut) as PromptFuture
    }
}

type ReadFuture = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<ReadResourceResult, HandlerError>> + Send>,
>;

fn read_handler(
    u: &Arc<Upstream>,
) -> impl Fn(Context, Uri) -> ReadFuture + Clone + Send + Sync + 'static {
    let u = u.clone();
    move |ctx: Context, Uri(uri): Uri| {
        let u = u.clone();
        Box::pin(async move {
            let Some(inner) = u.naming.inner_uri(&uri) else {
                return Err(HandlerError::resource_not_found(uri));
            };
            // On the upstream session this client's calls use: a resource one of its calls
            // made (a session-scoped one, e.g. a link in a tool's result) is readable there.
            let client = u
                .session_for(&ctx)
                .await
                .map_err(|e| bridge::upstream_failure(u.name(), e))?
                .client
                .clone();
            let _permit = u.permit(bridge::owner(&ctx).as_deref()).await;
            let mut result = client
                .read_resource(inner)
                .await
                .map_err(|e| bridge::upstream_failure(u.name(), e))?;
            for c in &mut result.contents {
                match c {
                    ResourceContents::Text(t) => t.uri = u.naming.outer_uri(&t.uri),
                    ResourceContents::Blob(b) => b.uri = u.naming.outer_uri(&b.uri),
                }
            }
            Ok(result)
        }) as ReadFuture
    }
}

/// Middleware: a client's `resources/subscribe` (2025-11-25) or `subscriptions/listen` with
/// resource subscriptions (2026-07-28) opens the matching upstream subscription, once per
/// resource; the gateway's own server keeps the client's subscription and relays updates.
#[derive(Clone)]
pub(crate) struct SubscribeRelay {
    inner: McpService,
    shared: Weak<Shared>,
}

impl SubscribeRelay {
    pub(crate) fn new(inner: McpService, shared: Weak<Shared>) -> Self {
        SubscribeRelay { inner, shared }
    }
}

impl Service<McpRequest> for SubscribeRelay {
    type Response = McpResponse;
    type Error = <McpService as Service<McpRequest>>::Error;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<McpResponse, Self::Error>> + Send>,
    >;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: McpRequest) -> Self::Future {
        let uris: Vec<String> = match req.method() {
            "resources/subscribe" => req.target().map(str::to_owned).into_iter().collect(),
            "subscriptions/listen" => req
                .params()
                .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
                .and_then(|p| {
                    p.get("notifications")?
                        .get("resourceSubscriptions")?
                        .as_array()
                        .cloned()
                })
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        if !uris.is_empty() {
            if let Some(shared) = self.shared.upgrade() {
                for uri in uris {
                    subscribe_upstream(&shared, &uri);
                }
            }
        }
        // A read of a resource the gateway has not registered (yet): an upstream may have made
        // it a moment ago, its list_changed still on the way. Re-sync that upstream first
        // (at most once per `MISS_RESYNC_INTERVAL` per upstream), then read.
        let miss = (req.method() == "resources/read")
            .then(|| req.target().map(str::to_owned))
            .flatten()
            .and_then(|uri| Some((self.shared.upgrade()?, uri)))
            .and_then(|(shared, uri)| {
                let name = shared.sync.read_miss(&shared, &uri)?;
                Some((shared, name))
            });
        let Some((shared, name)) = miss else {
            // The common case: the inner stack's own (boxed, 'static) future, no clone of the
            // stack and no second box.
            return self.inner.call(req);
        };
        let mut inner = self.inner.clone();
        std::mem::swap(&mut self.inner, &mut inner);
        Box::pin(async move {
            resync(&shared, &name).await;
            inner.call(req).await
        })
    }
}

/// The shortest time between two re-syncs of one upstream caused by reads of unknown URIs.
pub const MISS_RESYNC_INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);

impl SyncState {
    /// The upstream to re-sync before reading `uri`: one whose URIs it has the shape of, that
    /// has not registered it as a resource, and was not re-synced for a miss just now.
    fn read_miss(&self, shared: &Shared, uri: &str) -> Option<String> {
        let ups = shared.upstreams();
        let u = ups.iter().find(|u| u.naming.inner_uri(uri).is_some())?;
        if lock(&self.registered)
            .get(u.name())
            .is_some_and(|r| r.resources.contains_key(uri))
        {
            return None;
        }
        let mut last = lock(&self.last_miss);
        let now = std::time::Instant::now();
        if last
            .get(u.name())
            .is_some_and(|t| now.duration_since(*t) < MISS_RESYNC_INTERVAL)
        {
            return None;
        }
        last.insert(u.name().to_owned(), now);
        Some(u.name().to_owned())
    }
}

/// Opens (once) the upstream subscription behind the client-side `uri`.
fn subscribe_upstream(shared: &Shared, uri: &str) {
    let ups = shared.upstreams();
    let Some((u, inner)) = ups.iter().find_map(|u| {
        let inner = u.naming.inner_uri(uri)?;
        shared
            .sync
            .owns_uri(u.name(), uri)
            .then(|| (u.clone(), inner.to_owned()))
    }) else {
        return;
    };
    let mut subs = lock(&shared.sync.subscriptions);
    subs.retain(|_, task| !task.is_finished());
    let key = (u.name().to_owned(), inner.clone());
    if subs.contains_key(&key) || subs.len() >= MAX_UPSTREAM_SUBSCRIPTIONS {
        return;
    }
    let task = tokio::spawn(async move {
        let Ok(client) = u.client().await else {
            return;
        };
        let filter = SubscriptionFilter {
            resource_subscriptions: Some(vec![inner]),
            ..Default::default()
        };
        // Updates reach the gateway through the connection-wide stream; this keeps the
        // subscription open.
        match client.listen(filter).await {
            Ok(mut sub) => while sub.next().await.is_some() {},
            Err(e) => tracing::debug!(upstream = %u.name(), "upstream subscribe failed: {e}"),
        }
    });
    subs.insert(key, task);
}
