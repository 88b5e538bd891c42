//! OAuth scopes: parsing the space-separated form, sets, and scope hierarchies.

use std::collections::{BTreeMap, BTreeSet};

/// Splits a space-separated `scope` value (RFC 6749 §3.3) into its scopes, skipping empty
/// parts.
///
/// ```
/// let scopes: Vec<&str> = duomcp::auth::split_scopes(" files:read  files:write ").collect();
/// assert_eq!(scopes, ["files:read", "files:write"]);
/// ```
pub fn split_scopes(value: &str) -> impl Iterator<Item = &str> {
    value.split([' ', '\t']).filter(|s| !s.is_empty())
}

/// Joins scopes into the space-separated wire form.
#[cfg_attr(not(all(feature = "auth", feature = "http-server")), allow(dead_code))]
pub(crate) fn join_scopes<'a>(scopes: impl IntoIterator<Item = &'a String>) -> String {
    let mut out = String::new();
    for s in scopes {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(s);
    }
    out
}

/// Which scopes imply which: a broader scope grants the narrower ones (the 2026-07-28 revision
/// requires servers to honour such hierarchies when deciding whether a token suffices).
///
/// Implication is transitive: with `admin → files:write` and `files:write → files:read`, a
/// token with `admin` may read files.
///
/// ```
/// use duomcp::auth::ScopeHierarchy;
/// let h = ScopeHierarchy::new()
///     .implies("files:write", ["files:read"])
///     .implies("admin", ["files:write"]);
/// let granted = h.expand(["admin".to_owned()]);
/// assert!(granted.contains("files:read"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct ScopeHierarchy {
    implied: BTreeMap<String, BTreeSet<String>>,
}

impl ScopeHierarchy {
    /// No implications: every scope stands for itself.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares that holding `broad` grants each of `narrower`.
    pub fn implies<I, S>(mut self, broad: impl Into<String>, narrower: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.implied
            .entry(broad.into())
            .or_default()
            .extend(narrower.into_iter().map(Into::into));
        self
    }

    /// Whether no implication is declared.
    pub fn is_empty(&self) -> bool {
        self.implied.is_empty()
    }

    /// The granted scopes plus every scope they imply, transitively (cycles are harmless).
    pub fn expand<I>(&self, granted: I) -> BTreeSet<String>
    where
        I: IntoIterator<Item = String>,
    {
        let mut out: BTreeSet<String> = BTreeSet::new();
        let mut todo: Vec<String> = granted.into_iter().collect();
        while let Some(scope) = todo.pop() {
            if let Some(more) = self.implied.get(&scope) {
                todo.extend(more.iter().filter(|m| !out.contains(*m)).cloned());
            }
            out.insert(scope);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_join() {
        let v: Vec<&str> = split_scopes("a  b\tc").collect();
        assert_eq!(v, ["a", "b", "c"]);
        assert_eq!(split_scopes("").count(), 0);
        let owned: Vec<String> = vec!["x".into(), "y".into()];
        assert_eq!(join_scopes(&owned), "x y");
    }

    #[test]
    fn hierarchy_is_transitive_and_survives_cycles() {
        let h = ScopeHierarchy::new()
            .implies("a", ["b"])
            .implies("b", ["c"])
            .implies("c", ["a"]);
        let got = h.expand(["a".to_owned()]);
        assert_eq!(got.len(), 3);
        let none = ScopeHierarchy::new().expand(["z".to_owned()]);
        assert_eq!(none.into_iter().collect::<Vec<_>>(), ["z"]);
    }
}
