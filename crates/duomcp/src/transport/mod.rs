//! Transports: they frame and move bytes, and never interpret MCP methods.
//!
//! * [`stdio`]: newline-delimited JSON over a child process's stdin/stdout, or any byte stream.
//! * [`http`]: Streamable HTTP (server side), both revisions on one endpoint (feature
//!   `http-server`, off by default: `features = ["http-server"]`).
//! * [`memory`]: a client and a server in one process, joined in memory (for tests; feature
//!   `client`).
//!
#![cfg_attr(not(feature = "http-server"), doc = "[`http`]: crate#features")]
#![cfg_attr(not(feature = "client"), doc = "[`memory`]: crate#features")]

#[cfg(feature = "http-server")]
pub mod http;
#[cfg(feature = "client")]
pub mod memory;
pub mod stdio;
