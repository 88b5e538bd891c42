//! The client runtime: one client for servers of either era, which finds out by itself which
//! one it is talking to.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use duomcp::client::Client;
//! use duomcp::server::{Args, Server};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add { a: i64, b: i64 }
//!
//! // A server in the same process, over an in-memory pipe.
//! let server = Server::builder().tool("add", |Args(Add { a, b }): Args<Add>| async move { (a + b).to_string() }).build();
//! let (client_end, server_end) = tokio::io::duplex(64 * 1024);
//! let (sr, sw) = tokio::io::split(server_end);
//! tokio::spawn(server.serve_connection(sr, sw));
//!
//! let (cr, cw) = tokio::io::split(client_end);
//! let client = Client::builder().name("doc").connect(cr, cw).await.unwrap();
//! let tools = client.list_all_tools().await.unwrap();
//! assert_eq!(tools[0].name, "add");
//! let result = client.call_tool("add", serde_json::json!({ "a": 2, "b": 3 })).await.unwrap();
//! assert_eq!(result.content[0].as_text(), Some("5"));
//! # });
//! ```
//!
//! ## What differs by era, and what does not
//!
//! | | 2025-11-25 | 2026-07-28 |
//! |---|---|---|
//! | connect | `initialize`, `notifications/initialized` | `server/discover` (a probe in [`EraChoice::Auto`]) |
//! | every request | nothing extra | `_meta`: version, capabilities, client info, log level |
//! | elicitation, sampling, roots | the server's requests, answered by the handlers | `input_required` results: the handlers answer, the call is retried |
//! | [`Client::set_log_level`] | `logging/setLevel` | `_meta` `logLevel` on later requests |
//! | [`Client::listen`] | `resources/subscribe` + session notifications | `subscriptions/listen` |
//! | [`Client::ping`] | `ping` | `server/discover` |
//! | caching | — (results carry no `ttlMs`) | per `ttlMs`, dropped on `list_changed` |
//! | tasks ([`Client::call_tool`], [`TaskHandle`]) | `params.task` per the tool's `taskSupport`; `tasks/get`, `tasks/result` | extension declared on `tools/call`; `tasks/get`, `tasks/update` |
//!
//! Transports are pluggable ([`transport::Transport`]): a child process, any byte stream, and
//! Streamable HTTP (feature `http-client`, [`ClientBuilder::connect_http`]).
//!
//! Over HTTP in the 2026-07-28 era, tools listed with an invalid `x-mcp-header` annotation are
//! left out of [`Client::list_tools`] (with a warning), and calls mirror the annotated arguments
//! into `Mcp-Param-*` headers.
//!
#![cfg_attr(
    not(feature = "http-client"),
    doc = "[`ClientBuilder::connect_http`]: crate#features"
)]

pub mod apps;
pub mod auth;
mod builder;
mod cache;
mod engine;
mod era;
mod error;
#[cfg(feature = "events")]
pub mod events;
mod handlers;
pub(crate) mod mirror;
mod negotiate;
mod notify;
mod options;
#[cfg(feature = "skills")]
pub mod skills;
mod tasks;
mod telemetry;
pub mod transport;
mod validate;

/// The clock's documented path is [`crate::clock`]; kept here so code naming it compiles.
#[doc(hidden)]
pub use crate::clock::{Clock, ManualClock, SystemClock};
pub use builder::{ClientBuilder, EraChoice};
pub use error::{ClientError, InputError};
pub use handlers::apply_elicit_defaults;
/// The name [`ServerEvent`] had; kept so code naming it compiles.
#[doc(hidden)]
pub use notify::ServerEvent as Notification;
pub use notify::{Notifications, ServerEvent, Subscription};
pub use options::{AwaitingInput, RequestOptions};
pub use tasks::{TaskHandle, TaskInfo, TaskStart, TaskWatch};

use crate::era::Era;
use duomcp_schema::methods::{self, RequestMethod};
use duomcp_schema::{
    CallToolResult, CompleteRequestParams, CompleteResult, GetPromptResult, Implementation,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    LoggingLevel, Prompt, ReadResourceResult, Resource, ResourceTemplate, Root, ServerCapabilities,
    SubscriptionFilter, Tool,
};
use engine::Inner;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// A connection to one MCP server, in whichever era it speaks. Cheap to clone; clones share
/// the connection.
///
/// Build one with [`Client::builder`]. Every method works in both eras unless its documentation
/// says otherwise; [`era`](Client::era) tells which one was negotiated.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use duomcp::client::{Client, EraChoice};
/// use duomcp::server::Server;
///
/// let server = Server::builder().tool("hello", || async { "Hello!" }).build();
/// let (transport, _serving) = duomcp::transport::memory::pair(server);
/// // `connect_stdio(command)` or `connect_http(url)` for a real server.
/// let client = Client::builder()
///     .era(EraChoice::Legacy)
///     .connect_transport(transport)
///     .await
///     .unwrap();
/// assert_eq!(client.protocol_version(), "2025-11-25");
/// let tools = client.list_all_tools().await.unwrap();
/// let result = client.call_tool(&tools[0].name, serde_json::json!({})).await.unwrap();
/// assert_eq!(result.content[0].as_text(), Some("Hello!"));
/// client.close().await.unwrap();
/// # });
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("era", &self.inner.era())
            .field("server", &self.server_info().map(|i| i.name))
            .finish()
    }
}

fn object(method: &str, v: Value) -> Result<Map<String, Value>, ClientError> {
    match v {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(Map::new()),
        other => Err(ClientError::InvalidArguments(format!(
            "the arguments of {method} must be a JSON object, not {other}"
        ))),
    }
}

fn decode<T: DeserializeOwned>(method: &str, v: Value) -> Result<T, ClientError> {
    serde_json::from_value(v)
        .map_err(|e| ClientError::Protocol(format!("malformed result of {method}: {e}")))
}

fn list_params(cursor: Option<String>) -> Map<String, Value> {
    let mut params = Map::new();
    if let Some(c) = cursor {
        params.insert("cursor".into(), Value::String(c));
    }
    params
}

/// Upper bound on pages fetched by the `list_all_*` methods, against servers that loop.
const MAX_PAGES: usize = 10_000;

impl Client {
    /// Starts building a client.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    fn negotiated(&self) -> engine::Negotiated {
        // A `Client` only exists after a successful handshake.
        self.inner
            .negotiated()
            .unwrap_or_else(|| engine::Negotiated {
                era: Era::UNMARKED,
                protocol_version: String::new(),
                capabilities: ServerCapabilities::default(),
                server_info: None,
                instructions: None,
            })
    }

    /// The negotiated era's adapter (`client::era`).
    fn adapter(&self) -> &'static dyn era::Adapter {
        era::of(self.era())
    }

    /// The era the server speaks.
    pub fn era(&self) -> Era {
        self.inner.era().unwrap_or(Era::UNMARKED)
    }

    /// The protocol version in use (`2025-11-25`, `2026-07-28`, …).
    pub fn protocol_version(&self) -> String {
        self.negotiated().protocol_version
    }

    /// How many times the connection was made again since the client connected: a stdio
    /// server process restarted after it died
    /// ([`max_restarts`](transport::ProcessOptions::max_restarts)), or a new HTTP session after
    /// the server forgot the old one. Each time the server's state is gone.
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) {
    /// if client.restarts() > 0 {
    ///     eprintln!("the server restarted {} times", client.restarts());
    /// }
    /// # }
    /// ```
    pub fn restarts(&self) -> u64 {
        self.inner
            .restarts
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// What the server offers (from `initialize` or `server/discover`).
    pub fn server_capabilities(&self) -> ServerCapabilities {
        self.negotiated().capabilities
    }

    /// Who the server says it is (2026-07-28: from `_meta` of the discover result, if sent).
    pub fn server_info(&self) -> Option<Implementation> {
        self.negotiated().server_info
    }

    /// The server's instructions for the model, if it gave any.
    pub fn instructions(&self) -> Option<String> {
        self.negotiated().instructions
    }

    /// Sends any request and returns its raw result: the escape hatch for methods without a
    /// typed wrapper. Caching and the input-required loop apply as for the typed methods.
    pub async fn request(
        &self,
        method: &str,
        params: impl Serialize,
        options: RequestOptions,
    ) -> Result<Value, ClientError> {
        let params = serde_json::to_value(params)
            .map_err(|e| ClientError::InvalidArguments(e.to_string()))?;
        self.request_object(method, object(method, params)?, options)
            .await
    }

    /// [`request`](Self::request) with params that are a JSON object already: they are sent
    /// as they are, not serialized into a copy first (a gateway or proxy relaying requests).
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// use duomcp::client::RequestOptions;
    /// let mut params = serde_json::Map::new();
    /// params.insert("name".into(), "echo".into());
    /// let result = client.request_object("tools/call", params, RequestOptions::new()).await?;
    /// # let _ = result; Ok(()) }
    /// ```
    pub async fn request_object(
        &self,
        method: &str,
        params: Map<String, Value>,
        options: RequestOptions,
    ) -> Result<Value, ClientError> {
        self.inner.call(method, params, &options).await
    }

    /// One request with params that are a JSON object, its result as the server sent it: the
    /// JSON text, not parsed (a gateway or proxy handing the result on, or reading only part
    /// of it). Nothing is done with the result: no cache, no input rounds (an
    /// `input_required` result is returned as it is, as with
    /// [`RequestOptions::relay_input_required`]), no task followed, no `resultType` checked.
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// use duomcp::client::RequestOptions;
    /// let mut params = serde_json::Map::new();
    /// params.insert("name".into(), "echo".into());
    /// let raw = client.request_raw("tools/call", params, RequestOptions::new()).await?;
    /// println!("{}", raw.get());
    /// # Ok(()) }
    /// ```
    pub async fn request_raw(
        &self,
        method: &str,
        params: Map<String, Value>,
        options: RequestOptions,
    ) -> Result<Box<serde_json::value::RawValue>, ClientError> {
        self.inner.request_raw(method, params, &options).await
    }

    /// Sends a typed request: params and result types come from the method's marker.
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// use duomcp::schema::{methods::ListTools, PaginatedRequestParams};
    /// let page = client.send::<ListTools>(PaginatedRequestParams::default()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn send<M: RequestMethod>(
        &self,
        params: M::Params,
    ) -> Result<M::Result, ClientError> {
        let v = self
            .request(M::NAME, params, RequestOptions::default())
            .await?;
        decode(M::NAME, v)
    }

    async fn list<T: DeserializeOwned>(
        &self,
        method: &str,
        cursor: Option<String>,
    ) -> Result<T, ClientError> {
        let v = self
            .inner
            .call(method, list_params(cursor), &RequestOptions::default())
            .await?;
        decode(method, v)
    }

    async fn list_all<T, R: DeserializeOwned>(
        &self,
        method: &str,
        mut split: impl FnMut(R) -> (Vec<T>, Option<String>),
    ) -> Result<Vec<T>, ClientError> {
        let mut all = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let (items, next) = split(self.list::<R>(method, cursor).await?);
            all.extend(items);
            match next {
                Some(c) if !c.is_empty() => cursor = Some(c),
                _ => return Ok(all),
            }
        }
        Err(ClientError::Protocol(format!(
            "{method} returned more than {MAX_PAGES} pages"
        )))
    }

    /// One page of `tools/list` (the first when `cursor` is `None`). The output schemas are
    /// remembered, to check the `structuredContent` of later calls.
    ///
    /// Over Streamable HTTP in the 2026-07-28 era, tools whose `x-mcp-header` annotations are
    /// invalid are left out (a warning is logged), as the transport requires.
    pub async fn list_tools(&self, cursor: Option<String>) -> Result<ListToolsResult, ClientError> {
        let mut page: ListToolsResult = self
            .list(<methods::ListTools as RequestMethod>::NAME, cursor)
            .await?;
        if self.inner.mirrors_headers() {
            self.inner.tool_headers.admit(&mut page.tools);
        }
        self.inner.tools.remember(&page.tools);
        self.inner.tasks.remember(&page.tools);
        Ok(page)
    }

    /// Every tool, following `nextCursor`.
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// for tool in client.list_all_tools().await? {
    ///     println!("{}: {}", tool.name, tool.description.unwrap_or_default());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_all_tools(&self) -> Result<Vec<Tool>, ClientError> {
        let mut all = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let page = self.list_tools(cursor).await?;
            all.extend(page.tools);
            match page.next_cursor {
                Some(c) if !c.is_empty() => cursor = Some(c),
                _ => return Ok(all),
            }
        }
        Err(ClientError::Protocol(format!(
            "tools/list returned more than {MAX_PAGES} pages"
        )))
    }

    /// One page of `prompts/list`.
    pub async fn list_prompts(
        &self,
        cursor: Option<String>,
    ) -> Result<ListPromptsResult, ClientError> {
        self.list(<methods::ListPrompts as RequestMethod>::NAME, cursor)
            .await
    }

    /// Every prompt, following `nextCursor`.
    pub async fn list_all_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        self.list_all(
            <methods::ListPrompts as RequestMethod>::NAME,
            |p: ListPromptsResult| (p.prompts, p.next_cursor),
        )
        .await
    }

    /// One page of `resources/list`.
    pub async fn list_resources(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, ClientError> {
        self.list(<methods::ListResources as RequestMethod>::NAME, cursor)
            .await
    }

    /// Every resource, following `nextCursor`.
    pub async fn list_all_resources(&self) -> Result<Vec<Resource>, ClientError> {
        self.list_all(
            <methods::ListResources as RequestMethod>::NAME,
            |p: ListResourcesResult| (p.resources, p.next_cursor),
        )
        .await
    }

    /// One page of `resources/templates/list`.
    pub async fn list_resource_templates(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, ClientError> {
        self.list(
            <methods::ListResourceTemplates as RequestMethod>::NAME,
            cursor,
        )
        .await
    }

    /// Every resource template, following `nextCursor`.
    pub async fn list_all_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        self.list_all(
            <methods::ListResourceTemplates as RequestMethod>::NAME,
            |p: ListResourceTemplatesResult| (p.resource_templates, p.next_cursor),
        )
        .await
    }

    /// Calls a tool. `arguments` is anything that serialises to a JSON object (or `()` / `null`
    /// for none). Input the server asks for is gathered with the handlers (2026-07-28).
    /// A tool failure is a result with `isError: true`, not an `Err`.
    ///
    /// Tasks are handled transparently: a tool that must run as a task (2025-11-25
    /// `taskSupport: "required"`, or `"optional"` with [`RequestOptions::as_task`]), or a
    /// 2026-07-28 server answering with a task, is polled until it ends, and its result is
    /// returned. Dropping the future cancels the task (`tasks/cancel`). See
    /// [`start_tool_task`](Self::start_tool_task) for the explicit API.
    ///
    /// When the tool was listed with an `outputSchema`, the result's `structuredContent` is
    /// checked against it ([`ClientError::InvalidStructuredContent`]).
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// let result = client.call_tool("add", serde_json::json!({ "a": 1, "b": 2 })).await?;
    /// if result.is_error() {
    ///     eprintln!("the tool failed");
    /// }
    /// for block in &result.content {
    ///     println!("{}", block.as_text().unwrap_or("(not text)"));
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<CallToolResult, ClientError> {
        self.call_tool_with(name, arguments, RequestOptions::default())
            .await
    }

    /// [`call_tool`](Self::call_tool) with per-call options (timeout, progress…).
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// use duomcp::client::RequestOptions;
    /// let options = RequestOptions::new()
    ///     .timeout(std::time::Duration::from_secs(120))
    ///     .on_progress(|p| eprintln!("{}/{:?}", p.progress, p.total))
    ///     .on_task_status(|t| eprintln!("task {}: {}", t.task_id, t.status.as_str()));
    /// let result = client.call_tool_with("slow_compute", serde_json::json!({ "seconds": 5 }), options).await?;
    /// # let _ = result;
    /// # Ok(()) }
    /// ```
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        let method = <methods::CallTool as RequestMethod>::NAME;
        let arguments = serde_json::to_value(arguments)
            .map_err(|e| ClientError::InvalidArguments(e.to_string()))?;
        let mut params = Map::new();
        params.insert("name".into(), json!(name));
        let arguments = object(method, arguments)?;
        if !arguments.is_empty() {
            params.insert("arguments".into(), Value::Object(arguments));
        }
        // 2025-11-25: a tool that runs as a task (see `tasks.rs`) gets `params.task`.
        let augmented = self.augment_for_task(name, &mut params, &options).await;
        // A task's progress notifications carry the `tools/call`'s token until the task ends,
        // long after that request returned: route a token of our own for the whole call.
        let mut options = options;
        let progress = match (augmented, options.on_progress.take()) {
            (true, Some(on_progress)) => {
                let listener = self.inner.progress_listener();
                let token = serde_json::to_value(listener.token())
                    .map_err(|e| ClientError::Protocol(format!("cannot encode: {e}")))?;
                let meta = params
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(meta) = meta {
                    meta.insert("progressToken".into(), token);
                }
                Some((listener, on_progress))
            }
            (_, on_progress) => {
                options.on_progress = on_progress;
                None
            }
        };
        let work = self.call_tool_settled(name, method, params, augmented, &options);
        let Some((mut listener, on_progress)) = progress else {
            return work.await;
        };
        tokio::pin!(work);
        loop {
            tokio::select! {
                biased;
                Some(p) = listener.rx.recv() => on_progress(&p),
                result = &mut work => {
                    while let Ok(p) = listener.rx.try_recv() {
                        on_progress(&p);
                    }
                    return result;
                }
            }
        }
    }

    /// Sends a prepared `tools/call` (retrying once after a header mismatch), follows a task to
    /// its end, and checks the result.
    async fn call_tool_settled(
        &self,
        name: &str,
        method: &str,
        params: Map<String, Value>,
        augmented: bool,
        options: &RequestOptions,
    ) -> Result<CallToolResult, ClientError> {
        // Kept for the one retry a header mismatch asks for (only where headers mirror).
        let retry_params = self.inner.mirrors_headers().then(|| params.clone());
        let value = match (self.inner.call(method, params, options).await, retry_params) {
            // The tool's x-mcp-header annotations changed (or were never listed): re-list the
            // tools and try once more, as the HTTP transport page advises.
            (Err(ClientError::Rpc { error, .. }), Some(params))
                if error.code == duomcp_schema::error_code::HEADER_MISMATCH =>
            {
                tracing::debug!(
                    tool = name,
                    "header mismatch; refreshing the tool list and retrying"
                );
                self.inner.cache.invalidate(cache::Invalidate::Method(
                    <methods::ListTools as RequestMethod>::NAME,
                ));
                // Boxed: rare, and inline it would weigh on every call's future.
                Box::pin(async {
                    self.list_all_tools().await?;
                    self.inner.call(method, params, options).await
                })
                .await?
            }
            (other, _) => other?,
        };
        // A task instead of a result: poll it for the result (both eras).
        let value = self.settle_task(value, augmented, options).await?;
        let result: CallToolResult = decode(method, value)?;
        self.inner.tools.check(name, &result)?;
        Ok(result)
    }

    /// Gets a prompt; `arguments` serialises to an object of strings (or `()` for none).
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// let prompt = client.get_prompt("greet", serde_json::json!({ "name": "Ada" })).await?;
    /// println!("{} message(s)", prompt.messages.len());
    /// # Ok(()) }
    /// ```
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<GetPromptResult, ClientError> {
        self.get_prompt_with(name, arguments, RequestOptions::default())
            .await
    }

    /// [`get_prompt`](Self::get_prompt) with per-call options.
    pub async fn get_prompt_with(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: RequestOptions,
    ) -> Result<GetPromptResult, ClientError> {
        let method = <methods::GetPrompt as RequestMethod>::NAME;
        let arguments = serde_json::to_value(arguments)
            .map_err(|e| ClientError::InvalidArguments(e.to_string()))?;
        let mut params = Map::new();
        params.insert("name".into(), json!(name));
        let arguments = object(method, arguments)?;
        if !arguments.is_empty() {
            params.insert("arguments".into(), Value::Object(arguments));
        }
        decode(method, self.inner.call(method, params, &options).await?)
    }

    /// Reads a resource.
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// let read = client.read_resource("file:///notes.txt").await?;
    /// println!("{} content(s)", read.contents.len());
    /// # Ok(()) }
    /// ```
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ClientError> {
        self.read_resource_with(uri, RequestOptions::default())
            .await
    }

    /// [`read_resource`](Self::read_resource) with per-call options.
    pub async fn read_resource_with(
        &self,
        uri: &str,
        options: RequestOptions,
    ) -> Result<ReadResourceResult, ClientError> {
        let method = <methods::ReadResource as RequestMethod>::NAME;
        let mut params = Map::new();
        params.insert("uri".into(), json!(uri));
        decode(method, self.inner.call(method, params, &options).await?)
    }

    /// Asks for completions of a prompt or resource-template argument.
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// use duomcp::schema::{CompleteReference, CompleteRequestParams, PromptReference};
    /// let reference = CompleteReference::Prompt(PromptReference { name: "greet".into(), ..Default::default() });
    /// let result = client.complete(CompleteRequestParams::new(reference, "language", "fr")).await?;
    /// println!("{:?}", result.completion.values);
    /// # Ok(()) }
    /// ```
    pub async fn complete(
        &self,
        params: CompleteRequestParams,
    ) -> Result<CompleteResult, ClientError> {
        let method = <methods::Complete as RequestMethod>::NAME;
        let params = serde_json::to_value(params)
            .map_err(|e| ClientError::InvalidArguments(e.to_string()))?;
        decode(
            method,
            self.inner
                .call(method, object(method, params)?, &RequestOptions::default())
                .await?,
        )
    }

    /// Checks that the server answers: `ping` in 2025-11-25; 2026-07-28 has no ping, so an
    /// uncached `server/discover` stands in.
    pub async fn ping(&self) -> Result<(), ClientError> {
        let method = self.adapter().ping_method();
        self.inner
            .request(method, Map::new(), &RequestOptions::default())
            .await
            .map(drop)
    }

    /// Asks for log messages at `level` and above: `logging/setLevel` in 2025-11-25; in
    /// 2026-07-28 the level goes into the `_meta` of every later request.
    pub async fn set_log_level(&self, level: LoggingLevel) -> Result<(), ClientError> {
        *self
            .inner
            .log_level
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(level);
        self.inner.send_log_level(level).await
    }

    /// Replaces the roots given with [`ClientBuilder::roots`]; in 2025-11-25 the server is told
    /// (`notifications/roots/list_changed`). Fails if the roots come from a handler.
    pub async fn set_roots(&self, roots: Vec<Root>) -> Result<(), ClientError> {
        match &self.inner.handlers.roots {
            Some(handlers::RootsSource::Static(list)) => {
                *list.write().unwrap_or_else(|p| p.into_inner()) = roots
            }
            Some(handlers::RootsSource::Handler(_)) => {
                return Err(ClientError::Unsupported(
                    "the roots come from a handler".into(),
                ))
            }
            None => {
                return Err(ClientError::Unsupported(
                    "no roots were configured on the builder".into(),
                ))
            }
        }
        self.inner.send_roots_changed().await
    }

    /// Every notification the server sends from now on (list changes, resource updates, log
    /// messages, progress…). Ends when the connection closes.
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// use duomcp::client::ServerEvent;
    /// let mut notifications = client.notifications();
    /// while let Some(n) = notifications.recv().await {
    ///     if let ServerEvent::ToolsListChanged = n {
    ///         println!("tools: {:?}", client.list_all_tools().await?.len());
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn notifications(&self) -> Notifications {
        Notifications::new(self.inner.subscribe_notifications())
    }

    /// Subscribes to the changes named in `filter`.
    ///
    /// 2026-07-28: a `subscriptions/listen` request; returns once the server acknowledged it,
    /// and only notifications carrying its subscription id arrive. 2025-11-25:
    /// `resources/subscribe` for each listed URI (when the server supports subscriptions), then
    /// the session's matching notifications. Dropping the [`Subscription`] ends it.
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// use duomcp::schema::SubscriptionFilter;
    /// let filter = SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() };
    /// let mut changes = client.listen(filter).await?;
    /// while let Some(n) = changes.next().await {
    ///     println!("{n:?}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Subscription, ClientError> {
        self.inner.listen(filter).await
    }

    /// Closes the connection. A child process is shut down gracefully: stdin closed, then
    /// SIGTERM, then SIGKILL if it lingers. Calls in flight, on any clone, fail with
    /// [`ClientError::Closed`].
    ///
    /// ```no_run
    /// # async fn run(client: duomcp::client::Client) -> Result<(), duomcp::client::ClientError> {
    /// client.close().await?;
    /// assert!(client.closed_reason().is_some());
    /// # Ok(()) }
    /// ```
    pub async fn close(&self) -> Result<(), ClientError> {
        self.inner
            .mark_closed("the client closed the connection".into());
        self.inner
            .transport
            .close()
            .await
            .map_err(ClientError::from)
    }

    /// Whether the connection is closed, and why.
    pub fn closed_reason(&self) -> Option<String> {
        self.inner.closed_reason()
    }
}
