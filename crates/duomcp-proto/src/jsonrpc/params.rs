//! A request's `params` as the decoder hands it over: the object's JSON text, and its top-level
//! members, found in the same pass that read the envelope.

use crate::era::modern::{MetaFields, MetaSpans};
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::fmt;

/// A request's `params`: a JSON object's text, exactly as received, and (when [`decode`]
/// read the message) the places of its top-level members in that text.
///
/// [`decode`] reads the envelope and splits `params` into its members in one pass over the
/// bytes, so that the members are not looked for again: [`members`](Self::members) gives
/// each name and raw value as slices of [`get`](Self::get). `_meta` is read as its fields in
/// that pass ([`meta_fields`](Self::meta_fields)), not kept as a member. A `params` that pass
/// does not split (a member name with escapes, a repeated `_meta`, a `_meta` whose fields do
/// not read: not an object, a version that is not a string…) has no members recorded; its
/// reader then splits the text itself.
///
/// [`decode`]: super::decode
///
/// ```
/// use duomcp_proto::jsonrpc::{decode, Incoming};
/// let msg = decode(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}"#).unwrap();
/// let Incoming::Request(req) = msg else { panic!("a request") };
/// let params = req.params.unwrap();
/// assert_eq!(params.get(), r#"{"name":"echo","arguments":{"a":1}}"#);
/// let members: Vec<_> = params.members().unwrap().collect();
/// assert_eq!(members, [("name", r#""echo""#), ("arguments", r#"{"a":1}"#)]);
/// ```
#[derive(Debug)]
pub struct Params {
    text: Box<str>,
    /// `None`: not split (see the type's documentation). Boxed: a request is moved several
    /// times on its way to its handler, and this is most of its size.
    split: Option<Box<SplitAt>>,
}

/// Where the decoder found the members and `_meta`'s fields in the text.
#[derive(Debug)]
struct SplitAt {
    members: Spans,
    /// `_meta`'s fields, when present.
    meta: Option<MetaSpans>,
}

/// The members' places in the text: (name start, name end, value start, value end).
type Spans = smallvec::SmallVec<[[u32; 4]; 4]>;

impl Params {
    /// `params` from its raw JSON text, members not split.
    pub fn from_raw(raw: Box<RawValue>) -> Self {
        Params {
            text: Box::<str>::from(raw),
            split: None,
        }
    }

    /// The object's JSON text.
    pub fn get(&self) -> &str {
        &self.text
    }

    /// Each top-level member's name (it has no escapes) and raw JSON value, in the order of the
    /// text, `_meta` excepted, when the decoder split them; `None` when it did not.
    pub fn members(&self) -> Option<impl ExactSizeIterator<Item = (&str, &str)> + '_> {
        let text = &*self.text;
        let slice = |a: u32, b: u32| text.get(a as usize..b as usize).unwrap_or_default();
        self.split.as_ref().map(|split| {
            split
                .members
                .iter()
                .map(move |&[ks, ke, vs, ve]| (slice(ks, ke), slice(vs, ve)))
        })
    }

    /// The fields of `_meta`, when the decoder split `params` and `_meta` is there.
    pub fn meta_fields(&self) -> Option<MetaFields<'_>> {
        let meta = self.split.as_ref()?.meta.as_ref()?;
        Some(meta.fields(&self.text))
    }

    /// Copies `params` out of the message `text`, where `split` found its members and the
    /// object closes before `close` (the next member's name, or the end of the text when
    /// `params` is the envelope's last member); `None` when the object's place cannot be told
    /// (the caller then reads `params` as one raw value).
    pub(super) fn from_split(text: &str, split: Split<'_>, close: Option<&str>) -> Option<Self> {
        let base = text.as_ptr() as usize;
        let at = |s: &str| (s.as_ptr() as usize).checked_sub(base);
        let Some(first) = split.first else {
            // `{}` (the whitespace inside it, if any, is not kept).
            return Some(Params {
                text: "{}".into(),
                split: Some(Box::new(SplitAt {
                    members: Spans::new(),
                    meta: None,
                })),
            });
        };
        let bytes = text.as_bytes();
        // The object opens before its first name's opening quote, with only whitespace between.
        let quote = at(first)?.checked_sub(1)?;
        let open = bytes
            .get(..quote)?
            .iter()
            .rposition(|b| !b.is_ascii_whitespace())?;
        // It closes before the next member of the envelope (`, "name"`), or before the
        // envelope's own closing brace, with only whitespace between.
        let back = |end: usize| {
            bytes
                .get(..end)?
                .iter()
                .rposition(|b| !b.is_ascii_whitespace())
        };
        let close = match close {
            Some(next) => {
                let comma = back(at(next)?.checked_sub(1)?)?;
                (bytes.get(comma) == Some(&b',')).then_some(())?;
                back(comma)?
            }
            None => back(back(bytes.len())?)?,
        };
        if bytes.get(open) != Some(&b'{') || bytes.get(close) != Some(&b'}') {
            return None;
        }
        let span = |s: &str| -> Option<[u32; 2]> {
            let start = at(s)?.checked_sub(open)?;
            Some([
                u32::try_from(start).ok()?,
                u32::try_from(start + s.len()).ok()?,
            ])
        };
        let mut spans = Spans::with_capacity(split.members.len());
        for (name, value) in &split.members {
            let [ks, ke] = span(name)?;
            let [vs, ve] = span(value.get())?;
            spans.push([ks, ke, vs, ve]);
        }
        let meta = match split.meta {
            None => None,
            Some(fields) => Some(fields.spans(span)?),
        };
        Some(Params {
            text: text.get(open..=close)?.into(),
            split: Some(Box::new(SplitAt {
                members: spans,
                meta,
            })),
        })
    }
}

/// `params` read as its members, borrowed from the message: what [`Params::from_split`]
/// needs. Reading fails (and the decoder falls back to reading `params` as one raw value) on
/// anything but an object, on a member name with escapes, and on a repeated `_meta`.
pub(super) struct Split<'a> {
    members: smallvec::SmallVec<[(&'a str, &'a RawValue); 4]>,
    meta: Option<MetaFields<'a>>,
    /// The first member's name (`_meta` included): where the object's opening brace is found
    /// from.
    first: Option<&'a str>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Split<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct SplitVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for SplitVisitor<'a> {
            type Value = Split<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut split = Split {
                    members: smallvec::SmallVec::new(),
                    meta: None,
                    first: None,
                };
                while let Some(Name(name)) = map.next_key::<Name<'de>>()? {
                    let Some(name) = name else {
                        return Err(de::Error::custom("a member name with escapes"));
                    };
                    split.first.get_or_insert(name);
                    if name == "_meta" {
                        if split.meta.is_some() {
                            return Err(de::Error::duplicate_field("_meta"));
                        }
                        // Its fields, strictly (an object, never an array).
                        let seed = duomcp_schema::strict::Seed::<MetaFields<'a>>::default();
                        split.meta = Some(map.next_value_seed(seed)?);
                        continue;
                    }
                    split
                        .members
                        .push((name, map.next_value::<&'de RawValue>()?));
                }
                Ok(split)
            }
        }
        d.deserialize_map(SplitVisitor(std::marker::PhantomData))
    }
}

/// A member name: borrowed from the message, or `None` when it had escapes (and so is not a
/// slice of it).
pub(super) struct Name<'a>(pub(super) Option<&'a str>);

impl<'de> Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct NameVisitor;
        impl<'de> Visitor<'de> for NameVisitor {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Name(Some(v)))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Name(None))
            }
        }
        d.deserialize_str(NameVisitor)
    }
}
