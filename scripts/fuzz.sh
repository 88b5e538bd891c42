#!/usr/bin/env bash
# The fuzz targets of fuzz/ (cargo-fuzz, libFuzzer, nightly Rust), in one of two forms.
#
#   scripts/fuzz.sh --ci [RUNS]      # CI: every target, -seed=1 -runs=RUNS (default 4000) over
#                                    # its checked-in corpus; an unoptimised build (--dev)
#   scripts/fuzz.sh 300              # every target, 300 s each (an optimised build)
#   scripts/fuzz.sh 300 jwt_front_door meta   # chosen targets
#
# The CI form repeats exactly: a fixed seed, a fixed number of executions (not a time), the
# checked-in corpus as it is (new inputs go to a scratch directory emptied first), one job.
# The timed form keeps what it finds in fuzz/target/corpus/<target>/ (seeded from the
# checked-in fuzz/corpus/<target>/, which stays as it is) for `cargo fuzz cmin`. In both, a
# crash stops the run with a failure and leaves its input in fuzz/artifacts/<target>/, which
# is checked in as a regression once fixed (crates/duomcp/tests/fuzz_replay.rs runs every
# file there on stable). Needs the nightly toolchain and cargo-fuzz (`.ci/run` installs the
# pinned one). Built without AddressSanitizer (`-s none`): duomcp forbids `unsafe`, and a
# plain build compiles and runs several times faster. Each target's last status line (its
# executions, coverage `cov:`, features `ft:`, corpus) is printed, with the totals.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "scripts/fuzz.sh: the nightly toolchain is missing (rustup toolchain install nightly)" >&2
  exit 1
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "scripts/fuzz.sh: cargo-fuzz is missing (cargo install cargo-fuzz --locked)" >&2
  exit 1
fi

CI=0
if [ "${1:-}" = "--ci" ]; then
  CI=1
  RUNS=${2:-4000}
  shift $(( $# >= 2 ? 2 : 1 ))
  TARGETS=()
  BUILD=(-s none --dev)
else
  SECONDS_EACH=${1:-20}
  shift || true
  TARGETS=("$@")
  BUILD=(-s none)
fi
# FUZZ_TARGET_DIR: another cargo target dir than fuzz/target (for instance one per form).
if [ -n "${FUZZ_TARGET_DIR:-}" ]; then
  BUILD+=(--target-dir "$FUZZ_TARGET_DIR")
fi
if [ ${#TARGETS[@]} -eq 0 ]; then
  mapfile -t TARGETS < <(cargo +nightly fuzz list)
fi

# Every target in one cargo invocation: the library is built once, the binaries link in
# parallel.
cargo +nightly fuzz build "${BUILD[@]}"
mkdir -p fuzz/target/logs
for t in "${TARGETS[@]}"; do
  log="fuzz/target/logs/$t.log"
  if [ "$CI" = 1 ]; then
    scratch="fuzz/target/ci-corpus/$t"
    rm -rf "$scratch"
    mkdir -p "$scratch"
    echo "== fuzz $t (-seed=1 -runs=$RUNS)"
    args=("$scratch" "fuzz/corpus/$t" -- -seed=1 -runs="$RUNS")
  else
    mkdir -p "fuzz/target/corpus/$t"
    echo "== fuzz $t (${SECONDS_EACH}s)"
    args=("fuzz/target/corpus/$t" "fuzz/corpus/$t" -- -max_total_time="$SECONDS_EACH")
  fi
  if ! cargo +nightly fuzz run "${BUILD[@]}" "$t" "${args[@]}" \
      -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
    tail -60 "$log" >&2
    echo "fuzz target $t failed: the input is in fuzz/artifacts/$t/" >&2
    exit 1
  fi
  grep -E '^#[0-9]+' "$log" | tail -1
  grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" | tr '\n' ' '
  echo
done
