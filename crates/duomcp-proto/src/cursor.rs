//! Opaque pagination cursors: the URL-safe base64 of a kind prefix and the last key on the
//! previous page. The prefix keeps one list's cursor from being taken for another's.

use crate::era::ProtocolError;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

/// The cursor of the page after `key`, for the list named by `prefix`.
pub fn encode(prefix: &str, key: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{prefix}{key}"))
}

/// The key a cursor of the list named by `prefix` resumes after; `None` for the first page.
/// Anything else is `-32602`.
pub fn decode(prefix: &str, cursor: Option<&str>) -> Result<Option<String>, ProtocolError> {
    let Some(c) = cursor else { return Ok(None) };
    URL_SAFE_NO_PAD
        .decode(c)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|s| s.strip_prefix(prefix).map(str::to_owned))
        .map(Some)
        .ok_or_else(|| {
            ProtocolError::InvalidParams(format!("Invalid params: invalid cursor `{c}`"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_belong_to_one_list() {
        let c = encode("k:", "weather");
        assert_eq!(
            decode("k:", Some(&c)).ok().flatten().as_deref(),
            Some("weather")
        );
        assert!(decode("task:", Some(&c)).is_err());
        assert!(decode("k:", Some("not base64!")).is_err());
        assert_eq!(decode("k:", None).ok().flatten(), None);
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            /// decode ∘ encode = id, for the list the cursor was made for only.
            #[test]
            fn a_cursor_reads_back_as_its_key(prefix in "[a-z]{1,6}:", key in ".{0,24}", other in "[A-Z]{1,6}:") {
                let cursor = encode(&prefix, &key);
                prop_assert_eq!(decode(&prefix, Some(&cursor)).ok().flatten(), Some(key));
                prop_assert!(decode(&other, Some(&cursor)).is_err());
                prop_assert_eq!(decode(&prefix, None).ok().flatten(), None);
            }

            /// Any string: the key of the one cursor it is, or `-32602` invalid params; never a panic.
            #[test]
            fn decoding_any_string_never_panics(prefix in ".{0,4}", cursor in prop_oneof![".{0,48}", "[A-Za-z0-9_=-]{0,48}"]) {
                match decode(&prefix, Some(&cursor)) {
                    Ok(key) => {
                        let key = key.unwrap_or_default();
                        // Base64 without padding or stray trailing bits: one text per key.
                        prop_assert_eq!(encode(&prefix, &key), cursor);
                    }
                    Err(e) => prop_assert!(matches!(e, ProtocolError::InvalidParams(_)), "{:?}", e),
                }
            }
        }
    }
}
