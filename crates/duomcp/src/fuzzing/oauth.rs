//! OAuth discovery documents and challenges: Protected Resource Metadata (RFC 9728),
//! Authorization Server Metadata (RFC 8414), their well-known URLs, and `WWW-Authenticate`.
//!
//! Oracles: a metadata document read, written and read again is unchanged (unknown members
//! included); the well-known URLs of a resource or issuer keep its origin; a challenge
//! formatted by the server side is one valid header value that the client side parses back
//! to the same challenge (control characters, which formatting drops, aside).

use super::text;
use crate::auth::challenge::ChallengeInfo;
use crate::auth::{
    authorization_server_metadata_urls, protected_resource_metadata_urls,
    AuthorizationServerMetadata, ProtectedResourceMetadata, WwwAuthenticate,
};
use serde::de::DeserializeOwned;
use serde::Serialize;

fn round_trip<T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug>(
    data: &[u8],
) -> Option<T> {
    let doc: T = serde_json::from_slice(data).ok()?;
    let written = serde_json::to_vec(&doc).expect("metadata serializes");
    let again: T = serde_json::from_slice(&written)
        .unwrap_or_else(|e| panic!("written metadata does not read back: {e}"));
    assert_eq!(again, doc, "metadata round trip changed the document");
    Some(doc)
}

fn urls_keep_origin(url: &str, urls: Result<Vec<String>, String>) {
    let Ok(urls) = urls else { return };
    assert!(!urls.is_empty());
    let scheme_end = url.find("://").expect("an http(s) URL") + 3;
    let authority_end = url[scheme_end..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| i + scheme_end);
    let origin = &url[..authority_end];
    for u in urls {
        assert!(u.starts_with(origin), "{u} is not below {origin}");
        assert!(u.contains("/.well-known/"), "{u}");
    }
}

fn challenges(value: &str) {
    let _ = ChallengeInfo::from_headers([value, value]);
    for c in WwwAuthenticate::parse_all(value) {
        let formatted = c.to_header_value();
        assert!(
            http::HeaderValue::from_str(&formatted).is_ok(),
            "a formatted challenge is not a header value: {formatted:?}"
        );
        let back = WwwAuthenticate::parse_all(&formatted);
        assert_eq!(back, [c.as_sent()], "{value:?} → {formatted:?}");
    }
}

/// Input: a mode byte, then a JSON document or a header value.
pub fn oauth_metadata(data: &[u8]) {
    let [mode, rest @ ..] = data else { return };
    match mode % 3 {
        0 => {
            if let Some(doc) = round_trip::<ProtectedResourceMetadata>(rest) {
                urls_keep_origin(
                    &doc.resource,
                    protected_resource_metadata_urls(&doc.resource),
                );
            }
        }
        1 => {
            if let Some(doc) = round_trip::<AuthorizationServerMetadata>(rest) {
                urls_keep_origin(&doc.issuer, authorization_server_metadata_urls(&doc.issuer));
            }
        }
        _ => {
            if let Some(value) = text(rest) {
                challenges(value);
            }
        }
    }
}
