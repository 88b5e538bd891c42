//! Where an [`OAuthClient`](super::OAuthClient) keeps tokens and client registrations:
//! [`TokenStore`], in memory ([`MemoryTokenStore`]) or in a file ([`FileTokenStore`]).

use crate::client::auth::{AuthError, AuthFuture};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Tokens for one MCP server, bound to the authorization server that issued them.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredToken {
    /// The `resource` the token was requested for (RFC 8707), as published by the server.
    pub resource: String,
    /// The issuer of the authorization server that issued it; it is never presented after
    /// the server names another authorization server.
    pub issuer: String,
    /// The access token.
    pub access_token: String,
    /// `Bearer` or `DPoP`.
    pub token_type: String,
    /// The refresh token, if one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires (seconds since the Unix epoch), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes requested (or granted, when the server said).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Where to refresh it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
}

impl std::fmt::Debug for StoredToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredToken")
            .field("resource", &self.resource)
            .field("issuer", &self.issuer)
            .field("token_type", &self.token_type)
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| ".."))
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// A client registration with one authorization server (keyed by its issuer): credentials
/// are never used with another authorization server.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientRecord {
    /// The issuer the registration belongs to.
    pub issuer: String,
    /// The client identifier.
    pub client_id: String,
    /// The client secret, for confidential clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// `none`, `client_secret_basic` or `client_secret_post`.
    pub token_endpoint_auth_method: String,
    /// The redirect URIs registered.
    #[serde(default)]
    pub redirect_uris: Vec<String>,
}

impl std::fmt::Debug for ClientRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientRecord")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| ".."))
            .field(
                "token_endpoint_auth_method",
                &self.token_endpoint_auth_method,
            )
            .finish_non_exhaustive()
    }
}

/// Persistence for tokens (by MCP endpoint URL) and client registrations (by issuer).
///
/// ```
/// use duomcp::auth::{MemoryTokenStore, TokenStore};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = MemoryTokenStore::new();
/// assert!(store.load_token("https://mcp.example.com/mcp").await.unwrap().is_none());
/// # });
/// ```
pub trait TokenStore: Send + Sync + 'static {
    /// The tokens for the MCP endpoint `endpoint`.
    fn load_token<'a>(
        &'a self,
        endpoint: &'a str,
    ) -> AuthFuture<'a, Result<Option<StoredToken>, AuthError>>;
    /// Stores the tokens for `endpoint` (replacing earlier ones).
    fn save_token<'a>(
        &'a self,
        endpoint: &'a str,
        token: StoredToken,
    ) -> AuthFuture<'a, Result<(), AuthError>>;
    /// Forgets the tokens for `endpoint`.
    fn remove_token<'a>(&'a self, endpoint: &'a str) -> AuthFuture<'a, Result<(), AuthError>>;
    /// The registration with the authorization server `issuer`.
    fn load_client<'a>(
        &'a self,
        issuer: &'a str,
    ) -> AuthFuture<'a, Result<Option<ClientRecord>, AuthError>>;
    /// Stores a registration (keyed by its issuer).
    fn save_client<'a>(&'a self, client: ClientRecord) -> AuthFuture<'a, Result<(), AuthError>>;
}

#[derive(Default, Clone, Serialize, Deserialize)]
struct Data {
    #[serde(default)]
    tokens: BTreeMap<String, StoredToken>,
    #[serde(default)]
    clients: BTreeMap<String, ClientRecord>,
}

/// Tokens in memory, gone when the process ends.
#[derive(Clone, Default)]
pub struct MemoryTokenStore {
    data: Arc<Mutex<Data>>,
}

impl std::fmt::Debug for MemoryTokenStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoryTokenStore(..)")
    }
}

impl MemoryTokenStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut Data) -> T) -> T {
        f(&mut self.data.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl TokenStore for MemoryTokenStore {
    fn load_token<'a>(
        &'a self,
        endpoint: &'a str,
    ) -> AuthFuture<'a, Result<Option<StoredToken>, AuthError>> {
        let t = self.with(|d| d.tokens.get(endpoint).cloned());
        Box::pin(async move { Ok(t) })
    }

    fn save_token<'a>(
        &'a self,
        endpoint: &'a str,
        token: StoredToken,
    ) -> AuthFuture<'a, Result<(), AuthError>> {
        self.with(|d| d.tokens.insert(endpoint.to_owned(), token));
        Box::pin(async { Ok(()) })
    }

    fn remove_token<'a>(&'a self, endpoint: &'a str) -> AuthFuture<'a, Result<(), AuthError>> {
        self.with(|d| d.tokens.remove(endpoint));
        Box::pin(async { Ok(()) })
    }

    fn load_client<'a>(
        &'a self,
        issuer: &'a str,
    ) -> AuthFuture<'a, Result<Option<ClientRecord>, AuthError>> {
        let c = self.with(|d| d.clients.get(issuer).cloned());
        Box::pin(async move { Ok(c) })
    }

    fn save_client<'a>(&'a self, client: ClientRecord) -> AuthFuture<'a, Result<(), AuthError>> {
        self.with(|d| d.clients.insert(client.issuer.clone(), client));
        Box::pin(async { Ok(()) })
    }
}

/// Tokens in a JSON file readable by its owner only (mode `0600` on Unix), rewritten
/// atomically (a temporary file renamed over it).
///
/// ```no_run
/// use duomcp::auth::FileTokenStore;
/// let store = FileTokenStore::new(FileTokenStore::default_path().unwrap());
/// # let _ = store;
/// ```
#[derive(Clone)]
pub struct FileTokenStore {
    path: PathBuf,
    lock: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for FileTokenStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("FileTokenStore").field(&self.path).finish()
    }
}

impl FileTokenStore {
    /// A store in the file at `path` (created on first save).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileTokenStore {
            path: path.into(),
            lock: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// `$XDG_CONFIG_HOME/duomcp/credentials.json`, or `~/.config/duomcp/credentials.json`
    /// (`%APPDATA%\duomcp\credentials.json` on Windows).
    pub fn default_path() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("APPDATA")
                    .filter(|_| cfg!(windows))
                    .map(PathBuf::from)
            })
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".config")))?;
        Some(base.join("duomcp").join("credentials.json"))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    async fn read(&self) -> Result<Data, AuthError> {
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || read_file(&path))
            .await
            .map_err(|e| AuthError::Failed(format!("token store: {e}")))?
    }

    async fn update(&self, f: impl FnOnce(&mut Data) + Send + 'static) -> Result<(), AuthError> {
        let _one_at_a_time = self.lock.lock().await;
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || {
            let mut data = read_file(&path)?;
            f(&mut data);
            write_file(&path, &data)
        })
        .await
        .map_err(|e| AuthError::Failed(format!("token store: {e}")))?
    }
}

fn read_file(path: &Path) -> Result<Data, AuthError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            AuthError::Failed(format!("token store {}: malformed: {e}", path.display()))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Data::default()),
        Err(e) => Err(AuthError::Failed(format!(
            "token store {}: {e}",
            path.display()
        ))),
    }
}

fn write_file(path: &Path, data: &Data) -> Result<(), AuthError> {
    let fail =
        |e: std::io::Error| AuthError::Failed(format!("token store {}: {e}", path.display()));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let bytes = serde_json::to_vec_pretty(data).map_err(|e| AuthError::Failed(e.to_string()))?;
    let tmp = path.with_extension("json.tmp");
    {
        use std::io::Write as _;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600);
        }
        let mut file = options.open(&tmp).map_err(fail)?;
        file.write_all(&bytes).map_err(fail)?;
        file.sync_all().map_err(fail)?;
    }
    std::fs::rename(&tmp, path).map_err(fail)
}

impl TokenStore for FileTokenStore {
    fn load_token<'a>(
        &'a self,
        endpoint: &'a str,
    ) -> AuthFuture<'a, Result<Option<StoredToken>, AuthError>> {
        Box::pin(async move { Ok(self.read().await?.tokens.get(endpoint).cloned()) })
    }

    fn save_token<'a>(
        &'a self,
        endpoint: &'a str,
        token: StoredToken,
    ) -> AuthFuture<'a, Result<(), AuthError>> {
        let key = endpoint.to_owned();
        Box::pin(self.update(move |d| {
            d.tokens.insert(key, token);
        }))
    }

    fn remove_token<'a>(&'a self, endpoint: &'a str) -> AuthFuture<'a, Result<(), AuthError>> {
        let key = endpoint.to_owned();
        Box::pin(self.update(move |d| {
            d.tokens.remove(&key);
        }))
    }

    fn load_client<'a>(
        &'a self,
        issuer: &'a str,
    ) -> AuthFuture<'a, Result<Option<ClientRecord>, AuthError>> {
        Box::pin(async move { Ok(self.read().await?.clients.get(issuer).cloned()) })
    }

    fn save_client<'a>(&'a self, client: ClientRecord) -> AuthFuture<'a, Result<(), AuthError>> {
        Box::pin(self.update(move |d| {
            d.clients.insert(client.issuer.clone(), client);
        }))
    }
}

impl<S: TokenStore + ?Sized> TokenStore for Arc<S> {
    fn load_token<'a>(
        &'a self,
        endpoint: &'a str,
    ) -> AuthFuture<'a, Result<Option<StoredToken>, AuthError>> {
        (**self).load_token(endpoint)
    }
    fn save_token<'a>(
        &'a self,
        endpoint: &'a str,
        token: StoredToken,
    ) -> AuthFuture<'a, Result<(), AuthError>> {
        (**self).save_token(endpoint, token)
    }
    fn remove_token<'a>(&'a self, endpoint: &'a str) -> AuthFuture<'a, Result<(), AuthError>> {
        (**self).remove_token(endpoint)
    }
    fn load_client<'a>(
        &'a self,
        issuer: &'a str,
    ) -> AuthFuture<'a, Result<Option<ClientRecord>, AuthError>> {
        (**self).load_client(issuer)
    }
    fn save_client<'a>(&'a self, client: ClientRecord) -> AuthFuture<'a, Result<(), AuthError>> {
        (**self).save_client(client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(issuer: &str) -> StoredToken {
        StoredToken {
            resource: "https://mcp/mcp".into(),
            issuer: issuer.into(),
            access_token: "SECRET-AT".into(),
            token_type: "Bearer".into(),
            refresh_token: Some("SECRET-RT".into()),
            expires_at: Some(1),
            scopes: vec!["a".into()],
            token_endpoint: None,
        }
    }

    #[tokio::test]
    async fn file_store_round_trips_with_private_permissions() {
        let dir = std::env::temp_dir().join(format!("duomcp-store-{}", std::process::id()));
        let path = dir.join("sub").join("creds.json");
        let store = FileTokenStore::new(&path);
        store
            .save_token("https://mcp/mcp", token("https://as"))
            .await
            .unwrap();
        store
            .save_client(ClientRecord {
                issuer: "https://as".into(),
                client_id: "c".into(),
                client_secret: Some("s".into()),
                token_endpoint_auth_method: "client_secret_basic".into(),
                redirect_uris: vec![],
            })
            .await
            .unwrap();
        let again = FileTokenStore::new(&path);
        assert_eq!(
            again.load_token("https://mcp/mcp").await.unwrap(),
            Some(token("https://as"))
        );
        assert_eq!(
            again
                .load_client("https://as")
                .await
                .unwrap()
                .unwrap()
                .client_id,
            "c"
        );
        assert!(again.load_client("https://other").await.unwrap().is_none());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        again.remove_token("https://mcp/mcp").await.unwrap();
        assert!(store.load_token("https://mcp/mcp").await.unwrap().is_none());
        let _ = std::fs::remove_dir_all(dir);
        // Debug output never shows secrets.
        assert!(!format!("{:?}", token("x")).contains("SECRET"));
    }
}
