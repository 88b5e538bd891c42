//! An in-memory transport pair: a client and a server in one process, joined by an in-memory
//! byte channel (no process, no OS pipe, no socket).
//!
//! For tests, yours and ours: the server end runs exactly as it does on stdio (same framing,
//! same limits, both revisions on one connection), and the client end is an ordinary
//! [`Transport`](crate::client::transport::Transport), so a test exercises the whole stack but
//! the operating system.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use duomcp::client::Client;
//! use duomcp::server::Server;
//! use duomcp::transport::memory;
//!
//! let server = Server::builder().tool("hi", || async { "hello" }).build();
//! let (transport, _serving) = memory::pair(server);
//! let client = Client::builder().connect_transport(transport).await.unwrap();
//! assert_eq!(client.protocol_version(), "2026-07-28");
//! let tools = client.list_tools(None).await.unwrap();
//! assert_eq!(tools.tools[0].name, "hi");
//! # });
//! ```

use crate::client::transport::StreamTransport;
use crate::server::Server;
use tokio::task::JoinHandle;

/// How many bytes each direction buffers before the writer waits for the reader (as a pipe's
/// buffer would).
pub const BUFFER: usize = 64 * 1024;

/// Serves `server` on a new in-memory connection and returns the client's end of it, with the
/// task serving the server's end (it ends when the client's end is dropped or closed, or on
/// [`Server::shutdown`]). Needs a Tokio runtime.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let server = duomcp::server::Server::builder().build();
/// let (transport, serving) = duomcp::transport::memory::pair(server);
/// let client = duomcp::client::Client::builder().connect_transport(transport).await.unwrap();
/// client.close().await.unwrap();
/// serving.await.unwrap().unwrap(); // the server's end stops with the client's
/// # });
/// ```
pub fn pair(server: Server) -> (StreamTransport, JoinHandle<std::io::Result<()>>) {
    let (client_end, server_end) = tokio::io::duplex(BUFFER);
    let (server_read, server_write) = tokio::io::split(server_end);
    let serving = tokio::spawn(server.serve_connection(server_read, server_write));
    let (client_read, client_write) = tokio::io::split(client_end);
    (StreamTransport::new(client_read, client_write), serving)
}
