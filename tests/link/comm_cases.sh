#!/usr/bin/env bash
# Runs test_comm_mpi under mpirun (tests/link/CMakeLists.txt registers each case): average and
# overlap must exit 0 with an "ok:" line per rank; timeout and setup_timeout must print "ok: ... CommTimeout" for
# every rank but the last, end with exit status 3 (their MPI_Abort) and take less than 20 s in all.
#
# usage: comm_cases.sh average|overlap|timeout|setup_timeout RANKS TEST_COMM_MPI [MPIEXEC]
set -uo pipefail

mode="$1" ranks="$2" program="$3" mpiexec="${4:-mpirun}"
# Open MPI refuses root without these, and more ranks than cores without --oversubscribe.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
started=$(date +%s)
output="$("$mpiexec" --oversubscribe -np "$ranks" "$program" "$mode" 2>&1)"
rc=$?
elapsed=$(($(date +%s) - started))
echo "$output"
echo "exit status $rc after ${elapsed} s"
oks=$(grep -c '^ok: ' <<<"$output")
case "$mode" in
  average|overlap)
    [[ $rc -eq 0 ]] || { echo "FAIL: exit status $rc"; exit 1; }
    [[ $oks -eq $ranks ]] || { echo "FAIL: $oks ok lines, expected $ranks"; exit 1; }
    ;;
  timeout|setup_timeout)
    [[ $rc -eq 3 ]] || { echo "FAIL: exit status $rc, expected 3 (MPI_Abort by the waiting ranks)"; exit 1; }
    ! grep -q '^FAIL' <<<"$output" || { echo "FAIL: a rank failed"; exit 1; }
    [[ $(grep -c '^ok: rank [0-9]*: CommTimeout after' <<<"$output") -eq $((ranks - 1)) ]] ||
      { echo "FAIL: expected a CommTimeout on each of the $((ranks - 1)) waiting ranks"; exit 1; }
    ((elapsed < 20)) || { echo "FAIL: took $elapsed s (deadline 2 s, then MPI_Abort)"; exit 1; }
    ;;
  *) echo "comm_cases.sh: unknown case '$mode'" >&2; exit 2 ;;
esac
echo "ok: $mode on $ranks ranks"
