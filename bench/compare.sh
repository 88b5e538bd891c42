#!/usr/bin/env bash
# Side-by-side throughput of MCP echo servers (issue 9): duomcp, rmcp (the official Rust SDK),
# the official TypeScript and Python SDKs, and the transport ceilings (duomcp-ceiling: canned
# answers, no MCP logic), all loaded by `duomcp bench` with the same load:
#
#   stdio, window 32 and window 1;  Streamable HTTP, 32 connections and 1 connection;
#   each in both eras (legacy = 2025-11-25 with initialize, modern = 2026-07-28) where the
#   peer speaks the era;  64-byte payload;  DURATION s measured after WARMUP s.
#
#   bench/compare.sh                        # builds/installs everything, runs, prints the table
#   DURATION=10 WARMUP=2 bench/compare.sh   # longer cells
#   PEERS="duomcp rmcp ceiling" bench/compare.sh
#   DUOMCP_BIN_DIR=/path/to/release bench/compare.sh   # use prebuilt duomcp, duomcp-echo, duomcp-ceiling
#   IDLE_WAIT=120 bench/compare.sh          # on a shared machine: before each cell, wait up to 120 s
#                                           # for other work to stop (rows still flag a busy machine)
#   NICE=-10 bench/compare.sh               # (root) run the servers and the load ahead of other work
#   WRK=1 bench/compare.sh                  # HTTP cells also loaded by wrk (bench/wrk-echo.lua),
#                                           # a second load generator: the table's wrk columns
#
# Not part of the test suite. Needs cargo, node/npm (NODE=... to pick a node binary) and python3
# (3.10+); the TypeScript SDK goes into bench/peers/ts-echo/node_modules, the Python SDK into a
# venv in target/bench-peers/py-venv, rmcp-echo is built into target/bench-peers/rmcp.
# Servers listen on 127.0.0.1 only (free ports); every server started here is killed on exit.
# Reports (one JSON per run, server logs) go to $OUT (default target/bench-compare/); the markdown
# table is printed and written to $OUT/table.md. ~5 minutes with the defaults on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

DURATION=${DURATION:-5}
WARMUP=${WARMUP:-1}
PAYLOAD=${PAYLOAD:-64}
PEERS=${PEERS:-"duomcp rmcp ts-sdk py-sdk ceiling"}
OUT=${OUT:-$ROOT/target/bench-compare}
PEER_TARGET=$ROOT/target/bench-peers
NICE=${NICE:-0}             # e.g. -10 (root): run servers and the load above other work
IDLE_WAIT=${IDLE_WAIT:-0}   # before each cell, wait up to this many seconds for an idle machine
WRK=${WRK:-0}               # 1: every HTTP run again with wrk (a fresh server), its own columns
NODE=${NODE:-node}
PYTHON=${PYTHON:-python3}

log() { echo "compare: $*" >&2; }

# ---------------------------------------------------------------- build and install
if [ -n "${DUOMCP_BIN_DIR:-}" ]; then
  BIN=$DUOMCP_BIN_DIR
  log "using prebuilt duomcp binaries in $BIN"
else
  log "building duomcp (release)"
  cargo build --release --locked -p duomcp-cli >&2
  # On its own, so that the CLI's features are not unified into the echo server's build.
  cargo build --release --locked -p duomcp-echo >&2
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release"
fi
for b in duomcp duomcp-echo duomcp-ceiling; do
  [ -x "$BIN/$b" ] || { log "missing $BIN/$b"; exit 1; }
done
BENCH=$BIN/duomcp
if [ "$WRK" = 1 ] && ! command -v wrk >/dev/null; then
  log "WRK=1 needs wrk (Debian package wrk)"; exit 1
fi

want() { [[ " $PEERS " == *" $1 "* ]]; }

if want rmcp; then
  log "building rmcp-echo (release)"
  CARGO_TARGET_DIR=$PEER_TARGET/rmcp cargo build --release --locked \
    --manifest-path bench/peers/rmcp-echo/Cargo.toml >&2
fi
RMCP_ECHO=$PEER_TARGET/rmcp/release/rmcp-echo

if want ts-sdk; then
  if [ ! -f bench/peers/ts-echo/node_modules/.package-lock.json ] ||
    [ bench/peers/ts-echo/package-lock.json -nt bench/peers/ts-echo/node_modules/.package-lock.json ]; then
    log "installing the TypeScript SDK (npm ci)"
    (cd bench/peers/ts-echo && npm ci --no-audit --no-fund --loglevel=error >&2)
  fi
fi

PY_VENV=$PEER_TARGET/py-venv
if want py-sdk; then
  if [ ! -x "$PY_VENV/bin/python" ]; then
    log "creating the Python venv"
    "$PYTHON" -m venv "$PY_VENV"
  fi
  if ! cmp -s bench/peers/py-echo/requirements.txt "$PY_VENV/.installed" 2>/dev/null; then
    log "installing the Python SDK (pip)"
    "$PY_VENV/bin/pip" install --quiet --disable-pip-version-check -r bench/peers/py-echo/requirements.txt >&2
    cp bench/peers/py-echo/requirements.txt "$PY_VENV/.installed"
  fi
fi

# ---------------------------------------------------------------- peers
# server_cmd PEER stdio | server_cmd PEER http PORT: prints the command, one word a line.
server_cmd() {
  local peer=$1; shift
  case $peer in
    duomcp)  printf '%s\n' "$BIN/duomcp-echo" "$@" ;;
    rmcp)    printf '%s\n' "$RMCP_ECHO" "$@" ;;
    ts-sdk)  printf '%s\n' "$NODE" "$ROOT/bench/peers/ts-echo/server.mjs" "$@" ;;
    py-sdk)  printf '%s\n' "$PY_VENV/bin/python" "$ROOT/bench/peers/py-echo/server.py" "$@" ;;
    ceiling) printf '%s\n' "$BIN/duomcp-ceiling" "$@" ;;
  esac
}

# Whether PEER speaks ERA; prints the reason when it does not.
speaks() {
  case "$1/$2" in
    ts-sdk/modern)
      echo "the TypeScript SDK speaks up to 2025-11-25 only"; return 1 ;;
  esac
  return 0
}

sdk_version() {
  case $1 in
    duomcp)
      if [ -n "${DUOMCP_BIN_DIR:-}" ]; then
        echo "duomcp, prebuilt $BIN/duomcp-echo of $(date -u -r "$BIN/duomcp-echo" '+%Y-%m-%d %H:%M UTC')"
      else
        echo "duomcp $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo '?')"
      fi ;;
    rmcp)    sed -n 's/^rmcp = { version = "=\([^"]*\)".*/rmcp \1/p' bench/peers/rmcp-echo/Cargo.toml ;;
    ts-sdk)  echo "@modelcontextprotocol/sdk $("$NODE" -p "require('$ROOT/bench/peers/ts-echo/node_modules/@modelcontextprotocol/sdk/package.json').version" 2>/dev/null) on node $("$NODE" --version 2>&1 | head -n 1)" ;;
    py-sdk)  echo "mcp $("$PY_VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null) on $("$PY_VENV/bin/python" --version 2>&1)" ;;
    ceiling) echo "duomcp-ceiling (canned answers)" ;;
  esac
}

# ---------------------------------------------------------------- process bookkeeping
# Running and not a zombie.
alive() {
  local st
  st=$(awk '{sub(/.*\) /, ""); print $1}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ]
}
SERVER_PID=""   # the HTTP server of the current cell (one at a time)
stop_server() {
  [ -n "$SERVER_PID" ] || return 0
  kill "$SERVER_PID" 2>/dev/null || true
  for _ in $(seq 1 30); do alive "$SERVER_PID" || break; sleep 0.1; done
  if alive "$SERVER_PID"; then kill -9 "$SERVER_PID" 2>/dev/null || true; fi
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}
trap stop_server EXIT
trap 'exit 130' INT TERM

free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Busy jiffies of the whole machine (user nice system irq softirq steal).
machine_busy() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9; exit}' /proc/stat; }
# A process's CPU jiffies (utime + stime), 0 when it is gone.
proc_cpu() { awk '{sub(/.*\) /, ""); print $12+$13}' "/proc/$1/stat" 2>/dev/null || echo 0; }

# Waits (up to IDLE_WAIT s) until the machine's other work stays under a third of a core for 2 s.
idle_wait() {
  local deadline=$((SECONDS + IDLE_WAIT)) b0 b1
  while [ "$SECONDS" -lt "$deadline" ]; do
    b0=$(machine_busy); sleep 2; b1=$(machine_busy)
    if [ $((b1 - b0)) -lt 67 ]; then return; fi
    log "waiting for an idle machine ($(( (b1 - b0) / 2 ))% of a core busy)"
  done
}

rm -rf "$OUT"
mkdir -p "$OUT/runs" "$OUT/logs"

# One benchmark run: run_cell TRANSPORT CONC ERA PEER; writes $OUT/runs/<name>.json (bench's
# report) and <name>.meta.json (exit status, client CPU, other load on the machine).
run_cell() {
  local transport=$1 conc=$2 era=$3 peer=$4
  local name="$transport-$conc-$era-$peer"
  local json=$OUT/runs/$name.json meta=$OUT/runs/$name.meta.json err=$OUT/logs/$name.bench.log
  local reason
  if ! reason=$(speaks "$peer" "$era"); then
    printf '{"skipped": %s}\n' "$("$PYTHON" -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$reason")" >"$meta"
    log "$name: skipped ($reason)"
    return
  fi
  local common=(--era "$era" --payload "$PAYLOAD" --duration "$DURATION" --warmup "$WARMUP" --json --label "$peer")
  local cmd=() srv_pid="" srv0=0 srv1=0
  if [ "$transport" = stdio ]; then
    mapfile -t cmd < <(server_cmd "$peer" stdio)
    cmd=(nice -n "$NICE" "$BENCH" bench "${common[@]}" --window "$conc" -- "${cmd[@]}")
  else
    local port srv
    port=$(free_port)
    mapfile -t srv < <(server_cmd "$peer" http "$port")
    nice -n "$NICE" "${srv[@]}" >"$OUT/logs/$name.server.log" 2>&1 &
    srv_pid=$!
    SERVER_PID=$srv_pid
    local up=""
    for _ in $(seq 1 200); do
      alive "$srv_pid" || break
      if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then up=1; break; fi
      sleep 0.05
    done
    if [ -z "$up" ]; then
      log "$name: the server did not start on 127.0.0.1:$port (see $OUT/logs/$name.server.log)"
      printf '{"failed": "the server did not start"}\n' >"$meta"
      stop_server
      return
    fi
    srv0=$(proc_cpu "$srv_pid")
    cmd=(nice -n "$NICE" "$BENCH" bench "${common[@]}" --connections "$conc" --url "http://127.0.0.1:$port/mcp" --pid "$srv_pid")
  fi

  local busy0 busy1 t0 t1 status=0 times
  busy0=$(machine_busy)
  t0=$(date +%s.%N)
  # `time` (bash) gives the CPU of the bench and of the stdio server it spawns and reaps.
  times=$( { TIMEFORMAT='%U %S'; time "${cmd[@]}" >"$json" 2>"$err"; } 2>&1 ) || status=$?
  t1=$(date +%s.%N)
  busy1=$(machine_busy)
  if [ -n "$srv_pid" ]; then
    srv1=$(proc_cpu "$srv_pid")
    stop_server
  fi
  # `times` may carry the failed command's status line from bash; keep its last line.
  "$PYTHON" - "$json" "$meta" "$err" "$status" "${times##*$'\n'}" "$t0" "$t1" "$busy0" "$busy1" "$srv0" "$srv1" "$transport" <<'PY'
import json, sys
json_path, meta_path, err_path, status, times, t0, t1, b0, b1, s0, s1, transport = sys.argv[1:]
wall = float(t1) - float(t0)
user, sys_ = (float(x) for x in times.split())
children = user + sys_                      # bench (+ the stdio server it reaped)
try:
    report = json.load(open(json_path))
except Exception:
    report = None
meta = {"status": int(status), "wall_s": wall}
server_cpu = None
if transport == "http":
    server_cpu = (int(s1) - int(s0)) / 100
    client_cpu = children
elif report and report.get("server_cpu_s") is not None:
    server_cpu = report["server_cpu_s"]
    client_cpu = max(children - server_cpu, 0.0)
else:
    client_cpu = None
other = (int(b1) - int(b0)) / 100 - children - (server_cpu if transport == "http" else 0)
meta.update(client_cpu_s=client_cpu, server_cpu_s=server_cpu, other_cores=max(other, 0.0) / wall)
if report is None:
    lines = [l.strip() for l in open(err_path, errors="replace") if l.strip()]
    meta["failed"] = lines[-1] if lines else f"exit status {status}"
json.dump(meta, open(meta_path, "w"))
PY
  if [ -s "$json" ]; then
    log "$name: $("$PYTHON" -c 'import json, sys
r = json.load(open(sys.argv[1]))
print("%.0f req/s, p50 %.3f ms, p99 %.3f ms, errors %d" % (r["rps"], r["p50_us"] / 1e3, r["p99_us"] / 1e3, r["errors"]))' "$json")"
  else
    log "$name: FAILED: $(tail -n 1 "$err" 2>/dev/null)"
  fi
}

# Legacy sessions for wrk (one per wrk thread): initialize + notifications/initialized, then
# one tools/call checked; prints the session ids comma-separated. Modern: the call checked.
wrk_prepare() {
  "$PYTHON" - "$@" <<'PY'
import http.client, json, sys
port, era, count, payload = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
text = "".join(chr(97 + i % 26) for i in range(payload))

def post(body, headers):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    h.update(headers)
    # Compact, as every client here sends it (the ceiling finds the text by byte scanning).
    c.request("POST", "/mcp", body=json.dumps(body, separators=(",", ":")), headers=h)
    r = c.getresponse()
    data = r.read().decode()
    sid = r.getheader("Mcp-Session-Id")
    c.close()
    if r.status >= 400:
        raise SystemExit(f"HTTP {r.status}: {data[:200]}")
    if r.getheader("Content-Type", "").startswith("text/event-stream"):
        data = "\n".join(l[5:].strip() for l in data.splitlines() if l.startswith("data:") and l[5:].strip())
        data = [l for l in data.splitlines() if '"id"' in l][-1] if data else ""
    return sid, (json.loads(data) if data.strip() else None)

call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}}
def check(reply):
    content = (reply or {}).get("result", {}).get("content", [])
    if not content or content[0].get("text") != text:
        raise SystemExit(f"unexpected answer: {json.dumps(reply)[:300]}")

if era == "modern":
    call["params"]["_meta"] = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                               "io.modelcontextprotocol/clientCapabilities": {},
                               "io.modelcontextprotocol/clientInfo": {"name": "wrk", "version": "1"}}
    _, reply = post(call, {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"})
    check(reply)
    print("")
else:
    sids = []
    for _ in range(count):
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
                "capabilities": {}, "clientInfo": {"name": "wrk", "version": "1"}}}
        sid, _ = post(init, {"MCP-Protocol-Version": "2025-11-25"})
        if not sid:
            raise SystemExit("no Mcp-Session-Id")
        hdr = {"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": sid}
        post({"jsonrpc": "2.0", "method": "notifications/initialized"}, hdr)
        sids.append(sid)
    _, reply = post(call, {"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": sids[0]})
    check(reply)
    print(",".join(sids))
PY
}

# The same HTTP run with wrk: run_wrk CONC ERA PEER; writes $OUT/runs/<name>.wrk.json. A fresh
# server; wrk -t2 (modern) or one thread per connection (legacy: a session each), WARMUP s
# discarded, then DURATION s measured.
run_wrk() {
  local conc=$1 era=$2 peer=$3
  local name="http-$conc-$era-$peer" reason
  local out=$OUT/runs/$name.wrk.json log=$OUT/logs/$name.wrk.log
  if ! reason=$(speaks "$peer" "$era"); then return; fi
  local port srv
  port=$(free_port)
  mapfile -t srv < <(server_cmd "$peer" http "$port")
  nice -n "$NICE" "${srv[@]}" >"$OUT/logs/$name.wrk-server.log" 2>&1 &
  SERVER_PID=$!
  local up=""
  for _ in $(seq 1 200); do
    alive "$SERVER_PID" || break
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then up=1; break; fi
    sleep 0.05
  done
  local threads=$conc sids=""
  if [ "$era" = modern ]; then threads=$(( conc < 2 ? conc : 2 )); fi
  if [ -z "$up" ] || ! sids=$(wrk_prepare "$port" "$era" "$conc" "$PAYLOAD" 2>"$log"); then
    log "$name (wrk): FAILED: $(tail -n 1 "$log" 2>/dev/null)"
    printf '{"failed": "%s"}\n' "server not ready or wrong answer" >"$out"
    stop_server
    return
  fi
  local url="http://127.0.0.1:$port/mcp" wrk_args
  wrk_args=(-t "$threads" -c "$conc" -s "$ROOT/bench/wrk-echo.lua" --latency "$url" -- "$era" "$PAYLOAD" "$sids")
  if [ "${WARMUP%.*}" -gt 0 ] 2>/dev/null; then
    nice -n "$NICE" wrk -d "${WARMUP%.*}s" "${wrk_args[@]}" >/dev/null 2>&1 || true
  fi
  local s0 s1
  s0=$(proc_cpu "$SERVER_PID")
  nice -n "$NICE" wrk -d "${DURATION%.*}s" "${wrk_args[@]}" >"$log" 2>&1 || true
  s1=$(proc_cpu "$SERVER_PID")
  local rss
  rss=$(awk '/^VmHWM:/{print $2}' "/proc/$SERVER_PID/status" 2>/dev/null || echo 0)
  stop_server
  "$PYTHON" - "$log" "$out" "$s0" "$s1" "$rss" "$threads" <<'PY'
import json, re, sys
log, out, s0, s1, rss, threads = sys.argv[1:]
m = re.search(r"WRK_RESULT requests=(\d+) duration_us=(\d+) p50_us=(\d+) p99_us=(\d+) errors=(\d+)", open(log).read())
if not m:
    json.dump({"failed": "no wrk result"}, open(out, "w"))
else:
    req, dur, p50, p99, err = (int(x) for x in m.groups())
    json.dump({"requests": req, "rps": req / (dur / 1e6), "p50_us": p50, "p99_us": p99, "errors": err,
               "server_cpu_s": (int(s1) - int(s0)) / 100, "server_peak_rss_kib": int(rss or 0),
               "threads": int(threads)}, open(out, "w"))
PY
  log "$name (wrk): $("$PYTHON" -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(r.get("failed") or "%.0f req/s, p50 %.3f ms, p99 %.3f ms, errors %d" % (r["rps"], r["p50_us"] / 1e3, r["p99_us"] / 1e3, r["errors"]))' "$out")"
}

# ---------------------------------------------------------------- run
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
  echo "load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "load: payload $PAYLOAD B, $DURATION s measured after $WARMUP s warm-up per cell, nice $NICE"
  if [ "$WRK" = 1 ]; then
    echo "second load generator: $(wrk --version 2>&1 | head -n 1 | cut -d' ' -f1-2) with bench/wrk-echo.lua"
  fi
  for p in $PEERS; do echo "peer $p: $(sdk_version "$p")"; done
} >"$OUT/env.txt"
cat "$OUT/env.txt" >&2

# Cell-major order: every peer runs a cell before the next cell starts, so a change in the
# machine's background load hits all peers of a cell alike.
for transport in stdio http; do
  for conc in 32 1; do
    for era in legacy modern; do
      [ "$IDLE_WAIT" = 0 ] || idle_wait
      for peer in $PEERS; do
        run_cell "$transport" "$conc" "$era" "$peer"
      done
      if [ "$WRK" = 1 ] && [ "$transport" = http ]; then
        for peer in $PEERS; do
          run_wrk "$conc" "$era" "$peer"
        done
      fi
    done
  done
done

echo "load average after the run: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/env.txt"
"$PYTHON" bench/compare_table.py "$OUT" "$PEERS" | tee "$OUT/table.md"
