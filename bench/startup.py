#!/usr/bin/env python3
"""Cold start over stdio: time from spawning a server to its first answer (issue 9: < 20 ms).

For each server, RUNS times, alternating servers and pausing between runs (so every run is a
start after idleness, not one of a warm burst): `duomcp bench --era ERA --window 1` spawns the
server, sends the first request (`initialize` for 2025-11-25, a `tools/call` for 2026-07-28)
and reports `startup_ms`, the time from spawn to that first answer. Prints min / median / max
per server.

    bench/startup.py                                  # duomcp-echo, rmcp-echo, the ceiling
    bench/startup.py --runs 20 --pause 2 --era modern
    bench/startup.py --server name=/path/to/server   # any stdio server taking `stdio`

Standard library only. Needs `target/release/duomcp` and the servers (bench/compare.sh builds
them). Not part of the test suite.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SERVERS = [
    ("duomcp", os.path.join(ROOT, "target/release/duomcp-echo")),
    ("rmcp", os.path.join(ROOT, "target/bench-peers/rmcp/release/rmcp-echo")),
    ("ceiling", os.path.join(ROOT, "target/release/duomcp-ceiling")),
]


def startup_ms(bench, era, server):
    out = subprocess.run(
        [bench, "bench", "--era", era, "--window", "1", "--duration", "0.2", "--warmup", "0",
         "--json", "--", server, "stdio"],
        check=True, capture_output=True, text=True,
    ).stdout
    report = json.loads(out)
    if report.get("errors"):
        raise SystemExit(f"{server}: {report['errors']} errors")
    return report["startup_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--pause", type=float, default=1.0, help="seconds between runs")
    ap.add_argument("--era", choices=["legacy", "modern"], default="legacy")
    ap.add_argument("--bench", default=os.path.join(ROOT, "target/release/duomcp"))
    ap.add_argument("--server", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    servers = [tuple(s.split("=", 1)) for s in args.server] or DEFAULT_SERVERS
    missing = [path for _, path in servers if not os.access(path, os.X_OK)]
    if missing or not os.access(args.bench, os.X_OK):
        sys.exit(f"not built: {', '.join(missing + [args.bench])} (run bench/compare.sh once)")
    samples = {name: [] for name, _ in servers}
    for _ in range(args.runs):
        for name, path in servers:
            time.sleep(args.pause)
            samples[name].append(startup_ms(args.bench, args.era, path))
    summary = {
        name: {"min": min(v), "median": statistics.median(v), "max": max(v), "runs": len(v)}
        for name, v in samples.items()
    }
    if args.json:
        print(json.dumps({"era": args.era, "pause_s": args.pause, "servers": summary}))
        return
    print(f"cold start to the first answer over stdio ({args.era}, {args.runs} runs each, "
          f"{args.pause:g} s pause before each)")
    for name, s in summary.items():
        print(f"  {name:10} min {s['min']:6.1f} ms   median {s['median']:6.1f} ms   "
              f"max {s['max']:6.1f} ms")


if __name__ == "__main__":
    main()
