#!/usr/bin/env python3
"""Soak test of `duomcp serve --http`: memory and file descriptors come back after load.

Starts `duomcp serve --http 127.0.0.1:PORT` (loopback only), measures a baseline after a
warm-up round, then for a fixed time runs, from several threads at once:

* session churn (2025-11-25): `initialize`, `notifications/initialized`, a `tools/call`,
  then `DELETE` of the session; a fraction of them is abandoned instead: `initialize` only,
  never initialized, never deleted (the cheap flood of issue 16 defect 3); with
  --abandon-used another fraction is used (initialized, a call) and then left without a
  `DELETE`, for the idle timeout (or the full table's least-recently-used eviction) to end;
* request load in both revisions: 2026-07-28 `tools/call` and `server/discover` (no session,
  with the mirrored headers), 2025-11-25 `tools/call` and `ping` in a kept session;
* listen streams opening and closing: 2026-07-28 `subscriptions/listen` (read the
  acknowledgement, hang up) and the 2025-11-25 `GET` stream of a session (read the priming
  event, hang up);
* clients vanishing mid-stream: `test_tool_with_progress` with a progress token, the
  connection closed after the first event, before the result.

Every answer is checked (status, JSON-RPC result). Once a second it prints the curve: time,
the server's VmRSS and open file descriptors (/proc/PID/status, /proc/PID/fd), sessions the
driver holds open (created, not yet deleted, abandoned ones included) and requests so far.
After the load it waits for the server to settle and asserts that the fds are back at the
baseline (within --fd-margin) and the RSS within --rss-margin-mib plus --rss-margin-pct of it.

    bench/soak.py --short                 # CI: ~1 minute
    bench/soak.py --long                  # 100,000 sessions (used, abandoned or deleted)
    bench/soak.py --sessions 100000       # churn until 100,000 sessions were made
    bench/soak.py --seconds 600 --server target/release/duomcp -- --some-serve-flag

Arguments after `--` go to `duomcp serve --http ADDR` unchanged (limits such as session
timeouts). `--long` is `--sessions 100000 --churn 0.7 --abandon-used 0.01 --print-every 10`
against a server started with `--limit session-idle-timeout=20s --limit
session-handshake-timeout=10s`, so that the abandoned sessions end within the run: its settle
phase waits past both timeouts and then asserts that the abandoned session ids it kept (a
sample) are answered `404`.
Standard library only.
"""

import argparse
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time

from proc_util import fds, free_port, status_kib

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "soak", "version": "1"},
}
ACCEPT = "application/json, text/event-stream"


def rpc(id_, method, params=None):
    msg = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg).encode()


INIT = rpc(1, "initialize", {"protocolVersion": LEGACY, "capabilities": {},
                             "clientInfo": {"name": "soak", "version": "1"}})
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()


class Failure(Exception):
    pass


def first_json(resp):
    """The JSON-RPC message of an answer (the first `data:` of an SSE stream)."""
    ctype = resp.getheader("content-type", "")
    if ctype.startswith("text/event-stream"):
        while True:
            line = resp.fp.readline()
            if not line:
                raise Failure("SSE stream ended without a message")
            line = line.decode().strip()
            if line.startswith("data:") and line[5:].strip():
                return json.loads(line[5:])
    return json.loads(resp.read())


def last_json(resp):
    """The final message of an answer (the response after any notifications)."""
    ctype = resp.getheader("content-type", "")
    raw = resp.read().decode()
    if ctype.startswith("text/event-stream"):
        data = [l[5:].strip() for l in raw.splitlines() if l.startswith("data:") and l[5:].strip()]
        if not data:
            raise Failure("SSE stream without a message")
        return json.loads(data[-1])
    return json.loads(raw)


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = 0
        self.sessions_created = 0
        self.sessions_deleted = 0
        self.abandoned = 0
        self.abandoned_used = 0
        self.abandoned_ids = []
        self.streams = 0
        self.vanished = 0
        self.errors = []

    def add(self, **kw):
        with self.lock:
            for k, v in kw.items():
                setattr(self, k, getattr(self, k) + v)

    def error(self, what):
        with self.lock:
            self.errors.append(what)

    @property
    def open_sessions(self):
        return self.sessions_created - self.sessions_deleted


class Client:
    """One thread's keep-alive connection, remade when the server closes it."""

    def __init__(self, port, stats):
        self.port, self.stats = port, stats
        self.conn = None

    def request(self, method, body=None, headers=None):
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            try:
                self.conn.request(method, "/mcp", body, headers or {})
                resp = self.conn.getresponse()
                self.stats.add(requests=1)
                return resp
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # A kept-alive connection the server closed meanwhile: once more, anew.
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        raise Failure("unreachable")

    def post(self, body, extra=None, legacy=True):
        h = {"content-type": "application/json", "accept": ACCEPT}
        if legacy:
            h["mcp-protocol-version"] = LEGACY
        h.update(extra or {})
        return self.request("POST", body, h)

    def close(self):
        if self.conn:
            self.conn.close()
            self.conn = None


def modern_headers(method, name=None):
    h = {"mcp-protocol-version": MODERN, "mcp-method": method}
    if name:
        h["mcp-name"] = name
    return h


def expect(cond, what):
    if not cond:
        raise Failure(what)


def legacy_session(c):
    resp = c.post(INIT)
    msg = first_json(resp)
    resp.read()
    sid = resp.getheader("mcp-session-id")
    expect(resp.status == 200 and sid and "result" in msg, f"initialize: {resp.status} {msg}")
    c.stats.add(sessions_created=1)
    return sid


def keep_abandoned(stats, sid):
    """Keeps a sample of abandoned session ids (the first 64), probed once they expired."""
    with stats.lock:
        if len(stats.abandoned_ids) < 64:
            stats.abandoned_ids.append(sid)


def churn(c, abandon, abandon_used):
    sid = legacy_session(c)
    if abandon:
        c.stats.add(abandoned=1)
        keep_abandoned(c.stats, sid)
        return
    resp = c.post(INITIALIZED, {"mcp-session-id": sid})
    resp.read()
    expect(resp.status == 202, f"initialized: {resp.status}")
    resp = c.post(rpc(2, "tools/call", {"name": "test_simple_text"}), {"mcp-session-id": sid})
    msg = last_json(resp)
    expect(resp.status == 200 and "result" in msg, f"legacy call: {resp.status} {msg}")
    if abandon_used:
        # Used, then left: no DELETE (the idle timeout ends it).
        c.stats.add(abandoned_used=1)
        keep_abandoned(c.stats, sid)
        return
    resp = c.request("DELETE", None, {"mcp-session-id": sid, "mcp-protocol-version": LEGACY})
    resp.read()
    expect(resp.status in (200, 202, 204), f"DELETE: {resp.status}")
    c.stats.add(sessions_deleted=1)


def modern_load(c):
    body = rpc(7, "tools/call", {"name": "test_simple_text", "_meta": MODERN_META})
    resp = c.post(body, modern_headers("tools/call", "test_simple_text"), legacy=False)
    msg = last_json(resp)
    expect(resp.status == 200 and "result" in msg, f"modern call: {resp.status} {msg}")
    resp = c.post(rpc(8, "server/discover", {"_meta": MODERN_META}),
                  modern_headers("server/discover"), legacy=False)
    msg = last_json(resp)
    expect(resp.status == 200 and "result" in msg, f"discover: {resp.status} {msg}")


def legacy_load(c, sid):
    resp = c.post(rpc(3, "tools/call", {"name": "test_simple_text"}), {"mcp-session-id": sid})
    msg = last_json(resp)
    expect(resp.status == 200 and "result" in msg, f"legacy load: {resp.status} {msg}")
    resp = c.post(rpc(4, "ping"), {"mcp-session-id": sid})
    msg = last_json(resp)
    expect(resp.status == 200 and msg.get("result") == {}, f"ping: {resp.status} {msg}")


def stream_and_hang_up(port, stats, method, body, headers, check):
    """Opens a stream on its own connection, reads its first message, then hangs up."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, "/mcp", body, headers)
        resp = conn.getresponse()
        stats.add(requests=1)
        if resp.status != 200:
            raise Failure(f"{method} stream: {resp.status} {resp.read()[:200]!r}")
        if check is not None:
            msg = first_json(resp)
            expect(check(msg), f"{method} stream: {msg}")
        else:
            # The legacy GET stream starts with a priming event (an id, no data).
            line = resp.fp.readline()
            expect(line, "GET stream closed at once")
    finally:
        # No reading to the end: the client vanishes.
        conn.sock and conn.sock.close()
        conn.close()


def listen(port, stats):
    body = rpc(9, "subscriptions/listen",
               {"notifications": {"toolsListChanged": True}, "_meta": MODERN_META})
    h = {"content-type": "application/json", "accept": ACCEPT}
    h.update(modern_headers("subscriptions/listen"))
    stream_and_hang_up(port, stats, "POST", body, h,
                       lambda m: m.get("method") == "notifications/subscriptions/acknowledged")
    stats.add(streams=1)


def legacy_get_stream(port, stats, sid):
    h = {"accept": "text/event-stream", "mcp-session-id": sid, "mcp-protocol-version": LEGACY}
    stream_and_hang_up(port, stats, "GET", None, h, None)
    stats.add(streams=1)


def vanish(port, stats):
    body = rpc(10, "tools/call", {"name": "test_tool_with_progress",
                                  "_meta": dict(MODERN_META, progressToken="p")})
    h = {"content-type": "application/json", "accept": ACCEPT}
    h.update(modern_headers("tools/call", "test_tool_with_progress"))
    stream_and_hang_up(port, stats, "POST", body, h,
                       lambda m: m.get("method") == "notifications/progress")
    stats.add(vanished=1)


# The mix of the load: churn takes a share of the operations (--churn), the rest go to the
# others in these proportions.
OTHERS = [("modern", 20), ("legacy", 15), ("listen", 8), ("get", 6), ("vanish", 6)]


def pick(r, churn_share):
    if r < churn_share:
        return "churn"
    left = (r - churn_share) / (1 - churn_share) * sum(w for _, w in OTHERS)
    for name, w in OTHERS:
        if left < w:
            return name
        left -= w
    return OTHERS[-1][0]


def worker(port, stats, stop, rng, abandon_fraction, used_fraction, session_target, churn_share):
    c = Client(port, stats)
    kept = None
    try:
        while not stop.is_set():
            if session_target and stats.sessions_created >= session_target:
                break
            op = pick(rng.random(), churn_share)
            try:
                if op == "churn":
                    a = rng.random()
                    churn(c, a < abandon_fraction,
                          abandon_fraction <= a < abandon_fraction + used_fraction)
                elif op == "modern":
                    modern_load(c)
                elif op == "legacy":
                    if kept is None:
                        kept = legacy_session(c)
                        resp = c.post(INITIALIZED, {"mcp-session-id": kept})
                        resp.read()
                    legacy_load(c, kept)
                elif op == "listen":
                    listen(port, stats)
                elif op == "get":
                    if kept is not None:
                        legacy_get_stream(port, stats, kept)
                else:
                    vanish(port, stats)
            except (Failure, OSError, ValueError, http.client.HTTPException) as e:
                stats.error(repr(e))
                c.close()
                if len(stats.errors) > 50:
                    stop.set()
        if kept is not None:
            resp = c.request("DELETE", None, {"mcp-session-id": kept, "mcp-protocol-version": LEGACY})
            resp.read()
            stats.add(sessions_deleted=1)
    finally:
        c.close()


# Print every Nth sample of the curve (--print-every); every sample goes to --json.
PRINT_EVERY = 1


def sample(pid, t0, stats, curve, force=False):
    point = {
        "t": round(time.monotonic() - t0, 1),
        "rss_mib": round(status_kib(pid, "VmRSS") / 1024, 1),
        "fds": fds(pid),
        "sessions": stats.open_sessions,
        "created": stats.sessions_created,
        "requests": stats.requests,
    }
    curve.append(point)
    if force or len(curve) % PRINT_EVERY == 0:
        print(f"{point['t']:7.1f}s  rss {point['rss_mib']:7.1f} MiB  fds {point['fds']:5}  "
              f"sessions {point['sessions']:7}  created {point['created']:7}  "
              f"requests {point['requests']:8}", flush=True)
    return point


def run_load(port, stats, seconds, threads, abandon, used, session_target, pid, t0, curve, seed,
             churn_share):
    stop = threading.Event()
    workers = [threading.Thread(target=worker, daemon=True,
                                args=(port, stats, stop, random.Random(seed + i), abandon, used,
                                      session_target, churn_share))
               for i in range(threads)]
    for w in workers:
        w.start()
    deadline = time.monotonic() + seconds
    while any(w.is_alive() for w in workers):
        time.sleep(1)
        sample(pid, t0, stats, curve)
        if time.monotonic() > deadline:
            stop.set()
    for w in workers:
        w.join()


def settle(pid, t0, stats, curve, baseline_fds, fd_margin, seconds, at_least=0.0):
    """Samples until the fds are back near the baseline (streams closing), at most `seconds`
    and at least `at_least` (the session timeouts of the long form)."""
    start = time.monotonic()
    end = start + max(seconds, at_least)
    point = sample(pid, t0, stats, curve, force=True)
    while time.monotonic() < end and (point["fds"] > baseline_fds + fd_margin
                                      or time.monotonic() < start + at_least):
        time.sleep(1)
        point = sample(pid, t0, stats, curve)
    time.sleep(1)
    return sample(pid, t0, stats, curve, force=True)


def probe_gone(port, sids):
    """How many of these session ids the server still knows (anything but 404 to a ping)."""
    known = 0
    for sid in sids:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            h = {"content-type": "application/json", "accept": ACCEPT,
                 "mcp-protocol-version": LEGACY, "mcp-session-id": sid}
            conn.request("POST", "/mcp", rpc(99, "ping"), h)
            resp = conn.getresponse()
            resp.read()
            if resp.status != 404:
                known += 1
        finally:
            conn.close()
    return known


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    argv = sys.argv[1:]
    serve_args = []
    if "--" in argv:
        i = argv.index("--")
        argv, serve_args = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default=os.path.join(root, "target", "debug", "duomcp"))
    ap.add_argument("--short", action="store_true", help="the CI form: 45 s of load")
    ap.add_argument("--long", action="store_true",
                    help="100,000 sessions, short session timeouts, expiry probed at the end")
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--sessions", type=int, default=0,
                    help="stop once this many sessions were created (0: run --seconds)")
    ap.add_argument("--threads", type=int, default=6)
    ap.add_argument("--abandon", type=float, default=0.02,
                    help="fraction of churned sessions abandoned after initialize")
    ap.add_argument("--abandon-used", type=float, default=0.0,
                    help="fraction of churned sessions used, then left without DELETE")
    ap.add_argument("--churn", type=float, default=0.45,
                    help="share of the operations that are session churn (the rest: load, streams)")
    ap.add_argument("--print-every", type=int, default=1, help="print every Nth sample")
    ap.add_argument("--settle-at-least", type=float, default=0.0,
                    help="settle for at least this long (past the server's session timeouts)")
    ap.add_argument("--probe-abandoned", action="store_true",
                    help="after settling, assert the kept abandoned session ids get 404")
    ap.add_argument("--rss-margin-mib", type=float, default=8)
    ap.add_argument("--rss-margin-pct", type=float, default=10)
    ap.add_argument("--fd-margin", type=int, default=3)
    ap.add_argument("--settle", type=float, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="also write the report and curve to this file")
    args = ap.parse_args(argv)
    if args.short:
        args.seconds = min(args.seconds, 45)
    if args.long:
        args.sessions = args.sessions or 100_000
        args.abandon_used = args.abandon_used or 0.01
        args.churn = max(args.churn, 0.7)
        args.print_every = max(args.print_every, 10)
        args.settle_at_least = max(args.settle_at_least, 45)
        args.probe_abandoned = True
        serve_args = ["--limit", "session-idle-timeout=20s",
                      "--limit", "session-handshake-timeout=10s"] + serve_args
    if args.sessions:
        args.seconds = 24 * 3600
    global PRINT_EVERY
    PRINT_EVERY = max(1, args.print_every)

    port = free_port()
    cmd = [args.server, "serve", "--http", f"127.0.0.1:{port}"] + serve_args
    print("soak:", " ".join(cmd), flush=True)
    server = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)
    stats = Stats()
    curve = []
    ok = False
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                if server.poll() is not None:
                    raise SystemExit(f"soak: the server exited with {server.returncode}")
                time.sleep(0.05)
        t0 = time.monotonic()
        print("-- warm-up", flush=True)
        run_load(port, stats, 5, args.threads, 0.0, 0.0, 0, server.pid, t0, curve,
                 args.seed + 1000, 0.45)
        base = settle(server.pid, t0, stats, curve, 10**9, 0, 3)
        warm_errors = len(stats.errors)
        print(f"-- baseline: rss {base['rss_mib']} MiB, fds {base['fds']}", flush=True)
        print("-- load", flush=True)
        run_load(port, stats, args.seconds, args.threads, args.abandon, args.abandon_used,
                 args.sessions, server.pid, t0, curve, args.seed, args.churn)
        peak = max(p["rss_mib"] for p in curve)
        print("-- settle", flush=True)
        end = settle(server.pid, t0, stats, curve, base["fds"], args.fd_margin, args.settle,
                     args.settle_at_least)
        still_known = probe_gone(port, stats.abandoned_ids) if args.probe_abandoned else 0
        rss_limit = base["rss_mib"] * (1 + args.rss_margin_pct / 100) + args.rss_margin_mib
        fd_limit = base["fds"] + args.fd_margin
        alive = server.poll() is None
        report = {
            "server_args": serve_args,
            "load_seconds": round(curve[-1]["t"] - base["t"], 1),
            "requests": stats.requests,
            "sessions_created": stats.sessions_created,
            "sessions_deleted": stats.sessions_deleted,
            "sessions_abandoned": stats.abandoned,
            "sessions_used_then_abandoned": stats.abandoned_used,
            "abandoned_ids_probed": len(stats.abandoned_ids) if args.probe_abandoned else 0,
            "abandoned_ids_still_known": still_known,
            "streams_opened_and_dropped": stats.streams,
            "clients_vanished_mid_stream": stats.vanished,
            "errors": len(stats.errors),
            "first_errors": stats.errors[:5],
            "baseline_rss_mib": base["rss_mib"],
            "peak_rss_mib": peak,
            "final_rss_mib": end["rss_mib"],
            "rss_limit_mib": round(rss_limit, 1),
            "baseline_fds": base["fds"],
            "final_fds": end["fds"],
            "fd_limit": fd_limit,
            "server_alive": alive,
        }
        ok = (alive and not stats.errors and warm_errors == 0
              and end["rss_mib"] <= rss_limit and end["fds"] <= fd_limit
              and stats.sessions_created > 0 and stats.streams > 0 and stats.vanished > 0
              and still_known == 0
              and (not args.sessions or stats.sessions_created >= args.sessions)
              and (not args.probe_abandoned or bool(stats.abandoned_ids)))
        report["passed"] = ok
        print(json.dumps(report, indent=2), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"report": report, "curve": curve}, f, indent=1)
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
