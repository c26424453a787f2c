#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every CTest test (unit, golden, CLI),
# then builds the fuzz harnesses and runs each for SYNCPLAN_FUZZ_SECONDS (default 10; 0 skips them;
# tests/fuzz/run.sh alone runs longer searches).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
# A failing CTest test does not stop the fuzzers: the run reports both, then fails.
ctest_status=0
(cd build && ctest --output-on-failure -j "$jobs") || ctest_status=$?
fuzz_status=0
fuzz_seconds=${SYNCPLAN_FUZZ_SECONDS:-10}
[[ "$fuzz_seconds" == 0 ]] || tests/fuzz/run.sh --seconds "$fuzz_seconds" --parallel "$jobs" || fuzz_status=$?
if [[ $ctest_status != 0 || $fuzz_status != 0 ]]; then
  echo "test.sh: failed (ctest exit $ctest_status, fuzzers exit $fuzz_status)" >&2
  exit 1
fi
