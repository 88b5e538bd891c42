//! A writer that records every JSON-RPC message written through it, for tests that check what
//! a client sent.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use duomcp_testkit::tap::{Sent, Tap};
//! use tokio::io::AsyncWriteExt;
//!
//! let sent = Sent::default();
//! let mut tap = Tap::new(tokio::io::sink(), sent.clone());
//! tap.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n").await.unwrap();
//! assert_eq!(sent.count("ping"), 1);
//! # });
//! ```

use serde_json::Value;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::AsyncWrite;

/// Every complete message written through a [`Tap`], parsed (lines that are not JSON are
/// skipped).
#[derive(Clone, Default)]
pub struct Sent(Arc<Mutex<Vec<Value>>>);

impl Sent {
    /// All messages, in the order written.
    pub fn all(&self) -> Vec<Value> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Requests with this method.
    pub fn requests(&self, method: &str) -> Vec<Value> {
        self.all()
            .into_iter()
            .filter(|m| m["method"] == method && m.get("id").is_some())
            .collect()
    }

    /// Notifications with this method.
    pub fn notifications(&self, method: &str) -> Vec<Value> {
        self.all()
            .into_iter()
            .filter(|m| m["method"] == method && m.get("id").is_none())
            .collect()
    }

    /// How many requests with this method were written.
    pub fn count(&self, method: &str) -> usize {
        self.requests(method).len()
    }
}

/// A writer that records each complete line into a [`Sent`] before passing it on.
pub struct Tap<W> {
    inner: W,
    partial: Vec<u8>,
    sent: Sent,
}

impl<W> Tap<W> {
    /// Wraps `inner`; what is written through it lands in `sent`.
    pub fn new(inner: W, sent: Sent) -> Self {
        Tap {
            inner,
            partial: Vec::new(),
            sent,
        }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Tap<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_write(cx, buf) {
            Poll::Ready(Ok(n)) => {
                this.partial.extend_from_slice(&buf[..n]);
                while let Some(pos) = this.partial.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = this.partial.drain(..=pos).collect();
                    if let Ok(v) = serde_json::from_slice::<Value>(&line) {
                        this.sent
                            .0
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push(v);
                    }
                }
                Poll::Ready(Ok(n))
            }
            other => other,
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
