#!/usr/bin/env bash
# `syncplan whatif` end to end (docs/whatif.md). Cases:
#   equal_single_runs  a few points per strategy equal `syncplan simulate --cluster POINT.json`
#                      (or `plan` then `simulate --plan`) on the same profile, to 1e-9 relative
#   jobs_and_ranks     the same CSV, byte for byte, with --jobs 1 and 2, and under mpirun -np 1 and 2
#                      (skipped, exit 77, without mpirun)
# usage: whatif_cases.sh CASE SYNCPLAN PYTHON WORKDIR CLUSTERS_DIR [MPIEXEC]
set -euo pipefail
case_name="$1" syncplan="$2" python="$3" workdir="$4" clusters="$5" mpiexec="${6:-}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rm -rf "$workdir" && mkdir -p "$workdir" && cd "$workdir"
base="$clusters/32nodes-8gpu-100gbps.json"
# GPT-2 small estimated on an H100 (roofline, bf16): the profile `whatif --model gpt2` makes.
model=(--model gpt2 --batch 8 --seq 1024)
sweep=(whatif "${model[@]}" --cluster "$base" --workers 8,64 --bandwidth-Gbps 10,100 --period 4,auto
       --strategies ssgd,wfbp,ddp,mgwfbp,flsgd,plsgd-even,dreamddp,dp,search,best --search-rounds 3)

case "$case_name" in
  equal_single_runs)
    "$syncplan" "${sweep[@]}" --jobs 2 --csv sweep.csv --json sweep.json
    "$syncplan" profile "${model[@]}" --device estimate -o gpt2.json >/dev/null
    "$python" "$here/check_single_runs.py" "$syncplan" sweep.csv sweep.json gpt2.json "$base"
    ;;
  jobs_and_ranks)
    [[ -n "$mpiexec" ]] || { echo "skip: no mpirun"; exit 77; }
    small=(whatif "${model[@]}" --cluster "$base" --workers 8,16,64 --bandwidth-Gbps 1,10 --period 4,auto
           --strategies ssgd,flsgd,dreamddp,search --search-rounds 3)
    # stderr is not a terminal here: no progress bar, nothing on stderr at all.
    "$syncplan" "${small[@]}" --jobs 1 --csv one.csv 2>one.err
    [[ ! -s one.err ]] || { echo "FAIL: stderr is not a terminal but got:"; cat one.err; exit 1; }
    "$syncplan" "${small[@]}" --jobs 2 --csv two_jobs.csv
    # Open MPI refuses root without --allow-run-as-root, and more ranks than cores without
    # --oversubscribe; a hang is ended by timeout and fails the case.
    mpi() { timeout -k 5 240 "$mpiexec" --allow-run-as-root --oversubscribe -np "$1" "$syncplan" "${small[@]}" --jobs 1 --csv "$2"; }
    mpi 1 np1.csv
    mpi 2 np2.csv | tee np2.txt
    grep -q "on 2 ranks" np2.txt || { echo "FAIL: mpirun -np 2 did not run on 2 ranks"; exit 1; }
    for other in two_jobs.csv np1.csv np2.csv; do
      cmp one.csv "$other" || { echo "FAIL: $other differs from one.csv (one process, --jobs 1)"; diff one.csv "$other" | head; exit 1; }
    done
    rows=$(($(wc -l <one.csv) - 1))
    [[ $rows -eq 48 ]] || { echo "FAIL: $rows rows, expected 3 x 2 x 2 x 4 = 48"; exit 1; }
    echo "ok: the same $rows rows with --jobs 1 and 2, mpirun -np 1 and 2"
    ;;
  *) echo "unknown case $case_name" >&2; exit 1 ;;
esac
