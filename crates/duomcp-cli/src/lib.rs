//! The `duomcp` command: the bundled reference server and the client commands.
//!
//! The library part exists so that tests (and other crates) can start the reference server
//! in-process: [`reference::server`].

#![warn(missing_docs)]

pub mod bench;
pub mod commands;
pub mod inspect;
pub mod limits;
pub mod reference;
pub mod serve_addr;
pub mod serve_auth;
pub mod shared_state;
pub mod telemetry;
