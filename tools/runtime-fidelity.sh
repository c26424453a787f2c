#!/usr/bin/env bash
# Reproduces the README's tables on the runtime's fidelity ("The runtime against its prediction",
# docs/runtime.md section 7), from tests/runtime/fidelity_cases.sh with longer runs and the
# limits switched on (the CTest tests run the same pipeline and check only its logic):
#   default       the MAPE of the DES against `syncplan run` for ssgd and wfbp on 2 ranks over
#                 shared memory, and the plan's promise on the emulated 1 Gbit/s link
#   --shaped R,.. over a real link per rate R (tc's syntax: 200mbit,50mbit): tools/shaped-link.sh
#                 shapes loopback in a private namespace; ssgd, wfbp, flsgd, plsgd-even, the best
#                 plan and a delayed plan (H = 4), each predicted from the shaped link's cluster file
#                 and from profile-link run inside the namespace; --ranks P (default 2) ranks; then,
#                 with 2 ranks, PyTorch on gloo over the same link (tools/ddp-compare.sh: DDP,
#                 S-SGD, local SGD with PeriodicModelAverager) from the gloo sweep and the cluster file,
#                 and the plan executor's example (tools/torch-example.sh: its table and loss curves)
# Every case runs even when one fails; the script then exits 1 naming them.
#
# usage: tools/runtime-fidelity.sh [--shaped RATES] [--ranks P] [OUT_DIR]   (default out/runtime-fidelity;
#        SYNCPLAN=path/to/syncplan, MPIEXEC=mpirun, PYTHON=python3; FIDELITY_ITERATIONS, FIDELITY_SKIP,
#        FIDELITY_ROUNDS as in fidelity_cases.sh)
# Needs mpirun (it trains on tests/runtime/data/training.txt); --shaped needs root (or user namespaces) and tc.
# Run it on an otherwise idle machine: the tables measure time. The default takes about two minutes on
# 2 cores; --shaped 200mbit,50mbit about eight, and about 2.5 more per rate for the executor's example.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
syncplan=${SYNCPLAN:-$root/build/bin/syncplan}
rates="" ranks=2 out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --shaped) rates="${2:?--shaped needs rates}"; shift 2 ;;
    --ranks) ranks="${2:?--ranks needs a count}"; shift 2 ;;
    -*) echo "runtime-fidelity.sh: unknown option '$1'" >&2; exit 2 ;;
    *) out="$1"; shift ;;
  esac
done
out=${out:-$root/out/runtime-fidelity}
if [[ ! -x $syncplan ]]; then
  echo "runtime-fidelity.sh: no syncplan at $syncplan (build it: tools/build.sh, or set SYNCPLAN)" >&2
  exit 2
fi
syncplan=$(cd "$(dirname "$syncplan")" && pwd)/$(basename "$syncplan")
export FIDELITY_ITERATIONS=${FIDELITY_ITERATIONS:-24} FIDELITY_SKIP=${FIDELITY_SKIP:-8} FIDELITY_ROUNDS=${FIDELITY_ROUNDS:-3}
export FIDELITY_PROFILES=${FIDELITY_PROFILES:-3}
export FIDELITY_MEAN_LIMIT=${FIDELITY_MEAN_LIMIT:-35} FIDELITY_PROMISE_TOLERANCE=${FIDELITY_PROMISE_TOLERANCE:-15}
export FIDELITY_PROMISE_SPEEDUP=${FIDELITY_PROMISE_SPEEDUP:-80}
mkdir -p "$out"
out=$(cd "$out" && pwd)
failed=()
run_case() {  # run_case LABEL DIR CASE [WRAPPER...]
  local label="$1" dir="$2" case_name="$3"
  shift 3
  echo "== $label (files in $dir)"
  if ! "$@" bash "$root/tests/runtime/fidelity_cases.sh" "$case_name" "$syncplan" "${PYTHON:-python3}" "$dir" \
      "${MPIEXEC:-mpirun}"; then
    failed+=("$label")
  fi
}
if [[ -z $rates ]]; then
  for case_name in fidelity promise; do run_case "$case_name" "$out/$case_name" "$case_name"; done
else
  IFS=, read -r -a rate_list <<<"$rates"
  for rate in "${rate_list[@]}"; do
    dir="$out/shaped-$rate-np$ranks"
    mkdir -p "$dir"
    FIDELITY_CLUSTER="$dir.cluster.json" FIDELITY_RANKS=$ranks \
      run_case "shaped $rate, $ranks ranks" "$dir" shaped \
      "$root/tools/shaped-link.sh" --ranks "$ranks" --cluster "$dir.cluster.json" "$rate" --
    if [[ $ranks == 2 && ${FIDELITY_TORCH:-1} == 1 ]]; then
      echo "== PyTorch (gloo) over the shaped link $rate (files in $dir-torch)"
      DDP_COMPARE_CLUSTER="$dir.cluster.json" SYNCPLAN="$syncplan" \
        "$root/tools/shaped-link.sh" --ranks 2 "$rate" -- "$root/tools/ddp-compare.sh" "$dir-torch" \
        || failed+=("PyTorch $rate")
      # The plan executor's example (tools/torch-example.sh) at the same rate: ssgd, flsgd,
      # plsgd-even, the best plan and a delayed plan in a torch loop, against the DES; it shapes
      # the link itself.
      echo "== PyTorch PlanExecutor example over the shaped link $rate (files in $dir-torch-example)"
      TORCH_EXAMPLE_RATE="$rate" SYNCPLAN="$syncplan" "$root/tools/torch-example.sh" "$dir-torch-example" \
        || failed+=("PlanExecutor example $rate")
    fi
  done
fi
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "runtime-fidelity.sh: failed: ${failed[*]}" >&2
  exit 1
fi
