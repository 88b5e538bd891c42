//! Transports: they frame and move bytes, and never interpret MCP methods.
//!
//! * [`stdio`]: newline-delimited JSON over a child process's stdin/stdout, or any byte stream.
//! * [`http`]: Streamable HTTP (server side), both revisions on one endpoint (feature
//!   `http-server`, off by default: `features = ["http-server"]`).
//! * [`memory`]: a client and a server in one process, joined by message channels a test can
//!   tap, script or drive (the client's end needs feature `client`).
//!
#![cfg_attr(not(feature = "http-server"), doc = "[`http`]: crate#features")]

#[cfg(feature = "http-server")]
pub mod http;
pub mod memory;
pub mod stdio;
