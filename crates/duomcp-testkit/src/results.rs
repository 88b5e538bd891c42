//! Reading what a test got back: the text of a `tools/call` result ([`text`]), and the requests
//! and notifications among recorded messages ([`Messages`], e.g. what a client sent on an
//! in-memory connection's tap).
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use duomcp::server::Server;
//! use duomcp::transport::memory::{self, Side};
//! use duomcp_testkit::{text, Messages};
//! use serde_json::json;
//!
//! let server = Server::builder().tool("hi", || async { "hello" }).build();
//! let (client, tap) = memory::connect(server).await.unwrap();
//! let result = client.call_tool("hi", json!({})).await.unwrap();
//! assert_eq!(text(&result), "hello");
//! // The request was answered, so the tap has recorded it.
//! let sent = tap.from(Side::Client);
//! assert_eq!(sent.count("tools/call"), 1);
//! assert_eq!(sent.requests("tools/call")[0]["params"]["name"], "hi");
//! # });
//! ```

// A test helper: a value that is not a tool result fails the test.
#![allow(clippy::panic)]

use duomcp::schema::CallToolResult;
use serde_json::Value;

/// Something holding a `tools/call` result: a typed [`CallToolResult`], a result as JSON
/// (`{"content": [...]}`), or a whole JSON-RPC response carrying one (`{"result": {...}}`).
pub trait ToolText {
    /// The text of each text block of the result's `content`, in order (other blocks are
    /// skipped).
    fn texts(&self) -> Vec<String>;
}

impl ToolText for CallToolResult {
    fn texts(&self) -> Vec<String> {
        self.content
            .iter()
            .filter_map(|c| c.as_text())
            .map(str::to_owned)
            .collect()
    }
}

impl ToolText for Value {
    /// Panics if `self` has no `content` array (or `result.content` for a response): an
    /// error answer is not a result.
    fn texts(&self) -> Vec<String> {
        let result = match (self.get("content"), self.get("result")) {
            (None, Some(result)) => result,
            _ => self,
        };
        result["content"]
            .as_array()
            .unwrap_or_else(|| panic!("not a tool result (no content array): {self}"))
            .iter()
            .filter(|c| c["type"] == "text")
            .map(|c| c["text"].as_str().unwrap_or_default().to_owned())
            .collect()
    }
}

impl<T: ToolText + ?Sized> ToolText for &T {
    fn texts(&self) -> Vec<String> {
        (**self).texts()
    }
}

/// The text of a `tools/call` result: its text blocks joined with `"\n"` (one block: its
/// text; none: `""`). See [`ToolText`] for what it reads.
///
/// ```
/// use duomcp_testkit::text;
/// use serde_json::json;
///
/// let result = json!({"content": [
///     {"type": "text", "text": "first"},
///     {"type": "image", "data": "", "mimeType": "image/png"},
///     {"type": "text", "text": "second"}
/// ]});
/// assert_eq!(text(&result), "first\nsecond");
/// let response = json!({"jsonrpc": "2.0", "id": 1, "result": result});
/// assert_eq!(text(&response), "first\nsecond");
/// ```
pub fn text(result: &impl ToolText) -> String {
    result.texts().join("\n")
}

/// Filters over recorded JSON-RPC messages (e.g. `tap.from(Side::Client)` of an in-memory
/// connection).
pub trait Messages {
    /// The requests (with an `id`) with this method, in order.
    fn requests(&self, method: &str) -> Vec<Value>;
    /// The notifications (no `id`) with this method, in order.
    fn notifications(&self, method: &str) -> Vec<Value>;
    /// How many requests with this method there are.
    fn count(&self, method: &str) -> usize {
        self.requests(method).len()
    }
}

impl Messages for [Value] {
    fn requests(&self, method: &str) -> Vec<Value> {
        self.iter()
            .filter(|m| m["method"] == method && m.get("id").is_some())
            .cloned()
            .collect()
    }

    fn notifications(&self, method: &str) -> Vec<Value> {
        self.iter()
            .filter(|m| m["method"] == method && m.get("id").is_none())
            .cloned()
            .collect()
    }
}
