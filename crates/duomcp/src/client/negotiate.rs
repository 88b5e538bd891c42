//! Finding out which era the server speaks, and the handshake of each.
//!
//! `Auto` probes with `server/discover` carrying the preferred 2026-07-28 version: a
//! `DiscoverResult` means modern; `-32022` (unsupported version) means modern too, and the
//! probe is retried with a version from `data.supported`; `-32020` and `-32021` (header
//! mismatch, missing capability) come only from modern servers and end the attempt, as does an
//! error the transport recognised as modern (HTTP: a `404` carrying `-32601`); any other error,
//! a result that is not a `DiscoverResult`, or no answer within the probe timeout means legacy,
//! so `initialize` follows. The fallback does not depend on any one error code.

use super::engine::{Inner, Negotiated, Speak};
use super::error::ClientError;
use super::options::RequestOptions;
use super::EraChoice;
use crate::era::Era;
use duomcp_schema::methods::{self, NotificationMethod, RequestMethod};
use duomcp_schema::{
    error_code, version, DiscoverResult, InitializeRequestParams, InitializeResult,
};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// How a probe ended, when it did not establish the modern era.
enum ProbeFailure {
    /// Not a modern server (or no answer): fall back to `initialize`.
    Legacy(String),
    /// A modern server we cannot talk to, or a dead connection: give up.
    Fatal(ClientError),
}

pub(crate) async fn connect(inner: &Arc<Inner>) -> Result<(), ClientError> {
    match inner.config.era {
        EraChoice::Legacy => initialize(inner).await,
        EraChoice::Modern => discover(inner, false).await.map_err(|f| match f {
            ProbeFailure::Fatal(e) => e,
            ProbeFailure::Legacy(why) => {
                ClientError::Protocol(format!("the server does not speak 2026-07-28: {why}"))
            }
        }),
        EraChoice::Auto => match discover(inner, true).await {
            Ok(()) => Ok(()),
            Err(ProbeFailure::Fatal(e)) => Err(e),
            Err(ProbeFailure::Legacy(why)) => {
                tracing::debug!("not a 2026-07-28 server ({why}); trying 2025-11-25");
                initialize(inner).await
            }
        },
    }
}

/// `server/discover`, retried with another version on `-32022`.
async fn discover(inner: &Arc<Inner>, probing: bool) -> Result<(), ProbeFailure> {
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

/// `initialize` + `notifications/initialized` (2025-11-25). Also used after a restart.
pub(crate) async fn initialize(inner: &Arc<Inner>) -> Result<(), ClientError> {
    let method = <methods::Initialize as RequestMethod>::NAME;
    let params = InitializeRequestParams::new(
        version::LATEST_LEGACY,
        inner.handlers.capabilities(Era::Legacy),
        inner.config.info.clone(),
    );
    let params = match serde_json::to_value(params) {
        Ok(Value::Object(m)) => m,
        _ => {
            return Err(ClientError::Protocol(
                "cannot encode the initialize params".into(),
            ))
        }
    };
    // `initialize` must not be cancelled.
    let opts = RequestOptions {
        no_cancel: true,
        ..RequestOptions::default()
    };
    let speak = Speak {
        era: Era::Legacy,
        version: version::LATEST_LEGACY.to_owned(),
    };
    let value = inner.request_as(method, params, &opts, &speak).await?;
    let result: InitializeResult = serde_json::from_value(value).map_err(|e| {
        ClientError::Protocol(format!(
            "the answer to initialize is not an InitializeResult: {e}"
        ))
    })?;
    if !version::is_legacy(&result.protocol_version) {
        return Err(ClientError::UnsupportedVersion {
            requested: version::LATEST_LEGACY.to_owned(),
            supported: vec![result.protocol_version],
        });
    }
    let has_logging = result.capabilities.logging.is_some();
    inner.set_negotiated(Negotiated {
        era: Era::Legacy,
        protocol_version: result.protocol_version,
        capabilities: result.capabilities,
        server_info: Some(result.server_info),
        instructions: result.instructions,
    });
    inner
        .notify(
            <methods::Initialized as NotificationMethod>::NAME,
            json!({}),
        )
        .await?;
    let level = *inner.log_level.lock().unwrap_or_else(|p| p.into_inner());
    if let (Some(level), true) = (level, has_logging) {
        let mut params = Map::new();
        params.insert(
            "level".into(),
            serde_json::to_value(level).unwrap_or(Value::Null),
        );
        inner
            .request(
                <methods::SetLevel as RequestMethod>::NAME,
                params,
                &RequestOptions::default(),
            )
            .await?;
    }
    Ok(())
}
