//! Transports: they frame and move bytes, and never interpret MCP methods.
//!
//! * [`stdio`]: newline-delimited JSON over a child process's stdin/stdout, or any byte stream.

pub mod stdio;
