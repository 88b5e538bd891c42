//! Newline-delimited framing (the stdio transport of both revisions), with a size limit that is
//! enforced while reading: an oversized line is skipped, never buffered whole.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// What [`LineReader::next_line`] produced.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// One complete line, without its terminator (a trailing `\r` is removed too).
    Message(&'a [u8]),
    /// A line longer than the limit; its bytes were discarded.
    TooLarge,
}

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
    buf: Vec<u8>,
    max: usize,
    /// The current line is over the limit: its bytes are being skipped.
    discarding: bool,
    /// `buf` holds a line already returned: clear it before reading on.
    returned: bool,
    /// The first [`HEAD`] bytes of the current (or last) oversized line.
    head: Vec<u8>,
    /// The bytes of the current (or last) oversized line seen so far.
    skipped: usize,
    /// The last line returned ended at the end of input, with no newline.
    unterminated: bool,
}

/// How much of an oversized line [`LineReader::oversized`] keeps: enough for the `jsonrpc`
/// and `id` members a sender writes first.
pub const HEAD: usize = 1024;

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    /// Wraps `inner`; lines longer than `max` bytes are reported as [`Line::TooLarge`].
    pub fn new(inner: R, max: usize) -> Self {
        Self {
            inner,
            buf: Vec::new(),
            max,
            discarding: false,
            returned: false,
            head: Vec::new(),
            skipped: 0,
            unterminated: false,
        }
    }

    /// After [`Line::TooLarge`]: the first bytes of that line (at most 1 KiB) and its
    /// length in bytes, so that a reader can tell whose answer it was and how big.
    pub fn oversized(&self) -> (&[u8], usize) {
        (&self.head, self.skipped)
    }

    /// Whether the last line returned ([`Line::Message`] or [`Line::TooLarge`]) was cut off
    /// by the end of input instead of ending with a newline.
    pub fn unterminated(&self) -> bool {
        self.unterminated
    }

    /// The line in `buf` plus `more` is over the limit: keep its head, start skipping.
    fn start_discarding(&mut self, more: &[u8]) {
        self.discarding = true;
        self.head.clear();
        let from_buf = self.buf.len().min(HEAD);
        self.head.extend_from_slice(&self.buf[..from_buf]);
        let from_more = more.len().min(HEAD - from_buf);
        self.head.extend_from_slice(&more[..from_more]);
        self.skipped = self.buf.len() + more.len();
        self.buf.clear();
    }

    /// The next non-blank line, or `None` at end of input.
    pub async fn next_line(&mut self) -> std::io::Result<Option<Line<'_>>> {
        loop {
            match self.read_raw().await? {
                Raw::Eof => return Ok(None),
                Raw::TooLarge => return Ok(Some(Line::TooLarge)),
                Raw::Line => {
                    if self.buf.last() == Some(&b'\r') {
                        self.buf.pop();
                    }
                    if self.buf.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    return Ok(Some(Line::Message(&self.buf)));
                }
            }
        }
    }

    async fn read_raw(&mut self) -> std::io::Result<Raw> {
        // State lives in `self` across the awaits (not in locals), so dropping this future
        // between two `fill_buf`s loses nothing.
        if self.returned {
            self.buf.clear();
            self.discarding = false;
            self.returned = false;
        }
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                self.returned = true;
                self.unterminated = self.discarding || !self.buf.is_empty();
                return Ok(if self.discarding {
                    Raw::TooLarge
                } else if self.buf.is_empty() {
                    Raw::Eof
                } else {
                    Raw::Line
                });
            }
            match memchr::memchr(b'\n', available) {
                Some(pos) => {
                    let fits = !self.discarding && self.buf.len() + pos <= self.max;
                    if fits {
                        self.buf.extend_from_slice(&available[..pos]);
                    } else if self.discarding {
                        let take = HEAD.saturating_sub(self.head.len()).min(pos);
                        self.head.extend_from_slice(&available[..take]);
                        self.skipped += pos;
                    } else {
                        let line_end = available[..pos.min(HEAD)].to_vec();
                        self.start_discarding(&line_end);
                        self.skipped += pos - line_end.len();
                    }
                    self.inner.consume(pos + 1);
                    self.returned = true;
                    self.unterminated = false;
                    return Ok(if fits { Raw::Line } else { Raw::TooLarge });
                }
                None => {
                    let n = available.len();
                    if self.discarding {
                        let take = HEAD.saturating_sub(self.head.len()).min(n);
                        self.head.extend_from_slice(&available[..take]);
                        self.skipped += n;
                    } else if self.buf.len() + n > self.max {
                        let more = available[..n.min(HEAD)].to_vec();
                        self.start_discarding(&more);
                        // Counted whole, though only its head was kept.
                        self.skipped += n - more.len();
                    } else {
                        self.buf.extend_from_slice(available);
                    }
                    self.inner.consume(n);
                }
            }
        }
    }
}

enum Raw {
    Line,
    TooLarge,
    Eof,
}

#[cfg(test)]
mod tests {
    use super::*;

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
