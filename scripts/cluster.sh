#!/usr/bin/env bash
# Redis, three `duomcp serve --http --redis` replicas and HAProxy round robin in front, all on
# loopback (README: "Several replicas").
#
#   scripts/cluster.sh up      # start; clients use http://127.0.0.1:3100/mcp
#   scripts/cluster.sh roll    # rolling restart: each replica in turn gets SIGTERM, drains
#                              # (3 s, /readyz says 503), exits and starts again on its port
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

start_replica() { # duomcp binary, replica number
  # --drain 3: on SIGTERM, /readyz says 503 for 3 s (HAProxy's checks take the replica out)
  # while it still serves, then the graceful shutdown.
  "$1" serve --http "127.0.0.1:310$2" --redis "redis://127.0.0.1:$REDIS_PORT/" \
    --state-key-file "$DIR/keyring" --drain 3 >>"$DIR/replica$2.log" 2>&1 &
  echo $! >"$DIR/replica$2.pid"
}

ready() ( # port: whether GET /readyz answers 200 (a subshell: a refused connect ends it alone)
  exec 2>/dev/null
  exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
  printf 'GET /readyz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  IFS= read -r line <&3 || true
  case $line in *" 200 "*) exit 0 ;; *) exit 1 ;; esac
)

roll() {
  local duomcp; duomcp=$(bin)
  for i in 1 2 3; do
    local pid; pid=$(cat "$DIR/replica$i.pid")
    kill -TERM "$pid"
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "cluster.sh: replica $i still runs 30 s after SIGTERM (logs: $DIR)" >&2
      return 1
    fi
    start_replica "$duomcp" "$i"
    for _ in $(seq 1 100); do ready "310$i" && break; sleep 0.1; done
    ready "310$i" || { echo "cluster.sh: replica $i not ready again (logs: $DIR)" >&2; return 1; }
    # HAProxy takes it back after two good checks (deploy/haproxy.cfg: 1 s apart).
    sleep 2
    echo "cluster.sh: replica $i restarted"
  done
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
  for i in 1 2 3; do start_replica "$duomcp" "$i"; done
  for i in 1 2 3; do wait_port "310$i" "replica $i"; done
  haproxy -db -f deploy/haproxy.cfg >"$DIR/haproxy.log" 2>&1 &
  echo $! >"$DIR/haproxy.pid"
  wait_port 3100 haproxy
  echo "cluster.sh: up: http://127.0.0.1:3100/mcp (replicas 3101-3103, Redis $REDIS_PORT)"
}

down() {
  local pids=()
  for p in haproxy replica1 replica2 replica3 redis; do
    if [ -f "$DIR/$p.pid" ]; then
      pids+=("$(cat "$DIR/$p.pid")")
      kill "${pids[-1]}" 2>/dev/null || true
      rm -f "$DIR/$p.pid"
    fi
  done
  # The replicas drain (3 s) before they exit: wait, so that their ports are free again.
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
  echo "cluster.sh: down"
}

case "${1:-}" in
  up) up ;;
  roll) roll ;;
  down) down ;;
  *) echo "usage: scripts/cluster.sh up|roll|down" >&2; exit 2 ;;
esac
