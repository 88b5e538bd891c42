//! Authorization: OAuth 2.1 for MCP over Streamable HTTP, both halves.
//!
//! The rules come from the authorization pages of both revisions (2025-11-25 and 2026-07-28);
//! stdio is not covered by them: a stdio server takes its credentials from the environment, and
//! its caller is the local user ([`Principal::local`]).
//!
//! # Resource server (feature `auth` + `http-server`)
//!
//! An MCP server is an OAuth resource server. Describe it with a [`ResourceServer`], wrap the
//! Streamable HTTP router in its [`AuthLayer`], and serve its Protected Resource Metadata:
//!
//! ```no_run
//! use duomcp::auth::{JwtValidator, ResourceServer, ScopeHierarchy};
//! use duomcp::server::{Context, Server, ToolSpec};
//! use duomcp::transport::http::{HttpConfig, StreamableHttp};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Server::builder()
//!     .tool(ToolSpec::new("read_file").scopes(["files:read"]), |ctx: Context| async move {
//!         format!("hello {}", ctx.principal().and_then(|p| p.subject()).unwrap_or("?"))
//!     })
//!     .tool(ToolSpec::new("write_file").scopes(["files:write"]), || async { "written" })
//!     .build();
//! let resource = "https://mcp.example.com/mcp";
//! let hierarchy = ScopeHierarchy::new().implies("files:write", ["files:read"]);
//! let rs = ResourceServer::builder(resource)
//!     .authorization_server("https://auth.example.com")
//!     .scopes_supported(["files:read", "files:write"])
//!     .scope_hierarchy(hierarchy)
//!     .validator(
//!         JwtValidator::builder("https://auth.example.com", resource)
//!             .discover_jwks()
//!             .build()?,
//!     )
//!     .build()?;
//! let mut config = HttpConfig::default();
//! config.allowed_hosts = Some(vec!["mcp.example.com".into()]);
//! let app = rs.protect(StreamableHttp::with_config(server, config).router());
//! let listener = tokio::net::TcpListener::bind("0.0.0.0:8080").await?;
//! axum::serve(listener, app).await?;
//! # Ok(()) }
//! ```
//!
//! What clients get back:
//!
//! | situation | answer |
//! |---|---|
//! | no token | `401`, `WWW-Authenticate: Bearer resource_metadata="…", scope="…"` |
//! | invalid, expired, forged, wrong issuer or audience | `401`, `error="invalid_token"` |
//! | a tool, prompt or resource needing scopes the token lacks | `403`, `error="insufficient_scope"`, `scope=` every scope it needs |
//! | several `Authorization` headers, a token in the query string, a malformed token | `400`, `error="invalid_request"` |
//! | the keys or the introspection endpoint unreachable | `503` |
//!
//! The token itself never goes past the layer (the header is removed); handlers see a
//! [`Principal`]. Legacy (2025-11-25) sessions are bound to the principal that created them:
//! another principal using the session id gets `404`, as for an unknown session. A sealed
//! 2026-07-28 `requestState` is bound to the principal as well.
//!
//! # Client (features `auth` + `client`)
//!
//! [`OAuthClient`] implements [`AuthProvider`], the seam of
//! the Streamable HTTP client transport: on a `401` it discovers the authorization server
//! (Protected Resource Metadata from the challenge, then the path-suffixed and root well-known
//! URLs; authorization server metadata with the OAuth and OpenID Connect fallbacks, `issuer`
//! checked), registers (pre-registered credentials, a Client ID Metadata Document, or Dynamic
//! Client Registration), runs the authorization code flow with PKCE `S256`, `state`, RFC 8707
//! `resource` and RFC 9207 `iss` checks, and stores the tokens ([`TokenStore`]) keyed by
//! issuer and resource. A `403 insufficient_scope` triggers step-up authorization with the
//! union of scopes, a bounded number of times. Machine-to-machine grants (client credentials,
//! JWT bearer, enterprise-managed authorization) and DPoP are extensions of the same client.

//!
#![cfg_attr(
    not(all(feature = "auth", feature = "http-server")),
    doc = "[`ResourceServer`]: crate#features"
)]
#![cfg_attr(
    not(all(feature = "auth", feature = "http-server")),
    doc = "[`AuthLayer`]: crate#features"
)]
#![cfg_attr(
    not(all(feature = "auth", feature = "client")),
    doc = "[`OAuthClient`]: crate#features"
)]
#![cfg_attr(
    not(all(feature = "auth", feature = "client")),
    doc = "[`TokenStore`]: crate#features"
)]
#![cfg_attr(
    feature = "client",
    doc = "[`AuthProvider`]: crate::client::auth::AuthProvider"
)]
#![cfg_attr(not(feature = "client"), doc = "[`AuthProvider`]: crate#features")]

#[allow(unused_imports)]
pub(crate) use crate::common::scope::join_scopes;
pub use crate::common::scope::{split_scopes, ScopeHierarchy};
/// The authenticated caller: its documented path is [`crate::server::Principal`]; kept here
/// so code naming it compiles.
#[doc(hidden)]
pub use crate::server::Principal;

// Shared by the two halves; with only one of `http-server` and `client`, some goes unused.
#[cfg(feature = "auth")]
#[cfg_attr(
    not(all(feature = "http-server", feature = "client")),
    allow(dead_code)
)]
pub(crate) mod challenge;
#[cfg(feature = "auth")]
#[cfg_attr(
    not(all(feature = "http-server", feature = "client")),
    allow(dead_code)
)]
pub(crate) mod http;
#[cfg(feature = "auth")]
mod metadata;

#[cfg(feature = "auth")]
pub use challenge::WwwAuthenticate;
#[cfg(feature = "auth")]
pub use metadata::{
    authorization_server_metadata_urls, protected_resource_metadata_urls,
    AuthorizationServerMetadata, ProtectedResourceMetadata,
};

#[cfg(all(feature = "auth", feature = "http-server"))]
mod server;
#[cfg(all(feature = "auth", feature = "http-server"))]
#[doc(hidden)]
pub use server::Refusal;
#[cfg(all(feature = "auth", feature = "http-server"))]
pub use server::{
    Auth, AuthLayer, AuthRejection, ConfigError, IntrospectionValidator,
    IntrospectionValidatorBuilder, JwtValidator, JwtValidatorBuilder, ResourceServer,
    ResourceServerBuilder, StaticTokens, TokenError, TokenValidator, ValidateFuture,
};

#[cfg(all(feature = "auth", feature = "client"))]
mod client;
#[cfg(all(feature = "auth", feature = "client"))]
pub use client::{
    ApplicationType, AuthorizationResponse, ClientRecord, EnterpriseManaged, FileTokenStore, Grant,
    HeadlessRedirect, LoopbackRedirect, MemoryTokenStore, OAuthClient, OAuthClientBuilder,
    PreRegistered, RedirectHandler, SigningKey, StoredToken, TokenStore,
};
