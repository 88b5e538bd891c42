//! Newline-delimited framing (the stdio transport of both revisions) read from an async
//! reader: `duomcp-proto`'s [`LineFramer`] does the framing (an oversized line is skipped,
//! never buffered whole); this drives it with the bytes a tokio reader has.

use duomcp_proto::jsonrpc::{Frame, Line, LineFramer};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// Reads newline-delimited messages from a buffered reader, reusing one buffer.
///
/// [`LineReader::next_line`] is cancel safe (with a cancel-safe `fill_buf`, as
/// [`tokio::io::BufReader`]'s is): a partial line read before the future was dropped is kept
/// and completed by the next call, so it can be a branch of `tokio::select!` in a loop.
///
/// ```
/// # tokio_test_block_on(async {
/// use duomcp::jsonrpc::{Line, LineReader};
/// let input: &[u8] = b"{\"a\":1}\n\n{\"b\":2}";
/// let mut lines = LineReader::new(input, 1024);
/// assert_eq!(lines.next_line().await.unwrap(), Some(Line::Message(b"{\"a\":1}")));
/// assert_eq!(lines.next_line().await.unwrap(), Some(Line::Message(b"{\"b\":2}")));
/// assert_eq!(lines.next_line().await.unwrap(), None);
/// # });
/// # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
pub struct LineReader<R> {
    inner: R,
    framer: LineFramer,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    /// Wraps `inner`; lines longer than `max` bytes are reported as [`Line::TooLarge`].
    pub fn new(inner: R, max: usize) -> Self {
        Self {
            inner,
            framer: LineFramer::new(max),
        }
    }

    /// After [`Line::TooLarge`]: the first bytes of that line (at most 1 KiB) and its
    /// length in bytes, so that a reader can tell whose answer it was and how big.
    pub fn oversized(&self) -> (&[u8], usize) {
        self.framer.oversized()
    }

    /// Whether the last line returned ([`Line::Message`] or [`Line::TooLarge`]) was cut off
    /// by the end of input instead of ending with a newline.
    pub fn unterminated(&self) -> bool {
        self.framer.unterminated()
    }

    /// The next non-blank line, or `None` at end of input.
    pub async fn next_line(&mut self) -> std::io::Result<Option<Line<'_>>> {
        loop {
            match self.next_frame().await? {
                Frame::Eof => return Ok(None),
                Frame::TooLarge => return Ok(Some(Line::TooLarge)),
                Frame::Line if self.framer.is_blank() => continue,
                Frame::Line => return Ok(Some(Line::Message(self.framer.line()))),
            }
        }
    }

    async fn next_frame(&mut self) -> std::io::Result<Frame> {
        // State lives in the framer across the awaits (not in locals), so dropping this
        // future between two `fill_buf`s loses nothing.
        loop {
            let available = self.inner.fill_buf().await?;
            let (used, frame) = self.framer.feed(available);
            self.inner.consume(used);
            if let Some(frame) = frame {
                return Ok(frame);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use duomcp_proto::jsonrpc::HEAD;

    #[tokio::test]
    async fn oversized_lines_are_skipped_and_reading_goes_on() {
        let mut input = vec![b'x'; 100];
        input.extend_from_slice(b"\nok\r\n");
        input.extend_from_slice(&[b'y'; 50]);
        let mut reader = LineReader::new(tokio::io::BufReader::with_capacity(8, &input[..]), 10);
        assert_eq!(reader.next_line().await.unwrap(), Some(Line::TooLarge));
        assert_eq!(
            reader.next_line().await.unwrap(),
            Some(Line::Message(b"ok"))
        );
        assert!(!reader.unterminated());
        assert_eq!(reader.next_line().await.unwrap(), Some(Line::TooLarge));
        assert!(reader.unterminated(), "the y line never ended");
        assert_eq!(reader.next_line().await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_last_line_without_a_newline_is_returned_and_said_so() {
        let mut reader = LineReader::new(&b"one\ntwo"[..], 100);
        assert_eq!(
            reader.next_line().await.unwrap(),
            Some(Line::Message(b"one"))
        );
        assert!(!reader.unterminated());
        assert_eq!(
            reader.next_line().await.unwrap(),
            Some(Line::Message(b"two"))
        );
        assert!(reader.unterminated());
        assert_eq!(reader.next_line().await.unwrap(), None);
    }

    #[tokio::test]
    async fn an_oversized_line_leaves_its_head_and_length() {
        let mut input = br#"{"jsonrpc":"2.0","id":7,"result":""#.to_vec();
        input.extend_from_slice(&vec![b'z'; 5000]);
        input.extend_from_slice(b"\"}\nok\n");
        let line_len = input.len() - 4;
        for capacity in [8, 64 * 1024] {
            let mut reader = LineReader::new(
                tokio::io::BufReader::with_capacity(capacity, &input[..]),
                100,
            );
            assert_eq!(reader.next_line().await.unwrap(), Some(Line::TooLarge));
            let (head, len) = reader.oversized();
            assert_eq!(len, line_len, "capacity {capacity}");
            assert_eq!(head.len(), HEAD);
            assert!(head.starts_with(br#"{"jsonrpc":"2.0","id":7,"#));
            assert_eq!(
                reader.next_line().await.unwrap(),
                Some(Line::Message(b"ok"))
            );
        }
    }

    #[tokio::test]
    async fn a_dropped_next_line_keeps_the_partial_line() {
        use tokio::io::AsyncWriteExt;
        let (mut client, server) = tokio::io::duplex(64);
        let mut reader = LineReader::new(tokio::io::BufReader::new(server), 1024);
        client.write_all(b"{\"a\"").await.unwrap();
        // The first half is read, then the future waits for more and is dropped.
        let waited =
            tokio::time::timeout(std::time::Duration::from_millis(20), reader.next_line()).await;
        assert!(waited.is_err(), "no complete line yet");
        client.write_all(b":1}\nnext\n").await.unwrap();
        assert_eq!(
            reader.next_line().await.unwrap(),
            Some(Line::Message(b"{\"a\":1}"))
        );
        assert_eq!(
            reader.next_line().await.unwrap(),
            Some(Line::Message(b"next"))
        );
        drop(client);
        assert_eq!(reader.next_line().await.unwrap(), None);
    }
}
