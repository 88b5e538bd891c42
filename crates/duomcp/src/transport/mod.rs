//! Transports: they frame and move bytes, and never interpret MCP methods.
//!
//! * [`stdio`]: newline-delimited JSON over a child process's stdin/stdout, or any byte stream.
//! * [`http`]: Streamable HTTP (server side), both revisions on one endpoint (feature
//!   `http-server`, on by default).
//! * [`memory`]: a client and a server in one process, joined in memory (for tests).

#[cfg(feature = "http-server")]
pub mod http;
pub mod memory;
pub mod stdio;
