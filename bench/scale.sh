#!/usr/bin/env bash
# A fleet on one machine (issue 36): 1, 3, 6 and 12 `duomcp-echo http PORT REDIS_URL` replicas
# behind HAProxy round robin, on one redis-server and on a Redis Cluster of three masters with
# one replica each, loaded with session-shaped 2025-11-25 traffic (bench/scale_load.py:
# initialize, notifications/initialized, 3 tools/call, logging/setLevel, tools/call, DELETE;
# the requests of a session land on several replicas) and with 2026-07-28 tools/call.
#
#   bench/scale.sh                                   # ≈ 2.5 min: 16 cells of 1 + 6 s, memory
#   SECS=10 REPLICAS="3 12" BACKENDS=cluster ERAS=legacy bench/scale.sh
#   SECS=1 WARMUP=0.5 REPLICAS="1 3" MEMSESSIONS=100 bench/scale.sh     # a smoke run, ≈ 30 s
#
# Per request, over each cell's measured window: the Redis commands (INFO commandstats; on the
# cluster the three masters; inside a script counted too, in brackets the evalsha round
# trips), the bus messages published, and the key figure, the bus messages a replica receives
# from the others per request it serves (every replica prints its counts on SIGUSR1:
# `duomcp::redis::BusCounts`, the `duomcp_bus_messages_*_total` metrics; round robin spreads
# the requests evenly, so that is all replicas' received messages over all requests); the p99
# added over the 1-replica cell of the same back end and era (medians over PASSES); the server
# CPU (replicas, HAProxy, Redis) per request; the 1-minute load average at the end of each
# pass. Then Redis memory per idle session (MEMSESSIONS sessions held open on one replica:
# used_memory before and after, on a Redis emptied first; MEMORY USAGE of one session's keys).
# The markdown table goes to stdout and to $OUT/table.md (default target/bench-scale/).
#
# Knobs (environment): SECS (measured seconds per cell, 6), WARMUP (1), CONNS (connections of
# the load, 24), CALLS (tools/call before logging/setLevel, 3), REPLICAS ("1 3 6 12"; the
# added p99 needs 1), BACKENDS ("redis cluster"), ERAS ("legacy modern"), MEMSESSIONS (2000;
# 0: skip), PASSES (1), DUOMCP_BIN_DIR (a prebuilt duomcp-echo with `--features redis`; else
# it is built here). Needs redis-server, redis-cli, haproxy and python3. Every process started
# here binds 127.0.0.1 on a free port and is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/target/bench-scale}
LIB_NAME=scale.sh

# `scale.sh --snapshot FILE`: the hook bench/scale_load.py runs when its window opens and
# closes, with the cell's processes in the environment (SNAP_*).
if [ "${1:-}" = --snapshot ]; then
  # shellcheck source=bench/lib.sh
  . "$ROOT/bench/lib.sh"
  f=$2
  read -r -a pids <<<"$SNAP_REPLICA_PIDS"
  read -r -a logs <<<"$SNAP_REPLICA_LOGS"
  read -r -a rports <<<"$SNAP_REDIS_PORTS"
  read -r -a cpus <<<"$SNAP_CPU_PIDS"
  declare -a seen
  for i in "${!pids[@]}"; do
    seen[i]=$(grep -c '^duomcp-echo: bus ' "${logs[$i]}" || true)
    kill -USR1 "${pids[$i]}"
  done
  # One reading per Redis: the shards' and the sums agree.
  for p in "${rports[@]}"; do commandstats "$p" >"$f.cmds-$p"; done
  for p in "${rports[@]}"; do cat "$f.cmds-$p"; done |
    awk -F'[:=]' '{ n[$1] += $3 } END { for (k in n) printf "%s:calls=%d\n", k, n[k] }' | sort >"$f.cmds"
  for p in "${rports[@]}"; do echo "$p $(awk -F= '{ n += $2 } END { print n + 0 }' "$f.cmds-$p")"; done >"$f.shards"
  cpu "${cpus[@]}" >"$f.cpu"
  read -r -a rcpus <<<"$SNAP_REDIS_PIDS"
  cpu "${rcpus[@]}" >"$f.rcpu"
  : >"$f.bus"
  for i in "${!pids[@]}"; do
    for _ in $(seq 1 300); do
      [ "$(grep -c '^duomcp-echo: bus ' "${logs[$i]}" || true)" -gt "${seen[$i]}" ] && break
      sleep 0.01
    done
    grep '^duomcp-echo: bus ' "${logs[$i]}" | tail -n 1 | awk '{ print $4, $6 }' >>"$f.bus"
  done
  exit 0
fi

SECS=${SECS:-6}
WARMUP=${WARMUP:-1}
CONNS=${CONNS:-24}
CALLS=${CALLS:-3}
REPLICAS=${REPLICAS:-1 3 6 12}
BACKENDS=${BACKENDS:-redis cluster}
ERAS=${ERAS:-legacy modern}
MEMSESSIONS=${MEMSESSIONS:-2000}
PASSES=${PASSES:-1}
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
build_bins
need_tools redis-server redis-cli haproxy python3
rm -rf "$OUT"; mkdir -p "$OUT"
trap stop_all EXIT
started=$(date +%s)

mapfile -t ports < <(free_ports 7)
REDIS=${ports[0]}
CLUSTER=("${ports[@]:1:6}")
case " $BACKENDS " in *" redis "*) redis_single "$REDIS"; REDIS_PID=${PIDS[-1]} ;; esac
MASTERS=()
MASTER_PIDS=()
case " $BACKENDS " in
  *" cluster "*)
    redis_cluster "${CLUSTER[@]}"
    for i in "${!CLUSTER[@]}"; do
      if redis-cli -p "${CLUSTER[$i]}" ROLE | head -n 1 | grep -q master; then
        MASTERS+=("${CLUSTER[$i]}"); MASTER_PIDS+=("${CLUSTER_PIDS[$i]}")
      fi
    done
    ;;
esac
cluster_url() { local s=() p; for p in "${CLUSTER[@]}"; do s+=("127.0.0.1:$p"); done; (IFS=,; echo "redis+cluster://${s[*]}"); }

# How many buses listen: PUBSUB NUMSUB on one server, SHARDNUMSUB summed over the masters.
bus_listeners() { # backend
  if [ "$1" = redis ]; then
    redis-cli -p "$REDIS" PUBSUB NUMSUB duomcp:bus | sed -n 2p
  else
    local p n=0 c
    for p in "${MASTERS[@]}"; do
      c=$(redis-cli -p "$p" PUBSUB SHARDNUMSUB duomcp:bus 2>/dev/null | sed -n 2p)
      n=$((n + ${c:-0}))
    done
    echo "$n"
  fi
}

for backend in $BACKENDS; do
  if [ "$backend" = redis ]; then
    url="redis://127.0.0.1:$REDIS/"; rports=("$REDIS"); rpids=("$REDIS_PID")
  else
    url=$(cluster_url); rports=("${MASTERS[@]}"); rpids=("${CLUSTER_PIDS[@]}")
  fi
  for n in $REPLICAS; do
    mapfile -t rp < <(free_ports $((n + 1)))
    lbport=${rp[0]}
    reps=(); logs=()
    for i in $(seq 1 "$n"); do
      log="$OUT/$backend-$n-replica$i.log"
      "$BIN/duomcp-echo" http "${rp[$i]}" "$url" 2>"$log" & PIDS+=($!)
      reps+=($!); logs+=("$log")
    done
    for i in $(seq 1 "$n"); do wait_port "${rp[$i]}"; done
    lb "$lbport" "${rp[@]:1}"
    haproxy_pid=${PIDS[-1]}
    for _ in $(seq 1 100); do
      [ "$(bus_listeners "$backend")" -ge "$n" ] && break
      sleep 0.05
    done
    export SNAP_REPLICA_PIDS="${reps[*]}" SNAP_REPLICA_LOGS="${logs[*]}"
    export SNAP_REDIS_PORTS="${rports[*]}" SNAP_REDIS_PIDS="${rpids[*]}" SNAP_CPU_PIDS="${reps[*]} $haproxy_pid ${rpids[*]}"
    for pass in $(seq 1 "$PASSES"); do for era in $ERAS; do
      tag="$backend-$era-$n-$pass"
      python3 bench/scale_load.py --url "http://127.0.0.1:$lbport/mcp" --era "$era" \
        --connections "$CONNS" --duration "$SECS" --warmup "$WARMUP" --calls "$CALLS" \
        --at-start "'$ROOT/bench/scale.sh' --snapshot '$OUT/$tag.before'" \
        --at-end "'$ROOT/bench/scale.sh' --snapshot '$OUT/$tag.after'" \
        --json >"$OUT/$tag.json"
      cut -d' ' -f1 /proc/loadavg >"$OUT/$tag.load"
      echo "scale.sh: $tag done (load $(cat "$OUT/$tag.load"))" >&2
    done; done
    stop_some "${reps[@]}" "$haproxy_pid"
  done
done

# Redis memory per idle 2025-11-25 session: MEMSESSIONS sessions opened on one replica and
# left open.
if [ "$MEMSESSIONS" -gt 0 ]; then
  for backend in $BACKENDS; do
    if [ "$backend" = redis ]; then
      url="redis://127.0.0.1:$REDIS/"; rports=("$REDIS"); cli=(redis-cli -p "$REDIS")
    else
      url=$(cluster_url); rports=("${MASTERS[@]}"); cli=(redis-cli -c -p "${MASTERS[0]}")
    fi
    mem() { local p t=0 m; for p in "${rports[@]}"; do
      m=$(redis-cli -p "$p" INFO memory | tr -d '\r' | sed -n 's/^used_memory://p'); t=$((t + m)); done; echo "$t"; }
    keys() { local p t=0 k; for p in "${rports[@]}"; do k=$(redis-cli -p "$p" DBSIZE); t=$((t + k)); done; echo "$t"; }
    # What the load cells left (keys expiring by themselves) would blur the count.
    for p in "${rports[@]}"; do redis-cli -p "$p" FLUSHALL >/dev/null; done
    port=$(free_ports 1)
    "$BIN/duomcp-echo" http "$port" "$url" 2>"$OUT/$backend-memory.log" & PIDS+=($!)
    rep=$!
    wait_port "$port"
    before=$(mem); kbefore=$(keys)
    python3 bench/scale_load.py --url "http://127.0.0.1:$port/mcp" --hold "$MEMSESSIONS" >"$OUT/$backend-memory.sids"
    sleep 0.5
    after=$(mem); kafter=$(keys)
    sid=$(head -n 1 "$OUT/$backend-memory.sids")
    # Every key of one session (its id is their hash tag: one node holds them all).
    record=0; names=()
    for p in "${rports[@]}"; do
      while read -r key; do
        [ -n "$key" ] || continue
        record=$((record + $(redis-cli -p "$p" MEMORY USAGE "$key" SAMPLES 0)))
        names+=("${key//$sid/ID}")
      done < <(redis-cli -p "$p" --scan --pattern "*$sid*")
    done
    echo "$backend $MEMSESSIONS $before $after $kbefore $kafter $record $(IFS=,; echo "${names[*]}")" >"$OUT/$backend-memory.txt"
    echo "scale.sh: $backend memory: $(cat "$OUT/$backend-memory.txt")" >&2
    stop_some "$rep"
  done
fi

python3 - "$OUT" "$(getconf CLK_TCK)" "$REPLICAS" "$BACKENDS" "$ERAS" "$MEMSESSIONS" "$PASSES" <<'PY' | tee "$OUT/table.md"
import json, pathlib, statistics, sys
out, hz = pathlib.Path(sys.argv[1]), int(sys.argv[2])
replicas, backends, eras = sys.argv[3].split(), sys.argv[4].split(), sys.argv[5].split()
memsessions, passes = int(sys.argv[6]), int(sys.argv[7])
def cmds(path):
    d = {}
    for line in path.read_text().splitlines():
        name, rest = line.split(":", 1)
        d[name[len("cmdstat_"):]] = int(rest.split("=")[1])
    return d
def bus(path):
    return [tuple(int(x) for x in l.split()) for l in path.read_text().splitlines() if l.strip()]
era_name = {"legacy": "2025-11-25", "modern": "2026-07-28"}
def shards(path):
    return {l.split()[0]: int(l.split()[1]) for l in path.read_text().splitlines() if l.strip()}
print("| Redis | era | replicas | req/s | p50 µs | p99 µs | p99 added vs 1 | Redis commands / request (evalsha) | busiest shard's commands / request | bus published / request | **bus received per replica per request it serves** | server CPU µs / request (Redis's) | errors | load |")
print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
for backend in backends:
    for era in eras:
        base = None
        for n in replicas:
            runs = []
            for p in range(1, passes + 1):
                tag = f"{backend}-{era}-{n}-{p}"
                r = json.loads((out / f"{tag}.json").read_text())
                b, a = cmds(out / f"{tag}.before.cmds"), cmds(out / f"{tag}.after.cmds")
                bb, ba = bus(out / f"{tag}.before.bus"), bus(out / f"{tag}.after.bus")
                runs.append({
                    "r": r,
                    "cmds": sum(a.values()) - sum(b.values()),
                    "evalsha": sum(a.get(k, 0) - b.get(k, 0) for k in ("evalsha", "eval")),
                    "pub": sum(x[0] for x in ba) - sum(x[0] for x in bb),
                    "recv": sum(x[1] for x in ba) - sum(x[1] for x in bb),
                    "ticks": int((out / f"{tag}.after.cpu").read_text()) - int((out / f"{tag}.before.cpu").read_text()),
                    "load": (out / f"{tag}.load").read_text().strip(),
                    "rticks": int((out / f"{tag}.after.rcpu").read_text()) - int((out / f"{tag}.before.rcpu").read_text()),
                    "shards": (shards(out / f"{tag}.before.shards"), shards(out / f"{tag}.after.shards")),
                })
            reqs = max(sum(x["r"]["requests"] for x in runs), 1)
            per = lambda k: sum(x[k] for x in runs) / reqs
            rps = statistics.median(x["r"]["rps"] for x in runs)
            p50 = statistics.median(x["r"]["p50_us"] for x in runs)
            p99 = statistics.median(x["r"]["p99_us"] for x in runs)
            if n == "1":
                base = p99
            added = f"{p99 - base:+.0f}" if base is not None else "–"
            errors = sum(x["r"]["errors"] for x in runs)
            ports = runs[0]["shards"][1].keys()
            busiest = max(sum(x["shards"][1][p] - x["shards"][0].get(p, 0) for x in runs) for p in ports) / reqs
            load = ", ".join(x["load"] for x in runs)
            # Round robin spreads the requests evenly: what every replica received, over the
            # requests, is what one replica receives per request it serves.
            print(f"| {'one server' if backend == 'redis' else 'cluster 3+3'} | {era_name[era]} | {n} | {rps:.0f} | {p50:.0f} | {p99:.0f} | {added} "
                  f"| {per('cmds'):.2f} ({per('evalsha'):.2f}) | {busiest:.2f} | {per('pub'):.2f} | **{per('recv'):.2f}** "
                  f"| {per('ticks') * 1e6 / hz:.0f} ({per('rticks') * 1e6 / hz:.0f}) | {errors} | {load} |")
errs = [json.loads(p.read_text()).get("first_error") for p in sorted(out.glob("*.json"))]
errs = [e for e in errs if e]
if errs:
    print(f"\nfirst error: {errs[0]}")
if memsessions:
    print("\n| Redis | sessions held | used_memory added / session | keys added / session | MEMORY USAGE of one session's keys | its keys |")
    print("|---|--:|--:|--:|--:|---|")
    for backend in backends:
        p = out / f"{backend}-memory.txt"
        if not p.exists():
            continue
        _, n, before, after, kb, ka, record, names = p.read_text().split()
        n = int(n)
        keys = ", ".join("`" + k + "`" for k in sorted(names.split(",")))
        print(f"| {'one server' if backend == 'redis' else 'cluster 3+3 (masters)'} | {n} | {(int(after) - int(before)) / n:.0f} B | {(int(ka) - int(kb)) / n:.2f} | {record} B | {keys} |")
PY
echo "scale.sh: $(( $(date +%s) - started )) s; reports in $OUT" >&2
