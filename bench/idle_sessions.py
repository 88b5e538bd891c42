#!/usr/bin/env python3
"""Memory of idle 2025-11-25 sessions on Streamable HTTP (issue 9: 10,000 in under 100 MB).

Starts `duomcp-echo http PORT` on 127.0.0.1, opens N legacy sessions over a few keep-alive
connections (each session: `initialize`, then `notifications/initialized` with its
`Mcp-Session-Id`), checks every answer, and reads the server's VmRSS (now) and VmHWM (peak)
from /proc before and after. One session is then used for a `tools/call`, to show the sessions
are alive, not just counted.

    bench/idle_sessions.py                        # 10,000 sessions, target/release/duomcp-echo
    bench/idle_sessions.py --sessions 2000 --server path/to/duomcp-echo --json

The server's default `HttpConfig::max_sessions` is 10,000, so 10,000 fit without any knob.
Standard library only. Not part of the test suite.
"""

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time

from proc_util import free_port, status_kib

INIT = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "idle-sessions", "version": "1"}},
}).encode()
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
CALL = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "echo", "arguments": {"text": "still here"}}}).encode()
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream",
           "mcp-protocol-version": "2025-11-25"}


def body_json(resp):
    raw = resp.read().decode()
    ctype = resp.getheader("content-type", "")
    if ctype.startswith("text/event-stream"):
        data = [l[5:].strip() for l in raw.splitlines() if l.startswith("data:")]
        raw = next(d for d in data if d)
    return json.loads(raw)


def open_sessions(port, count, ids, errors):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for _ in range(count):
        try:
            conn.request("POST", "/mcp", INIT, HEADERS)
            resp = conn.getresponse()
            msg = body_json(resp)
            sid = resp.getheader("mcp-session-id")
            if resp.status != 200 or not sid or "result" not in msg:
                errors.append(f"initialize: HTTP {resp.status} {msg}")
                continue
            conn.request("POST", "/mcp", INITIALIZED, dict(HEADERS, **{"mcp-session-id": sid}))
            resp = conn.getresponse()
            resp.read()
            if resp.status != 202:
                errors.append(f"initialized: HTTP {resp.status}")
                continue
            ids.append(sid)
        except Exception as e:  # noqa: BLE001 - report and go on
            errors.append(repr(e))
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.close()


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=10_000)
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--server", default=os.path.join(root, "target", "release", "duomcp-echo"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    port = free_port()
    server = subprocess.Popen([args.server, "http", str(port)], stdin=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        rss_start = status_kib(server.pid, "VmRSS")
        ids, errors, threads = [], [], []
        per = [args.sessions // args.connections] * args.connections
        per[0] += args.sessions - sum(per)
        t0 = time.monotonic()
        for n in per:
            t = threading.Thread(target=open_sessions, args=(port, n, ids, errors))
            t.start()
            threads.append(t)
        for t in threads:
            t.join()
        took = time.monotonic() - t0
        time.sleep(0.5)  # let the server settle (freed buffers, idle connections)
        rss_idle = status_kib(server.pid, "VmRSS")
        hwm = status_kib(server.pid, "VmHWM")
        # An old session still answers.
        alive = False
        if ids:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("POST", "/mcp", CALL, dict(HEADERS, **{"mcp-session-id": ids[0]}))
            resp = conn.getresponse()
            msg = body_json(resp)
            alive = resp.status == 200 and msg["result"]["content"][0]["text"] == "still here"
            conn.close()
        report = {
            "sessions_requested": args.sessions,
            "sessions_open": len(ids),
            "errors": len(errors),
            "first_error": errors[0] if errors else None,
            "seconds_to_open": round(took, 2),
            "rss_start_mib": round(rss_start / 1024, 1),
            "rss_idle_mib": round(rss_idle / 1024, 1),
            "peak_rss_mib": round(hwm / 1024, 1),
            "kib_per_session": round((rss_idle - rss_start) / max(len(ids), 1), 2),
            "first_session_still_answers": alive,
        }
    finally:
        server.terminate()
        server.wait(timeout=10)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for k, v in report.items():
            print(f"{k:28} {v}")
    ok = report["sessions_open"] == args.sessions and alive and report["peak_rss_mib"] < 100
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
