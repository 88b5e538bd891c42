//! The client commands of `duomcp`: talk to any MCP server, in either era.
//!
//! Every command takes the server as TARGET: the URL of a Streamable HTTP endpoint (or
//! `unix:PATH`, one served on a Unix domain socket by `duomcp serve --unix PATH`), the name of
//! a server in a config file (`mcpServers` JSON, see [`config`]), or the command that starts a
//! stdio server after `--`:
//!
//! ```text
//! duomcp tools http://127.0.0.1:3000/mcp
//! duomcp tools unix:/run/user/1000/mcp.sock         # http://localhost/mcp over the socket
//! duomcp tools everything                      # named in .mcp.json, ~/.cursor/mcp.json, ...
//! duomcp tools -- npx -y @modelcontextprotocol/server-everything
//! duomcp call add a=1 b=2 http://127.0.0.1:3000/mcp
//! duomcp call add a=1 b=2 -- duomcp serve
//! duomcp call add --args '{"a":1,"b":2}' --json --url http://127.0.0.1:3000/mcp
//! duomcp read file:///notes.txt http://127.0.0.1:3000/mcp --header 'Authorization: Bearer s3cret'
//! duomcp skills http://127.0.0.1:3000/mcp
//! duomcp skill skill://release-notes/SKILL.md -- duomcp serve --skills ./my-skills
//! ```
//!
//! Output is readable by default (aligned tables, wrapped text, binary content summarised)
//! and JSON with `--json` (errors included: `{"error":{"message":...}}` on stdout). The exit code is 0 on success, 1 on any failure (including a tool
//! result with `isError: true`), 2 on a usage error.

mod apps;
pub mod card;
mod complete;
pub mod config;
mod discover;
mod elicit;
pub mod errors;
mod events;
pub mod gateway;
mod listen;
pub mod login;
mod output;
mod progress;
mod prompts;
mod resources;
mod skills;
mod tools;

use clap::{Args, Subcommand};
use duomcp::client::{Client, ClientBuilder, ClientError, EraChoice, ServerEvent};
use duomcp::schema::{LoggingLevel, Root};
use serde_json::{Map, Value};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// The client commands, flattened into `duomcp`'s subcommands.
#[derive(Debug, Subcommand)]
pub enum ClientCommand {
    /// Connect, detect the era, and show what the server offers.
    Discover(UrlTarget),
    /// List the server's tools.
    Tools(UrlTarget),
    /// Call a tool: `duomcp call NAME key=value ... [URL | -- SERVER]`.
    Call(tools::CallArgs),
    /// List the server's resources.
    Resources(UrlTarget),
    /// Read a resource: `duomcp read URI [URL | -- SERVER]`.
    Read(resources::ReadArgs),
    /// List the server's resource templates.
    Templates(UrlTarget),
    /// List the server's prompts.
    Prompts(UrlTarget),
    /// Get a prompt: `duomcp prompt NAME key=value ... [URL | -- SERVER]`.
    Prompt(prompts::PromptArgs),
    /// Complete an argument of a prompt or resource template.
    Complete(complete::CompleteArgs),
    /// Print change notifications as they arrive (tools, prompts, resources).
    Listen(listen::ListenArgs),
    /// The server's events (experimental extension): `duomcp events
    /// list|poll|watch|subscribe|unsubscribe|receive`.
    Events(events::EventsArgs),
    /// List the server's skills (extension `io.modelcontextprotocol/skills`).
    Skills(UrlTarget),
    /// Print a skill's SKILL.md, or another file of it, verified against the skill's entry:
    /// `duomcp skill URI [URL | -- SERVER]`.
    Skill(skills::SkillArgs),
}

/// Options every client command takes, and the server to talk to.
#[derive(Debug, Clone, Args)]
pub struct Target {
    /// Which era to speak: auto (probe, then fall back), legacy (2025-11-25), modern (2026-07-28).
    #[arg(long, default_value = "auto", value_parser = parse_era)]
    pub era: EraChoice,
    /// Print JSON (the protocol's own shapes) instead of readable text; errors too, as
    /// `{"error":{"message":..., "code":..., "data":...}}` on stdout.
    #[arg(long)]
    pub json: bool,
    /// Seconds to wait for the server: to connect (era detection included), and for each
    /// answer (a call that runs as a task included). Past it the command fails at once.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    pub timeout: f64,
    /// Ask the server for log messages at this level and above; they go to stderr.
    #[arg(long, value_name = "LEVEL", value_parser = parse_level)]
    pub log_level: Option<LoggingLevel>,
    /// A root to offer the server (repeatable), e.g. `file:///home/me/project`.
    #[arg(long = "root", value_name = "URI")]
    pub roots: Vec<String>,
    /// The server's Streamable HTTP URL (also accepted as a positional TARGET), or
    /// `unix:PATH` for one served on a Unix domain socket (`duomcp serve --unix PATH`;
    /// `unix:PATH` reaches `http://localhost/mcp` over the socket at PATH).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// An extra header for every HTTP request (repeatable), e.g. `Authorization: Bearer TOKEN`.
    #[arg(long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// The config file naming servers (`mcpServers` JSON, as Claude Desktop, Cursor and VS
    /// Code write it), for a TARGET that is a name rather than a URL. Default: `$DUOMCP_CONFIG`,
    /// else the first of `.mcp.json`, `.cursor/mcp.json`, `.vscode/mcp.json`,
    /// `~/.config/duomcp/mcp.json`, `~/.cursor/mcp.json` and Claude Desktop's config that names
    /// the server.
    #[arg(long, value_name = "PATH")]
    pub config: Option<std::path::PathBuf>,
    /// The server command and its arguments, after `--` (or an `http(s)://` URL).
    #[arg(last = true, value_name = "SERVER")]
    pub server: Vec<String>,
    /// A server named in the config file (replaced by what the file says before connecting).
    #[arg(skip)]
    pub name: Option<String>,
    /// Environment variables for the server command (from the config file).
    #[arg(skip)]
    pub env: Vec<(String, String)>,
    /// When the server refuses the stored token (and no refresh helps), fail instead of
    /// starting a new authorization in the browser: the inspector's page has its own
    /// Authorize.
    #[arg(skip)]
    pub no_browser_login: bool,
}

/// A command whose only positional argument is the server's URL.
#[derive(Debug, Args)]
pub struct UrlTarget {
    /// The server's Streamable HTTP URL (`http://127.0.0.1:3000/mcp`), `unix:PATH` for one on
    /// a Unix domain socket, or the name of a server in the config file (see --config); or
    /// give the command that starts a stdio server after `--`.
    #[arg(value_name = "URL|NAME")]
    pub target_url: Option<String>,
    /// Everything else about the server and the connection.
    #[command(flatten)]
    pub target: Target,
}

impl UrlTarget {
    fn into_target(self) -> Target {
        let mut target = self.target;
        target.adopt_url(self.target_url);
        target
    }
}

/// Whether a command-line word is a server URL rather than an argument (`unix:PATH` is one).
pub(crate) fn is_url(text: &str) -> bool {
    text.starts_with("http://") || text.starts_with("https://") || unix_socket(text).is_some()
}

/// The endpoint a `unix:PATH` target reaches over the socket.
pub const UNIX_ENDPOINT: &str = "http://localhost/mcp";

/// The socket path of a `unix:PATH` target (`unix:/run/mcp.sock`, `unix:mcp.sock`, or
/// `unix:///run/mcp.sock` as Docker writes it).
pub fn unix_socket(text: &str) -> Option<&std::path::Path> {
    let rest = text.strip_prefix("unix:")?;
    let path = rest.strip_prefix("//").unwrap_or(rest);
    (!path.is_empty()).then(|| std::path::Path::new(path))
}

fn parse_era(s: &str) -> Result<EraChoice, String> {
    s.parse()
}

fn parse_level(s: &str) -> Result<LoggingLevel, String> {
    serde_json::from_value(Value::String(s.to_owned()))
        .map_err(|_| format!("unknown level `{s}`: debug, info, notice, warning, error, critical, alert or emergency"))
}

/// A failure, already worded for the user.
#[derive(Debug)]
pub struct Failure {
    /// What went wrong, in one sentence a person can act on.
    pub message: String,
    /// The server's JSON-RPC error, when that is what it was (printed with `--json`).
    pub rpc: Option<duomcp::jsonrpc::ErrorObject>,
}

impl Failure {
    /// A failure saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            rpc: None,
        }
    }

    /// The `--json` form: `{"error": {"message": ..., "code": ..., "data": ...}}`.
    pub fn to_json(&self) -> Value {
        let mut error = Map::new();
        error.insert("message".into(), Value::String(self.message.clone()));
        if let Some(rpc) = &self.rpc {
            error.insert("code".into(), Value::from(rpc.code));
            if let Some(data) = &rpc.data {
                error.insert("data".into(), data.clone());
            }
        }
        serde_json::json!({ "error": error })
    }

    /// Prints the failure: as JSON on stdout with `--json`, else as text on stderr.
    pub fn report(&self, json: bool) {
        if json {
            println!("{}", self.to_json());
        } else {
            eprintln!("duomcp: {}", self.message);
        }
    }
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Self {
        let rpc = e.rpc_error().cloned();
        Failure {
            message: errors::describe(&e, None),
            rpc,
        }
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::new(e.to_string())
    }
}

/// What a command ended with: success, or a failure that still printed its result (a tool
/// error).
pub(crate) enum Outcome {
    Ok,
    Failed,
}

impl Target {
    /// Takes a URL (or a configured server's name) given as a positional argument, unless
    /// `--url` named one already.
    pub(crate) fn adopt_url(&mut self, url: Option<String>) {
        let Some(word) = url else { return };
        if is_url(&word) {
            if self.url.is_none() {
                self.url = Some(word);
            }
        } else if self.name.is_none() {
            self.name = Some(word);
        }
    }

    /// Moves a URL, or a server name (a word that is not `key=value`), out of a command's
    /// positional words into the target.
    pub(crate) fn adopt_url_from(&mut self, words: &mut Vec<String>) {
        if let Some(pos) = words.iter().position(|w| is_url(w)) {
            let url = words.remove(pos);
            self.adopt_url(Some(url));
        }
        if let Some(pos) = words.iter().position(|w| !w.contains('=')) {
            let name = words.remove(pos);
            self.adopt_url(Some(name));
        }
    }

    /// Turns a server name into what the config file says about it (a command with its
    /// environment, or a URL with headers). A `--url` without a scheme is refused with a
    /// suggestion.
    pub(crate) fn resolve(&mut self) -> Result<(), Failure> {
        if let Some(url) = &self.url {
            if !is_url(url) {
                let hint = config::did_you_mean(url)
                    .map(|u| format!(": did you mean {u} ?"))
                    .unwrap_or_else(|| {
                        " (it must start with http:// or https://, or be unix:PATH)".into()
                    });
                return Err(Failure::new(format!("--url `{url}` is not a URL{hint}")));
            }
        }
        let Some(name) = self.name.take() else {
            return Ok(());
        };
        if self.url.is_some() || !self.server.is_empty() {
            return Err(Failure::new(format!(
                "`{name}`: give a server name, a URL or a command after `--`, only one of them"
            )));
        }
        let (entry, _file) = config::lookup(&name, self.config.as_deref())?;
        match entry {
            config::Entry::Stdio { command, args, env } => {
                self.server = std::iter::once(command).chain(args).collect();
                self.env = env;
            }
            config::Entry::Http { url, headers } => {
                self.url = Some(url);
                // Headers given on the command line come last and so win.
                let mut all: Vec<String> = headers
                    .into_iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect();
                all.append(&mut self.headers);
                self.headers = all;
            }
        }
        Ok(())
    }

    /// The URL to connect to, if the server is reached over HTTP.
    fn http_url(&self) -> Option<&str> {
        match (&self.url, self.server.as_slice()) {
            (Some(url), _) => Some(url),
            (None, [only]) if is_url(only) => Some(only),
            _ => None,
        }
    }

    /// Why the command line names no server, or two.
    pub(crate) fn usage_problem(&self) -> Option<&'static str> {
        match (self.http_url(), self.server.is_empty()) {
            (None, true) => Some("no server given: a URL (e.g. `http://127.0.0.1:3000/mcp`), a server name from the config file, or a command to start after `--`"),
            (Some(_), false) if self.url.is_some() => Some("give either a URL or a command after `--`, not both"),
            _ => None,
        }
    }

    /// How long to wait for the server (`--timeout`).
    pub(crate) fn timeout(&self) -> Result<Duration, Failure> {
        Duration::try_from_secs_f64(self.timeout)
            .map_err(|e| Failure::new(format!("--timeout: {e}")))
    }

    /// How the server is named in messages: its URL, or its command line.
    pub(crate) fn shown(&self) -> String {
        match self.http_url() {
            Some(url) => url.to_owned(),
            None => format!("`{}`", self.server.join(" ")),
        }
    }

    /// Runs `work` (a request, or a call that may run as a task) within `--timeout`.
    pub(crate) async fn within<T>(
        &self,
        what: &str,
        work: impl std::future::Future<Output = Result<T, ClientError>>,
    ) -> Result<T, Failure> {
        let limit = self.timeout()?;
        match tokio::time::timeout(limit, work).await {
            Ok(result) => result.map_err(|e| self.failure(e)),
            Err(_) => Err(Failure::new(format!(
                "{what} did not finish within {} (--timeout)",
                errors::human(limit)
            ))),
        }
    }

    /// `e`, worded with this target's address.
    pub(crate) fn failure(&self, e: ClientError) -> Failure {
        let rpc = e.rpc_error().cloned();
        Failure {
            message: errors::describe(&e, self.http_url()),
            rpc,
        }
    }

    /// Starts the server (or reaches it over HTTP) and connects.
    pub(crate) async fn connect(&self) -> Result<(Client, Logs), Failure> {
        self.connect_with(|b| b).await
    }

    /// [`connect`](Self::connect), with `customize` applied to the client builder (to declare
    /// an extension, say). The whole of it (starting the server, detecting the era) is bounded
    /// by `--timeout`.
    pub(crate) async fn connect_with(
        &self,
        customize: impl FnOnce(ClientBuilder) -> ClientBuilder,
    ) -> Result<(Client, Logs), Failure> {
        let timeout = self.timeout()?;
        let shown = self.shown();
        match tokio::time::timeout(timeout, self.connect_inner(timeout, customize)).await {
            Ok(result) => result,
            Err(_) => Err(Failure::new(format!(
                "cannot connect to {shown}: no answer within {} (--timeout)",
                errors::human(timeout)
            ))),
        }
    }

    async fn connect_inner(
        &self,
        timeout: Duration,
        customize: impl FnOnce(ClientBuilder) -> ClientBuilder,
    ) -> Result<(Client, Logs), Failure> {
        let mut builder = Client::builder()
            .name("duomcp-cli")
            .version(env!("CARGO_PKG_VERSION"))
            .era(self.era)
            .request_timeout(timeout)
            .probe_timeout(timeout.min(Duration::from_secs(3)));
        builder = builder.on_elicit(elicit::answer);
        if !self.roots.is_empty() {
            builder = builder.roots(self.roots.iter().map(Root::new).collect());
        }
        if let Some(level) = self.log_level {
            builder = builder.log_level(level);
        }
        builder = customize(builder);
        builder = crate::telemetry::client(builder);
        let client = if let Some(url) = self.http_url() {
            for header in &self.headers {
                let Some((name, value)) = header.split_once(':') else {
                    return Err(Failure::new(format!(
                        "--header `{header}` is not `Name: value`"
                    )));
                };
                builder = builder.header(name.trim(), value.trim());
            }
            if let Some(socket) = unix_socket(url) {
                return connect_unix(builder, socket, url).await.map(|client| {
                    let logs = if self.log_level.is_some() {
                        Logs::start(&client)
                    } else {
                        Logs(None)
                    };
                    (client, logs)
                });
            }
            // Tokens from `duomcp login URL`, unless an Authorization header was given.
            let explicit = self.headers.iter().any(|h| {
                h.split_once(':')
                    .is_some_and(|(n, _)| n.trim().eq_ignore_ascii_case("authorization"))
            });
            if !explicit {
                if let Some(auth) = login::stored_auth(url, !self.no_browser_login).await {
                    builder = builder.auth(auth);
                }
            }
            builder.connect_http(url).await.map_err(|e| {
                Failure::new(format!(
                    "cannot connect to {url}: {}",
                    errors::describe(&e, Some(url))
                ))
            })?
        } else {
            let Some((program, args)) = self.server.split_first() else {
                return Err(Failure::new(
                    "no server given: a URL or a command to start after `--`",
                ));
            };
            if !self.headers.is_empty() {
                return Err(Failure::new("--header applies to HTTP servers only"));
            }
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(args)
                .envs(self.env.iter().map(|(k, v)| (k, v)))
                .kill_on_drop(true);
            builder.connect_stdio(cmd).await.map_err(|e| {
                Failure::new(format!(
                    "cannot connect to `{}`: {}",
                    self.server.join(" "),
                    errors::describe(&e, None)
                ))
            })?
        };
        let logs = if self.log_level.is_some() {
            Logs::start(&client)
        } else {
            Logs(None)
        };
        Ok((client, logs))
    }

    /// Prints `value` as pretty JSON (the `--json` output).
    pub(crate) fn print_json(&self, value: &impl serde::Serialize) -> Result<(), Failure> {
        let text = serde_json::to_string_pretty(value).map_err(|e| Failure::new(e.to_string()))?;
        println!("{text}");
        Ok(())
    }
}

/// Connects to `unix:PATH` (shown as `target`): [`UNIX_ENDPOINT`] over the socket at `socket`.
#[cfg(unix)]
async fn connect_unix(
    builder: ClientBuilder,
    socket: &std::path::Path,
    target: &str,
) -> Result<Client, Failure> {
    builder
        .connect_unix(socket, UNIX_ENDPOINT)
        .await
        .map_err(|e| {
            Failure::new(format!(
                "cannot connect to {target}: {}",
                errors::describe(&e, None)
            ))
        })
}

#[cfg(not(unix))]
async fn connect_unix(
    _builder: ClientBuilder,
    _socket: &std::path::Path,
    target: &str,
) -> Result<Client, Failure> {
    Err(Failure::new(format!(
        "cannot connect to {target}: Unix domain sockets are not supported on this platform"
    )))
}

/// Prints the server's log messages to stderr (stdout stays the command's result) as they
/// arrive; [`flush`](Logs::flush) prints those already received, before the result.
pub(crate) struct Logs(Option<mpsc::Sender<oneshot::Sender<()>>>);

impl Logs {
    fn start(client: &Client) -> Logs {
        let mut notes = client.notifications();
        let (tx, mut flushes) = mpsc::channel::<oneshot::Sender<()>>(4);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    n = notes.recv() => match n {
                        Some(n) => print_log(&n),
                        None => return,
                    },
                    Some(done) = flushes.recv() => {
                        while let Some(n) = notes.try_recv() {
                            print_log(&n);
                        }
                        let _ = done.send(());
                    }
                }
            }
        });
        Logs(Some(tx))
    }

    /// Prints every log message received so far.
    pub(crate) async fn flush(&self) {
        let Some(tx) = &self.0 else { return };
        let (done, wait) = oneshot::channel();
        if tx.send(done).await.is_ok() {
            let _ = wait.await;
        }
    }
}

fn print_log(n: &ServerEvent) {
    let ServerEvent::Log(m) = n else { return };
    let level = serde_json::to_value(m.level)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let data = match &m.data {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match &m.logger {
        Some(logger) => eprintln!("[{level}] {logger}: {data}"),
        None => eprintln!("[{level}] {data}"),
    }
}

/// Parses `key=value` pairs. With a schema, a property typed `string` keeps the text as is;
/// otherwise the value is read as JSON when it parses (`n=3`, `ok=true`, `tags=["a"]`) and
/// taken as a string when it does not.
pub(crate) fn parse_pairs(
    pairs: &[String],
    schema: Option<&Map<String, Value>>,
) -> Result<Map<String, Value>, Failure> {
    let mut out = Map::new();
    for pair in pairs {
        let Some((key, raw)) = pair.split_once('=') else {
            return Err(Failure::new(format!("`{pair}` is not key=value")));
        };
        let declared = schema
            .and_then(|s| s.get("properties"))
            .and_then(|p| p.get(key))
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str);
        let value = match declared {
            Some("string") => Value::String(raw.to_owned()),
            _ => serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned())),
        };
        out.insert(key.to_owned(), value);
    }
    Ok(out)
}

/// Runs a client command; the exit code says how it went.
pub async fn run(command: ClientCommand) -> ExitCode {
    // The one command without a server: a webhook receiver.
    let command = match command {
        ClientCommand::Events(events::EventsArgs {
            command: events::EventsCommand::Receive(args),
        }) => {
            return match events::receive(args).await {
                Ok(_) => ExitCode::SUCCESS,
                Err(failure) => {
                    failure.report(false);
                    ExitCode::FAILURE
                }
            }
        }
        other => other,
    };
    let mut command = normalize(command);
    let json = target_of(&command).json;
    if let Err(failure) = target_of_mut(&mut command).resolve() {
        failure.report(json);
        return ExitCode::from(2);
    }
    if let Some(problem) = target_of(&command).usage_problem() {
        if json {
            Failure::new(problem).report(true);
        } else {
            eprintln!("error: {problem}");
        }
        return ExitCode::from(2);
    }
    let result = crate::telemetry::run_client(async move {
        match command {
            Normalized::Discover(t) => discover::run(&t).await,
            Normalized::Tools(t) => tools::list(&t).await,
            Normalized::Call(a) => tools::call(&a).await,
            Normalized::Resources(t) => resources::list(&t).await,
            Normalized::Read(a) => resources::read(&a).await,
            Normalized::Templates(t) => resources::templates(&t).await,
            Normalized::Prompts(t) => prompts::list(&t).await,
            Normalized::Prompt(a) => prompts::get(&a).await,
            Normalized::Complete(a) => complete::run(&a).await,
            Normalized::Listen(a) => listen::run(&a).await,
            Normalized::EventsList(t) => events::list(&t).await,
            Normalized::EventsPoll(a) => events::poll(&a).await,
            Normalized::EventsWatch(a) => events::watch(&a).await,
            Normalized::EventsSubscribe(a) => events::subscribe(&a).await,
            Normalized::EventsUnsubscribe(a) => events::unsubscribe(&a).await,
            Normalized::Skills(t) => skills::list(&t).await,
            Normalized::Skill(a) => skills::show(&a).await,
        }
    })
    .await;
    match result {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Failed) => ExitCode::FAILURE,
        Err(failure) => {
            failure.report(json);
            ExitCode::FAILURE
        }
    }
}

/// A command whose server URL, wherever it was given, is in its [`Target`].
enum Normalized {
    Discover(Target),
    Tools(Target),
    Call(tools::CallArgs),
    Resources(Target),
    Read(resources::ReadArgs),
    Templates(Target),
    Prompts(Target),
    Prompt(prompts::PromptArgs),
    Complete(complete::CompleteArgs),
    Listen(listen::ListenArgs),
    EventsList(Target),
    EventsPoll(events::PollArgs),
    EventsWatch(events::WatchArgs),
    EventsSubscribe(events::SubscribeArgs),
    EventsUnsubscribe(events::UnsubscribeArgs),
    Skills(Target),
    Skill(skills::SkillArgs),
}

fn normalize(command: ClientCommand) -> Normalized {
    match command {
        ClientCommand::Discover(t) => Normalized::Discover(t.into_target()),
        ClientCommand::Tools(t) => Normalized::Tools(t.into_target()),
        ClientCommand::Call(mut a) => {
            a.target.adopt_url_from(&mut a.pairs);
            Normalized::Call(a)
        }
        ClientCommand::Resources(t) => Normalized::Resources(t.into_target()),
        ClientCommand::Read(mut a) => {
            a.target.adopt_url(a.target_url.take());
            Normalized::Read(a)
        }
        ClientCommand::Templates(t) => Normalized::Templates(t.into_target()),
        ClientCommand::Prompts(t) => Normalized::Prompts(t.into_target()),
        ClientCommand::Prompt(mut a) => {
            a.target.adopt_url_from(&mut a.pairs);
            Normalized::Prompt(a)
        }
        ClientCommand::Complete(mut a) => {
            a.target.adopt_url(a.target_url.take());
            if is_url(&a.value) && a.target.url.is_none() {
                // `complete --prompt P ARG URL`: no value typed yet.
                a.target.adopt_url(Some(std::mem::take(&mut a.value)));
            }
            Normalized::Complete(a)
        }
        ClientCommand::Listen(mut a) => {
            a.target.adopt_url(a.target_url.take());
            Normalized::Listen(a)
        }
        ClientCommand::Events(e) => match e.command {
            events::EventsCommand::List(t) => Normalized::EventsList(t.into_target()),
            events::EventsCommand::Poll(mut a) => {
                a.target.adopt_url_from(&mut a.pairs);
                Normalized::EventsPoll(a)
            }
            events::EventsCommand::Watch(mut a) => {
                a.target.adopt_url_from(&mut a.pairs);
                Normalized::EventsWatch(a)
            }
            events::EventsCommand::Subscribe(mut a) => {
                a.normalize();
                Normalized::EventsSubscribe(a)
            }
            events::EventsCommand::Unsubscribe(mut a) => {
                a.normalize();
                Normalized::EventsUnsubscribe(a)
            }
            // Served in `run` before anything is normalized.
            events::EventsCommand::Receive(_) => unreachable!("receive has no server"),
        },
        ClientCommand::Skills(t) => Normalized::Skills(t.into_target()),
        ClientCommand::Skill(mut a) => {
            a.normalize();
            Normalized::Skill(a)
        }
    }
}

fn target_of(command: &Normalized) -> &Target {
    match command {
        Normalized::Discover(t)
        | Normalized::Tools(t)
        | Normalized::Resources(t)
        | Normalized::Templates(t)
        | Normalized::Prompts(t)
        | Normalized::Skills(t)
        | Normalized::EventsList(t) => t,
        Normalized::EventsPoll(a) => &a.target,
        Normalized::EventsWatch(a) => &a.target,
        Normalized::EventsSubscribe(a) => &a.target,
        Normalized::EventsUnsubscribe(a) => &a.target,
        Normalized::Call(a) => &a.target,
        Normalized::Read(a) => &a.target,
        Normalized::Prompt(a) => &a.target,
        Normalized::Complete(a) => &a.target,
        Normalized::Listen(a) => &a.target,
        Normalized::Skill(a) => &a.target,
    }
}

fn target_of_mut(command: &mut Normalized) -> &mut Target {
    match command {
        Normalized::Discover(t)
        | Normalized::Tools(t)
        | Normalized::Resources(t)
        | Normalized::Templates(t)
        | Normalized::Prompts(t)
        | Normalized::Skills(t)
        | Normalized::EventsList(t) => t,
        Normalized::EventsPoll(a) => &mut a.target,
        Normalized::EventsWatch(a) => &mut a.target,
        Normalized::EventsSubscribe(a) => &mut a.target,
        Normalized::EventsUnsubscribe(a) => &mut a.target,
        Normalized::Call(a) => &mut a.target,
        Normalized::Read(a) => &mut a.target,
        Normalized::Prompt(a) => &mut a.target,
        Normalized::Complete(a) => &mut a.target,
        Normalized::Listen(a) => &mut a.target,
        Normalized::Skill(a) => &mut a.target,
    }
}

/// Whether stderr is an interactive terminal (progress and prompts are shown there).
pub(crate) fn stderr_is_terminal() -> bool {
    std::io::stderr().is_terminal()
}

/// Closes the connection, ignoring errors (the result is already printed).
pub(crate) async fn finish(client: Client, outcome: Outcome) -> Result<Outcome, Failure> {
    let _ = client.close().await;
    Ok(outcome)
}
