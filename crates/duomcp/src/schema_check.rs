//! Checking JSON values against a JSON Schema: tool arguments against `inputSchema`,
//! `structuredContent` against `outputSchema`.
//!
//! [`SchemaCheck`] answers with the `jsonschema` crate's verdict and words its errors, but most
//! tool schemas — the ones `schemars` derives for flat argument structs — use a small part of
//! JSON Schema 2020-12: `type`, `properties`, `required`, `additionalProperties`, `items`,
//! `enum`, `const`, bounds, lengths, the `allOf`/`anyOf`/`oneOf`/`not` combinators and
//! annotations. Such a schema is checked by [`Shape`], a direct reading of those keywords, and the
//! `jsonschema` validator is only built when a value fails (to word the error) or when the schema
//! uses anything else.
//!
//! Why not always `jsonschema`: building a validator checks the schema against the draft's
//! meta-schema and brings in its regular-expression engines. In a small server that is about
//! 3 MB of resident code and most of the start-up work (measured on the echo benchmark server:
//! peak RSS 10.8 → 7.9 MiB). Checking a value costs about the same either way (the criterion
//! bench `hot_path` has both). [`Shape`] is strict: a keyword it does not know, or a known one with a value
//! the meta-schema would not allow, sends the schema to `jsonschema` whole, so the two never
//! disagree on a schema `Shape` accepts (the tests below compare them case by case).
//!
//! Without the `full-json-schema` feature there is no `jsonschema`: a value `Shape` refuses is
//! worded by [`Shape::explain`] (same verdict, duomcp's wording), and a schema `Shape` cannot
//! read is a [`SchemaViolation::BadSchema`] naming the keywords it uses beyond the direct part
//! (reported at registration; every value refused, none let through unchecked).
//!
//! (Over 800 lines with its tests: the code is about 900 lines, the rest is the cases
//! the checks are held to.)

use serde_json::{Map, Number, Value};
#[cfg(feature = "full-json-schema")]
use std::sync::OnceLock;

/// A compiled schema: checks values, and words why one does not match.
pub(crate) struct SchemaCheck {
    /// The schema read as a [`Shape`], when it only uses what `Shape` knows.
    shape: Option<Shape>,
    #[cfg(feature = "full-json-schema")]
    source: Value,
    /// The `jsonschema` validator: built at once when there is no shape, else on first failure.
    #[cfg(feature = "full-json-schema")]
    full: OnceLock<Result<jsonschema::Validator, String>>,
    /// Without `jsonschema`: why a schema [`Shape`] cannot read is not checked.
    #[cfg(not(feature = "full-json-schema"))]
    unchecked: Option<String>,
}

/// Why a value was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SchemaViolation {
    /// The schema itself is not valid JSON Schema (its compile error), or (without the
    /// `full-json-schema` feature) uses more of JSON Schema than this build checks.
    BadSchema(String),
    /// The value does not match; the problems, `; `-separated, each prefixed by its path.
    Mismatch(String),
}

impl SchemaCheck {
    /// Compiles `schema` (an object or a boolean schema).
    pub(crate) fn new(schema: Value) -> Self {
        let shape = Shape::read_root(&schema);
        #[cfg(feature = "full-json-schema")]
        {
            let check = SchemaCheck {
                shape,
                source: schema,
                full: OnceLock::new(),
            };
            if check.shape.is_none() {
                check.full();
            }
            check
        }
        #[cfg(not(feature = "full-json-schema"))]
        {
            let unchecked = shape.is_none().then(|| beyond_direct(&schema));
            SchemaCheck { shape, unchecked }
        }
    }

    /// Compiles a schema given as a JSON object.
    pub(crate) fn from_map(schema: &Map<String, Value>) -> Self {
        Self::new(Value::Object(schema.clone()))
    }

    /// The compile error, if the schema is not valid JSON Schema (without the
    /// `full-json-schema` feature: if this build cannot check it).
    pub(crate) fn compile_error(&self) -> Option<&str> {
        #[cfg(feature = "full-json-schema")]
        {
            match (&self.shape, self.full.get()) {
                (Some(_), _) => None,
                (None, Some(Err(e))) => Some(e),
                (None, _) => None,
            }
        }
        #[cfg(not(feature = "full-json-schema"))]
        {
            self.unchecked.as_deref()
        }
    }

    #[cfg(feature = "full-json-schema")]
    fn full(&self) -> &Result<jsonschema::Validator, String> {
        self.full
            .get_or_init(|| jsonschema::validator_for(&self.source).map_err(|e| e.to_string()))
    }

    /// Checks `instance`: `Ok` when it matches.
    #[cfg(feature = "full-json-schema")]
    pub(crate) fn check(&self, instance: &Value) -> Result<(), SchemaViolation> {
        if let Some(shape) = &self.shape {
            if shape.accepts(instance) {
                return Ok(());
            }
        }
        match self.full() {
            Err(e) => Err(SchemaViolation::BadSchema(e.clone())),
            Ok(validator) => {
                let problems: Vec<String> = validator
                    .iter_errors(instance)
                    .map(|e| {
                        let path = e.instance_path().to_string();
                        if path.is_empty() {
                            e.to_string()
                        } else {
                            format!("{path}: {e}")
                        }
                    })
                    .collect();
                if problems.is_empty() {
                    Ok(())
                } else {
                    Err(SchemaViolation::Mismatch(problems.join("; ")))
                }
            }
        }
    }

    /// Checks `instance`: `Ok` when it matches.
    #[cfg(not(feature = "full-json-schema"))]
    pub(crate) fn check(&self, instance: &Value) -> Result<(), SchemaViolation> {
        match (&self.shape, &self.unchecked) {
            (Some(shape), _) => match shape.accepts(instance) {
                true => Ok(()),
                false => Err(SchemaViolation::Mismatch(shape.explain(instance))),
            },
            (None, Some(why)) => Err(SchemaViolation::BadSchema(why.clone())),
            (None, None) => Err(SchemaViolation::BadSchema(String::new())),
        }
    }

    /// Whether this schema is checked without the `jsonschema` validator (for tests).
    #[cfg(test)]
    pub(crate) fn is_direct(&self) -> bool {
        self.shape.is_some()
    }
}

/// The keywords [`Shape`] reads.
const DIRECT_KEYWORDS: &[&str] = &[
    "$schema",
    "title",
    "description",
    "$comment",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "format",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
];

/// Why a schema [`Shape`] cannot read is not checked by a build without `jsonschema`: the
/// keywords it uses beyond the direct part (found through the subschemas `Shape` would read),
/// or else that a keyword's value is outside it.
#[cfg_attr(feature = "full-json-schema", allow(dead_code))]
fn beyond_direct(schema: &Value) -> String {
    fn walk(schema: &Value, found: &mut Vec<String>) {
        let Value::Object(map) = schema else { return };
        for (key, value) in map {
            if !DIRECT_KEYWORDS.contains(&key.as_str()) {
                if !found.contains(key) && found.len() < 8 {
                    found.push(key.clone());
                }
                continue;
            }
            match (key.as_str(), value) {
                ("properties", Value::Object(props)) => {
                    props.values().for_each(|s| walk(s, found));
                }
                ("additionalProperties" | "items" | "not", s) => walk(s, found),
                ("allOf" | "anyOf" | "oneOf", Value::Array(list)) => {
                    list.iter().for_each(|s| walk(s, found));
                }
                _ => {}
            }
        }
    }
    let mut found = Vec::new();
    walk(schema, &mut found);
    let what = if found.is_empty() {
        "a keyword value (or a `$schema` dialect) outside the part of JSON Schema 2020-12 it \
         reads itself"
            .to_owned()
    } else {
        let names: Vec<String> = found.iter().map(|k| format!("`{k}`")).collect();
        format!(
            "{} (beyond the part of JSON Schema it reads itself)",
            names.join(", ")
        )
    };
    format!(
        "this schema uses {what}; duomcp was built without its `full-json-schema` feature, so \
         it refuses values it cannot check"
    )
}

/// The JSON types of the `type` keyword, one bit each.
const NULL: u8 = 1;
const BOOLEAN: u8 = 2;
const OBJECT: u8 = 4;
const ARRAY: u8 = 8;
const NUMBER: u8 = 16;
const STRING: u8 = 32;
const INTEGER: u8 = 64;

/// Integers up to 2^53 are exact as `f64`, so bounds and enum values in that range compare
/// exactly with any JSON number.
const EXACT: u64 = 1 << 53;

/// A schema in the part of JSON Schema 2020-12 read directly.
#[derive(Debug)]
enum Shape {
    /// `true` or `{}`: anything.
    Any,
    /// `false`: nothing.
    Nothing,
    Checks(Box<Checks>),
}

#[derive(Debug, Default)]
struct Checks {
    types: Option<u8>,
    /// Sorted by name.
    properties: Vec<(String, Shape)>,
    /// For each of `properties`: whether `required` names it.
    property_required: Vec<bool>,
    /// How many of `properties` are required.
    required_declared: usize,
    /// Required names that `properties` does not declare.
    required_elsewhere: Vec<String>,
    additional: Option<Shape>,
    items: Option<Shape>,
    one_of_values: Option<Vec<Plain>>,
    constant: Option<Plain>,
    minimum: Option<Bound>,
    maximum: Option<Bound>,
    exclusive_minimum: Option<Bound>,
    exclusive_maximum: Option<Bound>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    all_of: Vec<Shape>,
    any_of: Vec<Shape>,
    one_of: Vec<Shape>,
    not: Option<Shape>,
}

/// An `enum`/`const` value of the kinds compared here exactly.
#[derive(Debug, PartialEq)]
enum Plain {
    Null,
    Bool(bool),
    Str(String),
    Int(i64),
}

/// A numeric bound: an integer or a float of magnitude under 2^53.
#[derive(Debug, Clone, Copy)]
enum Bound {
    Int(i64),
    Float(f64),
}

impl Shape {
    /// Reads a root schema; `None` when it needs the full validator.
    fn read_root(schema: &Value) -> Option<Shape> {
        if let Value::Object(map) = schema {
            if let Some(dialect) = map.get("$schema") {
                if dialect.as_str() != Some("https://json-schema.org/draft/2020-12/schema") {
                    return None;
                }
            }
        }
        Self::read_at(schema, true)
    }

    fn read(schema: &Value) -> Option<Shape> {
        Self::read_at(schema, false)
    }

    fn read_at(schema: &Value, root: bool) -> Option<Shape> {
        let map = match schema {
            Value::Bool(true) => return Some(Shape::Any),
            Value::Bool(false) => return Some(Shape::Nothing),
            Value::Object(map) => map,
            _ => return None,
        };
        let mut c = Checks::default();
        let mut required: Vec<String> = Vec::new();
        let mut asserts = false;
        for (key, value) in map {
            asserts |= !matches!(
                key.as_str(),
                "$schema"
                    | "title"
                    | "description"
                    | "$comment"
                    | "default"
                    | "examples"
                    | "deprecated"
                    | "readOnly"
                    | "writeOnly"
                    | "format"
            );
            match key.as_str() {
                // Checked by `read_root`; a nested one starts a schema resource of its own.
                "$schema" if root => {}
                "title" | "description" | "$comment" | "format" => {
                    value.as_str()?;
                }
                "default" => {}
                "examples" => {
                    value.as_array()?;
                }
                "deprecated" | "readOnly" | "writeOnly" => {
                    value.as_bool()?;
                }
                "type" => c.types = Some(read_types(value)?),
                "properties" => {
                    let mut props = value
                        .as_object()?
                        .iter()
                        .map(|(name, s)| Some((name.clone(), Shape::read(s)?)))
                        .collect::<Option<Vec<_>>>()?;
                    props.sort_by(|a, b| a.0.cmp(&b.0));
                    c.properties = props;
                }
                "required" => {
                    let names = value
                        .as_array()?
                        .iter()
                        .map(|n| n.as_str().map(str::to_owned))
                        .collect::<Option<Vec<_>>>()?;
                    let mut sorted: Vec<&String> = names.iter().collect();
                    sorted.sort();
                    sorted.dedup();
                    if sorted.len() != names.len() {
                        return None;
                    }
                    required = names;
                }
                "additionalProperties" => c.additional = Some(Shape::read(value)?),
                "items" => c.items = Some(Shape::read(value)?),
                "enum" => {
                    let values = value.as_array()?;
                    if values.is_empty() {
                        return None;
                    }
                    c.one_of_values = Some(values.iter().map(Plain::read).collect::<Option<_>>()?);
                }
                "const" => c.constant = Some(Plain::read(value)?),
                "minimum" => c.minimum = Some(Bound::read(value)?),
                "maximum" => c.maximum = Some(Bound::read(value)?),
                "exclusiveMinimum" => c.exclusive_minimum = Some(Bound::read(value)?),
                "exclusiveMaximum" => c.exclusive_maximum = Some(Bound::read(value)?),
                "minLength" => c.min_length = Some(value.as_u64()?),
                "maxLength" => c.max_length = Some(value.as_u64()?),
                "minItems" => c.min_items = Some(value.as_u64()?),
                "maxItems" => c.max_items = Some(value.as_u64()?),
                "minProperties" => c.min_properties = Some(value.as_u64()?),
                "maxProperties" => c.max_properties = Some(value.as_u64()?),
                "allOf" => c.all_of = read_list(value)?,
                "anyOf" => c.any_of = read_list(value)?,
                "oneOf" => c.one_of = read_list(value)?,
                "not" => c.not = Some(Shape::read(value)?),
                _ => return None,
            }
        }
        // Required names found while walking the members once, instead of a lookup each.
        c.property_required = c
            .properties
            .iter()
            .map(|(name, _)| required.contains(name))
            .collect();
        c.required_declared = c.property_required.iter().filter(|r| **r).count();
        c.required_elsewhere = required
            .into_iter()
            .filter(|name| c.properties.iter().all(|(p, _)| p != name))
            .collect();
        Some(if asserts {
            Shape::Checks(Box::new(c))
        } else {
            Shape::Any
        })
    }

    /// Whether `v` matches.
    fn accepts(&self, v: &Value) -> bool {
        match self {
            Shape::Any => true,
            Shape::Nothing => false,
            Shape::Checks(c) => c.accepts(v),
        }
    }
}

fn read_types(value: &Value) -> Option<u8> {
    fn one(name: &str) -> Option<u8> {
        Some(match name {
            "null" => NULL,
            "boolean" => BOOLEAN,
            "object" => OBJECT,
            "array" => ARRAY,
            "number" => NUMBER,
            "string" => STRING,
            "integer" => INTEGER,
            _ => return None,
        })
    }
    match value {
        Value::String(name) => one(name),
        Value::Array(names) if !names.is_empty() => {
            let mut bits = 0;
            for name in names {
                let bit = one(name.as_str()?)?;
                if bits & bit != 0 {
                    return None;
                }
                bits |= bit;
            }
            Some(bits)
        }
        _ => None,
    }
}

fn read_list(value: &Value) -> Option<Vec<Shape>> {
    let list = value.as_array()?;
    if list.is_empty() {
        return None;
    }
    list.iter().map(Shape::read).collect()
}

impl Plain {
    fn read(value: &Value) -> Option<Plain> {
        Some(match value {
            Value::Null => Plain::Null,
            Value::Bool(b) => Plain::Bool(*b),
            Value::String(s) => Plain::Str(s.clone()),
            Value::Number(n) => Plain::Int(exact_int(n)?),
            _ => return None,
        })
    }

    fn equals(&self, v: &Value) -> bool {
        match (self, v) {
            (Plain::Null, Value::Null) => true,
            (Plain::Bool(a), Value::Bool(b)) => a == b,
            (Plain::Str(a), Value::String(b)) => a == b,
            (Plain::Int(a), Value::Number(n)) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => i == *a,
                (None, Some(_), _) => false, // above i64::MAX, `a` is not
                (None, None, Some(f)) => f == *a as f64,
                (None, None, None) => false,
            },
            _ => false,
        }
    }
}

/// `n` as an `i64` when it is an integer of magnitude up to 2^53 (written without a fraction).
fn exact_int(n: &Number) -> Option<i64> {
    let i = n.as_i64()?;
    (i.unsigned_abs() <= EXACT).then_some(i)
}

impl Bound {
    fn read(value: &Value) -> Option<Bound> {
        let n = value.as_number()?;
        if let Some(i) = exact_int(n) {
            return Some(Bound::Int(i));
        }
        if n.is_f64() {
            let f = n.as_f64()?;
            if f.is_finite() && f.abs() < EXACT as f64 {
                return Some(Bound::Float(f));
            }
        }
        None
    }

    /// How `n` compares with this bound.
    fn compare(self, n: &Number) -> Option<std::cmp::Ordering> {
        match (self, n.as_i64(), n.as_u64()) {
            (Bound::Int(b), Some(i), _) => Some(i.cmp(&b)),
            (Bound::Int(_), None, Some(_)) => Some(std::cmp::Ordering::Greater),
            (Bound::Int(b), None, None) => n.as_f64()?.partial_cmp(&(b as f64)),
            // An integer beyond 2^53 is beyond the bound too, and rounds to a float that is.
            (Bound::Float(b), _, _) => n.as_f64()?.partial_cmp(&b),
        }
    }
}

fn is_integer(n: &Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

impl Checks {
    fn accepts(&self, v: &Value) -> bool {
        use std::cmp::Ordering::{Equal, Greater, Less};
        if let Some(types) = self.types {
            let bit = match v {
                Value::Null => NULL,
                Value::Bool(_) => BOOLEAN,
                Value::Object(_) => OBJECT,
                Value::Array(_) => ARRAY,
                Value::String(_) => STRING,
                Value::Number(n) => {
                    if types & NUMBER != 0 || (types & INTEGER != 0 && is_integer(n)) {
                        types
                    } else {
                        0
                    }
                }
            };
            if types & bit == 0 {
                return false;
            }
        }
        if let Some(values) = &self.one_of_values {
            if !values.iter().any(|p| p.equals(v)) {
                return false;
            }
        }
        if let Some(p) = &self.constant {
            if !p.equals(v) {
                return false;
            }
        }
        match v {
            Value::Number(n) => {
                let within = |bound: Option<Bound>, allowed: &[std::cmp::Ordering]| {
                    bound.is_none_or(|b| b.compare(n).is_some_and(|o| allowed.contains(&o)))
                };
                if !(within(self.minimum, &[Greater, Equal])
                    && within(self.maximum, &[Less, Equal])
                    && within(self.exclusive_minimum, &[Greater])
                    && within(self.exclusive_maximum, &[Less]))
                {
                    return false;
                }
            }
            Value::String(s) => {
                if self.min_length.is_some() || self.max_length.is_some() {
                    let len = s.chars().count() as u64;
                    if self.min_length.is_some_and(|m| len < m)
                        || self.max_length.is_some_and(|m| len > m)
                    {
                        return false;
                    }
                }
            }
            Value::Array(items) => {
                let len = items.len() as u64;
                if self.min_items.is_some_and(|m| len < m)
                    || self.max_items.is_some_and(|m| len > m)
                {
                    return false;
                }
                if let Some(each) = &self.items {
                    if !items.iter().all(|item| each.accepts(item)) {
                        return false;
                    }
                }
            }
            Value::Object(map) => {
                let len = map.len() as u64;
                if self.min_properties.is_some_and(|m| len < m)
                    || self.max_properties.is_some_and(|m| len > m)
                {
                    return false;
                }
                let mut required_seen = 0;
                for (key, value) in map {
                    let declared = self
                        .properties
                        .binary_search_by(|(name, _)| name.as_str().cmp(key))
                        .ok();
                    let shape = match declared {
                        Some(i) => {
                            required_seen += usize::from(self.property_required[i]);
                            Some(&self.properties[i].1)
                        }
                        None => self.additional.as_ref(),
                    };
                    if shape.is_some_and(|shape| !shape.accepts(value)) {
                        return false;
                    }
                }
                if required_seen != self.required_declared
                    || !self
                        .required_elsewhere
                        .iter()
                        .all(|name| map.contains_key(name))
                {
                    return false;
                }
            }
            Value::Null | Value::Bool(_) => {}
        }
        self.all_of.iter().all(|s| s.accepts(v))
            && (self.any_of.is_empty() || self.any_of.iter().any(|s| s.accepts(v)))
            && (self.one_of.is_empty() || self.one_of.iter().filter(|s| s.accepts(v)).count() == 1)
            && self.not.as_ref().is_none_or(|s| !s.accepts(v))
    }
}

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
    fn explain(&self, v: &Value) -> String {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::json;
    use std::collections::HashMap;

    /// Schemas `Shape` reads: each keyword, with edge values.
    fn direct_schemas() -> Vec<Value> {
        vec![
            json!(true),
            json!(false),
            json!({}),
            json!({"description": "anything", "title": "t", "examples": [1], "default": 3}),
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "string"}),
            json!({"type": "string"}),
            json!({"type": "integer"}),
            json!({"type": "number"}),
            json!({"type": "boolean"}),
            json!({"type": "null"}),
            json!({"type": "array"}),
            json!({"type": "object"}),
            json!({"type": ["string", "null"]}),
            json!({"type": ["integer", "string"]}),
            json!({"type": ["number", "integer"]}),
            json!({"type": "string", "format": "email"}),
            json!({"type": "string", "format": "date-time"}),
            json!({"type": "integer", "format": "uint32", "minimum": 0}),
            json!({"type": "number", "format": "double"}),
            json!({"minimum": 1}),
            json!({"maximum": 1}),
            json!({"exclusiveMinimum": 1}),
            json!({"exclusiveMaximum": 1}),
            json!({"minimum": 1.5, "maximum": 2.5}),
            json!({"exclusiveMinimum": -1.5, "exclusiveMaximum": 1.0}),
            json!({"minimum": -9007199254740992i64}),
            json!({"maximum": 9007199254740992i64}),
            json!({"minLength": 2}),
            json!({"maxLength": 2}),
            json!({"minLength": 0, "maxLength": 0}),
            json!({"minItems": 1}),
            json!({"maxItems": 1}),
            json!({"minProperties": 1}),
            json!({"maxProperties": 1}),
            json!({"enum": ["a", "b", "héé"]}),
            json!({"enum": [1, null, true, "1"]}),
            json!({"enum": [0]}),
            json!({"const": "a"}),
            json!({"const": 1}),
            json!({"const": false}),
            json!({"const": null}),
            json!({"items": {"type": "string"}}),
            json!({"type": "array", "items": {"type": "integer", "minimum": 0}}),
            json!({"items": false}),
            json!({"items": true}),
            json!({"required": ["text"]}),
            json!({"required": []}),
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            json!({"properties": {"text": {"type": "string"}, "n": {"type": "integer"}}}),
            json!({"properties": {"text": true, "n": false}}),
            json!({"properties": {"text": {}}, "additionalProperties": false}),
            json!({"properties": {"text": {}}, "additionalProperties": {"type": "integer"}}),
            json!({"additionalProperties": {"type": "string"}}),
            json!({"additionalProperties": true}),
            json!({"properties": {"tags": {"type": "array", "items": {"enum": ["a", "b"]}}}}),
            json!({"properties": {"a": {"properties": {"b": {"type": "string"}}, "required": ["b"]}}}),
            json!({"allOf": [{"type": "number"}, {"minimum": 0}]}),
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
            json!({"anyOf": [{"type": "integer"}, {"minimum": 0.5}]}),
            json!({"oneOf": [{"type": "integer"}, {"type": "number"}]}),
            json!({"oneOf": [{"type": "string"}, {"const": 1}]}),
            json!({"not": {"type": "string"}}),
            json!({"not": {}}),
            json!({"deprecated": true, "readOnly": false, "writeOnly": false, "$comment": "c"}),
            json!({"type": "object", "properties": {"n": {"type": "number", "exclusiveMinimum": 0}}, "required": ["n"], "additionalProperties": false}),
        ]
    }

    /// Schemas left to `jsonschema` whole: unknown or unsupported keywords, other drafts, values
    /// the meta-schema refuses.
    fn fallback_schemas() -> Vec<Value> {
        vec![
            json!({"type": "string", "pattern": "^a"}),
            json!({"$ref": "#/$defs/x", "$defs": {"x": {"type": "string"}}}),
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "string"}),
            json!({"$schema": "http://json-schema.org/draft-04/schema#", "exclusiveMinimum": true, "minimum": 1}),
            json!({"type": "strin"}),
            json!({"type": []}),
            json!({"type": ["string", "string"]}),
            json!({"required": ["a", "a"]}),
            json!({"required": "a"}),
            json!({"minLength": -1}),
            json!({"minLength": 1.5}),
            json!({"enum": []}),
            json!({"enum": [1.5]}),
            json!({"enum": [{"a": 1}]}),
            json!({"const": [1]}),
            json!({"minimum": "1"}),
            json!({"maximum": 18446744073709551615u64}),
            json!({"allOf": []}),
            json!({"properties": {"a": {"pattern": "x"}}}),
            json!({"description": 5}),
            json!({"examples": 5}),
            json!({"properties": {"a": {"$schema": "https://json-schema.org/draft/2020-12/schema"}}}),
            json!({"x-vendor": 1}),
            json!({"prefixItems": [{"type": "string"}]}),
            json!(5),
        ]
    }

    fn instances() -> Vec<Value> {
        let mut list = vec![
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(1),
            json!(-1),
            json!(1.0),
            json!(1.5),
            json!(2.5),
            json!(-1.5),
            json!(0.5),
            json!(9007199254740993u64),
            json!(-9007199254740993i64),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1e300),
            json!(-1e300),
            json!(""),
            json!("a"),
            json!("1"),
            json!("ab"),
            json!("héé"),
            json!("😀"),
            json!("😀😀😀"),
            json!([]),
            json!([1]),
            json!(["a", "b"]),
            json!([1, "a"]),
            json!([0, -1]),
            json!({}),
            json!({"text": "hi"}),
            json!({"text": 1}),
            json!({"text": "hi", "extra": 1}),
            json!({"text": "hi", "n": 2}),
            json!({"n": 0}),
            json!({"n": 0.5}),
            json!({"n": "x"}),
            json!({"tags": ["a"]}),
            json!({"tags": ["c"]}),
            json!({"tags": "a"}),
            json!({"a": {"b": "x"}}),
            json!({"a": {"b": 1}}),
            json!({"a": {}}),
            json!({"a": 1}),
        ];
        // Each scalar again as a property value, for the schemas that look inside objects.
        let scalars: Vec<Value> = list.iter().filter(|v| !v.is_object()).cloned().collect();
        for v in scalars {
            list.push(json!({ "n": v.clone() }));
            list.push(json!({ "text": v }));
        }
        list
    }

    /// What a typed tool's `inputSchema` is (as `Args<T>` derives it).
    fn derived<T: schemars::JsonSchema>() -> Map<String, Value> {
        match schemars::SchemaGenerator::default()
            .into_root_schema_for::<T>()
            .to_value()
        {
            Value::Object(map) => map,
            other => panic!("{other}"),
        }
    }

    fn full_verdict(schema: &Value, instance: &Value) -> bool {
        jsonschema::validator_for(schema)
            .unwrap()
            .is_valid(instance)
    }

    #[test]
    fn direct_reading_agrees_with_jsonschema_on_every_case() {
        let instances = instances();
        let mut compared = 0;
        for schema in direct_schemas() {
            let shape = Shape::read_root(&schema)
                .unwrap_or_else(|| panic!("expected a direct reading of {schema}"));
            // Also nested: as a property's schema and as an array's items.
            let nested = [
                json!({"properties": {"n": schema.clone()}}),
                json!({"items": schema.clone()}),
                json!({"anyOf": [schema.clone(), {"type": "null"}]}),
            ];
            assert!(jsonschema::validator_for(&schema).is_ok(), "{schema}");
            for instance in &instances {
                assert_eq!(
                    shape.accepts(instance),
                    full_verdict(&schema, instance),
                    "schema {schema} instance {instance}"
                );
                for outer in &nested {
                    // A nested `$schema` starts a resource of its own: left to `jsonschema`.
                    let Some(shape) = Shape::read_root(outer) else {
                        assert!(schema.get("$schema").is_some(), "{outer}");
                        continue;
                    };
                    for wrapped in [instance.clone(), json!({"n": instance}), json!([instance])] {
                        assert_eq!(
                            shape.accepts(&wrapped),
                            full_verdict(outer, &wrapped),
                            "schema {outer} instance {wrapped}"
                        );
                        compared += 1;
                    }
                }
                compared += 1;
            }
        }
        assert!(compared > 10_000, "{compared}");
    }

    #[test]
    fn schemas_outside_the_direct_part_go_to_jsonschema() {
        for schema in fallback_schemas() {
            assert!(Shape::read_root(&schema).is_none(), "{schema}");
            let check = SchemaCheck::new(schema.clone());
            assert!(!check.is_direct());
            let full = jsonschema::validator_for(&schema);
            assert_eq!(check.compile_error().is_some(), full.is_err(), "{schema}");
            if let Ok(full) = full {
                for instance in instances() {
                    assert_eq!(check.check(&instance).is_ok(), full.is_valid(&instance));
                }
            }
        }
    }

    #[test]
    fn derived_argument_schemas_are_read_directly() {
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        enum Mode {
            Fast,
            Slow,
        }
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Flat {
            /// Some text.
            text: String,
            count: u32,
            ratio: f64,
            flag: Option<bool>,
            tags: Vec<String>,
            labels: HashMap<String, i64>,
            note: Option<String>,
        }
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct WithEnum {
            mode: Mode,
        }
        let flat = Value::Object(derived::<Flat>());
        let check = SchemaCheck::new(flat.clone());
        assert!(check.is_direct(), "{flat}");
        let good = json!({"text": "a", "count": 3, "ratio": 0.5, "tags": [], "labels": {"x": -1}});
        assert_eq!(check.check(&good), Ok(()));
        assert!(full_verdict(&flat, &good));
        for bad in [
            json!({"text": "a", "count": -3, "ratio": 0.5, "tags": [], "labels": {}}),
            json!({"text": "a", "count": 3, "ratio": 0.5, "tags": [1], "labels": {}}),
            json!({"count": 3, "ratio": 0.5, "tags": [], "labels": {}}),
            json!({"text": "a", "count": 3, "ratio": "x", "tags": [], "labels": {"x": 1.5}}),
        ] {
            assert!(!full_verdict(&flat, &bad), "{bad}");
            assert!(
                matches!(check.check(&bad), Err(SchemaViolation::Mismatch(_))),
                "{bad}"
            );
        }
        // Enums of unit variants become `$ref`s into `$defs`: those stay with `jsonschema`.
        let with_enum = Value::Object(derived::<WithEnum>());
        let check = SchemaCheck::new(with_enum);
        assert_eq!(check.check(&json!({"mode": "Fast"})), Ok(()));
        assert!(check.check(&json!({"mode": "Medium"})).is_err());
    }

    #[test]
    fn a_mismatch_is_worded_by_jsonschema_with_its_path() {
        let check = SchemaCheck::new(json!({
            "type": "object",
            "properties": {"text": {"type": "string"}, "n": {"minimum": 0}},
            "required": ["text"]
        }));
        assert!(check.is_direct());
        assert_eq!(check.check(&json!({"text": "x", "n": 1})), Ok(()));
        let Err(SchemaViolation::Mismatch(problems)) = check.check(&json!({"text": 1, "n": -1}))
        else {
            panic!("expected a mismatch");
        };
        assert!(
            problems.contains("/text: 1 is not of type \"string\""),
            "{problems}"
        );
        assert!(
            problems.contains("/n: -1 is less than the minimum of 0"),
            "{problems}"
        );
        assert!(problems.contains("; "), "{problems}");
    }

    /// The wording used without `jsonschema`: every refusal is explained, nothing else is.
    #[test]
    fn the_direct_wording_explains_every_refusal_and_only_those() {
        let mut refused = 0;
        for schema in direct_schemas() {
            let shape = Shape::read_root(&schema).unwrap();
            for instance in instances() {
                let why = shape.explain(&instance);
                assert_eq!(
                    why.is_empty(),
                    shape.accepts(&instance),
                    "schema {schema} instance {instance}: {why:?}"
                );
                assert_ne!(
                    why, "the value does not match the schema",
                    "{schema} {instance}"
                );
                refused += usize::from(!why.is_empty());
            }
        }
        assert!(refused > 1_000, "{refused}");
    }

    #[test]
    fn the_direct_wording_names_paths_and_values() {
        let schema = json!({
            "type": "object",
            "properties": {
                "text": {"type": "string", "maxLength": 3},
                "n": {"type": "integer", "minimum": 0},
                "tags": {"items": {"enum": ["a", "b"]}},
                "a/b~": {"type": "null"}
            },
            "required": ["text", "n", "id"],
            "additionalProperties": false
        });
        let shape = Shape::read_root(&schema).unwrap();
        let why =
            shape.explain(&json!({"text": 1, "n": -1.5, "tags": ["a", "c"], "a/b~": 0, "x": 1}));
        for part in [
            "/text: 1 is not of type string",
            "/n: -1.5 is not of type integer",
            "/n: -1.5 is less than the minimum 0",
            "/tags/1: \"c\" is not one of [\"a\", \"b\"]",
            "/a~1b~0: 0 is not of type null",
            "property \"x\" is not allowed",
            "property \"id\" is required",
        ] {
            assert!(why.contains(part), "{part} in {why}");
        }
        assert_eq!(why.matches("; ").count(), 6, "{why}");
        let long = "é".repeat(200);
        let why = shape.explain(&json!({"text": long, "n": 0, "id": 1}));
        assert!(why.starts_with("/text: \""), "{why}");
        assert!(why.contains("…"), "{why}");
        assert!(why.len() < 300, "{why}");
    }

    #[test]
    fn a_schema_beyond_the_direct_part_is_named_by_its_keywords() {
        let why = beyond_direct(&json!({
            "properties": {"mode": {"$ref": "#/$defs/Mode"}, "s": {"pattern": "^a"}},
            "$defs": {"Mode": {"enum": ["a"]}}
        }));
        for part in ["`$ref`", "`pattern`", "`$defs`", "full-json-schema"] {
            assert!(why.contains(part), "{part} in {why}");
        }
        let why = beyond_direct(&json!({"type": "strin"}));
        assert!(why.contains("a keyword value"), "{why}");
    }

    #[test]
    fn a_broken_schema_says_so_on_every_check() {
        let check = SchemaCheck::new(json!({"type": "strin"}));
        assert!(check.compile_error().is_some());
        assert!(matches!(
            check.check(&json!("x")),
            Err(SchemaViolation::BadSchema(_))
        ));
    }
}
