//! Answering one message outside any connection: for custom transports, serverless
//! functions, and benchmarks of the request path without I/O.

use super::{handle_request, RequestEnv, Server};
use crate::jsonrpc::{self, Incoming};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

impl Server {
    /// Handles one JSON-RPC message statelessly and returns the encoded response, if the
    /// message calls for one.
    ///
    /// Only 2026-07-28 requests (with `_meta`) can succeed here: a 2025-11-25 request needs a
    /// session, which a single message does not have. Notifications the handler emits while it
    /// runs (progress, logs) are discarded.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = duomcp::server::Server::builder().tool("hi", || async { "hello" }).build();
    /// let request = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hi",
    ///   "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
    ///            "io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    /// let response = server.respond(request).await.unwrap();
    /// let v: serde_json::Value = serde_json::from_slice(&response).unwrap();
    /// assert_eq!(v["result"]["content"][0]["text"], "hello");
    /// # });
    /// ```
    pub async fn respond(&self, message: &[u8]) -> Option<Vec<u8>> {
        match jsonrpc::decode(message) {
            Err(e) => Some(jsonrpc::encode_error(e.id.as_ref(), &e.error)),
            Ok(Incoming::Request(req)) => {
                // The receiver is dropped at once: sends fail immediately and are ignored.
                let (sink, _) = mpsc::channel(1);
                let env = RequestEnv {
                    session: None,
                    era_hint: None,
                    validated_meta: None,
                    sink,
                    cancel: CancellationToken::new(),
                    closing: CancellationToken::new(),
                    principal: None,
                    peer: None,
                    trace: Default::default(),
                };
                handle_request(self.shared.clone(), req, env)
                    .await
                    .map(|reply| reply.frame)
            }
            Ok(_) => None,
        }
    }
}
