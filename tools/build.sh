#!/usr/bin/env bash
# Installs what is missing and builds syncplan (Release) into build/; build/bin/syncplan is the tool.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
echo "build: configuring and compiling syncplan into build/ (about 10-15 minutes on 2 cores the first time: the tool, its tests and benchmarks)" >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
if ! cmake --build build -j "$jobs" >build/build.log 2>&1; then
  cat build/build.log >&2
  echo "build: failed (log above, and in build/build.log)" >&2
  exit 1
fi
grep -E "Built target" build/build.log >&2 || true
