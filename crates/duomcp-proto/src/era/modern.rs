//! 2026-07-28, both roles: per-request `_meta` (the client writes it, [`RequestMeta`]; the
//! server validates it, [`validate_meta`]), error mapping, the fields every result carries,
//! the client's side of input rounds ([`mrtr`]) and the task wire ([`tasks`]).

pub mod mrtr;
#[cfg(test)]
mod props;
mod request_meta;
pub mod tasks;

pub use request_meta::{progress_token, RequestMeta, RequestParams};

use super::{ProtocolError, Revision};
use duomcp_schema::methods::{self, RequestMethod};
use duomcp_schema::{
    error_code, meta, version, ClientCapabilities, ErrorObject, Implementation, LoggingLevel,
    ProgressToken,
};
use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::sync::{Arc, Mutex, OnceLock};

/// The facts of 2026-07-28: stateless, one protocol version, the caller in every request's
/// `_meta`, input asked for in rounds (MRTR), a closed response stream cancelling its request.
pub const REVISION: Revision = Revision {
    protocol_version: version::LATEST_MODERN,
    versions: version::MODERN_VERSIONS,
    tag: "modern",
    sole_version: Some(version::LATEST_MODERN),
    carries_meta: true,
    has_sessions: false,
    stream_close_cancels: true,
    input_in_rounds: true,
    task_progress_in_status: true,
    error_object,
};

/// The JSON-RPC error for `err` in the modern era (resource not found is `-32602` with `data.uri`).
pub fn error_object(err: &ProtocolError) -> ErrorObject {
    let (code, message, data) = match err {
        ProtocolError::MethodNotFound(m) => (
            error_code::METHOD_NOT_FOUND,
            format!("Method not found: {m}"),
            None,
        ),
        ProtocolError::InvalidParams(m) => (error_code::INVALID_PARAMS, m.clone(), None),
        ProtocolError::InvalidMeta(m) => (
            error_code::INVALID_PARAMS,
            format!("Invalid _meta: {m}"),
            None,
        ),
        ProtocolError::InvalidRequest(m) => (error_code::INVALID_REQUEST, m.clone(), None),
        ProtocolError::ResourceNotFound(uri) => (
            error_code::INVALID_PARAMS,
            format!("Resource not found: {uri}"),
            Some(json!({ "uri": uri })),
        ),
        ProtocolError::MissingClientCapability(caps) => (
            error_code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            "Missing required client capability".to_owned(),
            Some(json!({ "requiredCapabilities": caps })),
        ),
        ProtocolError::UnsupportedVersion { requested } => (
            error_code::UNSUPPORTED_PROTOCOL_VERSION,
            format!("Unsupported protocol version: {requested}"),
            Some(json!({ "supported": version::MODERN_VERSIONS, "requested": requested })),
        ),
        ProtocolError::HeaderMismatch(m) => (
            error_code::HEADER_MISMATCH,
            format!("Header mismatch: {m}"),
            None,
        ),
        ProtocolError::Internal(m) => (error_code::INTERNAL_ERROR, m.clone(), None),
        ProtocolError::InsufficientScope { required } => (
            error_code::INVALID_REQUEST,
            format!(
                "Forbidden: insufficient scope, needs `{}`",
                required.join(" ")
            ),
            Some(json!({ "requiredScopes": required })),
        ),
        ProtocolError::Custom(e) => return e.clone(),
    };
    ErrorObject {
        code,
        message,
        data,
    }
}

/// The HTTP status a modern-era error travels with on Streamable HTTP.
///
/// ```
/// use duomcp_proto::era::{modern::http_status, ProtocolError};
/// assert_eq!(http_status(&ProtocolError::MethodNotFound("x".into())), 404);
/// assert_eq!(http_status(&ProtocolError::InvalidParams("unknown tool".into())), 200);
/// ```
pub fn http_status(err: &ProtocolError) -> u16 {
    match err {
        ProtocolError::MethodNotFound(_) => 404,
        ProtocolError::InvalidMeta(_)
        | ProtocolError::HeaderMismatch(_)
        | ProtocolError::MissingClientCapability(_)
        | ProtocolError::UnsupportedVersion { .. }
        | ProtocolError::InvalidRequest(_) => 400,
        ProtocolError::InsufficientScope { .. } => 403,
        _ => 200,
    }
}

/// A validated modern request context: version and capabilities are known to be present.
///
/// Capabilities and client info are shared (`Arc`): a client sends the same ones on every
/// request, and [`MetaMemo`] hands out the copy it parsed the first time.
#[derive(Debug, Clone)]
pub struct ValidMeta {
    /// The protocol version, one of [`version::MODERN_VERSIONS`].
    pub protocol_version: Arc<str>,
    /// What the client can do for this request.
    pub client_capabilities: Arc<ClientCapabilities>,
    /// Who the client says it is.
    pub client_info: Option<Arc<Implementation>>,
    /// Requested log level, if any.
    pub log_level: Option<LoggingLevel>,
    /// Progress token, if any.
    pub progress_token: Option<ProgressToken>,
}

/// A request's `_meta`, read once: the two bulky objects stay raw JSON (parsed only when new,
/// see [`MetaMemo`]), the rest is read in place.
#[derive(Deserialize)]
pub struct MetaFields<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow, default)]
    protocol_version: Option<Text<'a>>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", borrow, default)]
    client_capabilities: Option<RawText<'a>>,
    #[serde(rename = "io.modelcontextprotocol/clientInfo", borrow, default)]
    client_info: Option<RawText<'a>>,
    #[serde(rename = "io.modelcontextprotocol/logLevel", default)]
    log_level: Option<LoggingLevel>,
    #[serde(rename = "progressToken", default)]
    progress_token: Option<ProgressToken>,
}

/// A string, borrowed from the text unless it had escapes. (serde's own `Cow<str>` borrows
/// only as a field of its own, not inside an `Option`.)
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TextVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for TextVisitor<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: serde::de::Error>(
                self,
                v: &'de str,
            ) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(TextVisitor(std::marker::PhantomData))
    }
}

/// A member's raw JSON text (read as a [`RawValue`], kept as its text).
#[derive(Clone, Copy)]
struct RawText<'a>(&'a str);

impl<'de: 'a, 'a> Deserialize<'de> for RawText<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(d).map(|raw| RawText(raw.get()))
    }
}

/// [`MetaFields`] by the places of their text in the `params` they were read from: what the
/// decoder keeps of a `_meta` it read in the same pass as the envelope
/// ([`Params`](crate::jsonrpc::Params)), which owns that text.
#[derive(Debug, Clone)]
pub(crate) struct MetaSpans {
    protocol_version: Option<[u32; 2]>,
    client_capabilities: Option<[u32; 2]>,
    client_info: Option<[u32; 2]>,
    log_level: Option<LoggingLevel>,
    progress_token: Option<ProgressToken>,
}

impl MetaSpans {
    /// The fields again, borrowed from `text` (the text the spans were taken in).
    pub(crate) fn fields<'a>(&self, text: &'a str) -> MetaFields<'a> {
        let at = |s: Option<[u32; 2]>| {
            s.map(|[a, b]| text.get(a as usize..b as usize).unwrap_or_default())
        };
        MetaFields {
            protocol_version: at(self.protocol_version).map(|v| Text(Cow::Borrowed(v))),
            client_capabilities: at(self.client_capabilities).map(RawText),
            client_info: at(self.client_info).map(RawText),
            log_level: self.log_level,
            progress_token: self.progress_token.clone(),
        }
    }
}

impl<'a> MetaFields<'a> {
    /// Where its text is in `text`, by `span` (`None` when a part is not a slice of it: a
    /// version with escapes, read into a string of its own).
    pub(crate) fn spans(self, span: impl Fn(&str) -> Option<[u32; 2]>) -> Option<MetaSpans> {
        let version = match self.protocol_version {
            None => None,
            Some(Text(Cow::Borrowed(v))) => Some(span(v)?),
            Some(Text(Cow::Owned(_))) => return None,
        };
        let raw = |r: Option<RawText<'_>>| -> Result<Option<[u32; 2]>, ()> {
            r.map(|r| span(r.0).ok_or(())).transpose()
        };
        Some(MetaSpans {
            protocol_version: version,
            client_capabilities: raw(self.client_capabilities).ok()?,
            client_info: raw(self.client_info).ok()?,
            log_level: self.log_level,
            progress_token: self.progress_token,
        })
    }

    /// Reads the fields of the raw `_meta` object.
    pub fn parse(raw: &'a str) -> Result<Self, serde_json::Error> {
        duomcp_schema::strict::from_str(raw)
    }

    /// The protocol version it names, if it names one as a string.
    pub fn protocol_version(&self) -> Option<&str> {
        self.protocol_version.as_ref().map(|v| &*v.0)
    }

    /// The progress token it carries, if any.
    pub fn progress_token(&self) -> Option<&ProgressToken> {
        self.progress_token.as_ref()
    }

    /// Whether it names a protocol version (what makes a request without a transport hint a
    /// 2026-07-28 one).
    pub fn has_version(&self) -> bool {
        self.protocol_version.is_some()
    }
}

/// `null` counts as absent, as it does for an `Option` field.
fn present(raw: Option<RawText<'_>>) -> Option<&str> {
    raw.map(|r| r.0).filter(|r| *r != "null")
}

/// Whether a raw `_meta` object has a protocol-version key, whatever its value: the mark of a
/// 2026-07-28 request (whose validation then says what is wrong with the value).
pub fn names_version(meta: &str) -> bool {
    #[derive(Deserialize)]
    struct Keys<'a> {
        #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow, default)]
        version: Option<&'a RawValue>,
    }
    duomcp_schema::strict::from_str::<Keys<'_>>(meta).is_ok_and(|k| k.version.is_some())
}

/// Parses and checks the `_meta` of a modern request (the raw `_meta` JSON, if present).
///
/// Servers call this through a [`MetaMemo`], which skips re-parsing the capabilities and client
/// info a client repeats on every request.
///
/// ```
/// use duomcp_proto::era::modern::validate_meta;
/// let ok = validate_meta(Some(r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
///     "io.modelcontextprotocol/clientCapabilities":{}}"#)).unwrap();
/// assert_eq!(&*ok.protocol_version, "2026-07-28");
/// assert!(validate_meta(None).is_err());
/// ```
pub fn validate_meta(raw: Option<&str>) -> Result<ValidMeta, ProtocolError> {
    MetaMemo::default().validate(raw)
}

/// Memoised [`validate_meta`]: remembers the last client capabilities and client info it parsed,
/// by their raw JSON, and shares them when the next request carries the same bytes.
///
/// One per server; cheap to consult from many tasks at once (two short critical sections that
/// compare bytes and clone an `Arc`).
///
/// ```
/// use duomcp_proto::era::modern::MetaMemo;
/// let memo = MetaMemo::default();
/// let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
///     "io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}"#;
/// let a = memo.validate(Some(meta)).unwrap();
/// let b = memo.validate(Some(meta)).unwrap();
/// assert!(std::sync::Arc::ptr_eq(&a.client_capabilities, &b.client_capabilities));
/// assert!(b.client_capabilities.sampling.is_some());
/// ```
#[derive(Default)]
pub struct MetaMemo {
    capabilities: Memo<ClientCapabilities>,
    client_info: Memo<Implementation>,
}

impl std::fmt::Debug for MetaMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetaMemo").finish_non_exhaustive()
    }
}

/// The last value parsed from some raw JSON, keyed by that JSON.
struct Memo<T>(Mutex<Option<(Box<str>, Arc<T>)>>);

impl<T> Default for Memo<T> {
    fn default() -> Self {
        Self(Mutex::new(None))
    }
}

impl<T: serde::de::DeserializeOwned> Memo<T> {
    fn get_or_parse(&self, raw: &str) -> Result<Arc<T>, serde_json::Error> {
        if let Some((key, value)) = &*self.lock() {
            if **key == *raw {
                return Ok(value.clone());
            }
        }
        let value = Arc::new(duomcp_schema::strict::from_str::<T>(raw)?);
        *self.lock() = Some((raw.into(), value.clone()));
        Ok(value)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(Box<str>, Arc<T>)>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl MetaMemo {
    /// [`validate_meta`], reusing the capabilities and client info of an earlier request when
    /// their JSON is byte for byte the same.
    pub fn validate(&self, raw: Option<&str>) -> Result<ValidMeta, ProtocolError> {
        self.validate_fields(raw.map(MetaFields::parse))
    }

    /// [`validate`](Self::validate) on `_meta` already read with [`MetaFields::parse`].
    pub fn validate_fields(
        &self,
        fields: Option<Result<MetaFields<'_>, serde_json::Error>>,
    ) -> Result<ValidMeta, ProtocolError> {
        let Some(fields) = fields else {
            return Err(ProtocolError::InvalidMeta(format!(
                "params._meta is required and must carry `{}`",
                meta::PROTOCOL_VERSION
            )));
        };
        let m = fields.map_err(|e| ProtocolError::InvalidMeta(e.to_string()))?;
        let Some(Text(protocol_version)) = m.protocol_version else {
            return Err(ProtocolError::InvalidMeta(format!(
                "missing `{}`",
                meta::PROTOCOL_VERSION
            )));
        };
        let Some(capabilities) = present(m.client_capabilities) else {
            return Err(ProtocolError::InvalidMeta(format!(
                "missing `{}`",
                meta::CLIENT_CAPABILITIES
            )));
        };
        let Some(protocol_version) = known_version(&protocol_version) else {
            return Err(ProtocolError::UnsupportedVersion {
                requested: protocol_version.into_owned(),
            });
        };
        let client_capabilities = self.capabilities.get_or_parse(capabilities).map_err(|e| {
            ProtocolError::InvalidMeta(format!("`{}`: {e}", meta::CLIENT_CAPABILITIES))
        })?;
        let client_info = present(m.client_info)
            .map(|raw| self.client_info.get_or_parse(raw))
            .transpose()
            .map_err(|e| ProtocolError::InvalidMeta(format!("`{}`: {e}", meta::CLIENT_INFO)))?;
        Ok(ValidMeta {
            protocol_version,
            client_capabilities,
            client_info,
            log_level: m.log_level,
            progress_token: m.progress_token,
        })
    }
}

/// The shared copy of a version we speak (no allocation per request), or `None`.
fn known_version(requested: &str) -> Option<Arc<str>> {
    static VERSIONS: OnceLock<Vec<Arc<str>>> = OnceLock::new();
    VERSIONS
        .get_or_init(|| {
            version::MODERN_VERSIONS
                .iter()
                .map(|&v| Arc::from(v))
                .collect()
        })
        .iter()
        .find(|v| ***v == *requested)
        .cloned()
}

/// The methods whose complete results carry the caching hints `ttlMs` and `cacheScope`: the
/// client's result cache keys them, and a duomcp HTTP server tags their answers with an `ETag`.
pub const CACHEABLE_METHODS: &[&str] = &[
    <methods::Discover as RequestMethod>::NAME,
    <methods::ListTools as RequestMethod>::NAME,
    <methods::ListPrompts as RequestMethod>::NAME,
    <methods::ListResources as RequestMethod>::NAME,
    <methods::ListResourceTemplates as RequestMethod>::NAME,
    <methods::ReadResource as RequestMethod>::NAME,
];

/// Methods of 2025-11-25 that 2026-07-28 removed; a modern request for one is `-32601`.
pub const REMOVED_METHODS: &[&str] = &[
    <methods::Initialize as RequestMethod>::NAME,
    <methods::Ping as RequestMethod>::NAME,
    <methods::SetLevel as RequestMethod>::NAME,
    <methods::Subscribe as RequestMethod>::NAME,
    <methods::Unsubscribe as RequestMethod>::NAME,
    <methods::GetTaskPayload as RequestMethod>::NAME,
    <methods::ListTasks as RequestMethod>::NAME,
];

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn meta(caps: &str, info: &str) -> String {
        format!(
            r#"{{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                "io.modelcontextprotocol/clientCapabilities":{caps},
                "io.modelcontextprotocol/clientInfo":{info}}}"#
        )
    }

    #[test]
    fn the_memo_follows_the_bytes_it_is_given() {
        let memo = MetaMemo::default();
        let a = memo
            .validate(Some(&meta("{}", r#"{"name":"a","version":"1"}"#)))
            .unwrap();
        assert!(a.client_capabilities.sampling.is_none());
        let b = memo
            .validate(Some(&meta(
                r#"{"sampling":{}}"#,
                r#"{"name":"b","version":"1"}"#,
            )))
            .unwrap();
        assert!(b.client_capabilities.sampling.is_some(), "a stale copy");
        assert_eq!(b.client_info.as_ref().unwrap().name, "b");
        let c = memo
            .validate(Some(&meta(
                r#"{"sampling":{}}"#,
                r#"{"name":"b","version":"1"}"#,
            )))
            .unwrap();
        assert!(Arc::ptr_eq(&b.client_capabilities, &c.client_capabilities));
        assert!(Arc::ptr_eq(
            b.client_info.as_ref().unwrap(),
            c.client_info.as_ref().unwrap()
        ));
        assert!(Arc::ptr_eq(&b.protocol_version, &c.protocol_version));
    }

    #[test]
    fn bad_meta_is_refused_whether_or_not_it_was_seen_before() {
        let memo = MetaMemo::default();
        memo.validate(Some(&meta("{}", "null"))).unwrap();
        for (caps, info) in [
            ("null", "null"),
            (r#"{"sampling":7}"#, "null"),
            ("{}", r#"{"name":5}"#),
            ("[]", "null"),
        ] {
            let err = memo.validate(Some(&meta(caps, info))).unwrap_err();
            assert!(
                matches!(err, ProtocolError::InvalidMeta(_)),
                "{caps} {info}: {err:?}"
            );
        }
        let err = memo
            .validate(Some(
                r#"{"io.modelcontextprotocol/protocolVersion":"2099-01-01",
                    "io.modelcontextprotocol/clientCapabilities":{}}"#,
            ))
            .unwrap_err();
        assert!(
            matches!(err, ProtocolError::UnsupportedVersion { requested } if requested == "2099-01-01")
        );
    }
}
