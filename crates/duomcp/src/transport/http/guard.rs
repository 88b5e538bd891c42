//! Checks every request passes before it reaches MCP: `Host` and `Origin` against allow-lists
//! (DNS-rebinding protection), and the media types of `Accept` and `Content-Type`.

use http::header::{ACCEPT, CONTENT_TYPE, HOST, ORIGIN};
use http::{HeaderMap, Uri};
use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::RwLock;

/// `host[:port]`; without a port any port matches.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostPattern {
    host: String,
    port: Option<u16>,
}

impl HostPattern {
    fn parse(s: &str) -> Option<Self> {
        let (host, port) = split_authority(s)?;
        Some(HostPattern { host, port })
    }

    fn matches(&self, host: &str, port: Option<u16>) -> bool {
        self.host == host && (self.port.is_none() || self.port == port)
    }
}

#[derive(Debug, Clone)]
enum OriginPattern {
    /// `scheme://host[:port]`, compared whole (lowercase).
    Exact(String),
    /// A host pattern: any scheme.
    Host(HostPattern),
}

/// Splits `host[:port]` (IPv6 in brackets), lowercasing the host.
fn split_authority(s: &str) -> Option<(String, Option<u16>)> {
    let s = s.trim();
    if s.is_empty() || s.contains(['/', '@', ' ']) {
        return None;
    }
    if let Some(rest) = s.strip_prefix('[') {
        let end = rest.find(']')?;
        let host = format!("[{}]", rest[..end].to_ascii_lowercase());
        let after = &rest[end + 1..];
        if after.is_empty() {
            return Some((host, None));
        }
        let port = after.strip_prefix(':')?.parse().ok()?;
        return Some((host, Some(port)));
    }
    match s.rsplit_once(':') {
        Some((host, port)) => {
            if host.is_empty() || host.contains(':') {
                return None;
            }
            Some((host.to_ascii_lowercase(), Some(port.parse().ok()?)))
        }
        None => Some((s.to_ascii_lowercase(), None)),
    }
}

/// The allow-lists of `Host` and `Origin`, compiled from [`HttpConfig`](super::HttpConfig).
#[derive(Debug)]
pub(crate) struct HostGuard {
    hosts: Option<Vec<HostPattern>>,
    origins: Option<Vec<OriginPattern>>,
    /// Addresses the transport was bound to (added by `serve`).
    bound: RwLock<Vec<HostPattern>>,
}

impl HostGuard {
    pub(crate) fn new(hosts: Option<&[String]>, origins: Option<&[String]>) -> Self {
        let hosts = hosts.map(|list| {
            list.iter()
                .filter_map(|h| {
                    let p = HostPattern::parse(h);
                    if p.is_none() {
                        tracing::warn!(host = %h, "ignoring an allowed host that is not `host[:port]`");
                    }
                    p
                })
                .collect()
        });
        let origins = origins.map(|list| {
            list.iter()
                .filter_map(|o| {
                    if o.contains("://") {
                        Some(OriginPattern::Exact(
                            o.trim().trim_end_matches('/').to_ascii_lowercase(),
                        ))
                    } else {
                        HostPattern::parse(o).map(OriginPattern::Host)
                    }
                })
                .collect()
        });
        HostGuard {
            hosts,
            origins,
            bound: RwLock::default(),
        }
    }

    /// Accepts `Host: <addr>` from now on (unless `addr` is unspecified, like `0.0.0.0`).
    pub(crate) fn add_bound(&self, addr: SocketAddr) {
        if addr.ip().is_unspecified() {
            return;
        }
        let host = match addr {
            SocketAddr::V4(a) => a.ip().to_string(),
            SocketAddr::V6(a) => format!("[{}]", a.ip()),
        };
        let mut bound = self.bound.write().unwrap_or_else(|p| p.into_inner());
        bound.push(HostPattern {
            host,
            port: Some(addr.port()),
        });
    }

    /// Accepts `Host: localhost` (any port) from now on: what a client on a Unix domain
    /// socket sends.
    pub(crate) fn add_local(&self) {
        let mut bound = self.bound.write().unwrap_or_else(|p| p.into_inner());
        bound.push(HostPattern {
            host: "localhost".to_owned(),
            port: None,
        });
    }

    fn host_allowed(&self, host: &str, port: Option<u16>) -> bool {
        let Some(hosts) = &self.hosts else {
            return true;
        };
        if hosts.iter().any(|p| p.matches(host, port)) {
            return true;
        }
        let bound = self.bound.read().unwrap_or_else(|p| p.into_inner());
        bound.iter().any(|p| p.matches(host, port))
    }

    /// `Err((status, reason))` when the request's authority or `Origin` is refused: `400` for
    /// a repeated, missing or malformed `Host` (RFC 9112 §3.2), `403` for one not allowed (the
    /// reason names it, so that an operator sees what to add to the allow-list).
    ///
    /// The authority checked is the target's when the request line is in absolute form
    /// (`POST http://host/mcp`), which RFC 9112 §3.2.2 says takes the place of `Host`; else
    /// the `Host` header.
    pub(crate) fn check(
        &self,
        headers: &HeaderMap,
        uri: &Uri,
    ) -> Result<(), (http::StatusCode, Cow<'static, str>)> {
        use http::StatusCode;
        let mut hosts = headers.get_all(HOST).iter();
        let first_host = hosts.next();
        if hosts.next().is_some() {
            return Err((
                StatusCode::BAD_REQUEST,
                "Bad Request: more than one Host header".into(),
            ));
        }
        if self.hosts.is_some() {
            let host = match (uri.authority(), first_host) {
                (Some(authority), _) => Some(authority.as_str()),
                (None, Some(v)) => v.to_str().ok(),
                (None, None) => None,
            };
            let Some((name, port)) = host.and_then(split_authority) else {
                return Err((
                    StatusCode::BAD_REQUEST,
                    "Bad Request: missing or malformed Host header".into(),
                ));
            };
            if !self.host_allowed(&name, port) {
                return Err((StatusCode::FORBIDDEN, refused_host(&name, port).into()));
            }
        }
        if let (Some(origins), Some(origin)) = (&self.origins, headers.get(ORIGIN)) {
            let Ok(origin) = origin.to_str() else {
                return Err((
                    http::StatusCode::FORBIDDEN,
                    "Forbidden: malformed Origin header".into(),
                ));
            };
            let origin = origin.trim().to_ascii_lowercase();
            let authority = origin
                .split_once("://")
                .map(|(_, rest)| rest)
                .and_then(split_authority);
            let allowed = origins.iter().any(|p| match p {
                OriginPattern::Exact(o) => *o == origin,
                OriginPattern::Host(h) => authority
                    .as_ref()
                    .is_some_and(|(host, port)| h.matches(host, *port)),
            });
            if !allowed {
                return Err((
                    http::StatusCode::FORBIDDEN,
                    "Forbidden: Origin not allowed".into(),
                ));
            }
        }
        Ok(())
    }
}

/// The reason of a `403` for a `Host` not allowed, naming it (as parsed: lower case, at most
/// 255 bytes of the name; JSON-escaped in the error object like any message).
fn refused_host(name: &str, port: Option<u16>) -> String {
    let mut end = name.len().min(255);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    let name = &name[..end];
    match port {
        Some(port) => format!("Forbidden: Host {name}:{port} not allowed"),
        None => format!("Forbidden: Host {name} not allowed"),
    }
}

/// Whether the `Accept` header(s) admit every one of `types` (wildcards count).
pub(crate) fn accepts_all(headers: &HeaderMap, types: &[&str]) -> bool {
    let ranges: Vec<String> = headers
        .get_all(ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|r| {
            r.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|r| !r.is_empty())
        .collect();
    types.iter().all(|t| {
        let main = t.split('/').next().unwrap_or("");
        ranges
            .iter()
            .any(|r| r == t || r == "*/*" || r.strip_suffix("/*") == Some(main))
    })
}

/// Whether `Content-Type` is `application/json` (parameters such as `charset` allowed).
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/json")
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    fn loopback() -> HostGuard {
        let list: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        HostGuard::new(Some(&list), Some(&list))
    }

    #[test]
    fn splits_authorities() {
        assert_eq!(
            split_authority("LocalHost:3000"),
            Some(("localhost".into(), Some(3000)))
        );
        assert_eq!(
            split_authority("[::1]:80"),
            Some(("[::1]".into(), Some(80)))
        );
        assert_eq!(split_authority("[::1]"), Some(("[::1]".into(), None)));
        assert_eq!(
            split_authority("127.0.0.1"),
            Some(("127.0.0.1".into(), None))
        );
        assert_eq!(split_authority("a:b"), None);
        assert_eq!(split_authority("::1"), None);
        assert_eq!(split_authority(""), None);
    }

    #[test]
    fn loopback_hosts_pass_any_port_and_others_fail() {
        let g = loopback();
        let uri = Uri::from_static("/mcp");
        assert!(g
            .check(&headers(&[("host", "localhost:1234")]), &uri)
            .is_ok());
        assert!(g.check(&headers(&[("host", "127.0.0.1")]), &uri).is_ok());
        assert!(g.check(&headers(&[("host", "[::1]:9")]), &uri).is_ok());
        let (status, why) = g
            .check(&headers(&[("host", "evil.example.com:8080")]), &uri)
            .unwrap_err();
        assert_eq!(status, 403);
        assert_eq!(why, "Forbidden: Host evil.example.com:8080 not allowed");
        let long = format!("{}.example", "a".repeat(300));
        let mut h = HeaderMap::new();
        h.append(HOST, HeaderValue::from_str(&long).unwrap());
        let why = g.check(&h, &uri).unwrap_err().1;
        assert_eq!(why, format!("Forbidden: Host {} not allowed", &long[..255]));
        assert!(g
            .check(&headers(&[("host", "localhost.evil.example.com")]), &uri)
            .is_err());
        assert!(g.check(&headers(&[]), &uri).is_err());
    }

    #[test]
    fn a_unix_socket_accepts_localhost_whatever_the_list() {
        let list = vec!["mcp.example.com".to_owned()];
        let g = HostGuard::new(Some(&list), None);
        let uri = Uri::from_static("/mcp");
        assert!(g.check(&headers(&[("host", "localhost")]), &uri).is_err());
        g.add_local();
        assert!(g.check(&headers(&[("host", "localhost")]), &uri).is_ok());
        assert!(g.check(&headers(&[("host", "LOCALHOST:80")]), &uri).is_ok());
        assert!(g
            .check(&headers(&[("host", "evil.example")]), &uri)
            .is_err());
        assert!(g
            .check(&headers(&[("host", "mcp.example.com")]), &uri)
            .is_ok());
    }

    #[test]
    fn repeated_host_is_400_and_absolute_form_checks_the_target() {
        let g = loopback();
        let uri = Uri::from_static("/mcp");
        let twice = headers(&[("host", "localhost"), ("host", "evil.example")]);
        assert_eq!(g.check(&twice, &uri).unwrap_err().0, 400);
        let open = HostGuard::new(None, None);
        assert_eq!(open.check(&twice, &uri).unwrap_err().0, 400);
        let absolute = Uri::from_static("http://evil.example/mcp");
        let err = g
            .check(&headers(&[("host", "localhost")]), &absolute)
            .unwrap_err();
        assert_eq!(err.0, 403);
        let absolute = Uri::from_static("http://localhost:3000/mcp");
        assert!(g
            .check(&headers(&[("host", "evil.example")]), &absolute)
            .is_ok());
        assert_eq!(g.check(&headers(&[]), &uri).unwrap_err().0, 400);
    }

    #[test]
    fn origins_are_checked_when_present() {
        let g = loopback();
        let uri = Uri::from_static("/mcp");
        assert!(g
            .check(
                &headers(&[("host", "localhost"), ("origin", "http://localhost:5173")]),
                &uri
            )
            .is_ok());
        assert!(g
            .check(
                &headers(&[
                    ("host", "localhost"),
                    ("origin", "https://evil.example.com")
                ]),
                &uri
            )
            .is_err());
        assert!(g
            .check(&headers(&[("host", "localhost"), ("origin", "null")]), &uri)
            .is_err());
        let exact = HostGuard::new(None, Some(&["https://app.example.com".to_string()]));
        assert!(exact
            .check(&headers(&[("origin", "https://app.example.com")]), &uri)
            .is_ok());
        assert!(exact
            .check(&headers(&[("origin", "http://app.example.com")]), &uri)
            .is_err());
    }

    #[test]
    fn the_bound_address_is_allowed() {
        let g = loopback();
        let uri = Uri::from_static("/mcp");
        g.add_bound("10.1.2.3:8080".parse().unwrap());
        assert!(g
            .check(&headers(&[("host", "10.1.2.3:8080")]), &uri)
            .is_ok());
        assert!(g
            .check(&headers(&[("host", "10.1.2.3:8081")]), &uri)
            .is_err());
    }

    #[test]
    fn accept_and_content_type() {
        let both = ["application/json", "text/event-stream"];
        assert!(accepts_all(
            &headers(&[("accept", "application/json, text/event-stream")]),
            &both
        ));
        assert!(accepts_all(
            &headers(&[
                ("accept", "application/json"),
                ("accept", "text/event-stream;q=0.9")
            ]),
            &both
        ));
        assert!(accepts_all(&headers(&[("accept", "*/*")]), &both));
        assert!(!accepts_all(
            &headers(&[("accept", "application/json")]),
            &both
        ));
        assert!(!accepts_all(&headers(&[]), &both));
        assert!(is_json(&headers(&[(
            "content-type",
            "application/json; charset=utf-8"
        )])));
        assert!(!is_json(&headers(&[("content-type", "text/plain")])));
    }
}
