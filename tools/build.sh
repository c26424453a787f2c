#!/usr/bin/env bash
# Installs what is missing and builds syncplan (Release) into build/; build/bin/syncplan is the tool.
# SYNCPLAN_BUILD_TARGETS (space-separated CMake targets, e.g. "syncplan") builds only those and what
# they need; unset or empty, everything: the tool, its tests and benchmarks. Arguments go to cmake's
# configure step (e.g. -DSYNCPLAN_WITH_CUDA=OFF); without a SYNCPLAN_WITH_CUDA argument it is AUTO,
# so that a build after tools/example.sh's (which may turn CUDA off) has the GPU parts again.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
read -r -a targets <<<"${SYNCPLAN_BUILD_TARGETS:-}"
target_args=()
for target in "${targets[@]}"; do target_args+=(--target "$target"); done
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "build: configuring and compiling syncplan into build/ (about 10-15 minutes on 2 cores the first time: the tool, its tests and benchmarks)" >&2
else
  echo "build: configuring and compiling ${targets[*]} into build/ (a few minutes on 2 cores the first time)" >&2
fi
start=$(date +%s)
cuda_arg=(-DSYNCPLAN_WITH_CUDA=AUTO)
for arg in "$@"; do [[ $arg == -DSYNCPLAN_WITH_CUDA=* ]] && cuda_arg=(); done
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${cuda_arg[@]}" "$@" >/dev/null
if ! cmake --build build -j "$jobs" "${target_args[@]}" >build/build.log 2>&1; then
  cat build/build.log >&2
  echo "build: failed (log above, and in build/build.log)" >&2
  exit 1
fi
grep -E "Built target" build/build.log >&2 || true
echo "build: done in $(( $(date +%s) - start )) s" >&2
