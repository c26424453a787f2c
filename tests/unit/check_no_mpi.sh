#!/usr/bin/env bash
# Fails when PROGRAM needs an MPI library at run time (ldd lists libmpi, Open MPI's libopen-pal or
# libopen-rte, or MPICH's libmpich): the period model's unit tests link the planner alone.
# usage: check_no_mpi.sh PROGRAM
set -euo pipefail
program=${1:?usage: check_no_mpi.sh PROGRAM}
libraries=$(ldd "$program")
if mpi=$(grep -E 'lib(mpi|mpich|open-pal|open-rte)[._]' <<<"$libraries"); then
  echo "FAIL: $program needs MPI at run time:" >&2
  echo "$mpi" >&2
  exit 1
fi
echo "ok: $program links no MPI ($(wc -l <<<"$libraries") libraries)"
