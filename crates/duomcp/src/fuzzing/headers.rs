//! 2026-07-28 mirrored headers: the `=?base64?…?=` sentinel and the `Mcp-Param-*` check,
//! against what the client sends for the same call.
//!
//! Oracles: any string the client encodes is a valid header value and decodes back to itself;
//! the headers the client derives for a call (`Mcp-Name`, `Mcp-Param-*`, from the tool's
//! `x-mcp-header` annotations) always pass the server's check; fuzzed extra headers never
//! panic it.

use crate::client::mirror;
use crate::client::transport::http::encode_header_value;
use crate::jsonrpc::{decode, Incoming};
use crate::server::{Server, ToolSpec};
use crate::transport::http::headers::{
    decode_value, validate, MCP_METHOD, MCP_NAME, PROTOCOL_VERSION,
};
use arbitrary::{Arbitrary, Unstructured};
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{json, Map, Value};
use std::sync::OnceLock;

#[derive(Arbitrary, Debug)]
enum Arg {
    Absent,
    Null,
    Str(String),
    Int(i64),
    Big(u64),
    Float(f64),
    Bool(bool),
}

impl Arg {
    fn put(&self, into: &mut Map<String, Value>, key: &str) {
        let v = match self {
            Arg::Absent => return,
            Arg::Null => Value::Null,
            Arg::Str(s) => Value::from(s.as_str()),
            Arg::Int(i) => Value::from(*i),
            Arg::Big(u) => Value::from(*u),
            Arg::Float(f) => Value::from(*f),
            Arg::Bool(b) => Value::from(*b),
        };
        into.insert(key.to_owned(), v);
    }
}

#[derive(Arbitrary, Debug)]
struct Input {
    /// Fed to the sentinel decoder as a header value, and to the client's encoder.
    value: String,
    tool_name: Option<String>,
    region: Arg,
    tenant: Arg,
    flag: Arg,
    /// Extra or replacing headers (then the outcome is not predicted).
    extra: Vec<(String, Vec<u8>)>,
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "opts": { "type": "object", "properties": {
                "tenant": { "type": "integer", "x-mcp-header": "Tenant-Id" }
            } },
            "flag": { "type": ["boolean", "null"], "x-mcp-header": "Flag" }
        }
    })
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let spec = ToolSpec::new("t").input_schema(schema());
        Server::builder().tool(spec, || async { "ok" }).build()
    })
}

/// As the server reads a header: surrounding spaces and tabs trimmed.
fn as_read(value: &HeaderValue) -> &str {
    value
        .to_str()
        .expect("visible ASCII")
        .trim_matches([' ', '\t'])
}

/// Input: [`arbitrary`] bytes (see `Input`).
pub fn http_headers(data: &[u8]) {
    let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let _ = decode_value("Mcp-Param-X", &input.value);
    let encoded = encode_header_value(&input.value);
    let header = HeaderValue::from_str(&encoded).unwrap_or_else(|_| {
        panic!(
            "the client encodes {:?} as an invalid header value",
            input.value
        )
    });
    let back = decode_value("Mcp-Param-X", as_read(&header))
        .unwrap_or_else(|e| panic!("{encoded:?} does not decode: {e:?}"));
    assert_eq!(
        back, input.value,
        "the sentinel round trip changed the value"
    );

    let mut args = Map::new();
    input.region.put(&mut args, "region");
    let mut opts = Map::new();
    input.tenant.put(&mut opts, "tenant");
    args.insert("opts".into(), Value::Object(opts));
    input.flag.put(&mut args, "flag");
    let args = Value::Object(args);
    let name = input.tool_name.unwrap_or_else(|| "t".to_owned());
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": name, "arguments": args,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    });
    let Ok(Incoming::Request(req)) = decode(&serde_json::to_vec(&body).expect("json")) else {
        panic!("a well-formed request does not decode")
    };

    // The headers as the client's HTTP transport builds them.
    let mut headers = HeaderMap::new();
    headers.insert(PROTOCOL_VERSION, HeaderValue::from_static("2026-07-28"));
    headers.insert(MCP_METHOD, HeaderValue::from_static("tools/call"));
    let mut honest = true;
    match HeaderValue::from_str(&encode_header_value(&name)) {
        Ok(v) => {
            headers.insert(MCP_NAME, v);
        }
        Err(_) => panic!("the client cannot send the tool name {name:?}"),
    }
    let Value::Object(schema) = schema() else {
        unreachable!()
    };
    let annotations = mirror::annotations(&schema).expect("valid annotations");
    for (part, text) in mirror::header_values(&annotations, &args) {
        let header = HeaderName::try_from(format!("mcp-param-{part}")).expect("a header name");
        let value = HeaderValue::from_str(&encode_header_value(&text))
            .unwrap_or_else(|_| panic!("the client cannot send {text:?}"));
        headers.insert(header, value);
    }
    for (name, value) in &input.extra {
        if let (Ok(n), Ok(v)) = (
            HeaderName::try_from(name.as_str()),
            HeaderValue::from_bytes(value),
        ) {
            headers.append(n, v);
            honest = false;
        }
    }
    let verdict = validate(&headers, &req, &server().shared);
    if honest {
        if let Err(e) = verdict {
            panic!("the server refuses the client's own headers: {e:?}\nargs {args}\nheaders {headers:?}");
        }
    }
}
