//! The four list methods (`tools/list`, `prompts/list`, `resources/list`,
//! `resources/templates/list`): one page of a name-ordered registry map, serialized straight
//! from the registry's items, shaped by the era's adapter.

use super::adapter::Adapter;
use super::{parse, Reply};
use crate::era::ProtocolError;
use crate::jsonrpc::IncomingRequest;
use crate::server::{cursor, CachePolicy, Shared};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

#[derive(Deserialize, Default)]
struct ListParams {
    #[serde(default)]
    cursor: Option<String>,
}

/// The prefix of tools, prompts, resources and templates list cursors.
const LIST_CURSOR: &str = "k:";

/// One page of a name-ordered map, plus the cursor of the next page.
fn page<'a, T: 'a>(
    items: impl Iterator<Item = (&'a String, T)>,
    after: Option<&str>,
    size: usize,
) -> (Vec<T>, Option<String>) {
    let mut out = Vec::new();
    let mut last: Option<&String> = None;
    let mut more = false;
    for (k, v) in items.filter(|(k, _)| after.is_none_or(|a| k.as_str() > a)) {
        if out.len() == size.max(1) {
            more = true;
            break;
        }
        last = Some(k);
        out.push(v);
    }
    let next = if more {
        last.map(|k| cursor::encode(LIST_CURSOR, k))
    } else {
        None
    };
    (out, next)
}

/// One page of a list result (`tools/list` and the like), serialized straight from the
/// registry's items: `{"<key>": [...], "nextCursor": "..."}`.
struct ListPage<'a, T: Clone> {
    key: &'static str,
    items: Vec<Cow<'a, T>>,
    next: Option<String>,
}

impl<T: Serialize + Clone> Serialize for ListPage<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(1 + usize::from(self.next.is_some())))?;
        map.serialize_entry(self.key, &self.items)?;
        if let Some(next) = &self.next {
            map.serialize_entry("nextCursor", next)?;
        }
        map.end()
    }
}

/// The reply with the page of `items` (sorted by key) after the request's cursor. The one
/// body of `tools/list`, `prompts/list`, `resources/list` and `resources/templates/list`.
fn list_page<'a, T: Serialize + Clone + 'a>(
    shared: &Shared,
    req: &IncomingRequest,
    a: &impl Adapter,
    cache: CachePolicy,
    key: &'static str,
    items: impl Iterator<Item = (&'a String, Cow<'a, T>)>,
) -> Result<Reply, ProtocolError> {
    let p: ListParams = parse(req)?;
    let after = cursor::decode(LIST_CURSOR, p.cursor.as_deref())?;
    let (items, next) = page(items, after.as_deref(), shared.config.page_size);
    let page = ListPage { key, items, next };
    a.shape(shared, &req.id, &page, Some(cache))
}

/// `tools/list`.
pub(super) fn tools(
    shared: &Shared,
    req: &IncomingRequest,
    a: &impl Adapter,
    cache: CachePolicy,
    ctx: &crate::server::Context,
) -> Result<Reply, ProtocolError> {
    let reg = shared.registry();
    let caps = ctx.client_capabilities();
    let tools = reg
        .tools
        .iter()
        .filter(|(_, e)| crate::server::apps::listed_for(&e.tool, caps))
        .map(|(k, e)| (k, a.listed_tool(&e.tool)));
    list_page(shared, req, a, cache, "tools", tools)
}

/// `prompts/list`.
pub(super) fn prompts(
    shared: &Shared,
    req: &IncomingRequest,
    a: &impl Adapter,
    cache: CachePolicy,
) -> Result<Reply, ProtocolError> {
    let reg = shared.registry();
    let prompts = reg
        .prompts
        .iter()
        .map(|(k, e)| (k, Cow::Borrowed(&e.prompt)));
    list_page(shared, req, a, cache, "prompts", prompts)
}

/// `resources/list`: the registered resources and the skill files, by URI.
pub(super) async fn resources(
    shared: &Shared,
    req: &IncomingRequest,
    a: &impl Adapter,
    cache: CachePolicy,
) -> Result<Reply, ProtocolError> {
    #[cfg(feature = "skills")]
    let skill_files = if shared.skills.enabled() {
        shared.skills.snapshot().await?.resources()
    } else {
        Vec::new()
    };
    #[cfg(not(feature = "skills"))]
    let skill_files: Vec<(String, duomcp_schema::Resource)> = Vec::new();
    let reg = shared.registry();
    let mut all: Vec<(&String, Cow<'_, duomcp_schema::Resource>)> = reg
        .resources
        .iter()
        .map(|(k, e)| (k, Cow::Borrowed(&e.resource)))
        .collect();
    all.extend(
        skill_files
            .iter()
            .filter(|(k, _)| !reg.resources.contains_key(k))
            .map(|(k, r)| (k, Cow::Borrowed(r))),
    );
    all.sort_by(|a, b| a.0.cmp(b.0));
    list_page(shared, req, a, cache, "resources", all.into_iter())
}

/// `resources/templates/list`, in registration order.
pub(super) fn templates(
    shared: &Shared,
    req: &IncomingRequest,
    a: &impl Adapter,
    cache: CachePolicy,
) -> Result<Reply, ProtocolError> {
    let reg = shared.registry();
    let keys: Vec<String> = (0..reg.templates.len())
        .map(|i| format!("{i:08}"))
        .collect();
    let templates = keys
        .iter()
        .zip(&reg.templates)
        .map(|(k, t)| (k, Cow::Borrowed(&t.template)));
    list_page(shared, req, a, cache, "resourceTemplates", templates)
}
