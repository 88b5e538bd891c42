//! [`ClientBuilder`]: who the client is, what it can answer, and how it connects.

use super::cache::{Cache, Clock, SystemClock};
use super::engine::{Config, Inner};
use super::error::{ClientError, InputError};
use super::handlers::{elicit_fn, roots_fn, sample_fn, Handlers, RootsSource};
use super::transport::{ProcessOptions, ProcessTransport, StreamTransport, Transport};
use super::{negotiate, Client};
use duomcp_schema::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationCapability, Implementation, JsonObject, LoggingLevel, Root, SamplingCapability,
};
use std::future::Future;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// Which era a client speaks: one of the two ([`Era`](crate::era::Era)), or whichever the
/// server speaks, found out by probing (`Auto`).
///
/// It reads from a string ([`FromStr`](std::str::FromStr): `auto`, `legacy` or `2025-11-25`,
/// `modern` or `2026-07-28`) and from a configuration file (serde: `"auto"`, `"legacy"`,
/// `"modern"`), and [`Display`](std::fmt::Display)s as its lowercase name.
///
/// ```
/// use duomcp::client::EraChoice;
/// assert_eq!(EraChoice::Auto.to_string(), "auto");
/// assert_eq!("2026-07-28".parse::<EraChoice>(), Ok(EraChoice::Modern));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EraChoice {
    /// Probe with `server/discover`; fall back to `initialize` (the default).
    #[default]
    Auto,
    /// Only 2025-11-25: `initialize` straight away.
    Legacy,
    /// Only 2026-07-28: `server/discover`, and fail if the server does not speak it.
    Modern,
}

impl EraChoice {
    /// The lowercase name: `auto`, `legacy`, `modern`.
    pub fn as_str(self) -> &'static str {
        match self {
            EraChoice::Auto => "auto",
            EraChoice::Legacy => "legacy",
            EraChoice::Modern => "modern",
        }
    }
}

impl std::fmt::Display for EraChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for EraChoice {
    type Err = String;

    /// `auto`, `legacy` (or `2025-11-25`), `modern` (or `2026-07-28`).
    ///
    /// ```
    /// use duomcp::client::EraChoice;
    /// assert_eq!("modern".parse::<EraChoice>(), Ok(EraChoice::Modern));
    /// assert_eq!("2025-11-25".parse::<EraChoice>(), Ok(EraChoice::Legacy));
    /// assert!("1999".parse::<EraChoice>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(EraChoice::Auto),
            "legacy" | "2025-11-25" => Ok(EraChoice::Legacy),
            "modern" | "2026-07-28" => Ok(EraChoice::Modern),
            other => Err(format!(
                "unknown era `{other}`: expected auto, legacy or modern"
            )),
        }
    }
}

/// Builds a [`Client`]: identity, handlers for server-initiated input, timeouts, caching, and
/// finally the connection.
///
/// ```no_run
/// # async fn run() -> Result<(), duomcp::client::ClientError> {
/// use duomcp::client::{Client, EraChoice};
/// use duomcp::schema::{ElicitResult, Root};
/// use std::time::Duration;
///
/// let mut cmd = tokio::process::Command::new("duomcp");
/// cmd.arg("serve");
/// let client = Client::builder()
///     .name("my-app")
///     .version("1.0.0")
///     .era(EraChoice::Auto)
///     .request_timeout(Duration::from_secs(30))
///     .on_elicit(|_request| async { Ok(ElicitResult::decline()) })
///     .roots(vec![Root::new("file:///home/me/project")])
///     .connect_stdio(cmd)
///     .await?;
/// println!("{} speaks {}", client.server_info().map(|i| i.name).unwrap_or_default(), client.era());
/// # Ok(()) }
/// ```
pub struct ClientBuilder {
    info: Implementation,
    era: EraChoice,
    request_timeout: Duration,
    probe_timeout: Duration,
    max_input_rounds: usize,
    cache: bool,
    clock: Arc<dyn Clock>,
    log_level: Option<LoggingLevel>,
    handlers: Handlers,
    process: ProcessOptions,
    preferred_version: String,
    #[cfg(feature = "http-client")]
    http: HttpSettings,
    #[cfg(feature = "otel")]
    telemetry: Option<crate::otel::Telemetry>,
}

/// What [`ClientBuilder`] collects for [`connect_http`](ClientBuilder::connect_http).
#[cfg(feature = "http-client")]
#[derive(Default)]
struct HttpSettings {
    options: super::transport::http::HttpOptions,
    /// Extra headers as given, checked when connecting.
    headers: Vec<(String, String)>,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        ClientBuilder {
            info: Implementation::new("duomcp-client", env!("CARGO_PKG_VERSION")),
            era: EraChoice::Auto,
            request_timeout: Duration::from_secs(60),
            probe_timeout: Duration::from_secs(3),
            max_input_rounds: 8,
            cache: true,
            clock: Arc::new(SystemClock),
            log_level: None,
            handlers: Handlers::default(),
            process: ProcessOptions::default(),
            preferred_version: duomcp_schema::version::LATEST_MODERN.to_owned(),
            #[cfg(feature = "http-client")]
            http: HttpSettings::default(),
            #[cfg(feature = "otel")]
            telemetry: None,
        }
    }
}

impl ClientBuilder {
    /// Traces and measures every request with `telemetry` (feature `otel`; see
    /// [`otel`](crate::otel)): a client span per request, child of the current OpenTelemetry
    /// context, whose context goes into `_meta` (and the HTTP headers), so the server's span is
    /// its child; `mcp.client.operation.duration` and `mcp.client.session.duration`.
    #[cfg(feature = "otel")]
    pub fn telemetry(mut self, telemetry: crate::otel::Telemetry) -> Self {
        self.telemetry = Some(telemetry);
        self
    }

    /// The client's name (`clientInfo.name`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.info.name = name.into();
        self
    }

    /// The client's version (`clientInfo.version`).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.info.version = version.into();
        self
    }

    /// The whole `clientInfo` (title, icons, website…).
    pub fn info(mut self, info: Implementation) -> Self {
        self.info = info;
        self
    }

    /// Which era to speak (default [`EraChoice::Auto`]).
    pub fn era(mut self, era: EraChoice) -> Self {
        self.era = era;
        self
    }

    /// How long a request may take (default 60 s); per call see
    /// [`RequestOptions::timeout`](super::RequestOptions::timeout).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How long [`EraChoice::Auto`] waits for an answer to `server/discover` before it assumes a
    /// 2025-11-25 server (default 3 s; legacy servers may not answer unknown methods at all).
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }

    /// The 2026-07-28-family version `server/discover` asks for first (default: the newest this
    /// crate implements). When the server answers `-32022`, the probe is retried with a version
    /// from its `supported` list that this crate implements.
    pub fn protocol_version(mut self, version: impl Into<String>) -> Self {
        self.preferred_version = version.into();
        self
    }

    /// How many `input_required` rounds one call may take before it fails (default 8).
    pub fn max_input_rounds(mut self, rounds: usize) -> Self {
        self.max_input_rounds = rounds;
        self
    }

    /// Whether results are cached per their `ttlMs` (default on).
    pub fn cache(mut self, enabled: bool) -> Self {
        self.cache = enabled;
        self
    }

    /// The clock the cache reads (tests use [`ManualClock`](super::ManualClock)).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The log level to ask for from the start (2025-11-25: `logging/setLevel` after
    /// `initialize`; 2026-07-28: `_meta` on every request). Without it, no log messages.
    pub fn log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// Answers elicitation requests, in form and URL mode (declares `elicitation: {form, url}`).
    /// Form defaults the answer leaves out are filled in from the schema (SEP-1034).
    ///
    /// ```
    /// use duomcp::schema::ElicitResult;
    /// let builder = duomcp::client::Client::builder().on_elicit(|request| async move {
    ///     eprintln!("the server asks: {}", request.message());
    ///     Ok(ElicitResult::decline())
    /// });
    /// # let _ = builder;
    /// ```
    pub fn on_elicit<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(ElicitRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, InputError>> + Send + 'static,
    {
        let caps = ElicitationCapability {
            form: Some(JsonObject::new()),
            url: Some(JsonObject::new()),
            ..Default::default()
        };
        self.on_elicit_with(caps, handler)
    }

    /// Like [`on_elicit`](Self::on_elicit), declaring the given modes only (e.g. form only).
    pub fn on_elicit_with<F, Fut>(mut self, capability: ElicitationCapability, handler: F) -> Self
    where
        F: Fn(ElicitRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, InputError>> + Send + 'static,
    {
        self.handlers.elicit = Some((elicit_fn(handler), capability));
        self
    }

    /// Answers sampling requests (declares `sampling: {}`; use
    /// [`on_sample_with`](Self::on_sample_with) to declare `tools` support).
    ///
    /// ```
    /// use duomcp::schema::CreateMessageResult;
    /// let builder = duomcp::client::Client::builder().on_sample(|request| async move {
    ///     // Ask a model here; this one always says the same.
    ///     let _ = request.messages.len();
    ///     Ok(CreateMessageResult::assistant_text("canned-model", "blue"))
    /// });
    /// # let _ = builder;
    /// ```
    pub fn on_sample<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, InputError>> + Send + 'static,
    {
        self.on_sample_with(SamplingCapability::default(), handler)
    }

    /// Answers sampling requests, declaring `capability` (e.g. with `tools: {}` when the handler
    /// supports `tools` and `toolChoice`).
    pub fn on_sample_with<F, Fut>(mut self, capability: SamplingCapability, handler: F) -> Self
    where
        F: Fn(CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, InputError>> + Send + 'static,
    {
        self.handlers.sample = Some((sample_fn(handler), capability));
        self
    }

    /// Offers a fixed list of roots (declares `roots`; in 2025-11-25 with `listChanged`, see
    /// [`Client::set_roots`]).
    ///
    /// ```
    /// use duomcp::schema::Root;
    /// let builder = duomcp::client::Client::builder().roots(vec![Root::new("file:///home/me/project")]);
    /// # let _ = builder;
    /// ```
    pub fn roots(mut self, roots: Vec<Root>) -> Self {
        self.handlers.roots = Some(RootsSource::Static(Arc::new(RwLock::new(roots))));
        self
    }

    /// Answers roots requests with a handler (declares `roots`).
    pub fn on_roots<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<Root>, InputError>> + Send + 'static,
    {
        self.handlers.roots = Some(RootsSource::Handler(roots_fn(handler)));
        self
    }

    /// 2025-11-25: runs the server's task-augmented `elicitation/create` and
    /// `sampling/createMessage` requests as tasks on the client (declares
    /// `tasks.requests.elicitation.create` / `tasks.requests.sampling.createMessage` for the
    /// handlers registered, plus `tasks.list` and `tasks.cancel`), and serves the server's
    /// `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` for them.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), duomcp::client::ClientError> {
    /// use duomcp::client::{Client, EraChoice};
    /// use duomcp::schema::ElicitResult;
    /// let client = Client::builder()
    ///     .era(EraChoice::Legacy)
    ///     .on_elicit(|_request| async { Ok(ElicitResult::decline()) })
    ///     .host_tasks(true)
    ///     .connect_stdio(tokio::process::Command::new("my-server"))
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn host_tasks(mut self, enabled: bool) -> Self {
        self.handlers.host_tasks = enabled;
        self
    }

    /// Declares support for the extension `id` with its settings object, in the client's
    /// capabilities (`extensions`): at `initialize` in 2025-11-25, in every request's `_meta`
    /// in 2026-07-28. [`skills`] declares the skills extension.
    ///
    /// ```
    /// use duomcp::client::Client;
    /// let builder = Client::builder().extension("io.modelcontextprotocol/skills", Default::default());
    /// # let _ = builder;
    /// ```
    ///
    #[cfg_attr(feature = "skills", doc = "[`skills`]: Self::skills")]
    #[cfg_attr(not(feature = "skills"), doc = "[`skills`]: crate#features")]
    pub fn extension(mut self, id: impl Into<String>, settings: JsonObject) -> Self {
        self.handlers
            .extensions
            .insert(id.into(), serde_json::Value::Object(settings));
        self
    }

    /// How a server process started by [`connect_stdio`](Self::connect_stdio) is shut down and
    /// restarted.
    pub fn process_options(mut self, options: ProcessOptions) -> Self {
        self.process = options;
        self
    }

    /// Starts `command` as a child process and connects over its stdin and stdout.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), duomcp::client::ClientError> {
    /// let mut command = tokio::process::Command::new("npx");
    /// command.args(["-y", "@modelcontextprotocol/server-everything"]);
    /// let client = duomcp::client::Client::builder().connect_stdio(command).await?;
    /// println!("connected in {}", client.era());
    /// # Ok(()) }
    /// ```
    pub async fn connect_stdio(
        self,
        command: tokio::process::Command,
    ) -> Result<Client, ClientError> {
        let transport =
            ProcessTransport::spawn(command, self.process.clone()).map_err(ClientError::Spawn)?;
        self.connect_transport(transport).await
    }

    /// Calls `f` with each HTTP exchange of [`connect_http`](Self::connect_http): the request's
    /// headers, the answer's status and headers, and the JSON-RPC message it carried (see
    /// [`HttpExchange`](super::transport::http::HttpExchange)). For a debugger; when none is
    /// set, nothing is copied.
    ///
    /// ```
    /// use duomcp::client::Client;
    /// let builder = Client::builder().on_http_exchange(|x| {
    ///     eprintln!("{} {} -> {}", x.method, x.url, x.status);
    /// });
    /// # drop(builder);
    /// ```
    #[cfg(feature = "http-client")]
    pub fn on_http_exchange(
        mut self,
        f: impl Fn(&super::transport::http::HttpExchange) + Send + Sync + 'static,
    ) -> Self {
        self.http.options.on_exchange = Some(std::sync::Arc::new(f));
        self
    }

    /// A header sent with every HTTP request of [`connect_http`](Self::connect_http) (an API
    /// key, a tenant…). The protocol's own headers take precedence; an invalid name or value
    /// makes `connect_http` fail.
    #[cfg(feature = "http-client")]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.http.headers.push((name.into(), value.into()));
        self
    }

    /// Who supplies the `Authorization` header of every HTTP request, and handles `401`/`403`
    /// answers (see [`auth`](super::auth)).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), duomcp::client::ClientError> {
    /// use duomcp::client::{auth::StaticToken, Client};
    /// let client = Client::builder()
    ///     .auth(StaticToken::new(std::env::var("MCP_TOKEN").unwrap_or_default()))
    ///     .connect_http("https://mcp.example.com/mcp")
    ///     .await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "http-client")]
    pub fn auth(mut self, provider: impl super::auth::AuthProvider) -> Self {
        self.http.options.auth = Some(Arc::new(provider));
        self
    }

    /// The HTTP client [`connect_http`](Self::connect_http) uses: pass one `reqwest::Client`
    /// to several connections to share its connection pool (by default every connection shares
    /// [`default_client`](super::transport::http::default_client)).
    #[cfg(feature = "http-client")]
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http.options.client = Some(client);
        self
    }

    /// All settings of the HTTP transport at once (replaces what [`auth`](Self::auth) and
    /// [`http_client`](Self::http_client) set; headers given with [`header`](Self::header) are
    /// added to its own).
    #[cfg(feature = "http-client")]
    pub fn http_options(mut self, options: super::transport::http::HttpOptions) -> Self {
        self.http.options = options;
        self
    }

    /// Connects to a Streamable HTTP endpoint (`http://127.0.0.1:3000/mcp`) and negotiates the
    /// era: `server/discover`, falling back to `initialize` (and to the 2024-11-05 HTTP+SSE
    /// transport for servers that only speak that).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// use duomcp::client::Client;
    /// use duomcp::server::Server;
    /// use duomcp::transport::http::StreamableHttp;
    ///
    /// let server = Server::builder().tool("hi", || async { "hello" }).build();
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    /// tokio::spawn(StreamableHttp::new(server).serve(listener));
    ///
    /// let client = Client::builder().connect_http(&url).await.unwrap();
    /// assert_eq!(client.protocol_version(), "2026-07-28");
    /// let result = client.call_tool("hi", ()).await.unwrap();
    /// assert_eq!(result.content[0].as_text(), Some("hello"));
    /// # });
    /// ```
    #[cfg(feature = "http-client")]
    pub async fn connect_http(mut self, url: &str) -> Result<Client, ClientError> {
        use super::transport::http::HttpTransport;
        let mut options = std::mem::take(&mut self.http.options);
        for (name, value) in std::mem::take(&mut self.http.headers) {
            let header = http::HeaderName::try_from(name.as_str()).map_err(|_| {
                ClientError::InvalidArguments(format!("`{name}` is not a valid header name"))
            })?;
            let value = http::HeaderValue::try_from(value.as_str()).map_err(|_| {
                ClientError::InvalidArguments(format!("the value of header `{name}` is not valid"))
            })?;
            options.headers.append(header, value);
        }
        let transport = HttpTransport::new(url, options).map_err(ClientError::Transport)?;
        self.connect_transport(transport).await
    }

    /// Connects to a Streamable HTTP endpoint served on the Unix domain socket at `socket`
    /// (`duomcp serve --unix PATH`, or
    /// `StreamableHttp::serve_unix_with_shutdown` with feature `http-server`),
    /// as [`connect_http`](Self::connect_http) does over TCP, both revisions. `url` names the
    /// endpoint's path and the `Host` header (`http://localhost/mcp`); no name is resolved, every
    /// connection goes to the socket. The HTTP client is [`unix_client`]`(socket)`, in place of
    /// one given with [`http_client`](Self::http_client).
    ///
    /// [`unix_client`]: super::transport::http::unix_client
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// use duomcp::client::Client;
    /// use duomcp::server::Server;
    /// use duomcp::transport::http::{bind_unix, StreamableHttp};
    ///
    /// let dir = std::env::temp_dir().join(format!("duomcp-connect-unix-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// let socket = dir.join("mcp.sock");
    /// let server = Server::builder().tool("hi", || async { "hello" }).build();
    /// let listener = bind_unix(&socket, 0o600).await.unwrap();
    /// tokio::spawn(StreamableHttp::new(server).serve_unix_with_shutdown(listener, std::future::pending()));
    ///
    /// let client = Client::builder()
    ///     .connect_unix(&socket, "http://localhost/mcp")
    ///     .await
    ///     .unwrap();
    /// let result = client.call_tool("hi", ()).await.unwrap();
    /// assert_eq!(result.content[0].as_text(), Some("hello"));
    /// std::fs::remove_dir_all(&dir).unwrap();
    /// # });
    /// ```
    #[cfg(all(feature = "http-client", unix))]
    pub async fn connect_unix(
        mut self,
        socket: impl AsRef<std::path::Path>,
        url: &str,
    ) -> Result<Client, ClientError> {
        let client =
            super::transport::http::unix_client(socket.as_ref()).map_err(ClientError::Transport)?;
        self.http.options.client = Some(client);
        self.connect_http(url).await
    }

    /// Connects over any byte stream carrying newline-delimited JSON (a socket, a pipe, or an
    /// in-memory [`tokio::io::duplex`]).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = duomcp::server::Server::builder().tool("hi", || async { "hello" }).build();
    /// let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    /// let (read, write) = tokio::io::split(server_end);
    /// tokio::spawn(server.serve_connection(read, write));
    /// let (read, write) = tokio::io::split(client_end);
    /// let client = duomcp::client::Client::builder().connect(read, write).await.unwrap();
    /// assert_eq!(client.list_all_tools().await.unwrap()[0].name, "hi");
    /// # });
    /// ```
    pub async fn connect<R, W>(self, reader: R, writer: W) -> Result<Client, ClientError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.connect_transport(StreamTransport::new(reader, writer))
            .await
    }

    /// Connects over a [`Transport`] and negotiates the era.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = duomcp::server::Server::builder().build();
    /// let (transport, _serving) = duomcp::transport::memory::pair(server);
    /// let client = duomcp::client::Client::builder().connect_transport(transport).await.unwrap();
    /// client.ping().await.unwrap();
    /// # });
    /// ```
    pub async fn connect_transport(self, transport: impl Transport) -> Result<Client, ClientError> {
        let config = Config {
            info_json: serde_json::value::to_raw_value(&self.info).ok(),
            info: self.info,
            era: self.era,
            request_timeout: self.request_timeout,
            probe_timeout: self.probe_timeout,
            max_input_rounds: self.max_input_rounds,
            preferred_version: self.preferred_version,
            #[cfg(feature = "otel")]
            telemetry: super::telemetry::Slot::open(self.telemetry),
            #[cfg(not(feature = "otel"))]
            telemetry: Default::default(),
        };
        let cache = Cache::new(self.cache, self.clock);
        let inner = Arc::new(Inner::new(
            Arc::new(transport),
            config,
            self.handlers,
            cache,
            self.log_level,
        ));
        inner.start();
        if let Err(e) = negotiate::connect(&inner).await {
            let _ = inner.transport.close().await;
            return Err(e);
        }
        Ok(Client { inner })
    }
}
