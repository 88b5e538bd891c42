//! What the gateway calls an upstream's things: prefixed names, reversibly rewritten resource
//! URIs, and the allow/deny globs of tools.

/// How one upstream's names and URIs look from the client's side.
#[derive(Debug, Clone)]
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
