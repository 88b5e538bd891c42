#!/usr/bin/env bash
# Several replicas (issue 17): `duomcp bench` through HAProxy round robin, one duomcp-echo
# replica in memory vs three duomcp-echo replicas sharing a redis-server, both revisions,
# 32 connections. Both set-ups run at once and are loaded in turn, pass by pass (the machine
# may be shared: the load average is written next to every number); the table reports medians.
#
#   bench/replicas.sh                 # 3 passes of 10 s per cell
#   PASSES=5 SECS=20 bench/replicas.sh
#   REPLICA_THREADS=1 bench/replicas.sh    # the three replicas on one tokio worker thread each
#   REPLICA_CPUS=0.67 bench/replicas.sh    # each of the three in a cgroup with that CPU quota
#
# REPLICA_CPUS puts each of the three replicas in a cgroup of its own with that CPU quota (in
# cores), as a container's CPU limit does (cgroup v1 `cpu` or v2; needs root): the replica is
# started with its defaults, and tokio sizes its worker threads to the quota itself
# (`std::thread::available_parallelism` reads it).
#
# Redis commands per request come from `INFO commandstats` on the three replicas at the end of
# each run's warm-up (the `initialize`s are in it) and after the run (commands inside a Lua
# script are counted too; `evalsha` is the round trips), divided by the measured requests.
# Server CPU per request: the user + system time of each set-up's processes (its HAProxy and
# replicas, and Redis for the three) over the same window, divided likewise: it varies less
# than the throughput when the machine is shared.
# Needs redis-server and haproxy, and release builds of duomcp and duomcp-echo (built here
# unless DUOMCP_BIN_DIR names a directory holding them). Every process started here is stopped
# on exit. Reports go to $OUT (default target/bench-replicas/).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/target/bench-replicas}
PASSES=${PASSES:-3}
SECS=${SECS:-10}
WARMUP=${WARMUP:-1}
CONNS=${CONNS:-32}
BASE=${BENCH_REPLICAS_PORT:-39300}
LIB_NAME=replicas.sh
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
build_bins cli
need_tools redis-server haproxy redis-cli
rm -rf "$OUT"; mkdir -p "$OUT"
CGROUPS=()
stop_and_clean() {
  stop_all
  local g
  for g in "${CGROUPS[@]}"; do rmdir "$g" 2>/dev/null || true; done
}
trap stop_and_clean EXIT
# in_quota NAME CMD…: CMD in cgroup NAME with REPLICA_CPUS cores (as it is when unset).
in_quota() {
  local name=$1 dir period=100000 quota
  shift
  [ -n "${REPLICA_CPUS:-}" ] || { exec "$@"; }
  quota=$(awk -v c="$REPLICA_CPUS" -v p="$period" 'BEGIN { printf "%d", c * p }')
  if [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
    dir=/sys/fs/cgroup/cpu/$name
    mkdir -p "$dir" && echo "$period" >"$dir/cpu.cfs_period_us" && echo "$quota" >"$dir/cpu.cfs_quota_us"
  elif grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    dir=/sys/fs/cgroup/$name
    mkdir -p "$dir" && echo "$quota $period" >"$dir/cpu.max"
  else
    echo "replicas.sh: REPLICA_CPUS needs a cgroup cpu controller (v1 or v2) and root" >&2
    exit 1
  fi
  echo "$BASHPID" >"$dir/cgroup.procs"
  exec "$@"
}

REDIS=$((BASE + 9))
redis_single "$REDIS"
REDIS_PID=${PIDS[-1]}
# The single replica (in memory) and the three (on Redis).
"$BIN/duomcp-echo" http $((BASE + 10)) 2>"$OUT/single.log" & PIDS+=($!)
SINGLE_PIDS=($!)
THREE_PIDS=("$REDIS_PID")
for i in 1 2 3; do
  # REPLICA_THREADS: each of the three replicas' tokio worker threads (default: one per core,
  # as the single replica; 1 sizes each to its share of a small machine).
  # REPLICA_CPUS: see above.
  (in_quota "duomcp-bench-replica$i" env ${REPLICA_THREADS:+TOKIO_WORKER_THREADS=$REPLICA_THREADS} \
    "$BIN/duomcp-echo" http $((BASE + 10 + i)) "redis://127.0.0.1:$REDIS/") 2>"$OUT/replica$i.log" & PIDS+=($!)
  THREE_PIDS+=($!)
  if [ -n "${REPLICA_CPUS:-}" ]; then
    CGROUPS+=("/sys/fs/cgroup/cpu/duomcp-bench-replica$i" "/sys/fs/cgroup/duomcp-bench-replica$i")
  fi
done
for i in 0 1 2 3; do wait_port $((BASE + 10 + i)); done

lb "$BASE" $((BASE + 10))
SINGLE_PIDS+=("${PIDS[-1]}")
lb $((BASE + 1)) $((BASE + 11)) $((BASE + 12)) $((BASE + 13))
THREE_PIDS+=("${PIDS[-1]}")
stats() { commandstats "$REDIS"; }
for pass in $(seq 1 "$PASSES"); do
  for era in modern legacy; do
    for setup in single three; do
      port=$BASE; procs=("${SINGLE_PIDS[@]}")
      [ "$setup" = three ] && { port=$((BASE + 1)); procs=("${THREE_PIDS[@]}"); }
      tag="$era-$setup-$pass"
      load=$(cut -d' ' -f1 /proc/loadavg)
      "$BIN/duomcp" bench --era "$era" --connections "$CONNS" --duration "$SECS" --warmup "$WARMUP" \
        --url "http://127.0.0.1:$port/mcp" --label "$setup" --json >"$OUT/$tag.json" &
      bench=$!
      # The load generator measures from warm-up + 200 ms after its connections are made: the
      # snapshot is taken then (a few ms early at most: an upper bound, hardly more).
      sleep "$(awk -v w="$WARMUP" 'BEGIN { print w + 0.2 }')"
      stats >"$OUT/$tag.before"; cpu "${procs[@]}" >"$OUT/$tag.cpu-before"
      wait "$bench"
      stats >"$OUT/$tag.after"; cpu "${procs[@]}" >"$OUT/$tag.cpu-after"
      echo "$load" >"$OUT/$tag.load"
      echo "replicas.sh: $tag done (load $load)" >&2
    done
  done
done
python3 - "$OUT" "$PASSES" "$(getconf CLK_TCK)" <<'PY'
import json, pathlib, statistics, sys
out, passes, hz = pathlib.Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
def stats(path):
    d = {}
    for line in path.read_text().splitlines():
        name, rest = line.split(":", 1)
        d[name[len("cmdstat_"):]] = int(dict(kv.split("=") for kv in rest.split(","))["calls"])
    return d
rows = {}
for era in ("modern", "legacy"):
    for setup in ("single", "three"):
        runs = []
        for p in range(1, passes + 1):
            tag = f"{era}-{setup}-{p}"
            r = json.loads((out / f"{tag}.json").read_text())
            b, a = stats(out / f"{tag}.before"), stats(out / f"{tag}.after")
            cmds = sum(a.values()) - sum(b.values())
            scripts = a.get("evalsha", 0) - b.get("evalsha", 0) + a.get("eval", 0) - b.get("eval", 0)
            load = (out / f"{tag}.load").read_text().strip()
            ticks = int((out / f"{tag}.cpu-after").read_text()) - int((out / f"{tag}.cpu-before").read_text())
            runs.append((r, cmds, scripts, load, ticks))
        rows[(era, setup)] = runs
print("| era | set-up | pass: rps (load) | median rps | p99 median µs | errors | Redis commands / request (round trips) | server CPU µs / request |")
print("|---|---|---|--:|--:|--:|--:|--:|")
for (era, setup), runs in rows.items():
    each = ", ".join(f"{r['rps']:.0f} ({load})" for r, _, _, load, _ in runs)
    rps = statistics.median(r["rps"] for r, *_ in runs)
    p99 = statistics.median(r["p99_us"] for r, *_ in runs)
    errors = sum(r["errors"] for r, *_ in runs)
    reqs = sum(r["requests"] for r, *_ in runs)
    # Commands and CPU are counted from the end of the warm-up (initialize included in it,
    # so left out) to the end of the run, per measured request.
    cmds = sum(c for _, c, _, _, _ in runs) / max(reqs, 1)
    scripts = sum(s for _, _, s, _, _ in runs) / max(reqs, 1)
    cpu_us = sum(t for *_, t in runs) * 1e6 / hz / max(reqs, 1)
    print(f"| {era} | {setup} | {each} | {rps:.0f} | {p99:.0f} | {errors} | {cmds:.2f} ({scripts:.2f}) | {cpu_us:.0f} |")
for era in ("modern", "legacy"):
    one = statistics.median(r["rps"] for r, *_ in rows[(era, "single")])
    three = statistics.median(r["rps"] for r, *_ in rows[(era, "three")])
    p1 = statistics.median(r["p99_us"] for r, *_ in rows[(era, "single")])
    p3 = statistics.median(r["p99_us"] for r, *_ in rows[(era, "three")])
    def cpu(setup):
        runs = rows[(era, setup)]
        return sum(t for *_, t in runs) * 1e6 / hz / max(sum(r["requests"] for r, *_ in runs), 1)
    print(f"\n{era}: three replicas on Redis = {100 * three / one:.1f} % of one in memory; p99 added {p3 - p1:+.0f} µs; "
          f"server CPU per request {cpu('three'):.0f} µs vs {cpu('single'):.0f} µs ({100 * cpu('single') / max(cpu('three'), 1e-9):.1f} % as efficient)")
PY
