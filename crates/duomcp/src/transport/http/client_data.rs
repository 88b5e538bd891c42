//! The bound on what a legacy session keeps of its client: the `capabilities` and
//! `clientInfo` of `initialize` stay with the session for its whole life, so their size is
//! capped ([`HttpConfig::max_client_data`](super::HttpConfig::max_client_data)). An
//! `initialize` over the cap is refused with `-32602` rather than trimmed: a client learns
//! at once that it sent too much, and no declared capability is silently dropped.

use serde::Deserialize;
use serde_json::value::RawValue;

#[derive(Deserialize, Default)]
struct Retained<'a> {
    #[serde(borrow, default)]
    capabilities: Option<&'a RawValue>,
    #[serde(rename = "clientInfo", borrow, default)]
    client_info: Option<&'a RawValue>,
}

/// `Err(message)` when the `capabilities` and `clientInfo` of raw `initialize` params take
/// more than `max` bytes of JSON text.
pub(super) fn check(params: Option<&str>, max: usize) -> Result<(), String> {
    let Some(params) = params else {
        return Ok(());
    };
    // Params of the wrong shape are the dispatcher's to refuse.
    let retained: Retained<'_> = duomcp_schema::strict::from_str(params).unwrap_or_default();
    let size = retained.capabilities.map_or(0, |r| r.get().len())
        + retained.client_info.map_or(0, |r| r.get().len());
    if size > max {
        return Err(format!(
            "Invalid params: `capabilities` and `clientInfo` take {size} bytes, more than the \
             {max} a session keeps"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    #[test]
    fn counts_capabilities_and_client_info() {
        let p = raw(
            r#"{"protocolVersion":"2025-11-25","capabilities":{"x":1},"clientInfo":{"name":"n","version":"1"},"other":"ignored........"}"#,
        );
        assert!(check(Some(p.get()), 100).is_ok());
        let err = check(Some(p.get()), 20).unwrap_err();
        assert!(err.contains("more than the 20"), "{err}");
        assert!(check(None, 0).is_ok());
    }
}
