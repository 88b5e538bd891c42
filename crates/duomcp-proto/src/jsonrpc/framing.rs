//! Newline-delimited framing (the stdio transport of both revisions) as a state machine fed
//! with bytes, with a size limit enforced while reading: an oversized line is skipped, never
//! buffered whole. `duomcp`'s `LineReader` drives it from an async reader.

/// A line as a reader hands it out.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// One complete line, without its terminator (a trailing `\r` is removed too).
    Message(&'a [u8]),
    /// A line longer than the limit; its bytes were discarded.
    TooLarge,
}

/// What [`LineFramer::feed`] found at the end of the bytes it took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// A line ended (by a newline, or by the end of input); [`LineFramer::line`] holds it.
    Line,
    /// A line over the limit ended; [`LineFramer::oversized`] tells its head and length.
    TooLarge,
    /// The input ended with no line pending.
    Eof,
}

/// How much of an oversized line [`LineFramer::oversized`] keeps: enough for the `jsonrpc`
/// and `id` members a sender writes first.
pub const HEAD: usize = 1024;

/// Splits a byte stream into newline-delimited lines of at most `max` bytes, reusing one
/// buffer. It reads nothing itself: the caller offers the bytes it has with
/// [`feed`](Self::feed), drops as many as it says it took, and offers the rest (or more)
/// again. Its state lives in the framer, so a caller may stop between two calls and lose
/// nothing.
///
/// ```
/// use duomcp_proto::jsonrpc::{Frame, LineFramer};
/// let mut framer = LineFramer::new(1024);
/// let mut input: &[u8] = b"{\"a\":1}\r\n{\"b\"";
/// let (used, frame) = framer.feed(input);
/// assert_eq!((used, frame), (9, Some(Frame::Line)));
/// assert_eq!(framer.line(), b"{\"a\":1}");
/// input = &input[used..];
/// assert_eq!(framer.feed(input), (4, None), "a partial line is kept");
/// assert_eq!(framer.feed(b":2}\n"), (4, Some(Frame::Line)));
/// assert_eq!(framer.line(), b"{\"b\":2}");
/// assert_eq!(framer.feed(b""), (0, Some(Frame::Eof)), "an empty slice is the end of input");
/// ```
#[derive(Debug)]
pub struct LineFramer {
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

impl LineFramer {
    /// A framer for lines of at most `max` bytes (longer ones are [`Frame::TooLarge`]).
    pub fn new(max: usize) -> Self {
        Self {
            buf: Vec::new(),
            max,
            discarding: false,
            returned: false,
            head: Vec::new(),
            skipped: 0,
            unterminated: false,
        }
    }

    /// Takes bytes from the start of `available`: returns how many it took and, when a line
    /// ended within them, what ended. An empty `available` means the end of input: the
    /// pending line, if any, ends there (see [`unterminated`](Self::unterminated)), else
    /// [`Frame::Eof`]. After a [`Frame::Line`], [`line`](Self::line) holds the line until the
    /// next call.
    #[inline]
    pub fn feed(&mut self, available: &[u8]) -> (usize, Option<Frame>) {
        if self.returned {
            self.buf.clear();
            self.discarding = false;
            self.returned = false;
        }
        if available.is_empty() {
            self.returned = true;
            self.unterminated = self.discarding || !self.buf.is_empty();
            let frame = if self.discarding {
                Frame::TooLarge
            } else if self.buf.is_empty() {
                Frame::Eof
            } else {
                self.end_line();
                Frame::Line
            };
            return (0, Some(frame));
        }
        match memchr::memchr(b'\n', available) {
            Some(pos) => {
                let fits = !self.discarding && self.buf.len() + pos <= self.max;
                if fits {
                    self.buf.extend_from_slice(&available[..pos]);
                    self.end_line();
                } else if self.discarding {
                    let take = HEAD.saturating_sub(self.head.len()).min(pos);
                    self.head.extend_from_slice(&available[..take]);
                    self.skipped += pos;
                } else {
                    let line_end = &available[..pos.min(HEAD)];
                    self.start_discarding(line_end);
                    self.skipped += pos - line_end.len();
                }
                self.returned = true;
                self.unterminated = false;
                let frame = if fits { Frame::Line } else { Frame::TooLarge };
                (pos + 1, Some(frame))
            }
            None => {
                let n = available.len();
                if self.discarding {
                    let take = HEAD.saturating_sub(self.head.len()).min(n);
                    self.head.extend_from_slice(&available[..take]);
                    self.skipped += n;
                } else if self.buf.len() + n > self.max {
                    let more = &available[..n.min(HEAD)];
                    self.start_discarding(more);
                    // Counted whole, though only its head was kept.
                    self.skipped += n - more.len();
                } else {
                    self.buf.extend_from_slice(available);
                }
                (n, None)
            }
        }
    }

    /// A line was completed in `buf`: drop its `\r`.
    #[inline]
    fn end_line(&mut self) {
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
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

    /// After [`Frame::Line`]: the line, without its newline and a trailing `\r`.
    #[inline]
    pub fn line(&self) -> &[u8] {
        &self.buf
    }

    /// After [`Frame::Line`]: whether the line is blank (only ASCII whitespace), which a
    /// reader of messages skips.
    #[inline]
    pub fn is_blank(&self) -> bool {
        self.buf.iter().all(u8::is_ascii_whitespace)
    }

    /// After [`Frame::TooLarge`]: the first bytes of that line (at most [`HEAD`]) and its
    /// length in bytes, so that a reader can tell whose answer it was and how big.
    pub fn oversized(&self) -> (&[u8], usize) {
        (&self.head, self.skipped)
    }

    /// Whether the last line ([`Frame::Line`] or [`Frame::TooLarge`]) was cut off by the end
    /// of input instead of ending with a newline.
    pub fn unterminated(&self) -> bool {
        self.unterminated
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Everything `input` gives when offered `chunk` bytes at a time: the non-blank lines
    /// (`None` for an oversized one), as a reader of messages sees them.
    fn lines(input: &[u8], max: usize, chunk: usize) -> Vec<Option<Vec<u8>>> {
        let mut framer = LineFramer::new(max);
        let mut out = Vec::new();
        let mut rest = input;
        loop {
            let offer = &rest[..rest.len().min(chunk)];
            let (used, frame) = framer.feed(offer);
            rest = &rest[used..];
            match frame {
                None => {}
                Some(Frame::Eof) => return out,
                Some(Frame::TooLarge) => out.push(None),
                Some(Frame::Line) if framer.is_blank() => {}
                Some(Frame::Line) => out.push(Some(framer.line().to_vec())),
            }
        }
    }

    #[test]
    fn oversized_lines_are_skipped_and_reading_goes_on() {
        let mut input = vec![b'x'; 100];
        input.extend_from_slice(b"\nok\r\n\n  \n");
        input.extend_from_slice(&[b'y'; 50]);
        for chunk in [1, 8, 1000] {
            assert_eq!(
                lines(&input, 10, chunk),
                vec![None, Some(b"ok".to_vec()), None],
                "chunks of {chunk}"
            );
        }
    }

    #[test]
    fn the_end_of_input_ends_a_line_and_says_so() {
        let mut framer = LineFramer::new(100);
        assert_eq!(framer.feed(b"one\ntwo"), (4, Some(Frame::Line)));
        assert!(!framer.unterminated());
        assert_eq!(framer.feed(b"two"), (3, None));
        assert_eq!(framer.feed(b""), (0, Some(Frame::Line)));
        assert_eq!(framer.line(), b"two");
        assert!(framer.unterminated());
        assert_eq!(framer.feed(b""), (0, Some(Frame::Eof)));
    }

    #[test]
    fn an_oversized_line_leaves_its_head_and_length() {
        let mut input = br#"{"jsonrpc":"2.0","id":7,"result":""#.to_vec();
        input.extend_from_slice(&[b'z'; 5000]);
        input.extend_from_slice(b"\"}\nok\n");
        let line_len = input.len() - 4;
        for chunk in [8, 64 * 1024] {
            let mut framer = LineFramer::new(100);
            let mut rest = &input[..];
            let frame = loop {
                let (used, frame) = framer.feed(&rest[..rest.len().min(chunk)]);
                rest = &rest[used..];
                if let Some(frame) = frame {
                    break frame;
                }
            };
            assert_eq!(frame, Frame::TooLarge);
            let (head, len) = framer.oversized();
            assert_eq!(len, line_len, "chunks of {chunk}");
            assert_eq!(head.len(), HEAD);
            assert!(head.starts_with(br#"{"jsonrpc":"2.0","id":7,"#));
            assert_eq!(framer.feed(rest), (3, Some(Frame::Line)));
            assert_eq!(framer.line(), b"ok");
        }
    }

    /// The lines of `input` by a plain split on `\n`: what [`lines`] must find.
    fn split(input: &[u8], max: usize) -> Vec<Option<Vec<u8>>> {
        let mut raw: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
        if raw.last().is_some_and(|l| l.is_empty()) {
            raw.pop();
        }
        raw.into_iter()
            .filter_map(|l| {
                if l.len() > max {
                    return Some(None);
                }
                let l = l.strip_suffix(b"\r").unwrap_or(l);
                (!l.iter().all(u8::is_ascii_whitespace)).then(|| Some(l.to_vec()))
            })
            .collect()
    }

    proptest! {
        /// However the bytes are cut into chunks, the framer finds the lines a plain split
        /// on `\n` finds (a trailing `\r` dropped, blank lines skipped, long ones refused).
        #[test]
        fn the_lines_are_those_of_a_split_however_the_input_is_cut(
            input in proptest::collection::vec(
                prop_oneof![Just(b'\n'), Just(b'\r'), Just(b' '), b'a'..=b'c'], 0..200),
            max in 0usize..20,
            chunk in 1usize..40,
        ) {
            prop_assert_eq!(lines(&input, max, chunk), split(&input, max));
        }

        /// Any bytes at all, in any chunks: no panic, and every byte is taken.
        #[test]
        fn any_bytes_are_framed_without_panic(
            input in proptest::collection::vec(any::<u8>(), 0..512),
            max in 0usize..64,
            chunk in 1usize..64,
        ) {
            prop_assert_eq!(lines(&input, max, chunk).len(), split(&input, max).len());
        }
    }
}
