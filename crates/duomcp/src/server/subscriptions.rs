//! Bounds and validation of resource subscriptions: 2025-11-25 `resources/subscribe` (kept by
//! the session until it ends) and the `resourceSubscriptions` filter of a 2026-07-28
//! `subscriptions/listen` stream (kept while the stream is open).
//!
//! "Servers MUST validate all resource URIs" (2025-11-25, resources): a subscription is only
//! accepted for a URI this server serves — a registered resource, one matching a resource
//! template, or a skill file — that is a syntactically valid absolute URI of bounded length
//! ([`ServerConfig::max_subscription_uri_bytes`]). A session holds at most
//! [`ServerConfig::max_subscriptions`] of them.
//!
//! [`ServerConfig::max_subscription_uri_bytes`]: super::ServerConfig::max_subscription_uri_bytes
//! [`ServerConfig::max_subscriptions`]: super::ServerConfig::max_subscriptions

use super::session::Session;
use super::Shared;
use crate::era::ProtocolError;

/// Whether `uri` is an absolute URI: `scheme ":" rest`, the scheme a letter followed by letters,
/// digits, `+`, `-` or `.` (RFC 3986 §3.1), with no whitespace or control characters.
fn is_absolute_uri(uri: &str) -> bool {
    let Some((scheme, _)) = uri.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !uri.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// Checks the form and length of a subscription URI (`-32602` otherwise).
fn check_form(shared: &Shared, uri: &str) -> Result<(), ProtocolError> {
    let max = shared.config.max_subscription_uri_bytes;
    if uri.len() > max {
        return Err(ProtocolError::InvalidParams(format!(
            "Invalid params: the resource URI is {} bytes long, more than the {max} a subscription may have",
            uri.len()
        )));
    }
    if !is_absolute_uri(uri) {
        return Err(ProtocolError::InvalidParams(format!(
            "Invalid params: `{uri}` is not an absolute URI"
        )));
    }
    Ok(())
}

/// Whether the server serves `uri`.
async fn served(shared: &Shared, uri: &str) -> Result<bool, ProtocolError> {
    {
        let reg = shared.registry();
        if reg.resources.contains_key(uri)
            || reg
                .templates
                .iter()
                .any(|t| t.matcher.as_ref().is_some_and(|m| m.matches(uri).is_some()))
        {
            return Ok(true);
        }
    }
    #[cfg(feature = "skills")]
    if shared.skills.enabled() {
        return Ok(shared.skills.snapshot().await?.serves(uri));
    }
    Ok(false)
}

/// `resources/subscribe` on a 2025-11-25 session: validated, then kept unless the session holds
/// its maximum already. An unknown resource is `-32002`, a bad or oversized URI and one
/// subscription too many are `-32602`.
pub(crate) async fn subscribe(
    shared: &Shared,
    session: &Session,
    uri: String,
) -> Result<(), ProtocolError> {
    check_form(shared, &uri)?;
    if !served(shared, &uri).await? {
        return Err(ProtocolError::ResourceNotFound(uri));
    }
    let max = shared.config.max_subscriptions;
    if !session.subscribe_bounded(uri, max) {
        return Err(ProtocolError::InvalidParams(format!(
            "Invalid params: this session holds {max} subscriptions, the most it may; unsubscribe from one first"
        )));
    }
    Ok(())
}

/// The `resourceSubscriptions` of a `subscriptions/listen` request: at most
/// `max_subscriptions` URIs, each of bounded length and a valid absolute URI (`-32602`).
pub(crate) fn check_listen(shared: &Shared, uris: Option<&[String]>) -> Result<(), ProtocolError> {
    let Some(uris) = uris else {
        return Ok(());
    };
    let max = shared.config.max_subscriptions;
    if uris.len() > max {
        return Err(ProtocolError::InvalidParams(format!(
            "Invalid params: {} resource subscriptions, more than the {max} a stream may hold",
            uris.len()
        )));
    }
    uris.iter().try_for_each(|u| check_form(shared, u))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_uris() {
        assert!(is_absolute_uri("test://watched-resource"));
        assert!(is_absolute_uri("file:///tmp/x"));
        assert!(is_absolute_uri("urn:isbn:0451450523"));
        assert!(is_absolute_uri("skill://a/SKILL.md"));
        assert!(!is_absolute_uri("no-scheme"));
        assert!(!is_absolute_uri("1x://y"));
        assert!(!is_absolute_uri("://y"));
        assert!(!is_absolute_uri("a b://c"));
        assert!(!is_absolute_uri("test://with space"));
        assert!(!is_absolute_uri("test://new\nline"));
    }
}
