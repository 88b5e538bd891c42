//! What the gateway calls an upstream's things: prefixed names, reversibly rewritten resource
//! URIs, and the allow/deny globs of tools.

/// How one upstream's names and URIs look from the client's side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Naming {
    /// `None`: names and URIs are served as the upstream has them.
    prefix: Option<(String, String)>,
}

impl Naming {
    /// Names as the upstream has them.
    pub fn plain() -> Self {
        Naming { prefix: None }
    }

    /// `{upstream}{separator}{name}`, and URIs `{upstream}+{uri}`.
    pub fn prefixed(upstream: &str, separator: &str) -> Self {
        Naming {
            prefix: Some((upstream.to_owned(), separator.to_owned())),
        }
    }

    /// The client-side name of the upstream's `name`.
    ///
    /// ```
    /// use duomcp_gateway::names::Naming;
    /// let n = Naming::prefixed("files", "__");
    /// assert_eq!(n.outer("read"), "files__read");
    /// assert_eq!(n.inner("files__read"), Some("read"));
    /// assert_eq!(n.inner("other__read"), None);
    /// ```
    pub fn outer(&self, name: &str) -> String {
        match &self.prefix {
            None => name.to_owned(),
            Some((up, sep)) => format!("{up}{sep}{name}"),
        }
    }

    /// The upstream's name for a client-side name, if it is one of this upstream's.
    pub fn inner<'a>(&self, name: &'a str) -> Option<&'a str> {
        match &self.prefix {
            None => Some(name),
            Some((up, sep)) => name.strip_prefix(up.as_str())?.strip_prefix(sep.as_str()),
        }
    }

    /// The client-side URI (or URI template) of the upstream's `uri`: its scheme gets the
    /// upstream's name in front (`test://x` becomes `files+test://x`), which keeps it a URI.
    ///
    /// ```
    /// use duomcp_gateway::names::Naming;
    /// let n = Naming::prefixed("files", "_");
    /// assert_eq!(n.outer_uri("test://static"), "files+test://static");
    /// assert_eq!(n.inner_uri("files+test://static"), Some("test://static"));
    /// assert_eq!(n.inner_uri("test://static"), None);
    /// ```
    pub fn outer_uri(&self, uri: &str) -> String {
        match &self.prefix {
            None => uri.to_owned(),
            Some((up, _)) => format!("{up}+{uri}"),
        }
    }

    /// The upstream's URI for a client-side one, if it is one of this upstream's.
    pub fn inner_uri<'a>(&self, uri: &'a str) -> Option<&'a str> {
        match &self.prefix {
            None => Some(uri),
            Some((up, _)) => uri.strip_prefix(up.as_str())?.strip_prefix('+'),
        }
    }
}

/// The spec's rule for tool names: 1 to 128 characters, each of `A-Z a-z 0-9 _ - .`.
///
/// ```
/// use duomcp_gateway::names::valid_tool_name;
/// assert!(valid_tool_name("files_read-v2.1"));
/// assert!(!valid_tool_name("evil\r\nname"));
/// assert!(!valid_tool_name("rev\u{202e}"));
/// assert!(!valid_tool_name(""));
/// assert!(!valid_tool_name(&"a".repeat(129)));
/// ```
pub fn valid_tool_name(name: &str) -> bool {
    (1..=MAX_NAME_CHARS).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The longest name (a tool's or a prompt's) the gateway serves, in characters.
pub const MAX_NAME_CHARS: usize = 128;

/// A prompt name (or resource URI) the gateway serves: at most [`MAX_NAME_CHARS`] characters
/// (URIs: 2,048 bytes), no control characters and no bidirectional overrides (which could make
/// a terminal or a log show something else than what is there). Prompt names have no
/// character rule in the spec, so spaces and letters of any script pass.
///
/// ```
/// use duomcp_gateway::names::printable_name;
/// assert!(printable_name("Résumé prompt", 128));
/// assert!(!printable_name("a\u{1b}[2Jb", 128));
/// assert!(!printable_name("x\u{202e}gpj.exe", 128));
/// ```
pub fn printable_name(name: &str, max_chars: usize) -> bool {
    !name.is_empty()
        && name.chars().count() <= max_chars
        && !name.chars().any(|c| c.is_control() || is_bidi_control(c))
}

/// The Unicode bidirectional formatting characters (embeddings, overrides, isolates, marks).
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `name` with control and bidirectional characters escaped (`\u{..}`) and cut to 80
/// characters: safe to put in a log line or a report.
pub fn escaped(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if i == 80 {
            out.push_str(&format!("… ({} bytes)", name.len()));
            break;
        }
        if c.is_control() || is_bidi_control(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// Which of an upstream's tools are served.
#[derive(Debug, Clone, Default)]
pub struct ToolFilter {
    allow: Vec<String>,
    deny: Vec<String>,
}

impl ToolFilter {
    /// Tools matching an `allow` glob (all, when empty) and no `deny` glob.
    ///
    /// ```
    /// use duomcp_gateway::names::ToolFilter;
    /// let f = ToolFilter::new(vec!["test_*".into()], vec!["*_error*".into()]);
    /// assert!(f.admits("test_simple_text"));
    /// assert!(!f.admits("test_error_handling"));
    /// assert!(!f.admits("echo"));
    /// ```
    pub fn new(allow: Vec<String>, deny: Vec<String>) -> Self {
        ToolFilter { allow, deny }
    }

    /// Whether the tool `name` (the upstream's name) is served.
    pub fn admits(&self, name: &str) -> bool {
        (self.allow.is_empty() || self.allow.iter().any(|g| glob(g, name)))
            && !self.deny.iter().any(|g| glob(g, name))
    }
}

/// `*` (any run, possibly empty) and `?` (one character); everything else literal.
/// Iterative with one backtrack point: linear in practice, never exponential.
pub(crate) fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob("*", ""));
        assert!(glob("a*b", "axxb"));
        assert!(glob("a?c", "abc"));
        assert!(!glob("a?c", "ac"));
        assert!(glob("*x*", "aaxbb"));
        assert!(!glob("*x*", "aabb"));
        assert!(glob("a**", "a"));
    }

    #[test]
    fn plain_naming_is_identity() {
        let n = Naming::plain();
        assert_eq!(n.outer("t"), "t");
        assert_eq!(n.inner("t"), Some("t"));
        assert_eq!(n.outer_uri("a://b"), "a://b");
    }
}
