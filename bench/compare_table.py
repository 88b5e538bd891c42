"""Turns the runs of bench/compare.sh into markdown tables.

    python3 bench/compare_table.py OUT_DIR "duomcp rmcp ts-sdk py-sdk ceiling"

OUT_DIR/runs/<transport>-<conc>-<era>-<peer>.json is `duomcp bench --json`'s report and
.meta.json what compare.sh measured around it (status, CPU, other load on the machine);
.wrk.json (WRK=1) the same HTTP run loaded by wrk instead (bench/wrk-echo.lua).
"""

import json
import os
import sys

ERAS = {"legacy": "2025-11-25", "modern": "2026-07-28"}
# Other work on the machine (in cores, averaged over the run) above which a row is flagged.
BUSY = 0.25


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def cells():
    for transport in ("stdio", "http"):
        for conc in (32, 1):
            for era in ("legacy", "modern"):
                yield transport, conc, era


def cell_label(transport, conc, era):
    load = f"window {conc}" if transport == "stdio" else f"{conc} conn"
    return f"{transport} {load} {ERAS[era]}"


def fmt_rate(r):
    return f"{r:,.0f}"


def fmt_ms(us):
    return f"{us / 1e3:.2f}" if us < 10_000 else f"{us / 1e3:.1f}"


def fmt_ratio(x):
    if x is None:
        return "—"
    return f"{x:.2f}" if x < 10 else f"{x:.1f}"


def main():
    out, peers = sys.argv[1], sys.argv[2].split()
    runs = {}
    for transport, conc, era in cells():
        for peer in peers:
            name = f"{transport}-{conc}-{era}-{peer}"
            report = load(os.path.join(out, "runs", name + ".json"))
            meta = load(os.path.join(out, "runs", name + ".meta.json")) or {}
            runs[(transport, conc, era, peer)] = (report, meta)

    def rate(key):
        report, _ = runs.get(key, (None, {}))
        if report is None or report.get("errors", 0) > 0 or report.get("requests", 0) == 0:
            return None
        return report["rps"]

    env = open(os.path.join(out, "env.txt")).read().strip().splitlines()
    print("Run: " + "; ".join(l for l in env if not l.startswith("peer ")) + ".")
    print()
    print("Peers: " + "; ".join(l[len("peer "):] for l in env if l.startswith("peer ")) + ".")
    print()
    print("| cell | server | req/s | p50 ms | p99 ms | peak RSS MiB | × rmcp | × ceiling | notes |")
    print("|---|---|--:|--:|--:|--:|--:|--:|---|")
    busy_rows = 0
    for transport, conc, era in cells():
        label = cell_label(transport, conc, era)
        rmcp = rate((transport, conc, era, "rmcp"))
        ceiling = rate((transport, conc, era, "ceiling"))
        real = [p for p in peers if p != "ceiling" and rate((transport, conc, era, p)) is not None]
        best = max(real, key=lambda p: rate((transport, conc, era, p)), default=None)
        for peer in peers:
            report, meta = runs[(transport, conc, era, peer)]
            name = f"**{peer}**" if peer == best else peer
            if "skipped" in meta:
                print(f"| {label} | {peer} | — | — | — | — | — | — | not run: {meta['skipped']} |")
                continue
            if report is None:
                why = meta.get("failed", "no report")
                print(f"| {label} | {peer} | — | — | — | — | — | — | FAILED: {why} |")
                continue
            notes = []
            if report["errors"]:
                notes.append(f"{report['errors']:,} of {report['requests']:,} responses wrong or errors")
            if meta.get("other_cores", 0) > BUSY:
                notes.append(f"machine busy: {meta['other_cores']:.1f} other cores")
                busy_rows += 1
            r = report["rps"] if not report["errors"] else None
            rss = report.get("server_peak_rss_kib")
            rss = f"{rss / 1024:.1f}" if rss else "?"
            rel_rmcp = r / rmcp if r is not None and rmcp else None
            rel_ceiling = r / ceiling if r is not None and ceiling else None
            print(
                f"| {label} | {name} | {fmt_rate(report['rps'])} | {fmt_ms(report['p50_us'])} | "
                f"{fmt_ms(report['p99_us'])} | {rss} | {fmt_ratio(rel_rmcp)} | {fmt_ratio(rel_ceiling)} | "
                f"{'; '.join(notes)} |"
            )
    print()
    print("Bold: the fastest server of the cell (the ceiling aside). × rmcp and × ceiling: req/s ratios.")
    if busy_rows:
        print(f"{busy_rows} row(s) ran while other work used more than {BUSY} of a core on average.")

    if "duomcp" in peers:
        others = [p for p in peers if p not in ("duomcp", "ceiling")]
        print()
        print("duomcp's req/s divided by each peer's (> 1: duomcp is faster):")
        print()
        print("| cell | " + " | ".join(f"÷ {p}" for p in others) + " |")
        print("|---|" + "--:|" * len(others))
        for transport, conc, era in cells():
            d = rate((transport, conc, era, "duomcp"))
            vals = []
            for p in others:
                o = rate((transport, conc, era, p))
                vals.append(fmt_ratio(d / o) if d is not None and o else "—")
            print(f"| {cell_label(transport, conc, era)} | " + " | ".join(vals) + " |")

    if "ceiling" in peers:
        print()
        print("Is the load generator the bottleneck? Its rate against the ceiling (no MCP work at all)")
        print("against the fastest real server of the same cell, and the CPU the generator itself used")
        print("in the ceiling run (cores, averaged over the run; the machine has "
              f"{os.cpu_count()}):")
        print()
        print("| cell | ceiling req/s | fastest server | its req/s | ceiling ÷ fastest | generator CPU (ceiling run) |")
        print("|---|--:|---|--:|--:|--:|")
        for transport, conc, era in cells():
            c = rate((transport, conc, era, "ceiling"))
            real = [p for p in peers if p != "ceiling" and rate((transport, conc, era, p)) is not None]
            best = max(real, key=lambda p: rate((transport, conc, era, p)), default=None)
            b = rate((transport, conc, era, best)) if best else None
            _, meta = runs[(transport, conc, era, "ceiling")]
            cpu = meta.get("client_cpu_s")
            cores = f"{cpu / meta['wall_s']:.2f}" if cpu is not None and meta.get("wall_s") else "?"
            print(
                f"| {cell_label(transport, conc, era)} | {fmt_rate(c) if c else '—'} | {best or '—'} | "
                f"{fmt_rate(b) if b else '—'} | {fmt_ratio(c / b) if c and b else '—'} | {cores} |"
            )

    wrk = {}
    for transport, conc, era in cells():
        if transport != "http":
            continue
        for peer in peers:
            r = load(os.path.join(out, "runs", f"http-{conc}-{era}-{peer}.wrk.json"))
            if r is not None:
                wrk[(conc, era, peer)] = r
    if wrk:
        def wrk_rate(conc, era, peer):
            r = wrk.get((conc, era, peer))
            if not r or "rps" not in r or r.get("errors") or not r.get("requests"):
                return None
            return r["rps"]

        print()
        print("A second load generator: the HTTP runs again, each against a fresh server, loaded by")
        print("wrk with bench/wrk-echo.lua (the same request bytes every time; 2 threads for")
        print("2026-07-28, one thread and session per connection for 2025-11-25) instead of")
        print("`duomcp bench`, whose rate is repeated for comparison:")
        print()
        print("| cell | server | wrk req/s | p50 ms | p99 ms | peak RSS MiB | × rmcp | × ceiling | `duomcp bench` req/s | its × rmcp |")
        print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|")
        for transport, conc, era in cells():
            if transport != "http":
                continue
            label = cell_label(transport, conc, era)
            rmcp_w, ceil_w = wrk_rate(conc, era, "rmcp"), wrk_rate(conc, era, "ceiling")
            rmcp_b = rate((transport, conc, era, "rmcp"))
            for peer in peers:
                r = wrk.get((conc, era, peer))
                if r is None:
                    continue
                b = rate((transport, conc, era, peer))
                if "rps" not in r:
                    print(f"| {label} | {peer} | FAILED: {r.get('failed')} | — | — | — | — | — | {fmt_rate(b) if b else '—'} | — |")
                    continue
                w = wrk_rate(conc, era, peer)
                rss = r.get("server_peak_rss_kib")
                rss = f"{rss / 1024:.1f}" if rss else "?"
                errs = f" ({r['errors']:,} errors)" if r.get("errors") else ""
                print(
                    f"| {label} | {peer} | {fmt_rate(r['rps'])}{errs} | {fmt_ms(r['p50_us'])} | {fmt_ms(r['p99_us'])} | {rss} | "
                    f"{fmt_ratio(w / rmcp_w if w and rmcp_w else None)} | {fmt_ratio(w / ceil_w if w and ceil_w else None)} | "
                    f"{fmt_rate(b) if b else '—'} | {fmt_ratio(b / rmcp_b if b and rmcp_b else None)} |"
                )


if __name__ == "__main__":
    main()
