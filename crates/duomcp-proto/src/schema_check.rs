//! Checking JSON values against a JSON Schema: tool arguments against `inputSchema`,
//! `structuredContent` against `outputSchema`.
//!
//! [`SchemaCheck`] answers with the `jsonschema` crate's verdict and words its errors, but most
//! tool schemas — the ones `schemars` derives for flat argument structs — use a small part of
//! JSON Schema 2020-12: `type`, `properties`, `required`, `additionalProperties`, `items`,
//! `enum`, `const`, bounds, lengths, the `allOf`/`anyOf`/`oneOf`/`not` combinators and
//! annotations. Such a schema is checked by `Shape`, a direct reading of those keywords, and the
//! `jsonschema` validator is only built when a value fails (to word the error) or when the schema
//! uses anything else.
//!
//! Why not always `jsonschema`: building a validator checks the schema against the draft's
//! meta-schema and brings in its regular-expression engines. In a small server that is about
//! 3 MB of resident code and most of the start-up work (measured on the echo benchmark server:
//! peak RSS 10.8 → 7.9 MiB). Checking a value costs about the same either way (the criterion
//! bench `hot_path` has both). `Shape` is strict: a keyword it does not know, or a known one with a value
//! the meta-schema would not allow, sends the schema to `jsonschema` whole, so the two never
//! disagree on a schema `Shape` accepts (the tests compare them case by case).
//!
//! Without the `full-json-schema` feature there is no `jsonschema`: a value `Shape` refuses is
//! worded by `Shape::explain` (same verdict, duomcp's wording), and a schema `Shape` cannot
//! read is a [`SchemaViolation::BadSchema`] naming the keywords it uses beyond the direct part
//! (reported at registration; every value refused, none let through unchecked).
//!
//! ```
//! use duomcp_proto::schema_check::{SchemaCheck, SchemaViolation};
//! use serde_json::json;
//!
//! let check = SchemaCheck::new(json!({
//!     "type": "object",
//!     "properties": { "n": { "type": "integer", "minimum": 1 } },
//!     "required": ["n"],
//! }));
//! assert!(check.compile_error().is_none());
//! assert_eq!(check.check(&json!({ "n": 3 })), Ok(()));
//! let Err(SchemaViolation::Mismatch(why)) = check.check(&json!({ "n": 0 })) else {
//!     panic!("0 is below the minimum")
//! };
//! assert!(why.contains("/n"), "{why}");
//! ```

mod explain;

use serde_json::{Map, Number, Value};
#[cfg(feature = "full-json-schema")]
use std::sync::OnceLock;

/// A compiled schema: checks values, and words why one does not match.
pub struct SchemaCheck {
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
pub enum SchemaViolation {
    /// The schema itself is not valid JSON Schema (its compile error), or (without the
    /// `full-json-schema` feature) uses more of JSON Schema than this build checks.
    BadSchema(String),
    /// The value does not match; the problems, `; `-separated, each prefixed by its path.
    Mismatch(String),
}

impl SchemaCheck {
    /// Compiles `schema` (an object or a boolean schema).
    pub fn new(schema: Value) -> Self {
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
    pub fn from_map(schema: &Map<String, Value>) -> Self {
        Self::new(Value::Object(schema.clone()))
    }

    /// The compile error, if the schema is not valid JSON Schema (without the
    /// `full-json-schema` feature: if this build cannot check it).
    pub fn compile_error(&self) -> Option<&str> {
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
    pub fn check(&self, instance: &Value) -> Result<(), SchemaViolation> {
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
    pub fn check(&self, instance: &Value) -> Result<(), SchemaViolation> {
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

#[cfg(test)]
mod tests;
