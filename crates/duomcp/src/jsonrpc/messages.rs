//! Whole messages in and out of a connection's loop, whatever carries them: the lines of a byte
//! stream or the messages of an in-memory connection.

use super::{Line, LineReader};
use tokio::io::{AsyncBufRead, AsyncWriteExt};

/// Where a connection's loop reads whole messages from: the lines of a byte stream
/// ([`LineReader`]) or the messages of an in-memory connection ([`MessageReader`]). One loop
/// serves both (the stdio server, the stream client transport), so an in-memory connection runs
/// the very code stdio does, less the framing.
pub(crate) trait ReadMessages: Send {
    /// The next message ([`Line::TooLarge`] for one over the limit), or `None` at the end.
    /// Cancel safe: it may be a branch of `tokio::select!` in a loop.
    fn next_message(
        &mut self,
    ) -> impl std::future::Future<Output = std::io::Result<Option<Line<'_>>>> + Send;

    /// After [`Line::TooLarge`]: the message's first bytes and its length.
    #[cfg_attr(not(feature = "client"), allow(dead_code))] // the client's reader reports them
    fn oversized(&self) -> (&[u8], usize);

    /// Whether the last message was cut off by the end of input (a line without its newline).
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    fn unterminated(&self) -> bool {
        false
    }
}

impl<R: AsyncBufRead + Unpin + Send> ReadMessages for LineReader<R> {
    async fn next_message(&mut self) -> std::io::Result<Option<Line<'_>>> {
        self.next_line().await
    }

    fn oversized(&self) -> (&[u8], usize) {
        LineReader::oversized(self)
    }

    fn unterminated(&self) -> bool {
        LineReader::unterminated(self)
    }
}

/// Where a connection's loop writes whole messages to: a byte stream, each message a line
/// ([`tokio::io::BufWriter`]), or an in-memory connection ([`MessageWriter`]).
pub(crate) trait WriteMessages: Send {
    /// Queues one message (the encoded JSON-RPC message, without framing).
    fn write_message(
        &mut self,
        message: &[u8],
    ) -> impl std::future::Future<Output = std::io::Result<()>> + Send;

    /// Delivers what was queued.
    fn flush(&mut self) -> impl std::future::Future<Output = std::io::Result<()>> + Send;

    /// Delivers what was queued and ends the connection's output (the peer sees its end).
    #[cfg_attr(not(feature = "client"), allow(dead_code))] // the server's output just ends
    fn shutdown(&mut self) -> impl std::future::Future<Output = std::io::Result<()>> + Send;
}

impl<W: tokio::io::AsyncWrite + Unpin + Send> WriteMessages for tokio::io::BufWriter<W> {
    async fn write_message(&mut self, message: &[u8]) -> std::io::Result<()> {
        self.write_all(message).await?;
        self.write_all(b"\n").await
    }

    async fn flush(&mut self) -> std::io::Result<()> {
        AsyncWriteExt::flush(self).await
    }

    async fn shutdown(&mut self) -> std::io::Result<()> {
        AsyncWriteExt::shutdown(self).await
    }
}

#[cfg(feature = "server")] // the in-memory connection is `transport::memory`
/// The receiving half of an in-memory connection, read as [`ReadMessages`]: each message is
/// held until the next is read, and one over `max` bytes is reported as [`Line::TooLarge`],
/// as a line that long would be.
pub(crate) struct MessageReader {
    rx: tokio::sync::mpsc::Receiver<Vec<u8>>,
    current: Vec<u8>,
    max: usize,
}

#[cfg(feature = "server")]
impl MessageReader {
    pub(crate) fn new(rx: tokio::sync::mpsc::Receiver<Vec<u8>>, max: usize) -> Self {
        MessageReader {
            rx,
            current: Vec::new(),
            max,
        }
    }
}

#[cfg(feature = "server")]
impl ReadMessages for MessageReader {
    async fn next_message(&mut self) -> std::io::Result<Option<Line<'_>>> {
        // `recv` is cancel safe, and nothing happens after it but a move.
        let Some(message) = self.rx.recv().await else {
            return Ok(None);
        };
        self.current = message;
        if self.current.len() > self.max {
            return Ok(Some(Line::TooLarge));
        }
        Ok(Some(Line::Message(&self.current)))
    }

    fn oversized(&self) -> (&[u8], usize) {
        let head = &self.current[..self.current.len().min(duomcp_proto::jsonrpc::HEAD)];
        (head, self.current.len())
    }
}

#[cfg(feature = "server")] // the in-memory connection is `transport::memory`
/// The sending half of an in-memory connection, written as [`WriteMessages`]: each message is
/// sent as it is written (the channel's bound is the back-pressure a pipe's buffer gives).
pub(crate) struct MessageWriter {
    tx: Option<tokio::sync::mpsc::Sender<Vec<u8>>>,
}

#[cfg(feature = "server")]
impl MessageWriter {
    pub(crate) fn new(tx: tokio::sync::mpsc::Sender<Vec<u8>>) -> Self {
        MessageWriter { tx: Some(tx) }
    }
}

#[cfg(feature = "server")]
fn peer_gone() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::BrokenPipe,
        "the other end of the in-memory connection was dropped",
    )
}

#[cfg(feature = "server")]
impl WriteMessages for MessageWriter {
    async fn write_message(&mut self, message: &[u8]) -> std::io::Result<()> {
        let Some(tx) = &self.tx else {
            return Err(peer_gone());
        };
        tx.send(message.to_vec()).await.map_err(|_| peer_gone())
    }

    async fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }

    async fn shutdown(&mut self) -> std::io::Result<()> {
        self.tx = None;
        Ok(())
    }
}
