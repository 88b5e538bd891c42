//! `duomcp card URL`: fetch a Server Card (experimental, SEP-2127) or an AI Catalog, check it
//! against the extension's schema, print it; and the `duomcp serve` flags that publish one.
//!
//! Exit codes: 0 the document is valid; 1 it could not be fetched (connection, timeout, an
//! HTTP status other than 200); 2 usage; 3 what came back is not a valid card or catalog
//! (content type, over [`MAX_DOCUMENT_BYTES`], not JSON, a required member missing or of the
//! wrong shape).

use super::{output, Failure};
use clap::Args;
use duomcp::transport::http::card::{
    check_card, check_catalog, ServerCardConfig, CARD_MEDIA_TYPE, CATALOG_MEDIA_TYPE, CATALOG_PATH,
    TOOLS_META_KEY,
};
use duomcp::transport::http::HttpConfig;
use serde_json::{json, Value};
use std::process::ExitCode;
use std::time::Duration;

/// The most bytes `duomcp card` reads of a card or catalog; more is refused (exit 3).
pub const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;
/// The most cards of one catalog `duomcp card` fetches.
pub const MAX_CATALOG_CARDS: usize = 32;

/// `duomcp card`.
#[derive(Debug, Clone, Args)]
pub struct CardArgs {
    /// The MCP endpoint (`https://host/mcp`: its card is `<URL>/server-card`), a card's own
    /// URL (ending in `/server-card`), or an AI Catalog (`https://host/.well-known/ai-catalog.json`,
    /// whose Server Card entries are fetched and checked too).
    #[arg(value_name = "URL")]
    pub url: String,
    /// Print the documents as JSON, as fetched.
    #[arg(long)]
    pub json: bool,
    /// Give up on a fetch after this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub timeout: u64,
}

/// The `duomcp serve` flags of the Server Card.
#[derive(Debug, Clone, Args, Default)]
pub struct ServeCardArgs {
    /// With --http: publish a Server Card (experimental, SEP-2127) named NAME, reverse-DNS
    /// (`com.example/weather`), at `<endpoint>/server-card`, and an AI Catalog listing it at
    /// `/.well-known/ai-catalog.json`. Both public (no authentication). Off by default.
    #[arg(long = "card", value_name = "NAME", requires = "http")]
    pub card: Option<String>,
    /// With --card: the endpoint's public URL named in the card (behind a proxy); default the
    /// URL the request reached.
    #[arg(long = "card-url", value_name = "URL", requires = "card")]
    pub card_url: Option<String>,
    /// With --card: list the tools (name, title, description; no schemas) in the card's
    /// `_meta`. The SEP leaves tools out of cards; off by default.
    #[arg(long = "card-tools", requires = "card")]
    pub card_tools: bool,
}

impl ServeCardArgs {
    /// Sets `config.server_card` from the flags; `versions` are the revisions served.
    pub fn apply(&self, config: &mut HttpConfig, versions: &[&str]) -> Result<(), String> {
        let Some(name) = &self.card else {
            return Ok(());
        };
        let mut card = ServerCardConfig::new(name.as_str())
            .map_err(|e| e.to_string())?
            .protocol_versions(versions.iter().copied())
            .list_tools(self.card_tools);
        if let Some(url) = &self.card_url {
            card = card.url(url.as_str()).map_err(|e| e.to_string())?;
        }
        config.server_card = Some(card);
        Ok(())
    }
}

/// Why `duomcp card` stopped.
enum Stop {
    /// Could not fetch (exit 1).
    Fetch(String),
    /// Not a valid document (exit 3).
    Invalid(String),
}

/// A document fetched: its URL, `ETag`, JSON, and a warning about its content type.
struct Fetched {
    url: String,
    etag: Option<String>,
    doc: Value,
    warning: Option<String>,
}

/// Runs `duomcp card`.
pub async fn run(args: CardArgs) -> ExitCode {
    match fetch_all(&args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(Stop::Fetch(m)) => {
            Failure::new(m).report(args.json);
            ExitCode::from(1)
        }
        Err(Stop::Invalid(m)) => {
            Failure::new(m).report(args.json);
            ExitCode::from(3)
        }
    }
}

async fn fetch_all(args: &CardArgs) -> Result<(), Stop> {
    let client = duomcp::client::transport::http::default_client()
        .map_err(|e| Stop::Fetch(format!("cannot make an HTTP client: {e}")))?;
    let timeout = Duration::from_secs(args.timeout.max(1));
    let url = args.url.trim();
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(Stop::Fetch(format!("{url} is not an http(s) URL")));
    }
    let path = url.split(['?', '#']).next().unwrap_or(url);
    if path.ends_with(CATALOG_PATH) {
        let catalog = fetch(&client, url, CATALOG_MEDIA_TYPE, timeout).await?;
        let problems = check_catalog(&catalog.doc);
        if !problems.is_empty() {
            return Err(invalid("AI Catalog", &catalog.url, &problems));
        }
        let entries: Vec<&Value> = catalog
            .doc
            .get("entries")
            .and_then(Value::as_array)
            .map(|e| {
                e.iter()
                    .filter(|e| e.get("type").and_then(Value::as_str) == Some(CARD_MEDIA_TYPE))
                    .take(MAX_CATALOG_CARDS)
                    .collect()
            })
            .unwrap_or_default();
        let mut cards = Vec::new();
        for e in entries {
            let card = match (e.get("url").and_then(Value::as_str), e.get("data")) {
                (Some(u), _) => fetch(&client, u, CARD_MEDIA_TYPE, timeout).await?,
                (None, Some(data)) => Fetched {
                    url: format!("{} (inline)", catalog.url),
                    etag: None,
                    doc: data.clone(),
                    warning: None,
                },
                (None, None) => continue,
            };
            let problems = check_card(&card.doc);
            if !problems.is_empty() {
                return Err(invalid("server card", &card.url, &problems));
            }
            cards.push(card);
        }
        if args.json {
            let cards: Vec<&Value> = cards.iter().map(|c| &c.doc).collect();
            print_json(&json!({ "catalog": catalog.doc, "cards": cards }));
        } else {
            warn(&catalog);
            println!(
                "catalog:     {} ({} server card{})",
                catalog.url,
                cards.len(),
                if cards.len() == 1 { "" } else { "s" }
            );
            for card in &cards {
                println!();
                print_card(card);
            }
        }
        return Ok(());
    }
    let card_url = if path.trim_end_matches('/').ends_with("/server-card") {
        url.to_owned()
    } else {
        duomcp::transport::http::card::card_url(url)
    };
    let card = fetch(&client, &card_url, CARD_MEDIA_TYPE, timeout).await?;
    let problems = check_card(&card.doc);
    if !problems.is_empty() {
        return Err(invalid("server card", &card.url, &problems));
    }
    if args.json {
        print_json(&card.doc);
    } else {
        print_card(&card);
    }
    Ok(())
}

fn invalid(what: &str, url: &str, problems: &[String]) -> Stop {
    Stop::Invalid(format!(
        "{url}: not a valid {what}: {}",
        problems.join("; ")
    ))
}

fn print_json(v: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
    );
}

fn warn(f: &Fetched) {
    if let Some(w) = &f.warning {
        eprintln!("duomcp: {}: {w}", f.url);
    }
}

fn print_card(card: &Fetched) {
    warn(card);
    let d = &card.doc;
    let s = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("");
    println!("card:        {} (valid)", card.url);
    println!("name:        {}", s("name"));
    if !s("title").is_empty() {
        println!("title:       {}", s("title"));
    }
    println!("version:     {}", s("version"));
    println!("description:");
    for line in output::wrap(s("description"), output::width().saturating_sub(2)) {
        println!("  {line}");
    }
    if !s("websiteUrl").is_empty() {
        println!("website:     {}", s("websiteUrl"));
    }
    let remotes = d.get("remotes").and_then(Value::as_array);
    println!("remotes:");
    match remotes {
        Some(r) if !r.is_empty() => {
            for r in r {
                let versions: Vec<&str> = r
                    .get("supportedProtocolVersions")
                    .and_then(Value::as_array)
                    .map(|v| v.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let rs = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
                println!("  {} {}", rs("type"), rs("url"));
                if !versions.is_empty() {
                    println!("    protocol versions: {}", versions.join(", "));
                }
            }
        }
        _ => println!("  (none)"),
    }
    if let Some(tools) = d
        .get("_meta")
        .and_then(|m| m.get(TOOLS_META_KEY))
        .and_then(Value::as_array)
    {
        let names: Vec<&str> = tools
            .iter()
            .filter_map(|t| t.get("name").and_then(Value::as_str))
            .collect();
        println!("tools:       {} ({TOOLS_META_KEY})", names.join(", "));
    }
    if let Some(tag) = &card.etag {
        println!("etag:        {tag}");
    }
}

/// GETs `url` expressing `media`, reading at most [`MAX_DOCUMENT_BYTES`].
async fn fetch(
    client: &reqwest::Client,
    url: &str,
    media: &'static str,
    timeout: Duration,
) -> Result<Fetched, Stop> {
    let work = async {
        let mut res = client
            .get(url)
            .header("accept", format!("{media}, application/json;q=0.5"))
            .send()
            .await
            .map_err(|e| Stop::Fetch(format!("{url}: {e}")))?;
        let status = res.status();
        if status.as_u16() != 200 {
            return Err(Stop::Fetch(format!("{url}: HTTP {status}")));
        }
        let content_type = res
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let warning = if content_type == media {
            None
        } else if content_type == "application/json" {
            Some(format!("served as application/json, not {media}"))
        } else {
            return Err(Stop::Invalid(format!(
                "{url}: the content type is {:?}, not {media}",
                content_type
            )));
        };
        let etag = res
            .headers()
            .get("etag")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if res
            .content_length()
            .is_some_and(|n| n > MAX_DOCUMENT_BYTES as u64)
        {
            return Err(too_large(url));
        }
        let mut body = Vec::new();
        while let Some(chunk) = res
            .chunk()
            .await
            .map_err(|e| Stop::Fetch(format!("{url}: {e}")))?
        {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(too_large(url));
            }
            body.extend_from_slice(&chunk);
        }
        let doc: Value = serde_json::from_slice(&body)
            .map_err(|e| Stop::Invalid(format!("{url}: not JSON: {e}")))?;
        Ok(Fetched {
            url: url.to_owned(),
            etag,
            doc,
            warning,
        })
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(r) => r,
        Err(_) => Err(Stop::Fetch(format!(
            "{url}: no answer within {} s",
            timeout.as_secs()
        ))),
    }
}

fn too_large(url: &str) -> Stop {
    Stop::Invalid(format!(
        "{url}: the document is over {MAX_DOCUMENT_BYTES} bytes"
    ))
}
