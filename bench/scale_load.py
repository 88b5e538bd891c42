#!/usr/bin/env python3
"""Session-shaped MCP load for bench/scale.sh: many sessions at once through one URL.

2025-11-25 (`--era legacy`): each connection runs sessions one after the other, each
`initialize`, `notifications/initialized`, `--calls` × `tools/call echo`, `logging/setLevel`
(the record changes: the replica publishes an invalidation on the bus), one more
`tools/call`, then `DELETE`. Through a round-robin balancer the requests of one session land
on several replicas. 2026-07-28 (`--era modern`): `tools/call echo` only, no session.

    bench/scale_load.py --url http://127.0.0.1:8080/mcp --era legacy --connections 24 \\
        --duration 6 --warmup 1 --at-start 'CMD' --at-end 'CMD' --json

Every answer is checked (status, JSON-RPC result, the echoed text). Requests are counted when
they start inside the measured window, which opens `--warmup` seconds after the load starts;
`--at-start`/`--at-end` are shell commands run when it opens and closes (bench/scale.sh takes
its Redis and bus counter snapshots there). The connections are spread over `--procs`
processes (threads in each), so one interpreter lock does not serialize the load.
Standard library only.
"""

import argparse
import http.client
import json
import multiprocessing as mp
import subprocess
import sys
import threading
import time
import urllib.parse

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
TEXT = "x" * 64


def body_json(resp, raw):
    ctype = resp.getheader("content-type", "")
    if ctype.startswith("text/event-stream"):
        data = [line[5:].strip() for line in raw.decode().splitlines() if line.startswith("data:")]
        raw = next(d for d in data if d)
    return json.loads(raw)


def call_body(rid, modern):
    params = {"name": "echo", "arguments": {"text": TEXT}}
    if modern:
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "scale-load", "version": "1"},
        }
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})


class Conn:
    def __init__(self, host, port, path):
        self.host, self.port, self.path = host, port, path
        self.c = None

    def send(self, method, body, headers):
        """(response, body bytes, seconds); reconnects once when the socket is dead."""
        for attempt in (0, 1):
            if self.c is None:
                self.c = http.client.HTTPConnection(self.host, self.port, timeout=30)
            t = time.monotonic()
            try:
                self.c.request(method, self.path, body, headers)
                resp = self.c.getresponse()
                raw = resp.read()
                return resp, raw, time.monotonic() - t
            except (http.client.HTTPException, OSError):
                self.c.close()
                self.c = None
                if attempt:
                    raise
        raise RuntimeError("unreachable")


def worker(args, start_at, end_at, stop_at, out):
    """One connection: sessions (or calls) until `stop_at`; latencies of requests started in
    [start_at, end_at) go to `out`."""
    u = urllib.parse.urlsplit(args.url)
    conn = Conn(u.hostname, u.port or 80, u.path or "/mcp")
    lat, methods, errors, sessions = [], {}, [], 0
    modern = args.era == "modern"
    rid = 0

    def req(method, name, body, headers, expect):
        nonlocal rid
        t0 = time.monotonic()
        resp, raw, took = conn.send(method, body, headers)
        if resp.status != expect:
            raise RuntimeError(f"{name}: HTTP {resp.status} {raw[:200]!r}")
        if start_at <= t0 < end_at:
            lat.append(took)
            methods[name] = methods.get(name, 0) + 1
        return resp, raw

    while time.monotonic() < stop_at:
        try:
            if modern:
                rid += 1
                h = dict(HEADERS, **{"mcp-protocol-version": "2026-07-28",
                                     "mcp-method": "tools/call", "mcp-name": "echo"})
                resp, raw = req("POST", "tools/call", call_body(rid, True), h, 200)
                msg = body_json(resp, raw)
                if msg["result"]["content"][0]["text"] != TEXT:
                    raise RuntimeError(f"tools/call: {msg}")
                continue
            h = dict(HEADERS, **{"mcp-protocol-version": "2025-11-25"})
            init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "scale-load", "version": "1"}}})
            resp, raw = req("POST", "initialize", init, h, 200)
            sid = resp.getheader("mcp-session-id")
            if not sid or "result" not in body_json(resp, raw):
                raise RuntimeError(f"initialize: {raw[:200]!r}")
            h["mcp-session-id"] = sid
            req("POST", "notifications/initialized",
                json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), h, 202)
            steps = ["call"] * args.calls + ["setLevel", "call"]
            for step in steps:
                rid += 1
                if step == "setLevel":
                    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "logging/setLevel",
                                       "params": {"level": "warning"}})
                    resp, raw = req("POST", "logging/setLevel", body, h, 200)
                    if "result" not in body_json(resp, raw):
                        raise RuntimeError(f"logging/setLevel: {raw[:200]!r}")
                else:
                    resp, raw = req("POST", "tools/call", call_body(rid, False), h, 200)
                    msg = body_json(resp, raw)
                    if msg["result"]["content"][0]["text"] != TEXT:
                        raise RuntimeError(f"tools/call: {msg}")
            req("DELETE", "DELETE", None, {"mcp-session-id": sid,
                                           "mcp-protocol-version": "2025-11-25"}, 204)
            sessions += 1
        except Exception as e:  # noqa: BLE001 - counted, reported, and the loop goes on
            # Counted inside the window; the first one outside it is kept too (flagged).
            if start_at <= time.monotonic() < end_at:
                errors.append(repr(e)[:300])
            elif not errors:
                errors.append("(outside the window) " + repr(e)[:300])
            time.sleep(0.01)
    out.append((lat, methods, errors, sessions))


def proc_main(args, threads, start_at, end_at, stop_at, q):
    out, ts = [], []
    for _ in range(threads):
        t = threading.Thread(target=worker, args=(args, start_at, end_at, stop_at, out))
        t.start()
        ts.append(t)
    for t in ts:
        t.join()
    lat, methods, errors, sessions = [], {}, [], 0
    for l, m, e, s in out:
        lat += l
        errors += e
        sessions += s
        for k, v in m.items():
            methods[k] = methods.get(k, 0) + v
    q.put((lat, methods, errors, sessions))


def hold(args):
    """Opens `--hold` sessions (initialize, initialized, one tools/call) and leaves them open;
    prints their ids, one a line."""
    u = urllib.parse.urlsplit(args.url)
    conn = Conn(u.hostname, u.port or 80, u.path or "/mcp")
    init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "scale-load", "version": "1"}}})
    for _ in range(args.hold):
        h = dict(HEADERS, **{"mcp-protocol-version": "2025-11-25"})
        resp, raw, _ = conn.send("POST", init, h)
        sid = resp.getheader("mcp-session-id")
        if resp.status != 200 or not sid:
            raise SystemExit(f"initialize: HTTP {resp.status} {raw[:200]!r}")
        h["mcp-session-id"] = sid
        resp, raw, _ = conn.send("POST", json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}), h)
        resp, raw, _ = conn.send("POST", call_body(1, False), h)
        if resp.status != 200:
            raise SystemExit(f"tools/call: HTTP {resp.status} {raw[:200]!r}")
        print(sid)
    return 0


def run_hook(cmd):
    if cmd:
        subprocess.run(cmd, shell=True, check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--era", choices=["legacy", "modern"], default="legacy")
    ap.add_argument("--connections", type=int, default=24)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--duration", type=float, default=6.0)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--calls", type=int, default=3, help="tools/call before logging/setLevel")
    ap.add_argument("--at-start", default="")
    ap.add_argument("--at-end", default="")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--hold", type=int, default=0,
                    help="only open this many sessions, leave them open, print their ids")
    args = ap.parse_args()
    if args.hold:
        return hold(args)

    ctx = mp.get_context("fork")
    q = ctx.Queue()
    now = time.monotonic()
    start_at = now + 0.3 + args.warmup
    end_at = start_at + args.duration
    stop_at = end_at + 0.2
    procs = []
    per = [args.connections // args.procs] * args.procs
    for i in range(args.connections % args.procs):
        per[i] += 1
    for n in per:
        if n:
            p = ctx.Process(target=proc_main, args=(args, n, start_at, end_at, stop_at, q))
            p.start()
            procs.append(p)
    time.sleep(max(0.0, start_at - time.monotonic()))
    run_hook(args.at_start)
    time.sleep(max(0.0, end_at - time.monotonic()))
    run_hook(args.at_end)
    lat, methods, errors, sessions = [], {}, [], 0
    for _ in procs:
        l, m, e, s = q.get(timeout=120)
        lat += l
        errors += e
        sessions += s
        for k, v in m.items():
            methods[k] = methods.get(k, 0) + v
    for p in procs:
        p.join(timeout=30)
    lat.sort()

    def pct(p):
        return round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1e6) if lat else 0

    report = {
        "era": args.era, "connections": args.connections, "seconds": args.duration,
        "requests": len(lat), "rps": round(len(lat) / args.duration, 1),
        "p50_us": pct(0.50), "p99_us": pct(0.99),
        "errors": sum(1 for e in errors if not e.startswith("(outside")),
        "first_error": errors[0] if errors else None,
        "sessions_completed": sessions, "methods": methods,
    }
    if args.json:
        print(json.dumps(report))
    else:
        for k, v in report.items():
            print(f"{k:20} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
