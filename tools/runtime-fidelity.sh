#!/usr/bin/env bash
# Reproduces the README's two tables on the runtime's fidelity ("The runtime against its
# prediction"): the MAPE of the DES against `syncplan run` for ssgd and wfbp on 2 ranks, and the
# plan's promise on an emulated 1 Gbit/s link (ssgd, flsgd, plsgd-even, best). Both come from
# tests/runtime/fidelity_cases.sh (the CTest tests runtime.fidelity.{fidelity,promise}), here with
# longer runs: each schedule 3 times, 24 iterations each, the first 8 (two periods of H = 4) left out.
#
# usage: tools/runtime-fidelity.sh [OUT_DIR]   (default: out/runtime-fidelity; SYNCPLAN=path/to/syncplan,
#        MPIEXEC=mpirun, PYTHON=python3; FIDELITY_ITERATIONS, FIDELITY_SKIP as in fidelity_cases.sh)
# Needs mpirun and /usr/share/common-licenses/GPL-3; about two minutes on 2 idle cores. Run it on an
# otherwise idle machine: the tables measure time.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
syncplan=${SYNCPLAN:-$root/build/bin/syncplan}
out=${1:-$root/out/runtime-fidelity}
if [[ ! -x $syncplan ]]; then
  echo "runtime-fidelity.sh: no syncplan at $syncplan (build it: tools/build.sh, or set SYNCPLAN)" >&2
  exit 2
fi
export FIDELITY_ITERATIONS=${FIDELITY_ITERATIONS:-24} FIDELITY_SKIP=${FIDELITY_SKIP:-8} FIDELITY_ROUNDS=${FIDELITY_ROUNDS:-3}
mkdir -p "$out"
for case_name in fidelity promise; do
  echo "== $case_name (files in $out/$case_name)"
  bash "$root/tests/runtime/fidelity_cases.sh" "$case_name" "$syncplan" "${PYTHON:-python3}" "$out/$case_name" \
    "${MPIEXEC:-mpirun}"
done
