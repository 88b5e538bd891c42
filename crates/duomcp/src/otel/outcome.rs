//! How a request ended: what its span, its metrics and its audit line record.

/// How a request ended, as the span, the metrics and the audit line record it.
pub(crate) struct Outcome<'a> {
    /// The JSON-RPC error code and message, when the answer is an error.
    pub error: Option<(i64, &'a str)>,
    /// A tool result with `isError: true`.
    pub tool_error: bool,
    /// No answer: cancelled, or the connection went away.
    pub cancelled: bool,
}
