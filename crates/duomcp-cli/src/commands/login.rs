//! `duomcp login URL`: authorize against an MCP server once (OAuth 2.1 in the browser) and keep
//! the tokens, so that every later client command against that URL is authenticated.
//!
//! ```text
//! duomcp login https://mcp.example.com/mcp          # opens the browser, waits on 127.0.0.1:33418
//! duomcp tools https://mcp.example.com/mcp          # uses (and refreshes) the stored token
//! duomcp login --logout https://mcp.example.com/mcp # forgets it
//! ```
//!
//! Tokens and client registrations live in `$XDG_CONFIG_HOME/duomcp/credentials.json`
//! (`~/.config/duomcp/credentials.json`), readable by the owner only; `--store` picks another
//! file.

use super::Failure;
use clap::Args;
use duomcp::auth::{
    AuthorizationResponse, FileTokenStore, LoopbackRedirect, OAuthClient, PreRegistered,
    RedirectHandler, TokenStore,
};
use duomcp::client::auth::{AuthError, AuthFuture};
use std::path::PathBuf;
use std::process::ExitCode;

/// `duomcp login`.
#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The MCP server's Streamable HTTP URL.
    #[arg(value_name = "URL")]
    pub url: String,
    /// The loopback port the browser is sent back to (`http://127.0.0.1:PORT/callback`).
    #[arg(long, default_value_t = LoopbackRedirect::DEFAULT_PORT)]
    pub port: u16,
    /// Print the authorization URL instead of opening a browser.
    #[arg(long)]
    pub no_browser: bool,
    /// A client id registered with the authorization server beforehand (otherwise the client
    /// registers itself).
    #[arg(long, value_name = "ID")]
    pub client_id: Option<String>,
    /// The secret of `--client-id`.
    #[arg(long, value_name = "SECRET", requires = "client_id")]
    pub client_secret: Option<String>,
    /// Extra scopes to request (repeatable).
    #[arg(long = "scope", value_name = "SCOPE")]
    pub scopes: Vec<String>,
    /// The credentials file (default `~/.config/duomcp/credentials.json`).
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// Forget the stored tokens for URL instead.
    #[arg(long)]
    pub logout: bool,
}

fn store(path: Option<PathBuf>) -> Result<FileTokenStore, Failure> {
    path.or_else(FileTokenStore::default_path)
        .map(FileTokenStore::new)
        .ok_or_else(|| Failure::new("no home directory for the credentials file; use --store"))
}

fn oauth(store: FileTokenStore, port: u16, open_browser: bool) -> OAuthClientBuilder {
    OAuthClient::builder()
        .client_name("duomcp")
        .redirect(LoopbackRedirect::new(port).open_browser(open_browser))
        .store(store)
}

use duomcp::auth::OAuthClientBuilder;

/// Runs `duomcp login`.
pub async fn run(args: LoginArgs) -> ExitCode {
    match login(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            failure.report(false);
            ExitCode::FAILURE
        }
    }
}

async fn login(args: LoginArgs) -> Result<(), Failure> {
    if !super::is_url(&args.url) {
        return Err(Failure::new(format!(
            "`{}` is not an http(s) URL",
            args.url
        )));
    }
    let store = store(args.store)?;
    if args.logout {
        store
            .remove_token(&args.url)
            .await
            .map_err(|e| Failure::new(e.to_string()))?;
        eprintln!("Forgot the tokens for {}", args.url);
        return Ok(());
    }
    // A server that answers without a token has nothing to log in to (unless scopes are asked
    // for: a server may serve some tools anonymously and others only with a scope).
    if args.scopes.is_empty() && answers_without_token(&args.url).await? {
        eprintln!(
            "{} does not ask for authorization (it answered without a token): there is nothing to log in to, and client commands work as they are",
            args.url
        );
        return Ok(());
    }
    let mut builder = oauth(store.clone(), args.port, !args.no_browser).scopes(args.scopes);
    if let Some(id) = args.client_id {
        let mut p = PreRegistered::new(id);
        if let Some(secret) = args.client_secret {
            p = p.secret(secret);
        }
        builder = builder.pre_registered(p);
    }
    let client = builder.build().map_err(|e| Failure::new(e.to_string()))?;
    let token = client
        .login(&args.url)
        .await
        .map_err(|e| Failure::new(format!("login to {} failed: {e}", args.url)))?;
    let scopes = if token.scopes.is_empty() {
        "no particular scope".to_owned()
    } else {
        token.scopes.join(" ")
    };
    eprintln!(
        "Logged in to {} (authorization server {}, {scopes}); tokens stored in {}",
        args.url,
        token.issuer,
        store.path().display()
    );
    Ok(())
}

/// Whether the MCP server at `url` can be used without a token: `false` when it asks for one
/// (`401`), an error when it cannot be reached at all.
async fn answers_without_token(url: &str) -> Result<bool, Failure> {
    use duomcp::client::transport::TransportError;
    use duomcp::client::{Client, ClientError};
    let probe = Client::builder()
        .name("duomcp-cli")
        .version(env!("CARGO_PKG_VERSION"))
        .request_timeout(std::time::Duration::from_secs(15))
        .connect_http(url);
    match tokio::time::timeout(std::time::Duration::from_secs(20), probe).await {
        Ok(Ok(client)) => {
            let _ = client.close().await;
            Ok(true)
        }
        Ok(Err(ClientError::Transport(TransportError::Http { status: 401, .. })))
        | Ok(Err(ClientError::Transport(TransportError::Auth(_)))) => Ok(false),
        Ok(Err(e)) => Err(Failure::new(format!(
            "cannot reach {url}: {}",
            super::errors::describe(&e, Some(url))
        ))),
        Err(_) => Err(Failure::new(format!("{url} did not answer within 20 s"))),
    }
}

/// The OAuth client for `url` when `duomcp login` stored tokens for it: client commands use it
/// so that requests carry the token, and a refresh or step-up happens when needed. A new
/// authorization, when the server refuses the token and no refresh helps, opens the browser if
/// `browser`; otherwise it fails, saying what to do.
pub(crate) async fn stored_auth(url: &str, browser: bool) -> Option<OAuthClient> {
    let store = default_store()?;
    store.load_token(url).await.ok().flatten()?;
    if browser {
        oauth(store, LoopbackRedirect::DEFAULT_PORT, true)
            .build()
            .ok()
    } else {
        OAuthClient::builder()
            .client_name("duomcp")
            .redirect(NoNewLogin(url.to_owned()))
            .store(store)
            .build()
            .ok()
    }
}

/// A redirect handler that never sends anyone anywhere: the stored tokens are used (and
/// refreshed), a new authorization is refused with the way to get one.
struct NoNewLogin(String);

impl RedirectHandler for NoNewLogin {
    fn redirect_uri(&self) -> String {
        LoopbackRedirect::new(LoopbackRedirect::DEFAULT_PORT).redirect_uri()
    }

    fn authorize<'a>(
        &'a self,
        _authorization_url: &'a str,
    ) -> AuthFuture<'a, Result<AuthorizationResponse, AuthError>> {
        let message = format!(
            "the server refused the stored token for {} and it could not be refreshed: authorize again (Authorize in the inspector's connect form, or `duomcp login {}`)",
            self.0, self.0
        );
        Box::pin(async move { Err(AuthError::Failed(message)) })
    }
}

/// The credentials file `duomcp login` writes by default (and the inspector's Authorize too).
pub(crate) fn default_store() -> Option<FileTokenStore> {
    FileTokenStore::default_path().map(FileTokenStore::new)
}
