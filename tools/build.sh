#!/usr/bin/env bash
# Installs what is missing and builds syncplan (Release) into build/; build/bin/syncplan is the tool.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$jobs" >/dev/null
