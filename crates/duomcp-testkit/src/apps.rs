//! The MCP Apps extension (`io.modelcontextprotocol/ui`) on the wire, checked against the
//! schema `@modelcontextprotocol/ext-apps` publishes (vendored: `schemas/ext-apps-2.0.4-schema.json`).
//!
//! The core schemas leave `_meta` and `capabilities.extensions` open; these checks look inside:
//!
//! * a server's `tools/list` result: every tool's `_meta.ui` is a `McpUiToolMeta`;
//! * `resources/list`: every resource's `_meta.ui` is a `McpUiResourceMeta`;
//! * `resources/read`: every contents' `_meta.ui` is a `McpUiResourceMeta`, and `ui://`
//!   contents have the MIME type `text/html;profile=mcp-app` (the extension: MUST);
//! * `initialize` results and 2026-07-28 `server/discover` results: the server's
//!   `extensions["io.modelcontextprotocol/ui"]` is an object;
//! * a client's `initialize` request, and any request's 2026-07-28
//!   `_meta["io.modelcontextprotocol/clientCapabilities"]`: the
//!   `extensions["io.modelcontextprotocol/ui"]` settings are a `McpUiClientCapabilities`.
//!
//! ```
//! use duomcp_testkit::apps;
//! use serde_json::json;
//!
//! let list = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{
//!     "name": "t", "inputSchema": {"type": "object"},
//!     "_meta": {"ui": {"resourceUri": "ui://v", "visibility": ["app"]}}
//! }]}});
//! assert!(apps::validate_server_message(&list, Some("tools/list")).is_ok());
//! let bad = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{
//!     "name": "t", "inputSchema": {"type": "object"}, "_meta": {"ui": {"visibility": ["robot"]}}
//! }]}});
//! assert!(apps::validate_server_message(&bad, Some("tools/list")).is_err());
//! ```

use crate::{check, Doc};
use serde_json::Value;

/// The extension's identifier.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/ui";
/// The MIME type of HTML views.
pub const RESOURCE_MIME_TYPE: &str = "text/html;profile=mcp-app";
/// The `_meta` key of 2026-07-28 client capabilities.
const CLIENT_CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";

/// Validates `instance` against the definition `def` of the MCP Apps schema
/// (`McpUiToolMeta`, `McpUiResourceMeta`, `McpUiClientCapabilities`, ...).
pub fn validate_definition(def: &str, instance: &Value) -> Result<(), String> {
    check(Doc::ExtApps, def, instance)
}

/// Checks the MCP Apps parts of a message a server sent (a response to `request_method`).
/// Messages without such parts pass.
pub fn validate_server_message(msg: &Value, request_method: Option<&str>) -> Result<(), String> {
    let Some(result) = msg.get("result") else {
        return Ok(());
    };
    match request_method {
        Some("tools/list") => each(result, "tools", |tool| ui_meta(tool, "McpUiToolMeta")),
        Some("resources/list") => each(result, "resources", |r| ui_meta(r, "McpUiResourceMeta")),
        Some("resources/read") => each(result, "contents", |c| {
            let uri = c.get("uri").and_then(Value::as_str).unwrap_or_default();
            let mime = c.get("mimeType").and_then(Value::as_str);
            if uri.starts_with("ui://") && mime != Some(RESOURCE_MIME_TYPE) {
                return Err(format!(
                    "{uri}: a ui:// resource's contents must have mimeType {RESOURCE_MIME_TYPE:?}, not {mime:?}"
                ));
            }
            ui_meta(c, "McpUiResourceMeta")
        }),
        Some("initialize") | Some("server/discover") => {
            match result.pointer(&pointer(&["capabilities", "extensions", EXTENSION_ID])) {
                Some(v) if !v.is_object() => Err(format!(
                    "server capabilities.extensions[{EXTENSION_ID:?}] is not an object: {v}"
                )),
                _ => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// Checks the MCP Apps parts of a message a client sent: the UI capability settings in an
/// `initialize` request and in any request's 2026-07-28 `_meta` client capabilities.
pub fn validate_client_message(msg: &Value) -> Result<(), String> {
    let Some(params) = msg.get("params") else {
        return Ok(());
    };
    let mut found = Vec::new();
    if msg.get("method").and_then(Value::as_str) == Some("initialize") {
        found.push(params.pointer(&pointer(&["capabilities", "extensions", EXTENSION_ID])));
    }
    found.push(params.pointer(&pointer(&[
        "_meta",
        CLIENT_CAPABILITIES_META,
        "extensions",
        EXTENSION_ID,
    ])));
    for settings in found.into_iter().flatten() {
        validate_definition("McpUiClientCapabilities", settings)?;
    }
    Ok(())
}

/// Applies `f` to every item of `result[key]`.
fn each(result: &Value, key: &str, f: impl Fn(&Value) -> Result<(), String>) -> Result<(), String> {
    let Some(items) = result.get(key).and_then(Value::as_array) else {
        return Ok(());
    };
    for (i, item) in items.iter().enumerate() {
        f(item).map_err(|e| format!("{key}[{i}]: {e}"))?;
    }
    Ok(())
}

/// `item._meta.ui` against `def`, when present.
fn ui_meta(item: &Value, def: &str) -> Result<(), String> {
    match item.pointer("/_meta/ui") {
        Some(ui) => validate_definition(def, ui),
        None => Ok(()),
    }
}

/// A JSON pointer to `path` (keys escaped).
fn pointer(path: &[&str]) -> String {
    path.iter()
        .map(|k| format!("/{}", k.replace('~', "~0").replace('/', "~1")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_resource_meta_field_is_checked() {
        let good = json!({
            "csp": {"connectDomains": ["https://a"], "resourceDomains": ["https://b"],
                    "frameDomains": ["https://c"], "baseUriDomains": ["https://d"]},
            "permissions": {"camera": {}, "microphone": {}, "geolocation": {}, "clipboardWrite": {}},
            "domain": "x.example.com",
            "prefersBorder": true
        });
        validate_definition("McpUiResourceMeta", &good).unwrap();
        for bad in [
            json!({"csp": {"connectDomain": ["https://a"]}}),
            json!({"csp": {"resourceDomains": "https://b"}}),
            json!({"permissions": {"camera": true}}),
            json!({"permissions": {"clipboard": {}}}),
            json!({"domain": 3}),
            json!({"prefersBorder": "yes"}),
            json!({"border": true}),
        ] {
            assert!(
                validate_definition("McpUiResourceMeta", &bad).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn ui_resources_need_the_mime_type() {
        let read = |mime: &str| {
            json!({"jsonrpc": "2.0", "id": 1, "result": {"contents": [
                {"uri": "ui://v", "mimeType": mime, "text": "<p>"}
            ]}})
        };
        validate_server_message(&read(RESOURCE_MIME_TYPE), Some("resources/read")).unwrap();
        assert!(validate_server_message(&read("text/html"), Some("resources/read")).is_err());
    }

    #[test]
    fn client_settings_are_checked_in_both_eras() {
        let legacy = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "capabilities": {"extensions": {EXTENSION_ID: {"mimeTypes": [RESOURCE_MIME_TYPE]}}}}});
        validate_client_message(&legacy).unwrap();
        let modern_bad = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {
            "_meta": {CLIENT_CAPABILITIES_META: {"extensions": {EXTENSION_ID: {"mimeTypes": "html"}}}}}});
        assert!(validate_client_message(&modern_bad).is_err());
    }
}
