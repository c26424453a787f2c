#!/usr/bin/env bash
# The model against a real, kernel-shaped TCP link (docs/runtime.md section 7): 2
# ranks of Open MPI over TCP on a loopback that tools/shaped-link.sh limits to FIDELITY_RATE
# (default 50mbit: there the link dominates and runs spread 0-3 %):
#   allreduce  the predicted time of one 4 MiB all-reduce (the DES of a one-layer profile on the
#              shaped-link cluster file) within 10 % of profile-link's measurement of it
#   schedules  ssgd, flsgd and the `best` plan (H = 4), each run for 8 iterations (the first period
#              skipped): the measured periods of ssgd and best within 10 % of the DES's prediction
#              from the runs' own compute on the cluster file, and the predicted order of the three
#              equal to the measured one
# The compute comes from the runs' own traces (check_fidelity.py trace-profile), so a busy machine
# slows both sides alike: these checks are meant to hold beside two CPU-bound processes too.
# Exit 77 (a skip) where namespaces or tc are not permitted.
#
# usage: reallink_cases.sh CASE SYNCPLAN PYTHON WORKDIR [MPIEXEC]
set -euo pipefail

case_name="$1" syncplan="$2" python="$3" workdir="$4" mpiexec="${5:-mpirun}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
text="$here/data/training.txt"  # the project's own text, always in the checkout
rate="${FIDELITY_RATE:-50mbit}"
[[ "$syncplan" != */* ]] || syncplan="$(cd "$(dirname "$syncplan")" && pwd)/$(basename "$syncplan")"
[[ "$workdir" == /* ]] || workdir="$PWD/$workdir"

if [[ "${SHAPED_LINK_RATE:-}" == "" ]]; then
  # Outside the namespace: make the work folder, then run this script again inside one.
  rm -rf "$workdir" && mkdir -p "$workdir"
  exec "$root/tools/shaped-link.sh" --ranks 2 --cluster "$workdir/cluster.json" "$rate" -- \
    bash "$0" "$case_name" "$syncplan" "$python" "$workdir" "$mpiexec"
fi
cd "$workdir"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi() {
  echo "\$ mpirun -np 2 syncplan $*"
  timeout -k 5 240 "$mpiexec" --oversubscribe --bind-to none -np 2 "$syncplan" "$@"
}
check() { "$python" "$here/check_fidelity.py" "$@"; }
within() {  # within WHAT MEASURED PREDICTED PERCENT
  "$python" - "$@" <<'EOF'
import sys
what, measured, predicted, limit = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
error = (measured - predicted) / predicted * 100
print(f"{what}: measured {measured:.4f} s, predicted {predicted:.4f} s, error {error:+.1f}% (limit {limit:g}%)")
sys.exit(0 if abs(error) <= limit else f"FAIL: {what} is {error:+.1f}% from its prediction (limit {limit:g}%)")
EOF
}

case "$case_name" in
  allreduce)
    # 4 MiB = 4,194,304 bytes per rank. By hand: a 2-rank ring sends n bytes per rank (2(p-1)/p n),
    # both ranks through the one queue: 2n x 8 bits / 50e6 bit/s = 1.342 s, which is the cluster
    # file's ring at 25 Mbit/s per rank (n x 8 / 25e6), plus 2 x 50 us of latency.
    mpi profile-link --backend mpi -b 4K -e 4M -f 1024 -w 1 -n 3 -o link.json >link.txt
    cat link.txt
    echo '{"format": "syncplan.profile/v1", "model": "one-buffer", "source": "estimated:hand", "layers": [
      {"name": "buffer", "param_count": 1048576, "param_bytes": 4194304, "forward_s": 0, "backward_s": 0, "update_s": 0}]}' \
      >buffer.json
    "$syncplan" simulate --profile buffer.json --cluster cluster.json --strategy ssgd --period 1 --iterations 1 \
      -o buffer.des.json >buffer.des.txt
    measured=$("$python" -c 'import json; print([s["time_s"] for s in json.load(open("link.json"))["samples"] if s["size_bytes"] == 4194304][0])')
    predicted=$("$python" -c 'import json; print(json.load(open("buffer.des.json"))["period_s"])')
    within "all-reduce of 4 MiB on the shaped link" "$measured" "$predicted" 10
    ;;
  schedules)
    period=4 iterations=8 skip=4
    "$syncplan" profile --model tiny-gpt --device cpu --batch 4 --seq 32 --warmup 2 --repeats 5 -o profile.json \
      >profile.txt
    "$syncplan" plan --profile profile.json --cluster cluster.json --period $period --algorithm best -o best.json \
      >best.txt
    names=(ssgd flsgd best)
    schedule_of() {
      case "$1" in best) echo "--plan best.json" ;; *) echo "--strategy $1 --period $period" ;; esac
    }
    for name in "${names[@]}"; do
      read -r -a schedule <<<"$(schedule_of "$name")"
      mpi run "${schedule[@]}" --model tiny-gpt --data "$text" --iterations $iterations --batch 4 --seq 32 --seed 1 \
        --log "$name.jsonl" --trace "$name.trace.json" >"$name.run.txt"
    done
    # The compute of every run, pooled (the slower rank per iteration), then the DES of each schedule.
    check trace-profile profile.json $skip runs-profile.json ./*.trace.json
    arguments=()
    for name in "${names[@]}"; do
      read -r -a schedule <<<"$(schedule_of "$name")"
      "$syncplan" simulate --profile runs-profile.json --cluster cluster.json "${schedule[@]}" --iterations $iterations \
        -o "$name.des.json" >"$name.des.txt"
      "$syncplan" compare "$name.des.json" "$name.jsonl" --skip $skip --json "$name.compare.json" >"$name.compare.txt"
      arguments+=("$name=$name.compare.json:$name.compare.json")
    done
    check promise 10 none $period "${arguments[@]}"
    check order "${arguments[@]}"
    ;;
  *)
    echo "unknown case $case_name (allreduce, schedules)" >&2
    exit 2
    ;;
esac
