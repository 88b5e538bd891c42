#!/usr/bin/env bash
# The fuzz targets of fuzz/ (cargo-fuzz, libFuzzer, nightly Rust), in one of two forms.
#
#   scripts/fuzz.sh --ci [RUNS]      # CI: every target, -seed=1 -runs=RUNS (default 2000) over
#                                    # its checked-in corpus; an unoptimised build (--dev)
#   scripts/fuzz.sh 300              # every target, 300 s each (an optimised build)
#   scripts/fuzz.sh 300 jwt_front_door meta   # chosen targets
#   scripts/fuzz.sh --dev 300        # the timed form on the unoptimised build of the CI form
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
  RUNS=${2:-2000}
  shift $(( $# >= 2 ? 2 : 1 ))
  TARGETS=()
  BUILD=(-s none --dev)
else
  BUILD=(-s none)
  if [ "${1:-}" = "--dev" ]; then
    BUILD+=(--dev)
    shift
  fi
  SECONDS_EACH=${1:-20}
  shift || true
  TARGETS=("$@")
fi
# FUZZ_TARGET_DIR: another cargo target dir than fuzz/target (for instance one per form).
if [ -n "${FUZZ_TARGET_DIR:-}" ]; then
  BUILD+=(--target-dir "$FUZZ_TARGET_DIR")
fi
if [ ${#TARGETS[@]} -eq 0 ]; then
  # The slowest targets first (a whole server per input; the schema checker against
  # jsonschema), so that the others fill the remaining jobs beside them.
  mapfile -t TARGETS < <(cargo +nightly fuzz list | grep -vx -e stdio_server -e schema_check)
  TARGETS=(stdio_server schema_check "${TARGETS[@]}")
fi

# Every target in one cargo invocation: the library is built once, the binaries link in
# parallel.
cargo +nightly fuzz build "${BUILD[@]}"
mkdir -p fuzz/target/logs

# One target, its libFuzzer output in fuzz/target/logs/<target>.log.
run_one() {
  local t=$1 log="fuzz/target/logs/$1.log" args
  if [ "$CI" = 1 ]; then
    local scratch="fuzz/target/ci-corpus/$t"
    rm -rf "$scratch"
    mkdir -p "$scratch"
    # Repeatable: libFuzzer's comparison tracing (-use_cmp, -use_memmem) feeds it values that
    # differ from run to run (addresses), and its corpus reload (-reload) and RSS thread
    # (-rss_limit_mb) follow the clock; without them a seed gives the same run every time.
    args=("$scratch" "fuzz/corpus/$t" -- -seed=1 -runs="$RUNS" -use_cmp=0 -use_memmem=0
      -reload=0 -rss_limit_mb=0)
  else
    mkdir -p "fuzz/target/corpus/$t"
    args=("fuzz/target/corpus/$t" "fuzz/corpus/$t" -- -max_total_time="$SECONDS_EACH"
      -rss_limit_mb=2048)
  fi
  cargo +nightly fuzz run "${BUILD[@]}" "$t" "${args[@]}" \
    -timeout=10 -print_final_stats=1 >"$log" 2>&1
}

# FUZZ_JOBS targets at a time (each run is one process, so this changes no result): the
# number of CPUs in the CI form, one at a time in the timed form.
if [ "$CI" = 1 ]; then JOBS=${FUZZ_JOBS:-$(nproc)}; else JOBS=${FUZZ_JOBS:-1}; fi
if [ "$CI" = 1 ]; then
  echo "fuzz: ${#TARGETS[@]} targets, -seed=1 -runs=$RUNS each, $JOBS at a time"
else
  echo "fuzz: ${#TARGETS[@]} targets, ${SECONDS_EACH}s each, $JOBS at a time"
fi
declare -A PID_OF
failed=()
for t in "${TARGETS[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do
    wait -n || true
  done
  run_one "$t" &
  PID_OF[$t]=$!
done
for t in "${TARGETS[@]}"; do
  wait "${PID_OF[$t]}" || failed+=("$t")
done

for t in "${TARGETS[@]}"; do
  log="fuzz/target/logs/$t.log"
  echo "== fuzz $t"
  grep -E '^#[0-9]+' "$log" | tail -1 || true
  grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" \
    | tr '\n' ' ' || true
  echo
done
for t in "${failed[@]}"; do
  tail -60 "fuzz/target/logs/$t.log" >&2
  echo "fuzz target $t failed: the input is in fuzz/artifacts/$t/" >&2
done
[ ${#failed[@]} -eq 0 ]
