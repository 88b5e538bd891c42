#!/usr/bin/env bash
# The instruction-count regression gate: bench/icount.py (see there, and bench/README.md).
#   bench/icount.sh             compare with bench/baseline.json (fails on > 3 % growth)
#   bench/icount.sh --update    regenerate bench/baseline.json
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "icount: valgrind is needed (Debian package valgrind)" >&2; exit 1; }
exec python3 bench/icount.py "$@"
