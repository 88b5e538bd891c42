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
    let Err(SchemaViolation::Mismatch(problems)) = check.check(&json!({"text": 1, "n": -1})) else {
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
    let why = shape.explain(&json!({"text": 1, "n": -1.5, "tags": ["a", "c"], "a/b~": 0, "x": 1}));
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
