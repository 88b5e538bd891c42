//! Authorization on both sides (the book's "Authorization" chapter includes this file).
//!
//! * `auth ADDR ISSUER`: a server that is an OAuth 2.1 resource server. Every request to
//!   `/mcp` needs a bearer JWT from `ISSUER` meant for `http://ADDR/mcp`; `read_notes` needs
//!   the scope `notes:read`, `write_note` the scope `notes:write` (which implies `notes:read`).
//!   Its Protected Resource Metadata is at `/.well-known/oauth-protected-resource/mcp`.
//! * `auth --call URL`: a host calling `read_notes` on such a server: on the first `401` the
//!   OAuth client discovers the authorization server, registers, opens the browser for the
//!   authorization code flow (PKCE) and keeps the tokens in a file for the next run.
//!
//! ```sh
//! cargo run -q -p duomcp --example auth -- 127.0.0.1:3452 https://auth.example.com &
//! curl -s -o /dev/null -w '%{http_code}\n' -X POST http://127.0.0.1:3452/mcp
//! ```
//!
//! ```text
//! 401
//! ```

use duomcp::auth::{
    FileTokenStore, JwtValidator, LoopbackRedirect, OAuthClient, ResourceServer, ScopeHierarchy,
};
use duomcp::client::Client;
use duomcp::server::{Context, Server, ToolSpec};
use duomcp::transport::http::{HttpConfig, StreamableHttp};

// ANCHOR: server
/// The MCP server: two tools, each needing a scope.
fn notes() -> Server {
    Server::builder()
        .name("notes")
        .tool(
            ToolSpec::new("read_notes").scopes(["notes:read"]),
            |ctx: Context| async move {
                // The caller, as the token named it (never the token itself).
                let who = ctx.principal().and_then(|p| p.subject()).unwrap_or("?");
                format!("{who}'s notes: (none yet)")
            },
        )
        .tool(
            ToolSpec::new("write_note").scopes(["notes:write"]),
            || async { "written" },
        )
        .build()
}

/// The server behind its resource server: tokens checked before any MCP request.
async fn serve(addr: &str, issuer: &str) -> Result<(), Box<dyn std::error::Error>> {
    let resource = format!("http://{addr}/mcp"); // the tokens' audience
    let resource_server = ResourceServer::builder(&resource)
        .authorization_server(issuer)
        .scopes_supported(["notes:read", "notes:write"])
        .scope_hierarchy(ScopeHierarchy::new().implies("notes:write", ["notes:read"]))
        .validator(
            // The issuer's metadata names its keys (fetched on the first token, then cached).
            JwtValidator::builder(issuer, &resource)
                .discover_jwks()
                .build()?,
        )
        .build()?;
    let http = StreamableHttp::with_config(notes(), HttpConfig::default());
    // `protect` wraps the MCP routes and adds the metadata route.
    let app = resource_server.protect(http.router());
    let listener = tokio::net::TcpListener::bind(addr).await?;
    eprintln!("auth: listening on http://{addr}/mcp");
    duomcp::transport::http::serve(listener, app).await?;
    Ok(())
}
// ANCHOR_END: server

// ANCHOR: client
/// A host calling `read_notes`: the OAuth client answers the server's `401` by itself.
async fn call(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let oauth = OAuthClient::builder()
        .client_name("notes host")
        .scopes(["notes:read"])
        // The browser comes back to http://127.0.0.1:33418/callback with the code.
        .redirect(LoopbackRedirect::new(LoopbackRedirect::DEFAULT_PORT))
        // Tokens and registrations outlive the process (else: in memory).
        .store(FileTokenStore::new("target/notes-tokens.json"))
        .build()?;
    let client = Client::builder().auth(oauth).connect_http(url).await?;
    let result = client
        .call_tool("read_notes", serde_json::json!({}))
        .await?;
    println!("{}", serde_json::to_string(&result)?);
    Ok(())
}
// ANCHOR_END: client

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, url] if flag == "--call" => call(url).await,
        [addr, issuer] => serve(addr, issuer).await,
        _ => {
            eprintln!("usage: auth ADDR ISSUER | auth --call URL");
            std::process::exit(2);
        }
    }
}
