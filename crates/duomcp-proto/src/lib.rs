//! # duomcp-proto
//!
//! The sans-IO core of [duomcp](https://docs.rs/duomcp): the parts of the Model Context
//! Protocol (revisions 2025-11-25 and 2026-07-28) that are pure functions of their inputs.
//! No I/O, no async runtime, no threads, no clock and no randomness of its own: time is a
//! value passed in (milliseconds since the Unix epoch), keys are bytes passed in. It builds
//! for `wasm32-unknown-unknown`.
//!
//! * [`jsonrpc`]: the JSON-RPC 2.0 codec (decode once, encode without a tree), error objects,
//!   typed params with the path of the field at fault, and newline framing as a state
//!   machine fed with bytes ([`jsonrpc::LineFramer`]).
//! * [`era`]: the two revisions, how a message's revision is detected, the error object and
//!   HTTP status each gives a [`era::ProtocolError`], `_meta` as the client writes it and the
//!   server validates it (2026-07-28), the client's side of multi-round-trip requests
//!   ([`era::modern::mrtr`]: a result's kind, the retry state), and the facts of each revision
//!   as data ([`era::Revision`]: sessions, stream closing, input rounds…), asked through
//!   [`Era::revision`].
//! * [`principal`]: who made a request ([`Principal`]: subject, issuer, client and scopes of a
//!   validated token).
//! * [`error`]: what a handler returns when it does not produce a result ([`error::HandlerError`]).
//! * [`tasks`]: the task record and its lifecycle (status transitions, expiry, how a
//!   handler's outcome ends a task) as pure functions of explicit time; each revision's task
//!   wire is [`era::tasks::TaskWire`].
//! * [`correlation`]: the two tables every peer keeps by JSON-RPC id, requests sent and
//!   waiting for an answer and requests received and running ([`correlation::Entries`]:
//!   bounds, duplicate ids, answers in any order, cancellation, close).
//! * [`cursor`]: opaque pagination cursors.
//! * [`request_state`]: the sealed `requestState` of 2026-07-28 multi-round-trip requests
//!   (HMAC-SHA256, bound to method, target, principal and expiry; the time passed in), and
//!   [`keyring`]: the keys that seal it (the newest) and open it (all), parsed from a
//!   keyring file's text.
//! * [`schema_check`]: JSON values checked against a JSON Schema (tool arguments against
//!   `inputSchema`, `structuredContent` against `outputSchema`): a direct reading of the part
//!   of JSON Schema tool schemas use, and the `jsonschema` crate beyond it with the
//!   `full-json-schema` feature.
//! * [`time`]: timestamps as the wire writes them.
//!
//! ```
//! use duomcp_proto::jsonrpc::{decode, encode_request, Incoming, RequestId};
//! let bytes = encode_request(&RequestId::from(1), "tools/list", &serde_json::json!({}))?;
//! let Ok(Incoming::Request(request)) = decode(&bytes) else { panic!("a request") };
//! assert_eq!(request.method, "tools/list");
//! # Ok::<(), serde_json::Error>(())
//! ```
//!
//! `duomcp` (the runtime: transports, server and client) drives this crate and re-exports
//! its items at their old paths (`duomcp::jsonrpc`, `duomcp::era`, `duomcp::server::Keyring`…).

#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

pub mod correlation;
pub mod cursor;
pub mod era;
pub mod error;
pub mod jsonrpc;
pub mod keyring;
pub mod principal;
pub mod request_state;
pub mod schema_check;
#[cfg(test)]
mod strategies;
pub mod tasks;
pub mod time;

pub use duomcp_schema as schema;
// Shortcuts kept so code naming them compiles; the documented paths are `era::Era` and
// `principal::Principal`.
#[doc(hidden)]
pub use era::Era;
#[doc(hidden)]
pub use principal::Principal;
