//! The schema checker (`duomcp_proto::schema_check`) against the `jsonschema` crate it stands in for.
//!
//! Structure-aware: schemas are built from the keywords the direct reading knows (with values
//! of the right and of the wrong type, and now and then one it does not know), instances from
//! a small alphabet of JSON values that hits the edges (integers as floats, large integers,
//! negative zero, duplicates). Oracle: [`SchemaCheck`]'s verdict equals `jsonschema`'s.
//! A second mode reads the schema and the instance as JSON text instead.

use crate::schema_check::SchemaCheck;
use arbitrary::{Result, Unstructured};
use serde_json::{json, Map, Value};

const KEYWORDS: &[&str] = &[
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
    "title",
    "description",
    "default",
    "examples",
    "format",
    "deprecated",
    "$schema",
    "pattern",
    "$ref",
    "$defs",
    "uniqueItems",
    "prefixItems",
];
const TYPES: &[&str] = &[
    "null", "boolean", "object", "array", "number", "string", "integer", "float",
];
const NAMES: &[&str] = &["a", "b", "c", "é", ""];

fn number(u: &mut Unstructured<'_>) -> Result<Value> {
    Ok(match u.int_in_range(0..=9)? {
        0 => json!(0),
        1 => json!(-0.0),
        2 => json!(1.0),
        3 => json!(u.int_in_range(-3i64..=3)?),
        4 => json!(u.int_in_range(-3i64..=3)? as f64 + 0.5),
        5 => json!(9007199254740993u64),
        6 => json!(9007199254740992.0),
        7 => json!(u64::MAX),
        8 => json!(i64::MIN),
        _ => json!(u.arbitrary::<f64>()?),
    })
}

fn instance(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    let pick = if depth == 0 {
        u.int_in_range(0..=3)?
    } else {
        u.int_in_range(0..=5)?
    };
    Ok(match pick {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => number(u)?,
        3 => Value::String(NAMES[u.choose_index(NAMES.len())?].repeat(u.int_in_range(0..=3)?)),
        4 => {
            let n = u.int_in_range(0..=3)?;
            Value::Array(
                (0..n)
                    .map(|_| instance(u, depth - 1))
                    .collect::<Result<_>>()?,
            )
        }
        _ => {
            let mut m = Map::new();
            for _ in 0..u.int_in_range(0..=3)? {
                m.insert(
                    NAMES[u.choose_index(NAMES.len())?].to_owned(),
                    instance(u, depth - 1)?,
                );
            }
            Value::Object(m)
        }
    })
}

fn schema(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    if depth == 0 || u.ratio(1, 6)? {
        return Ok(match u.int_in_range(0..=2)? {
            0 => json!(true),
            1 => json!(false),
            _ => json!({}),
        });
    }
    let mut m = Map::new();
    for _ in 0..u.int_in_range(1..=3)? {
        let key = KEYWORDS[u.choose_index(KEYWORDS.len())?];
        let wrong = u.ratio(1, 12)?;
        let value = if wrong {
            instance(u, 1)?
        } else {
            match key {
                "type" => {
                    if u.arbitrary()? {
                        json!(TYPES[u.choose_index(TYPES.len())?])
                    } else {
                        let n = u.int_in_range(0..=3)?;
                        Value::Array(
                            (0..n)
                                .map(|_| Ok(json!(TYPES[u.choose_index(TYPES.len())?])))
                                .collect::<Result<_>>()?,
                        )
                    }
                }
                "properties" | "$defs" => {
                    let mut p = Map::new();
                    for _ in 0..u.int_in_range(0..=3)? {
                        p.insert(
                            NAMES[u.choose_index(NAMES.len())?].to_owned(),
                            schema(u, depth - 1)?,
                        );
                    }
                    Value::Object(p)
                }
                "required" => {
                    let n = u.int_in_range(0..=3)?;
                    Value::Array(
                        (0..n)
                            .map(|_| Ok(json!(NAMES[u.choose_index(NAMES.len())?])))
                            .collect::<Result<_>>()?,
                    )
                }
                "additionalProperties" | "items" | "not" => schema(u, depth - 1)?,
                "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                    let n = u.int_in_range(0..=3)?;
                    Value::Array(
                        (0..n)
                            .map(|_| schema(u, depth - 1))
                            .collect::<Result<_>>()?,
                    )
                }
                "enum" | "examples" => {
                    let n = u.int_in_range(0..=3)?;
                    Value::Array((0..n).map(|_| instance(u, 2)).collect::<Result<_>>()?)
                }
                "const" | "default" => instance(u, 2)?,
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => number(u)?,
                "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties"
                | "maxProperties" => json!(u.int_in_range(0u64..=3)?),
                "deprecated" | "uniqueItems" => json!(u.arbitrary::<bool>()?),
                "$schema" => json!(if u.arbitrary()? {
                    "https://json-schema.org/draft/2020-12/schema"
                } else {
                    "http://json-schema.org/draft-07/schema#"
                }),
                "pattern" => json!("^a"),
                "$ref" => json!("#/$defs/a"),
                _ => json!("text"),
            }
        };
        m.insert(key.to_owned(), value);
    }
    Ok(Value::Object(m))
}

fn compare(schema: &Value, instance: &Value) {
    let ours = SchemaCheck::new(schema.clone()).check(instance).is_ok();
    let theirs = match jsonschema::validator_for(schema) {
        Ok(v) => v.is_valid(instance),
        // A schema jsonschema refuses: ours must refuse every value too.
        Err(_) => false,
    };
    assert_eq!(ours, theirs, "schema {schema}\ninstance {instance}");
}

/// Input: a mode byte, then [`arbitrary`] bytes (a generated schema and instance) or two JSON
/// texts separated by a NUL byte.
pub fn schema_check(data: &[u8]) {
    let [mode, rest @ ..] = data else { return };
    if mode % 4 == 0 {
        let mut parts = rest.splitn(2, |b| *b == 0);
        let (Some(s), Some(i)) = (parts.next(), parts.next()) else {
            return;
        };
        let (Ok(s), Ok(i)) = (
            serde_json::from_slice::<Value>(s),
            serde_json::from_slice::<Value>(i),
        ) else {
            return;
        };
        compare(&s, &i);
        return;
    }
    let mut u = Unstructured::new(rest);
    let Ok(s) = schema(&mut u, 3) else { return };
    for _ in 0..4 {
        let Ok(i) = instance(&mut u, 3) else { return };
        compare(&s, &i);
    }
}
