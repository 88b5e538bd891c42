//! Wording why a value does not match: [`Shape::explain`], used without the `jsonschema` crate
//! (which words the problems otherwise).

use super::{
    is_integer, Bound, Checks, Plain, Shape, ARRAY, BOOLEAN, INTEGER, NULL, NUMBER, OBJECT, STRING,
};
use serde_json::Value;

/// How many problems [`Shape::explain`] lists, and how many characters of a value it quotes.
const MAX_PROBLEMS: usize = 16;
const MAX_QUOTE: usize = 64;

/// Words the problems of a value [`Shape`] refuses (without `jsonschema`, which words them
/// otherwise): each `path: problem`, the path a JSON Pointer into the value.
struct Explain {
    path: String,
    problems: Vec<String>,
}

impl Explain {
    fn push(&mut self, problem: String) {
        if self.problems.len() < MAX_PROBLEMS {
            if self.path.is_empty() {
                self.problems.push(problem);
            } else {
                self.problems.push(format!("{}: {problem}", self.path));
            }
        }
    }

    /// Runs `f` with `/token` (JSON Pointer escaped) added to the path.
    fn at(&mut self, token: &str, f: impl FnOnce(&mut Self)) {
        let len = self.path.len();
        self.path.push('/');
        for c in token.chars() {
            match c {
                '~' => self.path.push_str("~0"),
                '/' => self.path.push_str("~1"),
                c => self.path.push(c),
            }
        }
        f(self);
        self.path.truncate(len);
    }
}

/// `v` as JSON text, cut at [`MAX_QUOTE`] characters.
fn quote(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(MAX_QUOTE) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

fn type_names(types: u8) -> String {
    let names: Vec<&str> = [
        (NULL, "null"),
        (BOOLEAN, "boolean"),
        (OBJECT, "object"),
        (ARRAY, "array"),
        (NUMBER, "number"),
        (STRING, "string"),
        (INTEGER, "integer"),
    ]
    .iter()
    .filter(|(bit, _)| types & bit != 0)
    .map(|(_, name)| *name)
    .collect();
    names.join(" or ")
}

fn plain_text(p: &Plain) -> String {
    match p {
        Plain::Null => "null".into(),
        Plain::Bool(b) => b.to_string(),
        Plain::Str(s) => Value::String(s.clone()).to_string(),
        Plain::Int(i) => i.to_string(),
    }
}

fn bound_text(b: Bound) -> String {
    match b {
        Bound::Int(i) => i.to_string(),
        Bound::Float(f) => f.to_string(),
    }
}

impl Shape {
    /// Why `v` does not match, `; `-separated (see [`Explain`]); empty when it matches.
    #[cfg_attr(feature = "full-json-schema", allow(dead_code))]
    pub(super) fn explain(&self, v: &Value) -> String {
        let mut e = Explain {
            path: String::new(),
            problems: Vec::new(),
        };
        self.explain_into(v, &mut e);
        if !e.problems.is_empty() || self.accepts(v) {
            return e.problems.join("; ");
        }
        // Not reached: every refusal of `accepts` is worded below (the tests hold it to that).
        "the value does not match the schema".into()
    }

    fn explain_into(&self, v: &Value, e: &mut Explain) {
        match self {
            Shape::Any => {}
            Shape::Nothing => e.push(format!("{} is not allowed here (schema `false`)", quote(v))),
            Shape::Checks(c) => c.explain_into(v, e),
        }
    }
}

impl Checks {
    /// Words every check of [`Checks::accepts`] that `v` fails.
    fn explain_into(&self, v: &Value, e: &mut Explain) {
        use std::cmp::Ordering::{Equal, Greater, Less};
        if let Some(types) = self.types {
            let fits = match v {
                Value::Null => types & NULL != 0,
                Value::Bool(_) => types & BOOLEAN != 0,
                Value::Object(_) => types & OBJECT != 0,
                Value::Array(_) => types & ARRAY != 0,
                Value::String(_) => types & STRING != 0,
                Value::Number(n) => types & NUMBER != 0 || (types & INTEGER != 0 && is_integer(n)),
            };
            if !fits {
                e.push(format!("{} is not of type {}", quote(v), type_names(types)));
            }
        }
        if let Some(values) = &self.one_of_values {
            if !values.iter().any(|p| p.equals(v)) {
                let list: Vec<String> = values.iter().map(plain_text).collect();
                e.push(format!("{} is not one of [{}]", quote(v), list.join(", ")));
            }
        }
        if let Some(p) = &self.constant {
            if !p.equals(v) {
                e.push(format!(
                    "{} is not the constant {}",
                    quote(v),
                    plain_text(p)
                ));
            }
        }
        match v {
            Value::Number(n) => {
                let checks = [
                    (self.minimum, &[Greater, Equal][..], "less than the minimum"),
                    (self.maximum, &[Less, Equal][..], "greater than the maximum"),
                    (
                        self.exclusive_minimum,
                        &[Greater][..],
                        "not greater than the exclusive minimum",
                    ),
                    (
                        self.exclusive_maximum,
                        &[Less][..],
                        "not less than the exclusive maximum",
                    ),
                ];
                for (bound, allowed, what) in checks {
                    if let Some(b) = bound {
                        if !b.compare(n).is_some_and(|o| allowed.contains(&o)) {
                            e.push(format!("{n} is {what} {}", bound_text(b)));
                        }
                    }
                }
            }
            Value::String(s) => {
                if self.min_length.is_some() || self.max_length.is_some() {
                    let len = s.chars().count() as u64;
                    if let Some(m) = self.min_length.filter(|m| len < *m) {
                        e.push(format!("{} is shorter than {m} characters", quote(v)));
                    }
                    if let Some(m) = self.max_length.filter(|m| len > *m) {
                        e.push(format!("{} is longer than {m} characters", quote(v)));
                    }
                }
            }
            Value::Array(items) => {
                let len = items.len() as u64;
                if let Some(m) = self.min_items.filter(|m| len < *m) {
                    e.push(format!("the array has {len} items, fewer than {m}"));
                }
                if let Some(m) = self.max_items.filter(|m| len > *m) {
                    e.push(format!("the array has {len} items, more than {m}"));
                }
                if let Some(each) = &self.items {
                    for (i, item) in items.iter().enumerate() {
                        if !each.accepts(item) {
                            e.at(&i.to_string(), |e| each.explain_into(item, e));
                        }
                    }
                }
            }
            Value::Object(map) => {
                let len = map.len() as u64;
                if let Some(m) = self.min_properties.filter(|m| len < *m) {
                    e.push(format!("the object has {len} properties, fewer than {m}"));
                }
                if let Some(m) = self.max_properties.filter(|m| len > *m) {
                    e.push(format!("the object has {len} properties, more than {m}"));
                }
                for (key, value) in map {
                    let declared = self
                        .properties
                        .binary_search_by(|(name, _)| name.as_str().cmp(key))
                        .ok();
                    match (declared, &self.additional) {
                        (Some(i), _) => {
                            let shape = &self.properties[i].1;
                            if !shape.accepts(value) {
                                e.at(key, |e| shape.explain_into(value, e));
                            }
                        }
                        (None, Some(Shape::Nothing)) => {
                            let name = Value::String(key.clone());
                            e.push(format!("property {name} is not allowed"));
                        }
                        (None, Some(shape)) => {
                            if !shape.accepts(value) {
                                e.at(key, |e| shape.explain_into(value, e));
                            }
                        }
                        (None, None) => {}
                    }
                }
                let required = self
                    .properties
                    .iter()
                    .zip(&self.property_required)
                    .filter(|(_, required)| **required)
                    .map(|((name, _), _)| name)
                    .chain(&self.required_elsewhere);
                for name in required {
                    if !map.contains_key(name) {
                        let name = Value::String(name.clone());
                        e.push(format!("property {name} is required"));
                    }
                }
            }
            Value::Null | Value::Bool(_) => {}
        }
        for s in &self.all_of {
            s.explain_into(v, e);
        }
        if !self.any_of.is_empty() && !self.any_of.iter().any(|s| s.accepts(v)) {
            e.push(format!("{} matches none of the `anyOf` schemas", quote(v)));
        }
        if !self.one_of.is_empty() {
            let matched = self.one_of.iter().filter(|s| s.accepts(v)).count();
            if matched != 1 {
                e.push(format!(
                    "{} matches {matched} of the `oneOf` schemas, not exactly one",
                    quote(v)
                ));
            }
        }
        if self.not.as_ref().is_some_and(|s| s.accepts(v)) {
            e.push(format!("{} matches the `not` schema", quote(v)));
        }
    }
}
