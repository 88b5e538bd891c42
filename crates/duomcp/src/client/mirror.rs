//! `x-mcp-header` (2026-07-28, SEP-2243): tool arguments a Streamable HTTP client mirrors into
//! `Mcp-Param-{Name}` headers.
//!
//! The annotations of a listed tool are checked once, when it is listed: a tool with an invalid
//! one is dropped from the listing (HTTP clients MUST exclude it). A call then reads the value
//! at each annotated property's exact path in the arguments and hands it to the transport,
//! which encodes it (see [`Outgoing::header_params`](super::transport::Outgoing)).

use crate::util::lock;
use duomcp_schema::Tool;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// One annotated property: the header's name part and the chain of `properties` keys to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Annotation {
    pub header: String,
    pub path: Vec<String>,
}

/// Keywords whose values are data, not schemas: an `x-mcp-header` key inside them is not an
/// annotation.
const DATA_KEYWORDS: &[&str] = &["const", "enum", "default", "examples", "example"];

/// Whether `c` is an RFC 9110 `tchar`.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// The primitive type a property declares, if it is one `x-mcp-header` may be applied to
/// (`string`, `integer`, `boolean`; a `["string", "null"]` union counts as `string`).
fn primitive_type(schema: &Map<String, Value>) -> Option<&str> {
    let allowed = |t: &str| matches!(t, "string" | "integer" | "boolean");
    match schema.get("type")? {
        Value::String(t) if allowed(t) => Some(t),
        Value::Array(types) => {
            let names: Option<Vec<&str>> = types.iter().map(Value::as_str).collect();
            let non_null: Vec<&str> = names?.into_iter().filter(|t| *t != "null").collect();
            match non_null.as_slice() {
                [one] if allowed(one) => Some(one),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Reads and checks the `x-mcp-header` annotations of an input schema.
///
/// Valid annotations sit on `string`, `integer` or `boolean` properties reachable from the root
/// through `properties` keys only, name an RFC 9110 token, and are unique regardless of case.
/// Any other `x-mcp-header` (under `items`, `oneOf`, `$defs`…, or breaking a rule) makes the
/// whole tool invalid; the error says why.
pub(crate) fn annotations(schema: &Map<String, Value>) -> Result<Vec<Annotation>, String> {
    let mut found = Vec::new();
    walk_schema(schema, true, &mut Vec::new(), &mut found)?;
    let mut seen: HashMap<String, &str> = HashMap::new();
    for a in &found {
        if let Some(first) = seen.insert(a.header.to_ascii_lowercase(), &a.header) {
            return Err(format!(
                "x-mcp-header `{}` is used twice (also as `{first}`); names must be unique regardless of case",
                a.header
            ));
        }
    }
    Ok(found)
}

/// Walks a schema node. `reachable`: the node is the root or reached through `properties` only.
fn walk_schema(
    node: &Map<String, Value>,
    reachable: bool,
    path: &mut Vec<String>,
    found: &mut Vec<Annotation>,
) -> Result<(), String> {
    if let Some(header) = node.get("x-mcp-header") {
        let where_ = if path.is_empty() {
            "the schema root".to_owned()
        } else {
            format!("property `{}`", path.join("."))
        };
        if !reachable || path.is_empty() {
            return Err(format!(
                "x-mcp-header on {where_} is not reachable through `properties` alone"
            ));
        }
        let Value::String(header) = header else {
            return Err(format!("x-mcp-header on {where_} is not a string"));
        };
        if header.is_empty() {
            return Err(format!("x-mcp-header on {where_} is empty"));
        }
        if let Some(bad) = header.chars().find(|c| !is_tchar(*c)) {
            return Err(format!(
                "x-mcp-header `{}` on {where_} is not an HTTP token (character {bad:?})",
                header.escape_debug()
            ));
        }
        if primitive_type(node).is_none() {
            return Err(format!(
                "x-mcp-header `{header}` is on {where_}, which is not of type string, integer or boolean"
            ));
        }
        found.push(Annotation {
            header: header.clone(),
            path: path.clone(),
        });
    }
    for (key, value) in node {
        if key == "x-mcp-header" || DATA_KEYWORDS.contains(&key.as_str()) {
            continue;
        }
        if key == "properties" {
            if let Value::Object(props) = value {
                for (name, prop) in props {
                    if let Value::Object(prop) = prop {
                        path.push(name.clone());
                        let r = walk_schema(prop, reachable, path, found);
                        path.pop();
                        r?;
                    }
                }
                continue;
            }
        }
        walk_unreachable(value)?;
    }
    Ok(())
}

/// Anything below a keyword other than `properties`: no annotation may appear there.
fn walk_unreachable(value: &Value) -> Result<(), String> {
    match value {
        Value::Object(node) => {
            let mut sink = Vec::new();
            walk_schema(node, false, &mut Vec::new(), &mut sink)
        }
        Value::Array(items) => items.iter().try_for_each(walk_unreachable),
        _ => Ok(()),
    }
}

/// The header values of one call: for each annotation whose argument is present and not null,
/// `(name part, text)`: strings as they are, integers in decimal, booleans `true` / `false`.
pub(crate) fn header_values(
    annotations: &[Annotation],
    arguments: &Value,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for a in annotations {
        let value = a.path.iter().try_fold(arguments, |v, key| v.get(key));
        let text = match value {
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => n.to_string(),
            Some(other) => {
                tracing::debug!(
                    header = %a.header,
                    "not mirroring an argument that is neither a string, a number nor a boolean: {other}"
                );
                continue;
            }
        };
        out.push((a.header.clone(), text));
    }
    out
}

/// The annotations of the tools listed so far, by tool name.
#[derive(Default)]
pub(crate) struct ToolHeaders {
    map: Mutex<HashMap<String, Arc<Vec<Annotation>>>>,
}

impl ToolHeaders {
    /// Drops the tools with invalid annotations (logging a warning for each) and remembers the
    /// annotations of the others.
    pub(crate) fn admit(&self, tools: &mut Vec<Tool>) {
        let mut map = lock(&self.map);
        tools.retain(|tool| match annotations(&tool.input_schema) {
            Ok(found) => {
                if found.is_empty() {
                    map.remove(&tool.name);
                } else {
                    map.insert(tool.name.clone(), Arc::new(found));
                }
                true
            }
            Err(why) => {
                tracing::warn!(tool = %tool.name, "ignoring a tool with an invalid x-mcp-header annotation: {why}");
                map.remove(&tool.name);
                false
            }
        });
    }

    /// The annotations of `tool`, if it was listed with any.
    pub(crate) fn get(&self, tool: &str) -> Option<Arc<Vec<Annotation>>> {
        lock(&self.map).get(tool).cloned()
    }

    /// Forgets everything (the tool list changed).
    pub(crate) fn clear(&self) {
        lock(&self.map).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn finds_valid_annotations_through_properties() {
        let s = schema(json!({
            "type": "object",
            "properties": {
                "region": { "type": "string", "x-mcp-header": "Region" },
                "opts": { "type": "object", "properties": {
                    "tenant": { "type": "integer", "x-mcp-header": "Tenant-Id" },
                    "x-mcp-header": { "type": "string" }
                }},
                "flag": { "type": ["boolean", "null"], "x-mcp-header": "Flag" },
                "note": { "type": "string", "default": { "x-mcp-header": "data" } }
            }
        }));
        let found = annotations(&s).unwrap();
        let names: Vec<_> = found.iter().map(|a| a.header.as_str()).collect();
        assert_eq!(names, ["Region", "Tenant-Id", "Flag"]);
        assert_eq!(found[1].path, ["opts", "tenant"]);
    }

    #[test]
    fn rejects_invalid_annotations() {
        let bad = [
            json!({ "properties": { "v": { "type": "string", "x-mcp-header": "" } } }),
            json!({ "properties": { "v": { "type": "string", "x-mcp-header": "My Region" } } }),
            json!({ "properties": { "v": { "type": "string", "x-mcp-header": "A:B" } } }),
            json!({ "properties": { "v": { "type": "string", "x-mcp-header": "Région" } } }),
            json!({ "properties": { "v": { "type": "string", "x-mcp-header": "A\t1" } } }),
            json!({ "properties": { "v": { "type": "number", "x-mcp-header": "N" } } }),
            json!({ "properties": { "v": { "type": "object", "x-mcp-header": "O" } } }),
            json!({ "properties": { "v": { "type": "null", "x-mcp-header": "O" } } }),
            json!({ "properties": { "v": { "x-mcp-header": "Untyped" } } }),
            json!({ "properties": { "v": { "type": "string", "x-mcp-header": 3 } } }),
            json!({ "properties": {
                "a": { "type": "string", "x-mcp-header": "Same" },
                "b": { "type": "string", "x-mcp-header": "same" } } }),
            json!({ "properties": { "l": { "type": "array", "items": { "type": "string", "x-mcp-header": "I" } } } }),
            json!({ "oneOf": [{ "properties": { "v": { "type": "string", "x-mcp-header": "O" } } }] }),
            json!({ "$defs": { "d": { "type": "string", "x-mcp-header": "D" } } }),
            json!({ "type": "object", "x-mcp-header": "Root" }),
        ];
        for s in bad {
            assert!(annotations(&schema(s.clone())).is_err(), "{s}");
        }
    }

    #[test]
    fn converts_values_and_omits_absent_ones() {
        let s = schema(json!({ "properties": {
            "s": { "type": "string", "x-mcp-header": "S" },
            "i": { "type": "integer", "x-mcp-header": "I" },
            "b": { "type": "boolean", "x-mcp-header": "B" },
            "n": { "type": "string", "x-mcp-header": "N" },
            "o": { "type": "object", "properties": { "deep": { "type": "string", "x-mcp-header": "Deep" } } },
            "missing": { "type": "string", "x-mcp-header": "M" }
        }}));
        let found = annotations(&s).unwrap();
        let args = json!({ "s": "x y", "i": -7, "b": false, "n": null, "o": { "deep": "d" } });
        assert_eq!(
            header_values(&found, &args),
            [
                ("S".to_owned(), "x y".to_owned()),
                ("I".to_owned(), "-7".to_owned()),
                ("B".to_owned(), "false".to_owned()),
                ("Deep".to_owned(), "d".to_owned()),
            ]
        );
    }
}
