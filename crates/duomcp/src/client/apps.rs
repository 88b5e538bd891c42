//! MCP Apps (extension `io.modelcontextprotocol/ui`) from the host's side.
//!
//! * [`ClientBuilder::apps`] declares that the host renders HTML views
//!   (`extensions["io.modelcontextprotocol/ui"] = {"mimeTypes": ["text/html;profile=mcp-app"]}`,
//!   at `initialize` in 2025-11-25 and in every request's `_meta` in 2026-07-28). Declare it
//!   only when the host really renders them: servers answer in text otherwise.
//! * [`view_of`] gives the view a listed tool links to, [`ui_of`] its whole `_meta.ui`;
//!   [`Client::list_model_tools`] lists the tools a host may show its model (the extension:
//!   tools whose visibility leaves out `model` MUST NOT be).
//! * [`Client::read_view`] reads a `ui://` resource and returns its HTML and `_meta.ui`.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use duomcp::client::{apps, Client};
//! use duomcp::schema::apps::UiVisibility;
//! use duomcp::server::apps::View;
//! use duomcp::server::{Server, ToolSpec};
//!
//! let server = Server::builder()
//!     .view(View::html("ui://v/index.html", "<p>hi</p>").prefers_border(true))
//!     .tool(ToolSpec::new("show").ui("ui://v/index.html"), || async { "shown" })
//!     .tool(ToolSpec::new("poke").visibility([UiVisibility::App]), || async { "poked" })
//!     .build();
//! let (client_end, server_end) = tokio::io::duplex(64 * 1024);
//! let (sr, sw) = tokio::io::split(server_end);
//! tokio::spawn(server.serve_connection(sr, sw));
//! let (cr, cw) = tokio::io::split(client_end);
//! let client = Client::builder().apps().connect(cr, cw).await.unwrap();
//!
//! let tools = client.list_all_tools().await.unwrap();
//! assert_eq!(tools.len(), 2); // the host sees the app-only tool too, for its views
//! let model: Vec<_> = client.list_model_tools().await.unwrap();
//! assert_eq!(model.len(), 1);
//! let uri = apps::view_of(&model[0]).unwrap();
//! let view = client.read_view(&uri).await.unwrap();
//! assert_eq!(view.html, "<p>hi</p>");
//! assert_eq!(view.meta.prefers_border, Some(true));
//! # });
//! ```

use super::{Client, ClientBuilder, ClientError};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use duomcp_schema::apps as wire;
use duomcp_schema::{ResourceContents, Tool};

// The extension's wire types and constants are documented at `duomcp::schema::apps` (their
// one path); kept here so code naming them compiles.
#[doc(hidden)]
pub use duomcp_schema::apps::{
    UiClientCapability, UiResourceCsp, UiResourceMeta, UiResourcePermissions, UiToolMeta,
    UiVisibility, EXTENSION_ID, RESOURCE_MIME_TYPE,
};

/// A view as read: its HTML and `_meta.ui`.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewContents {
    /// The view's URI.
    pub uri: String,
    /// Its MIME type ([`RESOURCE_MIME_TYPE`]).
    pub mime_type: String,
    /// The HTML document (decoded when the server sent a base64 `blob`).
    pub html: String,
    /// The contents' `_meta.ui` (empty when absent).
    pub meta: UiResourceMeta,
}

/// The `ui://` view a listed tool links to (`_meta.ui.resourceUri`, or the deprecated
/// `_meta["ui/resourceUri"]`).
pub fn view_of(tool: &Tool) -> Option<String> {
    wire::tool_view_uri(tool)
}

/// A listed tool's `_meta.ui`.
pub fn ui_of(tool: &Tool) -> Option<UiToolMeta> {
    wire::tool_ui(tool)
}

/// Whether a host may show `tool` to its model (its visibility, absent or naming `model`).
pub fn model_visible(tool: &Tool) -> bool {
    wire::tool_model_visible(tool)
}

impl ClientBuilder {
    /// Declares that this host renders HTML views (MCP Apps): the extension
    /// `io.modelcontextprotocol/ui` with `mimeTypes: ["text/html;profile=mcp-app"]`.
    pub fn apps(self) -> Self {
        self.extension(EXTENSION_ID, UiClientCapability::html().to_settings())
    }
}

impl Client {
    /// Whether the server declares the MCP Apps extension.
    pub fn offers_apps(&self) -> bool {
        self.server_capabilities().has_extension(EXTENSION_ID)
    }

    /// Every tool a host may show its model: [`list_all_tools`](Client::list_all_tools) without
    /// the ones only views may call.
    pub async fn list_model_tools(&self) -> Result<Vec<Tool>, ClientError> {
        let mut tools = self.list_all_tools().await?;
        tools.retain(model_visible);
        Ok(tools)
    }

    /// Reads the view `uri`: the contents of type [`RESOURCE_MIME_TYPE`], as HTML, with their
    /// `_meta.ui`. A result without such contents is a [`ClientError::Protocol`] error (the
    /// extension requires the MIME type).
    pub async fn read_view(&self, uri: &str) -> Result<ViewContents, ClientError> {
        let result = self.read_resource(uri).await?;
        let contents = result
            .contents
            .iter()
            .find(|c| c.mime_type() == Some(RESOURCE_MIME_TYPE))
            .ok_or_else(|| {
                ClientError::Protocol(format!(
                    "{uri} has no contents of type {RESOURCE_MIME_TYPE}"
                ))
            })?;
        let html = match contents {
            ResourceContents::Text(t) => t.text.clone(),
            ResourceContents::Blob(b) => {
                let bytes = STANDARD.decode(&b.blob).map_err(|e| {
                    ClientError::Protocol(format!("{uri}: the view's blob is not base64: {e}"))
                })?;
                String::from_utf8(bytes).map_err(|_| {
                    ClientError::Protocol(format!("{uri}: the view's blob is not UTF-8 HTML"))
                })?
            }
        };
        Ok(ViewContents {
            uri: contents.uri().to_owned(),
            mime_type: RESOURCE_MIME_TYPE.to_owned(),
            html,
            meta: wire::contents_ui(contents).unwrap_or_default(),
        })
    }
}
