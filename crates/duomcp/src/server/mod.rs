//! The server runtime: one server definition, served to clients of both eras.
//!
//! ```no_run
//! use duomcp::server::{Args, Server};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add { a: i64, b: i64 }
//!
//! async fn add(Args(Add { a, b }): Args<Add>) -> String {
//!     (a + b).to_string()
//! }
//!
//! # async fn run() -> std::io::Result<()> {
//! Server::builder().name("calc").tool("add", add).build().serve_stdio().await
//! # }
//! ```

pub mod apps;
mod builder;
pub mod bus;
mod context;
use duomcp_proto::cursor;
mod dispatch;
pub(crate) mod driver;
pub(crate) mod envelope;
#[cfg(feature = "events")]
pub mod events;
pub use duomcp_proto::error::{HandlerError, InputRequired};
mod handler;
mod invoke;
mod keys;
pub mod middleware;
mod oneshot;
pub(crate) mod params;
pub(crate) mod principal;
mod registry;
mod rejection;
pub(crate) mod session;
mod shutdown;
#[cfg(feature = "skills")]
pub mod skills;
mod subscriptions;
pub mod tasks;
pub(crate) mod telemetry;
mod uri_template;

pub use context::{ClientSession, Context, INPUT_KEY_META};
pub use handler::{
    Args, CallParts, FromCallParts, Handler, IntoPromptResult, IntoReadResult, IntoToolResult,
    Json, RawToolResult, State, ToolOutput, Uri,
};
pub use keys::{Keyring, KeyringError, KeyringExt, SealingKey, SealingKeyExt};
pub use principal::Principal;
pub use registry::DEFER_TASK_META;
pub use registry::{PromptSpec, ResourceSpec, Scoped, TemplateSpec, ToolSpec};
pub use rejection::ExtractRejection;
#[doc(hidden)]
pub use rejection::Rejection;
pub use shutdown::shutdown_signal;
pub use uri_template::UriTemplate;

#[cfg(feature = "http-server")]
pub(crate) use dispatch::follow_events;
pub(crate) use dispatch::{
    handle_notification, handle_request, handle_response, NotificationAction,
};
#[cfg(feature = "http-server")]
pub(crate) use envelope::Reply;
pub(crate) use envelope::RequestEnv;

use duomcp_schema::{
    CacheScope, CompleteRequestParams, CompleteResult, Implementation, JsonObject,
};
use registry::Registry;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// How long clients may cache a list or read result (2026-07-28 `ttlMs` / `cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachePolicy {
    /// Milliseconds the result stays fresh.
    pub ttl_ms: u64,
    /// Whether shared caches may keep it.
    pub scope: CacheScope,
}

impl Default for CachePolicy {
    /// Not cached, private: always correct, even when lists change at run time.
    fn default() -> Self {
        CachePolicy {
            ttl_ms: 0,
            scope: CacheScope::Private,
        }
    }
}

/// Limits and timings. The defaults protect a server; raise them deliberately.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Items per page of a list result (default 100).
    pub page_size: usize,
    /// Largest accepted message in bytes (default 4 MiB).
    pub max_message_size: usize,
    /// Requests handled at once per connection (default 1024); further reads wait.
    pub max_in_flight: usize,
    /// How long a legacy server→client request (elicitation, sampling, roots) may take (default 60 s).
    pub client_request_timeout: Duration,
    /// Lifetime of a sealed `requestState` (default 10 minutes).
    pub request_state_ttl: Duration,
    /// Rounds of input one 2026-07-28 request may take (`InputRequiredResult`s before its
    /// result; default 16). A handler asking once more gets the client `-32602`.
    pub max_input_rounds: u32,
    /// Longest `requestState`, in bytes (default 1 MiB): a longer one is refused (`-32602`), and
    /// a round whose answers and handler state would seal into a longer one ends in `-32602`.
    pub max_request_state_bytes: usize,
    /// How long in-flight requests may finish after the input ends (default 5 s).
    pub shutdown_grace: Duration,
    /// Cache policy of `server/discover`.
    pub discover_cache: CachePolicy,
    /// Cache policy of `tools/list`.
    pub tools_cache: CachePolicy,
    /// Cache policy of `prompts/list`.
    pub prompts_cache: CachePolicy,
    /// Cache policy of `resources/list` and `resources/templates/list`.
    pub resources_cache: CachePolicy,
    /// Cache policy of `resources/read`.
    pub read_cache: CachePolicy,
    /// Resource subscriptions one 2025-11-25 session may hold, and URIs one 2026-07-28
    /// `subscriptions/listen` stream may name (default 1,000); more are `-32602`.
    pub max_subscriptions: usize,
    /// Longest resource URI a subscription may name, in bytes (default 8 KiB; `-32602`).
    pub max_subscription_uri_bytes: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            page_size: 100,
            max_message_size: 4 * 1024 * 1024,
            max_in_flight: 1024,
            client_request_timeout: Duration::from_secs(60),
            request_state_ttl: Duration::from_secs(600),
            max_input_rounds: 16,
            max_request_state_bytes: 1024 * 1024,
            shutdown_grace: Duration::from_secs(5),
            discover_cache: CachePolicy::default(),
            tools_cache: CachePolicy::default(),
            prompts_cache: CachePolicy::default(),
            resources_cache: CachePolicy::default(),
            read_cache: CachePolicy::default(),
            max_subscriptions: 1_000,
            max_subscription_uri_bytes: 8 * 1024,
        }
    }
}

/// Something that changed on the server, fanned out to sessions and listen streams.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ServerEvent {
    ToolsChanged,
    PromptsChanged,
    ResourcesChanged,
    ResourceUpdated(String),
    /// A task changed status or inputs (after the change).
    TaskChanged(Arc<tasks::TaskRecord>),
}

#[derive(Default)]
pub(crate) struct StateMap(HashMap<TypeId, Box<dyn Any + Send + Sync>>);

impl StateMap {
    pub(crate) fn get<T: Clone + Send + Sync + 'static>(&self) -> Option<T> {
        self.0
            .get(&TypeId::of::<T>())
            .and_then(|b| b.downcast_ref::<T>())
            .cloned()
    }
}

/// State shared by every connection of one server.
pub(crate) struct Shared {
    pub info: Implementation,
    /// `info` as JSON, built once: every 2026-07-28 result carries it in `_meta`.
    pub info_json: serde_json::Value,
    /// `"io.modelcontextprotocol/serverInfo":` and `info` as JSON text, encoded once for the
    /// `_meta` spliced into every complete 2026-07-28 result.
    pub meta_server_info: Box<[u8]>,
    pub instructions: Option<String>,
    /// The extensions the application declared ([`ServerBuilder::extension`]).
    pub extensions: JsonObject,
    pub config: ServerConfig,
    pub registry: RwLock<Registry>,
    pub state: StateMap,
    pub events: broadcast::Sender<ServerEvent>,
    pub sealing_key: Keyring,
    pub shutdown: CancellationToken,
    pub tasks: tasks::TaskRuntime,
    #[cfg(feature = "skills")]
    pub skills: skills::SkillRegistry,
    /// The middleware stack, when layers are installed (`None`: straight to the dispatcher).
    pub middleware: Option<std::sync::Mutex<middleware::McpService>>,
    /// The capabilities and client info 2026-07-28 clients repeat in every `_meta`, parsed once.
    pub meta_memo: crate::era::modern::MetaMemo,
    /// OpenTelemetry, when the server was given one (feature `otel`; empty without it).
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    pub telemetry: telemetry::Slot,
    /// The bus to the other replicas, once attached ([`Server::attach_bus`]).
    pub bus: BusSlot,
    /// Named registry changes every replica applies ([`ServerBuilder::change`]).
    pub changes: RwLock<HashMap<String, ChangeFn>>,
    /// List changes held while a [`ListChangeBatch`] is alive.
    pub batch: std::sync::Mutex<HeldChanges>,
    /// The event types of the events extension and their rings (feature `events`).
    #[cfg(feature = "events")]
    pub event_hub: Arc<events::Hub>,
}

/// Where a server's bus goes once attached (shared with the task runtime).
pub(crate) type BusSlot = Arc<std::sync::OnceLock<Arc<dyn bus::Bus>>>;

/// A named registry change: what each replica runs to apply it.
pub(crate) type ChangeFn = Arc<dyn Fn(&Server, &serde_json::Value) + Send + Sync>;

thread_local! {
    /// Set while a change is applied by [`Server::apply_change`] or arrives from another
    /// replica: its events stay on this replica (every replica applies the change itself).
    static LOCAL_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with bus publishing of events off on this thread.
fn local_only<T>(f: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            LOCAL_ONLY.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(LOCAL_ONLY.with(|c| c.replace(true)));
    f()
}

/// Publishes a local event to the other replicas, when a bus is attached.
pub(crate) fn publish_event(slot: &BusSlot, event: &ServerEvent) {
    if let Some(bus) = slot.get() {
        if !LOCAL_ONLY.with(|c| c.get()) {
            bus.publish(bus::BusMessage::Event(event.into()));
        }
    }
}

/// One of the server's lists, for [`Server::notify_list_changed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `prompts/list`.
    Prompts,
    /// `resources/list` (and the templates).
    Resources,
}

/// The list changes held back by open [`ListChangeBatch`]es.
#[derive(Default)]
pub(crate) struct HeldChanges {
    open: usize,
    tools: bool,
    prompts: bool,
    resources: bool,
}

/// While alive, the server's list changes are held back; when the last batch ends, each list
/// that changed is announced once (one `list_changed` per list, however many additions and
/// removals). From [`Server::batch_list_changes`].
#[must_use = "the changes are announced when the batch is dropped"]
pub struct ListChangeBatch {
    server: Server,
}

impl Drop for ListChangeBatch {
    fn drop(&mut self) {
        let held = {
            let mut b = crate::util::lock(&self.server.shared.batch);
            b.open = b.open.saturating_sub(1);
            if b.open > 0 {
                return;
            }
            std::mem::take(&mut *b)
        };
        for (changed, event) in [
            (held.tools, ServerEvent::ToolsChanged),
            (held.prompts, ServerEvent::PromptsChanged),
            (held.resources, ServerEvent::ResourcesChanged),
        ] {
            if changed {
                self.server.emit(event);
            }
        }
    }
}

impl Shared {
    pub(crate) fn registry(&self) -> std::sync::RwLockReadGuard<'_, Registry> {
        self.registry.read().unwrap_or_else(|p| p.into_inner())
    }

    fn registry_mut(&self) -> std::sync::RwLockWriteGuard<'_, Registry> {
        self.registry.write().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running MCP server definition. Cheap to clone; clones share tools, state and sessions.
///
/// Serve it over stdio with [`serve_stdio`](Server::serve_stdio), or over any byte stream with
/// [`serve_connection`](Server::serve_connection). Tools, prompts and resources can be added and
/// removed while it runs; connected clients are told (`list_changed`).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use duomcp::client::Client;
/// use duomcp::server::Server;
///
/// let server = Server::builder().tool("hello", || async { "Hello!" }).build();
/// // A client in the same process (in tests); `server.serve_stdio()` in a real one.
/// let (transport, _serving) = duomcp::transport::memory::pair(server.clone());
/// let client = Client::builder().connect_transport(transport).await.unwrap();
/// server.add_tool("bye", || async { "Bye!" }); // while it runs: clients are told
/// let result = client.call_tool("bye", serde_json::json!({})).await.unwrap();
/// assert_eq!(result.content[0].as_text(), Some("Bye!"));
/// # });
/// ```
#[derive(Clone)]
pub struct Server {
    pub(crate) shared: Arc<Shared>,
}

impl Server {
    /// Starts a definition.
    ///
    /// ```
    /// let server = duomcp::server::Server::builder().name("notes").build();
    /// assert_eq!(server.info().name, "notes");
    /// ```
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// The server's name and version.
    pub fn info(&self) -> &Implementation {
        &self.shared.info
    }

    /// The handle application code emits occurrences of its event types with (the events
    /// extension, experimental, feature `events`; see [`events`]).
    ///
    /// ```
    /// use duomcp::server::{events::EventType, Server};
    /// let server = Server::builder().event(EventType::new("build.finished")).build();
    /// server.events().emit("build.finished", serde_json::json!({"ok": true})).expect("declared");
    /// ```
    #[cfg(feature = "events")]
    pub fn events(&self) -> events::Events {
        events::Events {
            hub: self.shared.event_hub.clone(),
        }
    }

    /// The keys sealing `requestState` (see [`ServerBuilder::keyring`]);
    /// [`Keyring::replace`] on it rotates them while the server runs.
    pub fn keyring(&self) -> &Keyring {
        &self.shared.sealing_key
    }

    /// Adds (or replaces) a tool at run time and notifies clients.
    ///
    /// ```
    /// # use duomcp::server::Server;
    /// let server = Server::builder().build();
    /// server.add_tool("now", || async { "12:00" });
    /// assert!(server.remove_tool("now"));
    /// ```
    pub fn add_tool<H, T>(&self, spec: impl Into<ToolSpec>, handler: H)
    where
        H: Handler<T>,
        H::Output: IntoToolResult,
    {
        let entry = registry::tool_entry(spec.into(), handler);
        self.shared
            .registry_mut()
            .tools
            .insert(entry.tool.name.clone(), Arc::new(entry));
        self.emit(ServerEvent::ToolsChanged);
    }

    /// Removes a tool; `true` if it existed. Clients are notified.
    pub fn remove_tool(&self, name: &str) -> bool {
        let removed = self.shared.registry_mut().tools.remove(name).is_some();
        if removed {
            self.emit(ServerEvent::ToolsChanged);
        }
        removed
    }

    /// Adds (or replaces) a prompt at run time and notifies clients.
    pub fn add_prompt<H, T>(&self, spec: impl Into<PromptSpec>, handler: H)
    where
        H: Handler<T>,
        H::Output: IntoPromptResult,
    {
        let entry = registry::prompt_entry(spec.into(), handler);
        self.shared
            .registry_mut()
            .prompts
            .insert(entry.prompt.name.clone(), Arc::new(entry));
        self.emit(ServerEvent::PromptsChanged);
    }

    /// Removes a prompt; `true` if it existed. Clients are notified.
    pub fn remove_prompt(&self, name: &str) -> bool {
        let removed = self.shared.registry_mut().prompts.remove(name).is_some();
        if removed {
            self.emit(ServerEvent::PromptsChanged);
        }
        removed
    }

    /// Adds (or replaces) a resource at run time and notifies clients.
    pub fn add_resource<H, T>(&self, resource: impl Into<ResourceSpec>, handler: H)
    where
        H: Handler<T>,
        H::Output: IntoReadResult,
    {
        let entry = registry::resource_entry(resource.into(), handler);
        self.shared
            .registry_mut()
            .resources
            .insert(entry.resource.uri.clone(), Arc::new(entry));
        self.emit(ServerEvent::ResourcesChanged);
    }

    /// Removes a resource; `true` if it existed. Clients are notified.
    pub fn remove_resource(&self, uri: &str) -> bool {
        let removed = self.shared.registry_mut().resources.remove(uri).is_some();
        if removed {
            self.emit(ServerEvent::ResourcesChanged);
        }
        removed
    }

    /// Adds a resource template at run time and notifies clients.
    pub fn add_resource_template<H, T>(&self, template: impl Into<TemplateSpec>, handler: H)
    where
        H: Handler<T>,
        H::Output: IntoReadResult,
    {
        let entry = registry::template_entry(template.into(), handler);
        self.shared.registry_mut().templates.push(Arc::new(entry));
        self.emit(ServerEvent::ResourcesChanged);
    }

    /// Removes a resource template by its `uriTemplate`; `true` if it existed.
    pub fn remove_resource_template(&self, uri_template: &str) -> bool {
        let mut reg = self.shared.registry_mut();
        let before = reg.templates.len();
        reg.templates
            .retain(|t| t.template.uri_template != uri_template);
        let removed = reg.templates.len() != before;
        drop(reg);
        if removed {
            self.emit(ServerEvent::ResourcesChanged);
        }
        removed
    }

    /// Adds (or replaces) an in-memory skill at run time (feature `skills`). Clients are told the resource list
    /// changed, and subscribers of each file that changed are told it was updated. Fails, and
    /// changes nothing, when the skill is invalid.
    ///
    /// ```
    /// use duomcp::server::{skills::{Skill, SkillSet}, Server};
    /// let server = Server::builder().skills(SkillSet::new()).build();
    /// let skill = Skill::new("notes").file("SKILL.md", "---\nname: notes\ndescription: Notes\n---\n");
    /// server.add_skill(skill).expect("valid");
    /// assert!(server.remove_skill("skill://notes/SKILL.md"));
    /// ```
    #[cfg(feature = "skills")]
    pub fn add_skill(&self, skill: skills::Skill) -> Result<(), skills::SkillRejection> {
        let changed = self.shared.skills.put(skill)?;
        self.emit(ServerEvent::ResourcesChanged);
        for uri in changed {
            self.emit(ServerEvent::ResourceUpdated(uri));
        }
        Ok(())
    }

    /// Removes an in-memory skill, named by the URI of its `SKILL.md` or by its path; `true`
    /// if it existed. Clients are notified (feature `skills`).
    #[cfg(feature = "skills")]
    pub fn remove_skill(&self, skill: &str) -> bool {
        let removed = self.shared.skills.remove(skill);
        if removed {
            self.emit(ServerEvent::ResourcesChanged);
        }
        removed
    }

    /// Tells subscribed clients that a resource changed (`notifications/resources/updated`).
    pub fn notify_resource_updated(&self, uri: impl Into<String>) {
        self.emit(ServerEvent::ResourceUpdated(uri.into()));
    }

    /// Ends listen streams gracefully and stops accepting work on every transport.
    ///
    /// ```no_run
    /// # async fn run() -> std::io::Result<()> {
    /// let server = duomcp::server::Server::builder().build();
    /// let serving = tokio::spawn(server.clone().serve_stdio());
    /// tokio::signal::ctrl_c().await?;
    /// server.shutdown(); // in-flight requests get `shutdown_grace` to finish
    /// serving.await.ok();
    /// # Ok(()) }
    /// ```
    pub fn shutdown(&self) {
        self.shared.shutdown.cancel();
    }

    fn emit(&self, event: ServerEvent) {
        {
            let mut b = crate::util::lock(&self.shared.batch);
            if b.open > 0 {
                match event {
                    ServerEvent::ToolsChanged => return b.tools = true,
                    ServerEvent::PromptsChanged => return b.prompts = true,
                    ServerEvent::ResourcesChanged => return b.resources = true,
                    _ => {}
                }
            }
        }
        publish_event(&self.shared.bus, &event);
        // No receivers just means nobody listens yet.
        let _ = self.shared.events.send(event);
    }

    /// Connects this server to the other replicas of a deployment: from now on its events
    /// (list changes, resource updates, task status) reach their sessions and listen streams,
    /// and theirs reach this server's; named changes ([`apply_change`](Self::apply_change))
    /// run on every replica. `false` (and nothing changes) when a bus is attached already.
    /// Must be called within a tokio runtime; the task receiving from the bus ends with
    /// [`shutdown`](Self::shutdown).
    ///
    /// [`HttpConfig::redis`] attaches a Redis bus
    /// when the transport is built; [`bus::LocalBus`] connects servers in one process:
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use duomcp::server::{bus::LocalBus, Server};
    /// use std::sync::Arc;
    /// let hub = LocalBus::new(64);
    /// let a = Server::builder().build();
    /// assert!(a.attach_bus(Arc::new(hub.member())));
    /// assert!(!a.attach_bus(Arc::new(hub.member()))); // one bus per server
    /// # });
    /// ```
    ///
    #[cfg_attr(
        feature = "redis",
        doc = "[`HttpConfig::redis`]: crate::transport::http::HttpConfig::redis"
    )]
    #[cfg_attr(not(feature = "redis"), doc = "[`HttpConfig::redis`]: crate#features")]
    pub fn attach_bus(&self, bus: Arc<dyn bus::Bus>) -> bool {
        let mut rx = bus.subscribe();
        if self.shared.bus.set(bus).is_err() {
            return false;
        }
        let server = self.clone();
        let stop = self.shared.shutdown.clone();
        tokio::spawn(async move {
            loop {
                let message = tokio::select! {
                    _ = stop.cancelled() => return,
                    m = rx.recv() => m,
                };
                let Some(message) = message else { return };
                match &*message {
                    bus::BusMessage::Event(e) => {
                        let _ = server.shared.events.send(e.clone().into());
                    }
                    bus::BusMessage::Change { name, arg } => {
                        if !server.apply_here(name, arg) {
                            tracing::warn!(
                                change = %name,
                                "another replica applied a change this one does not know; \
                                 its registry now differs (register the change on every replica)"
                            );
                        }
                    }
                    // A session's answers, cancellations, notifications and invalidations:
                    // the transport routes them.
                    bus::BusMessage::Reply { .. }
                    | bus::BusMessage::Cancel { .. }
                    | bus::BusMessage::Notify { .. }
                    | bus::BusMessage::Invalidate { .. }
                    | bus::BusMessage::InvalidateAck { .. } => {}
                    bus::BusMessage::Occurrences { .. } => {
                        #[cfg(feature = "events")]
                        server.shared.event_hub.wake.notify_one();
                    }
                }
            }
        });
        true
    }

    /// The bus attached to this server, if any.
    pub fn bus(&self) -> Option<&Arc<dyn bus::Bus>> {
        self.shared.bus.get()
    }

    /// Applies the named change registered with [`ServerBuilder::change`] here and, through
    /// the bus, on every other replica (each runs its own registered code with `arg`). The
    /// change's events (a `list_changed`…) are emitted by each replica for its own clients,
    /// so a client re-listing after it sees the change wherever its request lands. Without
    /// a bus, it applies here only. `false` when no change has this name.
    ///
    /// ```
    /// use duomcp::server::Server;
    /// let server = Server::builder()
    ///     .change("add_greeter", |server, arg| {
    ///         let text = arg.as_str().unwrap_or("hello").to_owned();
    ///         server.add_tool("greet", move || { let t = text.clone(); async move { t } });
    ///     })
    ///     .build();
    /// assert!(server.apply_change("add_greeter", serde_json::json!("hi")));
    /// assert!(!server.apply_change("unknown", serde_json::Value::Null));
    /// ```
    pub fn apply_change(&self, name: &str, arg: serde_json::Value) -> bool {
        if !self.apply_here(name, &arg) {
            return false;
        }
        if let Some(bus) = self.shared.bus.get() {
            bus.publish(bus::BusMessage::change(name, arg));
        }
        true
    }

    /// Runs the change `name` on this replica only, its events kept here.
    fn apply_here(&self, name: &str, arg: &serde_json::Value) -> bool {
        let f = self
            .shared
            .changes
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned();
        match f {
            Some(f) => {
                local_only(|| f(self, arg));
                true
            }
            None => false,
        }
    }

    /// Tells the clients that a list changed (`notifications/*/list_changed`) though nothing
    /// changed here: for a server relaying another's lists (a gateway whose upstream said so).
    ///
    /// ```
    /// # use duomcp::server::{ListKind, Server};
    /// let server = Server::builder().build();
    /// server.notify_list_changed(ListKind::Tools);
    /// ```
    pub fn notify_list_changed(&self, list: ListKind) {
        self.emit(match list {
            ListKind::Tools => ServerEvent::ToolsChanged,
            ListKind::Prompts => ServerEvent::PromptsChanged,
            ListKind::Resources => ServerEvent::ResourcesChanged,
        });
    }

    /// Holds the list changes back until the returned batch (and every other one open) is
    /// dropped, then announces each changed list once: for many registrations at once (a
    /// gateway re-syncing its upstreams) clients get one `list_changed`, not one per item.
    ///
    /// ```
    /// # use duomcp::server::Server;
    /// let server = Server::builder().build();
    /// {
    ///     let _batch = server.batch_list_changes();
    ///     server.add_tool("a", || async { "a" });
    ///     server.add_tool("b", || async { "b" });
    /// } // one tools list_changed here
    /// ```
    pub fn batch_list_changes(&self) -> ListChangeBatch {
        crate::util::lock(&self.shared.batch).open += 1;
        ListChangeBatch {
            server: self.clone(),
        }
    }
}

/// Builds a [`Server`].
///
/// ```
/// use duomcp::server::Server;
/// let server = Server::builder()
///     .name("demo")
///     .version("1.0.0")
///     .instructions("Call `hello` to be greeted.")
///     .tool("hello", || async { "Hello!" })
///     .build();
/// assert_eq!(server.info().name, "demo");
/// ```
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    extensions: JsonObject,
    config: ServerConfig,
    registry: Registry,
    state: StateMap,
    sealing_key: Option<Keyring>,
    tasks: tasks::TaskConfig,
    #[cfg(feature = "skills")]
    skills: Option<skills::SkillSet>,
    middleware: Option<middleware::McpService>,
    telemetry: telemetry::Slot,
    /// The state each registered handler takes (`State<T>`), checked by `build()`.
    needs: Vec<StateNeed>,
    changes: HashMap<String, ChangeFn>,
    #[cfg(feature = "events")]
    event_types: Vec<events::EventType>,
    #[cfg(feature = "events")]
    events_config: events::EventsConfig,
    #[cfg(feature = "webhooks")]
    webhooks: Option<events::webhook::WebhookConfig>,
}

/// A handler's `State<T>` argument: what it is, and who takes it.
struct StateNeed {
    type_id: TypeId,
    type_name: &'static str,
    handler: String,
}

/// Why [`ServerBuilder::try_build`] refused the definition.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// Handlers take `State<T>` for a `T` never given to [`ServerBuilder::state`].
    MissingState {
        /// `(handler, type)` pairs: `("tool `visits`", "my_app::Counter")`.
        missing: Vec<(String, String)>,
    },
    /// An id given to [`ServerBuilder::extension`] is not an extension identifier (SEP-2133:
    /// a reverse-domain vendor prefix, `/`, a name).
    InvalidExtension {
        /// The id as given.
        id: String,
        /// What is wrong with it.
        problem: &'static str,
    },
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildError::MissingState { missing } => {
                f.write_str("handlers take state that was never registered: ")?;
                for (i, (handler, ty)) in missing.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{handler} takes `State<{ty}>`")?;
                }
                f.write_str(" (register it with `Server::builder().state(value)`)")
            }
            BuildError::InvalidExtension { id, problem } => write!(
                f,
                "`{}` is not an extension identifier (like `com.example/name`): {problem}",
                crate::util::excerpt(id, crate::util::EXCERPT_CHARS)
            ),
        }
    }
}

impl std::error::Error for BuildError {}

impl Default for ServerBuilder {
    fn default() -> Self {
        ServerBuilder {
            info: Implementation::new("duomcp-server", env!("CARGO_PKG_VERSION")),
            instructions: None,
            extensions: JsonObject::new(),
            config: ServerConfig::default(),
            registry: Registry::default(),
            state: StateMap::default(),
            sealing_key: None,
            tasks: tasks::TaskConfig::default(),
            #[cfg(feature = "skills")]
            skills: None,
            middleware: None,
            telemetry: telemetry::Slot::default(),
            needs: Vec::new(),
            changes: HashMap::new(),
            #[cfg(feature = "events")]
            event_types: Vec::new(),
            #[cfg(feature = "events")]
            events_config: events::EventsConfig::default(),
            #[cfg(feature = "webhooks")]
            webhooks: None,
        }
    }
}
