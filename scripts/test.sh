#!/usr/bin/env bash
# Runs every test: unit tests beside the code and the end-to-end tests in
# tests/ against the real binary. The `failpoints` feature compiles in the
# test-only crash points that the crash-recovery tests drive.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --features failpoints "$@"
