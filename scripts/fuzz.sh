#!/usr/bin/env bash
# The fuzz targets of fuzz/ (cargo-fuzz, libFuzzer, nightly Rust), in one of two forms.
#
#   scripts/fuzz.sh --ci [RUNS]      # CI: every target, -seed=1 -runs=RUNS (default 2000) over
#                                    # its checked-in corpus; an unoptimised build (--dev)
#   scripts/fuzz.sh --check-repeat [RUNS] [TARGET…]  # the CI form twice: fails unless every
#                                    # target's two runs are the same (coverage, features and
#                                    # corpus after every step, and the corpus files)
#   scripts/fuzz.sh 300              # every target, 300 s each (an optimised build)
#   scripts/fuzz.sh 300 jwt_front_door meta   # chosen targets
#   scripts/fuzz.sh --dev 300        # the timed form on the unoptimised build of the CI form
#
# The CI form repeats exactly: a fixed seed, a fixed number of executions (not a time), the
# checked-in corpus as it is (new inputs go to a scratch directory emptied first), one job,
# and fixed randomness and time in the code under test (fuzz/README.md, "What repeats").
# It needs no cargo-fuzz: it builds with the flags `cargo fuzz build --dev -s none` of
# cargo-fuzz 0.13.2 sets (the same cargo fingerprint, so either reuses the other's build) and
# runs the binaries itself, as `cargo fuzz run` would.
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

CI=0
REPEAT=0
if [ "${1:-}" = "--ci" ] || [ "${1:-}" = "--check-repeat" ]; then
  CI=1
  [ "$1" = "--check-repeat" ] && REPEAT=1
  shift
  RUNS=2000
  if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
    RUNS=$1
    shift
  fi
  TARGETS=("$@")
  BUILD=(-s none --dev)
else
  if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "scripts/fuzz.sh: cargo-fuzz is missing (cargo install cargo-fuzz --locked)" >&2
    exit 1
  fi
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
  mapfile -t TARGETS < <(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml \
    | grep -vx -e duomcp-fuzz -e stdio_server -e schema_check)
  TARGETS=(stdio_server schema_check "${TARGETS[@]}")
fi

# Every target in one cargo invocation: the library is built once, the binaries link in
# parallel.
CI_BIN_DIR=${FUZZ_TARGET_DIR:-fuzz/target}/x86_64-unknown-linux-gnu/debug
if [ "$CI" = 1 ]; then
  # Exactly the RUSTFLAGS of `cargo fuzz build --dev -s none` (cargo-fuzz 0.13.2,
  # src/project.rs: sancov instrumentation, compare tracing, cfg fuzzing, no branch folding,
  # stack depth, debug assertions), in its order.
  RUSTFLAGS=" -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
  RUSTFLAGS+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters"
  RUSTFLAGS+=" -Cllvm-args=-sanitizer-coverage-pc-table"
  RUSTFLAGS+=" -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
  RUSTFLAGS+=" -Cllvm-args=-simplifycfg-branch-fold-threshold=0"
  RUSTFLAGS+=" -Cllvm-args=-sanitizer-coverage-stack-depth -Cdebug-assertions"
  RUSTFLAGS=$RUSTFLAGS cargo +nightly build --manifest-path fuzz/Cargo.toml \
    --target x86_64-unknown-linux-gnu --bins \
    ${FUZZ_TARGET_DIR:+--target-dir "$FUZZ_TARGET_DIR"}
else
  cargo +nightly fuzz build "${BUILD[@]}"
fi
mkdir -p fuzz/target/logs

# The CI form runs with ASLR off (`setarch -R`): foldhash seeds itself from addresses once per
# process (fuzz/README.md, "What repeats"). Where the personality cannot be set (a sandbox that
# forbids it), the runs stay bounded and seeded but may not repeat; --check-repeat then fails.
NO_ASLR=()
if [ "$CI" = 1 ]; then
  if setarch "$(uname -m)" -R true 2>/dev/null; then
    NO_ASLR=(setarch "$(uname -m)" -R)
  elif [ "$REPEAT" = 1 ]; then
    echo "scripts/fuzz.sh: setarch -R (ASLR off) is refused here; the runs cannot repeat" >&2
    exit 1
  else
    echo "scripts/fuzz.sh: setarch -R (ASLR off) is refused here; running with ASLR on" >&2
  fi
fi

# One target, its libFuzzer output in fuzz/target/logs/<target><suffix>.log.
run_one() {
  local t=$1 suffix=${2:-} log="fuzz/target/logs/$1${2:-}.log" args
  if [ "$CI" = 1 ]; then
    local scratch="fuzz/target/ci-corpus/$t$suffix"
    rm -rf "$scratch"
    mkdir -p "$scratch" "fuzz/artifacts/$t"
    # Repeatable: libFuzzer's comparison tracing (-use_cmp, -use_memmem) feeds it values that
    # differ from run to run (addresses), and its corpus reload (-reload) and RSS thread
    # (-rss_limit_mb) follow the clock; without them a seed gives the same run every time.
    ${NO_ASLR[@]+"${NO_ASLR[@]}"} "$CI_BIN_DIR/$t" -artifact_prefix="fuzz/artifacts/$t/" "$scratch" "fuzz/corpus/$t" \
      -seed=1 -runs="$RUNS" -use_cmp=0 -use_memmem=0 -reload=0 -rss_limit_mb=0 \
      -timeout=10 -print_final_stats=1 >"$log" 2>&1
  else
    mkdir -p "fuzz/target/corpus/$t"
    args=("fuzz/target/corpus/$t" "fuzz/corpus/$t" -- -max_total_time="$SECONDS_EACH"
      -rss_limit_mb=2048)
    cargo +nightly fuzz run "${BUILD[@]}" "$t" "${args[@]}" \
      -timeout=10 -print_final_stats=1 >"$log" 2>&1
  fi
}

# What must be the same in two runs of a target: every status line libFuzzer prints (its
# step, event, coverage, features and corpus; not exec/s or RSS, which follow the machine, nor
# the `pulse` lines, which it prints only once 2 s have passed), then the names of the corpus
# files it wrote (libFuzzer names each by its SHA-1).
fingerprint() {
  local t=$1 suffix=$2
  grep -E '^#[0-9]+' "fuzz/target/logs/$t$suffix.log" | grep -v '	pulse ' \
    | sed -E 's/ (exec\/s|rss): [^ ]+//g'
  ls "fuzz/target/ci-corpus/$t$suffix"
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
RUNS_OF=("")
[ "$REPEAT" = 1 ] && RUNS_OF=(.1 .2)
for t in "${TARGETS[@]}"; do
  for suffix in "${RUNS_OF[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do
      wait -n || true
    done
    run_one "$t" "$suffix" &
    PID_OF[$t$suffix]=$!
  done
done
for t in "${TARGETS[@]}"; do
  for suffix in "${RUNS_OF[@]}"; do
    wait "${PID_OF[$t$suffix]}" || failed+=("$t$suffix")
  done
done

for t in "${TARGETS[@]}"; do
  for suffix in "${RUNS_OF[@]}"; do
    log="fuzz/target/logs/$t$suffix.log"
    echo "== fuzz $t$suffix"
    grep -E '^#[0-9]+' "$log" | tail -1 || true
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" \
      | tr '\n' ' ' || true
    echo
  done
done
for t in "${failed[@]}"; do
  tail -60 "fuzz/target/logs/$t.log" >&2
  echo "fuzz target $t failed: the input is in fuzz/artifacts/${t%.[12]}/" >&2
done
differ=()
if [ "$REPEAT" = 1 ]; then
  for t in "${TARGETS[@]}"; do
    if ! diff <(fingerprint "$t" .1) <(fingerprint "$t" .2) >"fuzz/target/logs/$t.repeat.diff"
    then
      differ+=("$t")
      echo "fuzz target $t: two runs with -seed=1 differ (first lines of the difference):" >&2
      head -8 "fuzz/target/logs/$t.repeat.diff" >&2
    fi
  done
  echo "repeat: $(( ${#TARGETS[@]} - ${#differ[@]} )) of ${#TARGETS[@]} targets the same in two runs"
fi
[ ${#failed[@]} -eq 0 ] && [ ${#differ[@]} -eq 0 ]
