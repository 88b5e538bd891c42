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

#[cfg(test)]
mod props {
    //! Property tests of era detection: any combination of signals gives an answer without
    //! panic, and the rules [`detect`] documents hold for every one.

    use super::*;
    use duomcp_schema::version;
    use proptest::prelude::*;
    use std::cell::Cell;

    /// A header as a transport hands it over: absent, not text, a version of either era, or
    /// anything else.
    fn header() -> impl Strategy<Value = Option<Result<String, ()>>> {
        let known = prop_oneof![
            proptest::sample::select(version::MODERN_VERSIONS),
            proptest::sample::select(version::LEGACY_VERSIONS),
        ];
        prop_oneof![
            Just(None),
            Just(Some(Err(()))),
            known.prop_map(|v| Some(Ok(v.to_owned()))),
            ".{0,12}".prop_map(|v| Some(Ok(v))),
        ]
    }

    fn method() -> impl Strategy<Value = Option<String>> {
        prop_oneof![
            Just(None),
            Just(Some("server/discover".to_owned())),
            Just(Some("initialize".to_owned())),
            Just(Some("tools/call".to_owned())),
            ".{0,16}".prop_map(Some),
        ]
    }

    proptest! {
        /// Whatever the signals: the rules of [`detect`], and `_meta` asked for only when the
        /// header does not decide alone.
        #[test]
        fn every_combination_of_signals_follows_the_rules(
            method in method(),
            header in header(),
            meta in any::<bool>(),
            session in any::<bool>(),
        ) {
            let asked = Cell::new(false);
            let got = detect(Signals {
                method: method.as_deref(),
                version_header: header.as_ref().map(|h| h.as_deref().map_err(|_| ())),
                meta_names_version: || {
                    asked.set(true);
                    meta
                },
                names_session: session,
            });
            let header_era = match &header {
                Some(Ok(v)) => Era::of_version(v),
                _ => None,
            };
            if header_era == Some(Era::Modern) {
                // A 2026-07-28 header decides alone, `_meta` unread.
                prop_assert_eq!(got, Ok(Era::Modern));
                prop_assert!(!asked.get());
            } else if meta {
                // A `_meta` naming a version makes it 2026-07-28, whatever the header says.
                prop_assert_eq!(got, Ok(Era::Modern));
            } else {
                let expected = match &header {
                    Some(Err(())) => Err(Undecided::MalformedHeader),
                    Some(Ok(v)) => match header_era {
                        Some(era) => Ok(era),
                        None => Err(Undecided::UnsupportedVersion(v.clone())),
                    },
                    None if method.as_deref() == Some("server/discover") && !session => {
                        Ok(Era::Modern)
                    }
                    None => Ok(Era::UNMARKED),
                };
                prop_assert_eq!(got, expected);
            }
        }

        /// An HTTP refusal: a 2026-07-28 error shows that era, another client error the
        /// unmarked one, anything else nothing.
        #[test]
        fn a_refusal_shows_an_era_only_when_it_can(modern in any::<bool>(), client in any::<bool>()) {
            let expected = if modern {
                Some(Era::Modern)
            } else if client {
                Some(Era::UNMARKED)
            } else {
                None
            };
            prop_assert_eq!(of_refusal(modern, client), expected);
        }
    }
}
