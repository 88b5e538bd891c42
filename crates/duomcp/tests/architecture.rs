//! The architecture's rules that the compiler cannot see within one crate, checked on the
//! source (ARCHITECTURE.md states each rule once and names this test): no import circle
//! between the files of `duomcp` or of `duomcp-proto`; what each module of `duomcp` must not
//! import; the era named only where an adapter is picked.
//!
//! The source is read as rust-analyzer's tidy tests read theirs: comments, string literals
//! and `#[cfg(test)]` modules are left out, and a file's dependencies are the `crate::`,
//! `super::` and `self::` paths it names, each resolved to the deepest file module on the
//! path (a re-export at the crate root to the module it re-exports).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module, as the path of its file under `src` without the extension (`mod.rs` and
/// `lib.rs` name their directory): `["server", "dispatch"]`.
type Module = Vec<String>;

struct Crate {
    /// Each file module's source, without comments, strings and test modules.
    files: BTreeMap<Module, String>,
    /// Names the crate root re-exports from a module: `correlation` → `common::correlation`.
    aliases: Vec<(Module, Module)>,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read_crate(src: &Path, aliases: &[(&str, &str)]) -> Crate {
    let mut files = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap().with_extension("");
            let mut module: Module = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
                module.pop();
            }
            let text = std::fs::read_to_string(&path).unwrap();
            files.insert(module, without_tests(&strip(&text)));
        }
    }
    let split = |s: &str| s.split("::").map(str::to_owned).collect::<Module>();
    Crate {
        files,
        aliases: aliases.iter().map(|(a, b)| (split(a), split(b))).collect(),
    }
}

/// `text` without comments, and with every string and char literal emptied.
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'r' if matches!(b.get(i + 1), Some(b'"' | b'#'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                // A raw string: r"…", r#"…"#, …
                let mut j = i + 1;
                let mut hashes = 0;
                while b.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                j += 1;
                loop {
                    if j >= b.len() {
                        break;
                    }
                    if b[j] == b'"'
                        && b[j + 1..]
                            .iter()
                            .take(hashes)
                            .filter(|c| **c == b'#')
                            .count()
                            == hashes
                    {
                        j += 1 + hashes;
                        break;
                    }
                    j += 1;
                }
                out.push_str("\"\"");
                i = j;
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                out.push_str("\"\"");
            }
            b'\'' if b.get(i + 2) == Some(&b'\'') || (b.get(i + 1) == Some(&b'\\')) => {
                // A char literal ('x', '\n', '\u{..}'); lifetimes ('a) are left alone.
                let mut j = i + 1;
                while j < b.len() && b[j] != b'\'' {
                    if b[j] == b'\\' {
                        j += 1;
                    }
                    j += 1;
                }
                out.push_str("' '");
                i = j + 1;
            }
            c => {
                // Copy one whole UTF-8 character.
                let len = match c {
                    0x00..=0x7f => 1,
                    0xc0..=0xdf => 2,
                    0xe0..=0xef => 3,
                    _ => 4,
                };
                out.push_str(&text[i..(i + len).min(text.len())]);
                i += len;
            }
        }
    }
    out
}

/// `text` without its `#[cfg(test)] mod … { … }` blocks (a `mod tests;` file is a module of
/// its own, and left out as a test file).
fn without_tests(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(") {
        let attr_end = rest[at..].find(']').map_or(rest.len(), |e| at + e + 1);
        let attr = &rest[at..attr_end];
        let is_test = attr.contains("test") && !attr.contains("not(test");
        out.push_str(&rest[..at]);
        let after = &rest[attr_end..];
        let trimmed = after.trim_start();
        let is_mod = trimmed.starts_with("mod ") || trimmed.starts_with("pub(crate) mod ");
        match (is_test && is_mod, after.find('{'), after.find(';')) {
            (true, Some(open), semi) if semi.is_none_or(|s| open < s) => {
                let mut depth = 0;
                let mut end = after.len();
                for (i, c) in after[open..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = open + i + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                rest = &after[end..];
            }
            _ => {
                out.push_str(attr);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether the file is test code only (`tests.rs`, `props.rs`, or under a `tests` directory).
fn is_test_file(module: &Module) -> bool {
    module
        .iter()
        .any(|s| s == "tests" || s == "props" || s == "strategies")
}

impl Crate {
    /// The file module a path names, from `module`'s point of view.
    fn resolve(&self, mut path: Module) -> Option<Module> {
        for (alias, target) in &self.aliases {
            if path.starts_with(alias) {
                path = target.iter().chain(&path[alias.len()..]).cloned().collect();
            }
        }
        (0..=path.len())
            .rev()
            .map(|k| path[..k].to_vec())
            .find(|m| self.files.contains_key(m))
    }

    /// The modules `module`'s source names by a `crate::`, `super::` or `self::` path
    /// (groups `{a, b::c}` expanded one level).
    fn deps(&self, module: &Module) -> BTreeSet<Module> {
        let text = &self.files[module];
        let mut out = BTreeSet::new();
        for head in ["crate::", "super::", "self::"] {
            let mut from = 0;
            while let Some(at) = text[from..].find(head) {
                let start = from + at;
                from = start + head.len();
                let before = text[..start].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                let path_text: String = text[start..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                let mut segs: Vec<String> = path_text
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect();
                // `self` is the file's module (a `mod.rs` names its directory), `super` its parent.
                let own = module.clone();
                let mut base: Module = match segs[0].as_str() {
                    "crate" => Vec::new(),
                    "self" => own.clone(),
                    _ => own[..own.len().saturating_sub(1)].to_vec(),
                };
                segs.remove(0);
                while segs.first().map(String::as_str) == Some("super") {
                    base.pop();
                    segs.remove(0);
                }
                let mut targets = vec![base.iter().chain(&segs).cloned().collect::<Module>()];
                let tail = &text[start + path_text.len()..];
                if path_text.ends_with("::") && tail.starts_with('{') {
                    let group = &tail[1..tail.find('}').unwrap_or(tail.len())];
                    for item in group.split(',') {
                        let item = item.split(" as ").next().unwrap_or("").trim();
                        if item.is_empty() || item == "self" || item.starts_with('{') {
                            continue;
                        }
                        let extra = item.split("::").map(|s| s.trim().to_owned());
                        targets.push(base.iter().chain(&segs).cloned().chain(extra).collect());
                    }
                }
                for t in targets {
                    if let Some(m) = self.resolve(t) {
                        if &m != module {
                            out.insert(m);
                        }
                    }
                }
            }
        }
        out
    }

    fn graph(&self) -> BTreeMap<Module, BTreeSet<Module>> {
        self.files
            .keys()
            .filter(|m| !is_test_file(m))
            .map(|m| {
                let deps = self
                    .deps(m)
                    .into_iter()
                    .filter(|d| !is_test_file(d))
                    .collect();
                (m.clone(), deps)
            })
            .collect()
    }
}

/// The strongly connected components of more than one module (Tarjan).
fn circles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct State<'a> {
        graph: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on: BTreeSet<&'a Module>,
        out: Vec<Vec<Module>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Module) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let Some((w, _)) = s.graph.get_key_value(w) else {
                continue;
            };
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn show(m: &Module) -> String {
    if m.is_empty() {
        "(root)".into()
    } else {
        m.join("/")
    }
}

fn duomcp() -> Crate {
    read_crate(
        &root().join("duomcp/src"),
        &[("correlation", "common::correlation"), ("Era", "era")],
    )
}

fn proto() -> Crate {
    read_crate(&root().join("duomcp-proto/src"), &[])
}

#[test]
fn no_import_circle_in_duomcp_or_duomcp_proto() {
    for (name, krate) in [("duomcp", duomcp()), ("duomcp-proto", proto())] {
        let graph = krate.graph();
        assert!(graph.len() > 15, "{name}: read {} files only", graph.len());
        let found = circles(&graph);
        let said: Vec<String> = found
            .iter()
            .map(|c| {
                let names: Vec<String> = c.iter().map(show).collect();
                let edges: Vec<String> = c
                    .iter()
                    .flat_map(|v| {
                        graph[v]
                            .iter()
                            .filter(|w| c.contains(w))
                            .map(move |w| format!("{} -> {}", show(v), show(w)))
                    })
                    .collect();
                format!("[{}] by {}", names.join(", "), edges.join("; "))
            })
            .collect();
        assert!(said.is_empty(), "{name}: import circles: {said:#?}");
    }
}

/// A circle planted in a copy of the source is found (the check can fail).
#[test]
fn the_circle_check_finds_a_planted_circle() {
    let mut krate = duomcp();
    let module = |s: &str| s.split('/').map(str::to_owned).collect::<Module>();
    let era = module("client/era");
    krate
        .files
        .get_mut(&era)
        .unwrap()
        .push_str("\nuse crate::client::engine::Inner;\n");
    let found = circles(&krate.graph());
    assert!(
        found
            .iter()
            .any(|c| c.contains(&era) && c.contains(&module("client/engine"))),
        "{found:?}"
    );
}

/// What each module of `duomcp` depends on against what ARCHITECTURE.md allows: the breaches.
fn forbidden_imports(krate: &Crate) -> Vec<String> {
    // (module prefix, modules it must not depend on, files exempt)
    let rules: &[(&str, &[&str], &[&str])] = &[
        ("client", &["server", "transport", "auth/server"], &[]),
        ("common", &["server", "client", "transport", "auth"], &[]),
        (
            "jsonrpc",
            &["server", "client", "transport", "auth", "common", "otel"],
            &[],
        ),
        ("server", &["transport", "client"], &[]),
        ("otel", &["transport"], &[]),
        ("transport", &["client"], &["transport/memory"]),
    ];
    let graph = krate.graph();
    let mut broken = Vec::new();
    for (module, deps) in &graph {
        let name = show(module);
        for (prefix, forbidden, exempt) in rules {
            if !(name == *prefix || name.starts_with(&format!("{prefix}/"))) {
                continue;
            }
            if exempt.contains(&name.as_str()) {
                continue;
            }
            for dep in deps {
                let dep_name = show(dep);
                if forbidden
                    .iter()
                    .any(|f| dep_name == *f || dep_name.starts_with(&format!("{f}/")))
                {
                    broken.push(format!("{name} imports {dep_name}"));
                }
            }
        }
    }
    broken
}

#[test]
fn each_module_imports_only_what_architecture_md_allows() {
    let broken = forbidden_imports(&duomcp());
    assert!(broken.is_empty(), "{broken:#?}");

    // A planted breach is found (the check can fail).
    let mut krate = duomcp();
    let engine: Module = vec!["client".into(), "engine".into()];
    krate
        .files
        .get_mut(&engine)
        .unwrap()
        .push_str("\nuse crate::server::Server;\n");
    assert_eq!(forbidden_imports(&krate), ["client/engine imports server"]);
}

/// Outside `duomcp-proto`'s `era` module and the per-era adapter files (`legacy.rs`,
/// `modern.rs`), the era is named only where an adapter is picked: the dispatch entry, the
/// HTTP endpoint's POST, and the client's `era::of`.
#[test]
fn the_era_is_named_only_where_an_adapter_is_picked() {
    let mut found = BTreeMap::new();
    for (prefix, krate) in [("duomcp", duomcp()), ("duomcp-proto", proto())] {
        for (module, text) in &krate.files {
            let name = format!("{prefix}/{}", show(module));
            let adapter = matches!(module.last().map(String::as_str), Some("legacy" | "modern"));
            let proto_era = prefix == "duomcp-proto" && module.first().is_some_and(|m| m == "era");
            if adapter || proto_era || is_test_file(module) {
                continue;
            }
            let n = text.matches("Era::Legacy").count() + text.matches("Era::Modern").count();
            if n > 0 {
                found.insert(name, n);
            }
        }
    }
    let picks: BTreeMap<String, usize> = [
        ("duomcp/server/dispatch", 2),
        ("duomcp/transport/http", 2),
        ("duomcp/client/era", 2),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(found, picks, "era branches outside the adapters");
}
