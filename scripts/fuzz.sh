#!/usr/bin/env bash
# The fuzz targets of fuzz/ (cargo-fuzz, libFuzzer, nightly Rust), each run for a bounded time.
#
#   scripts/fuzz.sh                 # every target, 20 s each (what CI runs)
#   scripts/fuzz.sh 300 jwt_front_door meta   # chosen targets, 300 s each
#
# New inputs go to fuzz/target/corpus/<target>/ (seeded from the checked-in fuzz/corpus/<target>/,
# which stays as it is); a crash stops the run with a failure and leaves its input in
# fuzz/artifacts/<target>/, which is checked in as a regression once fixed (the replay test,
# crates/duomcp/tests/fuzz_replay.rs, runs every file there on stable). Installs the nightly
# toolchain and cargo-fuzz when missing. Built without AddressSanitizer (`-s none`): duomcp
# forbids `unsafe`, and a plain build runs several times faster.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-20}
shift || true

if ! cargo +nightly --version >/dev/null 2>&1; then
  rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi

TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  mapfile -t TARGETS < <(cargo +nightly fuzz list)
fi

cargo +nightly fuzz build -s none
mkdir -p fuzz/target/logs
for t in "${TARGETS[@]}"; do
  mkdir -p "fuzz/target/corpus/$t"
  log="fuzz/target/logs/$t.log"
  echo "== fuzz $t (${SECONDS_EACH}s)"
  if ! cargo +nightly fuzz run -s none "$t" "fuzz/target/corpus/$t" "fuzz/corpus/$t" -- \
      -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      >"$log" 2>&1; then
    tail -60 "$log" >&2
    echo "fuzz target $t failed: the input is in fuzz/artifacts/$t/" >&2
    exit 1
  fi
  # The last status line (executions, coverage, features, corpus) and the totals.
  grep -E '^#[0-9]+' "$log" | tail -1
  grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$log" | tr '\n' ' '
  echo
done
