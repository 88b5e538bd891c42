//! The application's answers to server-initiated input: elicitation, sampling and roots.
//!
//! One set of handlers serves both eras: in 2025-11-25 they answer the server's requests, in
//! 2026-07-28 they answer the `inputRequests` of an `InputRequiredResult`.

use super::error::InputError;
use super::options::InputFn;
use super::transport::BoxFuture;
use crate::jsonrpc;
use duomcp_schema::error_code::{INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND};
use duomcp_schema::methods::{self, RequestMethod};
use duomcp_schema::ErrorObject;
use duomcp_schema::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitAction,
    ElicitRequestParams, ElicitResult, ElicitationCapability, InputRequest, JsonObject,
    ListRootsResult, Root, RootsCapability, SamplingCapability,
};
use serde_json::Value;
use std::future::Future;
use std::sync::{Arc, RwLock};

type ElicitFn = dyn Fn(ElicitRequestParams) -> BoxFuture<'static, Result<ElicitResult, InputError>>
    + Send
    + Sync;
type SampleFn = dyn Fn(CreateMessageRequestParams) -> BoxFuture<'static, Result<CreateMessageResult, InputError>>
    + Send
    + Sync;
type RootsFn = dyn Fn() -> BoxFuture<'static, Result<Vec<Root>, InputError>> + Send + Sync;

pub(crate) fn elicit_fn<F, Fut>(f: F) -> Arc<ElicitFn>
where
    F: Fn(ElicitRequestParams) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ElicitResult, InputError>> + Send + 'static,
{
    Arc::new(move |p| Box::pin(f(p)))
}

pub(crate) fn sample_fn<F, Fut>(f: F) -> Arc<SampleFn>
where
    F: Fn(CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<CreateMessageResult, InputError>> + Send + 'static,
{
    Arc::new(move |p| Box::pin(f(p)))
}

pub(crate) fn roots_fn<F, Fut>(f: F) -> Arc<RootsFn>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<Root>, InputError>> + Send + 'static,
{
    Arc::new(move || Box::pin(f()))
}

/// Where the roots come from.
#[derive(Clone)]
pub(crate) enum RootsSource {
    /// A list the application sets (and may change with `Client::set_roots`).
    Static(Arc<RwLock<Vec<Root>>>),
    /// A handler asked each time.
    Handler(Arc<RootsFn>),
}

/// The registered handlers and the capabilities they declare.
#[derive(Clone, Default)]
pub(crate) struct Handlers {
    pub elicit: Option<(Arc<ElicitFn>, ElicitationCapability)>,
    pub sample: Option<(Arc<SampleFn>, SamplingCapability)>,
    pub roots: Option<RootsSource>,
    /// 2025-11-25: run task-augmented elicitation and sampling requests as tasks.
    pub host_tasks: bool,
    /// Extensions the client declares (`capabilities.extensions`), e.g. skills.
    pub extensions: JsonObject,
}

impl Handlers {
    /// The capabilities to declare in either era: exactly those with a handler (the era
    /// adapters add their own, see `client::era`).
    pub(crate) fn capabilities(&self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        if let Some((_, c)) = &self.elicit {
            caps.elicitation = Some(c.clone());
        }
        if let Some((_, c)) = &self.sample {
            caps.sampling = Some(c.clone());
        }
        if self.roots.is_some() {
            caps.roots = Some(RootsCapability::default());
        }
        for (id, settings) in &self.extensions {
            let declared = caps.extensions.get_or_insert_with(JsonObject::new);
            declared.insert(id.clone(), settings.clone());
        }
        caps
    }

    pub(crate) async fn elicit(
        &self,
        params: ElicitRequestParams,
    ) -> Option<Result<ElicitResult, InputError>> {
        let (handler, _) = self.elicit.as_ref()?;
        let answer = handler(params.clone()).await.map(|mut result| {
            apply_elicit_defaults(&params, &mut result);
            result
        });
        Some(answer)
    }

    pub(crate) async fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> Option<Result<CreateMessageResult, InputError>> {
        let (handler, _) = self.sample.as_ref()?;
        Some(handler(params).await)
    }

    pub(crate) async fn roots(&self) -> Option<Result<ListRootsResult, InputError>> {
        let roots = match self.roots.as_ref()? {
            RootsSource::Static(list) => Ok(list.read().unwrap_or_else(|p| p.into_inner()).clone()),
            RootsSource::Handler(handler) => handler().await,
        };
        Some(roots.map(ListRootsResult::new))
    }
}

/// A server request one of the handlers answers, parsed and ready to run: the same code answers
/// it directly (the response) and as a client-hosted task (the task's outcome).
pub(crate) enum HandlerCall {
    /// `elicitation/create`.
    Elicit(ElicitRequestParams),
    /// `sampling/createMessage`.
    Sample(CreateMessageRequestParams),
    /// `roots/list`.
    Roots,
}

impl HandlerCall {
    /// Parses the params of `method`; `None` when no handler kind answers that method.
    pub(crate) fn parse(method: &str, params: Option<&str>) -> Option<Result<Self, ErrorObject>> {
        let text = params.unwrap_or("{}");
        let invalid =
            |e: serde_json::Error| jsonrpc::error(INVALID_PARAMS, format!("Invalid params: {e}"));
        Some(match method {
            m if m == <methods::Elicit as RequestMethod>::NAME => serde_json::from_str(text)
                .map(Self::Elicit)
                .map_err(invalid),
            m if m == <methods::CreateMessage as RequestMethod>::NAME => serde_json::from_str(text)
                .map(Self::Sample)
                .map_err(invalid),
            m if m == <methods::ListRoots as RequestMethod>::NAME => Ok(Self::Roots),
            _ => return None,
        })
    }

    /// The method this call answers.
    fn method(&self) -> &'static str {
        match self {
            Self::Elicit(_) => <methods::Elicit as RequestMethod>::NAME,
            Self::Sample(_) => <methods::CreateMessage as RequestMethod>::NAME,
            Self::Roots => <methods::ListRoots as RequestMethod>::NAME,
        }
    }

    /// Runs a request's own answerer ([`RequestOptions::on_input`](super::RequestOptions::on_input)).
    pub(crate) async fn run_own(self, own: &InputFn) -> Result<Value, ErrorObject> {
        let request = match self {
            Self::Elicit(p) => InputRequest::Elicit(p),
            Self::Sample(p) => InputRequest::CreateMessage(p),
            Self::Roots => InputRequest::ListRoots(None),
        };
        own(request).await.map_err(|e| e.to_error_object())
    }

    /// Runs the handler; without one the answer is `-32601`, as for any method this client
    /// does not serve.
    pub(crate) async fn run(self, handlers: &Handlers) -> Result<Value, ErrorObject> {
        let method = self.method();
        let answer = match self {
            Self::Elicit(p) => handlers
                .elicit(p)
                .await
                .map(|r| r.map(serde_json::to_value)),
            Self::Sample(p) => handlers
                .sample(p)
                .await
                .map(|r| r.map(serde_json::to_value)),
            Self::Roots => handlers.roots().await.map(|r| r.map(serde_json::to_value)),
        };
        match answer {
            None => Err(jsonrpc::error(
                METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            )),
            Some(Err(e)) => Err(e.to_error_object()),
            Some(Ok(encoded)) => {
                encoded.map_err(|e| jsonrpc::error(INTERNAL_ERROR, format!("Internal error: {e}")))
            }
        }
    }
}

/// SEP-1034: when the user accepts a form, every field the answer leaves out that has a
/// `default` in `requestedSchema` gets that default.
///
/// ```
/// use duomcp::client::apply_elicit_defaults;
/// use duomcp::schema::{ElicitRequestParams, ElicitResult};
/// let params: ElicitRequestParams = serde_json::from_value(serde_json::json!({
///     "message": "Your details",
///     "requestedSchema": { "type": "object", "properties": {
///         "name": { "type": "string", "default": "Ada" },
///         "age": { "type": "integer", "default": 36 },
///         "email": { "type": "string" }
///     }}
/// })).unwrap();
/// let mut answer = ElicitResult::accept(Some(serde_json::from_value(serde_json::json!({ "age": 40 })).unwrap()));
/// apply_elicit_defaults(&params, &mut answer);
/// let content = answer.content.unwrap();
/// assert_eq!(content["name"], "Ada");
/// assert_eq!(content["age"], 40);
/// assert!(!content.contains_key("email"));
/// ```
pub fn apply_elicit_defaults(params: &ElicitRequestParams, result: &mut ElicitResult) {
    let ElicitRequestParams::Form(form) = params else {
        return;
    };
    if result.action != ElicitAction::Accept {
        return;
    }
    let content = result.content.get_or_insert_with(JsonObject::new);
    for (name, property) in &form.requested_schema.properties {
        if content.contains_key(name) {
            continue;
        }
        let default = serde_json::to_value(property)
            .ok()
            .and_then(|mut v| v.get_mut("default").map(Value::take));
        if let Some(default) = default {
            content.insert(name.clone(), default);
        }
    }
}
