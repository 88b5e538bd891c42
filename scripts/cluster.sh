#!/usr/bin/env bash
# Redis, three `duomcp serve --http --redis` replicas and HAProxy round robin in front, all on
# loopback (README: "Several replicas").
#
#   scripts/cluster.sh up      # start; clients use http://127.0.0.1:3100/mcp
#   scripts/cluster.sh down    # stop everything it started
#
# Needs redis-server and haproxy (Debian packages of the same names) and a built `duomcp`
# (DUOMCP_BIN, default target/debug/duomcp, else target/release/duomcp, under $CARGO_TARGET_DIR
# when it is set). Ports: Redis 3199, replicas 3101-3103, HAProxy 3100. State (pids, logs, the keyring) lives in target/cluster/.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${CLUSTER_DIR:-$PWD/target/cluster}
REDIS_PORT=3199

bin() {
  if [ -n "${DUOMCP_BIN:-}" ]; then echo "$DUOMCP_BIN"; return; fi
  # CARGO_TARGET_DIR as cargo reads it: relative to the workspace root.
  local target=${CARGO_TARGET_DIR:-target}
  case $target in /*) ;; *) target=$PWD/$target ;; esac
  for b in "$target/debug/duomcp" "$target/release/duomcp"; do
    if [ -x "$b" ]; then echo "$b"; return; fi
  done
  echo "cluster.sh: no duomcp binary: cargo build -p duomcp-cli (or set DUOMCP_BIN)" >&2
  exit 1
}

wait_port() { # port, name
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "cluster.sh: $2 did not start on 127.0.0.1:$1 (logs: $DIR)" >&2
  return 1
}

up() {
  local duomcp; duomcp=$(bin)
  command -v redis-server >/dev/null || { echo "cluster.sh: redis-server is not installed" >&2; exit 1; }
  command -v haproxy >/dev/null || { echo "cluster.sh: haproxy is not installed" >&2; exit 1; }
  mkdir -p "$DIR"
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$DIR" \
    >"$DIR/redis.log" 2>&1 &
  echo $! >"$DIR/redis.pid"
  wait_port "$REDIS_PORT" redis-server
  # One keyring for all three (newest key first); rotate by putting a new line on top and
  # restarting the replicas one by one.
  [ -s "$DIR/keyring" ] || head -c 32 /dev/urandom | base64 >"$DIR/keyring"
  for i in 1 2 3; do
    "$duomcp" serve --http "127.0.0.1:310$i" --redis "redis://127.0.0.1:$REDIS_PORT/" \
      --state-key-file "$DIR/keyring" >"$DIR/replica$i.log" 2>&1 &
    echo $! >"$DIR/replica$i.pid"
  done
  for i in 1 2 3; do wait_port "310$i" "replica $i"; done
  haproxy -db -f deploy/haproxy.cfg >"$DIR/haproxy.log" 2>&1 &
  echo $! >"$DIR/haproxy.pid"
  wait_port 3100 haproxy
  echo "cluster.sh: up: http://127.0.0.1:3100/mcp (replicas 3101-3103, Redis $REDIS_PORT)"
}

down() {
  for p in haproxy replica1 replica2 replica3 redis; do
    if [ -f "$DIR/$p.pid" ]; then
      kill "$(cat "$DIR/$p.pid")" 2>/dev/null || true
      rm -f "$DIR/$p.pid"
    fi
  done
  echo "cluster.sh: down"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: scripts/cluster.sh up|down" >&2; exit 2 ;;
esac
