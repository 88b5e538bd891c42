#!/usr/bin/env bash
# The gateway benchmark (issue 18; bench/README.md, "Gateway"): `duomcp bench` over Streamable
# HTTP, 32 keep-alive connections, against
#
#   direct      `duomcp-echo http PORT`                                (both revisions)
#   gateway     `duomcp gateway --http … --upstream-era ERA -- duomcp-echo stdio`, the client
#               speaking the upstream's revision (no bridging)
#   bridged     the same gateway, the client speaking the other revision (2026-07-28 client →
#               2025-11-25 upstream, and the reverse)
#
# for both client revisions, in the same run, alternating case by case within each pass
# (PASSES passes, default 3), then prints the medians, the gateway's share of the direct
# throughput and its added p99, with the load average before each pass (the machine may be
# shared), and the same ratios taken pass by pass (each case against the direct server run just
# before it in the same pass: the median and range of those). Targets (no bridging): ≥ 60 % of
# the direct throughput, ≤ 1 ms added p99.
#
#   bench/gateway.sh                     # ≈ 12 × PASSES × (DURATION + WARMUP + 1) s
#   PASSES=5 DURATION=10 bench/gateway.sh
#
# Env: DUOMCP_BIN_DIR (prebuilt `duomcp` and `duomcp-echo`; default: release build),
# PASSES, DURATION, WARMUP, CONNECTIONS, OUT (default target/bench-gateway), PORT.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PASSES=${PASSES:-3}
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-1}
CONNECTIONS=${CONNECTIONS:-32}
OUT=${OUT:-$ROOT/target/bench-gateway}
PORT=${PORT:-39331}
if [ -z "${DUOMCP_BIN_DIR:-}" ]; then
  cargo build --release --locked -p duomcp-cli --bin duomcp -p duomcp-echo
  DUOMCP_BIN_DIR=${CARGO_TARGET_DIR:-$ROOT/target}/release
fi
DUOMCP=$DUOMCP_BIN_DIR/duomcp
ECHO=$DUOMCP_BIN_DIR/duomcp-echo
rm -rf "$OUT"; mkdir -p "$OUT"

SRV=""
stop_server() { if [ -n "$SRV" ]; then kill "$SRV" 2>/dev/null || true; wait "$SRV" 2>/dev/null || true; SRV=""; fi; }
trap stop_server EXIT

wait_port() {
  for _ in $(seq 1 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "bench/gateway.sh: nothing listens on 127.0.0.1:$PORT" >&2
  exit 1
}

# case: name, client era, server kind (direct | gateway-legacy | gateway-modern)
run_case() {
  local pass=$1 name=$2 era=$3 kind=$4
  case $kind in
    direct) "$ECHO" http "$PORT" 2>>"$OUT/server.log" & ;;
    gateway-*) "$DUOMCP" gateway --http "127.0.0.1:$PORT" --upstream-era "${kind#gateway-}" \
      -- "$ECHO" stdio 2>>"$OUT/server.log" & ;;
  esac
  SRV=$!
  wait_port
  "$DUOMCP" bench --era "$era" --connections "$CONNECTIONS" --duration "$DURATION" \
    --warmup "$WARMUP" --url "http://127.0.0.1:$PORT/mcp" --pid "$SRV" --json \
    --label "$name" >"$OUT/$pass-$name.json"
  stop_server
}

CASES=(
  "direct-legacy legacy direct"
  "gateway-legacy legacy gateway-legacy"
  "direct-modern modern direct"
  "gateway-modern modern gateway-modern"
  "bridged-legacy-client legacy gateway-modern"
  "bridged-modern-client modern gateway-legacy"
)
for pass in $(seq 1 "$PASSES"); do
  echo "pass $pass/$PASSES (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  cut -d' ' -f1-3 /proc/loadavg >"$OUT/$pass-loadavg"
  for c in "${CASES[@]}"; do
    # shellcheck disable=SC2086
    run_case "$pass" $c
  done
done

python3 - "$OUT" "$PASSES" <<'EOF'
import json, statistics, sys
out, passes = sys.argv[1], int(sys.argv[2])
names = ["direct-legacy", "gateway-legacy", "direct-modern", "gateway-modern",
         "bridged-legacy-client", "bridged-modern-client"]
runs = {n: [json.load(open(f"{out}/{p}-{n}.json")) for p in range(1, passes + 1)] for n in names}
loads = [open(f"{out}/{p}-loadavg").read().strip() for p in range(1, passes + 1)]
med = {n: {k: statistics.median(r[k] for r in runs[n]) for k in ("rps", "p50_us", "p99_us")}
       for n in names}
errors = {n: sum(r["errors"] for r in runs[n]) for n in names}
print(f"\n{passes} passes, load average before each: {'; '.join(loads)}\n")
print("| case | client | rps (median) | p50 µs | p99 µs | errors | vs direct | paired by pass |")
print("|---|---|--:|--:|--:|--:|---|---|")
direct = {"legacy": "direct-legacy", "modern": "direct-modern"}
client = {"direct-legacy": "legacy", "gateway-legacy": "legacy", "direct-modern": "modern",
          "gateway-modern": "modern", "bridged-legacy-client": "legacy",
          "bridged-modern-client": "modern"}
status = 0
for n in names:
    m, d = med[n], med[direct[client[n]]]
    vs = paired = ""
    if not n.startswith("direct"):
        share = m["rps"] / d["rps"] * 100
        added = (m["p99_us"] - d["p99_us"]) / 1000
        vs = f"{share:.0f} % of the rps, p99 {added:+.2f} ms"
        # Each pass against the direct server of the same pass (run just before it): the
        # machine's speed drifts between passes, and a ratio within one pass cancels most of it.
        shares = sorted(r["rps"] / q["rps"] * 100 for r, q in zip(runs[n], runs[direct[client[n]]]))
        adds = sorted((r["p99_us"] - q["p99_us"]) / 1000 for r, q in zip(runs[n], runs[direct[client[n]]]))
        paired = (f"{statistics.median(shares):.0f} % ({shares[0]:.0f}–{shares[-1]:.0f}), "
                  f"p99 {statistics.median(adds):+.2f} ms")
    print(f"| {n} | {client[n]} | {m['rps']:.0f} | {m['p50_us']:.0f} | {m['p99_us']:.0f} "
          f"| {errors[n]} | {vs} | {paired} |")
    if errors[n]:
        status = 1
sys.exit(status)
EOF
