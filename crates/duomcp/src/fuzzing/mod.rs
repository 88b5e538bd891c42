//! Entry points of the fuzz targets (`fuzz/`, cargo-fuzz on nightly) and of their replay on
//! stable (`tests/fuzz_replay.rs`, part of the ordinary `cargo test`). Not an API: feature
//! `fuzzing`, hidden, free to change in any release.
//!
//! Each entry is a `fn(&[u8])` that runs one input through the real code path and panics when
//! an oracle fails: no panic anywhere below, plus the cheap invariants each part has (a
//! decode → encode → decode round trip that is stable, chunking that does not change what a
//! stream parser yields, a direct schema reading that agrees with `jsonschema`, a seal that
//! any change breaks). Structure-aware entries read their input with [`arbitrary`].
//!
//! ```
//! for (name, run) in duomcp::fuzzing::TARGETS {
//!     run(b"{}"); // any bytes at all: an entry panics only when an oracle fails
//!     assert!(!name.is_empty());
//! }
//! ```

// A panic is how an entry reports a failed oracle to libFuzzer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod framing;
mod headers;
mod jsonrpc;
mod jwt;
mod meta;
mod oauth;
mod request_state;
mod runtime;
mod schema;
mod sse;
mod stdio_server;
mod uri_template;

pub use framing::stdio_framing;
pub use headers::http_headers;
pub use jsonrpc::jsonrpc_decode;
pub use jwt::jwt_front_door;
pub use meta::meta;
pub use oauth::oauth_metadata;
pub use request_state::request_state;
pub use schema::schema_check;
pub use sse::sse_client;
pub use stdio_server::stdio_server;
pub use uri_template::uri_template;

/// A target's entry point.
pub type Entry = fn(&[u8]);

/// Every target by name, as `fuzz/fuzz_targets/<name>.rs` and `fuzz/corpus/<name>/` call it.
pub const TARGETS: &[(&str, Entry)] = &[
    ("stdio_framing", stdio_framing),
    ("jsonrpc_decode", jsonrpc_decode),
    ("meta", meta),
    ("sse_client", sse_client),
    ("http_headers", http_headers),
    ("uri_template", uri_template),
    ("schema_check", schema_check),
    ("oauth_metadata", oauth_metadata),
    ("jwt_front_door", jwt_front_door),
    ("request_state", request_state),
    ("stdio_server", stdio_server),
];

/// The input as text when it is UTF-8 (most parsers here take `&str`).
fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}
