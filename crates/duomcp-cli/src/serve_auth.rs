//! `duomcp serve --auth-*`: the reference server as an OAuth protected resource (the
//! library's [`ResourceServer`] in front of its endpoint), with the conformance fixtures'
//! scopes required (see [`FIXTURE_SCOPES`](crate::reference::FIXTURE_SCOPES)).
//!
//! ```text
//! # JWTs from an authorization server (keys from its metadata's jwks_uri):
//! duomcp serve --http 127.0.0.1:3000 --auth-issuer https://auth.example.com
//! # Fixed opaque tokens, and requests without a token let in holding every scope (the
//! # conformance suite's SEP-2350 fixture):
//! duomcp serve --http 127.0.0.1:3000 --auth-issuer http://127.0.0.1:3000 \
//!   --auth-token 'low=mcp:conformance:baseline' --auth-anonymous
//! ```

use duomcp::auth::{JwtValidator, ResourceServer, StaticTokens};
use duomcp::server::Principal;

/// The `--auth-*` options of `duomcp serve`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServeAuthArgs {
    /// With --http: require OAuth bearer tokens, this being the authorization server that
    /// issues them (named in the protected-resource metadata). Tokens are JWTs it signed
    /// (keys from its metadata's `jwks_uri`, or --auth-jwks-url), meant for --auth-resource;
    /// with --auth-token, only those tokens are accepted instead.
    #[arg(long, value_name = "URL", requires = "http")]
    pub auth_issuer: Option<String>,
    /// With --auth-issuer: the issuer's JWKS (default: the `jwks_uri` of its metadata).
    #[arg(
        long,
        value_name = "URL",
        requires = "auth_issuer",
        conflicts_with = "auth_tokens"
    )]
    pub auth_jwks_url: Option<String>,
    /// With --auth-issuer: this server's canonical URI, the audience tokens must name and the
    /// `resource` of its metadata (default: `http://HOST:PORT/mcp` as bound; https with TLS).
    #[arg(long, value_name = "URL", requires = "auth_issuer")]
    pub auth_resource: Option<String>,
    /// With --auth-issuer: a scope every request must hold (repeatable).
    #[arg(long = "auth-scope", value_name = "SCOPE", requires = "auth_issuer")]
    pub auth_scopes: Vec<String>,
    /// With --auth-issuer: accept the opaque bearer token TOKEN as granting SCOPES (separated
    /// by spaces or commas; repeatable), instead of JWTs: for development and test fixtures.
    #[arg(
        long = "auth-token",
        value_name = "TOKEN=SCOPES",
        requires = "auth_issuer"
    )]
    pub auth_tokens: Vec<String>,
    /// With --auth-issuer: let requests without an `Authorization` header in, holding SCOPES
    /// (spaces or commas), or every scope when none are given; a request needing more is
    /// answered `401` naming the scopes. A request with a token is checked as usual.
    #[arg(
        long,
        value_name = "SCOPES",
        num_args = 0..=1,
        default_missing_value = "*",
        requires = "auth_issuer"
    )]
    pub auth_anonymous: Option<String>,
}

/// Scopes separated by spaces or commas (empty items dropped).
fn scopes(list: &str) -> Vec<String> {
    list.split([' ', ','])
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

impl ServeAuthArgs {
    /// Whether any `--auth-*` option asks for authentication.
    pub fn enabled(&self) -> bool {
        self.auth_issuer.is_some()
    }

    /// Checks what can be checked before binding (the `--auth-token` values).
    ///
    /// ```
    /// use duomcp_cli::serve_auth::ServeAuthArgs;
    /// let mut args = ServeAuthArgs::default();
    /// args.auth_issuer = Some("https://auth.example.com".into());
    /// args.auth_tokens = vec!["t=a b".into()];
    /// assert!(args.check().is_ok());
    /// args.auth_tokens = vec!["no-scopes-separator".into()];
    /// assert!(args.check().is_err());
    /// ```
    pub fn check(&self) -> Result<(), String> {
        self.static_tokens().map(|_| ())
    }

    fn static_tokens(&self) -> Result<Option<StaticTokens>, String> {
        if self.auth_tokens.is_empty() {
            return Ok(None);
        }
        let mut tokens = StaticTokens::new();
        for (i, arg) in self.auth_tokens.iter().enumerate() {
            let Some((token, granted)) = arg.split_once('=') else {
                return Err(format!(
                    "--auth-token #{}: `TOKEN=SCOPES` expected (no `=`)",
                    i + 1
                ));
            };
            let ok = !token.is_empty()
                && token
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b) || b == b'=');
            if !ok {
                return Err(format!(
                    "--auth-token #{}: the token is not a bearer token (letters, digits, `-._~+/`)",
                    i + 1
                ));
            }
            // Each token its own principal: sessions and fairness tell them apart.
            let principal = Principal::new(format!("token-{}", i + 1)).with_scopes(scopes(granted));
            tokens = tokens.with(token, principal);
        }
        Ok(Some(tokens))
    }

    /// The resource server the options describe, for the endpoint bound at `local` (`https`
    /// with `tls`); `None` without `--auth-issuer`.
    pub fn resource_server(
        &self,
        local: std::net::SocketAddr,
        tls: bool,
    ) -> Result<Option<ResourceServer>, String> {
        let Some(issuer) = &self.auth_issuer else {
            return Ok(None);
        };
        let scheme = if tls { "https" } else { "http" };
        let resource = self
            .auth_resource
            .clone()
            .unwrap_or_else(|| format!("{scheme}://{local}/mcp"));
        let mut supported: Vec<String> = crate::reference::FIXTURE_SCOPES
            .iter()
            .flat_map(|(_, _, s)| s.iter().map(|s| (*s).to_owned()))
            .filter(|s| !s.contains('{'))
            .collect();
        supported.extend(self.auth_scopes.iter().cloned());
        // Each scope once, in the order first named (a `--auth-scope` may repeat a fixture's).
        let mut seen = std::collections::HashSet::new();
        supported.retain(|s| seen.insert(s.clone()));
        let mut b = ResourceServer::builder(resource.clone())
            .authorization_server(issuer.clone())
            .scopes_supported(supported)
            .required_scopes(self.auth_scopes.clone());
        if let Some(granted) = &self.auth_anonymous {
            let anonymous = Principal::new("anonymous");
            b = b.anonymous(if granted == "*" {
                anonymous.with_all_scopes()
            } else {
                anonymous.with_scopes(scopes(granted))
            });
        }
        let fail = |e: duomcp::auth::ConfigError| format!("--auth-*: {}", e.0);
        b = match self.static_tokens()? {
            Some(tokens) => b.validator(tokens),
            None => {
                let v = JwtValidator::builder(issuer.clone(), resource);
                let v = match &self.auth_jwks_url {
                    Some(url) => v.jwks_url(url.clone()),
                    None => v.discover_jwks(),
                };
                b.validator(v.build().map_err(fail)?)
            }
        };
        b.build().map(Some).map_err(fail)
    }
}
