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
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    /// Wraps `inner`; lines longer than `max` bytes are reported as [`Line::TooLarge`].
    pub fn new(inner: R, max: usize) -> Self {
        Self {
            inner,
            buf: Vec::new(),
            max,
            discarding: false,
            returned: false,
        }
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
                    }
                    self.inner.consume(pos + 1);
                    self.returned = true;
                    return Ok(if fits { Raw::Line } else { Raw::TooLarge });
                }
                None => {
                    let n = available.len();
                    if !self.discarding && self.buf.len() + n > self.max {
                        self.discarding = true;
                        self.buf.clear();
                    }
                    if !self.discarding {
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
        assert_eq!(reader.next_line().await.unwrap(), Some(Line::TooLarge));
        assert_eq!(reader.next_line().await.unwrap(), None);
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
