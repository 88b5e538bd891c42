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
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    /// Wraps `inner`; lines longer than `max` bytes are reported as [`Line::TooLarge`].
    pub fn new(inner: R, max: usize) -> Self {
        Self {
            inner,
            buf: Vec::new(),
            max,
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
        self.buf.clear();
        let mut discarding = false;
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                return Ok(if discarding {
                    Raw::TooLarge
                } else if self.buf.is_empty() {
                    Raw::Eof
                } else {
                    Raw::Line
                });
            }
            match memchr::memchr(b'\n', available) {
                Some(pos) => {
                    let fits = !discarding && self.buf.len() + pos <= self.max;
                    if fits {
                        self.buf.extend_from_slice(&available[..pos]);
                    }
                    self.inner.consume(pos + 1);
                    return Ok(if fits { Raw::Line } else { Raw::TooLarge });
                }
                None => {
                    let n = available.len();
                    if !discarding && self.buf.len() + n > self.max {
                        discarding = true;
                        self.buf.clear();
                    }
                    if !discarding {
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
}
