//! MCP Apps (extension `io.modelcontextprotocol/ui`): tools that come with an interactive
//! HTML view, which the host renders in a sandboxed iframe.
//!
//! * A [`View`] is a `ui://` resource served with MIME type [`RESOURCE_MIME_TYPE`] and its
//!   `_meta.ui` ([`UiResourceMeta`]: content security policy domains, sandbox permissions,
//!   dedicated domain, border preference), on its `resources/list` entry and on its
//!   `resources/read` contents. Its HTML comes from memory ([`View::html`]), a file
//!   ([`View::file`], read at every `resources/read`) or a directory ([`View::dir`]:
//!   `index.html` with the local scripts, stylesheets and images it references inlined, as
//!   the host's sandbox cannot fetch them).
//! * [`ToolSpec::ui`] links a tool to its view (`_meta.ui.resourceUri`, and the deprecated
//!   flat `_meta["ui/resourceUri"]` older hosts read), [`ToolSpec::visibility`] says who may
//!   call it: `[App]` makes a tool only the view calls (a refresh button).
//! * The server declares the extension (`capabilities.extensions`) once a view or a tool
//!   with a view is registered, in both revisions.
//! * [`Context::ui`] / [`Context::renders_views`] tell a tool whether the host renders views
//!   (`extensions["io.modelcontextprotocol/ui"].mimeTypes`, from `initialize` in 2025-11-25
//!   and from the request's `_meta` in 2026-07-28), so it can answer in text otherwise.
//!
//! Tools whose visibility leaves out `model` stay in `tools/list` for hosts that declared
//! the extension: the extension makes it the host's duty not to show them to its model (and
//! the host needs the listing to let its views call them). A client that did not declare the
//! extension cannot run views and would show every listed tool to its model, so for it such
//! tools are left out of `tools/list`.
//!
//! ```
//! use duomcp::schema::apps::UiVisibility;
//! use duomcp::server::apps::View;
//! use duomcp::server::{Context, Server, ToolSpec};
//!
//! let view = View::html("ui://clock/view.html", "<!doctype html><p id=t></p>")
//!     .prefers_border(true)
//!     .connect_domains(["https://time.example.com"]);
//! let server = Server::builder()
//!     .view(view)
//!     .tool(ToolSpec::new("clock").ui("ui://clock/view.html"), |ctx: Context| async move {
//!         if ctx.renders_views() { "12:00 (see the view)" } else { "12:00" }
//!     })
//!     .tool(
//!         ToolSpec::new("tick").ui("ui://clock/view.html").visibility([UiVisibility::App]),
//!         || async { "tick" },
//!     )
//!     .build();
//! # let _ = server;
//! ```

mod inline;

// The extension's wire types and constants are documented at `duomcp::schema::apps` (their
// one path); kept here so code naming them compiles.
#[doc(hidden)]
pub use duomcp_schema::apps::{
    UiClientCapability, UiResourceCsp, UiResourceMeta, UiResourcePermissions, UiToolMeta,
    UiVisibility, EXTENSION_ID, RESOURCE_MIME_TYPE, RESOURCE_URI_META_KEY, URI_SCHEME,
};
pub use inline::{ViewError, MAX_VIEW_BYTES};

use super::registry::Registry;
use super::{Context, HandlerError, ResourceSpec, Server, ServerBuilder, ToolSpec};
use duomcp_schema::apps as wire;
use duomcp_schema::{
    ClientCapabilities, JsonObject, ReadResourceResult, Resource, ResourceContents,
    TextResourceContents, Tool,
};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

/// Where a view's HTML comes from.
#[derive(Debug, Clone)]
enum Source {
    Memory(Arc<str>),
    File(PathBuf),
    Dir(PathBuf),
}

/// A view: a `ui://` resource holding an HTML document, with its `_meta.ui`.
///
/// ```
/// use duomcp::server::apps::View;
/// let view = View::dir("ui://board/index.html", "assets/board")
///     .name("Board")
///     .resource_domains(["https://cdn.example.com"])
///     .camera()
///     .domain("board.example.com")
///     .prefers_border(false);
/// assert_eq!(view.uri(), "ui://board/index.html");
/// ```
#[derive(Debug, Clone)]
pub struct View {
    resource: Resource,
    meta: UiResourceMeta,
    source: Source,
}

impl View {
    fn new(uri: impl Into<String>, source: Source) -> View {
        let uri = uri.into();
        let mut resource = Resource::new(uri.clone(), uri);
        resource.mime_type = Some(RESOURCE_MIME_TYPE.to_owned());
        View {
            resource,
            meta: UiResourceMeta::default(),
            source,
        }
    }

    /// A view whose HTML is `html`.
    pub fn html(uri: impl Into<String>, html: impl Into<String>) -> View {
        let html: String = html.into();
        View::new(uri, Source::Memory(html.into()))
    }

    /// A view read from the file `path` at every `resources/read` (at most
    /// [`MAX_VIEW_BYTES`]); a bundler's single-file output, for instance.
    pub fn file(uri: impl Into<String>, path: impl Into<PathBuf>) -> View {
        View::new(uri, Source::File(path.into()))
    }

    /// A view from the directory `dir`: its `index.html`, with the local
    /// `<script src>`, `<link rel="stylesheet" href>` and `<img src>` it references inlined
    /// (scripts and styles as text, images as `data:` URLs), read at every `resources/read`.
    /// References that climb out of `dir` are refused; URLs with a scheme are left alone
    /// (list their origins in [`resource_domains`](Self::resource_domains)).
    pub fn dir(uri: impl Into<String>, dir: impl Into<PathBuf>) -> View {
        View::new(uri, Source::Dir(dir.into()))
    }

    /// The view's URI.
    pub fn uri(&self) -> &str {
        &self.resource.uri
    }

    /// The resource's name in `resources/list` (default: the URI).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.resource.name = name.into();
        self
    }

    /// A human-readable title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.resource.title = Some(title.into());
        self
    }

    /// What the view shows.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.resource.description = Some(text.into());
        self
    }

    /// The whole `_meta.ui`, replacing what the other setters set.
    pub fn meta(mut self, meta: UiResourceMeta) -> Self {
        self.meta = meta;
        self
    }

    fn csp(&mut self) -> &mut UiResourceCsp {
        self.meta.csp.get_or_insert_with(Default::default)
    }

    /// Origins the view may fetch from or open sockets to (`csp.connectDomains`).
    pub fn connect_domains<I: IntoIterator<Item = S>, S: Into<String>>(mut self, d: I) -> Self {
        self.csp().connect_domains = Some(d.into_iter().map(Into::into).collect());
        self
    }

    /// Origins of scripts, styles, images, fonts and media (`csp.resourceDomains`).
    pub fn resource_domains<I: IntoIterator<Item = S>, S: Into<String>>(mut self, d: I) -> Self {
        self.csp().resource_domains = Some(d.into_iter().map(Into::into).collect());
        self
    }

    /// Origins of nested iframes (`csp.frameDomains`).
    pub fn frame_domains<I: IntoIterator<Item = S>, S: Into<String>>(mut self, d: I) -> Self {
        self.csp().frame_domains = Some(d.into_iter().map(Into::into).collect());
        self
    }

    /// Allowed base URIs (`csp.baseUriDomains`).
    pub fn base_uri_domains<I: IntoIterator<Item = S>, S: Into<String>>(mut self, d: I) -> Self {
        self.csp().base_uri_domains = Some(d.into_iter().map(Into::into).collect());
        self
    }

    fn permissions(&mut self) -> &mut UiResourcePermissions {
        self.meta.permissions.get_or_insert_with(Default::default)
    }

    /// Asks for camera access (`permissions.camera`).
    pub fn camera(mut self) -> Self {
        self.permissions().camera = Some(JsonObject::new());
        self
    }

    /// Asks for microphone access (`permissions.microphone`).
    pub fn microphone(mut self) -> Self {
        self.permissions().microphone = Some(JsonObject::new());
        self
    }

    /// Asks for geolocation (`permissions.geolocation`).
    pub fn geolocation(mut self) -> Self {
        self.permissions().geolocation = Some(JsonObject::new());
        self
    }

    /// Asks for clipboard write access (`permissions.clipboardWrite`).
    pub fn clipboard_write(mut self) -> Self {
        self.permissions().clipboard_write = Some(JsonObject::new());
        self
    }

    /// A dedicated sandbox origin (`domain`; its format is host-specific).
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.meta.domain = Some(domain.into());
        self
    }

    /// Whether the view wants a visible border and background (`prefersBorder`).
    pub fn prefers_border(mut self, border: bool) -> Self {
        self.meta.prefers_border = Some(border);
        self
    }

    /// The `resources/list` entry: `mimeType` and `_meta.ui` set.
    pub fn resource(&self) -> Resource {
        let mut r = self.resource.clone();
        if !self.meta.is_empty() {
            wire::set_ui(&mut r.meta, &self.meta);
        }
        r
    }

    /// The HTML document, loaded from its source.
    pub async fn load(&self) -> Result<String, ViewError> {
        match &self.source {
            Source::Memory(html) => Ok(html.to_string()),
            Source::File(path) => {
                let bytes = inline::read_bounded(path).await?;
                String::from_utf8(bytes).map_err(|_| ViewError::NotText(path.clone()))
            }
            Source::Dir(dir) => inline::inline_dir(dir).await,
        }
    }

    /// The `resources/read` result: the HTML as text with `mimeType` and `_meta.ui`.
    pub async fn read(&self) -> Result<ReadResourceResult, ViewError> {
        let mut contents = TextResourceContents::new(self.resource.uri.clone(), self.load().await?);
        contents.mime_type = Some(RESOURCE_MIME_TYPE.to_owned());
        if !self.meta.is_empty() {
            wire::set_ui(&mut contents.meta, &self.meta);
        }
        Ok(ReadResourceResult::new(vec![ResourceContents::Text(
            contents,
        )]))
    }

    /// The registration: the resource and a handler that reads the view.
    fn entry(
        self,
    ) -> (
        ResourceSpec,
        impl Fn() -> ViewRead + Clone + Send + Sync + 'static,
    ) {
        if !self.resource.uri.starts_with(URI_SCHEME) {
            tracing::warn!(uri = %self.resource.uri, "an MCP Apps view URI must start with ui://");
        }
        let spec = ResourceSpec::new(self.resource());
        let view = Arc::new(self);
        let read = move || {
            let view = view.clone();
            let fut: ViewRead = Box::pin(async move {
                view.read().await.map_err(|e| {
                    tracing::warn!(uri = %view.resource.uri, "view not served: {e}");
                    HandlerError::msg(e.to_string())
                })
            });
            fut
        };
        (spec, read)
    }
}

type ViewRead = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<ReadResourceResult, HandlerError>> + Send>,
>;

impl ServerBuilder {
    /// Serves a view (MCP Apps): a `ui://` resource of type [`RESOURCE_MIME_TYPE`] with its
    /// `_meta.ui`. Declares the `io.modelcontextprotocol/ui` extension and the `resources`
    /// capability. See [`apps`](crate::server::apps).
    pub fn view(self, view: View) -> Self {
        let (spec, read) = view.entry();
        self.resource(spec, read)
    }
}

impl Server {
    /// Adds (or replaces) a view at run time; clients are told the resource list changed.
    pub fn add_view(&self, view: View) {
        let (spec, read) = view.entry();
        self.add_resource(spec, read);
    }
}

impl ToolSpec {
    /// Links the tool to its view: `_meta.ui.resourceUri` (and the deprecated flat
    /// `_meta["ui/resourceUri"]`, which hosts of the first releases read). A host that renders
    /// views shows the tool's results in it.
    ///
    /// ```
    /// use duomcp::server::ToolSpec;
    /// let spec = ToolSpec::new("show").ui("ui://board/index.html");
    /// # let _ = spec;
    /// ```
    pub fn ui(self, uri: impl Into<String>) -> Self {
        let uri: String = uri.into();
        self.with(|tool| {
            let mut ui = wire::tool_ui(tool).unwrap_or_default();
            ui.resource_uri = Some(uri.clone());
            wire::set_ui(&mut tool.meta, &ui);
            if let Some(meta) = tool.meta.as_mut() {
                meta.insert(RESOURCE_URI_META_KEY.to_owned(), Value::String(uri));
            }
        })
    }

    /// Who may call the tool (`_meta.ui.visibility`; absent means model and app). `[App]`:
    /// only views call it, hosts keep it from their model.
    ///
    /// ```
    /// use duomcp::schema::apps::UiVisibility;
    /// use duomcp::server::ToolSpec;
    /// let spec = ToolSpec::new("refresh").visibility([UiVisibility::App]);
    /// # let _ = spec;
    /// ```
    pub fn visibility(self, who: impl IntoIterator<Item = UiVisibility>) -> Self {
        let who: Vec<UiVisibility> = who.into_iter().collect();
        self.with(|tool| {
            let mut ui = wire::tool_ui(tool).unwrap_or_default();
            ui.visibility = Some(who);
            wire::set_ui(&mut tool.meta, &ui);
        })
    }
}

impl Context {
    /// What the client declared for MCP Apps (`extensions["io.modelcontextprotocol/ui"]`), if
    /// it declared it: at `initialize` in 2025-11-25, in this request's `_meta` in 2026-07-28.
    pub fn ui(&self) -> Option<UiClientCapability> {
        wire::client_ui(self.client_capabilities())
    }

    /// Whether the host renders HTML views ([`RESOURCE_MIME_TYPE`] among its `mimeTypes`):
    /// when not, a tool with a view should say everything in its text content.
    pub fn renders_views(&self) -> bool {
        self.ui().is_some_and(|ui| ui.supports_html())
    }
}

/// Whether anything registered belongs to the extension (a `ui://` resource or a tool with
/// `_meta.ui`): then the server declares it.
pub(crate) fn offered(reg: &Registry) -> bool {
    reg.resources.keys().any(|uri| uri.starts_with(URI_SCHEME))
        || reg.tools.values().any(|e| wire::tool_ui(&e.tool).is_some())
}

/// Declares the extension in `extensions` when [`offered`].
pub(crate) fn declare(reg: &Registry, extensions: &mut serde_json::Map<String, Value>) {
    if offered(reg) {
        extensions.insert(EXTENSION_ID.into(), Value::Object(JsonObject::new()));
    }
}

/// Whether `tools/list` shows `tool` to this client: a tool only views may call is left out
/// for clients that did not declare the extension (they have no views, and would show it to
/// their model).
pub(crate) fn listed_for(tool: &Tool, client: &ClientCapabilities) -> bool {
    wire::tool_model_visible(tool) || wire::client_ui(client).is_some()
}
