#!/usr/bin/env python3
"""Runs the shell commands of the README, the book (`docs/src`) and the examples' doc comments,
as written.

The convention (for everyone editing the docs):

* a fenced block tagged ```sh is executed, command by command, from the repository root, on
  the built tree; any other fence (```text, ```toml, ```rust, …) is not;
* a ```text block that directly follows a ```sh block (only blank lines between) is what that
  block prints on stdout: every line must match, in order, where `…` stands for any run of
  characters (the README's own mark for "elided");
* a command ending in `&` is a server: it is started in the background, the next command runs
  once the `HOST:PORT` it names (in the command or its comment) accepts connections, and it is stopped (SIGTERM to its process
  group) when its block ends;
* commands that `.ci/run` runs as steps of their own (`scripts/test.sh`, `scripts/conformance.sh`)
  are not run again here.

In the examples (`crates/duomcp/examples/*.rs`) the same applies to the `//!` doc comment.

Usage: scripts/readme_test.py [--list] [FILE…]   (default: README.md, the book, the examples)
"""

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMAND_TIMEOUT = 1800  # seconds; a cold `cargo run` compiles first
SERVER_TIMEOUT = 900  # seconds for a background server to accept connections
ADDR = re.compile(r"\b(127\.0\.0\.1|localhost|0\.0\.0\.0):(\d{2,5})\b")


def doc_markdown(path):
    """The markdown text of a file: the file itself, or a Rust file's `//!` comment."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".rs":
        return text
    lines = []
    for line in text.splitlines():
        if line.startswith("//!"):
            body = line[3:]
            lines.append(body[1:] if body.startswith(" ") else body)
    return "\n".join(lines) + "\n"


def blocks(markdown):
    """(lang, lines, first line number) of every fenced block, in order, with the number of
    non-blank lines between each block and the one before."""
    out = []
    fence = None
    gap_text = False
    for number, line in enumerate(markdown.splitlines(), 1):
        stripped = line.strip()
        if fence is None:
            if stripped.startswith("```"):
                fence = (stripped[3:].strip(), [], number + 1, gap_text)
            elif stripped:
                gap_text = True
        elif stripped.startswith("```"):
            lang, body, start, prose_before = fence
            out.append({"lang": lang, "lines": body, "line": start, "prose_before": prose_before})
            fence = None
            gap_text = False
        else:
            fence[1].append(line)
    if fence is not None:
        raise SystemExit(f"unterminated ``` block starting at line {fence[2] - 1}")
    return out


def commands(lines):
    """Logical commands of a shell block: `\\`-continued lines joined, comments dropped."""
    out = []
    current = ""
    for line in lines:
        if not current and (not line.strip() or line.strip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        current += line
        out.append(current.strip())
        current = ""
    if current.strip():
        out.append(current.strip())
    return out


def ci_steps():
    """Lines `.ci/run` runs itself."""
    steps = set()
    for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            steps.add(line)
    return steps


def strip_comment(command):
    """The command without a trailing `# comment` (outside quotes)."""
    quote = None
    for i, c in enumerate(command):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or command[i - 1].isspace()):
            return command[:i].rstrip()
    return command.rstrip()


def matches(expected, actual):
    """Whether `actual` (a line) matches `expected`, where `…` is any run of characters."""
    pattern = ".*".join(re.escape(part) for part in expected.split("…"))
    return re.fullmatch(pattern, actual) is not None


def port_open(host, port):
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def stop(servers):
    for proc, _log in servers:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    for proc, log in servers:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def env():
    e = dict(os.environ)
    e.setdefault("CARGO_TERM_COLOR", "never")
    return e


def run_block(where, cmds, expected, skip):
    """Runs one block; returns a list of failure messages."""
    failures = []
    servers = []
    stdout = []
    try:
        for cmd in cmds:
            bare = strip_comment(cmd)
            if bare in skip:
                print(f"  skip  {bare}   (a step of .ci/run)")
                continue
            started = time.monotonic()
            if bare.endswith("&"):
                bare = bare[:-1].rstrip()
                # The address may be in the command or in its comment (`# http://HOST:PORT/…`).
                addr = ADDR.search(cmd)
                if addr is None:
                    failures.append(f"{where}: background command names no HOST:PORT: {bare}")
                    break
                host, port = addr.group(1), int(addr.group(2))
                host = "127.0.0.1" if host == "0.0.0.0" else host
                if port_open(host, port):
                    failures.append(f"{where}: {host}:{port} is already in use before `{bare}`")
                    break
                log = open(ROOT / "target" / f"readme-server-{port}.log", "w+", encoding="utf-8")
                proc = subprocess.Popen(
                    ["bash", "-o", "pipefail", "-c", bare],
                    cwd=ROOT, env=env(), stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True,
                )
                servers.append((proc, log))
                while not port_open(host, port):
                    if proc.poll() is not None or time.monotonic() - started > SERVER_TIMEOUT:
                        log.seek(0)
                        failures.append(
                            f"{where}: `{bare}` did not start listening on {host}:{port}\n"
                            + log.read()[-4000:]
                        )
                        break
                    time.sleep(0.2)
                if failures:
                    break
                print(f"  ok    {bare} &   (listening on {host}:{port} after "
                      f"{time.monotonic() - started:.1f} s)")
                continue
            try:
                done = subprocess.run(
                    ["bash", "-o", "pipefail", "-c", bare],
                    cwd=ROOT, env=env(), stdin=subprocess.DEVNULL, capture_output=True,
                    text=True, timeout=COMMAND_TIMEOUT,
                )
            except subprocess.TimeoutExpired:
                failures.append(f"{where}: `{bare}` did not finish in {COMMAND_TIMEOUT} s")
                break
            took = time.monotonic() - started
            if done.returncode != 0:
                failures.append(
                    f"{where}: `{bare}` exited with {done.returncode}\n--- stdout\n"
                    f"{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}"
                )
                break
            print(f"  ok    {bare[:110]}{'…' if len(bare) > 110 else ''}   ({took:.1f} s)")
            stdout.extend(done.stdout.splitlines())
    finally:
        stop(servers)
    if expected is not None and not failures:
        got = [line.rstrip() for line in stdout]
        want = [line.rstrip() for line in expected]
        while want and not want[-1]:
            want.pop()
        while got and not got[-1]:
            got.pop()
        bad = len(got) != len(want) or not all(matches(w, g) for w, g in zip(want, got))
        if bad:
            failures.append(
                f"{where}: the output differs from the ```text block after it\n--- expected\n"
                + "\n".join(want) + "\n--- got\n" + "\n".join(got)
            )
        else:
            print(f"  ok    output matches the {len(want)} line(s) shown")
    return failures


def main(argv):
    list_only = "--list" in argv
    files = [Path(a) for a in argv if a != "--list"]
    if not files:
        files = ([ROOT / "README.md"] + sorted((ROOT / "docs/src").rglob("*.md"))
                 + sorted((ROOT / "crates/duomcp/examples").glob("*.rs")))
    skip = ci_steps()
    failures = []
    count = 0
    for path in files:
        path = path if path.is_absolute() else (Path.cwd() / path)
        found = blocks(doc_markdown(path))
        rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        for i, block in enumerate(found):
            if block["lang"] != "sh":
                continue
            cmds = commands(block["lines"])
            nxt = found[i + 1] if i + 1 < len(found) else None
            expected = None
            if nxt is not None and nxt["lang"] == "text" and not nxt["prose_before"]:
                expected = nxt["lines"]
            where = f"{rel}:{block['line']}"
            count += 1
            print(f"== {where} ({len(cmds)} command(s)"
                  f"{', output checked' if expected is not None else ''})", flush=True)
            if list_only:
                for cmd in cmds:
                    print(f"  {cmd}")
                continue
            failures.extend(run_block(where, cmds, expected, skip))
            sys.stdout.flush()
    if count == 0:
        failures.append("no ```sh block found: nothing was checked")
    for failure in failures:
        print(f"\nFAILED {failure}", file=sys.stderr)
    if not list_only:
        print(f"\n{count} shell block(s), {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
