//! TLS for the Streamable HTTP server (feature `tls`): rustls with ring, certificates from PEM,
//! ALPN `h2` (with feature `http2`) and `http/1.1`.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use duomcp::transport::http::{tls, StreamableHttp};
//! let config = tls::server_config_from_pem_files("cert.pem".as_ref(), "key.pem".as_ref())?;
//! let http = StreamableHttp::new(duomcp::server::Server::builder().build());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3443").await?;
//! http.serve_tls(listener, config).await?; // https://127.0.0.1:3443/mcp
//! # Ok(()) }
//! ```

use super::conn::Transport;
use super::StreamableHttp;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_rustls::rustls;

pub use rustls::pki_types::{CertificateDer, PrivateKeyDer};
/// rustls's server configuration, under a name of its own: `duomcp::server::ServerConfig` is
/// the MCP server's.
pub use rustls::ServerConfig as RustlsServerConfig;
/// The name [`RustlsServerConfig`] had here; kept so code naming it compiles.
#[doc(hidden)]
pub use rustls::ServerConfig;

/// Why a TLS configuration could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A PEM file could not be read or holds nothing usable.
    #[error("{path}: {message}")]
    Pem {
        /// The file.
        path: String,
        /// What was wrong with it.
        message: String,
    },
    /// rustls refused the certificate chain or the key.
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The ALPN protocols offered, most preferred first.
fn alpn() -> Vec<Vec<u8>> {
    let mut protocols = Vec::new();
    if cfg!(feature = "http2") {
        protocols.push(b"h2".to_vec());
    }
    protocols.push(b"http/1.1".to_vec());
    protocols
}

/// A server configuration for `cert_chain` (leaf first) and its `key`: TLS 1.2 and 1.3 with
/// ring's cipher suites, no client certificates, ALPN `h2` (with feature `http2`) then
/// `http/1.1`.
///
/// ```
/// use duomcp::transport::http::tls;
/// // No certificate: rustls says why.
/// let key = tls::PrivateKeyDer::Pkcs8(vec![0u8; 8].into());
/// assert!(tls::server_config(Vec::new(), key).is_err());
/// ```
pub fn server_config(
    cert_chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<RustlsServerConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = RustlsServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(cert_chain, key)?;
    config.alpn_protocols = alpn();
    Ok(Arc::new(config))
}

/// [`server_config`] from a PEM file holding the certificate chain (leaf first) and one holding
/// the private key (PKCS#8, PKCS#1 or SEC1).
pub fn server_config_from_pem_files(
    cert_chain: &Path,
    key: &Path,
) -> Result<Arc<RustlsServerConfig>, TlsError> {
    use rustls::pki_types::pem::PemObject;
    let pem_error = |path: &Path, message: String| TlsError::Pem {
        path: path.display().to_string(),
        message,
    };
    let certs = CertificateDer::pem_file_iter(cert_chain)
        .map_err(|e| pem_error(cert_chain, e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(cert_chain, e.to_string()))?;
    if certs.is_empty() {
        return Err(pem_error(cert_chain, "no CERTIFICATE in the file".into()));
    }
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| pem_error(key, e.to_string()))?;
    server_config(certs, key_der)
}

impl StreamableHttp {
    /// Like [`serve`](Self::serve), over TLS with `config` (see [`server_config`]): HTTP/2 when
    /// the client picks `h2` by ALPN (feature `http2`), HTTP/1.1 otherwise. The TLS handshake
    /// must finish within [`HttpConfig::header_read_timeout`](super::HttpConfig).
    pub async fn serve_tls(
        self,
        listener: TcpListener,
        config: Arc<RustlsServerConfig>,
    ) -> std::io::Result<()> {
        self.serve_tls_with_shutdown(listener, config, std::future::pending())
            .await
    }

    /// Like [`serve_with_shutdown`](Self::serve_with_shutdown), over TLS with `config`.
    pub async fn serve_tls_with_shutdown<F>(
        self,
        listener: TcpListener,
        config: Arc<RustlsServerConfig>,
        signal: F,
    ) -> std::io::Result<()>
    where
        F: Future<Output = ()> + Send,
    {
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        if let Ok(addr) = listener.local_addr() {
            self.inner.guard.add_bound(addr);
        }
        self.accept_loop(listener, signal, Transport::Tls(acceptor))
            .await
    }
}
