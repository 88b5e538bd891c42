#!/usr/bin/env python3
"""The instruction-count regression gate (run by .ci/run through bench/icount.sh).

Builds `duomcp-icount` (release), runs each of its scenarios under
`valgrind --tool=callgrind`, counting only the instructions executed inside
`duomcp_icount_counted` (see crates/duomcp-cli/src/bin/duomcp-icount.rs), and compares the
instructions per unit (request, round trip, handshake) with bench/baseline.json.

    bench/icount.sh                 # measure and compare; exit 1 if a count grew by more than 3 %
    bench/icount.sh --update        # measure and write bench/baseline.json (commit it)
    bench/icount.sh --repeat 3      # measure three times and show that the counts repeat
    bench/icount.sh stdio-modern    # only the scenarios named

Environment: ICOUNT_THRESHOLD (percent, default 3), ICOUNT_BIN (a prebuilt duomcp-icount, no
build), ICOUNT_JOBS (parallel valgrind runs, default 2).
"""

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = Path(os.environ.get("ICOUNT_BASELINE", ROOT / "bench" / "baseline.json"))
COUNTED = "*duomcp_icount_counted*"


def build() -> Path:
    if os.environ.get("ICOUNT_BIN"):
        return Path(os.environ["ICOUNT_BIN"]).resolve()
    subprocess.run(
        ["cargo", "build", "--release", "--locked", "-p", "duomcp-cli", "--bin", "duomcp-icount"],
        cwd=ROOT,
        check=True,
    )
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "release" / "duomcp-icount"


def scenarios(binary: Path) -> dict:
    out = subprocess.run([str(binary), "list"], check=True, capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        name, units, unit = line.split("\t", 2)
        found[name] = {"units": int(units), "unit": unit}
    return found


def measure(binary: Path, scenario: str, workdir: Path) -> int:
    """Instructions executed in the counted region of one run of `scenario`."""
    out_file = workdir / f"{scenario}.{os.getpid()}.{time.monotonic_ns()}.callgrind"
    cmd = [
        "valgrind",
        "--tool=callgrind",
        "--collect-atstart=no",
        f"--toggle-collect={COUNTED}",
        f"--callgrind-out-file={out_file}",
        str(binary),
        scenario,
    ]
    # A fixed, minimal environment: the environment's size moves the stack, and with it the
    # alignment that memcpy and friends see.
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=workdir)
    if run.returncode != 0:
        sys.stderr.write(run.stdout + run.stderr)
        raise SystemExit(f"icount: scenario {scenario} failed under valgrind (exit {run.returncode})")
    text = out_file.read_text()
    found = re.search(r"^summary:\s+(\d+)", text, re.M) or re.search(r"^totals:\s+(\d+)", text, re.M)
    if not found:
        raise SystemExit(f"icount: no instruction total in {out_file}")
    out_file.unlink()
    return int(found.group(1))


def measure_all(binary: Path, names: list, repeat: int) -> dict:
    """{scenario: [instructions of run 1, run 2, ...]}"""
    jobs = int(os.environ.get("ICOUNT_JOBS", "2"))
    results = {n: [] for n in names}
    with tempfile.TemporaryDirectory(prefix="icount-") as tmp:
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {
                pool.submit(measure, binary, name, Path(tmp)): name
                for _ in range(repeat)
                for name in names
            }
            for future in concurrent.futures.as_completed(futures):
                results[futures[future]].append(future.result())
    return results


def per_unit(instructions: int, units: int) -> float:
    return round(instructions / units, 1)


def tool_versions() -> dict:
    def first_line(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()[0]
        except (OSError, IndexError):
            return "unknown"

    return {"valgrind": first_line(["valgrind", "--version"]), "rustc": first_line(["rustc", "--version"])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update", action="store_true", help="write bench/baseline.json")
    parser.add_argument("--repeat", type=int, default=1, help="runs per scenario (they must agree)")
    parser.add_argument("scenario", nargs="*", help="scenarios to run (default: all)")
    args = parser.parse_args()
    threshold = float(os.environ.get("ICOUNT_THRESHOLD", "3"))

    started = time.monotonic()
    binary = build()
    known = scenarios(binary)
    names = args.scenario or list(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"icount: unknown scenario(s) {unknown}; known: {list(known)}")
    runs = measure_all(binary, names, max(1, args.repeat))

    baseline = json.loads(BASELINE.read_text()) if BASELINE.exists() else {"scenarios": {}}
    old = baseline.get("scenarios", {})
    failed = []
    unstable = []
    print(f"{'scenario':<18} {'units':>8} {'baseline/unit':>14} {'now/unit':>12} {'change':>8}  runs")
    for name in names:
        counts = runs[name]
        units = known[name]["units"]
        now = per_unit(counts[0], units)
        if len(set(counts)) != 1:
            unstable.append(name)
        before = old.get(name, {}).get("per_unit")
        if before:
            change = (now - before) / before * 100
            verdict = f"{change:+7.2f}%"
            if change > threshold:
                failed.append((name, before, now, change))
            elif change < -threshold:
                verdict += "  (smaller: update the baseline)"
        else:
            verdict = "   new"
            if not args.update:
                failed.append((name, None, now, None))
        shown = "same in all runs" if len(set(counts)) == 1 else "DIFFER"
        print(f"{name:<18} {units:>8} {before or '-':>14} {now:>12} {verdict}  {shown}: {', '.join(map(str, counts))}")
    print(f"(instructions counted by callgrind per unit; {time.monotonic() - started:.0f} s)")

    if unstable:
        print(f"icount: the counts of {unstable} differ between runs: the workload is not deterministic", file=sys.stderr)
        return 1
    if args.update:
        baseline = {
            "about": "Instructions per unit in the counted region of crates/duomcp-cli/src/bin/duomcp-icount.rs "
            "under valgrind --tool=callgrind; regenerate with bench/icount.sh --update (bench/README.md).",
            "tools": tool_versions(),
            "scenarios": {
                **old,
                **{
                    n: {
                        "unit": known[n]["unit"],
                        "units": known[n]["units"],
                        "instructions": runs[n][0],
                        "per_unit": per_unit(runs[n][0], known[n]["units"]),
                    }
                    for n in names
                },
            },
        }
        BASELINE.write_text(json.dumps(baseline, indent=2) + "\n")
        print(f"icount: wrote {BASELINE}; commit it with the change that moved the counts")
        return 0
    for name, before, now, change in failed:
        if before is None:
            print(f"icount: {name} has no baseline: run bench/icount.sh --update and commit bench/baseline.json", file=sys.stderr)
        else:
            print(
                f"icount: {name} grew from {before} to {now} instructions per unit ({change:+.2f}%, "
                f"more than {threshold}%). If that is intended, run bench/icount.sh --update and commit "
                "bench/baseline.json in the same commit.",
                file=sys.stderr,
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
