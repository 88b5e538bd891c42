//! The gateway's configuration: the TOML file (or the one-upstream command-line flags) read
//! into [`GatewayConfig`], checked once before anything starts.

pub use crate::auth::{AuthConfig, UpstreamOAuth};
use duomcp::client::EraChoice;
use duomcp::server::Principal;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The TOML does not parse or does not have the expected shape.
    #[error("{0}")]
    Parse(String),
    /// The TOML parses but says something impossible (each problem on its own line).
    #[error("invalid gateway configuration:\n{0}")]
    Invalid(String),
}

/// The whole configuration: gateway-wide settings and the upstreams.
///
/// ```
/// use duomcp_gateway::GatewayConfig;
/// let config = GatewayConfig::from_toml(r#"
///     [gateway]
///     separator = "__"
///
///     [[upstream]]
///     name = "everything"
///     command = "duomcp"
///     args = ["serve"]
///
///     [[upstream]]
///     name = "remote"
///     url = "http://127.0.0.1:3000/mcp"
///     headers = { Authorization = "Bearer gateway-own-token" }
///     deny_tools = ["admin_*"]
/// "#).unwrap();
/// assert_eq!(config.upstreams.len(), 2);
/// assert!(config.prefixed(), "several upstreams: names are prefixed");
/// ```
#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GatewayConfig {
    /// Gateway-wide settings.
    #[serde(default)]
    pub gateway: GatewaySettings,
    /// The OAuth resource server in front of the gateway's HTTP endpoint (none: open).
    pub auth: Option<AuthConfig>,
    /// The servers behind the gateway.
    #[serde(default, rename = "upstream")]
    pub upstreams: Vec<UpstreamConfig>,
}

/// Gateway-wide settings (`[gateway]`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct GatewaySettings {
    /// Between an upstream's name and a tool's or prompt's (default `_`); only `_`, `.` and
    /// `-`, so prefixed names stay within `^[A-Za-z0-9_.-]+$`.
    pub separator: String,
    /// Prefix names with the upstream's name: `"auto"` (default: when there are several
    /// upstreams), `"always"` or `"never"`.
    pub prefix: PrefixMode,
    /// How long a held upstream call waits for a 2026-07-28 client's retry, in seconds
    /// (default 60). An abandoned hold cancels the upstream call.
    pub hold_timeout_secs: u64,
    /// How many upstream calls may be held at once, over all clients (default 256).
    pub max_holds: usize,
    /// How many of them one principal may hold (default 16): one client that never answers
    /// cannot take every hold. Clients without a principal (no `[auth]`) are bounded by
    /// `max_holds` only.
    pub max_holds_per_principal: usize,
    /// Items per page of the gateway's lists, over all upstreams (default 100).
    pub page_size: usize,
    /// Upstream list changes within this many milliseconds of the first are re-synced together
    /// and reach the clients as one `list_changed` per list (default 30).
    pub list_change_window_ms: u64,
    /// The operator's credential for `/healthz` (`Authorization: Bearer …`): with it the
    /// answer has each upstream's detail; without it (or when unset) only `{"ok": …}`.
    pub health_token: Option<String>,
}

impl Default for GatewaySettings {
    fn default() -> Self {
        GatewaySettings {
            separator: "_".into(),
            prefix: PrefixMode::Auto,
            hold_timeout_secs: 60,
            max_holds: 256,
            max_holds_per_principal: 16,
            page_size: 100,
            list_change_window_ms: u64::try_from(crate::sync::LIST_CHANGE_WINDOW.as_millis())
                .unwrap_or(30),
            health_token: None,
        }
    }
}

/// When names get their upstream's prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum PrefixMode {
    /// Prefix when there are several upstreams.
    #[default]
    Auto,
    /// Always prefix.
    Always,
    /// Never prefix (names must then not clash).
    Never,
}

/// Which clients share an upstream session (`[[upstream]] isolation`).
///
/// An upstream's request for input (elicitation, sampling, roots) reaches a client only when
/// it belongs to exactly that client's call: a 2026-07-28 upstream's always does (it comes back
/// in the call's result); a 2025-11-25 upstream's over Streamable HTTP does when it comes on the
/// call's POST stream; over stdio (or its GET stream) only while the call is the only request in
/// flight on the upstream session that could have asked (calls waiting for their clients'
/// answers, held or asked, could not: their handlers are blocked on what they asked). Anything
/// else is refused (the upstream gets an error) and
/// traced. Isolation gives clients sessions of their own, so that such requests can be told
/// apart, and so that what one client makes an upstream remember (its roots, resources it
/// created, log level) is never another's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// Every client shares the upstream's sessions (default): cheapest; a 2025-11-25 stdio
    /// upstream's requests for input work only while one call is in flight.
    #[default]
    Shared,
    /// One upstream session per authenticated principal (a stdio upstream: one process each),
    /// pooled (`max_isolated_sessions`); a client without a principal gets one per 2025-11-25
    /// session, and a 2026-07-28 client without one shares.
    Principal,
    /// One upstream session per client session (2025-11-25), else per principal, else shared.
    Client,
}

/// One rule of an upstream's `[[upstream.access]]`: the tools it covers, and what a caller of
/// them needs. A tool covered by several rules needs what each asks.
///
/// ```
/// let config = duomcp_gateway::GatewayConfig::from_toml(r#"
///     [[upstream]]
///     name = "files"
///     command = "files-server"
///     [[upstream.access]]                 # the whole upstream: only the team
///     allow_principals = ["team-*"]
///     [[upstream.access]]                 # writing needs a scope too
///     tools = ["write_*", "delete_*"]
///     require_scopes = ["files:write"]
/// "#).unwrap();
/// assert_eq!(config.upstreams[0].access.len(), 2);
/// ```
#[derive(Debug, Clone, Deserialize, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AccessRule {
    /// Globs (`*`, `?`) of the upstream's tool names (as the upstream names them) the rule
    /// covers; empty: all of them.
    #[serde(default)]
    pub tools: Vec<String>,
    /// OAuth scopes a caller must hold, all of them: without, the call is refused as the
    /// runtime refuses any tool's missing scope (HTTP `403` with an `insufficient_scope`
    /// challenge naming them).
    #[serde(default)]
    pub require_scopes: Vec<String>,
    /// Globs of the principals (the token's subject) that may call; empty: any. A client
    /// with no principal (a gateway without `[auth]`) matches none; the local user of a stdio
    /// gateway matches all. Refused: `-32602`, saying the tool is not available to the caller.
    #[serde(default)]
    pub allow_principals: Vec<String>,
}

impl AccessRule {
    /// Whether the rule covers the tool `name` (as the upstream names it).
    pub fn covers(&self, name: &str) -> bool {
        self.tools.is_empty() || self.tools.iter().any(|g| crate::names::glob(g, name))
    }
}

/// Which revision to speak to an upstream: the client's own choice,
/// [`EraChoice`](duomcp::client::EraChoice) (`auto`, the default, `legacy` or `modern`); the
/// name it had is kept so code naming it compiles.
#[doc(hidden)]
pub type UpstreamEra = duomcp::client::EraChoice;

/// One server behind the gateway (`[[upstream]]`): a command (stdio) or a URL.
#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct UpstreamConfig {
    /// The upstream's name: `^[A-Za-z][A-Za-z0-9.-]*$` (it prefixes names and URI schemes).
    pub name: String,
    /// stdio: the program to run.
    pub command: Option<String>,
    /// stdio: its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// stdio: environment variables to set for it.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// stdio: its working directory.
    pub cwd: Option<PathBuf>,
    /// HTTP: the MCP endpoint. Streamable HTTP of either revision; a server that only speaks
    /// the 2024-11-05 HTTP+SSE transport is found out and spoken to in that. With `unix`: the
    /// endpoint's path and the `Host` header sent over the socket (default
    /// [`DEFAULT_UNIX_URL`]).
    pub url: Option<String>,
    /// HTTP over a Unix domain socket: the socket's path (`duomcp serve --unix PATH`). Every
    /// connection goes to it, whatever `url`'s host. Unix platforms only.
    pub unix: Option<PathBuf>,
    /// HTTP: headers the gateway sends (its own credentials: the client's are never
    /// forwarded).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// HTTP: the gateway's own OAuth client for this upstream (client-credentials grant).
    pub oauth: Option<UpstreamOAuth>,
    /// Which revision to speak (`auto`, probing, by default).
    #[serde(default)]
    pub era: EraChoice,
    /// Only tools matching one of these globs (`*` and `?`) are served; empty: all.
    #[serde(default)]
    pub allow_tools: Vec<String>,
    /// Tools matching one of these globs are not served.
    #[serde(default)]
    pub deny_tools: Vec<String>,
    /// Per-request timeout, in seconds (default 60).
    pub timeout_secs: Option<u64>,
    /// Requests in flight to this upstream at once (default 64); more wait. A call waiting for
    /// its client's input does not count.
    pub max_concurrency: Option<usize>,
    /// Which clients share an upstream session (default `"shared"`; see [`Isolation`]).
    #[serde(default)]
    pub isolation: Isolation,
    /// With `isolation` other than `"shared"`: upstream sessions (a stdio upstream: processes)
    /// kept at once (default 16); a new one ends the least recently used idle one, and when
    /// all are busy the call fails at once, saying so.
    pub max_isolated_sessions: Option<usize>,
    /// Of those, how many one principal may have (default: a quarter of `max_concurrency`, at
    /// least 1); its further calls wait without taking a slot from the others. Clients without
    /// a principal (no `[auth]`) are bounded by `max_concurrency` only.
    pub max_concurrency_per_principal: Option<usize>,
    /// 2025-11-25 clients over HTTP: a call to this upstream still running after this many
    /// milliseconds has its SSE stream closed (after an event telling the client when to
    /// reconnect); the client resumes it with `GET` and `Last-Event-ID` and gets the rest
    /// (SSE polling, SEP-1699), so long calls do not hold connections. Default: never.
    pub sse_poll_after_ms: Option<u64>,
    /// Who may call which of its tools (`[[upstream.access]]`): every rule whose `tools` match
    /// a tool applies to it (see [`AccessRule`]). None: every client that reaches the gateway.
    #[serde(default)]
    pub access: Vec<AccessRule>,
    /// stdio: restarts in a row after the process dies on its own (default 5; a process that
    /// ran a minute starts the count again).
    pub max_restarts: Option<u32>,
    /// stdio: the wait before the first restart in a row, in milliseconds (default 100); it
    /// doubles for each further one, up to 30 s.
    pub restart_backoff_ms: Option<u64>,
    /// Items kept of each of this upstream's lists (tools, prompts, resources, templates;
    /// default 10,000): paging stops there, the rest is not served (logged, and shown by
    /// `duomcp gateway --check`).
    pub max_list_items: Option<usize>,
    /// Bytes (as JSON) kept of each of this upstream's lists (default 8 MiB): paging stops
    /// there, the rest is not served.
    pub max_list_bytes: Option<usize>,
}

/// The endpoint a `unix` upstream without `url` is reached at, over its socket.
pub const DEFAULT_UNIX_URL: &str = "http://localhost/mcp";

/// The default of `[[upstream]] max_list_items`.
pub const DEFAULT_MAX_LIST_ITEMS: usize = 10_000;
/// The default of `[[upstream]] max_list_bytes`.
pub const DEFAULT_MAX_LIST_BYTES: usize = 8 * 1024 * 1024;

impl UpstreamConfig {
    /// A stdio upstream running `command` with `args`.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>, args: Vec<String>) -> Self {
        UpstreamConfig {
            name: name.into(),
            command: Some(command.into()),
            args,
            ..Default::default()
        }
    }

    /// An HTTP upstream at `url`.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        UpstreamConfig {
            name: name.into(),
            url: Some(url.into()),
            ..Default::default()
        }
    }

    /// An HTTP upstream on the Unix domain socket at `socket`, at [`DEFAULT_UNIX_URL`] (set
    /// `url` for another path).
    ///
    /// ```
    /// use duomcp_gateway::UpstreamConfig;
    /// let upstream = UpstreamConfig::unix("local", "/run/mcp.sock");
    /// assert_eq!(upstream.http_url(), Some("http://localhost/mcp"));
    /// ```
    pub fn unix(name: impl Into<String>, socket: impl Into<PathBuf>) -> Self {
        UpstreamConfig {
            name: name.into(),
            unix: Some(socket.into()),
            ..Default::default()
        }
    }

    /// The URL HTTP requests go to (over the socket for a `unix` upstream); `None` for a
    /// command upstream.
    pub fn http_url(&self) -> Option<&str> {
        match (&self.url, &self.unix) {
            (Some(url), _) => Some(url),
            (None, Some(_)) => Some(DEFAULT_UNIX_URL),
            (None, None) => None,
        }
    }

    /// The per-request timeout.
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs.unwrap_or(60).max(1))
    }

    /// When a 2025-11-25 client's stream is closed for polling, if ever.
    pub fn sse_poll_after(&self) -> Option<Duration> {
        self.sse_poll_after_ms.map(Duration::from_millis)
    }

    /// The concurrency limit.
    pub fn concurrency(&self) -> usize {
        self.max_concurrency.unwrap_or(64).max(1)
    }

    /// Upstream sessions kept at once for isolated clients.
    pub fn isolated_sessions(&self) -> usize {
        self.max_isolated_sessions.unwrap_or(16).max(1)
    }

    /// The scopes a caller of the tool `name` (as the upstream names it) must hold: those of
    /// every `[[upstream.access]]` rule covering it, each once.
    pub fn scopes_for(&self, name: &str) -> Vec<String> {
        let mut scopes: Vec<String> = Vec::new();
        for rule in self.access.iter().filter(|r| r.covers(name)) {
            for scope in &rule.require_scopes {
                if !scopes.contains(scope) {
                    scopes.push(scope.clone());
                }
            }
        }
        scopes
    }

    /// Whether `principal` may call the tool `name` (as the upstream names it): it matches
    /// `allow_principals` of every rule covering the tool that has one (see [`AccessRule`]).
    ///
    /// ```
    /// use duomcp::server::Principal;
    /// let config = duomcp_gateway::GatewayConfig::from_toml(r#"
    ///     [[upstream]]
    ///     name = "files"
    ///     command = "files-server"
    ///     [[upstream.access]]
    ///     tools = ["delete_*"]
    ///     allow_principals = ["admin-*"]
    /// "#).unwrap();
    /// let files = &config.upstreams[0];
    /// let (alice, root) = (Principal::new("alice"), Principal::new("admin-root"));
    /// assert!(files.admits_principal("read_file", Some(&alice)));
    /// assert!(!files.admits_principal("delete_file", Some(&alice)));
    /// assert!(files.admits_principal("delete_file", Some(&root)));
    /// assert!(!files.admits_principal("delete_file", None));
    /// ```
    pub fn admits_principal(&self, name: &str, principal: Option<&Principal>) -> bool {
        self.access
            .iter()
            .filter(|r| r.covers(name) && !r.allow_principals.is_empty())
            .all(|r| match principal {
                Some(p) if *p == Principal::local() => true,
                Some(p) => p
                    .subject()
                    .is_some_and(|s| r.allow_principals.iter().any(|g| crate::names::glob(g, s))),
                None => false,
            })
    }

    /// Items kept of each of this upstream's lists.
    pub fn list_items(&self) -> usize {
        self.max_list_items.unwrap_or(DEFAULT_MAX_LIST_ITEMS).max(1)
    }

    /// Bytes kept of each of this upstream's lists.
    pub fn list_bytes(&self) -> usize {
        self.max_list_bytes.unwrap_or(DEFAULT_MAX_LIST_BYTES).max(1)
    }

    /// Requests in flight to this upstream at once for one principal.
    pub fn concurrency_per_principal(&self) -> usize {
        self.max_concurrency_per_principal
            .unwrap_or(self.concurrency() / 4)
            .clamp(1, self.concurrency())
    }
}

impl GatewayConfig {
    /// Parses and checks a TOML configuration.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let config: GatewayConfig =
            toml::from_str(text).map_err(|e| ConfigError::Parse(e.to_string()))?;
        config.validate()?;
        Ok(config)
    }

    /// Reads, parses and checks a TOML file.
    pub fn from_file(path: &std::path::Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_toml(&text)
    }

    /// One upstream, as the command-line flags make it.
    pub fn single(upstream: UpstreamConfig) -> Self {
        GatewayConfig {
            gateway: GatewaySettings::default(),
            auth: None,
            upstreams: vec![upstream],
        }
    }

    /// Whether names get their upstream's prefix.
    pub fn prefixed(&self) -> bool {
        match self.gateway.prefix {
            PrefixMode::Auto => self.upstreams.len() > 1,
            PrefixMode::Always => true,
            PrefixMode::Never => false,
        }
    }

    /// Every problem, one per line; `Ok` when there is none.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut problems = Vec::new();
        let sep = &self.gateway.separator;
        if sep.is_empty() || !sep.chars().all(|c| matches!(c, '_' | '.' | '-')) {
            problems.push(format!(
                "[gateway] separator `{sep}`: use one or more of `_`, `.`, `-`"
            ));
        }
        if self.gateway.max_holds == 0 {
            problems.push("[gateway] max_holds must be at least 1".into());
        }
        if self.upstreams.is_empty() {
            problems.push("no [[upstream]]: the gateway needs at least one".into());
        }
        if let Some(auth) = &self.auth {
            problems.extend(auth.problems());
        }
        let mut seen = std::collections::BTreeSet::new();
        let prefixed = self.prefixed();
        for u in &self.upstreams {
            let n = &u.name;
            // `a` + `-` + `b-x` and `a-b` + `-` + `x` would both be `a-b-x`.
            if prefixed && !sep.is_empty() && n.contains(sep.as_str()) {
                problems.push(format!(
                    "upstream `{n}`: its name contains the separator `{sep}`, so its prefixed \
                     names could be another upstream's; rename it or choose another [gateway] \
                     separator"
                ));
            }
            if !valid_name(n) {
                problems.push(format!(
                    "upstream `{n}`: a name is a letter then letters, digits, `.` or `-`"
                ));
            }
            if !seen.insert(n.clone()) {
                problems.push(format!("upstream `{n}` is named twice"));
            }
            if u.unix.is_some() && u.command.is_some() {
                problems.push(format!(
                    "upstream `{n}`: give `command` or `unix`, not both"
                ))
            }
            if u.unix.is_some() && cfg!(not(unix)) {
                problems.push(format!(
                    "upstream `{n}`: `unix` sockets are not supported on this platform"
                ))
            }
            match (&u.command, u.http_url()) {
                (Some(_), Some(_)) => {
                    problems.push(format!("upstream `{n}`: give `command` or `url`, not both"))
                }
                (None, None) => {
                    problems.push(format!("upstream `{n}`: needs `command`, `url` or `unix`"))
                }
                (Some(_), None) if !u.headers.is_empty() => {
                    problems.push(format!("upstream `{n}`: `headers` is for URL upstreams"))
                }
                (Some(_), None) if u.oauth.is_some() => {
                    problems.push(format!("upstream `{n}`: `[oauth]` is for URL upstreams"))
                }
                (None, Some(url))
                    if !(url.starts_with("http://") || url.starts_with("https://")) =>
                {
                    problems.push(format!("upstream `{n}`: `url` must be http:// or https://"))
                }
                (None, Some(_)) if !u.args.is_empty() || !u.env.is_empty() || u.cwd.is_some() => {
                    problems.push(format!(
                        "upstream `{n}`: `args`, `env` and `cwd` are for command upstreams"
                    ))
                }
                _ => {}
            }
            if let (Some(oauth), Some(_)) = (&u.oauth, u.http_url()) {
                problems.extend(oauth.problems(n));
            }
            if u.oauth.is_some()
                && u.headers
                    .keys()
                    .any(|k| k.eq_ignore_ascii_case("authorization"))
            {
                problems.push(format!(
                    "upstream `{n}`: an `Authorization` header and `[oauth]` exclude each other"
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError::Invalid(problems.join("\n")))
        }
    }
}

/// `^[A-Za-z][A-Za-z0-9.-]*$`: usable both as a name prefix and as a URI scheme prefix.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `deploy/gateway.toml`, which the book shows whole, loads and validates as it is.
    #[test]
    fn the_book_s_gateway_toml_loads() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/gateway.toml");
        // Validation reads `client_secret_env`: unset, the file is refused, naming it.
        let unset = GatewayConfig::from_file(&path).unwrap_err().to_string();
        assert!(unset.contains("CRM_CLIENT_SECRET"), "{unset}");
        // No other test of this crate reads or writes CRM_CLIENT_SECRET.
        std::env::set_var("CRM_CLIENT_SECRET", "from-the-environment");
        let config = GatewayConfig::from_file(&path).unwrap();
        let names: Vec<&str> = config.upstreams.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["files", "search", "crm", "local", "forms"]);
        assert!(config.auth.is_some());
        assert_eq!(
            config.upstreams[3].unix.as_deref(),
            Some(std::path::Path::new("/run/duomcp/local.sock"))
        );
        let forms = &config.upstreams[4];
        assert_eq!(
            forms.access.len(),
            2,
            "both [[upstream.access]] rules on `forms`"
        );
        assert_eq!(forms.isolated_sessions(), 16);
    }

    /// `era` reads as it always did: `auto` (the default), `legacy`, `modern`, nothing else.
    #[test]
    fn an_upstream_era_reads_its_three_names() {
        let with = |era: &str| {
            GatewayConfig::from_toml(&format!(
                "[[upstream]]\nname = \"a\"\ncommand = \"true\"\n{era}"
            ))
            .map(|c| c.upstreams[0].era)
        };
        assert_eq!(with("").unwrap(), EraChoice::Auto);
        assert_eq!(with("era = \"auto\"").unwrap(), EraChoice::Auto);
        assert_eq!(with("era = \"legacy\"").unwrap(), EraChoice::Legacy);
        assert_eq!(with("era = \"modern\"").unwrap(), EraChoice::Modern);
        for bad in ["both", "Legacy", "2025-11-25"] {
            let err = with(&format!("era = \"{bad}\"")).unwrap_err().to_string();
            assert!(err.contains(&format!("unknown variant `{bad}`")), "{err}");
            assert!(
                err.contains("expected one of `auto`, `legacy`, `modern`"),
                "{err}"
            );
        }
    }

    #[test]
    fn every_problem_is_listed() {
        let err = GatewayConfig::from_toml(
            r#"
            [gateway]
            separator = "/"
            [[upstream]]
            name = "a"
            [[upstream]]
            name = "a"
            command = "x"
            url = "ftp://y"
            [[upstream]]
            name = "_bad"
            url = "http://h/mcp"
            args = ["1"]
            "#,
        )
        .unwrap_err()
        .to_string();
        for needle in [
            "separator `/`",
            "upstream `a`: needs `command`, `url` or `unix`",
            "upstream `a` is named twice",
            "not both",
            "upstream `_bad`: a name",
            "are for command upstreams",
        ] {
            assert!(err.contains(needle), "{needle:?} missing in {err}");
        }
    }

    #[test]
    fn unix_upstreams() {
        let config = GatewayConfig::from_toml(
            "[[upstream]]\nname='a'\nunix='/run/a.sock'\n\
             [[upstream]]\nname='b'\nunix='/run/b.sock'\nurl='http://b.local/other'\n",
        )
        .unwrap();
        assert_eq!(config.upstreams[0].http_url(), Some(DEFAULT_UNIX_URL));
        assert_eq!(config.upstreams[1].http_url(), Some("http://b.local/other"));
        let err = GatewayConfig::from_toml("[[upstream]]\nname='a'\nunix='/s'\ncommand='x'\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("give `command` or `unix`, not both"), "{err}");
        let err = GatewayConfig::from_toml("[[upstream]]\nname='a'\nunix='/s'\nurl='/mcp'\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`url` must be http://"), "{err}");
    }

    #[test]
    fn unknown_keys_are_refused() {
        let err = GatewayConfig::from_toml("[[upstream]]\nname='a'\ncommand='x'\ncomand='y'\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("comand"), "{err}");
    }

    #[test]
    fn a_separator_inside_an_upstream_name_is_refused() {
        let err = GatewayConfig::from_toml(
            "[gateway]\nseparator='-'\n[[upstream]]\nname='a'\ncommand='x'\n\
             [[upstream]]\nname='a-b'\ncommand='y'\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("upstream `a-b`: its name contains the separator `-`"),
            "{err}"
        );
        // Not prefixed: the separator is not used.
        GatewayConfig::from_toml(
            "[gateway]\nseparator='-'\n[[upstream]]\nname='a-b'\ncommand='y'\n",
        )
        .unwrap();
    }

    #[test]
    fn defaults() {
        let c = GatewayConfig::from_toml("[[upstream]]\nname='a'\ncommand='x'\n").unwrap();
        assert_eq!(c.gateway.separator, "_");
        assert!(!c.prefixed());
        assert_eq!(c.upstreams[0].timeout(), Duration::from_secs(60));
        assert_eq!(c.upstreams[0].concurrency(), 64);
        assert_eq!(c.upstreams[0].list_items(), 10_000);
        assert_eq!(c.upstreams[0].list_bytes(), 8 * 1024 * 1024);
    }
}
