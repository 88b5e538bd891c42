//! # duomcp
//!
//! The Model Context Protocol for Rust, both current revisions at once:
//! **2025-11-25** (stateful: `initialize`, sessions, server→client requests) and
//! **2026-07-28** (stateless: `_meta` on every request, `server/discover`, multi-round-trip
//! input requests). Write a server once; it serves clients of either revision.
//!
//! ```no_run
//! use duomcp::server::{Args, Server};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Greet {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! #[tokio::main]
//! async fn main() -> std::io::Result<()> {
//!     Server::builder()
//!         .name("hello")
//!         .tool("greet", |Args(g): Args<Greet>| async move { format!("Hello, {}!", g.name) })
//!         .build()
//!         .serve_stdio()
//!         .await
//! }
//! ```
//!
//! ## Tour
//! * [`client`]: a client for servers of either era: era detection, typed calls, input
//!   handlers (elicitation, sampling, roots), caching, subscriptions.
//! * [`server`]: registering tools, prompts and resources; [`server::Context`] for progress,
//!   logging, cancellation, elicitation, sampling and roots in both eras.
//! * [`transport`]: stdio (and any newline-delimited byte stream).
//! * [`era`]: what differs between the revisions: error codes, `_meta`, result fields.
//! * [`jsonrpc`]: the sans-IO JSON-RPC layer (decode, encode, framing).
//! * [`schema`]: the wire types of both revisions (re-exported `duomcp-schema`).

#![warn(missing_docs)]

pub mod client;
pub mod era;
pub mod jsonrpc;
pub mod server;
pub mod transport;
mod util;

pub use duomcp_schema as schema;
pub use era::Era;
