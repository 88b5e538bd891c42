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
//! ## Features
//! The defaults are `macros`, `server`, `full-json-schema` and `skills` (a stdio server).
//! `client`, `http-server`, `http-client` and `auth` are opt-in; the book's feature table (Getting started)
//! says what each brings.
//!
//! ## Tour
//! * [`client`]: a client for servers of either era: era detection, typed calls, input
//!   handlers (elicitation, sampling, roots), caching, subscriptions. What differs by era
//!   goes through a `legacy` or `modern` client adapter (`client/era/`), as on the server.
//! * [`server`]: registering tools, prompts and resources; [`server::Context`] for progress,
//!   logging, cancellation, elicitation, sampling and roots in both eras. Requests go through
//!   one method table and a `legacy` or `modern` era adapter (`server/dispatch/`).
//! * `#[tool]`, `#[prompt]`, `#[resource]` (feature `macros`, on by default): a handler's
//!   definition from its doc comment, `name::spec()`, and compile errors at the faulty
//!   argument or return type.
//! * [`transport`]: stdio (and any newline-delimited byte stream), Streamable HTTP (its
//!   `legacy` and `modern` halves are the transport's era adapters), and an in-memory
//!   client ↔ server pair for tests ([`transport::memory`]).
//! * [`clock`]: the one clock the runtime reads (swap in a `ManualClock` in tests).
//! * [`correlation`]: the one table of requests in flight by id, both directions (pending
//!   answers, running requests to cancel), bounded; a store-backed table can replace it.
//! * [`auth`]: OAuth 2.1 authorization, the resource server (`AuthLayer`, Protected Resource
//!   Metadata, JWT and introspection validators) and the client (`OAuthClient`).
//! * [`era`]: what differs between the revisions: era detection, error codes, `_meta`, and
//!   the named protocol facts (sessions, stream closing, input rounds) the rest asks.
//! * [`jsonrpc`]: the sans-IO JSON-RPC layer (decode, encode, framing).
//! * [`schema`]: the wire types of both revisions (re-exported `duomcp-schema`).
//!
//! `ARCHITECTURE.md` at the repository root maps every folder, what holds there, and what it
//! must not import. `examples/` has a stdio server (`quickstart`, `stdio_server`), an endpoint inside an axum
//! application (`axum_app`), a host calling a tool (`client_host`) and elicitation in both
//! revisions (`elicitation`), each opening with the methods it handles and a session to paste.

// A link to what a feature set leaves out points at the features instead: docs.rs builds
// with all of them, and a partial build's `cargo doc` stays free of broken links.
//!
#![cfg_attr(not(feature = "client"), doc = "[`client`]: crate#features")]
#![cfg_attr(not(feature = "server"), doc = "[`server`]: crate#features")]
#![cfg_attr(not(feature = "server"), doc = "[`server::Context`]: crate#features")]
#![cfg_attr(not(feature = "server"), doc = "[`transport`]: crate#features")]
#![cfg_attr(not(feature = "server"), doc = "[`transport::memory`]: crate#features")]
#![cfg_attr(not(feature = "server"), doc = "[`auth`]: crate#features")]
// docs.rs (`--cfg docsrs`, nightly): each gated item labelled with the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

#[cfg(feature = "server")]
pub mod auth;
#[cfg(feature = "client")]
pub mod client;
pub mod clock;
mod common;
pub use common::correlation;
#[cfg(feature = "skills")]
pub use common::skills;
#[cfg(feature = "events")]
pub use common::webhook;
pub mod era;
pub mod jsonrpc;
#[cfg(feature = "otel")]
pub mod otel;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(any(feature = "server", feature = "client"))]
use duomcp_proto::schema_check;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
pub mod transport;
// Small helpers of every runtime (the correlation table's lock is used without `server` too).
mod util;

pub use duomcp_schema as schema;
/// Kept so code naming it compiles; the documented path is [`era::Era`].
#[doc(hidden)]
pub use era::Era;

/// The `schemars` duomcp is built with (1.x), for deriving `JsonSchema` without depending on
/// it yourself, or when your crate also uses another version:
///
/// ```
/// #[derive(serde::Deserialize, duomcp::schemars::JsonSchema)]
/// #[schemars(crate = "duomcp::schemars")]
/// struct Greet {
///     name: String,
/// }
/// # let _ = duomcp::schemars::schema_for!(Greet);
/// ```
pub use schemars;

/// The `serde_json` duomcp is built with, whose `Value` and `Map` appear in its API.
pub use serde_json;

/// `#[tool]`, `#[prompt]` and `#[resource]`: a handler's definition from its doc comment and
/// attribute, as `name::spec()`; see [`server`] for registration (feature `macros`).
#[cfg(feature = "macros")]
pub use duomcp_macros::{prompt, resource, tool};

#[cfg(feature = "server")]
#[doc(hidden)]
pub mod __private;

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;

/// Internals the crate's own criterion benches (`benches/hot_path.rs`) measure directly. Not a
/// public API: hidden, and free to change in any release.
#[doc(hidden)]
pub mod __bench {
    /// One Server-Sent Events frame carrying a JSON-RPC message, as the Streamable HTTP
    /// server writes it.
    #[cfg(feature = "http-server")]
    pub fn sse_event(id: Option<&str>, message: &[u8]) -> bytes::Bytes {
        crate::transport::http::sse::event(id, message)
    }

    /// Whether `instance` matches `schema`, as a tool's `inputSchema` is checked (the schema
    /// compiled once, then `check` per call).
    #[cfg(feature = "server")]
    pub fn schema_check(schema: serde_json::Value) -> impl Fn(&serde_json::Value) -> bool {
        let check = crate::schema_check::SchemaCheck::new(schema);
        move |instance| check.check(instance).is_ok()
    }
}

/// The crate's README (crates.io's page): its code block is compiled as a doctest.
#[cfg(all(doctest, feature = "macros"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctest;
