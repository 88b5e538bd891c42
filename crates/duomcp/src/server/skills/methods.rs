//! `skills/list`, `skills/get` and `resources/directory/read` on the wire.

use super::SkillRegistry;
use crate::era::ProtocolError;
use crate::jsonrpc;
use crate::server::cursor;
use crate::server::{CachePolicy, ServerConfig};
use serde::Deserialize;
use serde_json::{json, Value};

/// `skills/list`.
pub(crate) const LIST: &str = "skills/list";
/// `skills/get`.
pub(crate) const GET: &str = "skills/get";
/// `resources/directory/read`.
pub(crate) const DIRECTORY_READ: &str = "resources/directory/read";

#[derive(Deserialize, Default)]
struct ListParams {
    #[serde(default)]
    cursor: Option<String>,
}

#[derive(Deserialize)]
struct UriParams {
    uri: String,
    #[serde(default)]
    cursor: Option<String>,
}

fn parse<T: serde::de::DeserializeOwned>(params: Option<&str>) -> Result<T, ProtocolError> {
    jsonrpc::parse_params(params).map_err(|e| ProtocolError::InvalidParams(e.message))
}

const CURSOR_PREFIX: &str = "skills:";

/// Answers a skills method; `None` when `method` is not one or the server serves no skills.
/// The result comes with the cache policy a 2026-07-28 answer carries (`ttlMs`, `cacheScope`;
/// the 2025-11-25 adapter drops it).
pub(crate) async fn handle(
    skills: &SkillRegistry,
    config: &ServerConfig,
    method: &str,
    params: Option<&str>,
) -> Option<Result<(Value, Option<CachePolicy>), ProtocolError>> {
    if !skills.enabled() || ![LIST, GET, DIRECTORY_READ].contains(&method) {
        return None;
    }
    let outcome = async {
        match method {
            LIST => {
                let p: ListParams = match params {
                    Some(_) => parse(params)?,
                    None => ListParams::default(),
                };
                let after = cursor::decode(CURSOR_PREFIX, p.cursor.as_deref())?;
                let snapshot = skills.snapshot().await?;
                let (page, more) = snapshot.entries(after.as_deref(), config.page_size);
                let mut r = json!({ "skills": page });
                if let (true, Some(last)) = (more, page.last()) {
                    r["nextCursor"] = json!(cursor::encode(CURSOR_PREFIX, &last.uri));
                }
                Ok((r, Some(config.resources_cache)))
            }
            GET => {
                let p: UriParams = parse(params)?;
                let snapshot = skills.snapshot().await?;
                let entry = snapshot.get(&p.uri).ok_or_else(|| {
                    ProtocolError::InvalidParams(format!("No skill is served at {}", p.uri))
                })?;
                Ok((json!({ "skill": entry }), Some(config.read_cache)))
            }
            _ => {
                let p: UriParams = parse(params)?;
                let after = cursor::decode(CURSOR_PREFIX, p.cursor.as_deref())?;
                let snapshot = skills.snapshot().await?;
                let children = snapshot.directory(&p.uri)?;
                let size = config.page_size.max(1);
                let mut rest = children
                    .into_iter()
                    .filter(|r| after.as_deref().is_none_or(|a| r.uri.as_str() > a));
                let page: Vec<_> = rest.by_ref().take(size).collect();
                let mut r = json!({ "resources": page });
                if let (true, Some(last)) = (rest.next().is_some(), page.last()) {
                    r["nextCursor"] = json!(cursor::encode(CURSOR_PREFIX, &last.uri));
                }
                Ok((r, None))
            }
        }
    };
    Some(outcome.await)
}
