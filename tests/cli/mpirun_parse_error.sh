#!/usr/bin/env bash
# A command-line mistake under mpirun is printed once (by rank 0), as one line naming the option:
# parse errors come before MPI starts, from every rank alike (tools/syncplan_main.cpp).
#
# usage: mpirun_parse_error.sh SYNCPLAN MPIEXEC WORKDIR
set -euo pipefail
syncplan="$1" mpiexec="$2" workdir="$3"
rm -rf "$workdir" && mkdir -p "$workdir" && cd "$workdir"
set +e
"$mpiexec" --allow-run-as-root --oversubscribe -np 2 "$syncplan" profile-link --backend mpi --iters x \
  -o link.json >out.txt 2>err.txt
rc=$?
set -e
cat out.txt err.txt
[[ $rc -ne 0 ]] || { echo "FAIL: exit code 0"; exit 1; }
[[ ! -e link.json ]] || { echo "FAIL: link.json written"; exit 1; }
count=$(grep -cF -- "syncplan: --iters: 'x' is not an integer" err.txt || true)
[[ $count -eq 1 ]] || { echo "FAIL: the message was printed $count times, expected once"; exit 1; }
echo "ok: printed once"
