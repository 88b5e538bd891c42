//! Proptest strategies the property tests of several modules share.

use proptest::prelude::*;
use serde_json::{Map, Value};

/// JSON without floats (whose text may not read back bit for bit), nested a few levels.
pub(crate) fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        ".{0,10}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(".{0,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A JSON object of [`json`] values.
pub(crate) fn object() -> impl Strategy<Value = Map<String, Value>> {
    proptest::collection::btree_map(".{0,6}", json(), 0..4).prop_map(|m| m.into_iter().collect())
}

/// Any JSON, floats included (for the never-panics properties).
pub(crate) fn any_json() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => json(),
        1 => any::<f64>().prop_map(Value::from),
    ]
}
