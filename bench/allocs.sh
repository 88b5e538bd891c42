#!/usr/bin/env bash
# Heap allocations per unit of the instruction-count scenarios (bench/README.md, "Allocations
# per call"): duomcp-icount built with its feature `count-allocs` (a counting global
# allocator around the same counted region as the gate's), run without valgrind.
#
#   bench/allocs.sh                  # every scenario
#   bench/allocs.sh stdio-modern     # some of them
#
# It builds into the same target dir as bench/icount.sh, whose next run rebuilds the gate's
# binary without the feature (the duomcp-cli crate only).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -q -p duomcp-cli --features count-allocs --bin duomcp-icount
bin="${CARGO_TARGET_DIR:-target}/release/duomcp-icount"
if [ "$#" -gt 0 ]; then scenarios=("$@"); else mapfile -t scenarios < <("$bin" list | cut -f1); fi
for scenario in "${scenarios[@]}"; do
  "$bin" "$scenario" | grep 'allocations per unit'
done
