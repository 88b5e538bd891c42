//! Errors a person can read: the cause that matters, said once, instead of every layer of the
//! chain (`transport error: i/o error: HTTP request to URL failed: error sending request for
//! url (URL): client error (Connect): tcp connect error: Connection refused`).

use duomcp::client::transport::TransportError;
use duomcp::client::ClientError;
use std::error::Error as StdError;
use std::time::Duration;

/// `host:port` of an `http(s)://` URL (the port defaulted from the scheme).
pub(crate) fn authority(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    if authority.is_empty() {
        return None;
    }
    let has_port = match authority.rfind(']') {
        Some(close) => authority[close..].contains(':'),
        None => authority.contains(':'),
    };
    if has_port {
        return Some(authority.to_owned());
    }
    let port = if scheme.eq_ignore_ascii_case("https") {
        443
    } else {
        80
    };
    Some(format!("{authority}:{port}"))
}

/// A duration as people write it: `2 s`, `1.5 s`, `250 ms`.
pub(crate) fn human(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        return format!("{} ms", d.as_millis());
    }
    let tenths = (d.as_secs_f64() * 10.0).round() / 10.0;
    if tenths.fract() == 0.0 {
        format!("{tenths:.0} s")
    } else {
        format!("{tenths:.1} s")
    }
}

/// The io::Error somewhere down `e`'s source chain.
fn io_cause<'a>(e: &'a (dyn StdError + 'static)) -> Option<&'a std::io::Error> {
    let mut next: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(err) = next {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            // An io::Error may wrap the real cause (reqwest does): keep looking below it.
            if let Some(inner) = io.get_ref().and_then(|i| io_cause(i)) {
                return Some(inner);
            }
            return Some(io);
        }
        next = err.source();
    }
    None
}

/// Every message down the chain, joined.
fn chain_text(e: &(dyn StdError + 'static)) -> String {
    let mut parts = Vec::new();
    let mut next: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(err) = next {
        parts.push(err.to_string());
        next = err.source();
    }
    parts.join(": ")
}

/// What went wrong at the network level, said once: `nothing is listening at HOST:PORT
/// (connection refused)`, `cannot resolve HOST`…; `None` when the chain holds nothing
/// recognisable.
fn network(e: &(dyn StdError + 'static), url: Option<&str>) -> Option<String> {
    let at = url.and_then(authority);
    let place = at.as_deref().unwrap_or("the server");
    let whole = chain_text(e);
    if whole.contains("failed to lookup address") || whole.contains("dns error") {
        let host = at
            .as_deref()
            .and_then(|a| a.rsplit_once(':').map(|(h, _)| h.to_owned()))
            .unwrap_or_else(|| "the server's host".into());
        return Some(format!(
            "cannot resolve the host name `{host}` (DNS lookup failed)"
        ));
    }
    let io = io_cause(e)?;
    use std::io::ErrorKind::*;
    Some(match io.kind() {
        ConnectionRefused => format!("nothing is listening at {place} (connection refused)"),
        ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => {
            format!("{place} closed the connection ({io})")
        }
        TimedOut => format!("{place} did not answer (connection timed out)"),
        _ if whole.contains("certificate") || whole.contains("tls") => {
            format!("the TLS handshake with {place} failed: {}", innermost(e))
        }
        _ => return None,
    })
}

/// The deepest message of the chain (the cause itself).
fn innermost(e: &(dyn StdError + 'static)) -> String {
    let mut last = e;
    while let Some(next) = last.source() {
        last = next;
    }
    last.to_string()
}

/// `e` in a sentence, with `url` (the HTTP server's address) when known.
pub(crate) fn describe(e: &ClientError, url: Option<&str>) -> String {
    match e {
        ClientError::Timeout { method, after } => {
            format!("no answer to {method} within {} (--timeout)", human(*after))
        }
        ClientError::Transport(TransportError::Http { status, body }) => {
            let at = url.map(|u| format!(" at {u}")).unwrap_or_default();
            match status {
                404 => format!("no MCP endpoint{at} (HTTP 404 Not Found; is the path right?)"),
                401 => format!(
                    "the server{at} wants authorization (HTTP 401): run `duomcp login URL` or pass --header 'Authorization: Bearer TOKEN'"
                ),
                403 => format!("the server{at} refused the request (HTTP 403){}", detail(body)),
                _ => format!("the server{at} answered HTTP {status}{}", detail(body)),
            }
        }
        ClientError::Transport(t) => network(t, url).unwrap_or_else(|| t.to_string()),
        ClientError::Spawn(io) if io.kind() == std::io::ErrorKind::NotFound => {
            "the server program was not found (is it installed, and on PATH?)".into()
        }
        ClientError::Spawn(io) if io.kind() == std::io::ErrorKind::PermissionDenied => {
            "the server program cannot be run (permission denied)".into()
        }
        other => {
            let mut text = other.to_string();
            if let Some(data) = other.rpc_error().and_then(|err| err.data.as_ref()) {
                text.push_str(&format!(" (data: {data})"));
            }
            text
        }
    }
}

fn detail(body: &str) -> String {
    let body = body.trim();
    if body.is_empty() {
        String::new()
    } else {
        format!(": {body}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_get_their_default_port() {
        assert_eq!(
            authority("http://127.0.0.1:3999/mcp").as_deref(),
            Some("127.0.0.1:3999")
        );
        assert_eq!(
            authority("https://mcp.example.com/mcp").as_deref(),
            Some("mcp.example.com:443")
        );
        assert_eq!(authority("http://[::1]/mcp").as_deref(), Some("[::1]:80"));
        assert_eq!(authority("nonsense"), None);
    }

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(human(Duration::from_millis(2000)), "2 s");
        assert_eq!(human(Duration::from_nanos(2_000_535_771)), "2 s");
        assert_eq!(human(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(human(Duration::from_millis(250)), "250 ms");
    }
}
