//! MCP-level middleware: [tower] layers around every request the server answers, in both eras
//! and on every transport (stdio, Streamable HTTP, [`Server::respond`](super::Server::respond)).
//!
//! A layer sees an [`McpRequest`] (method, target, era, caller, request id, raw params) and
//! produces an [`McpResponse`] (the MCP result or error). It can look at both, time them, or
//! answer by itself with an error ([`McpResponse::error`]), which the runtime shapes for the
//! request's era. Layers written against tower's traits work unchanged, so tower's own
//! `TimeoutLayer` and `ConcurrencyLimitLayer` can be installed as they are; a layer's error
//! (a timeout's `Elapsed`, say) becomes an internal error (`-32603`) carrying its message.
//!
//! ```
//! use duomcp::server::middleware::{layer_fn, McpRequest, McpResponse, Service};
//! use duomcp::server::Server;
//! use duomcp::era::ProtocolError;
//! use std::task::{Context, Poll};
//!
//! /// Refuses every tool whose name starts with `admin_`.
//! #[derive(Clone)]
//! struct NoAdmin<S>(S);
//!
//! impl<S> Service<McpRequest> for NoAdmin<S>
//! where
//!     S: Service<McpRequest, Response = McpResponse>,
//!     S::Future: Send + 'static,
//! {
//!     type Response = McpResponse;
//!     type Error = S::Error;
//!     type Future = std::pin::Pin<Box<dyn std::future::Future<Output = Result<McpResponse, S::Error>> + Send>>;
//!
//!     fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
//!         self.0.poll_ready(cx)
//!     }
//!
//!     fn call(&mut self, req: McpRequest) -> Self::Future {
//!         if req.method() == "tools/call" && req.target().is_some_and(|t| t.starts_with("admin_")) {
//!             let refused = ProtocolError::InvalidParams("admin tools are disabled".into());
//!             return Box::pin(async move { Ok(McpResponse::error(refused)) });
//!         }
//!         Box::pin(self.0.call(req))
//!     }
//! }
//!
//! let server = Server::builder()
//!     .tool("admin_reset", || async { "reset" })
//!     .layer(layer_fn(NoAdmin))
//!     .build();
//! # let _ = server;
//! ```
//!
//! With no layer installed, requests go straight to the dispatcher: nothing is boxed or
//! allocated for middleware.
//!
//! [tower]: https://docs.rs/tower

use super::envelope::{error_reply, Reply, RequestEnv};
use super::Principal;
use super::Shared;
use crate::era::{Era, ProtocolError};
use crate::jsonrpc::{IncomingRequest, Params};
use duomcp_schema::RequestId;
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

pub use tower_layer::{layer_fn, Layer};
pub use tower_service::Service;

/// The error type of type-erased services: whatever a layer fails with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// One MCP request on its way to the handler.
pub struct McpRequest {
    pub(crate) shared: Arc<Shared>,
    pub(crate) req: IncomingRequest,
    pub(crate) env: RequestEnv,
    pub(crate) era: Era,
    /// Read from `params` when a layer first asks (most never do, and it is a parse).
    target: std::sync::OnceLock<Option<String>>,
}

impl McpRequest {
    pub(crate) fn new(
        shared: Arc<Shared>,
        req: IncomingRequest,
        env: RequestEnv,
        era: Era,
    ) -> Self {
        McpRequest {
            shared,
            req,
            env,
            era,
            target: std::sync::OnceLock::new(),
        }
    }

    /// The JSON-RPC method (`tools/call`, `resources/read`…).
    pub fn method(&self) -> &str {
        &self.req.method
    }

    /// The tool or prompt name (`params.name`), or the resource URI (`params.uri`), when the
    /// request names one.
    pub fn target(&self) -> Option<&str> {
        self.target
            .get_or_init(|| {
                target_of(self.req.params.as_ref().map(|p| p.get())).map(Cow::into_owned)
            })
            .as_deref()
    }

    /// The protocol revision the request speaks.
    pub fn era(&self) -> Era {
        self.era
    }

    /// The JSON-RPC request id.
    pub fn request_id(&self) -> &RequestId {
        &self.req.id
    }

    /// The `params` object, if any (its JSON text: [`Params::get`]).
    pub fn params(&self) -> Option<&Params> {
        self.req.params.as_ref()
    }

    /// The authenticated caller (HTTP: from the auth layer; stdio: the local user).
    pub fn principal(&self) -> Option<&Principal> {
        self.env.principal.as_deref()
    }
}

impl fmt::Debug for McpRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpRequest")
            .field("method", &self.req.method)
            .field("target", &self.target())
            .field("era", &self.era)
            .field("id", &self.req.id)
            .finish_non_exhaustive()
    }
}

/// The answer to an [`McpRequest`]: the handler's result or an error.
pub struct McpResponse {
    kind: Kind,
}

enum Kind {
    Reply(Reply),
    Error(ProtocolError),
}

impl McpResponse {
    /// An error answer, shaped for the request's era by the runtime (a middleware uses it to
    /// refuse a request without calling the handler).
    pub fn error(error: ProtocolError) -> Self {
        McpResponse {
            kind: Kind::Error(error),
        }
    }

    pub(crate) fn reply(reply: Reply) -> Self {
        McpResponse {
            kind: Kind::Reply(reply),
        }
    }

    /// The protocol error, when the answer is a JSON-RPC error.
    pub fn protocol_error(&self) -> Option<&ProtocolError> {
        match &self.kind {
            Kind::Reply(r) => r.error.as_ref(),
            Kind::Error(e) => Some(e),
        }
    }

    /// Whether the answer is a tool result with `isError: true`.
    pub fn is_tool_error(&self) -> bool {
        matches!(&self.kind, Kind::Reply(r) if r.is_error)
    }

    /// Whether the answer is a successful result (a tool error counts as a result).
    pub fn is_ok(&self) -> bool {
        self.protocol_error().is_none()
    }

    pub(crate) fn into_reply(self, era: Era, id: &RequestId) -> Reply {
        match self.kind {
            Kind::Reply(r) => r,
            Kind::Error(e) => error_reply(era, id, e),
        }
    }
}

impl fmt::Debug for McpResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpResponse")
            .field("error", &self.protocol_error())
            .field("is_tool_error", &self.is_tool_error())
            .finish()
    }
}

/// What a layer's error becomes on the wire: an internal error carrying its message.
pub(crate) fn error_from_box(e: BoxError) -> ProtocolError {
    ProtocolError::Internal(format!("Internal error: {e}"))
}

#[derive(Deserialize)]
struct Target<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uri: Option<Cow<'a, str>>,
}

/// The tool/prompt name or resource URI in `params`, if any.
pub(crate) fn target_of(params: Option<&str>) -> Option<Cow<'_, str>> {
    let t: Target<'_> = duomcp_schema::strict::from_str(params?).ok()?;
    t.name.or(t.uri)
}

trait ErasedService: Send {
    fn clone_box(&self) -> Box<dyn ErasedService>;
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>>;
    fn call(&mut self, req: McpRequest) -> BoxFuture<Result<McpResponse, BoxError>>;
}

impl<S> ErasedService for S
where
    S: Service<McpRequest, Response = McpResponse> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    fn clone_box(&self) -> Box<dyn ErasedService> {
        Box::new(self.clone())
    }

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Service::poll_ready(self, cx).map_err(Into::into)
    }

    fn call(&mut self, req: McpRequest) -> BoxFuture<Result<McpResponse, BoxError>> {
        let fut = Service::call(self, req);
        Box::pin(async move { fut.await.map_err(Into::into) })
    }
}

/// The service a layer wraps: the rest of the stack down to the handler, type-erased.
///
/// Layers added with [`ServerBuilder::layer`](super::ServerBuilder::layer) get one of these as
/// their inner service.
pub struct McpService(Box<dyn ErasedService>);

impl McpService {
    pub(crate) fn new<S>(service: S) -> Self
    where
        S: Service<McpRequest, Response = McpResponse> + Clone + Send + 'static,
        S::Error: Into<BoxError>,
        S::Future: Send + 'static,
    {
        McpService(Box::new(service))
    }

    /// Waits until the stack can take a request, then runs `req` through it.
    pub(crate) async fn oneshot(mut self, req: McpRequest) -> Result<McpResponse, BoxError> {
        std::future::poll_fn(|cx| self.0.poll_ready(cx)).await?;
        self.0.call(req).await
    }
}

impl Clone for McpService {
    fn clone(&self) -> Self {
        McpService(self.0.clone_box())
    }
}

impl fmt::Debug for McpService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("McpService")
    }
}

impl Service<McpRequest> for McpService {
    type Response = McpResponse;
    type Error = BoxError;
    type Future = BoxFuture<Result<McpResponse, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: McpRequest) -> Self::Future {
        self.0.call(req)
    }
}
