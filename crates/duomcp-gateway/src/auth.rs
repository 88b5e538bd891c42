//! The gateway's two OAuth roles, configured in TOML: a **resource server** in front (`[auth]`:
//! clients present tokens meant for the gateway), and a **client** of each HTTP upstream that
//! wants OAuth (`[upstream.oauth]`: the gateway gets tokens of its own with the
//! client-credentials grant). A client's token is never sent upstream: the upstream sees only
//! the gateway's own credentials.
//!
//! Secrets come from the environment (`client_secret_env`) or, for tests and local use, from
//! the file itself (`client_secret`).

use duomcp::auth::{Grant, IntrospectionValidator, JwtValidator, OAuthClient, ResourceServer};
use serde::Deserialize;

/// `[auth]`: the gateway as an OAuth 2.1 resource server. Every request to the MCP endpoint
/// needs a bearer token meant for `resource`; Protected Resource Metadata (RFC 9728) is served
/// at the well-known URLs; `/healthz` stays open (load balancers probe it without tokens).
///
/// Tokens are checked as JWTs signed by the issuer's keys (`jwks_url`, or the keys the
/// issuer's metadata names), or, with `introspection_url`, by asking the authorization server
/// (RFC 7662).
///
/// ```
/// use duomcp_gateway::GatewayConfig;
/// let config = GatewayConfig::from_toml(r#"
///     [auth]
///     resource = "https://mcp.example.com/mcp"
///     authorization_servers = ["https://auth.example.com"]
///     jwks_url = "https://auth.example.com/jwks"
///     required_scopes = ["mcp"]
///
///     [[upstream]]
///     name = "everything"
///     command = "duomcp"
///     args = ["serve"]
/// "#).unwrap();
/// let rs = config.auth.unwrap().resource_server().unwrap();
/// assert_eq!(rs.metadata().resource, "https://mcp.example.com/mcp");
/// ```
#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// The gateway's canonical resource URI: its MCP endpoint as clients reach it (the
    /// audience tokens must name).
    pub resource: String,
    /// The authorization servers clients are sent to (at least one).
    pub authorization_servers: Vec<String>,
    /// JWT: the `iss` tokens must carry (default: the first authorization server).
    pub issuer: Option<String>,
    /// JWT: where the signing keys are (default: the `jwks_uri` of the issuer's metadata).
    pub jwks_url: Option<String>,
    /// Introspection (instead of JWTs): the RFC 7662 endpoint.
    pub introspection_url: Option<String>,
    /// Introspection: the gateway's client id there (with a secret: HTTP Basic).
    pub client_id: Option<String>,
    /// Introspection: the secret, in the file.
    pub client_secret: Option<String>,
    /// Introspection: the name of the environment variable holding the secret.
    pub client_secret_env: Option<String>,
    /// Scopes listed in the metadata.
    #[serde(default)]
    pub scopes_supported: Vec<String>,
    /// Scopes every request's token must have (`403 insufficient_scope` otherwise).
    #[serde(default)]
    pub required_scopes: Vec<String>,
    /// Allows plain-HTTP key, metadata and introspection URLs on hosts other than loopback
    /// (tests only; loopback is always allowed).
    #[serde(default)]
    pub allow_insecure_http: bool,
}

/// `[upstream.oauth]`: the gateway's own OAuth client for an HTTP upstream, with the
/// client-credentials grant (`io.modelcontextprotocol/oauth-client-credentials`). On the
/// upstream's first `401` the gateway reads its Protected Resource Metadata, asks the
/// authorization server it names for a token for that resource, and sends it from then on
/// (refreshed before it expires, stepped up on `403 insufficient_scope`).
///
/// ```
/// use duomcp_gateway::GatewayConfig;
/// std::env::set_var("REMOTE_CLIENT_SECRET", "s3cr3t"); // the operator's environment
/// let config = GatewayConfig::from_toml(r#"
///     [[upstream]]
///     name = "remote"
///     url = "https://tools.example.com/mcp"
///     [upstream.oauth]
///     client_id = "gateway"
///     client_secret_env = "REMOTE_CLIENT_SECRET"
///     scopes = ["tools:call"]
/// "#).unwrap();
/// assert_eq!(config.upstreams[0].oauth.as_ref().unwrap().client_id, "gateway");
/// ```
#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct UpstreamOAuth {
    /// The gateway's client id at the upstream's authorization server.
    pub client_id: String,
    /// The secret, in the file.
    pub client_secret: Option<String>,
    /// The name of the environment variable holding the secret (read, and refused when
    /// unset, as the configuration is loaded).
    pub client_secret_env: Option<String>,
    /// Scopes to ask for (besides those the upstream's challenge names).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Allows plain-HTTP authorization servers on hosts other than loopback (tests only).
    #[serde(default)]
    pub allow_insecure_http: bool,
}

/// A secret from the file or from the environment; `what` names it in errors.
fn secret(
    inline: &Option<String>,
    env: &Option<String>,
    what: &str,
) -> Result<Option<String>, String> {
    match (inline, env) {
        (Some(_), Some(_)) => Err(format!(
            "{what}: give `client_secret` or `client_secret_env`, not both"
        )),
        (Some(s), None) => Ok(Some(s.clone())),
        (None, Some(var)) => match std::env::var(var) {
            Ok(s) if !s.is_empty() => Ok(Some(s)),
            _ => Err(format!(
                "{what}: the environment variable `{var}` (client_secret_env) is not set"
            )),
        },
        (None, None) => Ok(None),
    }
}

impl AuthConfig {
    /// The problems of this section, one per entry (none: it builds).
    pub(crate) fn problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        if !(self.resource.starts_with("http://") || self.resource.starts_with("https://")) {
            p.push(format!(
                "[auth] resource `{}`: the gateway's MCP endpoint as an http:// or https:// URL",
                self.resource
            ));
        }
        if self.authorization_servers.is_empty() {
            p.push("[auth] authorization_servers: name at least one".into());
        }
        if self.introspection_url.is_some() && self.jwks_url.is_some() {
            p.push("[auth] give `jwks_url` (JWTs) or `introspection_url`, not both".into());
        }
        if self.introspection_url.is_none()
            && (self.client_id.is_some()
                || self.client_secret.is_some()
                || self.client_secret_env.is_some())
        {
            p.push("[auth] `client_id` and its secret are for `introspection_url`".into());
        }
        if let Err(e) = secret(&self.client_secret, &self.client_secret_env, "[auth]") {
            p.push(e);
        }
        p
    }

    /// The resource server this section describes (its validator built, nothing fetched yet).
    pub fn resource_server(&self) -> Result<ResourceServer, String> {
        let problems = self.problems();
        if !problems.is_empty() {
            return Err(problems.join("\n"));
        }
        let issuer = self
            .issuer
            .clone()
            .or_else(|| self.authorization_servers.first().cloned())
            .unwrap_or_default();
        let mut b = ResourceServer::builder(self.resource.clone())
            .required_scopes(self.required_scopes.clone());
        if !self.scopes_supported.is_empty() {
            b = b.scopes_supported(self.scopes_supported.clone());
        }
        for server in &self.authorization_servers {
            b = b.authorization_server(server.clone());
        }
        let fail = |e: duomcp::auth::ConfigError| format!("[auth] {}", e.0);
        b = match &self.introspection_url {
            Some(url) => {
                let mut v = IntrospectionValidator::builder(url.clone(), self.resource.clone())
                    .allow_insecure_http(self.allow_insecure_http);
                if let Some(iss) = &self.issuer {
                    v = v.issuer(iss.clone());
                }
                let secret = secret(&self.client_secret, &self.client_secret_env, "[auth]")?;
                if let (Some(id), Some(s)) = (&self.client_id, secret) {
                    v = v.client_credentials(id.clone(), s);
                }
                b.validator(v.build().map_err(fail)?)
            }
            None => {
                let mut v = JwtValidator::builder(issuer, self.resource.clone())
                    .allow_insecure_http(self.allow_insecure_http);
                v = match &self.jwks_url {
                    Some(url) => v.jwks_url(url.clone()),
                    None => v.discover_jwks(),
                };
                b.validator(v.build().map_err(fail)?)
            }
        };
        b.build().map_err(fail)
    }
}

impl UpstreamOAuth {
    /// The problems of this section for upstream `name`.
    pub(crate) fn problems(&self, name: &str) -> Vec<String> {
        let what = format!("upstream `{name}` [oauth]");
        let mut p = Vec::new();
        if self.client_id.is_empty() {
            p.push(format!("{what}: `client_id` is empty"));
        }
        match secret(&self.client_secret, &self.client_secret_env, &what) {
            Ok(Some(_)) => {}
            Ok(None) => p.push(format!(
                "{what}: the client-credentials grant needs `client_secret` or `client_secret_env`"
            )),
            Err(e) => p.push(e),
        }
        p
    }

    /// The OAuth client this section describes (tokens in memory, per gateway process).
    pub fn client(&self, name: &str) -> Result<OAuthClient, String> {
        let what = format!("upstream `{name}` [oauth]");
        let secret = secret(&self.client_secret, &self.client_secret_env, &what)?;
        OAuthClient::builder()
            .client_name("duomcp-gateway")
            .grant(Grant::ClientCredentials {
                client_id: self.client_id.clone(),
                secret,
                private_key: None,
            })
            .scopes(self.scopes.clone())
            .allow_insecure_http(self.allow_insecure_http)
            .build()
            .map_err(|e| format!("{what}: {e}"))
    }
}

#[cfg(test)]
mod tests {
    fn auth(extra: &str) -> String {
        format!(
            "[auth]\nresource = 'http://127.0.0.1:3000/mcp'\nauthorization_servers = ['http://127.0.0.1:9000']\n{extra}\n[[upstream]]\nname='a'\ncommand='x'\n"
        )
    }

    #[test]
    fn jwt_and_introspection_sections_build() {
        let c = crate::GatewayConfig::from_toml(&auth("jwks_url = 'http://127.0.0.1:9000/jwks'"))
            .unwrap();
        let rs = c.auth.unwrap().resource_server().unwrap();
        assert_eq!(
            rs.metadata().authorization_servers,
            vec!["http://127.0.0.1:9000".to_owned()]
        );
        let c = crate::GatewayConfig::from_toml(&auth(
            "introspection_url = 'http://127.0.0.1:9000/introspect'\nclient_id = 'gw'\nclient_secret = 's'",
        ))
        .unwrap();
        assert!(c.auth.unwrap().resource_server().is_ok());
    }

    #[test]
    fn impossible_sections_are_refused_with_every_reason() {
        let err = crate::GatewayConfig::from_toml(
            "[auth]\nresource = 'mcp'\nauthorization_servers = []\njwks_url = 'http://h/j'\nintrospection_url = 'http://h/i'\nclient_secret = 'a'\nclient_secret_env = 'B'\n[[upstream]]\nname='r'\nurl='http://h/mcp'\n[upstream.oauth]\nclient_id = ''\n",
        )
        .unwrap_err()
        .to_string();
        for needle in [
            "[auth] resource `mcp`",
            "name at least one",
            "not both",
            "upstream `r` [oauth]: `client_id` is empty",
            "needs `client_secret` or `client_secret_env`",
        ] {
            assert!(err.contains(needle), "{needle:?} missing in {err}");
        }
    }

    #[test]
    fn a_secret_named_by_an_unset_variable_is_refused_by_name() {
        let err = crate::GatewayConfig::from_toml(
            "[[upstream]]\nname='r'\nurl='http://h/mcp'\n[upstream.oauth]\nclient_id = 'gw'\nclient_secret_env = 'DUOMCP_TEST_SURELY_UNSET_SECRET'\n",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("`DUOMCP_TEST_SURELY_UNSET_SECRET`"), "{err}");
    }
}
