//! Binding a Unix domain socket for [`StreamableHttp::serve_unix_with_shutdown`]: the socket
//! file's permissions set before anyone can connect, and a stale socket file replaced.
//!
//! [`StreamableHttp::serve_unix_with_shutdown`]: super::StreamableHttp::serve_unix_with_shutdown

use std::io::{Error, ErrorKind};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;

/// How long [`bind_unix`] waits for a connection to an existing socket to succeed or be refused.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// The listen backlog of [`bind_unix`]: connections the kernel queues before they are accepted.
pub const UNIX_BACKLOG: u32 = 1024;

/// Binds a Unix domain socket at `path` for [`serve_unix_with_shutdown`], its file made with
/// permissions `mode` (`0o600`: only this user may connect; `0o660`: this group too).
///
/// The socket is bound, then its file's mode set, and only then does it listen: until then a
/// connection to it is refused, so no client connects while the file has the mode the umask
/// gave it (no umask is changed, which would affect every thread of the process).
///
/// When `path` exists: a socket nobody listens on (a connection to it is refused: a server
/// that ended without removing it) is replaced; a socket something listens on is an error of
/// kind [`ErrorKind::AddrInUse`]; anything else (a file, a directory) is an error of kind
/// [`ErrorKind::AlreadyExists`], and is left alone.
///
/// # Errors
/// The cases above, and those of creating, binding and listening on the socket.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::os::unix::fs::PermissionsExt;
/// let dir = std::env::temp_dir().join(format!("duomcp-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("mcp.sock");
/// let listener = duomcp::transport::http::bind_unix(&path, 0o600).await.unwrap();
/// let mode = std::fs::metadata(&path).unwrap().permissions().mode();
/// assert_eq!(mode & 0o777, 0o600);
/// // Something listens there now: a second server is refused.
/// let err = duomcp::transport::http::bind_unix(&path, 0o600).await.unwrap_err();
/// assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
/// drop(listener);
/// // Nothing listens any more: the stale socket file is replaced.
/// let _listener = duomcp::transport::http::bind_unix(&path, 0o600).await.unwrap();
/// std::fs::remove_dir_all(&dir).unwrap();
/// # });
/// ```
///
/// [`serve_unix_with_shutdown`]: super::StreamableHttp::serve_unix_with_shutdown
pub async fn bind_unix(path: &Path, mode: u32) -> std::io::Result<tokio::net::UnixListener> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            // A connection that neither succeeds nor is refused within the probe time: the
            // listener's queue is full, so something listens.
            let probe = tokio::time::timeout(PROBE_TIMEOUT, tokio::net::UnixStream::connect(path));
            let probe = match probe.await {
                Ok(connected) => connected.map(drop),
                Err(_) => Ok(()),
            };
            match probe {
                Ok(()) => {
                    return Err(Error::new(
                        ErrorKind::AddrInUse,
                        format!("{}: a server is listening on this socket", path.display()),
                    ))
                }
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                    tracing::info!(path = %path.display(), "replacing a stale socket file");
                    match std::fs::remove_file(path) {
                        Err(e) if e.kind() != ErrorKind::NotFound => return Err(e),
                        _ => {}
                    }
                }
                Err(e) => {
                    return Err(Error::new(
                        e.kind(),
                        format!(
                            "{}: cannot tell whether this socket is in use: {e}",
                            path.display()
                        ),
                    ))
                }
            }
        }
        Ok(_) => {
            return Err(Error::new(
                ErrorKind::AlreadyExists,
                format!("{}: exists and is not a socket", path.display()),
            ))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let socket = tokio::net::UnixSocket::new_stream()?;
    socket.bind(path)?;
    if let Err(e) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)) {
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    match socket.listen(UNIX_BACKLOG) {
        Ok(listener) => Ok(listener),
        Err(e) => {
            let _ = std::fs::remove_file(path);
            Err(e)
        }
    }
}
