//! A request's `params`, split once into its top-level members.
//!
//! The dispatcher needs `_meta` before it knows the method's parameter type (it decides the era
//! and, in 2026-07-28, validates the request), and then the typed parameters. Reading the
//! members once, each kept as raw JSON, serves both: `_meta` is looked up by name and the typed
//! parameters are built from the other members, so neither `_meta` nor the rest is scanned a
//! second time.

use crate::era::modern::MetaFields;
use crate::era::ProtocolError;
use crate::jsonrpc::{self, Params};
use serde::de::{self, value::MapDeserializer, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use smallvec::SmallVec;
use std::borrow::Cow;
use std::fmt;

/// The top-level members of a request's `params` object, as raw JSON.
#[derive(Default)]
pub(crate) struct ParamsIndex<'a> {
    raw: Option<&'a str>,
    /// Each member's name and raw JSON value.
    members: SmallVec<[(Key<'a>, &'a str); 6]>,
    /// `_meta` as the decoder read it, as its fields (it is then not among `members`).
    fields: Option<MetaFields<'a>>,
    /// `_meta` was there and read as its fields (by the decoder or `read_with_meta`).
    meta_as_fields: bool,
}

/// A member name: borrowed from the message unless it had escapes.
struct Key<'a>(Cow<'a, str>);

impl<'a> ParamsIndex<'a> {
    /// The members of `params` (`None`: no params): as the decoder found them, when it split
    /// them ([`Params::members`]), or else read from its text ([`read_text`](Self::read_text)).
    pub(crate) fn read(params: Option<&'a Params>) -> Result<Self, serde_json::Error> {
        let Some(params) = params else {
            return Ok(ParamsIndex::default());
        };
        match params.members() {
            Some(members) => {
                let fields = params.meta_fields();
                Ok(ParamsIndex {
                    raw: Some(params.get()),
                    members: members.map(|(k, v)| (Key(Cow::Borrowed(k)), v)).collect(),
                    meta_as_fields: fields.is_some(),
                    fields,
                })
            }
            None => Self::read_text(params.get()),
        }
    }

    /// Splits the JSON text of `params` (an object, as `decode` guarantees) into its members.
    pub(crate) fn read_text(text: &'a str) -> Result<Self, serde_json::Error> {
        let members = serde_json::from_str::<Members<'a>>(text)?.0;
        Ok(ParamsIndex {
            raw: Some(text),
            members,
            fields: None,
            meta_as_fields: false,
        })
    }

    /// [`read`](Self::read), with `_meta`'s fields ([`MetaFields`]) put in `meta`, read in
    /// the same pass as the members instead of `_meta` being kept raw for a reading of its own:
    /// one walk over its bytes instead of two. The index then has no raw `_meta`
    /// ([`meta`](Self::meta) is `None`).
    ///
    /// When that pass fails anywhere (malformed members or `_meta`), `params` is read the
    /// two-pass way, which keeps the raw `_meta` whose reading words the error: the results
    /// are those of [`read`](Self::read) and [`MetaFields::parse`] on a well-formed `params`
    /// and on a malformed one alike (`_meta` strictly: an object, never an array).
    ///
    /// A `params` the decoder split has its members and `_meta`'s fields already: nothing is
    /// read then.
    pub(crate) fn read_with_meta(
        params: Option<&'a Params>,
        meta: &mut Option<Result<MetaFields<'a>, serde_json::Error>>,
    ) -> Result<Self, serde_json::Error> {
        let Some(params) = params else {
            return Ok(ParamsIndex::default());
        };
        if let Some(members) = params.members() {
            *meta = params.meta_fields().map(Ok);
            return Ok(ParamsIndex {
                raw: Some(params.get()),
                members: members.map(|(k, v)| (Key(Cow::Borrowed(k)), v)).collect(),
                fields: None,
                meta_as_fields: meta.is_some(),
            });
        }
        let raw = params.get();
        // Filled in place (the index and the fields are large to move).
        let mut index = ParamsIndex {
            raw: Some(raw),
            members: SmallVec::new(),
            fields: None,
            meta_as_fields: false,
        };
        let mut de = serde_json::Deserializer::from_str(raw);
        let fill = MembersAndMeta {
            members: &mut index.members,
            meta,
        };
        if de.deserialize_map(fill).and_then(|()| de.end()).is_ok() {
            index.meta_as_fields = meta.is_some();
            return Ok(index);
        }
        let index = Self::read_text(raw)?;
        *meta = index.meta().map(MetaFields::parse);
        Ok(index)
    }

    /// The member `name`, if present (the first one, if it repeats).
    pub(crate) fn get(&self, name: &str) -> Option<&'a str> {
        self.members
            .iter()
            .find(|(k, _)| k.0 == name)
            .map(|(_, v)| *v)
    }

    /// Every member, in the order of the text (names unescaped).
    pub(crate) fn members(&self) -> impl Iterator<Item = (&str, &'a str)> + '_ {
        self.members.iter().map(|(k, v)| (&*k.0, *v))
    }

    /// `_meta`'s raw text, if present and kept raw (not when the decoder or
    /// [`read_with_meta`](Self::read_with_meta) read it as its fields: see
    /// [`meta_text`](Self::meta_text)).
    pub(crate) fn meta(&self) -> Option<&'a str> {
        self.get("_meta")
    }

    /// `_meta`'s raw text, if present, wherever it went: read again from the text of `params`
    /// when it was read as its fields (for telemetry, which propagates its trace context).
    pub(crate) fn meta_text(&self) -> Option<&'a str> {
        match self.meta() {
            Some(meta) => Some(meta),
            None if self.meta_as_fields => Self::read_text(self.raw?).ok()?.meta(),
            None => None,
        }
    }

    /// `_meta`'s fields, taken out of the index: as the decoder read them, or read now from
    /// the raw `_meta` (`None`: no `_meta`; `Some(Err)`: its fields do not read).
    pub(crate) fn take_meta(&mut self) -> Option<Result<MetaFields<'a>, serde_json::Error>> {
        match self.fields.take() {
            Some(fields) => Some(Ok(fields)),
            None => self.meta().map(MetaFields::parse),
        }
    }

    /// The progress token `_meta` carries (for a 2025-11-25 request, whose `_meta` is read
    /// for nothing else).
    pub(crate) fn progress_token(&self) -> Option<duomcp_schema::ProgressToken> {
        #[derive(serde::Deserialize)]
        struct M {
            #[serde(rename = "progressToken", default)]
            progress_token: Option<duomcp_schema::ProgressToken>,
        }
        match &self.fields {
            Some(fields) => fields.progress_token().cloned(),
            None => serde_json::from_str::<M>(self.meta()?).ok()?.progress_token,
        }
    }

    /// The typed parameters of a method, from the members other than `_meta` (which no
    /// parameter type reads). On a failure the raw text is parsed again by
    /// [`jsonrpc::parse_params`], which words the error with the path of the member at fault.
    /// The parameters may borrow from the text (a `Cow<str>` field marked `borrow`).
    pub(crate) fn parse<T: Deserialize<'a>>(&self) -> Result<T, ProtocolError> {
        let members = self
            .members
            .iter()
            .filter(|(k, _)| k.0 != "_meta")
            // Values are read strictly: a struct member is an object, never an array.
            .map(|(k, v)| (KeyRef(&k.0), duomcp_schema::strict::StrictStr(v)));
        match T::deserialize(MapDeserializer::<_, serde_json::Error>::new(members)) {
            Ok(typed) => Ok(typed),
            Err(_) => {
                jsonrpc::parse_params(self.raw).map_err(|e| ProtocolError::InvalidParams(e.message))
            }
        }
    }
}

/// A member name handed to the typed deserializer.
struct KeyRef<'k>(&'k str);

impl<'de, 'k> de::IntoDeserializer<'de, serde_json::Error> for KeyRef<'k> {
    type Deserializer = de::value::StrDeserializer<'k, serde_json::Error>;
    fn into_deserializer(self) -> Self::Deserializer {
        de::value::StrDeserializer::new(self.0)
    }
}

struct Members<'a>(SmallVec<[(Key<'a>, &'a str); 6]>);

/// Reads the members other than `_meta` into `members`, and `_meta` as its fields into `meta`.
struct MembersAndMeta<'r, 'a> {
    members: &'r mut SmallVec<[(Key<'a>, &'a str); 6]>,
    meta: &'r mut Option<Result<MetaFields<'a>, serde_json::Error>>,
}

impl<'de> Visitor<'de> for MembersAndMeta<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Key<'de>>()? {
            if key.0 == "_meta" {
                if self.meta.is_some() {
                    return Err(de::Error::duplicate_field("_meta"));
                }
                let seed = duomcp_schema::strict::Seed::<MetaFields<'de>>::default();
                *self.meta = Some(Ok(map.next_value_seed(seed)?));
            } else {
                let value: &'de RawValue = map.next_value()?;
                self.members.push((key, value.get()));
            }
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members: SmallVec<[(Key<'de>, &'de str); 6]> = SmallVec::new();
                while let Some(key) = map.next_key::<Key<'de>>()? {
                    // As a typed `_meta` field would: a repeated one is an error.
                    if key.0 == "_meta" && members.iter().any(|(k, _)| k.0 == "_meta") {
                        return Err(de::Error::duplicate_field("_meta"));
                    }
                    let value: &'de RawValue = map.next_value()?;
                    members.push((key, value.get()));
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(MembersVisitor)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::{json, Value};

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Call {
        name: String,
        #[serde(default)]
        arguments: Option<Value>,
    }

    /// `params` as the decoder hands it over (split into its members where it can).
    fn raw(text: &str) -> Params {
        let line = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{text}}}"#);
        match jsonrpc::decode(line.as_bytes()) {
            Ok(jsonrpc::Incoming::Request(r)) => r.params.unwrap(),
            other => panic!("{other:?}"),
        }
    }

    /// `params` not split (what a hand-built request carries).
    fn unsplit(text: &str) -> Params {
        Params::from_raw(RawValue::from_string(text.to_owned()).unwrap())
    }

    #[test]
    fn split_and_unsplit_params_give_the_same_members() {
        for text in [
            r#"{"name":"echo","_meta":{"progressToken":1},"arguments":{"text":"hi"}}"#,
            r#" { "name" : "echo" , "arguments" : [ 1 , 2 ] } "#,
            "{}",
            r#"{"na\u006de":"echo"}"#,
        ] {
            let (split, whole) = (raw(text), unsplit(text));
            // The members other than `_meta`, and `_meta`'s progress token and raw text.
            let members = |p: &Params| {
                let mut index = ParamsIndex::read(Some(p)).unwrap();
                let meta = index.meta_text().map(str::to_owned);
                let token = index
                    .take_meta()
                    .map(|m| m.unwrap().progress_token().cloned());
                let members: Vec<(String, String)> = index
                    .members()
                    .filter(|(k, _)| *k != "_meta")
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect();
                (members, meta, token)
            };
            assert_eq!(members(&split), members(&whole), "{text}");
        }
        // The decoder split the plain ones.
        assert!(raw(r#"{"name":"echo"}"#).members().is_some());
        assert!(unsplit(r#"{"name":"echo"}"#).members().is_none());
    }

    #[test]
    fn members_give_meta_and_the_typed_params_alike() {
        let text =
            r#"{"name":"echo","_meta":{"progressToken":1},"arguments":{"text":"hi"},"extra":[1]}"#;
        let params = raw(text);
        let index = ParamsIndex::read(Some(&params)).unwrap();
        assert_eq!(index.meta_text().unwrap(), r#"{"progressToken":1}"#);
        assert_eq!(index.progress_token(), Some(1.into()));
        assert_eq!(index.get("extra").unwrap(), "[1]");
        let call: Call = index.parse().unwrap();
        assert_eq!(call, serde_json::from_str::<Call>(text).unwrap());
        assert_eq!(call.arguments, Some(json!({"text": "hi"})));
    }

    #[test]
    fn escaped_member_names_are_read() {
        let params = raw(r#"{"na\u006de":"echo","\u005fmeta":{}}"#);
        let index = ParamsIndex::read(Some(&params)).unwrap();
        assert!(index.meta().is_some());
        assert_eq!(index.parse::<Call>().unwrap().name, "echo");
    }

    #[test]
    fn a_repeated_meta_is_an_error_and_repeated_fields_stay_one() {
        let params = raw(r#"{"_meta":{},"_meta":{}}"#);
        assert!(ParamsIndex::read(Some(&params)).is_err());
        let params = raw(r#"{"name":"a","name":"b"}"#);
        let index = ParamsIndex::read(Some(&params)).unwrap();
        let err = index.parse::<Call>().unwrap_err();
        assert!(err.to_string().contains("duplicate field `name`"), "{err}");
    }

    /// What the one-pass reading gives, as the two-pass one would read it.
    fn both_ways(text: &str) -> (Vec<(String, String)>, Option<String>) {
        let params = unsplit(text);
        let mut meta = None;
        let index = ParamsIndex::read_with_meta(Some(&params), &mut meta).unwrap();
        let meta = meta.map(|m| m.unwrap());
        let two = ParamsIndex::read(Some(&params)).unwrap();
        let members = |i: &ParamsIndex<'_>| -> Vec<(String, String)> {
            i.members()
                .filter(|(k, _)| *k != "_meta")
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect()
        };
        assert_eq!(members(&index), members(&two), "{text}");
        // Split by the decoder, the members are the same and `_meta` is read on its own.
        let split = raw(text);
        let mut split_meta = None;
        let by_split = ParamsIndex::read_with_meta(Some(&split), &mut split_meta).unwrap();
        assert_eq!(members(&by_split), members(&two), "{text}");
        assert_eq!(
            split_meta.map(|m| m.unwrap().protocol_version().map(str::to_owned)),
            meta.as_ref()
                .map(|m| m.protocol_version().map(str::to_owned))
        );
        assert!(index.meta().is_none(), "no raw `_meta` is kept");
        let fields = two.meta().map(|m| MetaFields::parse(m).unwrap());
        assert_eq!(meta.is_some(), fields.is_some());
        if let (Some(one), Some(two)) = (&meta, &fields) {
            assert_eq!(one.protocol_version(), two.protocol_version());
            assert_eq!(one.progress_token(), two.progress_token());
        }
        (
            members(&index),
            meta.and_then(|m| m.protocol_version().map(str::to_owned)),
        )
    }

    #[test]
    fn meta_read_with_the_members_reads_as_two_passes_do() {
        let (members, version) = both_ways(
            r#"{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":"p","x":[1]},"arguments":{"text":"hi"}}"#,
        );
        assert_eq!(members.len(), 2);
        assert_eq!(version.as_deref(), Some("2026-07-28"));
        // Escaped names, no `_meta`, a `_meta` without a version.
        let escaped = both_ways(r#"{"na\u006de":"echo","\u005fmeta":{"progressToken":1}}"#);
        assert_eq!(escaped.0, [("name".to_owned(), r#""echo""#.to_owned())]);
        assert_eq!(both_ways(r#"{"name":"echo"}"#).1, None);
        assert_eq!(both_ways(r#"{"_meta":{"progressToken":7}}"#).1, None);
    }

    #[test]
    fn a_meta_the_one_pass_cannot_read_is_read_the_two_pass_way() {
        // An array is not an object (serde alone would read the fields by position), a version
        // of the wrong type, `null`, a bad log level: the one pass gives up, and the two-pass
        // reading gives the raw `_meta` and the error its reading words.
        for text in [
            r#"{"_meta":["2026-07-28"]}"#,
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":5}}"#,
            r#"{"_meta":null}"#,
            r#"{"_meta":{"io.modelcontextprotocol/logLevel":"loud"}}"#,
        ] {
            let params = unsplit(text);
            let mut meta = None;
            let index = ParamsIndex::read_with_meta(Some(&params), &mut meta).unwrap();
            let raw_meta = index.meta().expect("the raw `_meta` is kept for the error");
            let want = MetaFields::parse(raw_meta).err().map(|e| e.to_string());
            let got = meta.expect("a `_meta`").err().map(|e| e.to_string());
            assert_eq!((got.is_some(), got), (true, want), "{text}");
        }
        // A repeated `_meta` is the members' error, as before.
        let params = raw(r#"{"_meta":{},"_meta":{}}"#);
        let mut meta = None;
        let err = ParamsIndex::read_with_meta(Some(&params), &mut meta)
            .err()
            .unwrap();
        assert!(err.to_string().contains("duplicate field `_meta`"), "{err}");
        let mut meta = None;
        assert!(ParamsIndex::read_with_meta(None, &mut meta).is_ok_and(|i| i.meta().is_none()));
        assert!(meta.is_none());
    }

    #[test]
    fn a_type_error_names_the_member_at_fault() {
        let params = raw(r#"{"name":5,"_meta":{}}"#);
        let index = ParamsIndex::read(Some(&params)).unwrap();
        let err = index.parse::<Call>().unwrap_err().to_string();
        assert!(
            err.contains("Invalid params: `name`: invalid type"),
            "{err}"
        );
        let index = ParamsIndex::read(None).unwrap();
        let err = index.parse::<Call>().unwrap_err().to_string();
        assert!(err.contains("missing field `name`"), "{err}");
    }
}
