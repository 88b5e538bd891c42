//! Classifying one JSON text as a JSON-RPC request, notification or response.

use duomcp_schema::{error_code, ErrorObject, RequestId};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::params::{Name, Params, Split};

/// A decoded message. Raw fields (`params`, `result`) are still unparsed JSON text.
#[derive(Debug)]
pub enum Incoming {
    /// A request: it has a `method` and an `id`.
    Request(IncomingRequest),
    /// A notification: a `method` and no `id`.
    Notification(IncomingNotification),
    /// A response to a request this peer sent.
    Response(IncomingResponse),
}

/// A request whose `params` are kept as raw JSON text until its handler parses them.
#[derive(Debug)]
pub struct IncomingRequest {
    /// The request id.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// The `params` object, if any, with its members as the decoder found them.
    pub params: Option<Params>,
}

/// A notification whose `params` are kept as raw JSON text.
#[derive(Debug)]
pub struct IncomingNotification {
    /// The method name.
    pub method: String,
    /// The `params` object, if any, with its members as the decoder found them.
    pub params: Option<Params>,
}

/// A response: either a raw `result` or an error object.
#[derive(Debug)]
pub struct IncomingResponse {
    /// The id of the request this answers.
    pub id: RequestId,
    /// The outcome.
    pub outcome: Result<Box<RawValue>, ErrorObject>,
}

/// Why a text could not be decoded; each maps to a JSON-RPC error response.
#[derive(Debug)]
pub struct DecodeError {
    /// The id to answer with, when one could be read from the message.
    pub id: Option<RequestId>,
    /// The error to send back.
    pub error: ErrorObject,
}

/// A member that may be absent; unlike `Option`, a JSON `null` counts as present.
#[derive(Default)]
enum Member<'a> {
    #[default]
    Absent,
    Present(&'a RawValue),
}

impl<'de: 'a, 'a> Deserialize<'de> for Member<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(d).map(Member::Present)
    }
}

/// The envelope, its members raw; `params` too (the fallback reading, see [`decode`]).
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Member<'a>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// [`Envelope`] with `params` split into its members in the same pass, and the name of the
/// member after `params` (where `params` ends). Read as [`Envelope`] is, a repeated member an
/// error and others ignored, but refusing what it cannot place (a member name with escapes):
/// [`decode`] then reads the text as an [`Envelope`].
#[derive(Default)]
struct SplitEnvelope<'a> {
    jsonrpc: Option<&'a RawValue>,
    id: Member<'a>,
    method: Option<&'a RawValue>,
    params: Option<Split<'a>>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
    after_params: Option<&'a str>,
}

impl<'de: 'a, 'a> Deserialize<'de> for SplitEnvelope<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{Error, IgnoredAny, MapAccess, Visitor};
        struct EnvelopeVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for EnvelopeVisitor<'a> {
            type Value = SplitEnvelope<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON-RPC message object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut env = SplitEnvelope::default();
                // The members seen, one bit each, in the order of the match below.
                let mut seen = 0u8;
                let mut params_last = false;
                while let Some(Name(name)) = map.next_key::<Name<'de>>()? {
                    let Some(name) = name else {
                        return Err(A::Error::custom("a member name with escapes"));
                    };
                    if std::mem::take(&mut params_last) {
                        env.after_params = Some(name);
                    }
                    let bit = match name {
                        "jsonrpc" => {
                            env.jsonrpc = map.next_value()?;
                            1
                        }
                        "id" => {
                            env.id = map.next_value()?;
                            2
                        }
                        "method" => {
                            env.method = map.next_value()?;
                            4
                        }
                        "params" => {
                            env.params = map.next_value()?;
                            params_last = true;
                            8
                        }
                        "result" => {
                            env.result = map.next_value()?;
                            16
                        }
                        "error" => {
                            env.error = map.next_value()?;
                            32
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            0
                        }
                    };
                    if seen & bit != 0 {
                        return Err(A::Error::custom("a repeated member"));
                    }
                    seen |= bit;
                }
                Ok(env)
            }
        }
        d.deserialize_map(EnvelopeVisitor(std::marker::PhantomData))
    }
}

/// The envelope's members other than `params`.
struct Parts<'a> {
    jsonrpc: Option<&'a RawValue>,
    id: Member<'a>,
    method: Option<&'a RawValue>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
}

/// `params` as one of the two readings found it.
enum ParamsIn<'a> {
    Raw(&'a RawValue),
    Split(Params),
}

fn invalid(id: Option<RequestId>, why: &str) -> DecodeError {
    DecodeError {
        id,
        error: super::error(
            error_code::INVALID_REQUEST,
            format!("Invalid Request: {why}"),
        ),
    }
}

/// Decodes one JSON-RPC message from `bytes`.
///
/// Not JSON (including invalid UTF-8) → `-32700`; JSON that is not a JSON-RPC 2.0 message →
/// `-32600`, with the message's id when it has a usable one. Batches (arrays) are not part of
/// either supported revision and are rejected as invalid requests: an array is never read as
/// one message, and no part of the envelope (nor `error`) is read from an array by position
/// ([`duomcp_schema::strict`]).
///
/// ```
/// use duomcp_proto::jsonrpc::{decode, Incoming};
/// let msg = decode(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
/// assert!(matches!(msg, Incoming::Request(r) if r.method == "ping"));
/// assert_eq!(decode(b"{oops").unwrap_err().error.code, -32700);
/// ```
pub fn decode(bytes: &[u8]) -> Result<Incoming, DecodeError> {
    // UTF-8 is checked once for the whole text; every later reading of a part of it (the
    // envelope here, `params` and `_meta` in the dispatcher) then works on `str`s.
    let text = std::str::from_utf8(bytes).map_err(|e| DecodeError {
        id: None,
        error: super::error(error_code::PARSE_ERROR, format!("Parse error: {e}")),
    })?;
    if text.trim_start().starts_with('[') {
        return Err(invalid(
            None,
            "batches (JSON arrays) are not supported; send one JSON-RPC message object",
        ));
    }
    // One pass: the envelope, with `params` split into its members (`Params`). What that
    // reading refuses (an escaped member name, a repeated `_meta`, anything malformed) is read
    // again below the way every message once was, `params` as one raw value, whose reading
    // words the error: the outcome is the same either way, only the members are not recorded.
    if let Ok(env) = serde_json::from_str::<SplitEnvelope<'_>>(text) {
        let params = match env.params {
            None => Some(None),
            Some(split) => {
                Params::from_split(text, split, env.after_params).map(|p| Some(ParamsIn::Split(p)))
            }
        };
        if let Some(params) = params {
            let parts = Parts {
                jsonrpc: env.jsonrpc,
                id: env.id,
                method: env.method,
                result: env.result,
                error: env.error,
            };
            return classify(parts, params);
        }
    }
    read_whole(text)
}

/// [`decode`]'s second reading of a text that is not an array: the envelope with `params` (if
/// any) as one raw value, not split.
pub(super) fn read_whole(text: &str) -> Result<Incoming, DecodeError> {
    // Not an array (refused above), so the envelope is read from an object, and its members
    // are raw text: serde_json's own reading is already the strict one here.
    let env: Envelope<'_> = match serde_json::from_str(text) {
        Ok(env) => env,
        Err(e) => {
            // Valid JSON of the wrong shape is an invalid request; anything else is a parse error.
            return Err(
                if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() {
                    invalid(None, "expected a JSON-RPC 2.0 message object")
                } else {
                    DecodeError {
                        id: None,
                        error: super::error(error_code::PARSE_ERROR, format!("Parse error: {e}")),
                    }
                },
            );
        }
    };
    let parts = Parts {
        jsonrpc: env.jsonrpc,
        id: env.id,
        method: env.method,
        result: env.result,
        error: env.error,
    };
    classify(parts, env.params.map(ParamsIn::Raw))
}

/// The message the envelope's members make.
fn classify(env: Parts<'_>, params: Option<ParamsIn<'_>>) -> Result<Incoming, DecodeError> {
    let id = match env.id {
        Member::Absent => None,
        Member::Present(raw) => match serde_json::from_str::<RequestId>(raw.get()) {
            Ok(RequestId::Number(n)) if !(n.is_i64() || n.is_u64()) => {
                return Err(invalid(None, "`id` must be a string or an integer"))
            }
            Ok(id) => Some(id),
            Err(_) => return Err(invalid(None, "`id` must be a string or an integer")),
        },
    };
    if env.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
        return Err(invalid(id, "`jsonrpc` must be \"2.0\""));
    }
    if let Some(raw_method) = env.method {
        let method: String = serde_json::from_str(raw_method.get())
            .map_err(|_| invalid(id.clone(), "`method` must be a string"))?;
        if env.result.is_some() || env.error.is_some() {
            return Err(invalid(id, "a request must not carry `result` or `error`"));
        }
        let params = match params {
            None => None,
            Some(ParamsIn::Split(p)) => Some(p),
            Some(ParamsIn::Raw(p)) => {
                let first = p.get().as_bytes().first().copied();
                if first != Some(b'{') {
                    return Err(DecodeError {
                        id,
                        error: super::error(
                            error_code::INVALID_PARAMS,
                            "Invalid params: `params` must be a JSON object",
                        ),
                    });
                }
                Some(Params::from_raw(p.to_owned()))
            }
        };
        return Ok(match id {
            Some(id) => Incoming::Request(IncomingRequest { id, method, params }),
            None => Incoming::Notification(IncomingNotification { method, params }),
        });
    }
    let Some(id) = id else {
        return Err(invalid(None, "a message needs a `method` or an `id`"));
    };
    match (env.result, env.error) {
        (Some(result), None) => Ok(Incoming::Response(IncomingResponse {
            id,
            outcome: Ok(result.to_owned()),
        })),
        (None, Some(err)) => match duomcp_schema::strict::from_str::<ErrorObject>(err.get()) {
            Ok(e) => Ok(Incoming::Response(IncomingResponse {
                id,
                outcome: Err(e),
            })),
            Err(_) => Err(invalid(
                Some(id),
                "`error` must have an integer `code` and a string `message`",
            )),
        },
        _ => Err(invalid(
            Some(id),
            "a response needs exactly one of `result` and `error`",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(bytes: &[u8]) -> i32 {
        decode(bytes).unwrap_err().error.code
    }

    #[test]
    fn classifies_messages() {
        assert!(matches!(
            decode(br#"{"jsonrpc":"2.0","id":"a","method":"x","params":{}}"#),
            Ok(Incoming::Request(_))
        ));
        assert!(matches!(
            decode(br#"{"jsonrpc":"2.0","method":"x"}"#),
            Ok(Incoming::Notification(_))
        ));
        assert!(matches!(
            decode(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#),
            Ok(Incoming::Response(_))
        ));
        let Ok(Incoming::Response(r)) =
            decode(br#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}"#)
        else {
            panic!("expected response")
        };
        assert_eq!(r.outcome.unwrap_err().code, -1);
    }

    #[test]
    fn rejects_bad_input_with_the_right_code() {
        assert_eq!(code(b"{\"jsonrpc\":"), -32700);
        assert_eq!(code(b"\xff\xfe"), -32700);
        // Invalid UTF-8 inside `params` (which stays raw) is caught too.
        assert_eq!(
            code(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":\"\xff\"}}"),
            -32700
        );
        assert_eq!(code(b"[1,2]"), -32600);
        // An array is a batch, never a message read by position.
        assert_eq!(code(br#"["2.0",1,"ping"]"#), -32600);
        assert_eq!(code(b" \n[\"2.0\",1,\"ping\"]"), -32600);
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1,"error":[-1,"no"]}"#),
            -32600
        );
        assert_eq!(code(b"42"), -32600);
        assert_eq!(code(br#"{"jsonrpc":"1.0","id":1,"method":"x"}"#), -32600);
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#), -32600);
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":{},"method":"x"}"#), -32600);
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#), -32600);
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"x"}"#),
            -32600
        );
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":1,"method":7}"#), -32600);
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#),
            -32602
        );
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":1}"#), -32600);
    }

    #[test]
    fn keeps_the_id_of_an_invalid_request() {
        let err = decode(br#"{"jsonrpc":"2.0","id":"k","method":3}"#).unwrap_err();
        assert_eq!(err.id, Some(RequestId::String("k".into())));
    }
}
