//! MCP Server Cards (**experimental**: SEP-2127, the `experimental-ext-server-card`
//! extension): a public, static JSON document describing the server before any connection —
//! its identity, its Streamable HTTP endpoint and the protocol versions it speaks — and the
//! [AI Catalog](https://github.com/Agent-Card/ai-catalog) entry pointing at it.
//!
//! Off by default: a card is served without authentication, to anyone, so publishing one is
//! the operator's decision ([`HttpConfig::server_card`](super::HttpConfig::server_card)). With
//! it set, the endpoint's router also answers
//!
//! * `GET <endpoint>/server-card`: the card, `application/mcp-server-card+json`, built from the
//!   server's own definition at each request (so it follows run-time changes), with a strong
//!   `ETag` over its bytes (`304` on a matching `If-None-Match`, `*` and lists included),
//!   `Cache-Control: public, max-age=…` and `Access-Control-Allow-Origin: *`; `OPTIONS`
//!   answers a CORS preflight; `HEAD` is a `GET` without body; anything else is `405`;
//! * `GET /.well-known/ai-catalog.json` (unless [`ServerCardConfig::catalog`] is off):
//!   an AI Catalog (`application/ai-catalog+json`) with one entry, this card's URL.
//!
//! What the card says, and what it leaves out (the extension's schema, `schema.ts`, is the
//! authority on the fields):
//!
//! * `name`: the reverse-DNS name given to [`ServerCardConfig::new`] (`com.example/weather`;
//!   the server's `serverInfo.name` rarely has that form); `version`, `title`, `websiteUrl`,
//!   `icons` from the server's [`Implementation`](duomcp_schema::Implementation);
//!   `description` from [`ServerCardConfig::description`], else `serverInfo.description`, else
//!   a sentence naming the server (the schema requires one, at most 100 characters: a longer
//!   one is cut at 99 and ends with `…`).
//! * `remotes`: one `streamable-http` remote, the endpoint's URL ([`ServerCardConfig::url`],
//!   else `http(s)://` + the request's `Host` + [`HttpConfig::path`](super::HttpConfig::path);
//!   the `Host` has passed the endpoint's allow-list), and `supportedProtocolVersions`: every
//!   revision the server answers (2026-07-28 and the 2025-11-25 family), or
//!   [`ServerCardConfig::protocol_versions`].
//! * Not the capabilities, extensions or instructions: the SEP defers capability and
//!   extension advertisement (they are negotiated, and may depend on the caller) and says
//!   `_meta` is no substitute; instructions are written for a model after connecting, not for
//!   the public. Not the tools either, unless [`ServerCardConfig::list_tools`] is on: then
//!   `_meta["dev.duomcp/tools"]` lists the name, title and description of each tool that needs
//!   no OAuth scope (at most [`MAX_CARD_TOOLS`]; never schemas). The SEP leaves primitives out
//!   of cards because a static document cannot say what a given caller will see; turn it on
//!   only for a server whose tools are the same for everyone.
//!
//! The server does not declare the extension in its capabilities: the SEP defines no such
//! declaration (the card is found by URL or catalog, not negotiated).
//!
//! Bounds: a card is at most [`MAX_CARD_BYTES`] (a larger one, from huge icons, is a `500`
//! and a warning in the log); an `If-None-Match` longer than [`MAX_IF_NONE_MATCH`] is a `400`.
//!
//! ```
//! use duomcp::server::Server;
//! use duomcp::transport::http::card::ServerCardConfig;
//! use duomcp::transport::http::{HttpConfig, StreamableHttp};
//!
//! let server = Server::builder().name("weather").version("1.2.0").build();
//! let mut config = HttpConfig::default();
//! config.server_card = Some(
//!     ServerCardConfig::new("com.example/weather")?
//!         .description("Forecasts for any city")?
//!         .url("https://mcp.example.com/mcp")?,
//! );
//! let app: axum::Router = StreamableHttp::with_config(server, config).router();
//! // GET /mcp/server-card and GET /.well-known/ai-catalog.json are served.
//! # Ok::<(), duomcp::transport::http::card::CardError>(())
//! ```

use super::Inner;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use base64::Engine as _;
use duomcp_schema::version;
use http::header::{
    ACCEPT, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE, ALLOW,
    CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH, ORIGIN, VARY,
};
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use serde_json::{json, Map, Value};
use sha2::Digest as _;
use std::sync::Arc;
use std::time::Duration;

/// The card's media type.
pub const CARD_MEDIA_TYPE: &str = "application/mcp-server-card+json";
/// The AI Catalog's media type.
pub const CATALOG_MEDIA_TYPE: &str = "application/ai-catalog+json";
/// The `$schema` every card carries (the extension's `v1` schema).
pub const CARD_SCHEMA: &str =
    "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json";
/// Where the AI Catalog is served.
pub const CATALOG_PATH: &str = "/.well-known/ai-catalog.json";
/// The most bytes a served card may have (`500` past it).
pub const MAX_CARD_BYTES: usize = 64 * 1024;
/// The most tools [`ServerCardConfig::list_tools`] lists (the first by name).
pub const MAX_CARD_TOOLS: usize = 256;
/// The longest `If-None-Match` (all its lines together) a card request may carry (`400`).
pub const MAX_IF_NONE_MATCH: usize = 8 * 1024;
/// The `_meta` key of the opt-in tool list.
pub const TOOLS_META_KEY: &str = "dev.duomcp/tools";

/// A [`ServerCardConfig`] value the extension's schema does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("server card: {0}")]
pub struct CardError(String);

/// What the endpoint publishes as its Server Card (experimental; see the
/// [module](self)). Set [`HttpConfig::server_card`](super::HttpConfig::server_card) to serve it.
///
/// ```
/// use duomcp::transport::http::card::ServerCardConfig;
/// let card = ServerCardConfig::new("com.example/weather")?.list_tools(true);
/// assert_eq!(card.name(), "com.example/weather");
/// assert!(ServerCardConfig::new("weather").is_err()); // no namespace
/// # Ok::<(), duomcp::transport::http::card::CardError>(())
/// ```
#[derive(Debug, Clone)]
pub struct ServerCardConfig {
    name: String,
    description: Option<String>,
    url: Option<String>,
    protocol_versions: Option<Vec<String>>,
    list_tools: bool,
    catalog: bool,
    catalog_identifier: Option<String>,
    max_age: Duration,
}

impl ServerCardConfig {
    /// A card named `name`, reverse-DNS with one `/` (`com.example/weather`; 3 to 200
    /// characters of `[A-Za-z0-9.-]`, `/`, `[A-Za-z0-9._-]`).
    pub fn new(name: impl Into<String>) -> Result<Self, CardError> {
        let name = name.into();
        if !valid_name(&name) {
            return Err(CardError(format!(
                "name {:?} is not reverse-DNS `namespace/name` (e.g. com.example/weather)",
                cut(&name, 80)
            )));
        }
        Ok(ServerCardConfig {
            name,
            description: None,
            url: None,
            protocol_versions: None,
            list_tools: false,
            catalog: true,
            catalog_identifier: None,
            max_age: Duration::from_secs(3600),
        })
    }

    /// The card's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The card's `description` (1 to 100 characters); default: the server's
    /// `serverInfo.description`.
    pub fn description(mut self, description: impl Into<String>) -> Result<Self, CardError> {
        let d = description.into();
        let n = d.chars().count();
        if n == 0 || n > 100 {
            return Err(CardError(format!(
                "a description has 1 to 100 characters, not {n}"
            )));
        }
        self.description = Some(d);
        Ok(self)
    }

    /// The endpoint's public URL (`https://mcp.example.com/mcp`), for a server behind a
    /// proxy; default: `http://` (`https://` when duomcp serves TLS) + the request's `Host`
    /// + the endpoint's path.
    pub fn url(mut self, url: impl Into<String>) -> Result<Self, CardError> {
        let url = url.into();
        let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
        if !scheme_ok || url.len() > 2048 || url.chars().any(char::is_whitespace) {
            return Err(CardError(format!(
                "url {:?} is not an http(s) URL",
                cut(&url, 80)
            )));
        }
        self.url = Some(url);
        Ok(self)
    }

    /// The protocol versions the card names; default: every revision the server speaks.
    /// Narrow it when a layer refuses one revision (`duomcp serve --era`).
    pub fn protocol_versions<I, S>(mut self, versions: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.protocol_versions = Some(versions.into_iter().map(Into::into).collect());
        self
    }

    /// Lists the tools needing no scope in `_meta["dev.duomcp/tools"]` (name, title,
    /// description); default off, as the SEP leaves primitives out of cards.
    pub fn list_tools(mut self, on: bool) -> Self {
        self.list_tools = on;
        self
    }

    /// Whether the router also serves `/.well-known/ai-catalog.json` with this card's entry;
    /// default on. Turn it off when several endpoints share a router (two would claim the
    /// path) and serve [`ai_catalog_router`] for all of them instead.
    pub fn catalog(mut self, on: bool) -> Self {
        self.catalog = on;
        self
    }

    /// The catalog entry's `identifier`; default `urn:air:{publisher}:mcp:{name}`, the
    /// publisher being the namespace's labels reversed (`com.example/weather` →
    /// `urn:air:example.com:mcp:weather`).
    pub fn catalog_identifier(mut self, identifier: impl Into<String>) -> Self {
        self.catalog_identifier = Some(identifier.into());
        self
    }

    /// `Cache-Control: public, max-age=…`; default one hour.
    pub fn max_age(mut self, max_age: Duration) -> Self {
        self.max_age = max_age;
        self
    }

    pub(super) fn catalog_enabled(&self) -> bool {
        self.catalog
    }

    fn identifier(&self) -> String {
        if let Some(id) = &self.catalog_identifier {
            return id.clone();
        }
        let (namespace, name) = self.name.split_once('/').unwrap_or(("", &self.name));
        let publisher: Vec<&str> = namespace.split('.').rev().collect();
        format!("urn:air:{}:mcp:{name}", publisher.join("."))
    }
}

/// Whether `name` is reverse-DNS `namespace/name` as the schema's pattern says.
fn valid_name(name: &str) -> bool {
    let Some((ns, rest)) = name.split_once('/') else {
        return false;
    };
    (3..=200).contains(&name.len())
        && !ns.is_empty()
        && !rest.is_empty()
        && ns
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        && rest
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// At most `n` characters of `s`, `…` ending a cut one.
fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(n.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The path of the card of the endpoint at `path`.
pub(super) fn card_path(path: &str) -> String {
    card_url(path)
}

/// Where the card of the endpoint `endpoint` (a URL or a path) is: `<endpoint>/server-card`,
/// the location the SEP reserves (a query or fragment of `endpoint` is dropped).
///
/// ```
/// use duomcp::transport::http::card::card_url;
/// assert_eq!(card_url("https://h.example/mcp"), "https://h.example/mcp/server-card");
/// assert_eq!(card_url("https://h.example/mcp/?x=1"), "https://h.example/mcp/server-card");
/// ```
pub fn card_url(endpoint: &str) -> String {
    let base = endpoint.split(['?', '#']).next().unwrap_or(endpoint);
    format!("{}/server-card", base.trim_end_matches('/'))
}

/// The endpoint's public URL as this request reaches it.
fn endpoint_url(t: &Inner, card: &ServerCardConfig, parts: &http::request::Parts) -> String {
    if let Some(url) = &card.url {
        return url.clone();
    }
    let host = parts
        .uri
        .authority()
        .map(|a| a.as_str())
        .or_else(|| {
            parts
                .headers
                .get(http::header::HOST)
                .and_then(|h| h.to_str().ok())
        })
        .unwrap_or("localhost");
    let over_tls = parts.extensions.get::<super::serve::OverTls>().is_some();
    let scheme = if over_tls || t.tls.load(std::sync::atomic::Ordering::Relaxed) {
        "https"
    } else {
        "http"
    };
    format!("{scheme}://{host}{}", t.config.path)
}

/// The card of the endpoint, as JSON.
fn build(t: &Inner, card: &ServerCardConfig, url: &str) -> Value {
    let info = &t.shared.info;
    let description = card
        .description
        .clone()
        .or_else(|| info.description.as_deref().map(|d| cut(d.trim(), 100)))
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| {
            cut(
                &format!(
                    "The MCP server {}",
                    info.title.as_deref().unwrap_or(&info.name)
                ),
                100,
            )
        });
    let versions: Vec<String> = match &card.protocol_versions {
        Some(v) => v.clone(),
        None => version::MODERN_VERSIONS
            .iter()
            .chain(version::LEGACY_VERSIONS)
            .map(|v| (*v).to_owned())
            .collect(),
    };
    let mut out = Map::new();
    out.insert("$schema".into(), json!(CARD_SCHEMA));
    out.insert("name".into(), json!(card.name));
    out.insert("version".into(), json!(cut(&info.version, 255)));
    out.insert("description".into(), json!(description));
    if let Some(title) = info.title.as_deref().filter(|t| !t.is_empty()) {
        out.insert("title".into(), json!(cut(title, 100)));
    }
    if let Some(site) = &info.website_url {
        out.insert("websiteUrl".into(), json!(site));
    }
    if let Some(icons) = info.icons.as_ref().filter(|i| !i.is_empty()) {
        out.insert("icons".into(), json!(icons));
    }
    out.insert(
        "remotes".into(),
        json!([{
            "type": "streamable-http",
            "url": url,
            "supportedProtocolVersions": versions,
        }]),
    );
    if card.list_tools {
        let reg = t.shared.registry();
        let tools: Vec<Value> = reg
            .tools
            .values()
            .filter(|e| e.scopes.is_empty())
            .take(MAX_CARD_TOOLS)
            .map(|e| {
                let mut tool = Map::new();
                tool.insert("name".into(), json!(e.tool.name));
                if let Some(title) = &e.tool.title {
                    tool.insert("title".into(), json!(cut(title, 100)));
                }
                if let Some(d) = &e.tool.description {
                    tool.insert("description".into(), json!(cut(d, 200)));
                }
                Value::Object(tool)
            })
            .collect();
        out.insert("_meta".into(), json!({ TOOLS_META_KEY: tools }));
    }
    Value::Object(out)
}

/// The strong entity tag of `bytes`: a SHA-256 digest, base64url.
pub(super) fn etag(bytes: &[u8]) -> String {
    let digest = sha2::Sha256::digest(bytes);
    format!(
        "\"{}\"",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest[..18])
    )
}

/// Whether `If-None-Match` (every line of it) names `tag` or is `*` (weak comparison, RFC
/// 9110 §13.1.2); `Err` when it is too long or not visible ASCII.
pub(super) fn none_match(headers: &HeaderMap, tag: &str) -> Result<bool, &'static str> {
    let mut total = 0usize;
    let mut hit = false;
    for value in headers.get_all(IF_NONE_MATCH) {
        total = total.saturating_add(value.len());
        if total > MAX_IF_NONE_MATCH {
            return Err("Bad Request: If-None-Match is too long");
        }
        let Ok(text) = value.to_str() else {
            return Err("Bad Request: If-None-Match is not ASCII");
        };
        for item in text.split(',') {
            let item = item.trim();
            let item = item.strip_prefix("W/").unwrap_or(item);
            if item == "*" || item == tag {
                hit = true;
            }
        }
    }
    Ok(hit)
}

/// Whether `Accept` (absent: anything) admits `media` or JSON in general.
fn acceptable(headers: &HeaderMap, media: &str) -> bool {
    let mut any_header = false;
    for value in headers.get_all(ACCEPT) {
        any_header = true;
        let Ok(text) = value.to_str() else { continue };
        for range in text.split(',') {
            let mut params = range.split(';');
            let kind = params.next().unwrap_or("").trim().to_ascii_lowercase();
            let refused = params.any(|p| {
                let p = p.trim();
                p.strip_prefix("q=")
                    .is_some_and(|q| q.trim().parse::<f32>().is_ok_and(|q| q <= 0.0))
            });
            if refused {
                continue;
            }
            if matches!(kind.as_str(), "*/*" | "application/*" | "application/json")
                || kind == media
            {
                return true;
            }
        }
    }
    !any_header
}

fn cors(res: &mut Response) {
    let h = res.headers_mut();
    h.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    h.insert(
        ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("ETag"),
    );
}

fn plain(status: StatusCode, text: &str) -> Response {
    let mut res = Response::new(Body::from(format!("{text}\n")));
    *res.status_mut() = status;
    res.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    cors(&mut res);
    res
}

/// `GET`/`HEAD`/`OPTIONS` of a public document: `Err` with the answer to anything else, or to
/// a refused `Host`.
fn admit(t: &Inner, parts: &http::request::Parts) -> Result<(), Response> {
    // The Host allow-list holds (DNS rebinding; the card's URL is built from it); Origin does
    // not matter here: the document is public, CORS `*`.
    let mut headers = parts.headers.clone();
    headers.remove(ORIGIN);
    if let Err((status, why)) = t.guard.check(&headers, &parts.uri) {
        return Err(plain(status, &why));
    }
    match parts.method {
        Method::GET | Method::HEAD => Ok(()),
        Method::OPTIONS => {
            let mut res = Response::new(Body::empty());
            *res.status_mut() = StatusCode::NO_CONTENT;
            cors(&mut res);
            let h = res.headers_mut();
            h.insert(
                ACCESS_CONTROL_ALLOW_METHODS,
                HeaderValue::from_static("GET, HEAD, OPTIONS"),
            );
            h.insert(
                ACCESS_CONTROL_ALLOW_HEADERS,
                HeaderValue::from_static("Content-Type, If-None-Match"),
            );
            h.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("86400"));
            h.insert(ALLOW, HeaderValue::from_static("GET, HEAD, OPTIONS"));
            Err(res)
        }
        _ => {
            let mut res = plain(
                StatusCode::METHOD_NOT_ALLOWED,
                "Method Not Allowed: a server card is read with GET",
            );
            res.headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, HEAD, OPTIONS"));
            Err(res)
        }
    }
}

/// The answer carrying `doc` (or `304`), with validators, caching and CORS headers.
fn document(
    parts: &http::request::Parts,
    doc: &Value,
    media: &'static str,
    max_age: Duration,
    vary_host: bool,
) -> Response {
    if !acceptable(&parts.headers, media) {
        return plain(
            StatusCode::NOT_ACCEPTABLE,
            &format!("Not Acceptable: this document is {media} (or application/json)"),
        );
    }
    let bytes = match serde_json::to_vec(doc) {
        Ok(b) if b.len() <= MAX_CARD_BYTES => b,
        Ok(b) => {
            tracing::warn!(
                bytes = b.len(),
                max = MAX_CARD_BYTES,
                "the server card is over its bound (large icons?); not served"
            );
            return plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal Server Error: the server card is too large",
            );
        }
        Err(_) => {
            return plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal Server Error: the server card could not be encoded",
            )
        }
    };
    let tag = etag(&bytes);
    let matched = match none_match(&parts.headers, &tag) {
        Ok(m) => m,
        Err(why) => return plain(StatusCode::BAD_REQUEST, why),
    };
    let mut res = if matched {
        let mut res = Response::new(Body::empty());
        *res.status_mut() = StatusCode::NOT_MODIFIED;
        res
    } else {
        let body = if parts.method == Method::HEAD {
            Body::empty()
        } else {
            Body::from(bytes)
        };
        let mut res = Response::new(body);
        res.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(media));
        res
    };
    cors(&mut res);
    let h = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&tag) {
        h.insert(ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&format!("public, max-age={}", max_age.as_secs())) {
        h.insert(CACHE_CONTROL, v);
    }
    if vary_host {
        h.insert(VARY, HeaderValue::from_static("Host"));
    }
    res
}

/// Answers `<endpoint>/server-card`.
pub(super) async fn card(State(t): State<Arc<Inner>>, req: Request) -> Response {
    let (parts, _body) = req.into_parts();
    let Some(card) = &t.config.server_card else {
        return plain(StatusCode::NOT_FOUND, "Not Found");
    };
    if let Err(res) = admit(&t, &parts) {
        return res;
    }
    if let Err(refusal) = t.fair.admit(&parts) {
        return super::refused(refusal);
    }
    let url = endpoint_url(&t, card, &parts);
    let doc = build(&t, card, &url);
    document(
        &parts,
        &doc,
        CARD_MEDIA_TYPE,
        card.max_age,
        card.url.is_none(),
    )
}

/// The AI Catalog entry of an endpoint's card, as this request reaches it.
fn entry(t: &Inner, card: &ServerCardConfig, parts: &http::request::Parts) -> Value {
    let url = endpoint_url(t, card, parts);
    let card_url = card_path(&url);
    json!({
        "identifier": card.identifier(),
        "type": CARD_MEDIA_TYPE,
        "url": card_url,
    })
}

/// Answers `/.well-known/ai-catalog.json` for `endpoints` (those with a card).
async fn catalog_of(endpoints: &[Arc<Inner>], req: Request) -> Response {
    let (parts, _body) = req.into_parts();
    let Some(first) = endpoints.first() else {
        return plain(StatusCode::NOT_FOUND, "Not Found");
    };
    if let Err(res) = admit(first, &parts) {
        return res;
    }
    if let Err(refusal) = first.fair.admit(&parts) {
        return super::refused(refusal);
    }
    let entries: Vec<Value> = endpoints
        .iter()
        .filter_map(|t| t.config.server_card.as_ref().map(|c| entry(t, c, &parts)))
        .collect();
    let vary = endpoints.iter().any(|t| {
        t.config
            .server_card
            .as_ref()
            .is_some_and(|c| c.url.is_none())
    });
    let max_age = endpoints
        .iter()
        .filter_map(|t| t.config.server_card.as_ref().map(|c| c.max_age))
        .min()
        .unwrap_or(Duration::from_secs(3600));
    let doc = json!({ "specVersion": "1.0", "entries": entries });
    document(&parts, &doc, CATALOG_MEDIA_TYPE, max_age, vary)
}

pub(super) async fn catalog(State(t): State<Arc<Inner>>, req: Request) -> Response {
    catalog_of(&[t], req).await
}

/// An axum router serving one `/.well-known/ai-catalog.json` that lists the cards of every
/// endpoint in `endpoints` that has one: for several endpoints in one application (tenants),
/// each with [`ServerCardConfig::catalog`] off. The `Host` allow-list and rate limits of the
/// first endpoint apply.
///
/// ```
/// use duomcp::server::Server;
/// use duomcp::transport::http::card::{ai_catalog_router, ServerCardConfig};
/// use duomcp::transport::http::{HttpConfig, StreamableHttp};
///
/// let tenant = |path: &str, name: &str| -> Result<StreamableHttp, duomcp::transport::http::card::CardError> {
///     let mut config = HttpConfig::default();
///     config.path = path.into();
///     config.server_card = Some(ServerCardConfig::new(name)?.catalog(false));
///     Ok(StreamableHttp::with_config(Server::builder().name(name).build(), config))
/// };
/// let (a, b) = (tenant("/a/mcp", "com.example/a")?, tenant("/b/mcp", "com.example/b")?);
/// let app: axum::Router = a.router().merge(b.router()).merge(ai_catalog_router(&[a, b]));
/// # Ok::<(), duomcp::transport::http::card::CardError>(())
/// ```
pub fn ai_catalog_router(endpoints: &[super::StreamableHttp]) -> axum::Router {
    let endpoints: Arc<[Arc<Inner>]> = endpoints.iter().map(|e| e.inner.clone()).collect();
    axum::Router::new().route(
        CATALOG_PATH,
        axum::routing::any(move |req: Request| {
            let endpoints = endpoints.clone();
            async move { catalog_of(&endpoints, req).await }
        }),
    )
}

/// The problems of a Server Card against the extension's `v1` schema (required members,
/// types, the name's pattern, lengths, remotes); empty when it is valid. Unknown members are
/// allowed (the schema is open).
///
/// ```
/// use duomcp::transport::http::card::check_card;
/// let card = serde_json::json!({
///     "$schema": "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json",
///     "name": "com.example/weather", "version": "1.0.0", "description": "Forecasts",
/// });
/// assert!(check_card(&card).is_empty());
/// assert_eq!(check_card(&serde_json::json!({"name": "x"})).len(), 4);
/// ```
pub fn check_card(doc: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(obj) = doc.as_object() else {
        return vec!["a server card is a JSON object".into()];
    };
    let text = |key: &str, problems: &mut Vec<String>, required: bool| -> Option<String> {
        match obj.get(key) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                problems.push(format!("`{key}` is not a string"));
                None
            }
            None if required => {
                problems.push(format!("`{key}` is missing"));
                None
            }
            None => None,
        }
    };
    if let Some(schema) = text("$schema", &mut problems, true) {
        if schema != CARD_SCHEMA {
            problems.push(format!("`$schema` is not {CARD_SCHEMA}"));
        }
    }
    if let Some(name) = text("name", &mut problems, true) {
        if !valid_name(&name) {
            problems.push("`name` is not reverse-DNS `namespace/name`".into());
        }
    }
    if let Some(v) = text("version", &mut problems, true) {
        let range =
            v.starts_with(['^', '~', '>', '<', '=']) || v.split('.').any(|p| p == "x" || p == "*");
        if v.is_empty() || v.len() > 255 || range {
            problems.push("`version` is empty, over 255 bytes, or a range".into());
        }
    }
    for (key, required) in [("description", true), ("title", false)] {
        if let Some(d) = text(key, &mut problems, required) {
            if !(1..=100).contains(&d.chars().count()) {
                problems.push(format!("`{key}` has not 1 to 100 characters"));
            }
        }
    }
    text("websiteUrl", &mut problems, false);
    if let Some(r) = obj.get("repository") {
        let ok = r.get("url").is_some_and(Value::is_string)
            && r.get("source").is_some_and(Value::is_string);
        if !ok {
            problems.push("`repository` needs string `url` and `source`".into());
        }
    }
    if let Some(icons) = obj.get("icons") {
        let ok = icons
            .as_array()
            .is_some_and(|a| a.iter().all(|i| i.get("src").is_some_and(Value::is_string)));
        if !ok {
            problems.push("`icons` is not an array of objects with a string `src`".into());
        }
    }
    if let Some(remotes) = obj.get("remotes") {
        match remotes.as_array() {
            None => problems.push("`remotes` is not an array".into()),
            Some(remotes) => {
                for (i, r) in remotes.iter().enumerate() {
                    if !matches!(
                        r.get("type").and_then(Value::as_str),
                        Some("streamable-http" | "sse")
                    ) {
                        problems.push(format!("`remotes[{i}].type` is not streamable-http or sse"));
                    }
                    let url_ok = r.get("url").and_then(Value::as_str).is_some_and(|u| {
                        (u.starts_with("http://")
                            || u.starts_with("https://")
                            || u.starts_with('{'))
                            && !u.chars().any(char::is_whitespace)
                    });
                    if !url_ok {
                        problems.push(format!("`remotes[{i}].url` is not an http(s) URL template"));
                    }
                    if let Some(v) = r.get("supportedProtocolVersions") {
                        let ok = v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
                        if !ok {
                            problems.push(format!(
                                "`remotes[{i}].supportedProtocolVersions` is not an array of strings"
                            ));
                        }
                    }
                }
            }
        }
    }
    if obj.get("_meta").is_some_and(|m| !m.is_object()) {
        problems.push("`_meta` is not an object".into());
    }
    problems
}

/// The problems of an AI Catalog (`specVersion`, `entries`, each entry's `identifier`,
/// `type` and exactly one of `url` or `data`); empty when it is valid.
///
/// ```
/// use duomcp::transport::http::card::check_catalog;
/// let catalog = serde_json::json!({"specVersion": "1.0", "entries": [{
///     "identifier": "urn:air:example.com:mcp:weather",
///     "type": "application/mcp-server-card+json",
///     "url": "https://example.com/mcp/server-card",
/// }]});
/// assert!(check_catalog(&catalog).is_empty());
/// ```
pub fn check_catalog(doc: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    if !doc.get("specVersion").is_some_and(Value::is_string) {
        problems.push("`specVersion` is missing or not a string".into());
    }
    let Some(entries) = doc.get("entries").and_then(Value::as_array) else {
        problems.push("`entries` is missing or not an array".into());
        return problems;
    };
    for (i, e) in entries.iter().enumerate() {
        for key in ["identifier", "type"] {
            if !e.get(key).is_some_and(Value::is_string) {
                problems.push(format!("`entries[{i}].{key}` is missing or not a string"));
            }
        }
        if e.get("url").is_some() == e.get("data").is_some() {
            problems.push(format!(
                "`entries[{i}]` needs exactly one of `url` and `data`"
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_schema_pattern() {
        assert!(valid_name("com.example/weather"));
        assert!(valid_name("io.github.x-y/a_b.c"));
        for bad in [
            "weather",
            "a/b/c",
            "/x",
            "x/",
            "a b/c",
            "com.example/wé",
            "a/",
        ] {
            assert!(!valid_name(bad), "{bad}");
        }
        assert!(!valid_name(&format!("a/{}", "b".repeat(200))));
    }

    #[test]
    fn if_none_match_lists_star_weak_and_bounds() {
        let tag = "\"abc\"";
        let mut h = HeaderMap::new();
        h.insert(IF_NONE_MATCH, HeaderValue::from_static("\"x\", W/\"abc\""));
        assert_eq!(none_match(&h, tag), Ok(true));
        h.insert(IF_NONE_MATCH, HeaderValue::from_static("*"));
        assert_eq!(none_match(&h, tag), Ok(true));
        h.insert(IF_NONE_MATCH, HeaderValue::from_static("\"abcd\", \"ab\""));
        assert_eq!(none_match(&h, tag), Ok(false));
        let long = format!("\"{}\"", "a".repeat(MAX_IF_NONE_MATCH));
        h.insert(
            IF_NONE_MATCH,
            HeaderValue::from_str(&long).unwrap_or(HeaderValue::from_static("")),
        );
        assert!(none_match(&h, tag).is_err());
    }

    #[test]
    fn accept_admits_the_media_type_json_and_wildcards_only() {
        let mut h = HeaderMap::new();
        assert!(acceptable(&h, CARD_MEDIA_TYPE));
        for ok in [
            CARD_MEDIA_TYPE,
            "application/json",
            "*/*",
            "text/html, application/*;q=0.5",
        ] {
            h.insert(ACCEPT, HeaderValue::from_static(ok));
            assert!(acceptable(&h, CARD_MEDIA_TYPE), "{ok}");
        }
        for no in ["text/html", "application/json;q=0", "image/png, text/*"] {
            h.insert(ACCEPT, HeaderValue::from_static(no));
            assert!(!acceptable(&h, CARD_MEDIA_TYPE), "{no}");
        }
    }

    #[test]
    fn the_default_identifier_reverses_the_namespace() {
        let c = ServerCardConfig::new("com.example/weather").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.identifier(), "urn:air:example.com:mcp:weather");
        assert_eq!(card_path("/mcp/"), "/mcp/server-card");
        assert_eq!(card_path("/"), "/server-card");
    }
}
