//! MCP Apps (extension `io.modelcontextprotocol/ui`, SEP-1865, spec 2026-01-26): the
//! MCP-side wire types. Field names follow the extension's published schema
//! (`@modelcontextprotocol/ext-apps` `schema.json`: `McpUiToolMeta`, `McpUiResourceMeta`,
//! `McpUiResourceCsp`, `McpUiResourcePermissions`, `McpUiClientCapabilities`).
//!
//! * A view is a resource with a `ui://` URI and MIME type [`RESOURCE_MIME_TYPE`]; its
//!   listing entry and its `resources/read` contents carry a [`UiResourceMeta`] in `_meta.ui`.
//! * A tool names its view in `_meta.ui.resourceUri` and who may call it in
//!   `_meta.ui.visibility` ([`UiToolMeta`]).
//! * A host that renders views declares `extensions["io.modelcontextprotocol/ui"]`
//!   ([`UiClientCapability`]) in its client capabilities.
//!
//! ```
//! use duomcp_schema::apps::{UiToolMeta, UiVisibility};
//! let meta = UiToolMeta::view("ui://counter/view.html").visibility([UiVisibility::App]);
//! assert_eq!(
//!     serde_json::to_value(&meta).unwrap(),
//!     serde_json::json!({"resourceUri": "ui://counter/view.html", "visibility": ["app"]})
//! );
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::capabilities::ClientCapabilities;
use crate::common::JsonObject;
use crate::content::ResourceContents;
use crate::meta::Meta;
use crate::resources::Resource;
use crate::tools::Tool;

/// The extension's identifier, the key in `capabilities.extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/ui";
/// The MIME type of an HTML view.
pub const RESOURCE_MIME_TYPE: &str = "text/html;profile=mcp-app";
/// The deprecated flat `_meta` key for a tool's view (`_meta["ui/resourceUri"]`); hosts of
/// the first releases read only this one, so servers write it next to `_meta.ui.resourceUri`
/// (as the official server helpers do).
pub const RESOURCE_URI_META_KEY: &str = "ui/resourceUri";
/// The URI scheme of views.
pub const URI_SCHEME: &str = "ui://";
/// The `_meta` key of the extension's metadata on tools, resources and contents.
pub const META_KEY: &str = "ui";

/// Who may call a tool (`McpUiToolVisibility`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum UiVisibility {
    /// The model sees the tool in its list and may call it.
    Model,
    /// The view (app) of this server may call it.
    App,
    /// A value this version does not know, kept verbatim.
    Other(String),
}

impl From<String> for UiVisibility {
    fn from(s: String) -> Self {
        match s.as_str() {
            "model" => UiVisibility::Model,
            "app" => UiVisibility::App,
            _ => UiVisibility::Other(s),
        }
    }
}

impl From<UiVisibility> for String {
    fn from(v: UiVisibility) -> Self {
        match v {
            UiVisibility::Model => "model".to_owned(),
            UiVisibility::App => "app".to_owned(),
            UiVisibility::Other(s) => s,
        }
    }
}

/// A tool's `_meta.ui` (`McpUiToolMeta`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiToolMeta {
    /// The `ui://` resource that renders the tool's results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_uri: Option<String>,
    /// Who may call the tool; absent means `["model", "app"]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<Vec<UiVisibility>>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl UiToolMeta {
    /// Metadata linking a tool to the view `uri`.
    pub fn view(uri: impl Into<String>) -> Self {
        UiToolMeta {
            resource_uri: Some(uri.into()),
            ..UiToolMeta::default()
        }
    }

    /// Sets who may call the tool.
    pub fn visibility(mut self, who: impl IntoIterator<Item = UiVisibility>) -> Self {
        self.visibility = Some(who.into_iter().collect());
        self
    }

    /// Whether the model may see and call the tool (visibility absent, or naming `model`).
    pub fn model_visible(&self) -> bool {
        self.visibility
            .as_ref()
            .is_none_or(|v| v.contains(&UiVisibility::Model))
    }

    /// Whether views may call the tool (visibility absent, or naming `app`).
    pub fn app_visible(&self) -> bool {
        self.visibility
            .as_ref()
            .is_none_or(|v| v.contains(&UiVisibility::App))
    }
}

/// The origins a view may reach (`McpUiResourceCsp`); absent lists mean none.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiResourceCsp {
    /// Origins for fetch/XHR/WebSocket (`connect-src`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_domains: Option<Vec<String>>,
    /// Origins for images, scripts, styles, fonts and media.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_domains: Option<Vec<String>>,
    /// Origins for nested iframes (`frame-src`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_domains: Option<Vec<String>>,
    /// Allowed base URIs of the document (`base-uri`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_uri_domains: Option<Vec<String>>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Browser permissions a view asks for (`McpUiResourcePermissions`); each present key is a
/// request (its value an empty object). Hosts may refuse them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiResourcePermissions {
    /// Camera access (Permission Policy `camera`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub camera: Option<JsonObject>,
    /// Microphone access (`microphone`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microphone: Option<JsonObject>,
    /// Geolocation (`geolocation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geolocation: Option<JsonObject>,
    /// Clipboard write access (`clipboard-write`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clipboard_write: Option<JsonObject>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// A view's `_meta.ui` (`McpUiResourceMeta`), on its listing entry and its contents.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiResourceMeta {
    /// The content security policy the view needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csp: Option<UiResourceCsp>,
    /// The sandbox permissions it asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<UiResourcePermissions>,
    /// A dedicated sandbox origin (its format is host-specific).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Whether the view wants a visible border and background (absent: the host decides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefers_border: Option<bool>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl UiResourceMeta {
    /// Whether nothing is set (then no `_meta.ui` is written).
    pub fn is_empty(&self) -> bool {
        *self == UiResourceMeta::default()
    }
}

/// The settings of `extensions["io.modelcontextprotocol/ui"]` a host declares
/// (`McpUiClientCapabilities`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiClientCapability {
    /// The view MIME types the host renders; includes [`RESOURCE_MIME_TYPE`] for MCP Apps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_types: Option<Vec<String>>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl UiClientCapability {
    /// A host rendering HTML views ([`RESOURCE_MIME_TYPE`]).
    pub fn html() -> Self {
        UiClientCapability {
            mime_types: Some(vec![RESOURCE_MIME_TYPE.to_owned()]),
            extra: JsonObject::new(),
        }
    }

    /// Whether the host renders views of `mime_type`.
    pub fn supports(&self, mime_type: &str) -> bool {
        self.mime_types
            .as_ref()
            .is_some_and(|m| m.iter().any(|t| t == mime_type))
    }

    /// Whether the host renders HTML views ([`RESOURCE_MIME_TYPE`]).
    pub fn supports_html(&self) -> bool {
        self.supports(RESOURCE_MIME_TYPE)
    }

    /// The settings object to declare (`ClientCapabilities::with_extension`).
    pub fn to_settings(&self) -> JsonObject {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            _ => JsonObject::new(),
        }
    }
}

/// The `ui` entry of a `_meta` object, parsed; `None` when absent or not of the expected shape.
fn ui_of<T: serde::de::DeserializeOwned>(meta: Option<&Meta>) -> Option<T> {
    serde_json::from_value(meta?.get(META_KEY)?.clone()).ok()
}

/// A tool's `_meta.ui`. A tool that only has the deprecated flat `_meta["ui/resourceUri"]`
/// gets a [`UiToolMeta`] with that URI.
///
/// ```
/// use duomcp_schema::{apps, Tool};
/// let mut tool = Tool::new("t", Default::default());
/// tool.meta = Some(serde_json::from_value(serde_json::json!({"ui/resourceUri": "ui://a"})).unwrap());
/// assert_eq!(apps::tool_ui(&tool).unwrap().resource_uri.as_deref(), Some("ui://a"));
/// ```
pub fn tool_ui(tool: &Tool) -> Option<UiToolMeta> {
    let meta = tool.meta.as_ref();
    let mut ui: Option<UiToolMeta> = ui_of(meta);
    let flat = meta
        .and_then(|m| m.get(RESOURCE_URI_META_KEY))
        .and_then(Value::as_str);
    if let Some(flat) = flat {
        let ui = ui.get_or_insert_with(UiToolMeta::default);
        if ui.resource_uri.is_none() {
            ui.resource_uri = Some(flat.to_owned());
        }
    }
    ui
}

/// The view a tool links to (`_meta.ui.resourceUri`, or the deprecated flat key), if it is a
/// `ui://` URI.
pub fn tool_view_uri(tool: &Tool) -> Option<String> {
    tool_ui(tool)?
        .resource_uri
        .filter(|u| u.starts_with(URI_SCHEME))
}

/// Whether a host shows the tool to its model: not when its visibility leaves `model` out
/// (the extension: hosts MUST NOT list such tools to the agent).
pub fn tool_model_visible(tool: &Tool) -> bool {
    tool_ui(tool).is_none_or(|ui| ui.model_visible())
}

/// A listed resource's `_meta.ui`.
pub fn resource_ui(resource: &Resource) -> Option<UiResourceMeta> {
    ui_of(resource.meta.as_ref())
}

/// Read contents' `_meta.ui`.
pub fn contents_ui(contents: &ResourceContents) -> Option<UiResourceMeta> {
    let meta = match contents {
        ResourceContents::Text(t) => t.meta.as_ref(),
        ResourceContents::Blob(b) => b.meta.as_ref(),
    };
    ui_of(meta)
}

/// What a client declared for the extension, if it declared it.
pub fn client_ui(caps: &ClientCapabilities) -> Option<UiClientCapability> {
    let settings = caps.extensions.as_ref()?.get(EXTENSION_ID)?;
    Some(serde_json::from_value(settings.clone()).unwrap_or_default())
}

/// Writes `value` as `meta.ui` (creating `meta`).
pub fn set_ui<T: Serialize>(meta: &mut Option<Meta>, value: &T) {
    if let Ok(v) = serde_json::to_value(value) {
        meta.get_or_insert_with(Meta::new)
            .insert(META_KEY.to_owned(), v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn visibility_defaults_to_both() {
        let m = UiToolMeta::view("ui://x");
        assert!(m.model_visible() && m.app_visible());
        let app = m.clone().visibility([UiVisibility::App]);
        assert!(!app.model_visible() && app.app_visible());
        let unknown: UiToolMeta = serde_json::from_value(json!({"visibility": ["robot"]})).unwrap();
        assert_eq!(
            unknown.visibility,
            Some(vec![UiVisibility::Other("robot".into())])
        );
        assert!(!unknown.model_visible());
    }

    #[test]
    fn resource_meta_uses_the_schema_names() {
        let meta = UiResourceMeta {
            csp: Some(UiResourceCsp {
                connect_domains: Some(vec!["https://api.example.com".into()]),
                resource_domains: Some(vec!["https://cdn.example.com".into()]),
                frame_domains: Some(vec!["https://www.youtube.com".into()]),
                base_uri_domains: Some(vec!["https://base.example.com".into()]),
                ..Default::default()
            }),
            permissions: Some(UiResourcePermissions {
                camera: Some(JsonObject::new()),
                clipboard_write: Some(JsonObject::new()),
                ..Default::default()
            }),
            domain: Some("a1.example.com".into()),
            prefers_border: Some(false),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&meta).unwrap(),
            json!({
                "csp": {
                    "connectDomains": ["https://api.example.com"],
                    "resourceDomains": ["https://cdn.example.com"],
                    "frameDomains": ["https://www.youtube.com"],
                    "baseUriDomains": ["https://base.example.com"]
                },
                "permissions": {"camera": {}, "clipboardWrite": {}},
                "domain": "a1.example.com",
                "prefersBorder": false
            })
        );
    }

    #[test]
    fn client_capability_reads_mime_types() {
        let caps = ClientCapabilities::default()
            .with_extension(EXTENSION_ID, UiClientCapability::html().to_settings());
        let ui = client_ui(&caps).unwrap();
        assert!(ui.supports_html());
        assert!(client_ui(&ClientCapabilities::default()).is_none());
        let other = ClientCapabilities::default().with_extension(EXTENSION_ID, JsonObject::new());
        assert!(!client_ui(&other).unwrap().supports_html());
    }
}
