//! Finding the authorization server of an MCP endpoint: Protected Resource Metadata, then
//! authorization server metadata, in the order both revisions prescribe.

use crate::auth::http as ahttp;
use crate::auth::metadata::{
    authorization_server_metadata_urls, protected_resource_metadata_urls, split_origin_path,
    AuthorizationServerMetadata, ProtectedResourceMetadata,
};
use crate::client::auth::AuthError;

/// What discovery found.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    /// The `resource` parameter to send: the PRM `resource` verbatim, or the endpoint URL.
    pub resource: String,
    /// `scopes_supported` of the PRM.
    pub scopes_supported: Option<Vec<String>>,
    /// The issuer credentials are bound to.
    pub issuer: String,
    /// The authorization server's metadata; `None` in the 2025-03-26 fallback, where the
    /// default endpoints below are guessed from the server's origin.
    pub metadata: Option<AuthorizationServerMetadata>,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
}

impl Discovered {
    /// Whether the authorization server accepts client authentication method `m` (without
    /// metadata, the 2025-03-26 fallback, any is assumed).
    pub(crate) fn supports_auth_method(&self, m: &str) -> bool {
        self.metadata
            .as_ref()
            .is_none_or(|md| md.supports_auth_method(m))
    }
}

fn failed(msg: impl Into<String>) -> AuthError {
    AuthError::Failed(msg.into())
}

/// Whether the PRM `resource` names the endpoint `server`: same scheme, host and port, and a
/// path that is the endpoint's path or one of its parent segments.
pub(crate) fn resource_matches(resource: &str, server: &str) -> bool {
    let (Ok(r), Ok(s)) = (url::Url::parse(resource), url::Url::parse(server)) else {
        return false;
    };
    if r.scheme() != s.scheme()
        || r.host_str().map(str::to_ascii_lowercase) != s.host_str().map(str::to_ascii_lowercase)
        || r.port_or_known_default() != s.port_or_known_default()
        || r.fragment().is_some()
    {
        return false;
    }
    let rp = r.path().trim_end_matches('/');
    let sp = s.path().trim_end_matches('/');
    rp.is_empty() || sp == rp || sp.starts_with(&format!("{rp}/"))
}

async fn fetch_prm(
    http: &reqwest::Client,
    url: &str,
) -> Result<Option<ProtectedResourceMetadata>, AuthError> {
    let answer = match ahttp::get(http, url).await {
        Ok(a) => a,
        Err(e) => {
            tracing::debug!("protected resource metadata at {url}: {e}");
            return Ok(None);
        }
    };
    if !answer.status.is_success() {
        return Ok(None);
    }
    answer
        .json::<ProtectedResourceMetadata>()
        .map(Some)
        .map_err(|e| failed(format!("protected resource metadata at {url}: {e}")))
}

/// Finds the PRM: the URL from the challenge first, then the path-suffixed and root
/// well-known URLs. A document whose `resource` does not name `endpoint` is refused.
pub(crate) async fn protected_resource(
    http: &reqwest::Client,
    endpoint: &str,
    from_challenge: Option<&str>,
    allow_http: bool,
) -> Result<Option<ProtectedResourceMetadata>, AuthError> {
    let mut urls = Vec::new();
    if let Some(u) = from_challenge {
        ahttp::require_secure(u, allow_http, "resource_metadata URL").map_err(failed)?;
        urls.push(u.to_owned());
    }
    for u in protected_resource_metadata_urls(endpoint).map_err(failed)? {
        if !urls.contains(&u) {
            urls.push(u);
        }
    }
    for url in urls {
        if let Some(prm) = fetch_prm(http, &url).await? {
            if !resource_matches(&prm.resource, endpoint) {
                return Err(failed(format!(
                    "the protected resource metadata names resource `{}`, which is not `{endpoint}`; refusing to authorize",
                    prm.resource
                )));
            }
            return Ok(Some(prm));
        }
    }
    Ok(None)
}

/// Fetches the metadata of `issuer`, trying the OAuth and OpenID Connect well-known URLs in
/// order; a document whose `issuer` differs from `issuer` is discarded.
pub(crate) async fn authorization_server(
    http: &reqwest::Client,
    issuer: &str,
) -> Result<Option<AuthorizationServerMetadata>, AuthError> {
    let mut mismatched = None;
    for url in authorization_server_metadata_urls(issuer).map_err(failed)? {
        let answer = match ahttp::get(http, &url).await {
            Ok(a) => a,
            Err(e) => {
                tracing::debug!("authorization server metadata at {url}: {e}");
                continue;
            }
        };
        if !answer.status.is_success() {
            continue;
        }
        let Ok(meta) = answer.json::<AuthorizationServerMetadata>() else {
            continue;
        };
        if meta.issuer != issuer {
            mismatched = Some(meta.issuer);
            continue;
        }
        return Ok(Some(meta));
    }
    match mismatched {
        Some(other) => Err(failed(format!(
            "the authorization server metadata of `{issuer}` names issuer `{other}`; refusing to use it"
        ))),
        None => Ok(None),
    }
}

/// The whole discovery for `endpoint`.
pub(crate) async fn discover(
    http: &reqwest::Client,
    endpoint: &str,
    from_challenge: Option<&str>,
    allow_http: bool,
) -> Result<Discovered, AuthError> {
    let prm = protected_resource(http, endpoint, from_challenge, allow_http).await?;
    let Some(prm) = prm else {
        // 2025-03-26: no PRM; the authorization server is the server's origin.
        let (origin, _) = split_origin_path(endpoint).map_err(failed)?;
        let origin = origin.to_owned();
        let metadata = authorization_server(http, &origin).await?;
        return Ok(match metadata {
            Some(m) => Discovered {
                resource: endpoint.to_owned(),
                scopes_supported: None,
                issuer: origin,
                authorization_endpoint: m.authorization_endpoint.clone(),
                token_endpoint: m
                    .token_endpoint
                    .clone()
                    .ok_or_else(|| failed("the authorization server has no token endpoint"))?,
                registration_endpoint: m.registration_endpoint.clone(),
                metadata: Some(m),
            },
            None => Discovered {
                resource: endpoint.to_owned(),
                scopes_supported: None,
                authorization_endpoint: Some(format!("{origin}/authorize")),
                token_endpoint: format!("{origin}/token"),
                registration_endpoint: Some(format!("{origin}/register")),
                issuer: origin,
                metadata: None,
            },
        });
    };
    let issuer =
        prm.authorization_servers.first().cloned().ok_or_else(|| {
            failed("the protected resource metadata names no authorization server")
        })?;
    ahttp::require_secure(&issuer, allow_http, "authorization server").map_err(failed)?;
    let metadata = authorization_server(http, &issuer).await?.ok_or_else(|| {
        failed(format!(
            "no metadata found for the authorization server `{issuer}`"
        ))
    })?;
    for endpoint in [
        &metadata.authorization_endpoint,
        &metadata.token_endpoint,
        &metadata.registration_endpoint,
    ]
    .into_iter()
    .flatten()
    {
        ahttp::require_secure(endpoint, allow_http, "authorization server endpoint")
            .map_err(failed)?;
    }
    Ok(Discovered {
        resource: prm.resource.clone(),
        scopes_supported: prm.scopes_supported.clone(),
        authorization_endpoint: metadata.authorization_endpoint.clone(),
        token_endpoint: metadata
            .token_endpoint
            .clone()
            .ok_or_else(|| failed("the authorization server has no token endpoint"))?,
        registration_endpoint: metadata.registration_endpoint.clone(),
        issuer,
        metadata: Some(metadata),
    })
}

#[cfg(test)]
mod tests {
    use super::resource_matches;

    #[test]
    fn resource_matching() {
        assert!(resource_matches(
            "http://localhost:3000/mcp",
            "http://localhost:3000/mcp"
        ));
        assert!(resource_matches(
            "http://localhost:3000",
            "http://localhost:3000/mcp"
        ));
        assert!(resource_matches(
            "http://LOCALHOST:3000/",
            "http://localhost:3000/mcp"
        ));
        assert!(resource_matches(
            "https://a.example/x",
            "https://a.example:443/x/mcp"
        ));
        assert!(!resource_matches(
            "https://evil.example.com/mcp",
            "http://localhost:3000/mcp"
        ));
        assert!(!resource_matches(
            "http://localhost:3001/mcp",
            "http://localhost:3000/mcp"
        ));
        assert!(!resource_matches(
            "http://localhost:3000/mc",
            "http://localhost:3000/mcp"
        ));
        assert!(!resource_matches(
            "https://localhost:3000/mcp",
            "http://localhost:3000/mcp"
        ));
        assert!(!resource_matches(
            "http://localhost:3000/mcp#f",
            "http://localhost:3000/mcp"
        ));
        assert!(!resource_matches("not a url", "http://localhost:3000/mcp"));
    }
}
