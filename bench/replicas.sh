#!/usr/bin/env bash
# Several replicas (issue 17): `duomcp bench` through HAProxy round robin, one duomcp-echo
# replica in memory vs three duomcp-echo replicas sharing a redis-server, both revisions,
# 32 connections. Both set-ups run at once and are loaded in turn, pass by pass (the machine
# may be shared: the load average is written next to every number); the table reports medians.
#
#   bench/replicas.sh                 # 3 passes of 10 s per cell
#   PASSES=5 SECS=20 bench/replicas.sh
#
# Redis commands per request come from `INFO commandstats` before and after each run on the
# three replicas (commands inside a Lua script are counted too; `evalsha` is the round trips).
# Needs redis-server and haproxy, and release builds of duomcp and duomcp-echo (built here
# unless DUOMCP_BIN_DIR names a directory holding them). Every process started here is stopped
# on exit. Reports go to $OUT (default target/bench-replicas/).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/target/bench-replicas}
PASSES=${PASSES:-3}
SECS=${SECS:-10}
CONNS=${CONNS:-32}
BASE=${BENCH_REPLICAS_PORT:-39300}
if [ -z "${DUOMCP_BIN_DIR:-}" ]; then
  cargo build --release --locked -p duomcp-cli --bin duomcp >&2
  cargo build --release --locked -p duomcp-echo --features redis >&2
  DUOMCP_BIN_DIR=${CARGO_TARGET_DIR:-$ROOT/target}/release
fi
BIN=$DUOMCP_BIN_DIR
for tool in redis-server haproxy redis-cli; do
  command -v "$tool" >/dev/null || { echo "replicas.sh: $tool is not installed" >&2; exit 1; }
done
rm -rf "$OUT"; mkdir -p "$OUT"

PIDS=()
stop_all() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done; }
trap stop_all EXIT
wait_port() {
  for _ in $(seq 1 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "replicas.sh: nothing listens on 127.0.0.1:$1 (logs: $OUT)" >&2; exit 1
}

REDIS=$((BASE + 9))
redis-server --port "$REDIS" --bind 127.0.0.1 --save "" --appendonly no --dir "$OUT" >"$OUT/redis.log" 2>&1 &
PIDS+=($!); wait_port "$REDIS"
# The single replica (in memory) and the three (on Redis).
"$BIN/duomcp-echo" http $((BASE + 10)) 2>"$OUT/single.log" & PIDS+=($!)
for i in 1 2 3; do
  "$BIN/duomcp-echo" http $((BASE + 10 + i)) "redis://127.0.0.1:$REDIS/" 2>"$OUT/replica$i.log" & PIDS+=($!)
done
for i in 0 1 2 3; do wait_port $((BASE + 10 + i)); done

lb() { # port, backend ports...
  local port=$1; shift
  {
    sed -n '/^global/,/^frontend/p' deploy/haproxy.cfg | sed '$d'
    printf 'frontend mcp\n  bind 127.0.0.1:%s\n  default_backend replicas\n\nbackend replicas\n' "$port"
    printf '  balance roundrobin\n  option http-server-close\n'
    local n=0; for b in "$@"; do n=$((n + 1)); printf '  server r%s 127.0.0.1:%s\n' "$n" "$b"; done
  } >"$OUT/haproxy-$port.cfg"
  haproxy -db -f "$OUT/haproxy-$port.cfg" >"$OUT/haproxy-$port.log" 2>&1 & PIDS+=($!)
  wait_port "$port"
}
lb "$BASE" $((BASE + 10))
lb $((BASE + 1)) $((BASE + 11)) $((BASE + 12)) $((BASE + 13))

stats() { redis-cli -p "$REDIS" INFO commandstats | tr -d '\r' | { grep '^cmdstat_' || true; }; }
for pass in $(seq 1 "$PASSES"); do
  for era in modern legacy; do
    for setup in single three; do
      port=$BASE; [ "$setup" = three ] && port=$((BASE + 1))
      tag="$era-$setup-$pass"
      stats >"$OUT/$tag.before"
      load=$(cut -d' ' -f1 /proc/loadavg)
      "$BIN/duomcp" bench --era "$era" --connections "$CONNS" --duration "$SECS" \
        --url "http://127.0.0.1:$port/mcp" --label "$setup" --json >"$OUT/$tag.json"
      stats >"$OUT/$tag.after"
      echo "$load" >"$OUT/$tag.load"
      echo "replicas.sh: $tag done (load $load)" >&2
    done
  done
done
python3 - "$OUT" "$PASSES" <<'PY'
import json, pathlib, statistics, sys
out, passes = pathlib.Path(sys.argv[1]), int(sys.argv[2])
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
            runs.append((r, cmds, scripts, load))
        rows[(era, setup)] = runs
print("| era | set-up | pass: rps (load) | median rps | p99 median µs | errors | Redis commands / request (round trips) |")
print("|---|---|---|--:|--:|--:|--:|")
for (era, setup), runs in rows.items():
    each = ", ".join(f"{r['rps']:.0f} ({load})" for r, _, _, load in runs)
    rps = statistics.median(r["rps"] for r, *_ in runs)
    p99 = statistics.median(r["p99_us"] for r, *_ in runs)
    errors = sum(r["errors"] for r, *_ in runs)
    reqs = sum(r["requests"] for r, *_ in runs)
    # Commands are counted over the whole run, warm-up included: per request measured, an
    # upper bound.
    cmds = sum(c for _, c, _, _ in runs) / max(reqs, 1)
    scripts = sum(s for _, _, s, _ in runs) / max(reqs, 1)
    print(f"| {era} | {setup} | {each} | {rps:.0f} | {p99:.0f} | {errors} | {cmds:.2f} ({scripts:.2f}) |")
for era in ("modern", "legacy"):
    one = statistics.median(r["rps"] for r, *_ in rows[(era, "single")])
    three = statistics.median(r["rps"] for r, *_ in rows[(era, "three")])
    p1 = statistics.median(r["p99_us"] for r, *_ in rows[(era, "single")])
    p3 = statistics.median(r["p99_us"] for r, *_ in rows[(era, "three")])
    print(f"\n{era}: three replicas on Redis = {100 * three / one:.1f} % of one in memory; p99 added {p3 - p1:+.0f} µs")
PY
