//! Attribute macros for [duomcp](https://docs.rs/duomcp): `#[tool]`, `#[prompt]` and
//! `#[resource]`. Use them through `duomcp` (feature `macros`, on by default), not directly.
//!
//! Each attribute is sugar over the builder API. It leaves the function **unchanged** and adds,
//! next to it, an item of the same name in the type namespace whose `spec()` returns the
//! definition (name, description from the doc comment, title, annotations):
//!
//! ```
//! use duomcp::server::{Args, Server};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add { a: i64, b: i64 }
//!
//! /// Adds two integers.
//! #[duomcp::tool(title = "Adder", read_only)]
//! async fn add(Args(Add { a, b }): Args<Add>) -> String {
//!     (a + b).to_string()
//! }
//!
//! let spec = add::spec();
//! assert_eq!(spec.name(), "add");
//! let server = Server::builder().tool(add::spec(), add).build();
//! # let _ = server;
//! ```
//!
//! The added item is a hidden, field-less struct named like the function: the function lives in
//! the value namespace and the struct in the type namespace, so `add(…)` and `add::spec()` both
//! work, wherever the function is visible. Hence the attributes go on free functions (in a
//! module or a block), not on associated functions of an `impl` block, and nothing else in the
//! same scope may be a type or module of the function's name.
//!
//! It also emits hidden functions that restate the handler's bounds at the user's spans: an
//! argument that is not an extractor, a return type that does not convert, or a future that is
//! not `Send` is reported on that argument, that type or that function, not on `.tool(…)`.
//! They are never called and cost nothing at run time.
//!
//! Generated code names only `::duomcp::__private::…`; `crate = path` names duomcp elsewhere
//! (`#[tool(crate = ::my_duomcp)]`). `DUOMCP_MACROS_DEBUG=1` prints every expansion.

#![warn(missing_docs)]

mod apps;
mod args;
mod checks;
mod expand;

use expand::Kind;
use proc_macro::TokenStream;

/// Defines a tool: `#[tool]` on an `async fn` handler adds `name::spec()`, a `ToolSpec`.
///
/// ```
/// use duomcp::server::{Args, HandlerError, Json, Server};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Div {
///     /// The dividend.
///     a: f64,
///     /// The divisor; not zero.
///     b: f64,
/// }
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Quotient { value: f64 }
///
/// /// Divides `a` by `b`.
/// ///
/// /// Fails when `b` is zero.
/// #[duomcp::tool(name = "divide", title = "Divider", read_only, idempotent, open_world = false)]
/// async fn div(Args(Div { a, b }): Args<Div>) -> Result<Json<Quotient>, HandlerError> {
///     if b == 0.0 {
///         return Err(HandlerError::msg("division by zero"));
///     }
///     Ok(Json(Quotient { value: a / b }))
/// }
///
/// let spec = div::spec();
/// assert_eq!(spec.name(), "divide");
/// let server = Server::builder().tool(div::spec(), div).build();
/// # let _ = server;
/// ```
///
/// | argument | meaning |
/// |---|---|
/// | `name = "…"` | the tool's name (default: the function's name) |
/// | `title = "…"` | a human-readable title |
/// | `description = "…"` | overrides the doc comment |
/// | `read_only`, `destructive`, `idempotent`, `open_world` | annotation hints; `= false` to state the opposite |
/// | `scopes = ["a", "b"]` | OAuth scopes a caller must hold to call it (`ToolSpec::scopes`) |
/// | `ui = "ui://…"` | MCP Apps: the view that renders its results (`ToolSpec::ui`) |
/// | `visibility = ["app"]` | MCP Apps: who may call it, `"model"` and/or `"app"` (`ToolSpec::visibility`) |
/// | `crate = path` | where duomcp is, if not `::duomcp` |
///
/// The input schema comes from the handler's `Args<T>`, the output schema from a `Json<T>`
/// return type, exactly as with `ServerBuilder::tool`. The spec is a plain value:
/// `add::spec().title("…")` edits it before registration.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::run(Kind::Tool, attr.into(), item.into()).into()
}

/// Defines a prompt: `#[prompt]` on an `async fn` handler adds `name::spec()`, a `PromptSpec`.
///
/// ```
/// use duomcp::server::{Args, Server};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Review {
///     /// The code to review.
///     code: String,
/// }
///
/// /// Asks for a code review.
/// #[duomcp::prompt(title = "Code review")]
/// async fn review(Args(r): Args<Review>) -> String {
///     format!("Please review this code:\n\n{}", r.code)
/// }
///
/// let server = Server::builder().prompt(review::spec(), review).build();
/// # let _ = server;
/// ```
///
/// Arguments: `name`, `title`, `description`, `scopes` and `crate`, as for `#[tool]`. The prompt's
/// argument list comes from `Args<T>` (each field's doc comment is its description).
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::run(Kind::Prompt, attr.into(), item.into()).into()
}

/// Defines a resource or a resource template: `#[resource(uri = "…")]` adds `name::spec()`
/// returning a `Resource`; `#[resource(template = "…")]` one returning a `ResourceTemplate`.
///
/// ```
/// use duomcp::server::{Args, Server, Uri};
///
/// /// The project's readme.
/// #[duomcp::resource(uri = "file:///readme.md", mime_type = "text/markdown")]
/// async fn readme() -> String {
///     "# Hello".to_owned()
/// }
///
/// // A template's variables arrive as strings.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Note { id: String }
///
/// /// One note, by number.
/// #[duomcp::resource(template = "note://{id}", name = "note")]
/// async fn note(Uri(uri): Uri, Args(Note { id }): Args<Note>) -> String {
///     format!("{uri}: note {id}")
/// }
///
/// let server = Server::builder()
///     .resource(readme::spec(), readme)
///     .resource_template(note::spec(), note)
///     .build();
/// # let _ = server;
/// ```
///
/// Arguments: `uri` or `template` (exactly one), `name` (default: the function's name),
/// `title`, `description`, `mime_type` and `crate`.
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::run(Kind::Resource, attr.into(), item.into()).into()
}
