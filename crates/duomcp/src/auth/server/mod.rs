//! The resource-server half: an MCP server on Streamable HTTP as an OAuth 2.1 resource server.
//!
//! * [`ResourceServer`] holds the configuration (canonical resource URI, authorization servers,
//!   scopes) and the [`TokenValidator`].
//! * [`ResourceServer::metadata_router`] serves Protected Resource Metadata (RFC 9728) at the
//!   path-suffixed and root well-known URLs.
//! * [`AuthLayer`] (from [`ResourceServer::layer`]) authenticates every request: `401` with a
//!   `WWW-Authenticate: Bearer resource_metadata="…", scope="…"` challenge when the token is
//!   missing or invalid, `403 insufficient_scope` when it lacks scopes, `400` for a malformed
//!   request (several `Authorization` headers, a token in the query string). The
//!   [`Principal`] goes into the request, where the Streamable HTTP transport finds it and hands
//!   it to [`Context::principal`](crate::server::Context::principal); scopes declared with
//!   [`ToolSpec::scopes`](crate::server::ToolSpec::scopes) (and the prompt and resource
//!   equivalents) are enforced by the runtime, and the layer turns their refusal into a `403`
//!   challenge naming every scope the operation needs.

mod introspection;
mod jwt;
mod layer;
mod validator;

pub use introspection::{IntrospectionValidator, IntrospectionValidatorBuilder};
pub use jwt::{ConfigError, JwtValidator, JwtValidatorBuilder};
#[doc(hidden)]
pub use layer::Refusal;
pub use layer::{Auth, AuthLayer, AuthRejection};
pub use validator::{StaticTokens, TokenError, TokenValidator, ValidateFuture};

use crate::auth::metadata::{split_origin_path, ProtectedResourceMetadata};
use crate::auth::{Principal, ScopeHierarchy};
use axum::response::IntoResponse;
use axum::Router;
use std::sync::Arc;

/// An MCP server's OAuth resource-server configuration: what it publishes (Protected Resource
/// Metadata) and how it checks tokens.
///
/// ```
/// use duomcp::auth::{ResourceServer, StaticTokens};
/// use duomcp::server::Principal;
/// use duomcp::server::{Server, ToolSpec};
/// use duomcp::transport::http::StreamableHttp;
///
/// let server = Server::builder()
///     .tool(ToolSpec::new("read").scopes(["files:read"]), || async { "contents" })
///     .build();
/// let rs = ResourceServer::builder("https://mcp.example.com/mcp")
///     .authorization_server("https://auth.example.com")
///     .scopes_supported(["files:read", "files:write"])
///     .validator(StaticTokens::new().with("t0k3n", Principal::new("alice").with_scopes(["files:read"])))
///     .build()
///     .unwrap();
/// // The MCP endpoint behind the auth layer, plus the metadata routes (unauthenticated).
/// let app: axum::Router = rs.protect(StreamableHttp::new(server).router());
/// ```
#[derive(Clone)]
pub struct ResourceServer {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub metadata: ProtectedResourceMetadata,
    /// Absolute URL of the metadata document named in challenges.
    pub metadata_url: String,
    /// Paths the metadata is served at.
    pub metadata_paths: Vec<String>,
    /// Scopes every request needs.
    pub required: Vec<String>,
    /// The `scope` of a `401` challenge.
    pub challenge_scopes: Vec<String>,
    pub hierarchy: ScopeHierarchy,
    pub validator: Arc<dyn TokenValidator>,
    /// Who a request without an `Authorization` header is, when such requests are let in.
    pub anonymous: Option<Principal>,
}

impl std::fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceServer")
            .field("resource", &self.inner.metadata.resource)
            .field("metadata_url", &self.inner.metadata_url)
            .finish_non_exhaustive()
    }
}

/// Builds a [`ResourceServer`].
pub struct ResourceServerBuilder {
    metadata: ProtectedResourceMetadata,
    required: Vec<String>,
    hierarchy: ScopeHierarchy,
    validator: Option<Arc<dyn TokenValidator>>,
    metadata_url: Option<String>,
    anonymous: Option<Principal>,
}

impl ResourceServer {
    /// A resource server whose canonical URI is `resource`: the MCP endpoint's URL as clients
    /// know it (`https://mcp.example.com/mcp`), without a fragment. Tokens must name it as
    /// their audience.
    pub fn builder(resource: impl Into<String>) -> ResourceServerBuilder {
        ResourceServerBuilder {
            metadata: ProtectedResourceMetadata::new(resource, Vec::<String>::new()),
            required: Vec::new(),
            hierarchy: ScopeHierarchy::new(),
            validator: None,
            metadata_url: None,
            anonymous: None,
        }
    }

    /// The Protected Resource Metadata served.
    pub fn metadata(&self) -> &ProtectedResourceMetadata {
        &self.inner.metadata
    }

    /// The absolute URL of the metadata document (the `resource_metadata` of challenges).
    pub fn metadata_url(&self) -> &str {
        &self.inner.metadata_url
    }

    /// The layer that authenticates requests; wrap the MCP router in it.
    pub fn layer(&self) -> AuthLayer {
        AuthLayer { rs: self.clone() }
    }

    /// Routes serving the Protected Resource Metadata (JSON, readable by anyone, CORS open) at
    /// `/.well-known/oauth-protected-resource<path of the resource>` and at the root
    /// `/.well-known/oauth-protected-resource`.
    pub fn metadata_router(&self) -> Router {
        let mut router = Router::new();
        for path in &self.inner.metadata_paths {
            let doc = self.inner.metadata.clone();
            router = router.route(
                path,
                axum::routing::get(move || {
                    let doc = doc.clone();
                    async move {
                        let body = serde_json::to_vec(&doc).unwrap_or_default();
                        let mut res = axum::body::Body::from(body).into_response();
                        res.headers_mut().insert(
                            http::header::CONTENT_TYPE,
                            http::HeaderValue::from_static("application/json"),
                        );
                        res.headers_mut().insert(
                            http::header::ACCESS_CONTROL_ALLOW_ORIGIN,
                            http::HeaderValue::from_static("*"),
                        );
                        res
                    }
                }),
            );
        }
        router
    }

    /// `router` behind the auth layer, merged with the (unauthenticated) metadata routes.
    pub fn protect(&self, router: Router) -> Router {
        router.layer(self.layer()).merge(self.metadata_router())
    }

    /// Authenticates a request by its headers and URI, as the layer does; useful for custom
    /// transports.
    pub async fn authenticate(
        &self,
        headers: &http::HeaderMap,
        uri: &http::Uri,
    ) -> Result<Principal, AuthRejection> {
        layer::authenticate(&self.inner, headers, uri).await
    }
}

impl ResourceServerBuilder {
    /// Adds an authorization server (its issuer identifier) to `authorization_servers`.
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.metadata.authorization_servers.push(issuer.into());
        self
    }

    /// The scopes clients may request (`scopes_supported`); also the `scope` of `401`
    /// challenges when no [`required_scopes`](Self::required_scopes) are set.
    /// `offline_access` is left out, as the 2026-07-28 revision asks.
    pub fn scopes_supported<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let list: Vec<String> = scopes
            .into_iter()
            .map(Into::into)
            .filter(|s| s != "offline_access")
            .collect();
        self.metadata.scopes_supported = Some(list);
        self
    }

    /// Scopes every request needs, whatever it does (checked by the layer: `403` without them).
    pub fn required_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Broader scopes that imply narrower ones, honoured for every check.
    pub fn scope_hierarchy(mut self, hierarchy: ScopeHierarchy) -> Self {
        self.hierarchy = hierarchy;
        self
    }

    /// A human-readable name (`resource_name`).
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.metadata.resource_name = Some(name.into());
        self
    }

    /// A documentation page (`resource_documentation`).
    pub fn resource_documentation(mut self, url: impl Into<String>) -> Self {
        self.metadata.resource_documentation = Some(url.into());
        self
    }

    /// An extra metadata member.
    pub fn metadata_member(mut self, key: impl Into<String>, value: serde_json::Value) -> Self {
        self.metadata.extra.insert(key.into(), value);
        self
    }

    /// Overrides the `resource_metadata` URL named in challenges (default: the path-suffixed
    /// well-known URL on the resource's origin).
    pub fn metadata_url(mut self, url: impl Into<String>) -> Self {
        self.metadata_url = Some(url.into());
        self
    }

    /// Lets requests without an `Authorization` header in, as `principal` (default: refused
    /// with `401`). A request with a token is checked as always (a bad token is still `401`),
    /// so a client can hold more than the anonymous caller by presenting one. When an
    /// anonymous request needs a scope `principal` lacks (a tool's
    /// [`ToolSpec::scopes`](crate::server::ToolSpec::scopes), say), the answer is `401` with
    /// the scopes in the challenge: a client then gets a token with them. Give the anonymous
    /// caller only what the public may do; [`Principal::with_all_scopes`] makes a server whose
    /// scopes bind only token holders (the conformance suite's SEP-2350 fixture runs so).
    ///
    /// ```
    /// use duomcp::auth::{ResourceServer, StaticTokens};
    /// use duomcp::server::Principal;
    /// let rs = ResourceServer::builder("https://mcp.example.com/mcp")
    ///     .authorization_server("https://auth.example.com")
    ///     .validator(StaticTokens::new().with("t0ken", Principal::new("alice").with_scopes(["files:write"])))
    ///     .anonymous(Principal::new("anonymous").with_scopes(["files:read"]))
    ///     .build()
    ///     .unwrap();
    /// # let _ = rs;
    /// ```
    pub fn anonymous(mut self, principal: Principal) -> Self {
        self.anonymous = Some(principal);
        self
    }

    /// How tokens are checked.
    pub fn validator(mut self, validator: impl TokenValidator) -> Self {
        self.validator = Some(Arc::new(validator));
        self
    }

    /// Shorthand for a [`JwtValidator`] trusting `issuer`'s keys at `jwks_url`, with this
    /// resource as the audience and this builder's scope hierarchy; also lists `issuer` as an
    /// authorization server if none is listed yet.
    pub fn jwt(
        mut self,
        issuer: impl Into<String>,
        jwks_url: impl Into<String>,
    ) -> Result<Self, ConfigError> {
        let issuer = issuer.into();
        let v = JwtValidator::builder(issuer.clone(), self.metadata.resource.clone())
            .jwks_url(jwks_url)
            .scope_hierarchy(self.hierarchy.clone())
            .build()?;
        if self.metadata.authorization_servers.is_empty() {
            self.metadata.authorization_servers.push(issuer);
        }
        self.validator = Some(Arc::new(v));
        Ok(self)
    }

    /// Finishes the configuration.
    pub fn build(self) -> Result<ResourceServer, ConfigError> {
        let resource = self.metadata.resource.clone();
        if resource.contains('#') {
            return Err(ConfigError(format!(
                "the resource URI `{resource}` has a fragment"
            )));
        }
        let (origin, path) = split_origin_path(&resource).map_err(ConfigError)?;
        if self.metadata.authorization_servers.is_empty() {
            return Err(ConfigError("name at least one authorization server".into()));
        }
        let validator = self
            .validator
            .ok_or_else(|| ConfigError("no token validator configured".into()))?;
        let path = path.trim_end_matches('/');
        let root = "/.well-known/oauth-protected-resource".to_owned();
        let mut metadata_paths = vec![root.clone()];
        if !path.is_empty() {
            metadata_paths.insert(0, format!("{root}{path}"));
        }
        let metadata_url = self
            .metadata_url
            .unwrap_or_else(|| format!("{origin}{}", metadata_paths[0]));
        let challenge_scopes = if self.required.is_empty() {
            self.metadata.scopes_supported.clone().unwrap_or_default()
        } else {
            self.required.clone()
        };
        Ok(ResourceServer {
            inner: Arc::new(Inner {
                metadata: self.metadata,
                metadata_url,
                metadata_paths,
                required: self.required,
                challenge_scopes,
                hierarchy: self.hierarchy,
                validator,
                anonymous: self.anonymous,
            }),
        })
    }
}
