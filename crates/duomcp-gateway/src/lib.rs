//! An MCP gateway: any MCP servers ("upstreams": child processes over stdio, or URLs over
//! Streamable HTTP or the 2024-11-05 HTTP+SSE transport), served as one duomcp
//! [`Server`] to clients of both revisions, **bridged**: a 2026-07-28 client can use a
//! 2025-11-25 server and the other way round.
//!
//! The gateway is a duomcp server whose tools, prompts, resources and templates are
//! registered at run time from the upstreams' lists (and re-synced on their `list_changed`),
//! each handler calling its upstream through a duomcp [`Client`](duomcp::client::Client). Both
//! runtimes already speak both revisions, so the gateway's own work is the relaying between
//! them (see [`bridge`]): an upstream's request for input during a call reaches the client as
//! the client's revision asks it (a request, or an `InputRequiredResult` whose sealed
//! `requestState` names the held upstream call), and the answer goes back upstream as the
//! upstream's revision expects it.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use duomcp_gateway::{Gateway, GatewayConfig, UpstreamConfig};
//! let config = GatewayConfig::single(UpstreamConfig::stdio("everything", "duomcp", vec!["serve".into()]));
//! let gateway = Gateway::start(config).await?;
//! gateway.server().clone().serve_stdio().await?;
//! # Ok(()) }
//! ```

// docs.rs (`--cfg docsrs`, nightly): each gated item labelled with the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

// `auth` and `config` hold the configuration types, public at the crate root only (their one
// path; a hidden public module would hide their definitions from rustdoc's JSON too).
mod auth;
pub mod bridge;
mod config;
pub mod http;
#[cfg(feature = "otel")]
mod metrics;
pub mod names;
mod sync;
pub mod upstream;

pub use auth::{AuthConfig, UpstreamOAuth};
#[doc(hidden)]
pub use config::UpstreamEra;
pub use config::{
    AccessRule, ConfigError, GatewayConfig, GatewaySettings, Isolation, PrefixMode, UpstreamConfig,
    DEFAULT_MAX_LIST_BYTES, DEFAULT_MAX_LIST_ITEMS, DEFAULT_UNIX_URL,
};
// Documented in their modules (`bridge::Holds`, `upstream::Upstream`); kept here so code
// naming them compiles.
#[doc(hidden)]
pub use bridge::Holds;
#[doc(hidden)]
pub use upstream::Upstream;

use duomcp::client::ServerEvent;
use duomcp::server::{Context, HandlerError, Server};
use duomcp_schema::{CompleteReference, CompleteRequestParams, CompleteResult, Implementation};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The configuration is refused.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// No upstream could be reached (each one's reason, one per line).
    #[error("no upstream could be reached:\n{0}")]
    NoUpstream(String),
}

/// What the handlers and notification relays share.
pub(crate) struct Shared {
    pub server: OnceLock<Server>,
    /// The upstreams, in configuration order; replaced whole by [`Gateway::reload`].
    pub upstreams: std::sync::RwLock<Arc<Vec<Arc<Upstream>>>>,
    pub holds: Arc<Holds>,
    pub sync: sync::SyncState,
    /// `[gateway] list_change_window_ms`.
    pub list_change_window: Duration,
    /// `[gateway] health_token`.
    pub health_token: Option<String>,
    /// The last health report and when it was made; held while a probe runs, so concurrent
    /// probes wait for that one.
    pub health: tokio::sync::Mutex<Option<(std::time::Instant, Vec<UpstreamHealth>)>>,
    /// The configuration the gateway started with, without its upstreams: what a reload
    /// does not change (`[gateway]`, `[auth]`), and how upstreams are named.
    pub base: GatewayConfig,
    /// One reload at a time.
    pub reloading: tokio::sync::Mutex<()>,
    /// The telemetry and per-upstream instruments each upstream records with (feature `otel`).
    #[cfg(feature = "otel")]
    pub upstream_telemetry: OnceLock<(upstream::Traced, Option<Arc<metrics::UpstreamMetrics>>)>,
}

impl Shared {
    /// The upstreams now (a snapshot: a reload replaces the list, not what a caller holds).
    pub(crate) fn upstreams(&self) -> Arc<Vec<Arc<Upstream>>> {
        self.upstreams
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The upstream named `name` now.
    pub(crate) fn upstream(&self, name: &str) -> Option<Arc<Upstream>> {
        self.upstreams().iter().find(|u| u.name() == name).cloned()
    }

    /// How the upstream `name`'s items are named, as `prefixed` says.
    fn naming(&self, name: &str, prefixed: bool) -> names::Naming {
        if prefixed {
            names::Naming::prefixed(name, &self.base.gateway.separator)
        } else {
            names::Naming::plain()
        }
    }

    /// An upstream of `config`, named as `prefixed` says.
    fn make_upstream(self: &Arc<Self>, config: &UpstreamConfig, prefixed: bool) -> Arc<Upstream> {
        let naming = self.naming(&config.name, prefixed);
        let upstream = Upstream::new(
            config.clone(),
            naming,
            notice(Arc::downgrade(self), &config.name),
        );
        #[cfg(feature = "otel")]
        let upstream = match self.upstream_telemetry.get() {
            Some((t, m)) => upstream.with_telemetry(t.clone(), m.clone()),
            None => upstream,
        };
        Arc::new(upstream)
    }

    fn set_upstreams(&self, upstreams: Vec<Arc<Upstream>>) {
        *self
            .upstreams
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(upstreams);
    }
}

/// A running gateway: the [`Server`] to serve (over stdio or Streamable HTTP, as any duomcp
/// server) and its upstreams.
///
/// ```
/// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
/// use duomcp::server::Server;
/// use duomcp::transport::http::StreamableHttp;
/// use duomcp_gateway::{Gateway, GatewayConfig, UpstreamConfig};
///
/// // An upstream over Streamable HTTP (a child process: `UpstreamConfig::stdio`).
/// let upstream = Server::builder().tool("hello", || async { "Hello!" }).build();
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
/// let url = format!("http://{}/mcp", listener.local_addr().unwrap());
/// tokio::spawn(StreamableHttp::new(upstream).serve(listener));
///
/// let gateway = Gateway::start(GatewayConfig::single(UpstreamConfig::http("up", url))).await.unwrap();
/// // Serve `gateway.server()` as any duomcp server; here to a client in the same process.
/// let (transport, _serving) = duomcp::transport::memory::pair(gateway.server().clone());
/// let client = duomcp::client::Client::builder().connect_transport(transport).await.unwrap();
/// let result = client.call_tool("hello", serde_json::json!({})).await.unwrap();
/// assert_eq!(result.content[0].as_text(), Some("Hello!"));
/// # });
/// ```
pub struct Gateway {
    shared: Arc<Shared>,
    auth: Option<duomcp::auth::ResourceServer>,
}

/// The state of one upstream, as [`Gateway::health`] reports it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct UpstreamHealth {
    /// The upstream's name.
    pub name: String,
    /// Whether it answers.
    pub ok: bool,
    /// The revision spoken to it (`2025-11-25`, `2026-07-28`), when connected.
    pub protocol_version: Option<String>,
    /// Its `serverInfo.name`, when connected.
    pub server: Option<String>,
    /// Tools served from it.
    pub tools: usize,
    /// Why it is not ok.
    pub error: Option<String>,
    /// What of its lists is not served, and why (lists capped by `max_list_items` or
    /// `max_list_bytes`, names outside the rules, names another upstream has): at most
    /// 20 lines and a count of the rest.
    pub dropped: Vec<String>,
}

impl Gateway {
    /// Connects to every upstream, registers what they list, and returns the gateway; an
    /// upstream that cannot be reached is left out (and logged), unless none can be.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use duomcp_gateway::{Gateway, GatewayConfig};
    /// let config = GatewayConfig::from_file(std::path::Path::new("gateway.toml"))?;
    /// let gateway = Gateway::start(config).await?;
    /// gateway.server().clone().serve_stdio().await?;
    /// # Ok(()) }
    /// ```
    pub async fn start(config: GatewayConfig) -> Result<Gateway, GatewayError> {
        Self::start_inner(config, Telemetry::default()).await
    }

    /// [`start`](Self::start), with telemetry (feature `otel`): the gateway's server records
    /// its spans, metrics and audit lines with `telemetry`, and each upstream call is a client
    /// span, child of the client's request, its trace context sent on to the upstream.
    ///
    /// ```no_run
    /// # async fn run(config: duomcp_gateway::GatewayConfig) -> Result<(), Box<dyn std::error::Error>> {
    /// let pipeline = duomcp::otel::Pipeline::builder()
    ///     .service_name("duomcp-gateway")
    ///     .prometheus(true)
    ///     .build()?;
    /// let gateway = duomcp_gateway::Gateway::start_with_telemetry(config, pipeline.telemetry()).await?;
    /// # let _ = gateway; Ok(()) }
    /// ```
    #[cfg(feature = "otel")]
    pub async fn start_with_telemetry(
        config: GatewayConfig,
        telemetry: duomcp::otel::Telemetry,
    ) -> Result<Gateway, GatewayError> {
        Self::start_inner(config, Telemetry(Some(telemetry))).await
    }

    async fn start_inner(
        config: GatewayConfig,
        telemetry: Telemetry,
    ) -> Result<Gateway, GatewayError> {
        config.validate()?;
        let auth = match &config.auth {
            Some(a) => Some(a.resource_server().map_err(ConfigError::Invalid)?),
            None => None,
        };
        let settings = &config.gateway;
        let shared = Arc::new(Shared {
            server: OnceLock::new(),
            upstreams: std::sync::RwLock::new(Arc::new(Vec::new())),
            holds: Holds::new(
                Duration::from_secs(settings.hold_timeout_secs.max(1)),
                settings.max_holds,
                settings.max_holds_per_principal,
            ),
            sync: sync::SyncState::default(),
            list_change_window: Duration::from_millis(settings.list_change_window_ms),
            health_token: settings.health_token.clone().filter(|t| !t.is_empty()),
            health: tokio::sync::Mutex::new(None),
            base: GatewayConfig {
                upstreams: Vec::new(),
                ..config.clone()
            },
            reloading: tokio::sync::Mutex::new(()),
            #[cfg(feature = "otel")]
            upstream_telemetry: OnceLock::new(),
        });
        #[cfg(feature = "otel")]
        let metrics = telemetry.0.as_ref().map(|t| {
            Arc::new(metrics::UpstreamMetrics::new(
                t.meter(),
                Arc::downgrade(&shared),
            ))
        });
        #[cfg(feature = "otel")]
        let _ = shared
            .upstream_telemetry
            .set((telemetry.0.clone(), metrics));
        let prefixed = config.prefixed();
        let upstreams: Vec<Arc<Upstream>> = config
            .upstreams
            .iter()
            .map(|u| shared.make_upstream(u, prefixed))
            .collect();
        let mut failures = Vec::new();
        let mut first_info: Option<(Implementation, Option<String>)> = None;
        for u in &upstreams {
            match u.client().await {
                Ok(c) => {
                    if first_info.is_none() {
                        if let Some(info) = c.server_info() {
                            first_info = Some((info, c.instructions()));
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(upstream = %u.name(), "cannot reach the upstream: {e}");
                    failures.push(format!("{}: {e}", u.name()));
                }
            }
        }
        if failures.len() == upstreams.len() {
            return Err(GatewayError::NoUpstream(failures.join("\n")));
        }
        let mut server_config = duomcp::server::ServerConfig::default();
        server_config.page_size = settings.page_size.max(1);
        let mut builder = Server::builder().config(server_config);
        #[cfg(feature = "otel")]
        if let Some(t) = telemetry.0 {
            builder = builder.telemetry(t);
        }
        #[cfg(not(feature = "otel"))]
        let Telemetry() = telemetry;
        match (&first_info, upstreams.len()) {
            // One upstream: the client sees its identity and instructions.
            (Some((info, instructions)), 1) => {
                builder = builder.info(info.clone());
                if let Some(text) = instructions {
                    builder = builder.instructions(text.clone());
                }
            }
            _ => {
                builder = builder
                    .name("duomcp-gateway")
                    .version(env!("CARGO_PKG_VERSION"));
            }
        }
        let weak = Arc::downgrade(&shared);
        let server = builder
            .completion(move |params, ctx| complete(weak.clone(), params, ctx))
            .layer(duomcp::server::middleware::layer_fn({
                let weak = Arc::downgrade(&shared);
                move |inner| sync::SubscribeRelay::new(inner, weak.clone())
            }))
            .build();
        let _ = shared.server.set(server);
        shared.set_upstreams(upstreams.clone());
        for u in &upstreams {
            if u.client().await.is_ok() {
                sync::resync(&shared, u.name()).await;
            }
        }
        Ok(Gateway { shared, auth })
    }

    /// The OAuth resource server of `[auth]`, which [`http::app`] puts in front of the MCP
    /// endpoint; `None`: the endpoint is open.
    pub fn resource_server(&self) -> Option<&duomcp::auth::ResourceServer> {
        self.auth.as_ref()
    }

    /// The server to serve: `gateway.server().clone().serve_stdio()`, or
    /// `StreamableHttp::new(gateway.server().clone())`.
    ///
    /// ```no_run
    /// # async fn run(gateway: duomcp_gateway::Gateway) -> std::io::Result<()> {
    /// use duomcp::transport::http::StreamableHttp;
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    /// StreamableHttp::new(gateway.server().clone()).serve(listener).await
    /// # }
    /// ```
    pub fn server(&self) -> &Server {
        // Set in `start` before the gateway exists.
        match self.shared.server.get() {
            Some(s) => s,
            None => unreachable_server(),
        }
    }

    /// The upstreams, in configuration order (those of the configuration loaded last, see
    /// [`reload`](Self::reload)).
    pub fn upstreams(&self) -> Arc<Vec<Arc<Upstream>>> {
        self.shared.upstreams()
    }

    /// Upstream calls held for a 2026-07-28 client's retry.
    pub fn holds(&self) -> &Holds {
        &self.shared.holds
    }

    /// Pings every upstream (within `timeout` each) and reports.
    ///
    /// ```no_run
    /// # async fn run(gateway: duomcp_gateway::Gateway) {
    /// for h in gateway.health(std::time::Duration::from_secs(2)).await {
    ///     println!("{}: {} ({} tools) {:?}", h.name, if h.ok { "ok" } else { "down" }, h.tools, h.error);
    /// }
    /// # }
    /// ```
    pub async fn health(&self, timeout: Duration) -> Vec<UpstreamHealth> {
        let mut out = Vec::new();
        for u in self.upstreams().iter() {
            let mut h = check_upstream(u, timeout).await;
            h.dropped = self.shared.sync.notes(u.name());
            h.tools = self.shared.sync.tool_count(u.name());
            out.push(h);
        }
        out
    }
}

/// What [`Gateway::reload`] did, by upstream name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reloaded {
    /// Upstreams new in the configuration: connected, their items served.
    pub added: Vec<String>,
    /// Upstreams gone from it: their items are no longer served; their sessions close once
    /// the calls in flight on them have ended.
    pub removed: Vec<String>,
    /// Upstreams whose configuration (or naming) changed: replaced by a new connection, their
    /// items served again calling it; the old one closes as a removed one does.
    pub changed: Vec<String>,
    /// Upstreams left as they were (their sessions and the calls on them untouched).
    pub unchanged: Vec<String>,
    /// Sections that changed but that a reload does not apply (`[gateway]`, `[auth]`): they
    /// take effect at the next start.
    pub ignored: Vec<String>,
}

impl Reloaded {
    /// Whether any upstream was added, removed or changed.
    pub fn changed_anything(&self) -> bool {
        !(self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty())
    }
}

impl Gateway {
    /// Applies `config`'s upstreams without a restart: new ones are connected and served,
    /// removed ones stop being served, changed ones are replaced; clients hear
    /// `list_changed`. Calls in flight and client sessions go on: a call already running on a
    /// removed or replaced upstream finishes there (its sessions close once no call is left on
    /// them, or after its call timeout). `[gateway]` and `[auth]` are not reloaded (see
    /// [`Reloaded::ignored`]). A configuration that does not validate changes nothing.
    ///
    /// ```no_run
    /// # async fn run(gateway: duomcp_gateway::Gateway) -> Result<(), Box<dyn std::error::Error>> {
    /// let config = duomcp_gateway::GatewayConfig::from_file(std::path::Path::new("gateway.toml"))?;
    /// let done = gateway.reload(config).await?;
    /// println!("added {:?}, removed {:?}, changed {:?}", done.added, done.removed, done.changed);
    /// # Ok(()) }
    /// ```
    pub async fn reload(&self, config: GatewayConfig) -> Result<Reloaded, GatewayError> {
        config.validate()?;
        let shared = &self.shared;
        let _one = shared.reloading.lock().await;
        let mut done = Reloaded::default();
        if config.gateway != shared.base.gateway {
            done.ignored.push("[gateway]".into());
        }
        if config.auth != shared.base.auth {
            done.ignored.push("[auth]".into());
        }
        // Named with the settings the gateway started with, for the new set of upstreams.
        let prefixed = GatewayConfig {
            upstreams: config.upstreams.clone(),
            ..shared.base.clone()
        }
        .prefixed();
        let old = shared.upstreams();
        let mut next = Vec::with_capacity(config.upstreams.len());
        let mut retired = Vec::new();
        for u in &config.upstreams {
            match old.iter().find(|o| o.name() == u.name) {
                Some(o) if o.config == *u && o.naming == shared.naming(&u.name, prefixed) => {
                    done.unchanged.push(u.name.clone());
                    next.push(o.clone());
                }
                found => {
                    let made = shared.make_upstream(u, prefixed);
                    // Connected before it serves (a failure is logged; its calls then fail
                    // clearly until it answers).
                    if let Err(e) = made.client().await {
                        tracing::warn!(upstream = %u.name, "cannot reach the upstream: {e}");
                    }
                    match found {
                        Some(o) => {
                            done.changed.push(u.name.clone());
                            retired.push(o.clone());
                        }
                        None => done.added.push(u.name.clone()),
                    }
                    next.push(made);
                }
            }
        }
        for o in old.iter() {
            if !config.upstreams.iter().any(|u| u.name == o.name()) {
                done.removed.push(o.name().to_owned());
                retired.push(o.clone());
            }
        }
        if !done.changed_anything() {
            return Ok(done);
        }
        let Some(server) = shared.server.get() else {
            return Ok(done);
        };
        // Everything the reload adds and removes reaches the clients once per list.
        let _batch = server.batch_list_changes();
        shared.set_upstreams(next);
        for name in &done.removed {
            sync::forget(shared, name, true).await;
        }
        for name in &done.changed {
            sync::forget(shared, name, false).await;
        }
        for name in done.added.iter().chain(&done.changed) {
            sync::resync(shared, name).await;
        }
        for list in [
            duomcp::server::ListKind::Tools,
            duomcp::server::ListKind::Prompts,
            duomcp::server::ListKind::Resources,
        ] {
            server.notify_list_changed(list);
        }
        for o in retired {
            o.retire();
        }
        tracing::info!(
            added = ?done.added,
            removed = ?done.removed,
            changed = ?done.changed,
            ignored = ?done.ignored,
            "configuration reloaded"
        );
        Ok(done)
    }
}

impl Gateway {
    /// [`Gateway::health`], made at most once per [`HEALTH_CACHE`]: a probe within that time
    /// of the last one gets its report, and concurrent probes share one.
    pub async fn health_cached(&self, timeout: Duration) -> Vec<UpstreamHealth> {
        let mut last = self.shared.health.lock().await;
        if let Some((at, report)) = last.as_ref() {
            if at.elapsed() < HEALTH_CACHE {
                return report.clone();
            }
        }
        let report = self.health(timeout).await;
        *last = Some((std::time::Instant::now(), report.clone()));
        report
    }

    /// Whether `credential` is `[gateway] health_token` (never, when none is configured).
    pub fn health_token_is(&self, credential: &str) -> bool {
        self.shared.health_token.as_deref().is_some_and(|t| {
            t.len() == credential.len()
                && t.bytes()
                    .zip(credential.bytes())
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0
        })
    }
}

/// How long a health report is reused (`/healthz`, `/readyz`).
pub const HEALTH_CACHE: Duration = Duration::from_millis(2000);

/// Connects to every upstream of `config` (without serving anything), pings it, counts its
/// tools, and closes the connections: what `duomcp gateway --check` prints.
///
/// Its tools are listed as the gateway would (bounded, names checked, the first upstream
/// keeping a name two have), and what the gateway would not serve is in `dropped`.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let config = duomcp_gateway::GatewayConfig::from_file(std::path::Path::new("gateway.toml"))?;
/// for h in duomcp_gateway::check(&config, std::time::Duration::from_secs(5)).await {
///     println!("{}: ok={} tools={} dropped={:?}", h.name, h.ok, h.tools, h.dropped);
/// }
/// # Ok(()) }
/// ```
pub async fn check(config: &GatewayConfig, timeout: Duration) -> Vec<UpstreamHealth> {
    let mut out = Vec::new();
    let prefixed = config.prefixed();
    let mut owners: std::collections::HashMap<String, String> = Default::default();
    for u in &config.upstreams {
        let quiet: upstream::Notice = Arc::new(|_: &ServerEvent| {});
        let naming = if prefixed {
            names::Naming::prefixed(&u.name, &config.gateway.separator)
        } else {
            names::Naming::plain()
        };
        let up = Upstream::new(u.clone(), naming, quiet);
        let mut h = check_upstream(&up, timeout).await;
        let mut notes = sync::Notes::new(&u.name);
        let mut served = 0;
        if h.ok {
            match listed_tools(&up, timeout).await {
                Ok(listed) => {
                    if let Some(why) = listed.capped {
                        notes.add(format!("tools: {why}"));
                    }
                    for t in listed.items.iter().filter(|t| up.filter.admits(&t.name)) {
                        let outer = up.naming.outer(&t.name);
                        if !names::valid_tool_name(&t.name) || outer.len() > names::MAX_NAME_CHARS {
                            notes.add(format!(
                                "tool `{}` not served: a tool name is 1 to 128 of A-Z a-z 0-9 _ - .",
                                names::escaped(&outer)
                            ));
                        } else if let Some(other) = owners.get(&outer) {
                            notes.add(format!(
                                "tool `{}` not served: `{outer}` is upstream `{other}`'s",
                                t.name
                            ));
                        } else {
                            owners.insert(outer, u.name.clone());
                            served += 1;
                        }
                    }
                }
                Err(e) => notes.add(format!("tools/list failed: {e}")),
            }
        }
        h.tools = served;
        h.dropped = notes.finish();
        out.push(h);
        if let Ok(c) = up.client().await {
            let _ = c.close().await;
        }
    }
    out
}

/// `u`'s tools as the gateway lists them (bounded by `max_list_items` and `max_list_bytes`).
async fn listed_tools(
    u: &Upstream,
    timeout: Duration,
) -> Result<sync::Listed<duomcp_schema::Tool>, String> {
    let c = u.client().await.map_err(|e| e.to_string())?;
    let listed = sync::all_pages(
        |cursor| c.list_tools(cursor),
        |p: duomcp_schema::ListToolsResult| (p.tools, p.next_cursor, p.ttl_ms),
        u,
    );
    match tokio::time::timeout(timeout, listed).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => Err(format!("no list within {timeout:?}")),
    }
}

/// Connects to (or reuses the connection to) `u` and pings it (without listing anything: the
/// tools served from it are counted by [`check`] and [`Gateway::health`]).
pub async fn check_upstream(u: &Upstream, timeout: Duration) -> UpstreamHealth {
    let mut h = UpstreamHealth {
        name: u.name().to_owned(),
        ok: false,
        protocol_version: None,
        server: None,
        tools: 0,
        error: None,
        dropped: Vec::new(),
    };
    let attempt = async {
        let c = u.client().await?;
        h.protocol_version = Some(c.protocol_version());
        h.server = c.server_info().map(|i| i.name);
        c.ping().await?;
        Ok::<(), duomcp::client::ClientError>(())
    };
    match tokio::time::timeout(timeout, attempt).await {
        Ok(Ok(())) => h.ok = true,
        Ok(Err(e)) => h.error = Some(e.to_string()),
        Err(_) => h.error = Some(format!("no answer within {timeout:?}")),
    }
    h
}

#[cold]
fn unreachable_server() -> ! {
    // `Gateway` is only made by `start`, which sets the server first.
    std::process::abort()
}

/// An upstream's connection-wide notifications: list changes re-sync, resource updates reach
/// the subscribed clients under the gateway's URI.
fn notice(shared: Weak<Shared>, name: &str) -> upstream::Notice {
    let name: Arc<str> = name.into();
    Arc::new(move |n: &ServerEvent| {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        match n {
            ServerEvent::ToolsListChanged => {
                sync::list_changed(shared, &name, duomcp::server::ListKind::Tools)
            }
            ServerEvent::PromptsListChanged => {
                sync::list_changed(shared, &name, duomcp::server::ListKind::Prompts)
            }
            ServerEvent::ResourcesListChanged => {
                sync::list_changed(shared, &name, duomcp::server::ListKind::Resources)
            }
            ServerEvent::ResourceUpdated { uri } => {
                let (Some(server), Some(u)) = (shared.server.get(), shared.upstream(&name)) else {
                    return;
                };
                server.notify_resource_updated(u.naming.outer_uri(uri));
            }
            _ => {}
        }
    })
}

/// `completion/complete`, forwarded to the upstream that owns the prompt or template.
async fn complete(
    shared: Weak<Shared>,
    mut params: CompleteRequestParams,
    ctx: Context,
) -> Result<CompleteResult, HandlerError> {
    let Some(shared) = shared.upgrade() else {
        return Err(HandlerError::msg("the gateway is shutting down"));
    };
    let ups = shared.upstreams();
    let found = ups.iter().find_map(|u| {
        let inner = match &params.r#ref {
            CompleteReference::Prompt(p) => u.naming.inner(&p.name),
            CompleteReference::ResourceTemplate(t) => u.naming.inner_uri(&t.uri),
        }?
        .to_owned();
        shared
            .sync
            .owns(u.name(), &params.r#ref)
            .then(|| (u.clone(), inner))
    });
    let Some((u, inner)) = found else {
        return Err(HandlerError::invalid_params(
            "no upstream has this prompt or resource template",
        ));
    };
    match &mut params.r#ref {
        CompleteReference::Prompt(p) => p.name = inner,
        CompleteReference::ResourceTemplate(t) => t.uri = inner,
    }
    params.meta = None;
    let client = u
        .client()
        .await
        .map_err(|e| bridge::upstream_failure(u.name(), e))?;
    let _permit = u.permit(bridge::owner(&ctx).as_deref()).await;
    client
        .complete(params)
        .await
        .map_err(|e| bridge::upstream_failure(u.name(), e))
}

/// The telemetry a gateway starts with (feature `otel`; nothing without it).
#[derive(Default)]
#[cfg(feature = "otel")]
struct Telemetry(Option<duomcp::otel::Telemetry>);

#[derive(Default)]
#[cfg(not(feature = "otel"))]
struct Telemetry();
