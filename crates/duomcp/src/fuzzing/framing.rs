//! Stdio framing: [`LineReader`] against a model of newline-delimited framing, fed in chunks
//! of fuzzed sizes by a reader that is sometimes not ready, with the read dropped and
//! restarted each time (the reader's cancel safety).

use super::runtime::poll_once;
use crate::jsonrpc::{Line, LineReader};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncBufRead, AsyncRead, ReadBuf};

/// What the reader must yield: a line per `\n` (and a last one without it), a trailing `\r`
/// removed, blank lines skipped, a line longer than `max` (counting its `\r`) as `TooLarge`.
fn model(input: &[u8], max: usize) -> Vec<Option<Vec<u8>>> {
    let mut out = Vec::new();
    let mut segments: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
    if segments.last().is_some_and(|s| s.is_empty()) {
        segments.pop();
    }
    for seg in segments {
        if seg.len() > max {
            out.push(None);
            continue;
        }
        let line = seg.strip_suffix(b"\r").unwrap_or(seg);
        if !line.iter().all(u8::is_ascii_whitespace) {
            out.push(Some(line.to_vec()));
        }
    }
    out
}

/// Serves `data` in chunks of the given sizes; every other `fill_buf` is first `Pending`.
struct Chunked<'a> {
    data: &'a [u8],
    pos: usize,
    sizes: &'a [u8],
    turn: usize,
    /// The chunk now offered: `data[pos..end]`.
    end: usize,
    stall: bool,
}

impl AsyncRead for Chunked<'_> {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        _buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        unreachable!("LineReader reads through fill_buf")
    }
}

impl AsyncBufRead for Chunked<'_> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.end == this.pos {
            this.stall = !this.stall;
            if this.stall && this.pos < this.data.len() {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            let size = if this.sizes.is_empty() {
                7
            } else {
                usize::from(this.sizes[this.turn % this.sizes.len()] % 32) + 1
            };
            this.turn += 1;
            this.end = (this.pos + size).min(this.data.len());
        }
        Poll::Ready(Ok(&this.data[this.pos..this.end]))
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        this.pos += amt;
        assert!(this.pos <= this.end, "consumed more than was offered");
    }
}

/// Input: `[max, n, sizes[n]..., stream...]`.
pub fn stdio_framing(data: &[u8]) {
    let [max, n, rest @ ..] = data else { return };
    let max = usize::from(*max);
    let n = usize::from(*n % 16).min(rest.len());
    let (sizes, input) = rest.split_at(n);
    let reader = Chunked {
        data: input,
        pos: 0,
        sizes,
        turn: 0,
        end: 0,
        stall: false,
    };
    let mut lines = LineReader::new(reader, max);
    let mut got = Vec::new();
    let mut polls = 0usize;
    loop {
        polls += 1;
        assert!(polls < 4 * input.len() + 16, "the reader does not progress");
        // A pending read is dropped here and started again: nothing may be lost.
        let Some(next) = poll_once(lines.next_line()) else {
            continue;
        };
        match next.expect("in-memory reads do not fail") {
            None => break,
            Some(Line::TooLarge) => got.push(None),
            Some(Line::Message(m)) => got.push(Some(m.to_vec())),
        }
    }
    assert_eq!(
        got,
        model(input, max),
        "LineReader disagrees with the framing model"
    );
}
