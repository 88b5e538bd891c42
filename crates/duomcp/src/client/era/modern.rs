//! The 2026-07-28 adapter: the `server/discover` handshake (and probe), `_meta` on every
//! request, `Mcp-Param-*` headers, input by MRTR rounds, `subscriptions/listen`.

use super::{Adapter, Listen, Local, Negotiated, Outbound, RequestMeta, Speak};
use crate::client::error::ClientError;
use crate::client::handlers::Handlers;
use crate::client::options::RequestOptions;
use crate::client::tasks::names as tasks;
use crate::era::Era;
use crate::util::lock;
use duomcp_schema::methods::{self, RequestMethod};
use duomcp_schema::{error_code, meta, version, ClientCapabilities, DiscoverResult, LoggingLevel};
use serde_json::Value;

/// 2026-07-28.
pub(crate) struct Modern;

impl Adapter for Modern {
    fn capabilities(&self, handlers: &Handlers) -> ClientCapabilities {
        handlers.capabilities()
    }

    fn request_meta<'a>(
        &self,
        local: &Local<'a>,
        method: &str,
        version: &'a str,
        opts: &RequestOptions,
        caller: &dyn Fn(&str) -> bool,
    ) -> RequestMeta<'a> {
        // Capabilities set by the caller (a gateway relaying its client's) win.
        let client_capabilities = (!caller(meta::CLIENT_CAPABILITIES)).then(|| {
            let caps = self.capabilities(local.handlers);
            if tasks::declares_extension(method) {
                caps.with_extension(tasks::EXTENSION_ID, Default::default())
            } else {
                caps
            }
        });
        RequestMeta {
            protocol_version: Some(version),
            client_capabilities,
            client_info: Some(local.info),
            client_info_json: local.info_json,
            log_level: opts.log_level.or(*lock(local.log_level)),
        }
    }

    fn mirrors_headers(&self) -> bool {
        true
    }

    fn serves_server_requests(&self) -> bool {
        false
    }

    fn ping_method(&self) -> &'static str {
        <methods::Discover as RequestMethod>::NAME
    }

    fn set_log_level(&self, _level: LoggingLevel) -> Result<Option<Outbound>, ClientError> {
        // Later requests carry it in `_meta`.
        Ok(None)
    }

    fn roots_changed(&self) -> Option<&'static str> {
        // No notification announces it; the server asks for the roots each time.
        None
    }

    fn listen(&self) -> Listen {
        Listen::ListenRequest
    }

    fn handshake_after_restart(&self) -> bool {
        // Stateless: nothing to establish again.
        false
    }
}

/// How a probe ended, when it did not establish the modern era.
pub(crate) enum ProbeFailure {
    /// Not a modern server (or no answer): fall back to `initialize`.
    Legacy(String),
    /// A modern server we cannot talk to, or a dead connection: give up.
    Fatal(ClientError),
}

/// What the next step of the version negotiation is, after an answer to `server/discover`.
pub(crate) enum Discovery {
    /// Established.
    Done(Box<Negotiated>),
    /// Ask again in this version.
    Retry(String),
    /// Give up, or fall back.
    Failed(ProbeFailure),
}

/// Whether the version negotiation may try once more, having tried `tried`.
pub(crate) fn may_try(tried: &[String]) -> Result<(), ProbeFailure> {
    if tried.len() >= MAX_VERSION_ATTEMPTS {
        return Err(ProbeFailure::Fatal(ClientError::Protocol(format!(
            "the server kept refusing the protocol versions it named as supported ({})",
            tried.join(", ")
        ))));
    }
    Ok(())
}

/// What the error answer to `server/discover` in `version` means (`tried`: the versions
/// asked so far, `version` the last). `probing`: the client does not know the era yet, so a
/// refusal may mean a 2025-11-25 server; `evidence`: the era the transport saw the server
/// speak, if any (a 2026-07-28 header).
pub(crate) fn discover_failed(
    e: ClientError,
    version: &str,
    tried: &[String],
    probing: bool,
    evidence: Option<Era>,
) -> Discovery {
    match e {
        ClientError::Rpc { error, .. }
            if error.code == error_code::UNSUPPORTED_PROTOCOL_VERSION =>
        {
            let supported = supported_versions(error.data.as_ref());
            match next_version(&supported, tried) {
                Some(next) => {
                    tracing::debug!("the server does not support {version}; retrying with {next}");
                    Discovery::Retry(next.clone())
                }
                None => Discovery::Failed(ProbeFailure::Fatal(ClientError::UnsupportedVersion {
                    requested: version.to_owned(),
                    supported,
                })),
            }
        }
        e @ ClientError::Closed { .. } => Discovery::Failed(ProbeFailure::Fatal(e)),
        // Only a 2026-07-28 server answers these: it speaks the era but refuses the request.
        e @ ClientError::Rpc { .. }
            if e.rpc_error().is_some_and(|r| {
                r.code == error_code::HEADER_MISMATCH
                    || r.code == error_code::MISSING_REQUIRED_CLIENT_CAPABILITY
            }) =>
        {
            Discovery::Failed(ProbeFailure::Fatal(e))
        }
        e if probing && evidence == Some(Era::Modern) => {
            Discovery::Failed(ProbeFailure::Fatal(ClientError::Protocol(format!(
                "the server speaks 2026-07-28 but refused server/discover: {e}"
            ))))
        }
        e if probing => Discovery::Failed(ProbeFailure::Legacy(e.to_string())),
        e => Discovery::Failed(ProbeFailure::Fatal(e)),
    }
}

/// What the answer to `server/discover` in `version` means (`tried`: the versions asked so
/// far).
pub(crate) fn accept_discover(value: Value, version: &str, tried: &[String]) -> Discovery {
    let result: DiscoverResult = match serde_json::from_value(value) {
        Ok(r) => r,
        Err(e) => {
            return Discovery::Failed(ProbeFailure::Legacy(format!(
                "the answer to server/discover is not a DiscoverResult: {e}"
            )))
        }
    };
    if !result.supported_versions.is_empty()
        && !result.supported_versions.iter().any(|v| v == version)
    {
        return match result
            .supported_versions
            .iter()
            .find(|v| version::is_modern(v) && !tried.contains(v))
        {
            Some(next) => Discovery::Retry(next.clone()),
            None => Discovery::Failed(ProbeFailure::Fatal(ClientError::UnsupportedVersion {
                requested: version.to_owned(),
                supported: result.supported_versions,
            })),
        };
    }
    let server_info = result
        .meta
        .as_ref()
        .and_then(|m| m.get(duomcp_schema::meta::SERVER_INFO))
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    let server_info = server_info.or_else(|| {
        result
            .extra
            .get("serverInfo")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    });
    Discovery::Done(Box::new(Negotiated {
        era: Era::Modern,
        protocol_version: version.to_owned(),
        capabilities: result.capabilities,
        server_info,
        instructions: result.instructions,
    }))
}

/// The options of `server/discover`: when `probing` (the era is not known yet), a short
/// timeout and no cancellation (a 2025-11-25 server must see nothing but `initialize` next).
pub(crate) fn discover_options(
    probing: bool,
    probe_timeout: std::time::Duration,
) -> RequestOptions {
    let mut opts = RequestOptions::default();
    if probing {
        opts.timeout = Some(probe_timeout);
        opts.no_cancel = true;
    }
    opts
}

/// How many `server/discover` attempts the version negotiation may take.
const MAX_VERSION_ATTEMPTS: usize = 4;

/// The version to retry with after `-32022`: a modern version from `supported` not tried yet,
/// else one tried only once (a server may refuse a version it lists, e.g. while it restarts).
fn next_version<'a>(supported: &'a [String], tried: &[String]) -> Option<&'a String> {
    let times = |v: &String| tried.iter().filter(|t| *t == v).count();
    let modern = || supported.iter().filter(|v| version::is_modern(v));
    modern()
        .find(|v| times(v) == 0)
        .or_else(|| modern().find(|v| times(v) == 1))
}

fn supported_versions(data: Option<&Value>) -> Vec<String> {
    data.and_then(|d| d.get("supported"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// What `server/discover` is sent in: 2026-07-28, in `version`.
pub(crate) fn speak(version: &str) -> Speak {
    Speak {
        era: Era::Modern,
        version: version.to_owned(),
    }
}
