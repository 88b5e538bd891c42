//! An incremental Server-Sent Events parser (the WHATWG event-stream interpretation), fed with
//! the chunks of a response body as they arrive.
//!
//! Written by hand, after looking at the maintained crates: `sse-stream` 0.3 and
//! `eventsource-stream` 0.2 both parse a byte stream into events, but neither bounds what it
//! buffers: a server that sends one endless line, or an event that never ends, makes them grow
//! without limit (`sse-stream` keeps the pending line and the data in `Vec`s with no cap,
//! `eventsource-stream` its whole unparsed input in a `String`). A client must not be made to
//! hold unbounded memory by a server, so lines and events larger than `max` are refused here.
//! Both also own the byte stream, while this parser is fed chunk by chunk and outlives a
//! connection (the last event id and the `retry:` time carry over to the reconnection that
//! sends `Last-Event-ID`), which the transport's resumption needs. Limiting the bytes before
//! such a crate would mean finding event boundaries here anyway, i.e. a second parser.

use std::time::Duration;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    /// The `event:` type; empty means `message`.
    pub kind: String,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// Parser state. It survives reconnections: the last event id and the reconnection time belong
/// to the event source, not to one connection.
#[derive(Debug)]
pub(crate) struct Parser {
    /// Bytes of an unfinished line.
    line: Vec<u8>,
    /// The previous chunk ended with `\r`: a `\n` starting the next one belongs to it.
    after_cr: bool,
    data: String,
    kind: String,
    /// Whether a `data:` field was seen for the event being built.
    has_data: bool,
    id_buffer: Option<String>,
    /// The last event id, as set by dispatch (what `Last-Event-ID` carries).
    pub last_event_id: Option<String>,
    /// The reconnection time from the last `retry:` field.
    pub retry: Option<Duration>,
    max: usize,
}

impl Parser {
    /// A parser refusing lines and events larger than `max` bytes.
    pub(crate) fn new(max: usize) -> Self {
        Parser {
            line: Vec::new(),
            after_cr: false,
            data: String::new(),
            kind: String::new(),
            has_data: false,
            id_buffer: None,
            last_event_id: None,
            retry: None,
            max,
        }
    }

    /// Forgets a partial line and event (a new connection starts clean; ids and retry stay).
    pub(crate) fn reset_connection(&mut self) {
        self.line.clear();
        self.after_cr = false;
        self.data.clear();
        self.kind.clear();
        self.has_data = false;
        self.id_buffer = self.last_event_id.clone();
    }

    /// Feeds a chunk; dispatched events are appended to `out`. Errors when a line or an event
    /// grows past the limit.
    pub(crate) fn feed(&mut self, chunk: &[u8], out: &mut Vec<Event>) -> Result<(), String> {
        let mut rest = chunk;
        // An empty chunk says nothing about the byte after a `\r`: the flag waits for a byte.
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            if let Some(stripped) = rest.strip_prefix(b"\n") {
                rest = stripped;
            }
        }
        while let Some(pos) = rest.iter().position(|b| *b == b'\n' || *b == b'\r') {
            self.line.extend_from_slice(&rest[..pos]);
            let line = std::mem::take(&mut self.line);
            self.field(&line, out)?;
            let cr = rest[pos] == b'\r';
            rest = &rest[pos + 1..];
            if cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
        }
        self.line.extend_from_slice(rest);
        if self.line.len() > self.max {
            return Err(format!("an SSE line is longer than {} bytes", self.max));
        }
        Ok(())
    }

    fn field(&mut self, line: &[u8], out: &mut Vec<Event>) -> Result<(), String> {
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let text = String::from_utf8_lossy(line);
        let (name, value) = match text.find(':') {
            Some(i) => {
                let v = &text[i + 1..];
                (&text[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&text[..], ""),
        };
        match name {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
                if self.data.len() > self.max {
                    return Err(format!("an SSE event is larger than {} bytes", self.max));
                }
            }
            "event" => self.kind = value.to_owned(),
            "id" if !value.contains('\0') => self.id_buffer = Some(value.to_owned()),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                if let Ok(ms) = value.parse::<u64>() {
                    self.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<Event>) {
        // The last event id is set even by an event without data (a priming event).
        self.last_event_id = self.id_buffer.clone().filter(|id| !id.is_empty());
        let has_data = std::mem::take(&mut self.has_data);
        let data = std::mem::take(&mut self.data);
        let kind = std::mem::take(&mut self.kind);
        if has_data && !data.is_empty() {
            out.push(Event { kind, data });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(chunks: &[&[u8]]) -> (Vec<Event>, Parser) {
        let mut p = Parser::new(1 << 20);
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, &mut out).unwrap();
        }
        (out, p)
    }

    #[test]
    fn parses_events_ids_and_retry() {
        let (events, p) = parse(&[
            b"id: 1-0\nretry: 500\ndata: \n\n",
            b": keep-alive\n\n",
            b"event: message\nid: 1-1\ndata: {\"a\":1}\n\n",
        ]);
        assert_eq!(
            events,
            [Event {
                kind: "message".into(),
                data: "{\"a\":1}".into()
            }]
        );
        assert_eq!(p.last_event_id.as_deref(), Some("1-1"));
        assert_eq!(p.retry, Some(Duration::from_millis(500)));
    }

    #[test]
    fn priming_events_set_the_last_event_id() {
        let (events, p) = parse(&[b"id: event-1\nretry: 500\ndata: \n\n"]);
        assert!(events.is_empty());
        assert_eq!(p.last_event_id.as_deref(), Some("event-1"));
    }

    #[test]
    fn handles_split_chunks_crlf_and_multiline_data() {
        let (events, _) = parse(&[b"da", b"ta: a\r", b"\ndata:b\r\rdata: c\r\n\r\n"]);
        assert_eq!(
            events,
            [
                Event {
                    kind: String::new(),
                    data: "a\nb".into()
                },
                Event {
                    kind: String::new(),
                    data: "c".into()
                }
            ]
        );
    }

    #[test]
    fn empty_chunks_keep_a_pending_cr() {
        // The fuzz finding sse_client/crash-0d3b…: a `\r\n` cut as `\r`, ``, `\n` was read as
        // two line ends (an extra blank line dispatching `id:`), unlike the whole stream.
        let stream: &[u8] = b"id: 7\r\ndata: x\n";
        let (whole_events, whole) = parse(&[stream]);
        let (split_events, split) = parse(&[&stream[..6], b"", &stream[6..7], b"", &stream[7..]]);
        assert_eq!(whole.last_event_id, None);
        assert_eq!(split.last_event_id, None);
        assert!(whole_events.is_empty() && split_events.is_empty());
        let (events, p) = parse(&[b"id: 7\r", b"", b"\ndata: x\r", b"", b"\n\n"]);
        assert_eq!(p.last_event_id.as_deref(), Some("7"));
        assert_eq!(
            events,
            [Event {
                kind: String::new(),
                data: "x".into()
            }]
        );
    }

    #[test]
    fn refuses_oversized_lines() {
        let mut p = Parser::new(8);
        let mut out = Vec::new();
        assert!(p.feed(b"data: 0123456789", &mut out).is_err());
    }
}
