//! Matching URIs against RFC 6570 URI templates (the reverse of expansion).
//!
//! Written by hand: the crates on crates.io for RFC 6570 expand templates but do not match
//! URIs against them, which is what `resources/read` needs. Supported, with one or several
//! names each: simple `{x,y}`, reserved `{+x}`, fragment `{#x}`, path segment `{/x}`, label
//! `{.x}`, path parameter `{;x}` and query `{?x,y}` / `{&x}` expressions.

use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Literal(String),
    Var {
        op: Option<char>,
        names: Vec<String>,
    },
}

/// A parsed URI template.
///
/// ```
/// use duomcp::server::UriTemplate;
/// let t = UriTemplate::parse("test://template/{id}/data").unwrap();
/// let vars = t.matches("test://template/123/data").unwrap();
/// assert_eq!(vars["id"], "123");
/// assert!(t.matches("test://template/1/2/data").is_none());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct UriTemplate {
    parts: Vec<Part>,
}

impl UriTemplate {
    /// Parses a template; `None` when braces are unbalanced or an expression is empty.
    pub fn parse(template: &str) -> Option<Self> {
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            match rest.find('{') {
                Some(0) => {
                    let end = rest.find('}')?;
                    let expr = &rest[1..end];
                    let (op, names) = match expr.chars().next()? {
                        c @ ('+' | '#' | '/' | '?' | '&' | '.' | ';') => (Some(c), &expr[1..]),
                        _ => (None, expr),
                    };
                    let names: Vec<String> = names
                        .split(',')
                        .map(|n| n.trim_end_matches('*').to_owned())
                        .filter(|n| !n.is_empty())
                        .collect();
                    if names.is_empty() {
                        return None;
                    }
                    parts.push(Part::Var { op, names });
                    rest = &rest[end + 1..];
                }
                Some(i) => {
                    parts.push(Part::Literal(rest[..i].to_owned()));
                    rest = &rest[i..];
                }
                None => {
                    if rest.contains('}') {
                        return None;
                    }
                    parts.push(Part::Literal(rest.to_owned()));
                    rest = "";
                }
            }
        }
        Some(UriTemplate { parts })
    }

    /// The variables of `uri` if it matches the template.
    pub fn matches(&self, uri: &str) -> Option<Map<String, Value>> {
        let mut vars = Map::new();
        if match_parts(&self.parts, uri, &mut vars) {
            Some(vars)
        } else {
            None
        }
    }
}

/// Whether `c` ends the value of a non-reserved expression. `sep` is the expression's separator
/// between values, which does not end it when the expression has several names.
fn stops_value(c: char, sep: Option<char>) -> bool {
    matches!(c, '/' | '?' | '#' | '&' | ',') && Some(c) != sep
}

/// The separator RFC 6570 puts between the values of one expression (Appendix A).
fn separator(op: Option<char>) -> char {
    match op {
        Some('/') => '/',
        Some('.') => '.',
        Some(';') => ';',
        _ => ',',
    }
}

/// Binds `names` to the values of one expansion (`text`, its prefix already removed); `false`
/// when the number of values or (for `;`) the names do not fit.
fn bind(op: Option<char>, names: &[String], text: &str, vars: &mut Map<String, Value>) -> bool {
    let values: Vec<&str> = if names.len() == 1 {
        vec![text]
    } else {
        text.split(separator(op)).collect()
    };
    if values.len() != names.len() {
        return false;
    }
    for (name, raw) in names.iter().zip(values) {
        let raw = if op == Some(';') {
            // `;x=1` or, for an empty value, `;x`.
            match raw.strip_prefix(name.as_str()) {
                Some("") => "",
                Some(tail) => match tail.strip_prefix('=') {
                    Some(v) => v,
                    None => return false,
                },
                None => return false,
            }
        } else {
            raw
        };
        vars.insert(name.clone(), Value::String(percent_decode(raw)));
    }
    true
}

fn match_parts(parts: &[Part], input: &str, vars: &mut Map<String, Value>) -> bool {
    let Some((first, rest)) = parts.split_first() else {
        return input.is_empty();
    };
    match first {
        Part::Literal(lit) => input
            .strip_prefix(lit.as_str())
            .is_some_and(|tail| match_parts(rest, tail, vars)),
        Part::Var {
            op: Some('?' | '&'),
            names,
        } => {
            let lead = if matches!(first, Part::Var { op: Some('?'), .. }) {
                '?'
            } else {
                '&'
            };
            let Some(query) = input.strip_prefix(lead) else {
                return match_parts(rest, input, vars);
            };
            let end = query.find('#').unwrap_or(query.len());
            for pair in query[..end].split('&') {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                if names.iter().any(|n| n == k) {
                    vars.insert(k.to_owned(), Value::String(percent_decode(v)));
                }
            }
            match_parts(rest, &query[end..], vars)
        }
        Part::Var { op, names } => {
            let (input, allow_any) = match op {
                Some('/') => match input.strip_prefix('/') {
                    Some(t) => (t, false),
                    None => return false,
                },
                Some('#') => match input.strip_prefix('#') {
                    Some(t) => (t, true),
                    None => return false,
                },
                Some('.') => match input.strip_prefix('.') {
                    Some(t) => (t, false),
                    None => return false,
                },
                Some(';') => match input.strip_prefix(';') {
                    Some(t) => (t, false),
                    None => return false,
                },
                Some('+') => (input, true),
                _ => (input, false),
            };
            let sep = (names.len() > 1).then(|| separator(*op));
            // Try the longest candidate first, then shorter ones (backtracking).
            let limit = if allow_any {
                input.len()
            } else {
                input.find(|c| stops_value(c, sep)).unwrap_or(input.len())
            };
            let mut ends: Vec<usize> = input[..limit]
                .char_indices()
                .map(|(i, _)| i)
                .skip(1)
                .collect();
            ends.push(limit);
            for &end in ends.iter().rev() {
                let mut attempt = vars.clone();
                if bind(*op, names, &input[..end], &mut attempt)
                    && match_parts(rest, &input[end..], &mut attempt)
                {
                    *vars = attempt;
                    return true;
                }
            }
            false
        }
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            if let Some(b) = hex {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_operators() {
        let t = UriTemplate::parse("file:///{+path}").unwrap();
        assert_eq!(t.matches("file:///a/b/c.txt").unwrap()["path"], "a/b/c.txt");
        let t = UriTemplate::parse("api://items{/id}{?sort,limit}").unwrap();
        let v = t.matches("api://items/42?sort=asc&limit=5").unwrap();
        assert_eq!(
            (v["id"].as_str(), v["sort"].as_str(), v["limit"].as_str()),
            (Some("42"), Some("asc"), Some("5"))
        );
        assert!(t.matches("api://items/42").is_some());
        let t = UriTemplate::parse("x://{a}-{b}").unwrap();
        let v = t.matches("x://left-right").unwrap();
        assert_eq!(
            (v["a"].as_str(), v["b"].as_str()),
            (Some("left"), Some("right"))
        );
        assert_eq!(UriTemplate::parse("x://{a").map(|_| ()), None);
        assert_eq!(UriTemplate::parse("x://{}").map(|_| ()), None);
        let t = UriTemplate::parse("x://{name}").unwrap();
        assert_eq!(t.matches("x://a%20b").unwrap()["name"], "a b");
    }

    fn strs<'a>(v: &'a Map<String, Value>, names: &[&str]) -> Vec<Option<&'a str>> {
        names
            .iter()
            .map(|n| v.get(*n).and_then(Value::as_str))
            .collect()
    }

    #[test]
    fn matches_expressions_with_several_names() {
        // The fuzz finding uri_template/crash-1c2f…: `{v1,w1}` stopped its value at the `,`.
        let t = UriTemplate::parse("{.v0}c{v1,w1}-aZ{?q1,q2}").unwrap();
        let v = t.matches(".hBrfc0v,7-aZ?q1=u&q2=1").unwrap();
        assert_eq!(
            strs(&v, &["v0", "v1", "w1", "q1", "q2"]),
            [Some("hBrf"), Some("0v"), Some("7"), Some("u"), Some("1")]
        );
        // Every operator, each with its own separator (RFC 6570 Appendix A).
        let cases = [
            ("x:{a,b}", "x:1,2"),
            ("x:{+a,b}", "x:1/3,2"),
            ("x:{#a,b}", "x:#1,2"),
            ("x:{/a,b}", "x:/1/2"),
            ("x:{.a,b}", "x:.1.2"),
            ("x:{;a,b}", "x:;a=1;b=2"),
        ];
        for (template, uri) in cases {
            let v = UriTemplate::parse(template).unwrap().matches(uri);
            let v = v.unwrap_or_else(|| panic!("{template} does not match {uri}"));
            let a = if template.contains('+') { "1/3" } else { "1" };
            assert_eq!(strs(&v, &["a", "b"]), [Some(a), Some("2")], "{template}");
        }
        // An encoded `,` stays inside one value; a wrong count of values does not match.
        let t = UriTemplate::parse("x:{a,b}").unwrap();
        let v = t.matches("x:1%2C5,2").unwrap();
        assert_eq!(strs(&v, &["a", "b"]), [Some("1,5"), Some("2")]);
        assert!(t.matches("x:1,2,3").is_none());
        assert!(UriTemplate::parse("x:{;a,b}")
            .unwrap()
            .matches("x:;b=1;a=2")
            .is_none());
        let v = UriTemplate::parse("x:{;a,b}")
            .unwrap()
            .matches("x:;a;b=2")
            .unwrap();
        assert_eq!(strs(&v, &["a", "b"]), [Some(""), Some("2")]);
    }
}
