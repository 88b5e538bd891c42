//! 2026-07-28 mirrored request headers: `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and
//! `Mcp-Param-*` must agree with the body, or the request is refused with `400` and `-32020`.
//!
//! This is the one place the transport reads the message body beyond its envelope, as the
//! transport page requires of "any server that processes the body".

use crate::era::modern::{self, MetaFields, ValidMeta};
use crate::era::ProtocolError;
use crate::jsonrpc::{self, IncomingRequest};
use crate::server::Shared;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use duomcp_schema::meta;
use duomcp_schema::methods::{self, RequestMethod};
use http::{HeaderMap, HeaderName};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;

pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
pub(crate) const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
pub(crate) const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
pub(crate) const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
const PARAM_PREFIX: &str = "mcp-param-";

/// The fields of `params` the checks need, still unparsed.
#[derive(Deserialize, Default)]
struct Params<'a> {
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    uri: Option<&'a RawValue>,
    #[serde(rename = "taskId", borrow, default)]
    task_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
}

/// [`Params`] as raw JSON text, from wherever it was found.
#[derive(Default)]
struct Members<'a> {
    meta: Option<&'a str>,
    name: Option<&'a str>,
    uri: Option<&'a str>,
    task_id: Option<&'a str>,
    arguments: Option<&'a str>,
}

impl<'a> Members<'a> {
    /// The members the decoder found (`_meta` is not among them: it read its fields);
    /// `None` when one of them repeats, which [`read`](Self::read) would not read either.
    fn split(members: impl Iterator<Item = (&'a str, &'a str)>) -> Option<Self> {
        let mut found = Members::default();
        for (name, value) in members {
            let slot = match name {
                "name" => &mut found.name,
                "uri" => &mut found.uri,
                "taskId" => &mut found.task_id,
                "arguments" => &mut found.arguments,
                _ => continue,
            };
            if slot.replace(value).is_some() {
                return None;
            }
        }
        Some(found)
    }

    /// The members read from the text of `params` (not split by the decoder).
    fn read(text: &'a str) -> Self {
        // Params of the wrong shape are the dispatcher's to reject (-32602); nothing to compare.
        let p: Params<'a> = duomcp_schema::strict::from_str(text).unwrap_or_default();
        Members {
            meta: p.meta.map(RawValue::get),
            name: p.name.map(RawValue::get),
            uri: p.uri.map(RawValue::get),
            task_id: p.task_id.map(RawValue::get),
            arguments: p.arguments.map(RawValue::get),
        }
    }
}

#[derive(Deserialize)]
struct MetaVersion<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow, default)]
    version: Option<Cow<'a, str>>,
}

/// Whether `params._meta` names a protocol version: the mark of a 2026-07-28 request.
pub(crate) fn has_meta_version(params: Option<&jsonrpc::Params>) -> bool {
    #[derive(Deserialize)]
    struct Head<'a> {
        #[serde(rename = "_meta", borrow, default)]
        meta: Option<&'a RawValue>,
    }
    let Some(params) = params else {
        return false;
    };
    // Split by the decoder, `_meta` was read as its fields (a version of any other type than
    // a string leaves `params` unsplit, for the reading below).
    if params.members().is_some() {
        return params.meta_fields().is_some_and(|f| f.has_version());
    }
    duomcp_schema::strict::from_str::<Head<'_>>(params.get())
        .ok()
        .and_then(|h| h.meta)
        .is_some_and(|m| modern::names_version(m.get()))
}

fn mismatch(msg: impl Into<String>) -> ProtocolError {
    ProtocolError::HeaderMismatch(msg.into())
}

/// The single value of header `name`, trimmed of surrounding whitespace; `Ok(None)` when absent.
fn single<'h>(headers: &'h HeaderMap, name: &HeaderName) -> Result<Option<&'h str>, ProtocolError> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(mismatch(format!("{name} header is repeated")));
    }
    let text = first
        .to_str()
        .map_err(|_| mismatch(format!("{name} header contains invalid characters")))?;
    Ok(Some(text.trim_matches([' ', '\t'])))
}

/// Decodes the `=?base64?…?=` sentinel form of `Mcp-Name` and `Mcp-Param-*`; other values are
/// literal. The markers are case-sensitive, as the transport page says.
///
/// ```text
/// =?base64?SGVsbG8=?=  → Hello
/// SGVsbG8=             → SGVsbG8= (literal)
/// =?base64?SGVsbG8?=   → rejected (bad padding)
/// ```
pub(crate) fn decode_value<'v>(name: &str, value: &'v str) -> Result<Cow<'v, str>, ProtocolError> {
    let Some(encoded) = value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    else {
        return Ok(Cow::Borrowed(value));
    };
    let bytes = STANDARD
        .decode(encoded)
        .map_err(|e| mismatch(format!("{name} header has invalid Base64: {e}")))?;
    String::from_utf8(bytes)
        .map(Cow::Owned)
        .map_err(|_| mismatch(format!("{name} header's Base64 value is not UTF-8")))
}

/// The JSON string `raw`, borrowed when it has no escapes; `None` for any other value.
fn string_of(raw: &str) -> Option<Cow<'_, str>> {
    #[derive(Deserialize)]
    struct Text<'a>(#[serde(borrow)] Cow<'a, str>);
    serde_json::from_str::<Text<'_>>(raw).ok().map(|t| t.0)
}

/// Checks a modern request's `_meta` and mirrored headers, in the order the error codes demand:
/// a missing `_meta` version is `-32602`; a header that disagrees with it `-32020`; a version we
/// do not speak `-32022`; then `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` (`-32020`).
/// The validated `_meta` goes on to the dispatcher, which need not read it again.
pub(crate) fn validate(
    headers: &HeaderMap,
    req: &IncomingRequest,
    shared: &Shared,
) -> Result<ValidMeta, ProtocolError> {
    // Split by the decoder, with `_meta` read as its fields: nothing is read again here.
    // Otherwise `_meta` is read once: for the version compared with the header here, then
    // validated as a whole.
    let (params, fields) = match &req.params {
        Some(p) => match p.members() {
            Some(members) => match Members::split(members) {
                Some(found) => (found, p.meta_fields().map(Ok)),
                None => (Members::default(), None),
            },
            None => {
                let params = Members::read(p.get());
                let fields = params.meta.map(MetaFields::parse);
                (params, fields)
            }
        },
        None => (Members::default(), None),
    };
    let meta_raw = params.meta;
    let body_version = match &fields {
        Some(Ok(fields)) => fields.protocol_version().map(Cow::Borrowed),
        // Fields of the wrong type elsewhere in `_meta`: validation words that error, after
        // the header comparison.
        _ => meta_raw
            .and_then(|m| duomcp_schema::strict::from_str::<MetaVersion<'_>>(m).ok())
            .and_then(|m| m.version),
    }
    .ok_or_else(|| {
        ProtocolError::InvalidMeta(format!(
            "params._meta must carry `{}`",
            meta::PROTOCOL_VERSION
        ))
    })?;

    match single(headers, &PROTOCOL_VERSION)? {
        None => return Err(mismatch("the MCP-Protocol-Version header is required")),
        Some(h) if h != body_version => {
            return Err(mismatch(format!(
            "MCP-Protocol-Version header value '{h}' does not match body value '{body_version}'"
        )))
        }
        Some(_) => {}
    }
    let valid = shared.meta_memo.validate_fields(fields)?;

    let method = req.method.as_str();
    match single(headers, &MCP_METHOD)? {
        None => return Err(mismatch("the Mcp-Method header is required")),
        Some(h) if h != method => {
            return Err(mismatch(format!(
                "Mcp-Method header value '{h}' does not match body value '{method}'"
            )))
        }
        Some(_) => {}
    }

    let name_source = if method == <methods::CallTool as RequestMethod>::NAME
        || method == <methods::GetPrompt as RequestMethod>::NAME
    {
        params.name
    } else if method == <methods::ReadResource as RequestMethod>::NAME {
        params.uri
    } else if method == <methods::GetTask as RequestMethod>::NAME
        || method == <methods::UpdateTask as RequestMethod>::NAME
        || method == <methods::CancelTask as RequestMethod>::NAME
    {
        params.task_id
    } else {
        None
    };
    // A body without the field (or with a non-string) is malformed; the dispatcher says so.
    let body_name = name_source.and_then(string_of);
    if let Some(body_name) = &body_name {
        let Some(h) = single(headers, &MCP_NAME)? else {
            return Err(mismatch("the Mcp-Name header is required for this method"));
        };
        let decoded = decode_value("Mcp-Name", h)?;
        if decoded != *body_name {
            return Err(mismatch(format!(
                "Mcp-Name header value '{decoded}' does not match body value '{body_name}'"
            )));
        }
    }

    if method == <methods::CallTool as RequestMethod>::NAME {
        // `name_source` is `params.name` for this method: the tool's name, read above.
        if let Some(tool) = &body_name {
            check_param_headers(headers, shared, tool, params.arguments)?;
        }
    }
    Ok(valid)
}

fn check_param_headers(
    headers: &HeaderMap,
    shared: &Shared,
    tool: &str,
    arguments: Option<&str>,
) -> Result<(), ProtocolError> {
    // Read at registration (`ToolEntry::param_headers`); most tools have none.
    let entry = match shared.registry().tools.get(tool) {
        Some(entry) if !entry.param_headers.is_empty() => entry.clone(),
        _ => return Ok(()),
    };
    let annotated = &entry.param_headers;
    let args: Value = match arguments {
        Some(raw) => serde_json::from_str(raw).unwrap_or(Value::Null),
        None => Value::Null,
    };
    for (header, path) in annotated.iter() {
        let value = path.iter().try_fold(&args, |v, key| v.get(key));
        let Some(value) = value.filter(|v| !v.is_null()) else {
            continue;
        };
        let Ok(name) = HeaderName::try_from(format!("{PARAM_PREFIX}{header}")) else {
            // Not a valid header name: no client can send it; the annotation is the server's bug.
            tracing::warn!(
                tool,
                header,
                "x-mcp-header is not a valid HTTP field name; not checked"
            );
            continue;
        };
        let display = format!("Mcp-Param-{header}");
        let Some(h) = single(headers, &name)? else {
            return Err(mismatch(format!(
                "the {display} header is required: the body has a value for it"
            )));
        };
        let decoded = decode_value(&display, h)?;
        if !same_value(&decoded, value) {
            return Err(mismatch(format!(
                "{display} header value '{decoded}' does not match body value '{value}'"
            )));
        }
    }
    Ok(())
}

/// Compares a header's text with the body value: strings exactly, numbers numerically
/// (`42.0` equals `42`), booleans as `true` / `false`.
fn same_value(header: &str, body: &Value) -> bool {
    match body {
        Value::String(s) => header == s,
        Value::Bool(b) => header == if *b { "true" } else { "false" },
        Value::Number(n) => {
            if let (Some(b), Ok(h)) = (n.as_i64(), header.parse::<i64>()) {
                return b == h;
            }
            match (n.as_f64(), header.parse::<f64>()) {
                (Some(b), Ok(h)) => h.is_finite() && b == h,
                _ => false,
            }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decodes_the_base64_sentinel_only() {
        assert_eq!(decode_value("h", "=?base64?SGVsbG8=?=").unwrap(), "Hello");
        assert_eq!(decode_value("h", "SGVsbG8=").unwrap(), "SGVsbG8=");
        assert_eq!(
            decode_value("h", "=?base64?SGVsbG8=").unwrap(),
            "=?base64?SGVsbG8="
        );
        assert_eq!(decode_value("h", "=?base64?=").unwrap(), "=?base64?=");
        assert!(decode_value("h", "=?base64?SGVsbG8?=").is_err());
        assert!(decode_value("h", "=?base64?SGVs!!!bG8=?=").is_err());
        assert!(decode_value("h", "=?base64?/w==?=").is_err(), "not UTF-8");
        assert_eq!(
            decode_value("h", "=?base64?SGVsbG8sIOS4lueVjA==?=").unwrap(),
            "Hello, 世界"
        );
    }

    /// The members the header checks compare, found by the decoder's split or read from the
    /// text of `params`, are the same.
    #[test]
    fn split_members_are_the_members_read_from_the_text() {
        fn see<'a>(m: &Members<'a>) -> [Option<&'a str>; 4] {
            [m.name, m.uri, m.task_id, m.arguments]
        }
        for params in [
            r#"{"name":"echo","arguments":{"a":[1]},"_meta":{"progressToken":1}}"#,
            r#"{ "uri" : "file:///x" , "taskId" : "t" }"#,
            r#"{"name":"a","name":"b"}"#,
            r#"{"arguments":1,"arguments":2,"other":{}}"#,
            "{}",
        ] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{params}}}"#);
            let Ok(jsonrpc::Incoming::Request(r)) = jsonrpc::decode(line.as_bytes()) else {
                panic!("{line}")
            };
            let p = r.params.unwrap();
            let split = Members::split(p.members().unwrap()).unwrap_or_default();
            assert_eq!(see(&split), see(&Members::read(p.get())), "{params}");
        }
    }

    #[test]
    fn compares_values_by_type() {
        assert!(same_value("us-west1", &json!("us-west1")));
        assert!(!same_value("US-WEST1", &json!("us-west1")));
        assert!(same_value("42", &json!(42)));
        assert!(same_value("42.0", &json!(42)));
        assert!(!same_value("43", &json!(42)));
        assert!(!same_value("forty-two", &json!(42)));
        assert!(same_value("true", &json!(true)));
        assert!(!same_value("True", &json!(true)));
        assert!(!same_value("x", &json!({ "a": 1 })));
    }
}
