//! The architecture's rules that the compiler cannot see within one crate, checked on the
//! source (ARCHITECTURE.md states each rule once and names this test): no import circle
//! between the files of `duomcp` or of `duomcp-proto`; what each module of `duomcp` must not
//! import; the era named only where an adapter is picked; no operating-system service named in
//! `duomcp-proto`; nothing but `duomcp::__private` named by the macros' expansion. Each check is
//! also shown to fail on a breach planted in a copy of the source.
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
    // (module prefix, modules it must not depend on, files exempt). A forbidden `m` is `m` and
    // the modules under it; `=m` is the file `m` alone; `*` is every module outside the prefix.
    let rules: &[(&str, &[&str], &[&str])] = &[
        ("client", &["server", "transport", "auth", "redis"], &[]),
        ("client", &["otel"], &["client/telemetry", "client/builder"]),
        ("client/era", &["client/engine", "=client/tasks"], &[]),
        (
            "common",
            &["server", "client", "transport", "auth", "otel", "redis"],
            &[],
        ),
        ("era", &["*"], &[]),
        ("jsonrpc", &["*"], &[]),
        (
            "otel",
            &["server", "client", "transport", "auth", "redis"],
            &[],
        ),
        ("server", &["transport", "client", "auth", "redis"], &[]),
        (
            "server",
            &["otel"],
            &["server/telemetry", "server/builder", "server/envelope"],
        ),
        ("server/dispatch/legacy", &["server/dispatch/table"], &[]),
        ("server/dispatch/modern", &["server/dispatch/table"], &[]),
        ("transport", &["client"], &["transport/memory"]),
        ("transport", &["auth", "otel", "redis"], &[]),
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
                let under = |m: &str| dep_name == m || dep_name.starts_with(&format!("{m}/"));
                if forbidden.iter().any(|f| match f.strip_prefix('=') {
                    Some(file) => dep_name == file,
                    None if *f == "*" => !under(prefix),
                    None => under(f),
                }) {
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

    // The other forms of a rule: `*` (anything outside) and `=m` (that file alone).
    let mut krate = duomcp();
    krate
        .files
        .get_mut(&vec!["jsonrpc".into(), "framing".into()])
        .unwrap()
        .push_str("\nuse crate::util::lock;\n");
    krate
        .files
        .get_mut(&vec!["client".into(), "era".into(), "modern".into()])
        .unwrap()
        .push_str("\nuse crate::client::tasks::TaskHandle;\n");
    assert_eq!(
        forbidden_imports(&krate),
        [
            "client/era/modern imports client/tasks",
            "jsonrpc/framing imports util"
        ]
    );
}

/// Where the era is named (`Era::Legacy`, `Era::Modern`), outside `duomcp-proto`'s `era` module,
/// the per-era adapter files (`legacy.rs`, `modern.rs`) and test files: file → count.
fn era_named(crates: &[(&str, &Crate)]) -> BTreeMap<String, usize> {
    let mut found = BTreeMap::new();
    for (prefix, krate) in crates {
        for (module, text) in &krate.files {
            let name = format!("{prefix}/{}", show(module));
            let adapter = matches!(module.last().map(String::as_str), Some("legacy" | "modern"));
            let proto_era = *prefix == "duomcp-proto" && module.first().is_some_and(|m| m == "era");
            if adapter || proto_era || is_test_file(module) {
                continue;
            }
            let n = text.matches("Era::Legacy").count() + text.matches("Era::Modern").count();
            if n > 0 {
                found.insert(name, n);
            }
        }
    }
    found
}

/// Outside `duomcp-proto`'s `era` module and the per-era adapter files (`legacy.rs`,
/// `modern.rs`), the era is named only where an adapter is picked: the dispatch entry, the
/// HTTP endpoint's POST, and the client's `era::of`.
#[test]
fn the_era_is_named_only_where_an_adapter_is_picked() {
    let picks: BTreeMap<String, usize> = [
        ("duomcp/server/dispatch", 2),
        ("duomcp/transport/http", 2),
        ("duomcp/client/era", 2),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let (duomcp, proto) = (duomcp(), proto());
    let found = era_named(&[("duomcp", &duomcp), ("duomcp-proto", &proto)]);
    assert_eq!(found, picks, "era branches outside the adapters");

    // A planted breach is found (the check can fail).
    let mut planted = duomcp;
    planted
        .files
        .get_mut(&vec!["server".into(), "context".into()])
        .unwrap()
        .push_str("\nfn f(e: Era) -> bool { e == Era::Modern }\n");
    let found = era_named(&[("duomcp", &planted), ("duomcp-proto", &proto)]);
    assert_eq!(found.get("duomcp/server/context"), Some(&1), "{found:?}");
}

/// The paths of `text` (`a::b::c`, and each item of a group `a::{b, c::d}` as `a::b`,
/// `a::c::d`), with whether a `!` follows (a macro call).
fn paths(text: &str) -> Vec<(String, bool)> {
    let is_path = |c: char| c.is_alphanumeric() || c == '_' || c == ':';
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(is_path) {
        let len = rest[start..]
            .find(|c| !is_path(c))
            .unwrap_or(rest.len() - start);
        let path = &rest[start..start + len];
        let tail = &rest[start + len..];
        if path.ends_with("::") && tail.starts_with('{') {
            let end = tail.find('}').unwrap_or(tail.len());
            for item in tail[1..end].split(',') {
                let item = item.split(" as ").next().unwrap_or("").trim();
                if !item.is_empty() && !item.starts_with('{') {
                    out.push((format!("{path}{item}"), false));
                }
            }
            rest = &tail[end..];
            continue;
        }
        out.push((path.trim_matches(':').to_owned(), tail.starts_with('!')));
        rest = tail;
    }
    out
}

/// What `duomcp-proto`'s code (test files and modules left out) names of the operating system:
/// the file system, the network, processes, threads, the environment, the clock, the standard
/// streams and the print macros, or a crate of the async runtime or of OS randomness.
fn os_services(krate: &Crate) -> Vec<String> {
    const STD: &[&str] = &["fs", "net", "process", "thread", "env"];
    const NAMES: &[&str] = &[
        "SystemTime",
        "Instant",
        "UNIX_EPOCH",
        "stdin",
        "stdout",
        "stderr",
    ];
    const MACROS: &[&str] = &["print", "println", "eprint", "eprintln", "dbg"];
    const CRATES: &[&str] = &[
        "tokio",
        "hyper",
        "reqwest",
        "redis",
        "mio",
        "socket2",
        "getrandom",
        "rand",
    ];
    let mut found = Vec::new();
    for (module, text) in &krate.files {
        if is_test_file(module) {
            continue;
        }
        for (path, macro_call) in paths(text) {
            let segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
            let breach = match segs.as_slice() {
                ["std" | "core", second, ..] => STD.contains(second),
                [first, ..] if CRATES.contains(first) => true,
                [only] => macro_call && MACROS.contains(only),
                _ => false,
            };
            if breach {
                found.push(format!("{}: {path}", show(module)));
            }
        }
        // The clock and the standard streams by name, however they were imported.
        for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if NAMES.contains(&word) {
                found.push(format!("{}: {word}", show(module)));
            }
        }
    }
    found
}

/// `duomcp-proto` is sans-IO: no file, socket, process, thread, environment variable, clock
/// or OS randomness of its own (time is a value passed in, keys are bytes passed in). The
/// wasm32 build in `.ci/run` cannot say it (std's `fs`, `net`, `thread` and `SystemTime` compile
/// there and fail only when called), so the source is read.
#[test]
fn duomcp_proto_names_no_operating_system_service() {
    let found = os_services(&proto());
    assert!(found.is_empty(), "{found:#?}");

    // A planted breach is found (the check can fail), in each form it can take.
    let mut krate = proto();
    krate.files.get_mut(&vec!["time".into()]).unwrap().push_str(
        "\nuse std::{fs, time::Instant};\n\
         fn now() -> u128 { std::time::SystemTime::now().elapsed().unwrap().as_millis() }\n\
         fn say() { println!(); let _ = tokio::spawn(async {}); }\n",
    );
    assert_eq!(
        os_services(&krate),
        [
            "time: std::fs",
            "time: println",
            "time: tokio::spawn",
            "time: Instant",
            "time: SystemTime",
        ]
    );
}

/// What the macros' expansion names of `duomcp` besides `__private`: every interpolated path
/// (`#krate::…`, the `duomcp` path the user may rename) must go on with `__private::`, and no
/// `duomcp::` path is written out.
fn macros_beyond_private(krate: &Crate) -> Vec<String> {
    let mut found = Vec::new();
    for (module, text) in &krate.files {
        if is_test_file(module) {
            continue;
        }
        for (at, _) in text.match_indices('#') {
            let ident: String = text[at + 1..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let after = &text[at + 1 + ident.len()..];
            if !ident.is_empty() && after.starts_with("::") && !after.starts_with("::__private::") {
                let next: String = after[2..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                found.push(format!("{}: #{ident}::{next}", show(module)));
            }
        }
        for (at, _) in text.match_indices("duomcp::") {
            let before = text[..at].chars().next_back();
            if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                found.push(format!("{}: duomcp::", show(module)));
            }
        }
    }
    found
}

/// The macros' expansion reaches `duomcp` only through `duomcp::__private`, so that nothing
/// else of `duomcp` is an API the generated code depends on.
#[test]
fn the_macros_expansion_names_only_duomcp_private() {
    let macros = read_crate(&root().join("duomcp-macros/src"), &[]);
    assert!(
        macros.files.len() > 3,
        "read {} files only",
        macros.files.len()
    );
    let found = macros_beyond_private(&macros);
    assert!(found.is_empty(), "{found:#?}");

    // A planted breach is found (the check can fail).
    let mut planted = read_crate(&root().join("duomcp-macros/src"), &[]);
    planted
        .files
        .get_mut(&vec!["expand".into()])
        .unwrap()
        .push_str(
            "\nfn f(krate: &syn::Path) -> TokenStream { quote!(#krate::server::Server) }\n\
             fn g() -> TokenStream { quote!(::duomcp::server::Server) }\n",
        );
    assert_eq!(
        macros_beyond_private(&planted),
        ["expand: #krate::server", "expand: duomcp::"]
    );
}
