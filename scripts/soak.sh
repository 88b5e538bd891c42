#!/usr/bin/env bash
# Soak test of `duomcp serve --http` on loopback (bench/soak.py): session churn, both
# revisions, listen streams, clients vanishing mid-stream, for a fixed time; fails unless RSS
# and open fds return to within a margin of their baseline. Prints the curve.
#
#   scripts/soak.sh --short                  # the CI form (~1 minute)
#   scripts/soak.sh --long                   # the long form: 100,000 sessions
#   scripts/soak.sh --sessions 100000        # churn until 100,000 sessions were made
#   scripts/soak.sh --seconds 600 -- FLAGS   # FLAGS go to `duomcp serve --http ADDR`
#
# Uses target/debug/duomcp (built here if needed); --server PATH picks another binary.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q -p duomcp-cli --bin duomcp --locked
exec python3 bench/soak.py "$@"
