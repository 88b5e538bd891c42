//! Handlers are plain async functions whose arguments are extracted by type, axum style.
//!
//! Any `async fn` whose arguments all implement [`FromCallParts`] is a [`Handler`]; its return
//! type decides what it can serve: [`IntoToolResult`] for tools, [`IntoPromptResult`] for
//! prompts, [`IntoReadResult`] for resources.

use super::context::Context;
use super::rejection::ExtractRejection;
use super::HandlerError;
use duomcp_schema::{
    CallToolResult, ContentBlock, GetPromptResult, PromptMessage, ReadResourceResult,
    ResourceContents, TextResourceContents,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::any::TypeId;
use std::future::Future;

/// What extractors read from: the request's context and its arguments.
pub struct CallParts {
    pub(crate) ctx: Context,
    /// Tool arguments, prompt arguments, or URI-template variables (a JSON object).
    pub(crate) args: Value,
    /// The URI being read (resources only).
    pub(crate) uri: Option<String>,
}

/// A type a handler can take as an argument.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a handler argument",
    note = "handler arguments must implement `FromCallParts`: `Context`, `Args<T>`, `State<T>` or `Uri`"
)]
pub trait FromCallParts: Sized + Send + 'static {
    /// Extracts the value, or explains why not.
    fn from_call_parts(parts: &CallParts) -> Result<Self, ExtractRejection>;

    /// Extracts the value as the handler's last argument, which may take what it needs out of
    /// `parts` rather than copy it (as axum's last extractor takes the body): `Args<Value>`
    /// takes the arguments. Default: [`from_call_parts`](Self::from_call_parts).
    fn from_call_parts_last(parts: CallParts) -> Result<Self, ExtractRejection> {
        Self::from_call_parts(&parts)
    }

    /// The JSON Schema of the arguments this extractor consumes, if it consumes any.
    fn input_schema() -> Option<Map<String, Value>> {
        None
    }

    /// The registered state this extractor needs (its type and type name), so that
    /// [`ServerBuilder::build`](crate::server::ServerBuilder::build) can refuse a server whose
    /// handlers need state nobody registered, before any call. `State<T>` says `T`.
    fn required_state() -> Option<(TypeId, &'static str)> {
        None
    }
}

impl FromCallParts for Context {
    fn from_call_parts(parts: &CallParts) -> Result<Self, ExtractRejection> {
        Ok(parts.ctx.clone())
    }
}

/// Typed arguments: a tool's `arguments`, a prompt's `arguments`, or a template's variables.
///
/// `T`'s JSON Schema (from `schemars`) becomes the tool's `inputSchema`, or the prompt's
/// argument list.
///
/// ```
/// use duomcp::server::Args;
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Add { a: i64, b: i64 }
/// async fn add(Args(Add { a, b }): Args<Add>) -> String {
///     (a + b).to_string()
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Args<T>(pub T);

impl<T: DeserializeOwned + JsonSchema + Send + 'static> FromCallParts for Args<T> {
    fn from_call_parts(parts: &CallParts) -> Result<Self, ExtractRejection> {
        match Self::as_value(|| parts.args.clone()) {
            Some(args) => Ok(args),
            None => Self::deserialized(parts),
        }
    }

    fn from_call_parts_last(mut parts: CallParts) -> Result<Self, ExtractRejection> {
        // The last argument: `Args<Value>` takes the arguments, no clone.
        match Self::as_value(|| std::mem::take(&mut parts.args)) {
            Some(args) => Ok(args),
            None => Self::deserialized(&parts),
        }
    }

    fn input_schema() -> Option<Map<String, Value>> {
        Some(schema_object::<T>())
    }
}

impl<T: DeserializeOwned + JsonSchema + Send + 'static> Args<T> {
    /// `Args<Value>` (a proxy's handler, say) is the arguments as they are, from `args`: no
    /// deserialization that rebuilds every map (hashing each key again). `None` for any other
    /// `T` (`args` is not called).
    fn as_value(args: impl FnOnce() -> Value) -> Option<Self> {
        let mut out: Option<T> = None;
        if let Some(slot) = (&mut out as &mut dyn std::any::Any).downcast_mut::<Option<Value>>() {
            *slot = Some(args());
        }
        out.map(Args)
    }

    /// `T` read from the arguments; a failure names the argument at fault.
    fn deserialized(parts: &CallParts) -> Result<Self, ExtractRejection> {
        let first = match T::deserialize(&parts.args) {
            Ok(args) => return Ok(Args(args)),
            Err(e) => e,
        };
        // A failure is read again from text, whose error position names the argument at fault
        // (`error_path`: a scan that is not generic, instead of a path-tracking deserializer
        // instantiated per type).
        let text = parts.args.to_string();
        let (path, message) = match serde_json::from_str::<T>(&text) {
            Err(e) => (
                crate::jsonrpc::error_path::path(&text, &e),
                crate::jsonrpc::error_path::message(&e),
            ),
            // Not expected (the same value, another reader): the first error, unplaced.
            Ok(_) => (".".to_owned(), first.to_string()),
        };
        if path == "." {
            Err(ExtractRejection::InvalidArguments { message })
        } else {
            Err(ExtractRejection::InvalidArgument { path, message })
        }
    }
}

/// The JSON Schema (2020-12) of `T` as a JSON object.
pub(crate) fn schema_object<T: JsonSchema>() -> Map<String, Value> {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    match schema.to_value() {
        Value::Object(map) => map,
        // `true` (anything goes) and other forms: an object accepting anything.
        _ => {
            let mut m = Map::new();
            m.insert("type".into(), Value::from("object"));
            m
        }
    }
}

/// Application state registered with [`ServerBuilder::state`](crate::server::ServerBuilder::state).
///
/// ```
/// use duomcp::server::{Server, State};
/// #[derive(Clone)]
/// struct Greeting(&'static str);
/// async fn hello(State(g): State<Greeting>) -> String { g.0.to_owned() }
/// let server = Server::builder().state(Greeting("hi")).tool("hello", hello).build();
/// # let _ = server;
/// ```
#[derive(Debug, Clone)]
pub struct State<T>(pub T);

impl<T: Clone + Send + Sync + 'static> FromCallParts for State<T> {
    fn required_state() -> Option<(TypeId, &'static str)> {
        Some((TypeId::of::<T>(), std::any::type_name::<T>()))
    }

    fn from_call_parts(parts: &CallParts) -> Result<Self, ExtractRejection> {
        parts
            .ctx
            .state::<T>()
            .map(State)
            .ok_or(ExtractRejection::MissingState {
                type_name: std::any::type_name::<T>(),
            })
    }
}

/// The extraction's outcome itself: the handler runs either way and decides what a
/// rejection means (as axum's `Result<T, T::Rejection>`). `T`'s schema and state are still
/// `T`'s.
///
/// ```
/// use duomcp::server::{Args, ExtractRejection};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Echo { text: String }
/// async fn lenient(args: Result<Args<Echo>, ExtractRejection>) -> String {
///     args.map(|Args(e)| e.text).unwrap_or_else(|e| format!("ignored: {e}"))
/// }
/// let server = duomcp::server::Server::builder().tool("lenient", lenient).build();
/// # let _ = server;
/// ```
impl<T: FromCallParts> FromCallParts for Result<T, ExtractRejection> {
    fn from_call_parts(parts: &CallParts) -> Result<Self, ExtractRejection> {
        Ok(T::from_call_parts(parts))
    }

    fn from_call_parts_last(parts: CallParts) -> Result<Self, ExtractRejection> {
        Ok(T::from_call_parts_last(parts))
    }

    fn input_schema() -> Option<Map<String, Value>> {
        T::input_schema()
    }

    fn required_state() -> Option<(TypeId, &'static str)> {
        T::required_state()
    }
}

/// The URI a resource handler is reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uri(pub String);

impl FromCallParts for Uri {
    fn from_call_parts(parts: &CallParts) -> Result<Self, ExtractRejection> {
        Ok(Uri(parts.uri.clone().unwrap_or_default()))
    }
}

/// An async function usable as a tool, prompt or resource handler.
///
/// Implemented for every `Fn(A1, …, An) -> impl Future` (n ≤ 8) whose arguments implement
/// [`FromCallParts`]. You never implement it yourself.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a duomcp handler",
    note = "a handler is an `async fn` whose arguments implement `FromCallParts` (`Context`, `Args<T>`, `State<T>`, `Uri`) and whose future is `Send`",
    note = "`#[duomcp::tool]` (or `#[duomcp::prompt]`, `#[duomcp::resource]`) on the function reports which argument, return type or `.await` is at fault"
)]
pub trait Handler<T>: Clone + Send + Sync + 'static {
    /// What the function returns.
    type Output: Send + 'static;
    /// Extracts the arguments and runs the function.
    fn call(
        &self,
        parts: CallParts,
    ) -> impl Future<Output = Result<Self::Output, ExtractRejection>> + Send + 'static;
    /// The input schema contributed by the arguments.
    fn input_schema() -> Option<Map<String, Value>>;
    /// The registered state the arguments need ([`FromCallParts::required_state`]).
    fn required_states() -> Vec<(TypeId, &'static str)> {
        Vec::new()
    }
}

/// Extraction of a whole argument tuple, so the macro below needs no closure.
/// The last argument is extracted with [`FromCallParts::from_call_parts_last`], the others
/// (in order, before it) with [`FromCallParts::from_call_parts`].
trait ExtractAll: Sized {
    fn extract_all(parts: CallParts) -> Result<Self, ExtractRejection>;
}

fn extract<T: ExtractAll>(parts: CallParts) -> Result<T, ExtractRejection> {
    T::extract_all(parts)
}

impl ExtractAll for () {
    fn extract_all(_parts: CallParts) -> Result<Self, ExtractRejection> {
        Ok(())
    }
}

macro_rules! impl_extract_all {
    ($($a:ident),* ; $last:ident) => {
        impl<$($a: FromCallParts,)* $last: FromCallParts> ExtractAll for ($($a,)* $last,) {
            fn extract_all(parts: CallParts) -> Result<Self, ExtractRejection> {
                Ok(($($a::from_call_parts(&parts)?,)* $last::from_call_parts_last(parts)?,))
            }
        }
    };
}

impl_extract_all!(; A1);
impl_extract_all!(A1; A2);
impl_extract_all!(A1, A2; A3);
impl_extract_all!(A1, A2, A3; A4);
impl_extract_all!(A1, A2, A3, A4; A5);
impl_extract_all!(A1, A2, A3, A4, A5; A6);
impl_extract_all!(A1, A2, A3, A4, A5, A6; A7);
impl_extract_all!(A1, A2, A3, A4, A5, A6, A7; A8);

macro_rules! impl_handler {
    ($($a:ident),*) => {
        #[diagnostic::do_not_recommend]
        #[allow(non_snake_case, unused_variables, unused_mut)]
        impl<F, Fut, R, $($a,)*> Handler<($($a,)*)> for F
        where
            F: Fn($($a),*) -> Fut + Clone + Send + Sync + 'static,
            Fut: Future<Output = R> + Send + 'static,
            R: Send + 'static,
            $($a: FromCallParts,)*
        {
            type Output = R;
            fn call(&self, parts: CallParts) -> impl Future<Output = Result<R, ExtractRejection>> + Send + 'static {
                let extracted = extract::<($($a,)*)>(parts);
                let f = self.clone();
                async move {
                    let ($($a,)*) = extracted?;
                    Ok(f($($a),*).await)
                }
            }
            fn input_schema() -> Option<Map<String, Value>> {
                let mut schema = None;
                $( if let Some(s) = $a::input_schema() { schema = Some(s); } )*
                schema
            }
            fn required_states() -> Vec<(TypeId, &'static str)> {
                let mut states = Vec::new();
                $( states.extend($a::required_state()); )*
                states
            }
        }
    };
}

impl_handler!();
impl_handler!(A1);
impl_handler!(A1, A2);
impl_handler!(A1, A2, A3);
impl_handler!(A1, A2, A3, A4);
impl_handler!(A1, A2, A3, A4, A5);
impl_handler!(A1, A2, A3, A4, A5, A6);
impl_handler!(A1, A2, A3, A4, A5, A6, A7);
impl_handler!(A1, A2, A3, A4, A5, A6, A7, A8);

/// A return value that becomes a `tools/call` result.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a tool",
    note = "return a `String`, `&'static str`, `ContentBlock`, `Vec<ContentBlock>`, `CallToolResult`, `Json<T>`, or `Result<_, E>` of one of them, where `E` is `HandlerError`, `anyhow::Error`, `String`, `&'static str`, `Box<dyn Error + Send + Sync>` or any `std::error::Error + Send + Sync`"
)]
pub trait IntoToolResult: Send + 'static {
    /// Converts into a result or an error.
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError>;
    /// The tool's `outputSchema`, when the type implies one.
    fn output_schema() -> Option<Map<String, Value>> {
        None
    }
    /// What the server answers with: [`into_tool_result`](Self::into_tool_result)'s result,
    /// or, for a result serialized already ([`RawToolResult`]), its text as it is.
    fn into_tool_output(self) -> Result<ToolOutput, HandlerError>
    where
        Self: Sized,
    {
        self.into_tool_result().map(ToolOutput::from)
    }
}

/// A `tools/call` result serialized already: the server writes its text into the answer as
/// it is, never parsing it into a [`CallToolResult`] and serializing that again. For a handler
/// that relays another server's result (a gateway, a proxy).
///
/// The handler vouches for the text: it must be the `CallToolResult` object of the request's
/// revision. The server only checks that it is a JSON object (and reads its `isError`); the
/// fields it sets itself in 2026-07-28 (`resultType`, `ttlMs`, `cacheScope`, its `serverInfo`
/// in `_meta`) are added as for any result, so the text should not carry them (a `_meta` of
/// its own is merged, at the cost of a parse). Where the server must read the result (a tool
/// with an `outputSchema`, a result stored in a task), it is parsed then.
///
/// ```
/// use duomcp::server::{RawToolResult, Server};
/// use serde_json::value::RawValue;
/// async fn relay() -> Result<RawToolResult, duomcp::server::HandlerError> {
///     // e.g. the bytes of another server's answer
///     let text = r#"{"content":[{"type":"text","text":"hi"}]}"#;
///     let raw = RawValue::from_string(text.to_owned()).map_err(|e| duomcp::server::HandlerError::msg(e.to_string()))?;
///     RawToolResult::new(raw).map_err(|e| duomcp::server::HandlerError::msg(e.to_string()))
/// }
/// let server = Server::builder().tool("relay", relay).build();
/// # let _ = server;
/// ```
#[derive(Debug, Clone)]
pub struct RawToolResult {
    json: Box<RawValue>,
    is_error: bool,
}

impl RawToolResult {
    /// A result from its JSON text: an error unless it is a JSON object. Its top-level members
    /// are scanned (for `isError`), nothing is built.
    pub fn new(json: Box<RawValue>) -> Result<Self, serde_json::Error> {
        Self::without(json, &[])
    }

    /// [`new`](Self::new), leaving out the top-level members named in `names` (e.g. the
    /// envelope members of another server's answer, which this server sets itself): the text
    /// is scanned once, and written again only when one of them is there.
    ///
    /// ```
    /// use duomcp::server::RawToolResult;
    /// use serde_json::value::RawValue;
    /// let text = r#"{"content":[],"resultType":"complete","isError":true}"#;
    /// let raw = RawToolResult::without(RawValue::from_string(text.into()).unwrap(), &["resultType"]).unwrap();
    /// assert_eq!(raw.get(), r#"{"content":[],"isError":true}"#);
    /// assert!(raw.is_error());
    /// ```
    pub fn without(json: Box<RawValue>, names: &[&str]) -> Result<Self, serde_json::Error> {
        Self::scan(json, names, None).map(|(result, _)| result)
    }

    /// [`without`](Self::without), also returning the value of the top-level member `read`
    /// when it is a string (read in the same scan; it may be one of the members left out),
    /// e.g. another server's `resultType`, to tell a complete result from others.
    ///
    /// ```
    /// use duomcp::server::RawToolResult;
    /// use serde_json::value::RawValue;
    /// let text = r#"{"resultType":"complete","content":[]}"#;
    /// let json = RawValue::from_string(text.into()).unwrap();
    /// let (raw, kind) = RawToolResult::without_reading(json, &["resultType"], "resultType").unwrap();
    /// assert_eq!(raw.get(), r#"{"content":[]}"#);
    /// assert_eq!(kind.as_deref(), Some("complete"));
    /// ```
    pub fn without_reading(
        json: Box<RawValue>,
        names: &[&str],
        read: &str,
    ) -> Result<(Self, Option<String>), serde_json::Error> {
        Self::scan(json, names, Some(read))
    }

    fn scan(
        json: Box<RawValue>,
        names: &[&str],
        read: Option<&str>,
    ) -> Result<(Self, Option<String>), serde_json::Error> {
        /// The members kept, written as they came (each value is JSON text already).
        fn kept(
            members: &crate::server::params::ParamsIndex<'_>,
            names: &[&str],
        ) -> Result<Box<RawValue>, serde_json::Error> {
            let mut out = String::from("{");
            for (k, v) in members.members().filter(|(k, _)| !names.contains(k)) {
                if out.len() > 1 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(k)?);
                out.push(':');
                out.push_str(v);
            }
            out.push('}');
            RawValue::from_string(out)
        }
        let (is_error, read, rewritten) = {
            let members = crate::server::params::ParamsIndex::read_text(json.get())?;
            let is_error = members.get("isError") == Some("true");
            let read = read
                .and_then(|name| members.get(name))
                .and_then(|v| serde_json::from_str::<String>(v).ok());
            let rewritten = if members.members().any(|(k, _)| names.contains(&k)) {
                Some(kept(&members, names)?)
            } else {
                None
            };
            (is_error, read, rewritten)
        };
        let result = RawToolResult {
            json: rewritten.unwrap_or(json),
            is_error,
        };
        Ok((result, read))
    }

    /// The result's JSON text.
    pub fn get(&self) -> &str {
        self.json.get()
    }

    /// Whether the result says `isError: true`.
    pub fn is_error(&self) -> bool {
        self.is_error
    }

    /// The result, parsed.
    pub fn to_typed(&self) -> Result<CallToolResult, serde_json::Error> {
        serde_json::from_str(self.json.get())
    }
}

impl IntoToolResult for RawToolResult {
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        self.to_typed()
            .map_err(|e| HandlerError::msg(format!("the tool's result is malformed: {e}")))
    }

    fn into_tool_output(self) -> Result<ToolOutput, HandlerError> {
        Ok(ToolOutput(Output::Raw(self)))
    }
}

/// What a tool handler's return value becomes ([`IntoToolResult::into_tool_output`]): a
/// [`CallToolResult`], or a result serialized already ([`RawToolResult`]).
#[derive(Debug, Clone)]
pub struct ToolOutput(Output);

#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // the typed result is the common one: boxed, it would cost an allocation per call
enum Output {
    Typed(CallToolResult),
    Raw(RawToolResult),
}

impl From<CallToolResult> for ToolOutput {
    fn from(r: CallToolResult) -> Self {
        ToolOutput(Output::Typed(r))
    }
}

impl From<RawToolResult> for ToolOutput {
    fn from(r: RawToolResult) -> Self {
        ToolOutput(Output::Raw(r))
    }
}

impl ToolOutput {
    /// Whether the result says `isError: true`.
    pub fn is_error(&self) -> bool {
        match &self.0 {
            Output::Typed(r) => r.is_error == Some(true),
            Output::Raw(r) => r.is_error,
        }
    }

    /// The text blocks of the result, one a line (a serialized one is parsed): what an
    /// `isError` result says, for a log.
    pub(crate) fn error_text(&self) -> String {
        let parsed;
        let result = match &self.0 {
            Output::Typed(r) => r,
            Output::Raw(r) => match r.to_typed() {
                Ok(r) => {
                    parsed = r;
                    &parsed
                }
                Err(e) => return format!("(a malformed result: {e})"),
            },
        };
        let texts: Vec<&str> = result.content.iter().filter_map(|c| c.as_text()).collect();
        if texts.is_empty() {
            "(no text content)".to_owned()
        } else {
            texts.join("\n")
        }
    }

    /// The result as a [`CallToolResult`] (a serialized one is parsed).
    pub fn into_typed(self) -> Result<CallToolResult, HandlerError> {
        match self.0 {
            Output::Typed(r) => Ok(r),
            Output::Raw(r) => r.into_tool_result(),
        }
    }
}

impl IntoToolResult for ToolOutput {
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        self.into_typed()
    }

    fn into_tool_output(self) -> Result<ToolOutput, HandlerError> {
        Ok(self)
    }
}

impl Serialize for ToolOutput {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Output::Typed(r) => r.serialize(s),
            Output::Raw(r) => r.json.serialize(s),
        }
    }
}

impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Ok(self)
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Ok(CallToolResult::text(self))
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Ok(CallToolResult::text(self))
    }
}

impl IntoToolResult for ContentBlock {
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Ok(CallToolResult::new(vec![self]))
    }
}

impl IntoToolResult for Vec<ContentBlock> {
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Ok(CallToolResult::new(self))
    }
}

impl IntoToolResult for () {
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        Ok(CallToolResult::new(Vec::new()))
    }
}

impl<T: IntoToolResult, E: Into<HandlerError> + Send + 'static> IntoToolResult for Result<T, E> {
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        self.map_err(|e| e.into().with_causes())
            .and_then(T::into_tool_result)
    }
    fn output_schema() -> Option<Map<String, Value>> {
        T::output_schema()
    }
    fn into_tool_output(self) -> Result<ToolOutput, HandlerError> {
        self.map_err(|e| e.into().with_causes())
            .and_then(T::into_tool_output)
    }
}

/// Structured tool output: `structuredContent` plus a text fallback, with `T`'s schema as the
/// tool's `outputSchema`.
///
/// ```
/// use duomcp::server::Json;
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Sum { total: i64 }
/// async fn add() -> Json<Sum> { Json(Sum { total: 3 }) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Json<T>(pub T);

impl<T: Serialize + JsonSchema + Send + 'static> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> Result<CallToolResult, HandlerError> {
        let value = serde_json::to_value(&self.0).map_err(|e| HandlerError::msg(e.to_string()))?;
        let text = value.to_string();
        let mut result = CallToolResult::text(text);
        result.structured_content = Some(value);
        Ok(result)
    }
    fn output_schema() -> Option<Map<String, Value>> {
        Some(schema_object::<T>())
    }
}

/// A return value that becomes a `prompts/get` result.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a prompt",
    note = "return a `GetPromptResult`, `Vec<PromptMessage>`, `PromptMessage`, `String`, or `Result<_, E>` of one of them"
)]
pub trait IntoPromptResult: Send + 'static {
    /// Converts into a result or an error.
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError>;
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        Ok(self)
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        Ok(GetPromptResult {
            messages: self,
            ..Default::default()
        })
    }
}

impl IntoPromptResult for PromptMessage {
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        vec![self].into_prompt_result()
    }
}

impl IntoPromptResult for String {
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        PromptMessage::user_text(self).into_prompt_result()
    }
}

impl<T: IntoPromptResult, E: Into<HandlerError> + Send + 'static> IntoPromptResult
    for Result<T, E>
{
    fn into_prompt_result(self) -> Result<GetPromptResult, HandlerError> {
        self.map_err(|e| e.into().with_causes())
            .and_then(T::into_prompt_result)
    }
}

/// A return value that becomes a `resources/read` result.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a resource handler",
    note = "return a `ReadResourceResult`, `Vec<ResourceContents>`, `ResourceContents`, `String`, or `Result<_, E>` of one of them"
)]
pub trait IntoReadResult: Send + 'static {
    /// Converts into a result or an error; `uri` is the URI that was read.
    fn into_read_result(self, uri: &str) -> Result<ReadResourceResult, HandlerError>;
}

impl IntoReadResult for ReadResourceResult {
    fn into_read_result(self, _uri: &str) -> Result<ReadResourceResult, HandlerError> {
        Ok(self)
    }
}

impl IntoReadResult for Vec<ResourceContents> {
    fn into_read_result(self, _uri: &str) -> Result<ReadResourceResult, HandlerError> {
        Ok(ReadResourceResult {
            contents: self,
            ..Default::default()
        })
    }
}

impl IntoReadResult for ResourceContents {
    fn into_read_result(self, uri: &str) -> Result<ReadResourceResult, HandlerError> {
        vec![self].into_read_result(uri)
    }
}

impl IntoReadResult for String {
    fn into_read_result(self, uri: &str) -> Result<ReadResourceResult, HandlerError> {
        let contents = TextResourceContents {
            uri: uri.to_owned(),
            text: self,
            mime_type: Some("text/plain".into()),
            ..Default::default()
        };
        ResourceContents::Text(contents).into_read_result(uri)
    }
}

impl<T: IntoReadResult, E: Into<HandlerError> + Send + 'static> IntoReadResult for Result<T, E> {
    fn into_read_result(self, uri: &str) -> Result<ReadResourceResult, HandlerError> {
        self.map_err(|e| e.into().with_causes())
            .and_then(|t| t.into_read_result(uri))
    }
}
