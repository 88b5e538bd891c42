//! [`ExtractRejection`]: why a call was refused before its handler ran, as axum's rejections
//! are typed. One enum, one variant per case, each with the text the caller reads; it becomes
//! an `isError` tool result (SEP-1303) or, for prompts and resources, a `-32602` error.

use duomcp_proto::era::ProtocolError;
use duomcp_proto::error::HandlerError;
use duomcp_schema::CallToolResult;

/// Why a call was refused before its handler ran: an argument that does not extract
/// ([`FromCallParts`](crate::server::FromCallParts)), or arguments the tool's `inputSchema`
/// refuses.
///
/// For a tool it becomes an `isError` result naming the problem (SEP-1303:
/// `From<ExtractRejection> for CallToolResult`), elsewhere a `-32602` error
/// (`From<ExtractRejection> for HandlerError`, and for [`ProtocolError`]).
/// Its [`Display`](std::fmt::Display) is the text the caller reads. Like
/// [`ProtocolError`], it is not a `std::error::Error`, so that `?` on it in a handler
/// keeps its meaning (`-32602`) instead of becoming a plain failure.
///
/// A handler can take the rejection instead of being refused, by asking for a `Result`:
///
/// ```
/// use duomcp::server::{Args, ExtractRejection};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Add { a: i64, b: i64 }
/// async fn add(args: Result<Args<Add>, ExtractRejection>) -> String {
///     match args {
///         Ok(Args(Add { a, b })) => (a + b).to_string(),
///         Err(ExtractRejection::InvalidArgument { path, .. }) => format!("look at `{path}`"),
///         Err(other) => other.to_string(),
///     }
/// }
/// let server = duomcp::server::Server::builder().tool("add", add).build();
/// # let _ = server;
/// ```
///
/// An extractor of your own refuses with [`ExtractRejection::Custom`]:
///
/// ```
/// use duomcp::server::{CallParts, Context, ExtractRejection, FromCallParts};
/// struct Tenant(String);
/// impl FromCallParts for Tenant {
///     fn from_call_parts(parts: &CallParts) -> Result<Self, ExtractRejection> {
///         let ctx = Context::from_call_parts(parts)?;
///         match ctx.principal().and_then(|p| p.subject()) {
///             Some(s) => Ok(Tenant(s.to_owned())),
///             None => Err(ExtractRejection::custom("no tenant")),
///         }
///     }
/// }
/// assert_eq!(ExtractRejection::custom("no tenant").to_string(), "no tenant");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExtractRejection {
    /// The arguments as a whole do not deserialize into `T` of [`Args<T>`](crate::server::Args)
    /// (no single argument is at fault, e.g. a required one is missing).
    InvalidArguments {
        /// What the deserializer said.
        message: String,
    },
    /// One argument of [`Args<T>`](crate::server::Args) does not deserialize.
    InvalidArgument {
        /// Where it is (`a`, `items[2].name`).
        path: String,
        /// What the deserializer said.
        message: String,
    },
    /// A tool call whose `arguments` is not a JSON object.
    ArgumentsNotObject {
        /// The tool.
        tool: String,
    },
    /// The arguments do not match the tool's `inputSchema`.
    SchemaMismatch {
        /// The tool.
        tool: String,
        /// Every problem the check found, as one text.
        problems: String,
    },
    /// The tool's `inputSchema` does not compile, so no argument can be checked (the server's
    /// mistake, reported to the caller as the call's failure).
    InvalidSchema {
        /// The tool.
        tool: String,
        /// Why it does not compile.
        error: String,
    },
    /// A [`State<T>`](crate::server::State) whose `T` was never registered (the server's
    /// mistake; [`ServerBuilder::build`](crate::server::ServerBuilder::build) warns of it).
    MissingState {
        /// `T`'s type name.
        type_name: &'static str,
    },
    /// A [`Principal`](crate::server::Principal) argument in a call that is not
    /// authenticated.
    Unauthenticated,
    /// An extractor of your own refused; the text is shown as it is.
    Custom(String),
}

impl ExtractRejection {
    /// A refusal of an extractor of your own, shown to the caller as `message`
    /// ([`ExtractRejection::Custom`]).
    pub fn custom(message: impl Into<String>) -> Self {
        ExtractRejection::Custom(message.into())
    }
}

impl std::fmt::Display for ExtractRejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExtractRejection::InvalidArguments { message } => {
                write!(f, "invalid arguments: {message}")
            }
            ExtractRejection::InvalidArgument { path, message } => {
                write!(f, "invalid argument `{path}`: {message}")
            }
            ExtractRejection::ArgumentsNotObject { tool } => write!(
                f,
                "Invalid arguments for tool `{tool}`: `arguments` must be an object"
            ),
            ExtractRejection::SchemaMismatch { tool, problems } => {
                write!(f, "Invalid arguments for tool `{tool}`: {problems}")
            }
            ExtractRejection::InvalidSchema { tool, error } => {
                write!(f, "Tool `{tool}` has an invalid inputSchema: {error}")
            }
            ExtractRejection::MissingState { type_name } => write!(
                f,
                "server misconfigured: no state of type `{type_name}` was registered"
            ),
            ExtractRejection::Unauthenticated => {
                f.write_str("this call requires an authenticated caller")
            }
            ExtractRejection::Custom(message) => f.write_str(message),
        }
    }
}

/// What a prompt or resource handler's refusal becomes: `-32602`, the rejection's text as
/// the message.
///
/// ```
/// use duomcp::era::{Era, ProtocolError};
/// use duomcp::server::ExtractRejection;
/// let err = ProtocolError::from(ExtractRejection::Unauthenticated);
/// let object = Era::Legacy.error_object(&err);
/// assert_eq!(object.code, -32602);
/// assert_eq!(object.message, "this call requires an authenticated caller");
/// ```
impl From<ExtractRejection> for ProtocolError {
    fn from(rejection: ExtractRejection) -> Self {
        ProtocolError::InvalidParams(rejection.to_string())
    }
}

/// The `-32602` error of `From<ExtractRejection> for ProtocolError`, as a handler's error.
impl From<ExtractRejection> for HandlerError {
    fn from(rejection: ExtractRejection) -> Self {
        HandlerError::invalid_params(rejection.to_string())
    }
}

/// What a tool's refusal becomes: an `isError` result whose one text block is the
/// rejection's text (SEP-1303: the model reads it and can try again).
///
/// ```
/// use duomcp::schema::CallToolResult;
/// use duomcp::server::ExtractRejection;
/// let result = CallToolResult::from(ExtractRejection::custom("no tenant"));
/// assert_eq!(result.is_error, Some(true));
/// ```
impl From<ExtractRejection> for CallToolResult {
    fn from(rejection: ExtractRejection) -> Self {
        CallToolResult::error_text(rejection.to_string())
    }
}

/// The name the rejection had before it was an enum (`Rejection(pub String)`), kept so that
/// code writing `Rejection(message)` or naming the type compiles: the type is
/// [`ExtractRejection`], and `Rejection(message)` builds [`ExtractRejection::Custom`].
#[doc(hidden)]
pub use ExtractRejection as Rejection;

/// `Rejection(message)`, the old tuple struct's constructor: [`ExtractRejection::Custom`].
#[doc(hidden)]
#[allow(non_snake_case)]
pub fn Rejection(message: String) -> ExtractRejection {
    ExtractRejection::Custom(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rejection_reads_as_the_text_callers_got_before() {
        let cases = [
            (
                ExtractRejection::InvalidArguments {
                    message: "missing field `a`".into(),
                },
                "invalid arguments: missing field `a`",
            ),
            (
                ExtractRejection::InvalidArgument {
                    path: "inner.n".into(),
                    message: "expected u8".into(),
                },
                "invalid argument `inner.n`: expected u8",
            ),
            (
                ExtractRejection::ArgumentsNotObject { tool: "t".into() },
                "Invalid arguments for tool `t`: `arguments` must be an object",
            ),
            (
                ExtractRejection::SchemaMismatch {
                    tool: "t".into(),
                    problems: "/a: not a string".into(),
                },
                "Invalid arguments for tool `t`: /a: not a string",
            ),
            (
                ExtractRejection::InvalidSchema {
                    tool: "t".into(),
                    error: "bad".into(),
                },
                "Tool `t` has an invalid inputSchema: bad",
            ),
            (
                ExtractRejection::MissingState { type_name: "u8" },
                "server misconfigured: no state of type `u8` was registered",
            ),
            (
                ExtractRejection::Unauthenticated,
                "this call requires an authenticated caller",
            ),
            (ExtractRejection::custom("no tenant"), "no tenant"),
        ];
        for (rejection, text) in cases {
            assert_eq!(rejection.to_string(), text);
            match HandlerError::from(rejection.clone()) {
                HandlerError::Protocol(ProtocolError::InvalidParams(m)) => assert_eq!(m, text),
                other => panic!("{other:?}"),
            }
            let result = CallToolResult::from(rejection);
            assert_eq!(result.is_error, Some(true));
            assert_eq!(result.content[0].as_text(), Some(text));
        }
    }

    #[test]
    fn the_old_constructor_still_builds_a_custom_rejection() {
        let old: Rejection = Rejection("refused".to_owned());
        assert_eq!(old, ExtractRejection::Custom("refused".into()));
    }
}
