#!/usr/bin/env bash
# The runtime's fidelity on 2 ranks (issue 12 acceptance; docs/runtime.md section 7): the DES's
# prediction from a CPU profile measured here, now, against `syncplan run`'s measured iterations,
# through `syncplan compare` (checked and tabled by check_fidelity.py):
#   fidelity  no emulation: the link is a `profile-link` fit on the same 2 ranks; ssgd and wfbp;
#             prints each one's MAPE (README target <= 10 %; fails above FIDELITY_MAPE_LIMIT, 25 %)
#   promise   an emulated 1 Gbit/s, 50 us link (tests/runtime/data/emulated-2ranks-1gbps.json):
#             ssgd, flsgd, plsgd-even and the `best` plan, H = 4; each measured period within 15 %
#             of the DES's, and the measured speedup of best over ssgd >= 80 % of the predicted one
# The compute times come from two `profile --device cpu` processes run at once, so that the
# profile sees what each rank sees: two processes computing on this machine's cores (one process
# alone ran 2-4 times faster than a rank; docs/runtime.md section 7). Exit 77 (a skip) when the
# GPL-3 text is missing.
#
# usage: fidelity_cases.sh CASE SYNCPLAN PYTHON WORKDIR [MPIEXEC]
# Environment (tools/runtime-fidelity.sh sets them for longer runs): FIDELITY_ITERATIONS (16),
# FIDELITY_SKIP (4), FIDELITY_BATCH (4), FIDELITY_SEQ (32), FIDELITY_PERIOD (4).
set -euo pipefail

case_name="$1" syncplan="$2" python="$3" workdir="$4" mpiexec="${5:-mpirun}"
here="$(cd "$(dirname "$0")" && pwd)"
text=/usr/share/common-licenses/GPL-3
[[ -f "$text" ]] || { echo "skip: no $text"; exit 77; }
rm -rf "$workdir" && mkdir -p "$workdir" && cd "$workdir"

iterations="${FIDELITY_ITERATIONS:-16}" skip="${FIDELITY_SKIP:-4}" period="${FIDELITY_PERIOD:-4}"
batch="${FIDELITY_BATCH:-4}" seq="${FIDELITY_SEQ:-32}"
cluster="$here/data/emulated-2ranks-1gbps.json"
check() { "$python" "$here/check_fidelity.py" "$@"; }
# Open MPI refuses root without these, and more ranks than cores without --oversubscribe; a hang
# is ended by timeout (exit 124) and fails the case.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi() { echo "\$ mpirun -np 2 syncplan $*"; timeout -k 5 240 "$mpiexec" --oversubscribe -np 2 "$syncplan" "$@"; }

# Two CPU profiles at once, as two ranks compute; profile.json is the first, profile-b.json the
# second (check_fidelity.py prints how far apart their steps are).
profile_loaded() {
  local args=(profile --model tiny-gpt --device cpu --batch "$batch" --seq "$seq" --warmup 3 --repeats 9)
  echo "\$ syncplan ${args[*]} (two processes at once)"
  "$syncplan" "${args[@]}" -o profile-b.json >profile-b.txt &
  local other=$!
  "$syncplan" "${args[@]}" -o profile.json >profile.txt
  wait "$other"
  tail -n 1 profile.txt
  check profiles profile.json profile-b.json
}

# run_and_compare NAME SCHEDULE...: `run` on 2 ranks of the schedule (--strategy S --period H or
# --plan P) with the options in run_options; the DES of the same schedule with those in
# simulate_options twice, on profile.json and on NAME.own.json (the run's own compute events,
# check_fidelity.py trace-profile); `compare` of each with the run (NAME.compare.json,
# NAME.own.compare.json).
run_options=() simulate_options=()
run_and_compare() {
  local name="$1"
  shift
  mpi run "$@" "${run_options[@]}" --model tiny-gpt --data "$text" --iterations "$iterations" --batch "$batch" \
    --seq "$seq" --seed 1 --log "$name.jsonl" --trace "$name.trace.json" >"$name.run.txt"
  tail -n 1 "$name.run.txt"
  check trace-profile profile.json "$name.trace.json" "$skip" "$name.own-profile.json"
  local prediction
  for prediction in "$name" "$name.own"; do
    local used=profile.json
    [[ $prediction == "$name.own" ]] && used="$name.own-profile.json"
    "$syncplan" simulate --profile "$used" --cluster "$cluster" "$@" "${simulate_options[@]}" \
      --iterations "$iterations" -o "$prediction.des.json" >"$prediction.des.txt"
    "$syncplan" compare "$prediction.des.json" "$name.jsonl" --skip "$skip" --json "$prediction.compare.json" \
      >"$prediction.compare.txt"
    echo "$used: $(grep -i "mape" "$prediction.compare.txt")"
  done
}

case "$case_name" in
  fidelity)
    mpi profile-link --backend mpi -b 1K -e 4M -f 4 -w 5 -n 20 -o link.json >link.txt
    tail -n 3 link.txt
    profile_loaded
    simulate_options=(--link link.json)
    for strategy in ssgd wfbp; do run_and_compare "$strategy" --strategy "$strategy" --period 1; done
    check fidelity "${FIDELITY_MEAN_LIMIT:-15}" ssgd=ssgd.compare.json:ssgd.own.compare.json \
      wfbp=wfbp.compare.json:wfbp.own.compare.json
    ;;
  promise)
    profile_loaded
    "$syncplan" plan --profile profile.json --cluster "$cluster" --period "$period" --algorithm best -o best.json >best.txt
    grep -i "chosen" best.txt || true
    run_options=(--emulate-link-Gbps 1 --emulate-latency-us 50)
    for strategy in ssgd flsgd plsgd-even; do run_and_compare "$strategy" --strategy "$strategy" --period "$period"; done
    run_and_compare best --plan best.json
    check promise 15 80 "$period" ssgd=ssgd.compare.json:ssgd.own.compare.json \
      flsgd=flsgd.compare.json:flsgd.own.compare.json plsgd-even=plsgd-even.compare.json:plsgd-even.own.compare.json \
      best=best.compare.json:best.own.compare.json
    ;;
  *)
    echo "unknown case $case_name (fidelity, promise)" >&2
    exit 2
    ;;
esac
