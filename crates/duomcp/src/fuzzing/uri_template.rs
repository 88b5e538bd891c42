//! URI template matching (`resources/read` against resource templates).
//!
//! Two modes. Raw: any template and URI, parsed and matched (no panic, no runaway
//! backtracking). Expansion: a template built from fuzzed pieces, expanded as RFC 6570 says
//! with fuzzed values, must match its own expansion and give back exactly those values (values
//! are non-empty and alphanumeric and every literal after a variable starts with a
//! non-alphanumeric character, so the match is unique).

use crate::server::UriTemplate;
use arbitrary::{Arbitrary, Unstructured};

#[derive(Arbitrary, Debug)]
enum Op {
    Simple,
    Reserved,
    Fragment,
    Path,
    Label,
}

#[derive(Arbitrary, Debug)]
struct Piece {
    op: Op,
    /// A second variable in the same expression (simple, reserved and fragment only).
    pair: bool,
    /// The literal after the expression.
    literal: String,
}

#[derive(Arbitrary, Debug)]
struct Expansion {
    head: String,
    pieces: Vec<Piece>,
    /// A trailing `{?q1,q2}`: which of the two have a value.
    query: Option<(bool, bool)>,
    seed: u64,
}

#[derive(Arbitrary, Debug)]
enum Input {
    Raw { template: String, uri: String },
    Expansion(Expansion),
}

fn literal(raw: &str, after_var: bool) -> String {
    let mut s: String = raw
        .chars()
        .filter(|c| !matches!(c, '{' | '}' | '?' | '#' | '%'))
        .take(8)
        .collect();
    if after_var && !s.starts_with(|c: char| !c.is_alphanumeric()) {
        s.insert(0, '-');
    }
    s
}

/// A non-empty alphanumeric value, from `seed`.
fn value(seed: &mut u64) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789ABCZ";
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let len = 1 + (*seed >> 60) as usize % 6;
    (0..len)
        .map(|i| ALPHABET[((*seed >> (i * 6)) % ALPHABET.len() as u64) as usize] as char)
        .collect()
}

fn expansion(e: Expansion) {
    let mut template = literal(&e.head, false);
    let mut uri = template.clone();
    let mut expected = serde_json::Map::new();
    let mut seed = e.seed;
    for (i, p) in e.pieces.iter().take(6).enumerate() {
        let pair = p.pair && matches!(p.op, Op::Simple | Op::Reserved | Op::Fragment);
        let names: Vec<String> = if pair {
            vec![format!("v{i}"), format!("w{i}")]
        } else {
            vec![format!("v{i}")]
        };
        let values: Vec<String> = names.iter().map(|_| value(&mut seed)).collect();
        let (op, prefix) = match p.op {
            Op::Simple => ("", ""),
            Op::Reserved => ("+", ""),
            Op::Fragment => ("#", "#"),
            Op::Path => ("/", "/"),
            Op::Label => (".", "."),
        };
        template.push_str(&format!("{{{op}{}}}", names.join(",")));
        uri.push_str(prefix);
        uri.push_str(&values.join(","));
        for (n, v) in names.iter().zip(&values) {
            expected.insert(n.clone(), v.clone().into());
        }
        let lit = literal(&p.literal, true);
        template.push_str(&lit);
        uri.push_str(&lit);
    }
    if let Some((a, b)) = e.query {
        template.push_str("{?q1,q2}");
        let mut pairs = Vec::new();
        for (name, on) in [("q1", a), ("q2", b)] {
            if on {
                let v = value(&mut seed);
                pairs.push(format!("{name}={v}"));
                expected.insert(name.into(), v.into());
            }
        }
        if !pairs.is_empty() {
            uri.push('?');
            uri.push_str(&pairs.join("&"));
        }
    }
    let t = UriTemplate::parse(&template)
        .unwrap_or_else(|| panic!("a well-formed template is refused: {template}"));
    let got = t
        .matches(&uri)
        .unwrap_or_else(|| panic!("{template} does not match its expansion {uri}"));
    assert_eq!(got, expected, "{template} on {uri}");
}

/// Input: [`arbitrary`] bytes (a raw template and URI, or pieces of a template).
pub fn uri_template(data: &[u8]) {
    match Input::arbitrary_take_rest(Unstructured::new(data)) {
        Ok(Input::Raw { template, uri }) => {
            if template.len() > 64 || uri.len() > 256 {
                return;
            }
            if let Some(t) = UriTemplate::parse(&template) {
                let _ = t.matches(&uri);
            }
        }
        Ok(Input::Expansion(e)) => expansion(e),
        Err(_) => {}
    }
}
