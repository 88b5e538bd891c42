#!/usr/bin/env python3
"""Checks that every code block of the book (`docs/src`) is one CI checks.

The book's rule: no block that CI does not check. So, per fence:

* ```rust, ```toml, ```html: only `{{#include PATH}}` / `{{#include PATH:ANCHOR}}` lines
  (mdBook's include). A Rust file must be one the workspace compiles (an example, a test, a
  bench or library source under `crates/`, or a peer under `bench/peers/` that CI builds),
  so `cargo clippy --all-targets` checks it; a TOML or HTML file must be read by a test or an
  example (`include_str!` or a path in a test). The anchor must exist, once, with its end.
  A ```toml block may instead be inline TOML when it is a Cargo manifest fragment: it must
  parse, and every `duomcp*` dependency in it must name a crate of this workspace.
* ```sh: run, command by command, by `scripts/readme_test.py` (see its header), which reads
  the book's pages as it reads the README.
* ```text: only directly after an ```sh block, as the output that block must print
  (`scripts/readme_test.py` compares them).
* ```json: must parse.
* any other fence, or none: refused.

It also checks that `SUMMARY.md` and the pages agree (every page listed exists, every page is
listed), and, given `--built DIR` (the output of `mdbook build docs`), that no include was left
unresolved in the HTML.

Usage: scripts/book_check.py [--built docs/book]
"""

import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "docs" / "src"
INCLUDE = re.compile(r"^\{\{#(?:include|rustdoc_include) ([^}:]+)(?::([A-Za-z0-9_-]+))?\}\}$")
# A Rust file the workspace compiles: `cargo clippy --workspace --all-targets` checks it.
# Or the rmcp peer of the benchmarks, which `.ci/run` checks (`cargo check` in its folder).
COMPILED_RUST = re.compile(
    r"^(crates/[^/]+/(examples|tests|src|benches)/.+|bench/peers/rmcp-echo/src/main)\.rs$")
# A TOML or HTML file shown whole or in part; some example or test must read it too.
READ_FILES = re.compile(r"^(crates|deploy|docs)/.+\.(toml|html|cfg)$")
WORKSPACE_CRATES = {p.parent.name for p in (ROOT / "crates").glob("*/Cargo.toml")}


def fences(text):
    """(lang, body lines, line number, whether prose came between it and the block before)."""
    out, fence, prose = [], None, False
    for number, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if fence is None:
            if s.startswith("```"):
                lang = s[3:].split(",")[0].strip()
                fence = (lang, [], number, prose)
            elif s:
                prose = True
        elif s.startswith("```"):
            out.append(fence)
            fence, prose = None, False
        else:
            fence[1].append(line)
    if fence is not None:
        raise SystemExit(f"unterminated ``` block at line {fence[2]}")
    return out


def check_include(page, line, kinds, problems, where):
    m = INCLUDE.match(line.strip())
    if not m:
        problems.append(f"{where}: not an include: {line.strip()!r}")
        return
    target = (page.parent / m.group(1)).resolve()
    anchor = m.group(2)
    if not target.is_file():
        problems.append(f"{where}: {m.group(1)} does not exist")
        return
    rel = target.relative_to(ROOT).as_posix()
    if not kinds.match(rel):
        problems.append(f"{where}: {rel} is not a file CI compiles or reads ({kinds.pattern})")
    if target.suffix == ".toml" or target.suffix == ".html":
        if not _read_by_code(rel):
            problems.append(f"{where}: no example or test reads {rel}")
    if anchor:
        text = target.read_text(encoding="utf-8")
        starts = len(re.findall(rf"ANCHOR:\s*{re.escape(anchor)}\b", text))
        ends = len(re.findall(rf"ANCHOR_END:\s*{re.escape(anchor)}\b", text))
        if starts != 1 or ends != 1:
            problems.append(f"{where}: anchor {anchor!r} in {rel}: {starts} start(s), {ends} end(s)")


def _read_by_code(rel):
    """Whether a Rust file of the workspace names `rel` (its file name at least)."""
    name = Path(rel).name
    for rs in (ROOT / "crates").glob("*/**/*.rs"):
        if name in rs.read_text(encoding="utf-8", errors="replace"):
            return True
    return False


def check_toml(body, problems, where):
    try:
        doc = tomllib.loads("\n".join(body))
    except tomllib.TOMLDecodeError as e:
        problems.append(f"{where}: TOML does not parse: {e}")
        return
    deps = doc.get("dependencies")
    if not isinstance(deps, dict):
        problems.append(f"{where}: inline TOML must be a Cargo [dependencies] fragment; "
                        "include other TOML from a file a test reads")
        return
    for name in deps:
        if name.startswith("duomcp") and name not in WORKSPACE_CRATES:
            problems.append(f"{where}: {name} is not a crate of this workspace")


def pages_of_summary(problems):
    summary = BOOK / "SUMMARY.md"
    listed = set()
    for m in re.finditer(r"\]\(([^)]+\.md)\)", summary.read_text(encoding="utf-8")):
        path = (BOOK / m.group(1)).resolve()
        listed.add(path)
        if not path.is_file():
            problems.append(f"SUMMARY.md lists {m.group(1)}, which does not exist")
    for page in BOOK.rglob("*.md"):
        if page.name != "SUMMARY.md" and page.resolve() not in listed:
            problems.append(f"{page.relative_to(ROOT)} is not in SUMMARY.md")
    return sorted(listed)


def main(argv):
    problems = []
    pages = pages_of_summary(problems)
    counts = {}
    for page in pages:
        if not page.is_file():
            continue
        rel = page.relative_to(ROOT)
        found = fences(page.read_text(encoding="utf-8"))
        for i, (lang, body, line, prose) in enumerate(found):
            where = f"{rel}:{line}"
            counts[lang] = counts.get(lang, 0) + 1
            if lang == "rust":
                if not body:
                    problems.append(f"{where}: empty block")
                for l in body:
                    check_include(page, l, COMPILED_RUST, problems, where)
            elif lang in ("toml", "html"):
                if body and all(INCLUDE.match(l.strip()) for l in body):
                    for l in body:
                        check_include(page, l, READ_FILES, problems, where)
                elif lang == "toml":
                    check_toml(body, problems, where)
                else:
                    problems.append(f"{where}: an html block must be an include")
            elif lang == "sh":
                pass  # run by scripts/readme_test.py
            elif lang == "text":
                before = found[i - 1] if i > 0 else None
                if before is None or before[0] != "sh" or prose:
                    problems.append(f"{where}: a ```text block must directly follow an ```sh "
                                    "block (it is that block's checked output)")
            elif lang == "json":
                try:
                    json.loads("\n".join(body))
                except json.JSONDecodeError as e:
                    problems.append(f"{where}: JSON does not parse: {e}")
            else:
                problems.append(f"{where}: a ```{lang or '(no language)'} block: CI checks "
                                "only rust/toml/html includes, sh, text after sh, json")
    if "--built" in argv:
        built = Path(argv[argv.index("--built") + 1])
        html = list(built.rglob("*.html"))
        if not html:
            problems.append(f"{built}: no HTML (run `mdbook build docs` first)")
        left = re.compile(r"\{\{#(?:rustdoc_)?include [^}…]+\}\}")
        for f in html:
            if left.search(f.read_text(encoding="utf-8", errors="replace")):
                problems.append(f"{f}: an include was left unresolved")
    for p in problems:
        print(f"FAILED {p}", file=sys.stderr)
    print(f"{len(pages)} page(s); blocks: "
          + ", ".join(f"{k or '(none)'} {v}" for k, v in sorted(counts.items()))
          + f"; {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
