//! The 2026-07-28 adapter: the `server/discover` handshake (and probe), `_meta` on every
//! request, `Mcp-Param-*` headers, input by MRTR rounds, `subscriptions/listen`.

use super::{Adapter, Envelope};
use crate::client::engine::{Inner, Negotiated, Speak};
use crate::client::error::ClientError;
use crate::client::handlers::Handlers;
use crate::client::notify::Subscription;
use crate::client::options::RequestOptions;
use crate::client::tasks;
use crate::era::Era;
use crate::util::lock;
use duomcp_schema::methods::{self, RequestMethod};
use duomcp_schema::{
    error_code, meta, version, ClientCapabilities, DiscoverResult, LoggingLevel, SubscriptionFilter,
};
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use std::sync::Arc;

/// 2026-07-28.
pub(crate) struct Modern;

impl Adapter for Modern {
    fn capabilities(&self, handlers: &Handlers) -> ClientCapabilities {
        handlers.capabilities()
    }

    fn envelope<'a>(
        &self,
        inner: &'a Inner,
        method: &str,
        version: &'a str,
        opts: &RequestOptions,
        caller: &dyn Fn(&str) -> bool,
    ) -> Envelope<'a> {
        // Capabilities set by the caller (a gateway relaying its client's) win.
        let client_capabilities = (!caller(meta::CLIENT_CAPABILITIES)).then(|| {
            let caps = self.capabilities(&inner.handlers);
            if tasks::declares_extension(method) {
                caps.with_extension(tasks::EXTENSION_ID, Default::default())
            } else {
                caps
            }
        });
        Envelope {
            protocol_version: Some(version),
            client_capabilities,
            client_info: Some(&inner.config.info),
            client_info_json: inner.config.info_json.as_deref(),
            log_level: opts.log_level.or(*lock(&inner.log_level)),
        }
    }

    fn mirrors_headers(&self) -> bool {
        true
    }

    fn input_in_rounds(&self) -> bool {
        true
    }

    fn serves_server_requests(&self) -> bool {
        false
    }

    fn ping_method(&self) -> &'static str {
        <methods::Discover as RequestMethod>::NAME
    }

    fn set_log_level<'a>(
        &'a self,
        _inner: &'a Arc<Inner>,
        _level: LoggingLevel,
    ) -> BoxFuture<'a, Result<(), ClientError>> {
        // Later requests carry it in `_meta`.
        Box::pin(std::future::ready(Ok(())))
    }

    fn roots_changed<'a>(
        &'a self,
        _inner: &'a Arc<Inner>,
    ) -> BoxFuture<'a, Result<(), ClientError>> {
        // No notification announces it; the server asks for the roots each time.
        Box::pin(std::future::ready(Ok(())))
    }

    fn listen<'a>(
        &'a self,
        inner: &'a Arc<Inner>,
        filter: SubscriptionFilter,
    ) -> BoxFuture<'a, Result<Subscription, ClientError>> {
        Box::pin(async move {
            inner
                .listen_modern(filter, &RequestOptions::default())
                .await
        })
    }

    fn after_restart(&self, _inner: &Arc<Inner>) {
        // Stateless: nothing to establish again.
    }
}

/// How a probe ended, when it did not establish the modern era.
pub(crate) enum ProbeFailure {
    /// Not a modern server (or no answer): fall back to `initialize`.
    Legacy(String),
    /// A modern server we cannot talk to, or a dead connection: give up.
    Fatal(ClientError),
}

/// `server/discover`, retried with another version on `-32022`.
pub(crate) async fn discover(inner: &Arc<Inner>, probing: bool) -> Result<(), ProbeFailure> {
    let method = <methods::Discover as RequestMethod>::NAME;
    let mut opts = RequestOptions::default();
    if probing {
        opts.timeout = Some(inner.config.probe_timeout);
        // A legacy server must see nothing but `initialize` next; no cancellation.
        opts.no_cancel = true;
    }
    let mut version = inner.config.preferred_version.clone();
    let mut tried: Vec<String> = Vec::new();
    loop {
        if tried.len() >= MAX_VERSION_ATTEMPTS {
            return Err(ProbeFailure::Fatal(ClientError::Protocol(format!(
                "the server kept refusing the protocol versions it named as supported ({})",
                tried.join(", ")
            ))));
        }
        tried.push(version.clone());
        let speak = Speak {
            era: Era::Modern,
            version: version.clone(),
        };
        let outcome = inner.request_as(method, Map::new(), &opts, &speak).await;
        let value = match outcome {
            Ok(v) => v,
            Err(ClientError::Rpc { error, .. })
                if error.code == error_code::UNSUPPORTED_PROTOCOL_VERSION =>
            {
                let supported = supported_versions(error.data.as_ref());
                match next_version(&supported, &tried) {
                    Some(next) => {
                        tracing::debug!(
                            "the server does not support {version}; retrying with {next}"
                        );
                        version = next.clone();
                        continue;
                    }
                    None => {
                        return Err(ProbeFailure::Fatal(ClientError::UnsupportedVersion {
                            requested: version,
                            supported,
                        }))
                    }
                }
            }
            Err(e @ ClientError::Closed { .. }) => return Err(ProbeFailure::Fatal(e)),
            // Only a 2026-07-28 server answers these: it speaks the era but refuses the request.
            Err(e @ ClientError::Rpc { .. })
                if e.rpc_error().is_some_and(|r| {
                    r.code == error_code::HEADER_MISMATCH
                        || r.code == error_code::MISSING_REQUIRED_CLIENT_CAPABILITY
                }) =>
            {
                return Err(ProbeFailure::Fatal(e))
            }
            Err(e) if probing && inner.transport.era_evidence() == Some(Era::Modern) => {
                return Err(ProbeFailure::Fatal(ClientError::Protocol(format!(
                    "the server speaks 2026-07-28 but refused server/discover: {e}"
                ))))
            }
            Err(e) if probing => return Err(ProbeFailure::Legacy(e.to_string())),
            Err(e) => return Err(ProbeFailure::Fatal(e)),
        };
        let result: DiscoverResult = match serde_json::from_value(value) {
            Ok(r) => r,
            Err(e) => {
                return Err(ProbeFailure::Legacy(format!(
                    "the answer to server/discover is not a DiscoverResult: {e}"
                )))
            }
        };
        if !result.supported_versions.is_empty() && !result.supported_versions.contains(&version) {
            match result
                .supported_versions
                .iter()
                .find(|v| version::is_modern(v) && !tried.contains(v))
            {
                Some(next) => {
                    version = next.clone();
                    continue;
                }
                None => {
                    return Err(ProbeFailure::Fatal(ClientError::UnsupportedVersion {
                        requested: version,
                        supported: result.supported_versions,
                    }))
                }
            }
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
        inner.set_negotiated(Negotiated {
            era: Era::Modern,
            protocol_version: version,
            capabilities: result.capabilities,
            server_info,
            instructions: result.instructions,
        });
        return Ok(());
    }
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
