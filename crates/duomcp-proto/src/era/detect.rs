//! Which era a request speaks, decided in one place for every transport: stdio and in-process
//! dispatch (the body alone), Streamable HTTP (the `MCP-Protocol-Version` header and the
//! session header too).

use super::Era;
use duomcp_schema::methods::{self, RequestMethod};

/// What a message says about its era, as its transport found it.
pub struct Signals<'a, F> {
    /// The JSON-RPC method (`None` for a response).
    pub method: Option<&'a str>,
    /// The `MCP-Protocol-Version` header, trimmed (`Err`: not visible ASCII); `None` where
    /// there is no such header (stdio, in-process) or it is absent.
    pub version_header: Option<Result<&'a str, ()>>,
    /// Whether `params._meta` names a protocol version; asked only when the header does not
    /// decide already.
    pub meta_names_version: F,
    /// Whether the message names a 2025-11-25 session (HTTP: an `Mcp-Session-Id`).
    pub names_session: bool,
}

/// The era an HTTP refusal shows the server speaks: an error only a 2026-07-28 server sends
/// (`modern_error`: one of its codes, or a `404` carrying `-32601`) shows that era; any other
/// `4xx` an older one, the era of messages that do not say ([`Era::UNMARKED`]); anything else
/// shows nothing. The client's era probe reads it.
pub fn of_refusal(modern_error: bool, client_error: bool) -> Option<Era> {
    if modern_error {
        Some(Era::Modern)
    } else if client_error {
        Some(Era::UNMARKED)
    } else {
        None
    }
}

/// Why no era could be decided (HTTP answers `400`).
#[derive(Debug, PartialEq, Eq)]
pub enum Undecided {
    /// The version header is not text.
    MalformedHeader,
    /// The version header names a version neither era speaks.
    UnsupportedVersion(String),
}

/// The era of a message.
///
/// A 2026-07-28 version header, or a `_meta` naming a protocol version, makes it 2026-07-28
/// whatever else it says (a body without the `_meta` version is then refused as such); a
/// 2025-11-25 (or older) header makes it legacy; without a header, `server/discover` outside
/// a session is 2026-07-28, and anything else (an `initialize`, a session's request, a
/// 2025-03-26 client that sends no header) is legacy.
pub fn detect<F: FnOnce() -> bool>(s: Signals<'_, F>) -> Result<Era, Undecided> {
    let by_header = s.version_header.map(|header| match header {
        Err(()) => Err(Undecided::MalformedHeader),
        Ok(v) => Era::of_version(v).ok_or_else(|| Undecided::UnsupportedVersion(v.to_owned())),
    });
    // A header naming the era whose requests carry their version in `_meta` decides alone;
    // any other yields to a `_meta` that names a version.
    if let Some(Ok(era)) = &by_header {
        if era.carries_meta() {
            return Ok(*era);
        }
    }
    if (s.meta_names_version)() {
        return Ok(Era::Modern);
    }
    let discover = s.method == Some(<methods::Discover as RequestMethod>::NAME);
    match by_header {
        Some(decided) => decided,
        None if discover && !s.names_session => Ok(Era::Modern),
        None => Ok(Era::UNMARKED),
    }
}
