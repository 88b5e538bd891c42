//! `WWW-Authenticate` challenges (RFC 6750 §3, RFC 9728 §5.1, RFC 9449 §7.1): formatting on
//! the server side, parsing on the client side.

/// One challenge of a `WWW-Authenticate` header: a scheme and its `key="value"` parameters.
///
/// ```
/// use duomcp::auth::WwwAuthenticate;
/// let c = WwwAuthenticate::parse_all(r#"Bearer error="insufficient_scope", scope="files:read files:write""#);
/// assert_eq!(c[0].scheme(), "Bearer");
/// assert_eq!(c[0].param("scope"), Some("files:read files:write"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WwwAuthenticate {
    scheme: String,
    params: Vec<(String, String)>,
}

impl WwwAuthenticate {
    /// A `Bearer` challenge with no parameters yet.
    pub fn bearer() -> Self {
        WwwAuthenticate {
            scheme: "Bearer".into(),
            params: Vec::new(),
        }
    }

    /// Adds a parameter (quoted and escaped when formatted).
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.params.push((key.into(), value.into()));
        self
    }

    /// The auth scheme (`Bearer`, `DPoP`…), as sent.
    pub fn scheme(&self) -> &str {
        &self.scheme
    }

    /// Whether the scheme is `name` (compared case-insensitively, as RFC 9110 says).
    pub fn is(&self, name: &str) -> bool {
        self.scheme.eq_ignore_ascii_case(name)
    }

    /// A parameter's value; names compare case-insensitively.
    pub fn param(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }

    /// The header value: `Bearer key="value", …`. Quotes and backslashes are escaped; control
    /// characters are dropped, so a parameter can never split the header.
    pub fn to_header_value(&self) -> String {
        let mut out = self.scheme.clone();
        for (i, (k, v)) in self.params.iter().enumerate() {
            out.push_str(if i == 0 { " " } else { ", " });
            out.push_str(k);
            out.push_str("=\"");
            for c in v.chars() {
                match c {
                    '"' | '\\' => {
                        out.push('\\');
                        out.push(c);
                    }
                    c if c.is_control() => {}
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        out
    }

    /// Parses every challenge of a header value (several may share one header, separated by
    /// commas). Malformed parts are skipped, never fatal.
    pub fn parse_all(value: &str) -> Vec<WwwAuthenticate> {
        let mut out: Vec<WwwAuthenticate> = Vec::new();
        let mut p = Parser {
            s: value.as_bytes(),
            i: 0,
        };
        loop {
            p.skip_ws_and_commas();
            if p.done() {
                break;
            }
            let Some(token) = p.token() else {
                // Not a token: skip one byte and go on.
                p.i += 1;
                continue;
            };
            p.skip_ws();
            if p.peek() == Some(b'=') {
                // `key=value` of the current challenge.
                p.i += 1;
                p.skip_ws();
                let value = if p.peek() == Some(b'"') {
                    p.quoted()
                } else {
                    p.token68_or_token().unwrap_or_default()
                };
                if let Some(last) = out.last_mut() {
                    last.params.push((token, value));
                }
            } else {
                // A new scheme; a token68 may follow (`Negotiate abc==`), which we ignore.
                out.push(WwwAuthenticate {
                    scheme: token,
                    params: Vec::new(),
                });
                let save = p.i;
                if let Some(t) = p.token68_or_token() {
                    p.skip_ws();
                    if p.peek() == Some(b'=') {
                        // It was a parameter name after all.
                        p.i = save;
                    } else {
                        let _ = t;
                    }
                }
            }
        }
        out
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn done(&self) -> bool {
        self.i >= self.s.len()
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    fn skip_ws_and_commas(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b',')) {
            self.i += 1;
        }
    }

    fn is_tchar(c: u8) -> bool {
        c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c)
    }

    fn token(&mut self) -> Option<String> {
        let start = self.i;
        while self.peek().is_some_and(Self::is_tchar) {
            self.i += 1;
        }
        (self.i > start).then(|| String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }

    /// A token, or a token68 (which may end in `=` padding).
    fn token68_or_token(&mut self) -> Option<String> {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| Self::is_tchar(c) || c == b'/' || c == b':')
        {
            self.i += 1;
        }
        if self.i == start {
            return None;
        }
        // Trailing `=` only counts as token68 padding when nothing follows but a separator.
        let mut j = self.i;
        while self.s.get(j) == Some(&b'=') {
            j += 1;
        }
        if j > self.i && matches!(self.s.get(j), None | Some(b',' | b' ' | b'\t')) {
            self.i = j;
        }
        Some(String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }

    fn quoted(&mut self) -> String {
        // At the opening quote.
        self.i += 1;
        let mut out = Vec::new();
        while let Some(c) = self.peek() {
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    if let Some(n) = self.peek() {
                        out.push(n);
                        self.i += 1;
                    }
                }
                c => out.push(c),
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

#[cfg(feature = "fuzzing")]
impl WwwAuthenticate {
    /// This challenge as [`to_header_value`](Self::to_header_value) sends it: control
    /// characters dropped from the values (the fuzz oracle's expectation).
    pub(crate) fn as_sent(&self) -> Self {
        WwwAuthenticate {
            scheme: self.scheme.clone(),
            params: self
                .params
                .iter()
                .map(|(k, v)| (k.clone(), v.chars().filter(|c| !c.is_control()).collect()))
                .collect(),
        }
    }
}

/// The parameters a client acts on, gathered from all `WWW-Authenticate` values of a response.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ChallengeInfo {
    /// The scheme of the first challenge the client understands (`Bearer` or `DPoP`).
    pub scheme: Option<String>,
    pub error: Option<String>,
    pub error_description: Option<String>,
    pub scope: Option<String>,
    pub resource_metadata: Option<String>,
}

impl ChallengeInfo {
    /// Reads the `Bearer` or `DPoP` challenges of the given header values; values of other
    /// schemes are ignored.
    pub fn from_headers<'a>(values: impl IntoIterator<Item = &'a str>) -> Self {
        let mut info = ChallengeInfo::default();
        for value in values {
            for c in WwwAuthenticate::parse_all(value) {
                if !(c.is("Bearer") || c.is("DPoP")) {
                    continue;
                }
                if info.scheme.is_none() {
                    info.scheme = Some(c.scheme().to_owned());
                }
                let take = |slot: &mut Option<String>, key: &str| {
                    if slot.is_none() {
                        *slot = c.param(key).map(str::to_owned);
                    }
                };
                take(&mut info.error, "error");
                take(&mut info.error_description, "error_description");
                take(&mut info.scope, "scope");
                take(&mut info.resource_metadata, "resource_metadata");
            }
        }
        info
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_with_escapes() {
        let c = WwwAuthenticate::bearer()
            .with("error", "invalid_token")
            .with("error_description", "bad \"quote\" \\ and\nnewline")
            .with(
                "resource_metadata",
                "https://x/.well-known/oauth-protected-resource/mcp",
            );
        let v = c.to_header_value();
        assert!(!v.contains('\n'));
        let back = WwwAuthenticate::parse_all(&v);
        assert_eq!(back.len(), 1);
        assert_eq!(
            back[0].param("error_description"),
            Some("bad \"quote\" \\ andnewline")
        );
        assert_eq!(
            back[0].param("resource_metadata"),
            Some("https://x/.well-known/oauth-protected-resource/mcp")
        );
    }

    #[test]
    fn several_challenges_and_odd_spacing() {
        let v = r#"Basic realm="x", Bearer scope="a b",resource_metadata="http://h/p" , DPoP algs="ES256", error=use_dpop_nonce"#;
        let all = WwwAuthenticate::parse_all(v);
        assert_eq!(all.len(), 3);
        assert!(all[0].is("basic"));
        assert_eq!(all[1].param("SCOPE"), Some("a b"));
        assert_eq!(all[1].param("resource_metadata"), Some("http://h/p"));
        assert_eq!(all[2].param("error"), Some("use_dpop_nonce"));
        let info = ChallengeInfo::from_headers([v]);
        assert_eq!(info.scheme.as_deref(), Some("Bearer"));
        assert_eq!(info.scope.as_deref(), Some("a b"));
        assert_eq!(info.error.as_deref(), Some("use_dpop_nonce"));
    }

    #[test]
    fn garbage_never_panics() {
        for v in [
            "",
            "=",
            "\"",
            "Bearer =",
            "Bearer a=\"unterminated",
            ",,,",
            "Bearer a=b=c",
            "Negotiate abc==",
        ] {
            let _ = WwwAuthenticate::parse_all(v);
        }
        let n = WwwAuthenticate::parse_all("Negotiate abc==, Bearer scope=\"x\"");
        assert_eq!(n.len(), 2);
        assert_eq!(n[1].param("scope"), Some("x"));
    }
}
