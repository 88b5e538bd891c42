# Shared by bench/replicas.sh and bench/scale.sh (sourced, not run): release binaries, the
# processes started (all stopped on exit), free ports, HAProxy in front of replicas, a
# redis-server or a Redis Cluster, and Redis's command counts.
#
# The sourcing script sets ROOT (the repository), OUT (its report directory) and LIB_NAME (its
# name, for messages) first.

# Release builds of duomcp-echo with Redis, and with `cli` of duomcp (the load generator), unless
# DUOMCP_BIN_DIR names a directory holding them; sets BIN.
build_bins() { # [cli]
  if [ -z "${DUOMCP_BIN_DIR:-}" ]; then
    if [ "${1:-}" = cli ]; then
      (cd "$ROOT" && cargo build --release --locked -p duomcp-cli --bin duomcp >&2)
    fi
    (cd "$ROOT" && cargo build --release --locked -p duomcp-echo --features redis >&2)
    DUOMCP_BIN_DIR=${CARGO_TARGET_DIR:-$ROOT/target}/release
  fi
  BIN=$DUOMCP_BIN_DIR
}

need_tools() {
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "$LIB_NAME: $tool is not installed" >&2; exit 1; }
  done
}

# Every process started here; stop_all (the EXIT trap) stops them, waiting for each.
PIDS=()
stop_all() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
# Stops the processes named (and forgets them).
stop_some() {
  local p q keep=()
  for p in "$@"; do kill "$p" 2>/dev/null || true; done
  for p in "$@"; do wait "$p" 2>/dev/null || true; done
  for q in "${PIDS[@]}"; do
    for p in "$@"; do [ "$p" = "$q" ] && continue 2; done
    keep+=("$q")
  done
  PIDS=("${keep[@]}")
}

wait_port() {
  for _ in $(seq 1 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "$LIB_NAME: nothing listens on 127.0.0.1:$1 (logs: $OUT)" >&2; exit 1
}

# N free loopback ports, one a line (bound at once, then released).
free_ports() {
  python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print("\n".join(str(s.getsockname()[1]) for s in socks))
PY
}

# HAProxy on 127.0.0.1:PORT, round robin over the backend ports (as deploy/haproxy.cfg: every
# request balanced, connections to the replicas kept alive). Its pid is the last of PIDS.
# BALANCE=session balances by a hash of the Mcp-Session-Id header instead (consistent hashing;
# requests without one, `initialize` and 2026-07-28 requests, still round robin).
lb() { # port, backend ports...
  local port=$1; shift
  {
    sed -n '/^global/,/^frontend/p' "$ROOT/deploy/haproxy.cfg" | sed '$d'
    printf 'frontend mcp\n  bind 127.0.0.1:%s\n  default_backend replicas\n\nbackend replicas\n' "$port"
    if [ "${BALANCE:-roundrobin}" = session ]; then
      printf '  balance hdr(Mcp-Session-Id)\n  hash-type consistent\n'
    else
      printf '  balance roundrobin\n'
    fi
    local n=0; for b in "$@"; do n=$((n + 1)); printf '  server r%s 127.0.0.1:%s\n' "$n" "$b"; done
  } >"$OUT/haproxy-$port.cfg"
  haproxy -db -f "$OUT/haproxy-$port.cfg" >"$OUT/haproxy-$port.log" 2>&1 & PIDS+=($!)
  wait_port "$port"
}

# One redis-server on 127.0.0.1:PORT, no persistence; its pid is the last of PIDS.
redis_single() { # port
  redis-server --port "$1" --bind 127.0.0.1 --save "" --appendonly no --dir "$OUT" \
    >"$OUT/redis-$1.log" 2>&1 & PIDS+=($!)
  wait_port "$1"
}

# A Redis Cluster of three masters with one replica each on the six ports given (cluster bus
# ports picked free), no persistence, as crates/duomcp-testkit/src/cluster.rs makes it; waits
# until every node says cluster_state:ok. Sets CLUSTER_PIDS.
CLUSTER_PIDS=()
redis_cluster() { # six ports
  local p bus dir
  local buses=($(free_ports 6)) i=0
  for p in "$@"; do
    bus=${buses[$i]}; i=$((i + 1))
    dir="$OUT/cluster-$p"; mkdir -p "$dir"
    redis-server --port "$p" --cluster-port "$bus" --bind 127.0.0.1 --save "" --appendonly no \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 1000 \
      --dir "$dir" >"$dir/redis.log" 2>&1 & PIDS+=($!)
    CLUSTER_PIDS+=($!)
  done
  for p in "$@"; do wait_port "$p"; done
  local nodes=(); for p in "$@"; do nodes+=("127.0.0.1:$p"); done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes \
    >"$OUT/cluster-create.log" 2>&1 || { echo "$LIB_NAME: redis-cli --cluster create failed (see $OUT/cluster-create.log)" >&2; exit 1; }
  for _ in $(seq 1 200); do
    local ok=0
    for p in "$@"; do
      redis-cli -p "$p" CLUSTER INFO 2>/dev/null | grep -q '^cluster_state:ok' && ok=$((ok + 1))
    done
    [ "$ok" = "$#" ] && return 0
    sleep 0.1
  done
  echo "$LIB_NAME: the Redis Cluster is not ok (logs: $OUT)" >&2; exit 1
}

# `INFO commandstats` of the Redis on each port given, summed per command: `cmdstat_NAME:calls=N`.
commandstats() { # ports...
  local p
  for p in "$@"; do redis-cli -p "$p" INFO commandstats | tr -d '\r' | { grep '^cmdstat_' || true; }; done |
    awk -F'[:=,]' '{ n[$1] += $3 } END { for (k in n) printf "%s:calls=%d\n", k, n[k] }' | sort
}

# CPU time (clock ticks, user + system) of the processes named.
cpu() { local t=0 f; for p in "$@"; do read -r -a f <"/proc/$p/stat"; t=$((t + f[13] + f[14])); done; echo "$t"; }
