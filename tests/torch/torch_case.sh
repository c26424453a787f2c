#!/usr/bin/env bash
# Runs one torch test case (check_torch_profile.py MODE) with the first of the given Pythons that has
# torch; exits 77 (CTest's skip code) with a message when none has it, so that a machine without
# python3 or python3-torch skips these tests visibly instead of passing them.
#
# MODE ddp-compare runs tools/ddp-compare.sh into WORKDIR instead; MODE executor-X runs
# check_executor.py X (the plan executor of python/syncplan); MODE example runs tools/torch-example.sh
# (8 iterations, plain loopback) into WORKDIR, then check_example.py on what it wrote.
#
# usage: torch_case.sh MODE SYNCPLAN WORKDIR PYTHON...
set -uo pipefail
if [[ $# -lt 4 ]]; then
  echo "usage: torch_case.sh MODE SYNCPLAN WORKDIR PYTHON..." >&2
  exit 1
fi
mode=$1 syncplan=$2 workdir=$3
shift 3
# torch.distributed.run makes a folder in the temporary directory, which a job whose rank was
# killed or stopped (the faults cases) leaves behind: keep it beside the work folder, not in /tmp.
export TMPDIR=$workdir-tmp
mkdir -p "$TMPDIR"
for python in "$@"; do
  # find_spec locates torch without importing it (seconds); a broken install then fails the test.
  if command -v "$python" >/dev/null 2>&1 &&
     "$python" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)" 2>/dev/null; then
    if [[ $mode == ddp-compare ]]; then  # the example script, with this Python and this syncplan
      SYNCPLAN=$syncplan PYTHON=$python exec bash "$(dirname "$0")/../../tools/ddp-compare.sh" "$workdir"
    fi
    if [[ $mode == example ]]; then  # tools/torch-example.sh, short and over plain loopback, then its checks
      TORCH_EXAMPLE_RATE=none TORCH_EXAMPLE_ITERATIONS=8 SYNCPLAN=$syncplan PYTHON=$python \
        bash "$(dirname "$0")/../../tools/torch-example.sh" "$workdir" || exit 1
      exec "$python" "$(dirname "$0")/check_example.py" "$workdir"
    fi
    if [[ $mode == executor-* ]]; then  # syncplan.torch.PlanExecutor (check_executor.py)
      exec "$python" "$(dirname "$0")/check_executor.py" "${mode#executor-}" --syncplan "$syncplan" --workdir "$workdir"
    fi
    exec "$python" "$(dirname "$0")/check_torch_profile.py" "$mode" --syncplan "$syncplan" --workdir "$workdir"
  fi
done
echo "SKIP: none of ($*) has torch; tools/install-deps.sh installs Debian's python3-torch"
exit 77
