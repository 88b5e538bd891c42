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
//! (Over 800 lines with its tests: the code is about 530 lines, the rest is the cases
//! the checks are held to.)

use serde_json::{Map, Number, Value};
use std::sync::OnceLock;

/// A compiled schema: checks values, and words why one does not match.
pub(crate) struct SchemaCheck {
    /// The schema read as a [`Shape`], when it only uses what `Shape` knows.
    shape: Option<Shape>,
    source: Value,
    /// The `jsonschema` validator: built at once when there is no shape, else on first failure.
    full: OnceLock<Result<jsonschema::Validator, String>>,
}

/// Why a value was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SchemaViolation {
    /// The schema itself is not valid JSON Schema (its compile error).
    BadSchema(String),
    /// The value does not match; the problems, `; `-separated, each prefixed by its path.
    Mismatch(String),
}

impl SchemaCheck {
    /// Compiles `schema` (an object or a boolean schema).
    pub(crate) fn new(schema: Value) -> Self {
        let shape = Shape::read_root(&schema);
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

    /// Compiles a schema given as a JSON object.
    pub(crate) fn from_map(schema: &Map<String, Value>) -> Self {
        Self::new(Value::Object(schema.clone()))
    }

    /// The compile error, if the schema is not valid JSON Schema.
    pub(crate) fn compile_error(&self) -> Option<&str> {
        match (&self.shape, self.full.get()) {
            (Some(_), _) => None,
            (None, Some(Err(e))) => Some(e),
            (None, _) => None,
        }
    }

    fn full(&self) -> &Result<jsonschema::Validator, String> {
        self.full
            .get_or_init(|| jsonschema::validator_for(&self.source).map_err(|e| e.to_string()))
    }

    /// Checks `instance`: `Ok` when it matches.
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

    /// Whether this schema is checked without the `jsonschema` validator (for tests).
    #[cfg(test)]
    pub(crate) fn is_direct(&self) -> bool {
        self.shape.is_some()
    }
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
