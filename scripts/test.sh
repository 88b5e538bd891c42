#!/usr/bin/env bash
# The whole test suite: unit, integration and doc tests of every crate, then the interop tests
# against third-party MCP implementations (scripts/interop.sh: needs npm; installs Node 22 and
# the pinned packages of interop/ into target/interop-kit/).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked "$@"
scripts/interop.sh
