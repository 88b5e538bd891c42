//! Decoding in which a struct is read only from a JSON object, never from an array.
//!
//! serde's derived `Deserialize` for a struct (without `#[serde(flatten)]`) also accepts a
//! sequence and reads the fields by position: `["2.0",1,"ping"]` would decode as a request
//! envelope. A JSON-RPC message, `params`, `_meta` and every other MCP wire type that the
//! schema defines as an object must be an object, so a peer that reads by key (a gateway, a
//! WAF filtering on `method`) and this crate always agree on what a message says.
//!
//! [`from_str`] wraps serde_json's deserializer so that, at every depth, a request for a
//! struct is served as a request for a map: an array where a struct is expected is then an
//! "invalid type: sequence, expected …" error. Arrays stay arrays where the type is a
//! sequence (`Vec<T>`, tuples).
//!
//! ```
//! #[derive(serde::Deserialize, Debug)]
//! struct Head { jsonrpc: String, id: u64, method: String }
//!
//! let ok: Head = duomcp_schema::strict::from_str(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
//! assert_eq!(ok.method, "ping");
//! // serde_json alone reads the array by position; the strict reading refuses it.
//! assert!(serde_json::from_str::<Head>(r#"["2.0",1,"ping"]"#).is_ok());
//! assert!(duomcp_schema::strict::from_str::<Head>(r#"["2.0",1,"ping"]"#).is_err());
//! ```

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};
use std::fmt;

/// Whether `text` may hold a JSON array: without a `[` byte it holds none, and a strict reading
/// is then the same as serde_json's own (same values, same errors), so it is read the plain way,
/// which costs less. A `[` inside a string takes the strict way too; it reads the same.
fn may_hold_array(text: &[u8]) -> bool {
    text.contains(&b'[')
}

/// Reads a `T` the strict way from whatever deserializer it is handed: the value of one member,
/// read in the same pass as the object around it (`map.next_value_seed(Seed::default())`),
/// with every struct in it (at any depth) read from a JSON object only, as [`from_str`] does.
///
/// ```
/// use duomcp_schema::strict::Seed;
/// use serde::de::DeserializeSeed;
///
/// #[derive(serde::Deserialize)]
/// struct Version { major: u8 }
/// let mut json = serde_json::Deserializer::from_str(r#"{"major":1}"#);
/// assert_eq!(Seed::<Version>::default().deserialize(&mut json).unwrap().major, 1);
/// let mut json = serde_json::Deserializer::from_str("[1]");
/// assert!(Seed::<Version>::default().deserialize(&mut json).is_err()); // serde_json alone takes it
/// ```
pub struct Seed<T>(std::marker::PhantomData<fn() -> T>);

impl<T> Default for Seed<T> {
    fn default() -> Self {
        Seed(std::marker::PhantomData)
    }
}

impl<'de, T: de::Deserialize<'de>> DeserializeSeed<'de> for Seed<T> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        T::deserialize(Strict(deserializer))
    }
}

/// Parses `text` as `T`, reading every struct (at any depth) from a JSON object only.
pub fn from_str<'de, T: de::Deserialize<'de>>(text: &'de str) -> Result<T, serde_json::Error> {
    if !may_hold_array(text.as_bytes()) {
        return serde_json::from_str(text);
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let value = T::deserialize(Strict(&mut de))?;
    de.end()?;
    Ok(value)
}

/// Parses `bytes` as `T` like [`from_str`] (they must be UTF-8 JSON).
pub fn from_slice<'de, T: de::Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, serde_json::Error> {
    if !may_hold_array(bytes) {
        return serde_json::from_slice(bytes);
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = T::deserialize(Strict(&mut de))?;
    de.end()?;
    Ok(value)
}

/// A JSON text as a deserializer that reads structs from objects only (see [`from_str`]): for
/// handing raw members (`&RawValue` text) to a typed reader, e.g. through
/// `serde::de::value::MapDeserializer`.
///
/// ```
/// use serde::Deserialize;
/// #[derive(Deserialize)]
/// struct P { a: u32 }
/// let strict = duomcp_schema::strict::StrictStr(r#"{"a":1}"#);
/// assert_eq!(P::deserialize(strict).unwrap().a, 1);
/// assert!(P::deserialize(duomcp_schema::strict::StrictStr("[1]")).is_err());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct StrictStr<'a>(pub &'a str);

/// Reads `text` with one call of a `Deserializer` method, strictly where it may hold an array
/// (see [`may_hold_array`]), and checks that nothing follows.
macro_rules! run {
    ($text:expr, |$d:ident| $call:expr) => {{
        let text: &str = $text;
        let mut de = serde_json::Deserializer::from_str(text);
        let value = if may_hold_array(text.as_bytes()) {
            let $d = Strict(&mut de);
            $call?
        } else {
            let $d = &mut de;
            $call?
        };
        de.end()?;
        Ok(value)
    }};
}

macro_rules! forward_text {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
                run!(self.0, |d| d.$method(visitor))
            }
        )*
    };
}

impl<'de> Deserializer<'de> for StrictStr<'de> {
    type Error = serde_json::Error;

    forward_text! {
        deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_option deserialize_unit deserialize_seq deserialize_map
        deserialize_identifier deserialize_ignored_any
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, serde_json::Error> {
        run!(self.0, |d| d.deserialize_unit_struct(name, visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, serde_json::Error> {
        run!(self.0, |d| d.deserialize_newtype_struct(name, visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, serde_json::Error> {
        run!(self.0, |d| d.deserialize_tuple(len, visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, serde_json::Error> {
        run!(self.0, |d| d.deserialize_tuple_struct(name, len, visitor))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, serde_json::Error> {
        run!(self.0, |d| d.deserialize_struct(name, fields, visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, serde_json::Error> {
        run!(self.0, |d| d.deserialize_enum(name, variants, visitor))
    }
}

impl<'de> de::IntoDeserializer<'de, serde_json::Error> for StrictStr<'de> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

/// A deserializer that answers `deserialize_struct` with `deserialize_map`, and wraps every
/// nested deserializer the same way.
struct Strict<D>(D);

/// Wraps what serde hands back (maps, sequences, enums, nested values) in [`Strict`].
struct Wrap<X>(X);

macro_rules! forward {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
                self.0.$method(Wrap(visitor))
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Strict<D> {
    type Error = D::Error;

    forward! {
        deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_option deserialize_unit deserialize_seq deserialize_map
        deserialize_identifier deserialize_ignored_any
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_unit_struct(name, Wrap(visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        // serde_json's `RawValue` is a newtype struct with a private name: forwarded as is.
        self.0.deserialize_newtype_struct(name, Wrap(visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple(len, Wrap(visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple_struct(name, len, Wrap(visitor))
    }

    /// The point of the wrapper: a struct comes from a map, never from a sequence.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(Wrap(visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_enum(name, variants, Wrap(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

macro_rules! visit {
    ($($method:ident: $ty:ty)*) => {
        $(
            fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
                self.0.$method(v)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    visit! {
        visit_bool: bool visit_i8: i8 visit_i16: i16 visit_i32: i32 visit_i64: i64
        visit_i128: i128 visit_u8: u8 visit_u16: u16 visit_u32: u32 visit_u64: u64
        visit_u128: u128 visit_f32: f32 visit_f64: f64 visit_char: char visit_str: &str
        visit_borrowed_str: &'de str visit_string: String visit_bytes: &[u8]
        visit_borrowed_bytes: &'de [u8] visit_byte_buf: Vec<u8>
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.0.visit_some(Strict(d))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.0.visit_newtype_struct(Strict(d))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(Wrap(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(Wrap(map))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.0.visit_enum(Wrap(data))
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Wrap<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Strict(d))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Wrap(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(Wrap(seed))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(Wrap(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Wrap<A> {
    type Error = A::Error;
    type Variant = Wrap<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), A::Error> {
        self.0
            .variant_seed(Wrap(seed))
            .map(|(value, variant)| (value, Wrap(variant)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Wrap(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Wrap(visitor))
    }

    /// A struct variant is a struct: read from a map only.
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        // `VariantAccess` has no map form: the sequence form is refused by the visitor.
        self.0.struct_variant(fields, Wrap(NoSeq(visitor)))
    }
}

/// A struct variant's visitor with the sequence form refused.
struct NoSeq<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for NoSeq<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(map)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _seq: A) -> Result<V::Value, A::Error> {
        Err(de::Error::invalid_type(de::Unexpected::Seq, &self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::value::RawValue;
    use std::borrow::Cow;

    #[derive(Deserialize, Debug, PartialEq)]
    struct Inner {
        a: u32,
    }

    #[derive(Deserialize, Debug)]
    struct Outer<'a> {
        #[serde(borrow)]
        raw: Option<&'a RawValue>,
        #[serde(borrow)]
        name: Cow<'a, str>,
        inner: Option<Inner>,
        list: Option<Vec<Inner>>,
    }

    #[test]
    fn wire_objects_of_the_schema_are_never_read_from_arrays() {
        fn refused<T: serde::de::DeserializeOwned>(array: &str) {
            assert!(
                from_str::<T>(array).is_err(),
                "{} read from {array}",
                std::any::type_name::<T>()
            );
        }
        refused::<crate::JsonRpcRequest>(r#"["2.0",1,"ping"]"#);
        refused::<crate::JsonRpcNotification>(r#"["2.0","notifications/initialized"]"#);
        refused::<crate::JsonRpcMessage>(r#"["2.0",1,"ping"]"#);
        refused::<crate::ErrorObject>(r#"[-32600,"no"]"#);
        refused::<crate::meta::RequestMeta>(r#"["2026-07-28",{}]"#);
        refused::<crate::ClientCapabilities>(r#"[{},{}]"#);
        refused::<crate::Implementation>(r#"["n","1"]"#);
        refused::<crate::CallToolRequestParams>(r#"["plain",{}]"#);
        refused::<crate::InitializeRequestParams>(
            r#"["2025-11-25",{},{"name":"n","version":"1"}]"#,
        );
    }

    #[test]
    fn objects_pass_and_keep_borrowing() {
        let text = r#"{"raw":{"x":[1,2]},"name":"n","inner":{"a":1},"list":[{"a":2}]}"#;
        let o: Outer<'_> = from_str(text).unwrap();
        assert_eq!(o.raw.unwrap().get(), r#"{"x":[1,2]}"#);
        assert!(matches!(o.name, Cow::Borrowed("n")));
        assert_eq!(o.inner, Some(Inner { a: 1 }));
        assert_eq!(o.list.unwrap(), [Inner { a: 2 }]);
    }

    #[test]
    fn text_without_arrays_reads_as_serde_json_reads_it() {
        let text = r#"{"raw":{"x":1},"name":"n","inner":{"a":1}}"#;
        let o: Outer<'_> = from_str(text).unwrap();
        assert!(matches!(o.name, Cow::Borrowed("n")));
        assert_eq!(o.inner, Some(Inner { a: 1 }));
        // The same errors, word for word.
        for bad in [
            r#"{"a":"x"}"#,
            r#"{"a":1} x"#,
            r#""a""#,
            r#"{"a":1,"a":2}"#,
            "{",
        ] {
            let strict = from_str::<Inner>(bad).unwrap_err().to_string();
            let plain = serde_json::from_str::<Inner>(bad).unwrap_err().to_string();
            assert_eq!(strict, plain, "{bad}");
            let member = Inner::deserialize(StrictStr(bad)).unwrap_err().to_string();
            assert_eq!(member, plain, "{bad}");
        }
        // A `[` inside a string takes the strict way, and reads the same.
        let o: Outer<'_> = from_str(r#"{"name":"[n]","inner":{"a":2}}"#).unwrap();
        assert_eq!(o.name, "[n]");
    }

    #[test]
    fn arrays_are_refused_where_a_struct_is_expected_at_any_depth() {
        assert!(from_str::<Outer<'_>>(r#"[null,"n",null,null]"#).is_err());
        let nested = r#"{"name":"n","inner":[1]}"#;
        assert!(serde_json::from_str::<Outer<'_>>(nested).is_ok());
        assert!(from_str::<Outer<'_>>(nested).is_err());
        let in_list = r#"{"name":"n","list":[[1]]}"#;
        assert!(from_str::<Outer<'_>>(in_list).is_err());
        assert!(from_slice::<Inner>(b"[1]").is_err());
        assert!(from_slice::<Inner>(br#"{"a":1} x"#).is_err());
    }
}
