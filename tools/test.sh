#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every CTest test (unit, golden, CLI),
# then builds the fuzz harnesses and runs each for SYNCPLAN_FUZZ_SECONDS (default 20; 0 skips them).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
cd build
ctest --output-on-failure -j "$jobs"
cd ..
fuzz_seconds=${SYNCPLAN_FUZZ_SECONDS:-20}
[[ "$fuzz_seconds" == 0 ]] || tests/fuzz/run.sh --seconds "$fuzz_seconds" --parallel "$jobs"
