//! The metadata documents of OAuth discovery: Protected Resource Metadata (RFC 9728) and
//! Authorization Server Metadata (RFC 8414, OpenID Connect Discovery).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// OAuth 2.0 Protected Resource Metadata (RFC 9728): what an MCP server publishes about itself
/// at `/.well-known/oauth-protected-resource[/path]`.
///
/// ```
/// use duomcp::auth::ProtectedResourceMetadata;
/// let prm = ProtectedResourceMetadata::new("https://mcp.example.com/mcp", ["https://auth.example.com"]);
/// let json = serde_json::to_value(&prm).unwrap();
/// assert_eq!(json["authorization_servers"][0], "https://auth.example.com");
/// assert_eq!(json["bearer_methods_supported"][0], "header");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProtectedResourceMetadata {
    /// The resource identifier: the MCP server's canonical URI.
    pub resource: String,
    /// Issuers of the authorization servers that issue tokens for this resource.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// Scopes a client may request (the minimal set for basic use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// How tokens may be presented; only `header` is supported by MCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_methods_supported: Option<Vec<String>>,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
    /// A page for developers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_documentation: Option<String>,
    /// Other members, kept as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ProtectedResourceMetadata {
    /// Metadata for `resource`, served by the given authorization servers, tokens in the
    /// `Authorization` header only.
    pub fn new<I, S>(resource: impl Into<String>, authorization_servers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ProtectedResourceMetadata {
            resource: resource.into(),
            authorization_servers: authorization_servers.into_iter().map(Into::into).collect(),
            scopes_supported: None,
            bearer_methods_supported: Some(vec!["header".into()]),
            resource_name: None,
            resource_documentation: None,
            extra: Map::new(),
        }
    }
}

/// OAuth 2.0 Authorization Server Metadata (RFC 8414) or an OpenID Provider configuration:
/// the members an MCP client uses, the rest kept in `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuthorizationServerMetadata {
    /// The issuer identifier; must equal the one the metadata URL was built from.
    pub issuer: String,
    /// Where the user authorizes (absent for servers that only do machine grants).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_endpoint: Option<String>,
    /// Where codes and grants are exchanged for tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    /// Dynamic Client Registration (RFC 7591).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    /// Token introspection (RFC 7662).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub introspection_endpoint: Option<String>,
    /// The server's signing keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    /// Scopes the server knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// `code`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_types_supported: Option<Vec<String>>,
    /// `authorization_code`, `refresh_token`, `client_credentials`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_types_supported: Option<Vec<String>>,
    /// PKCE methods; an MCP client refuses to proceed when this is absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// `none`, `client_secret_basic`, `client_secret_post`, `private_key_jwt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// JWS algorithms accepted for `private_key_jwt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_signing_alg_values_supported: Option<Vec<String>>,
    /// Client ID Metadata Documents are accepted as `client_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id_metadata_document_supported: Option<bool>,
    /// RFC 9207: the server puts `iss` in every authorization response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// RFC 9449: algorithms accepted in DPoP proofs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// Other members, kept as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AuthorizationServerMetadata {
    /// Metadata with only an issuer, for building documents in tests and stand-ins.
    pub fn new(issuer: impl Into<String>) -> Self {
        AuthorizationServerMetadata {
            issuer: issuer.into(),
            authorization_endpoint: None,
            token_endpoint: None,
            registration_endpoint: None,
            introspection_endpoint: None,
            jwks_uri: None,
            scopes_supported: None,
            response_types_supported: None,
            grant_types_supported: None,
            code_challenge_methods_supported: None,
            token_endpoint_auth_methods_supported: None,
            token_endpoint_auth_signing_alg_values_supported: None,
            client_id_metadata_document_supported: None,
            authorization_response_iss_parameter_supported: None,
            dpop_signing_alg_values_supported: None,
            extra: Map::new(),
        }
    }

    /// Whether `scopes_supported` lists `scope`.
    pub fn supports_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|x| x == scope))
    }

    /// Whether `token_endpoint_auth_methods_supported` lists `method`; an absent list means
    /// `client_secret_basic` only (RFC 8414 §2).
    pub fn supports_auth_method(&self, method: &str) -> bool {
        match &self.token_endpoint_auth_methods_supported {
            Some(list) => list.iter().any(|m| m == method),
            None => method == "client_secret_basic",
        }
    }
}

/// The well-known URLs of an issuer's metadata, in the order MCP clients try them.
///
/// ```
/// use duomcp::auth::authorization_server_metadata_urls as urls;
/// assert_eq!(urls("https://as.example.com").unwrap(), [
///     "https://as.example.com/.well-known/oauth-authorization-server",
///     "https://as.example.com/.well-known/openid-configuration",
/// ]);
/// assert_eq!(urls("https://as.example.com/tenant1").unwrap(), [
///     "https://as.example.com/.well-known/oauth-authorization-server/tenant1",
///     "https://as.example.com/.well-known/openid-configuration/tenant1",
///     "https://as.example.com/tenant1/.well-known/openid-configuration",
/// ]);
/// ```
pub fn authorization_server_metadata_urls(issuer: &str) -> Result<Vec<String>, String> {
    let (origin, path) = split_origin_path(issuer)?;
    let path = path.trim_end_matches('/');
    Ok(if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    })
}

/// The Protected Resource Metadata URLs of an MCP endpoint: the path-suffixed one (when the
/// endpoint has a path), then the root.
///
/// ```
/// use duomcp::auth::protected_resource_metadata_urls as urls;
/// assert_eq!(urls("https://h.example/public/mcp").unwrap(), [
///     "https://h.example/.well-known/oauth-protected-resource/public/mcp",
///     "https://h.example/.well-known/oauth-protected-resource",
/// ]);
/// ```
pub fn protected_resource_metadata_urls(resource: &str) -> Result<Vec<String>, String> {
    let (origin, path) = split_origin_path(resource)?;
    let path = path.trim_end_matches('/');
    let root = format!("{origin}/.well-known/oauth-protected-resource");
    Ok(if path.is_empty() {
        vec![root]
    } else {
        vec![format!("{root}{path}"), root]
    })
}

/// Splits an absolute http(s) URL into `scheme://authority` and its path, dropping query and
/// fragment; the text is kept as given (no normalisation).
pub(crate) fn split_origin_path(url: &str) -> Result<(&str, &str), String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| format!("`{url}` is not an http(s) URL"))?;
    let scheme_len = url.len() - rest.len();
    let end = url.find(['?', '#']).unwrap_or(url.len());
    let authority_end = rest
        .find(['/', '?', '#'])
        .map(|i| i + scheme_len)
        .unwrap_or(url.len());
    if authority_end == scheme_len {
        return Err(format!("`{url}` has no host"));
    }
    let path = if authority_end < end {
        &url[authority_end..end]
    } else {
        ""
    };
    Ok((&url[..authority_end], path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_and_path() {
        assert_eq!(
            split_origin_path("http://localhost:3000").unwrap(),
            ("http://localhost:3000", "")
        );
        assert_eq!(
            split_origin_path("http://localhost:3000/").unwrap(),
            ("http://localhost:3000", "/")
        );
        assert_eq!(
            split_origin_path("https://a/b/c?x=1#f").unwrap(),
            ("https://a", "/b/c")
        );
        assert!(split_origin_path("ftp://a").is_err());
        assert!(split_origin_path("https://").is_err());
        assert_eq!(
            protected_resource_metadata_urls("http://localhost:1/").unwrap(),
            ["http://localhost:1/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn metadata_keeps_unknown_members() {
        let v = serde_json::json!({"issuer": "https://as", "x-custom": 1, "code_challenge_methods_supported": ["S256"]});
        let m: AuthorizationServerMetadata = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(m.extra["x-custom"], 1);
        assert!(m.supports_auth_method("client_secret_basic"));
        assert_eq!(serde_json::to_value(&m).unwrap(), v);
    }
}
