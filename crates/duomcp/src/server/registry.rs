//! What a server offers: tools, prompts, resources, templates and completion, by name.

use super::handler::{
    CallParts, Handler, IntoPromptResult, IntoReadResult, IntoToolResult, ToolOutput,
};
use super::uri_template::UriTemplate;
use super::HandlerError;
use duomcp_schema::{
    CallToolResult, CompleteRequestParams, CompleteResult, GetPromptResult, Prompt, PromptArgument,
    ReadResourceResult, Resource, ResourceTemplate, Tool,
};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
type Erased<T> = Arc<dyn Fn(CallParts) -> BoxFuture<Result<T, HandlerError>> + Send + Sync>;
pub(crate) type CompletionFn = Arc<
    dyn Fn(CompleteRequestParams, super::Context) -> BoxFuture<Result<CompleteResult, HandlerError>>
        + Send
        + Sync,
>;

use crate::schema_check::SchemaCheck;

pub(crate) struct ToolEntry {
    pub tool: Tool,
    pub call: Erased<ToolOutput>,
    pub input: SchemaCheck,
    pub output: Option<SchemaCheck>,
    /// OAuth scopes a caller needs (checked before the handler runs).
    pub scopes: Vec<String>,
    /// The task starts when the handler calls `Context::detach`, not before it runs.
    pub deferred_task: bool,
    /// The input schema's `x-mcp-header` annotations, read once: (header name part, property
    /// path). The 2026-07-28 HTTP transport compares each with its `Mcp-Param-*` header.
    #[cfg_attr(not(feature = "http-server"), allow(dead_code))]
    pub param_headers: Vec<(String, Vec<String>)>,
}

pub(crate) struct PromptEntry {
    pub prompt: Prompt,
    pub get: Erased<GetPromptResult>,
    pub scopes: Vec<String>,
}

pub(crate) struct ResourceEntry {
    pub resource: Resource,
    pub read: Erased<ReadResourceResult>,
    pub scopes: Vec<String>,
}

pub(crate) struct TemplateEntry {
    pub template: ResourceTemplate,
    pub matcher: Option<UriTemplate>,
    pub read: Erased<ReadResourceResult>,
    pub scopes: Vec<String>,
}

#[derive(Default, Clone)]
pub(crate) struct Registry {
    pub tools: BTreeMap<String, Arc<ToolEntry>>,
    pub prompts: BTreeMap<String, Arc<PromptEntry>>,
    pub resources: BTreeMap<String, Arc<ResourceEntry>>,
    pub templates: Vec<Arc<TemplateEntry>>,
    pub completion: Option<CompletionFn>,
}

/// A tool's definition: name, description, schemas and annotations.
///
/// A `&str` converts into a spec with just a name; the input schema then comes from the
/// handler's [`Args<T>`](crate::server::Args), the output schema from a
/// [`Json<T>`](crate::server::Json) return type.
///
/// ```
/// use duomcp::server::ToolSpec;
/// let spec = ToolSpec::new("add").description("Add two numbers").title("Adder");
/// assert_eq!(spec.name(), "add");
/// ```
#[derive(Debug, Clone)]
pub struct ToolSpec {
    tool: Tool,
    input_set: bool,
    output_set: bool,
    scopes: Vec<String>,
    deferred_task: bool,
}

impl ToolSpec {
    /// A tool named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        let mut schema = Map::new();
        schema.insert("type".into(), Value::from("object"));
        ToolSpec {
            tool: Tool::new(name, schema),
            input_set: false,
            output_set: false,
            scopes: Vec::new(),
            deferred_task: false,
        }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.tool.name
    }

    /// What the tool does, for the model.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.tool.description = Some(text.into());
        self
    }

    /// A human-readable title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.tool.title = Some(title.into());
        self
    }

    /// An explicit `inputSchema` (must be a JSON object schema); overrides the one from `Args<T>`.
    pub fn input_schema(mut self, schema: Value) -> Self {
        if let Value::Object(map) = schema {
            self.tool.input_schema = map;
            self.input_set = true;
        }
        self
    }

    /// An explicit `outputSchema`; overrides the one from a `Json<T>` return type.
    pub fn output_schema(mut self, schema: Value) -> Self {
        if let Value::Object(map) = schema {
            self.tool.output_schema = Some(map);
            self.output_set = true;
        }
        self
    }

    /// Behaviour hints (read-only, destructive, idempotent, open-world).
    pub fn annotations(mut self, annotations: duomcp_schema::ToolAnnotations) -> Self {
        self.tool.annotations = Some(annotations);
        self
    }

    /// Whether the tool may run as a task (`execution.taskSupport`, default `forbidden`).
    ///
    /// * `Optional`: a task when the client can take one (2025-11-25: it sent `params.task`;
    ///   2026-07-28: it declared `io.modelcontextprotocol/tasks`), inline otherwise.
    /// * `Required`: only as a task; other calls are refused (2025-11-25 `-32601`, 2026-07-28
    ///   `-32021` naming the extension).
    ///
    /// The handler is the same either way; see [`tasks`](crate::server::tasks).
    ///
    /// ```
    /// use duomcp::schema::TaskSupport;
    /// use duomcp::server::ToolSpec;
    /// let spec = ToolSpec::new("render").task_support(TaskSupport::Required);
    /// # let _ = spec;
    /// ```
    pub fn task_support(mut self, support: duomcp_schema::TaskSupport) -> Self {
        self.tool
            .execution
            .get_or_insert_with(Default::default)
            .task_support = Some(support);
        self
    }

    /// Shorthand for [`task_support`](Self::task_support)`(TaskSupport::Optional)`: a task
    /// when the client can take one, inline otherwise.
    pub fn long_running(self) -> Self {
        self.task_support(duomcp_schema::TaskSupport::Optional)
    }

    /// In 2026-07-28, starts the task only when the handler calls
    /// [`Context::detach`](crate::server::Context::detach), so it can first gather input in
    /// ordinary MRTR rounds (`InputRequiredResult`); a handler that returns without detaching
    /// answers inline. 2025-11-25 task calls are tasks from the start (the client asked).
    ///
    /// ```
    /// use duomcp::schema::TaskSupport;
    /// use duomcp::server::ToolSpec;
    /// let spec = ToolSpec::new("book_trip").task_support(TaskSupport::Required).defer_task();
    /// # let _ = spec;
    /// ```
    pub fn defer_task(mut self) -> Self {
        self.deferred_task = true;
        self
    }

    /// Edits the underlying [`Tool`] for fields without a dedicated method (icons, `_meta`…).
    pub fn with(mut self, edit: impl FnOnce(&mut Tool)) -> Self {
        edit(&mut self.tool);
        self
    }

    /// OAuth scopes a caller must hold to call the tool. The runtime checks them before the
    /// handler runs and refuses with `403` and an `insufficient_scope` challenge naming them
    /// all (see [`auth`](crate::auth)); a request without an authenticated caller is refused.
    ///
    /// ```
    /// use duomcp::server::ToolSpec;
    /// let spec = ToolSpec::new("write_file").scopes(["files:write"]);
    /// # let _ = spec;
    /// ```
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scope_list(scopes);
        self
    }
}

impl From<&str> for ToolSpec {
    fn from(name: &str) -> Self {
        ToolSpec::new(name)
    }
}

impl From<String> for ToolSpec {
    fn from(name: String) -> Self {
        ToolSpec::new(name)
    }
}

impl From<Tool> for ToolSpec {
    fn from(tool: Tool) -> Self {
        let output_set = tool.output_schema.is_some();
        ToolSpec {
            tool,
            input_set: true,
            output_set,
            scopes: Vec::new(),
            deferred_task: false,
        }
    }
}

/// The `_meta` key (`true`) of a listed tool registered with [`ToolSpec::defer_task`]: a duomcp
/// extension, so that a gateway relaying a 2025-11-25 listing (which has no word for it) can
/// defer the task too. Clients that do not know it ignore it.
pub const DEFER_TASK_META: &str = "io.duomcp/deferTask";

pub(crate) fn tool_entry<H, T>(spec: ToolSpec, handler: H) -> ToolEntry
where
    H: Handler<T>,
    H::Output: IntoToolResult,
{
    let ToolSpec {
        mut tool,
        input_set,
        output_set,
        scopes,
        deferred_task,
    } = spec;
    if !input_set {
        if let Some(schema) = H::input_schema() {
            tool.input_schema = schema;
        }
    }
    if !output_set {
        if let Some(schema) = <H::Output as IntoToolResult>::output_schema() {
            tool.output_schema = Some(schema);
        }
    }
    if deferred_task {
        // Says so in the list (a duomcp extension key): a gateway serving this tool to
        // 2026-07-28 clients from a 2025-11-25 listing, which cannot say it, defers too.
        tool.meta
            .get_or_insert_with(Default::default)
            .insert(DEFER_TASK_META.into(), serde_json::Value::Bool(true));
    }
    let input = SchemaCheck::from_map(&tool.input_schema);
    let output = tool.output_schema.as_ref().map(SchemaCheck::from_map);
    for (what, compiled) in [("input", Some(&input)), ("output", output.as_ref())] {
        if let Some(e) = compiled.and_then(SchemaCheck::compile_error) {
            tracing::warn!(tool = %tool.name, "the tool's {what} schema does not compile: {e}");
        }
    }
    let call: Erased<ToolOutput> = Arc::new(move |parts| {
        let fut = handler.call(parts);
        Box::pin(async move {
            match fut.await {
                Ok(out) => out.into_tool_output(),
                Err(rejection) => Ok(CallToolResult::from(rejection).into()),
            }
        })
    });
    ToolEntry {
        param_headers: annotated_params(&tool.input_schema),
        tool,
        call,
        input,
        output,
        scopes,
        deferred_task,
    }
}

/// `x-mcp-header` annotations of an input schema: (header name part, property path).
pub(crate) fn annotated_params(schema: &Map<String, Value>) -> Vec<(String, Vec<String>)> {
    fn walk(
        schema: &Map<String, Value>,
        path: &mut Vec<String>,
        out: &mut Vec<(String, Vec<String>)>,
    ) {
        let Some(Value::Object(props)) = schema.get("properties") else {
            return;
        };
        for (key, prop) in props {
            let Value::Object(prop) = prop else { continue };
            path.push(key.clone());
            if let Some(Value::String(header)) = prop.get("x-mcp-header") {
                out.push((header.clone(), path.clone()));
            }
            walk(prop, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(schema, &mut Vec::new(), &mut out);
    out
}

/// A prompt's definition. Arguments come from the handler's `Args<T>` unless given here.
///
/// ```
/// use duomcp::server::PromptSpec;
/// let spec = PromptSpec::new("greet").description("Greets someone").argument("name", "Who to greet", true);
/// assert_eq!(spec.name(), "greet");
/// ```
#[derive(Debug, Clone)]
pub struct PromptSpec {
    prompt: Prompt,
    arguments_set: bool,
    scopes: Vec<String>,
}

impl PromptSpec {
    /// A prompt named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        PromptSpec {
            prompt: Prompt::new(name),
            arguments_set: false,
            scopes: Vec::new(),
        }
    }

    /// The prompt's name.
    pub fn name(&self) -> &str {
        &self.prompt.name
    }

    /// What the prompt is for.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.prompt.description = Some(text.into());
        self
    }

    /// A human-readable title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.prompt.title = Some(title.into());
        self
    }

    /// Declares an argument explicitly (then `Args<T>` does not add any).
    pub fn argument(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        required: bool,
    ) -> Self {
        let mut arg = PromptArgument::new(name);
        arg.description = Some(description.into());
        arg.required = Some(required);
        self.prompt.arguments.get_or_insert_with(Vec::new).push(arg);
        self.arguments_set = true;
        self
    }

    /// OAuth scopes a caller must hold to get the prompt (see [`ToolSpec::scopes`]).
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scope_list(scopes);
        self
    }
}

impl From<&str> for PromptSpec {
    fn from(name: &str) -> Self {
        PromptSpec::new(name)
    }
}

impl From<Prompt> for PromptSpec {
    fn from(prompt: Prompt) -> Self {
        PromptSpec {
            prompt,
            arguments_set: true,
            scopes: Vec::new(),
        }
    }
}

/// Prompt arguments derived from an object schema's `properties` and `required`.
fn arguments_from_schema(schema: &Map<String, Value>) -> Vec<PromptArgument> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(name, prop)| {
            let mut arg = PromptArgument::new(name.clone());
            arg.description = prop
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned);
            arg.required = Some(required.contains(&name.as_str()));
            arg
        })
        .collect()
}

pub(crate) fn prompt_entry<H, T>(spec: PromptSpec, handler: H) -> PromptEntry
where
    H: Handler<T>,
    H::Output: IntoPromptResult,
{
    let PromptSpec {
        mut prompt,
        arguments_set,
        scopes,
    } = spec;
    if !arguments_set {
        if let Some(schema) = H::input_schema() {
            let args = arguments_from_schema(&schema);
            if !args.is_empty() {
                prompt.arguments = Some(args);
            }
        }
    }
    let get: Erased<GetPromptResult> = Arc::new(move |parts| {
        let fut = handler.call(parts);
        Box::pin(async move {
            match fut.await {
                Ok(out) => out.into_prompt_result(),
                Err(rejection) => Err(rejection.into()),
            }
        })
    });
    PromptEntry {
        prompt,
        get,
        scopes,
    }
}

fn read_fn<H, T>(handler: H) -> Erased<ReadResourceResult>
where
    H: Handler<T>,
    H::Output: IntoReadResult,
{
    Arc::new(move |parts: CallParts| {
        let uri = parts.uri.clone().unwrap_or_default();
        let fut = handler.call(parts);
        Box::pin(async move {
            match fut.await {
                Ok(out) => out.into_read_result(&uri),
                Err(rejection) => Err(rejection.into()),
            }
        })
    })
}

/// A definition plus the OAuth scopes a caller must hold to use it: [`ResourceSpec`] and
/// [`TemplateSpec`]. The bare definition converts into a spec needing no scope.
///
/// ```
/// use duomcp::schema::Resource;
/// use duomcp::server::ResourceSpec;
/// let spec = ResourceSpec::new(Resource::new("file:///secret", "secret")).scopes(["files:read"]);
/// # let _ = spec;
/// ```
#[derive(Debug, Clone)]
pub struct Scoped<T> {
    item: T,
    scopes: Vec<String>,
}

/// A resource's definition plus the OAuth scopes a caller needs to read it.
pub type ResourceSpec = Scoped<Resource>;

/// A resource template's definition plus the OAuth scopes a caller needs to read through it.
pub type TemplateSpec = Scoped<ResourceTemplate>;

impl<T> Scoped<T> {
    /// A spec for `item`, usable by anyone.
    pub fn new(item: T) -> Self {
        Scoped {
            item,
            scopes: Vec::new(),
        }
    }

    /// OAuth scopes a caller must hold to read it (see [`ToolSpec::scopes`]). For a template,
    /// `{name}` in a scope is the value the URI gave the variable `name`
    /// (`"notes:read:{owner}"` on `notes://{owner}/today`, read at `notes://alice/today`,
    /// needs `notes:read:alice`; a character a scope cannot hold is percent-encoded).
    ///
    /// ```
    /// use duomcp::schema::ResourceTemplate;
    /// use duomcp::server::TemplateSpec;
    /// let spec = TemplateSpec::new(ResourceTemplate::new("notes://{owner}/today", "today"))
    ///     .scopes(["notes:read", "notes:read:{owner}"]);
    /// # let _ = spec;
    /// ```
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scope_list(scopes);
        self
    }
}

impl From<Resource> for ResourceSpec {
    fn from(resource: Resource) -> Self {
        Scoped::new(resource)
    }
}

impl From<ResourceTemplate> for TemplateSpec {
    fn from(template: ResourceTemplate) -> Self {
        Scoped::new(template)
    }
}

/// What the `scopes` setters store.
fn scope_list<I, S>(scopes: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    scopes.into_iter().map(Into::into).collect()
}

pub(crate) fn resource_entry<H, T>(spec: ResourceSpec, handler: H) -> ResourceEntry
where
    H: Handler<T>,
    H::Output: IntoReadResult,
{
    ResourceEntry {
        resource: spec.item,
        read: read_fn(handler),
        scopes: spec.scopes,
    }
}

pub(crate) fn template_entry<H, T>(spec: TemplateSpec, handler: H) -> TemplateEntry
where
    H: Handler<T>,
    H::Output: IntoReadResult,
{
    let Scoped {
        item: template,
        scopes,
    } = spec;
    let matcher = UriTemplate::parse(&template.uri_template);
    if matcher.is_none() {
        tracing::warn!(template = %template.uri_template, "resource template does not parse; it will match nothing");
    }
    TemplateEntry {
        template,
        matcher,
        read: read_fn(handler),
        scopes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_annotations_through_properties_only() {
        let schema = json!({
            "type": "object",
            "properties": {
                "region": { "type": "string", "x-mcp-header": "Region" },
                "query": { "type": "string" },
                "opts": { "type": "object", "properties": { "tenant": { "type": "integer", "x-mcp-header": "Tenant" } } },
                "list": { "type": "array", "items": { "type": "string", "x-mcp-header": "Nope" } }
            }
        });
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        let mut found = annotated_params(&schema);
        found.sort();
        assert_eq!(
            found,
            vec![
                ("Region".to_owned(), vec!["region".to_owned()]),
                (
                    "Tenant".to_owned(),
                    vec!["opts".to_owned(), "tenant".to_owned()]
                )
            ]
        );
    }
}
