//! `SKILL.md` frontmatter: the YAML between the leading `---` lines, as a JSON object.

use serde_json::{Map, Number, Value};
use yaml_rust2::{Yaml, YamlLoader};

/// Why a `SKILL.md` has no usable frontmatter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FrontmatterError {
    /// The file does not start with a `---` line followed later by a closing `---` line.
    Missing,
    /// The YAML does not parse.
    Yaml(String),
    /// The YAML is not a mapping, or holds a value JSON cannot express.
    Shape(String),
}

impl std::fmt::Display for FrontmatterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrontmatterError::Missing => f.write_str(
                "SKILL.md must begin with YAML frontmatter: a `---` line, the YAML, and a closing `---` line",
            ),
            FrontmatterError::Yaml(e) => write!(f, "the frontmatter is not valid YAML: {e}"),
            FrontmatterError::Shape(e) => write!(f, "the frontmatter {e}"),
        }
    }
}

/// The YAML text between the opening and closing `---` lines.
fn block(text: &str) -> Option<&str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\r\n")
        .or_else(|| text.strip_prefix("---\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.trim_end_matches([' ', '\t']) == "---" {
            return Some(&rest[..offset]);
        }
        offset += line.len();
    }
    None
}

fn scalar_key(key: &Yaml) -> Result<String, FrontmatterError> {
    Ok(match key {
        Yaml::String(s) | Yaml::Real(s) => s.clone(),
        Yaml::Integer(i) => i.to_string(),
        Yaml::Boolean(b) => b.to_string(),
        Yaml::Null => "null".to_owned(),
        _ => {
            return Err(FrontmatterError::Shape(
                "has a mapping key that is not a scalar".into(),
            ))
        }
    })
}

fn to_json(y: &Yaml) -> Result<Value, FrontmatterError> {
    Ok(match y {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Integer(i) => Value::Number((*i).into()),
        Yaml::Real(s) => {
            let f: f64 = match s.trim_start_matches('+') {
                ".inf" | ".Inf" | ".INF" | "-.inf" | "-.Inf" | "-.INF" | ".nan" | ".NaN"
                | ".NAN" => {
                    return Err(FrontmatterError::Shape(format!(
                        "holds {s}, which JSON cannot express"
                    )))
                }
                t => t
                    .parse()
                    .map_err(|_| FrontmatterError::Shape(format!("holds a bad number {s}")))?,
            };
            Number::from_f64(f).map(Value::Number).ok_or_else(|| {
                FrontmatterError::Shape(format!("holds {s}, which JSON cannot express"))
            })?
        }
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Array(a) => Value::Array(a.iter().map(to_json).collect::<Result<_, _>>()?),
        Yaml::Hash(h) => {
            let mut m = Map::new();
            for (k, v) in h {
                m.insert(scalar_key(k)?, to_json(v)?);
            }
            Value::Object(m)
        }
        Yaml::Alias(_) => {
            return Err(FrontmatterError::Shape(
                "uses a YAML alias, which is not supported".into(),
            ))
        }
        Yaml::BadValue => return Err(FrontmatterError::Shape("holds an invalid value".into())),
    })
}

/// Parses the frontmatter of a `SKILL.md` into a JSON object, keys in the author's order.
pub(crate) fn parse(text: &str) -> Result<Map<String, Value>, FrontmatterError> {
    let yaml = block(text).ok_or(FrontmatterError::Missing)?;
    let docs =
        YamlLoader::load_from_str(yaml).map_err(|e| FrontmatterError::Yaml(e.to_string()))?;
    match docs.as_slice() {
        [doc] => match to_json(doc)? {
            Value::Object(m) => Ok(m),
            _ => Err(FrontmatterError::Shape("is not a mapping".into())),
        },
        [] => Err(FrontmatterError::Shape("is empty".into())),
        _ => Err(FrontmatterError::Shape(
            "holds more than one YAML document".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_the_leading_block_verbatim() {
        let text = "---\nname: pdf-tools\ndescription: >\n  Fill and\n  merge PDFs\nlicense: MIT\nmetadata:\n  version: \"2.1\"\n  tags: [a, b]\n  n: 3\n---\n\n# Body\n---\n";
        let fm = parse(text).unwrap();
        assert_eq!(
            Value::Object(fm.clone()),
            json!({
                "name": "pdf-tools",
                "description": "Fill and merge PDFs\n",
                "license": "MIT",
                "metadata": { "version": "2.1", "tags": ["a", "b"], "n": 3 }
            })
        );
        let keys: Vec<&str> = fm.keys().map(String::as_str).collect();
        assert_eq!(keys, ["name", "description", "license", "metadata"]);
    }

    #[test]
    fn refuses_what_is_not_frontmatter() {
        assert_eq!(parse("# no frontmatter"), Err(FrontmatterError::Missing));
        assert_eq!(parse("---\nname: x\n"), Err(FrontmatterError::Missing));
        assert!(matches!(
            parse("---\n- a\n---\n"),
            Err(FrontmatterError::Shape(_))
        ));
        assert!(matches!(
            parse("---\nname: [\n---\n"),
            Err(FrontmatterError::Yaml(_))
        ));
        assert!(parse("\u{feff}---\r\nname: x\r\n---\r\nbody").is_ok());
    }
}
