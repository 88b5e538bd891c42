//! The `auth/*` scenarios (issue 7: the OAuth 2.1 client).
//!
//! Every auth scenario has the same shape: connect with an
//! [`AuthProvider`] that performs the flow the mock
//! authorization server expects (discovery, registration or pre-registered credentials from
//! `MCP_CONFORMANCE_CONTEXT`, PKCE, token), then use the server. [`provider`] builds that
//! provider.

use crate::scenarios::{call_every_tool, Error, Run};
use duomcp::auth::{
    EnterpriseManaged, Grant, HeadlessRedirect, OAuthClient, PreRegistered, SigningKey,
};
use duomcp::client::auth::AuthProvider;

/// The client id the suite expects when the authorization server accepts Client ID Metadata
/// Documents.
const CIMD_URL: &str = "https://conformance-test.local/client-metadata.json";

fn ctx<'a>(run: &'a Run, key: &str) -> Result<&'a str, Error> {
    run.context
        .get(key)
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| format!("MCP_CONFORMANCE_CONTEXT has no `{key}`").into())
}

/// The provider for this scenario (the run's `context` carries client credentials for
/// `auth/pre-registration`, `auth/client-credentials-*`, …).
fn provider(run: &Run) -> Result<Option<Box<dyn AuthProvider>>, Error> {
    let mut b = OAuthClient::builder()
        .client_name("duomcp-conformance-client")
        // The mock authorization server approves at once and redirects here.
        .redirect(HeadlessRedirect::new("http://localhost:3000/callback"))
        .client_metadata_url(CIMD_URL);
    match run.scenario.as_str() {
        "auth/pre-registration" => {
            let mut p =
                PreRegistered::new(ctx(run, "client_id")?).secret(ctx(run, "client_secret")?);
            if let Ok(issuer) = ctx(run, "issuer") {
                p = p.issuer(issuer);
            }
            b = b.pre_registered(p);
        }
        "auth/client-credentials-basic" => {
            b = b.grant(Grant::ClientCredentials {
                client_id: ctx(run, "client_id")?.to_owned(),
                secret: Some(ctx(run, "client_secret")?.to_owned()),
                private_key: None,
            });
        }
        "auth/client-credentials-jwt" => {
            b = b.grant(Grant::ClientCredentials {
                client_id: ctx(run, "client_id")?.to_owned(),
                secret: None,
                private_key: Some(SigningKey::from_pkcs8_pem(ctx(run, "private_key_pem")?)?),
            });
        }
        "auth/enterprise-managed-authorization" => {
            b = b.grant(Grant::EnterpriseManaged(EnterpriseManaged {
                idp_token_endpoint: ctx(run, "idp_token_endpoint")?.to_owned(),
                idp_client_id: ctx(run, "idp_client_id")?.to_owned(),
                idp_client_secret: None,
                id_token: ctx(run, "idp_id_token")?.to_owned(),
                client_id: ctx(run, "client_id")?.to_owned(),
                client_secret: Some(ctx(run, "client_secret")?.to_owned()),
            }));
        }
        "auth/wif-jwt-bearer" => {
            b = b.grant(Grant::JwtBearer {
                client_id: ctx(run, "client_id").ok().map(str::to_owned),
                assertion: ctx(run, "valid_jwt")?.to_owned(),
            });
        }
        "auth/dpop" | "auth/dpop-nonce" => b = b.dpop(true),
        _ => {}
    }
    Ok(Some(Box::new(b.build()?)))
}

/// Wraps a boxed provider so that it can be handed to the client builder.
struct Boxed(Box<dyn AuthProvider>);

impl AuthProvider for Boxed {
    fn authorization<'a>(
        &'a self,
        resource_url: &'a str,
    ) -> duomcp::client::auth::AuthFuture<'a, Result<Option<String>, duomcp::client::auth::AuthError>>
    {
        self.0.authorization(resource_url)
    }

    fn request_headers<'a>(
        &'a self,
        method: &'a str,
        url: &'a str,
    ) -> duomcp::client::auth::AuthFuture<
        'a,
        Result<Vec<(String, String)>, duomcp::client::auth::AuthError>,
    > {
        self.0.request_headers(method, url)
    }

    fn on_challenge<'a>(
        &'a self,
        challenge: duomcp::client::auth::Challenge<'a>,
    ) -> duomcp::client::auth::AuthFuture<'a, Result<bool, duomcp::client::auth::AuthError>> {
        self.0.on_challenge(challenge)
    }
}

/// Runs an `auth/*` scenario: authorize, list the tools, call them.
pub(crate) async fn run(run: &Run) -> Result<(), Error> {
    let Some(provider) = provider(run)? else {
        return Err(format!(
            "`{}` needs the OAuth client (issue 7), which is not implemented yet",
            run.scenario
        )
        .into());
    };
    let client = run
        .builder()
        .auth(Boxed(provider))
        .connect_http(&run.url)
        .await?;
    call_every_tool(&client).await?;
    client.close().await?;
    Ok(())
}
