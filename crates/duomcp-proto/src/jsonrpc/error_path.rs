//! Where in a JSON text a `serde_json` error was raised, as a path (`a.b[0].c`, `.` for the
//! whole text): the precise message of a failed params or arguments parse.
//!
//! serde_json records the byte position at which an error surfaced (`line`, `column`); the
//! path is read from the text at that position by a small scanner that is not generic, so a
//! type's `Deserialize` impl is instantiated only for serde_json's own reader (which the
//! successful parse uses anyway), not once more for a path-tracking wrapper around it. Only the
//! failure path pays for the scan.
//!
//! At the position of an error: a value refused by its type has just been read (a scalar, a
//! key) or is the next one to be read (an object or array where something else was expected,
//! not consumed); a struct missing a field, or holding an unknown or repeated one, has just
//! read its `}` or the key. So the path is that of the value starting right at the position,
//! else of the innermost value holding the last byte read.

use serde_json::Error;

/// Deeper texts are not scanned (`.`): serde_json refuses nesting beyond 128 anyway.
const MAX_DEPTH: usize = 256;

/// The message of `error` without serde_json's ` at line L column C`.
pub fn message(error: &Error) -> String {
    let text = error.to_string();
    if error.line() == 0 {
        return text;
    }
    let suffix = format!(" at line {} column {}", error.line(), error.column());
    match text.strip_suffix(&suffix) {
        Some(bare) => bare.to_owned(),
        None => text,
    }
}

/// The path (`a.b[0].c`; `.` for the whole text or when unknown) of the value at fault in
/// `text` for `error`, an error of parsing `text` with serde_json.
pub fn path(text: &str, error: &Error) -> String {
    let Some(offset) = byte_offset(text, error.line(), error.column()) else {
        return ".".to_owned();
    };
    let mut scan = Scan {
        text: text.as_bytes(),
        offset,
        path: Vec::new(),
        starting: None,
        holding: None,
    };
    // A text that does not scan (a syntax error) keeps what was found before the fault.
    let start = scan.skip_ws(0);
    let _ = scan.value(start, 0);
    let found = scan.starting.or(scan.holding).unwrap_or_default();
    render(&found)
}

/// serde_json's position (1-based line, bytes since the line's start) as a byte offset.
fn byte_offset(text: &str, line: usize, column: usize) -> Option<usize> {
    if line == 0 {
        return None;
    }
    let mut start = 0;
    for _ in 1..line {
        start += text.get(start..)?.find('\n')? + 1;
    }
    let offset = start + column;
    (offset <= text.len()).then_some(offset)
}

#[derive(Clone)]
enum Segment {
    Key(String),
    Index(usize),
}

fn render(path: &[Segment]) -> String {
    if path.is_empty() {
        return ".".to_owned();
    }
    let mut out = String::new();
    for (i, segment) in path.iter().enumerate() {
        match segment {
            Segment::Key(k) => {
                if i > 0 {
                    out.push('.');
                }
                out.push_str(k);
            }
            Segment::Index(n) => {
                out.push('[');
                out.push_str(&n.to_string());
                out.push(']');
            }
        }
    }
    out
}

struct Scan<'a> {
    text: &'a [u8],
    /// The error's byte offset: the first byte not read when it was raised.
    offset: usize,
    path: Vec<Segment>,
    /// The path of the value starting at `offset`.
    starting: Option<Vec<Segment>>,
    /// The path of the innermost value holding byte `offset - 1`.
    holding: Option<Vec<Segment>>,
}

/// Scanning stops at the first byte that is not JSON, or once the answer is known.
struct Stop;

/// After a member of an object or array: where the next member starts, or where the
/// container ended.
enum Next {
    More(usize),
    Closed(usize),
}

impl Scan<'_> {
    fn skip_ws(&self, mut i: usize) -> usize {
        while matches!(self.text.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            i += 1;
        }
        i
    }

    fn done(&self) -> bool {
        self.starting.is_some() || self.holding.is_some()
    }

    /// Scans the value starting at `start`; returns where it ends (exclusive).
    fn value(&mut self, start: usize, depth: usize) -> Result<usize, Stop> {
        if start == self.offset {
            self.starting = Some(self.path.clone());
            return Err(Stop);
        }
        if start >= self.offset || depth > MAX_DEPTH {
            // Past the fault (a value after it cannot be at fault) or too deep to follow.
            return Err(Stop);
        }
        let end = match self.text.get(start) {
            Some(b'{') => self.object(start, depth)?,
            Some(b'[') => self.array(start, depth)?,
            Some(b'"') => self.string(start)?,
            Some(_) => {
                let mut i = start;
                while matches!(
                    self.text.get(i),
                    Some(b'-' | b'+' | b'.' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z')
                ) {
                    i += 1;
                }
                if i == start {
                    return Err(Stop);
                }
                i
            }
            None => return Err(Stop),
        };
        // Children are scanned first, so the first value to end past the last byte read is
        // the innermost one holding it.
        if !self.done() && start < self.offset && self.offset <= end {
            self.holding = Some(self.path.clone());
            return Err(Stop);
        }
        Ok(end)
    }

    fn string(&self, start: usize) -> Result<usize, Stop> {
        let mut i = start + 1;
        loop {
            match self.text.get(i) {
                Some(b'"') => return Ok(i + 1),
                Some(b'\\') => i += 2,
                Some(_) => i += 1,
                None => return Err(Stop),
            }
        }
    }

    fn object(&mut self, start: usize, depth: usize) -> Result<usize, Stop> {
        let mut i = self.skip_ws(start + 1);
        if self.text.get(i) == Some(&b'}') {
            return Ok(i + 1);
        }
        loop {
            let key_end = self.string(i)?;
            if key_end >= self.offset {
                // The fault is the key (an unknown or repeated field): the object's.
                self.holding = Some(self.path.clone());
                return Err(Stop);
            }
            let key = self
                .text
                .get(i..key_end)
                .and_then(|raw| std::str::from_utf8(raw).ok())
                .and_then(|raw| serde_json::from_str::<String>(raw).ok())
                .ok_or(Stop)?;
            i = self.skip_ws(key_end);
            if self.text.get(i) != Some(&b':') {
                return Err(Stop);
            }
            match self.member(self.skip_ws(i + 1), depth, Segment::Key(key), b'}')? {
                Next::More(next) => i = next,
                Next::Closed(end) => return Ok(end),
            }
        }
    }

    fn array(&mut self, start: usize, depth: usize) -> Result<usize, Stop> {
        let mut i = self.skip_ws(start + 1);
        if self.text.get(i) == Some(&b']') {
            return Ok(i + 1);
        }
        let mut index = 0;
        loop {
            match self.member(i, depth, Segment::Index(index), b']')? {
                Next::More(next) => i = next,
                Next::Closed(end) => return Ok(end),
            }
            index += 1;
        }
    }

    /// One member of an object or array, its value at `start` and named by `segment` in the
    /// path while it is scanned, then the `,` that says another follows or the `close` that
    /// ends the container.
    fn member(
        &mut self,
        start: usize,
        depth: usize,
        segment: Segment,
        close: u8,
    ) -> Result<Next, Stop> {
        self.path.push(segment);
        let end = self.value(start, depth + 1);
        self.path.pop();
        let i = self.skip_ws(end?);
        match self.text.get(i) {
            Some(b',') => Ok(Next::More(self.skip_ws(i + 1))),
            Some(&c) if c == close => Ok(Next::Closed(i + 1)),
            _ => Err(Stop),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[allow(dead_code)]
    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        n: u32,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        name: String,
        #[serde(default)]
        items: Vec<Inner>,
        #[serde(default)]
        inner: Option<Inner>,
        #[serde(default)]
        tags: Vec<String>,
    }

    fn fault(text: &str) -> (String, String) {
        let e = serde_json::from_str::<Outer>(text).expect_err("a fault");
        (path(text, &e), message(&e))
    }

    #[test]
    fn a_scalar_of_the_wrong_type_is_named() {
        let (p, m) = fault(r#"{"name": 5}"#);
        assert_eq!(p, "name");
        assert_eq!(m, "invalid type: integer `5`, expected a string");
        assert_eq!(fault(r#"{"name":"a","tags":["x",true]}"#).0, "tags[1]");
        assert_eq!(
            fault(r#"{"name":"a","items":[{"n":1},{"n":"2"}]}"#).0,
            "items[1].n"
        );
        assert_eq!(
            fault("{\n  \"name\": \"a\",\n  \"inner\": {\"n\": -1}\n}").0,
            "inner.n"
        );
    }

    #[test]
    fn an_object_or_array_where_a_scalar_belongs_is_named() {
        assert_eq!(fault(r#"{"name": {"a": 1}}"#).0, "name");
        assert_eq!(fault(r#"{"name": [1]}"#).0, "name");
        // serde_json reads a struct from an array by position: the first element is `n`.
        assert_eq!(fault(r#"{"name":"a","inner":[{"n":1}]}"#).0, "inner[0]");
    }

    #[test]
    fn a_missing_unknown_or_repeated_field_names_its_object() {
        let (p, m) = fault(r#"{"tags": []}"#);
        assert_eq!((p.as_str(), m.as_str()), (".", "missing field `name`"));
        assert_eq!(fault(r#"{"name":"a","inner":{}}"#).0, "inner");
        assert_eq!(fault(r#"{"name":"a","inner":{"n":1,"m":2}}"#).0, "inner");
        assert_eq!(fault(r#"{"name":"a","name":"b"}"#).0, ".");
        assert_eq!(fault(r#"{"name":"a","items":[{}]}"#).0, "items[0]");
    }

    #[test]
    fn escaped_keys_are_read_and_syntax_errors_do_not_fail() {
        assert_eq!(fault(r#"{"n\u0061me": 1}"#).0, "name");
        assert_eq!(fault(r#"{"name": "a", "tags": [1"#).0, "tags[0]");
        assert_eq!(fault(r#"{"name" 1}"#).0, ".");
        assert_eq!(fault("").0, ".");
    }
}
