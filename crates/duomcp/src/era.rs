//! The two protocol eras and everything that differs between them.
//!
//! The facts live in `duomcp-proto` ([`duomcp_proto::era`]), the only place that knows eras:
//! how a request is recognised as modern, how domain errors become JSON-RPC error objects,
//! and what every result must carry. Handlers and transports ask it instead of comparing
//! version strings; this module re-exports it.

pub use duomcp_proto::era::{legacy, modern, Era, ProtocolError, Revision};

#[cfg(feature = "http-client")]
pub(crate) use duomcp_proto::era::of_refusal;
#[cfg(feature = "http-server")]
pub(crate) use duomcp_proto::era::Undecided;
#[cfg(feature = "server")]
pub(crate) use duomcp_proto::era::{detect, Signals};
