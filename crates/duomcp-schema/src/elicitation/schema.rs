//! The primitive JSON Schema subset allowed in elicitation forms.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ArrayTypeTag, BooleanTypeTag, StringTypeTag};
use crate::common::{de_util, JsonObject};

/// Restricted schema definition of one form field (`PrimitiveSchemaDefinition`).
///
/// Deserialisation classifies by `type` and shape: `string` with `oneOf` → titled
/// single-select, with `enum` + `enumNames` → legacy titled, with `enum` → untitled
/// single-select, otherwise plain string; `number`/`integer` → number; `boolean`;
/// `array` whose `items` has `anyOf` → titled multi-select, otherwise untitled multi-select.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum PrimitiveSchemaDefinition {
    /// A string field.
    String(StringSchema),
    /// A number or integer field.
    Number(NumberSchema),
    /// A boolean field.
    Boolean(BooleanSchema),
    /// Single choice among plain values.
    UntitledSingleSelectEnum(UntitledSingleSelectEnumSchema),
    /// Single choice among titled values.
    TitledSingleSelectEnum(TitledSingleSelectEnumSchema),
    /// Multiple choice among plain values.
    UntitledMultiSelectEnum(UntitledMultiSelectEnumSchema),
    /// Multiple choice among titled values.
    TitledMultiSelectEnum(TitledMultiSelectEnumSchema),
    /// Single choice with display names in `enumNames` (deprecated form).
    LegacyTitledEnum(LegacyTitledEnumSchema),
}

/// Any enum field schema (`EnumSchema`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum EnumSchema {
    /// Single choice among plain values.
    UntitledSingleSelect(UntitledSingleSelectEnumSchema),
    /// Single choice among titled values.
    TitledSingleSelect(TitledSingleSelectEnumSchema),
    /// Multiple choice among plain values.
    UntitledMultiSelect(UntitledMultiSelectEnumSchema),
    /// Multiple choice among titled values.
    TitledMultiSelect(TitledMultiSelectEnumSchema),
    /// Single choice with display names in `enumNames` (deprecated form).
    LegacyTitled(LegacyTitledEnumSchema),
}

/// A single-select enum field schema (`SingleSelectEnumSchema`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SingleSelectEnumSchema {
    /// Plain values.
    Untitled(UntitledSingleSelectEnumSchema),
    /// Titled values.
    Titled(TitledSingleSelectEnumSchema),
}

/// A multi-select enum field schema (`MultiSelectEnumSchema`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MultiSelectEnumSchema {
    /// Plain values.
    Untitled(UntitledMultiSelectEnumSchema),
    /// Titled values.
    Titled(TitledMultiSelectEnumSchema),
}

/// A string field (`StringSchema`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StringSchema {
    /// Always `"string"`.
    pub r#type: StringTypeTag,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Maximum length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// Expected format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<StringFormat>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Formats a [`StringSchema`] may require.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StringFormat {
    /// An e-mail address.
    Email,
    /// A URI.
    Uri,
    /// A calendar date.
    Date,
    /// A date and time.
    DateTime,
}

/// A number field (`NumberSchema`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NumberSchema {
    /// `"number"` or `"integer"`.
    pub r#type: NumberSchemaType,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum value.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::common::num::opt_f64"
    )]
    pub minimum: Option<f64>,
    /// Maximum value.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::common::num::opt_f64"
    )]
    pub maximum: Option<f64>,
    /// Default value.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::common::num::opt_f64"
    )]
    pub default: Option<f64>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// The `type` of a [`NumberSchema`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NumberSchemaType {
    /// Any number.
    #[default]
    Number,
    /// Integers only.
    Integer,
}

/// A boolean field (`BooleanSchema`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BooleanSchema {
    /// Always `"boolean"`.
    pub r#type: BooleanTypeTag,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Single-selection enumeration without display titles (`UntitledSingleSelectEnumSchema`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UntitledSingleSelectEnumSchema {
    /// Always `"string"`.
    pub r#type: StringTypeTag,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The allowed values.
    pub r#enum: Vec<String>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Single-selection enumeration with a display title per value (`TitledSingleSelectEnumSchema`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledSingleSelectEnumSchema {
    /// Always `"string"`.
    pub r#type: StringTypeTag,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The allowed values with their titles.
    pub one_of: Vec<EnumOption>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Multiple-selection enumeration without display titles (`UntitledMultiSelectEnumSchema`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntitledMultiSelectEnumSchema {
    /// Always `"array"`.
    pub r#type: ArrayTypeTag,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum number of selections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Maximum number of selections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The allowed item values.
    pub items: UntitledEnumItems,
    /// Default selections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Multiple-selection enumeration with a display title per value (`TitledMultiSelectEnumSchema`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledMultiSelectEnumSchema {
    /// Always `"array"`.
    pub r#type: ArrayTypeTag,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum number of selections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Maximum number of selections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The allowed item values with their titles.
    pub items: TitledEnumItems,
    /// Default selections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// Deprecated single-select enumeration with display names in `enumNames`
/// (`LegacyTitledEnumSchema`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LegacyTitledEnumSchema {
    /// Always `"string"`.
    pub r#type: StringTypeTag,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The allowed values.
    pub r#enum: Vec<String>,
    /// Display names of the values, in the same order (non-standard).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enum_names: Option<Vec<String>>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// One titled choice: a value and its display title (`{const, title}`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct EnumOption {
    /// The value.
    pub r#const: String,
    /// The display title.
    pub title: String,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// `items` of an untitled multi-select: `{type: "string", enum: [...]}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UntitledEnumItems {
    /// Always `"string"`.
    pub r#type: StringTypeTag,
    /// The allowed values.
    pub r#enum: Vec<String>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

/// `items` of a titled multi-select: `{anyOf: [{const, title}, ...]}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledEnumItems {
    /// The allowed values with their titles.
    pub any_of: Vec<EnumOption>,
    /// Unknown keys, kept verbatim.
    #[serde(flatten, default, skip_serializing_if = "JsonObject::is_empty")]
    pub extra: JsonObject,
}

impl StringSchema {
    /// A plain string field.
    pub fn new() -> Self {
        Self::default()
    }
}

impl BooleanSchema {
    /// A boolean field.
    pub fn new() -> Self {
        Self::default()
    }
}

impl NumberSchema {
    /// A number (`Number`) or integer (`Integer`) field.
    pub fn new(r#type: NumberSchemaType) -> Self {
        Self {
            r#type,
            ..Self::default()
        }
    }
}

impl UntitledSingleSelectEnumSchema {
    /// A single choice among `values`.
    pub fn new(values: Vec<String>) -> Self {
        Self {
            r#enum: values,
            ..Self::default()
        }
    }
}

/// The concrete kind of a primitive schema, found from its `type` and shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    String,
    Number,
    Boolean,
    UntitledSingle,
    TitledSingle,
    UntitledMulti,
    TitledMulti,
    LegacyTitled,
}

fn classify(map: &JsonObject) -> Result<Kind, String> {
    let has = |k: &str| map.contains_key(k);
    match map.get("type") {
        Some(Value::String(t)) => match t.as_str() {
            "string" if has("oneOf") => Ok(Kind::TitledSingle),
            "string" if has("enum") && has("enumNames") => Ok(Kind::LegacyTitled),
            "string" if has("enum") => Ok(Kind::UntitledSingle),
            "string" => Ok(Kind::String),
            "number" | "integer" => Ok(Kind::Number),
            "boolean" => Ok(Kind::Boolean),
            "array" => {
                let titled = map
                    .get("items")
                    .and_then(Value::as_object)
                    .is_some_and(|items| items.contains_key("anyOf"));
                Ok(if titled {
                    Kind::TitledMulti
                } else {
                    Kind::UntitledMulti
                })
            }
            other => Err(format!("unsupported primitive schema type {other:?}")),
        },
        Some(other) => Err(format!(
            "primitive schema `type` must be a string, found {}",
            de_util::kind(other)
        )),
        None => Err("primitive schema has no `type`".into()),
    }
}

fn classify_err<E: de::Error>(map: &JsonObject) -> Result<Kind, E> {
    classify(map).map_err(E::custom)
}

impl<'de> Deserialize<'de> for PrimitiveSchemaDefinition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = de_util::object(d, "PrimitiveSchemaDefinition")?;
        Ok(match classify_err(&map)? {
            Kind::String => Self::String(de_util::convert(map, "StringSchema")?),
            Kind::Number => Self::Number(de_util::convert(map, "NumberSchema")?),
            Kind::Boolean => Self::Boolean(de_util::convert(map, "BooleanSchema")?),
            Kind::UntitledSingle => Self::UntitledSingleSelectEnum(de_util::convert(
                map,
                "UntitledSingleSelectEnumSchema",
            )?),
            Kind::TitledSingle => {
                Self::TitledSingleSelectEnum(de_util::convert(map, "TitledSingleSelectEnumSchema")?)
            }
            Kind::UntitledMulti => Self::UntitledMultiSelectEnum(de_util::convert(
                map,
                "UntitledMultiSelectEnumSchema",
            )?),
            Kind::TitledMulti => {
                Self::TitledMultiSelectEnum(de_util::convert(map, "TitledMultiSelectEnumSchema")?)
            }
            Kind::LegacyTitled => {
                Self::LegacyTitledEnum(de_util::convert(map, "LegacyTitledEnumSchema")?)
            }
        })
    }
}

impl<'de> Deserialize<'de> for EnumSchema {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = de_util::object(d, "EnumSchema")?;
        Ok(match classify_err(&map)? {
            Kind::UntitledSingle => {
                Self::UntitledSingleSelect(de_util::convert(map, "UntitledSingleSelectEnumSchema")?)
            }
            Kind::TitledSingle => {
                Self::TitledSingleSelect(de_util::convert(map, "TitledSingleSelectEnumSchema")?)
            }
            Kind::UntitledMulti => {
                Self::UntitledMultiSelect(de_util::convert(map, "UntitledMultiSelectEnumSchema")?)
            }
            Kind::TitledMulti => {
                Self::TitledMultiSelect(de_util::convert(map, "TitledMultiSelectEnumSchema")?)
            }
            Kind::LegacyTitled => {
                Self::LegacyTitled(de_util::convert(map, "LegacyTitledEnumSchema")?)
            }
            Kind::String | Kind::Number | Kind::Boolean => {
                return Err(de::Error::custom("not an enum schema: no `enum`/`oneOf`"))
            }
        })
    }
}

impl<'de> Deserialize<'de> for SingleSelectEnumSchema {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = de_util::object(d, "SingleSelectEnumSchema")?;
        match classify_err(&map)? {
            Kind::UntitledSingle => {
                de_util::convert(map, "UntitledSingleSelectEnumSchema").map(Self::Untitled)
            }
            Kind::TitledSingle => {
                de_util::convert(map, "TitledSingleSelectEnumSchema").map(Self::Titled)
            }
            _ => Err(de::Error::custom(
                "not a single-select enum schema: expected `type: \"string\"` with `enum` or `oneOf`",
            )),
        }
    }
}

impl<'de> Deserialize<'de> for MultiSelectEnumSchema {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = de_util::object(d, "MultiSelectEnumSchema")?;
        match classify_err(&map)? {
            Kind::UntitledMulti => {
                de_util::convert(map, "UntitledMultiSelectEnumSchema").map(Self::Untitled)
            }
            Kind::TitledMulti => {
                de_util::convert(map, "TitledMultiSelectEnumSchema").map(Self::Titled)
            }
            _ => Err(de::Error::custom(
                "not a multi-select enum schema: expected `type: \"array\"`",
            )),
        }
    }
}

macro_rules! into_primitive {
    ($($ty:ty => $variant:ident),* $(,)?) => {$(
        impl From<$ty> for PrimitiveSchemaDefinition {
            fn from(s: $ty) -> Self {
                Self::$variant(s)
            }
        }
    )*};
}
into_primitive!(
    StringSchema => String,
    NumberSchema => Number,
    BooleanSchema => Boolean,
    UntitledSingleSelectEnumSchema => UntitledSingleSelectEnum,
    TitledSingleSelectEnumSchema => TitledSingleSelectEnum,
    UntitledMultiSelectEnumSchema => UntitledMultiSelectEnum,
    TitledMultiSelectEnumSchema => TitledMultiSelectEnum,
    LegacyTitledEnumSchema => LegacyTitledEnum,
);

impl From<EnumSchema> for PrimitiveSchemaDefinition {
    fn from(s: EnumSchema) -> Self {
        match s {
            EnumSchema::UntitledSingleSelect(s) => s.into(),
            EnumSchema::TitledSingleSelect(s) => s.into(),
            EnumSchema::UntitledMultiSelect(s) => s.into(),
            EnumSchema::TitledMultiSelect(s) => s.into(),
            EnumSchema::LegacyTitled(s) => s.into(),
        }
    }
}
