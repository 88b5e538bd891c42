#!/usr/bin/env python3
"""Instructions per `tools/call` in the gateway process (by hand, for profiling; not the gate).

Runs `duomcp gateway --http 127.0.0.1:PORT --upstream-era ERA -- duomcp-echo stdio` under
`valgrind --tool=callgrind` (the upstream child is not traced), or, with `--direct`,
`duomcp-echo http PORT` itself, and drives N1 then N2 `tools/call` requests over one
keep-alive HTTP/1.1 connection. The difference of the two dumps' totals divided by N2 - N1 is
the cost of one call in the traced process, start-up excluded. The count is not exact
(the upstream's answers arrive in reads whose sizes depend on timing) but repeats within
about 0.1 %.

    bench/gateway_icount.py                  # gateway, 2026-07-28 on both sides
    bench/gateway_icount.py --era legacy     # gateway, 2025-11-25 on both sides
    bench/gateway_icount.py --direct         # duomcp-echo over HTTP, the baseline
    bench/gateway_icount.py --ceiling        # duomcp-ceiling over HTTP: bare hyper, canned answers
    callgrind_annotate target/bench-gateway-icount/last.out | head -60   # the profile

Environment: DUOMCP_BIN, ECHO_BIN, CEILING_BIN (default target/release/duomcp,
target/release/duomcp-echo, target/release/duomcp-ceiling).
"""

import argparse
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "target" / "bench-gateway-icount"
TEXT = "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "icount", "version": "1"},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, within: float = 60.0) -> None:
    until = time.monotonic() + within
    while time.monotonic() < until:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited: {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"nothing listens on {port}")


class Driver:
    def __init__(self, port: int, era: str, compact: bool = False):
        # The ceiling finds the id and the text by byte scanning: it needs compact JSON.
        self.separators = (",", ":") if compact else None
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.era = era
        self.session = None
        self.next_id = 1
        if era == "legacy":
            r = self.post(
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "icount", "version": "1"},
                },
            )
            self.session = r.getheader("mcp-session-id")
            r.read()
            self.post("notifications/initialized", None, notification=True).read()

    def post(self, method, params, notification=False, name=None):
        version = "2026-07-28" if self.era == "modern" else "2025-11-25"
        body = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        if not notification:
            body["id"] = self.next_id
            self.next_id += 1
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": version,
        }
        if self.era == "modern":
            headers["mcp-method"] = method
            if name:
                headers["mcp-name"] = name
        if self.session:
            headers["mcp-session-id"] = self.session
        self.conn.request("POST", "/mcp", json.dumps(body, separators=self.separators), headers)
        return self.conn.getresponse()

    def calls(self, n: int) -> None:
        for _ in range(n):
            params = {"name": "echo", "arguments": {"text": TEXT}}
            if self.era == "modern":
                params["_meta"] = MODERN_META
            r = self.post("tools/call", params, name="echo")
            body = r.read()
            if r.status != 200 or TEXT.encode() not in body:
                raise SystemExit(f"bad answer {r.status}: {body[:300]!r}")


def total(out_file: Path) -> int:
    for line in out_file.read_text().splitlines():
        m = re.match(r"(?:summary|totals): (\d+)", line)
        if m:
            return int(m.group(1))
    raise SystemExit(f"no total in {out_file}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--era", choices=["modern", "legacy"], default="modern")
    ap.add_argument("--direct", action="store_true", help="duomcp-echo over HTTP, no gateway")
    ap.add_argument("--ceiling", action="store_true", help="duomcp-ceiling over HTTP (canned answers)")
    ap.add_argument("--n1", type=int, default=200)
    ap.add_argument("--n2", type=int, default=1200)
    args = ap.parse_args()
    duomcp = os.environ.get("DUOMCP_BIN", str(ROOT / "target/release/duomcp"))
    echo = os.environ.get("ECHO_BIN", str(ROOT / "target/release/duomcp-echo"))
    OUT.mkdir(parents=True, exist_ok=True)
    port = free_port()
    ceiling = os.environ.get("CEILING_BIN", str(ROOT / "target/release/duomcp-ceiling"))
    if args.ceiling:
        cmd = [ceiling, "http", str(port)]
    elif args.direct:
        cmd = [echo, "http", str(port)]
    else:
        cmd = [duomcp, "gateway", "--http", f"127.0.0.1:{port}", "--upstream-era", args.era, "--", echo, "stdio"]
    out = OUT / "last.out"
    for f in OUT.glob("last.out*"):
        f.unlink()
    proc = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-instr=no", "--compress-strings=no", "--compress-pos=no", *cmd],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_port(port, proc)
        d = Driver(port, args.era, compact=args.ceiling)
        d.calls(args.n1)
        subprocess.run(["callgrind_control", "--dump=first", str(proc.pid)], check=True, capture_output=True)
        d.calls(args.n2 - args.n1)
        subprocess.run(["callgrind_control", "--dump=second", str(proc.pid)], check=True, capture_output=True)
        d.conn.close()
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    dumps = sorted(OUT.glob("last.out.*"), key=lambda p: p.stat().st_mtime)
    if len(dumps) < 2:
        raise SystemExit(f"expected two dumps in {OUT}, found {dumps}")
    first, second = total(dumps[0]), total(dumps[1])
    # Each dump counts since the one before (callgrind zeroes its counters on a dump): the
    # second covers exactly the later calls.
    per_call = second / (args.n2 - args.n1)
    what = "ceiling" if args.ceiling else "direct" if args.direct else "gateway"
    print(f"{what} {args.era}: {per_call:,.0f} instructions per tools/call "
          f"(first dump {first:,}; profile: callgrind_annotate {dumps[1]})")


if __name__ == "__main__":
    sys.exit(main())
