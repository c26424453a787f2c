#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every CTest test (unit, golden, CLI).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
cd build
ctest --output-on-failure -j "$jobs"
