//! The client's Server-Sent Events parser.
//!
//! Oracle: how the stream is cut into chunks changes nothing: the events, the last event id
//! and the retry delay are the same whether the bytes come at once or in fuzzed pieces.

use crate::client::transport::http::sse::{Event, Parser};

const MAX: usize = 256;

fn run<'a>(chunks: impl Iterator<Item = &'a [u8]>) -> Option<(Vec<Event>, Parser)> {
    let mut p = Parser::new(MAX);
    let mut out = Vec::new();
    for c in chunks {
        p.feed(c, &mut out).ok()?;
        for e in &out {
            assert!(
                e.data.len() <= MAX,
                "an event over the limit was dispatched"
            );
        }
    }
    Some((out, p))
}

/// Input: `[n, cuts[n]..., stream...]`.
pub fn sse_client(data: &[u8]) {
    let [n, rest @ ..] = data else { return };
    let n = usize::from(*n % 16).min(rest.len());
    let (cuts, stream) = rest.split_at(n);
    let whole = run(std::iter::once(stream));
    let mut pieces = Vec::new();
    let mut at = 0;
    for c in cuts {
        let len = usize::from(*c).min(stream.len() - at);
        pieces.push(&stream[at..at + len]);
        at += len;
    }
    pieces.push(&stream[at..]);
    let split = run(pieces.into_iter());
    // Limits are checked per chunk, so only streams both runs accept are compared.
    if let (Some((a, pa)), Some((b, pb))) = (whole, split) {
        assert_eq!(a, b, "chunking changed the events");
        assert_eq!(pa.last_event_id, pb.last_event_id);
        assert_eq!(pa.retry, pb.retry);
    }
}
