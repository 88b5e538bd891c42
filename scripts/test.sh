#!/usr/bin/env bash
# The whole test suite: unit, integration and doc tests of every crate.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked "$@"
