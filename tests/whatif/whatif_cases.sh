#!/usr/bin/env bash
# `syncplan whatif` end to end (docs/whatif.md). Cases:
#   equal_single_runs  a few points per strategy equal `syncplan simulate --cluster POINT.json`
#                      (or `plan` then `simulate --plan`) on the same profile, to 1e-9 relative
#   jobs_and_ranks     the same CSV, byte for byte, with --jobs 1 and 2, and under mpirun -np 1 and 2
#                      (skipped, exit 77, without mpirun)
#   progress           on a terminal (util-linux `script` gives one) stderr shows the progress bar:
#                      points done, rate, time left (skipped, exit 77, without `script`)
#   real_profile       the reference GPT-2 profile (DreamDDP's time files beside the checkout, which
#                      have no param_bytes) is refused up front: exit 2 naming the layer and the field,
#                      nothing written (skipped, exit 77, without ../shared/data)
# usage: whatif_cases.sh CASE SYNCPLAN PYTHON WORKDIR CLUSTERS_DIR [MPIEXEC] [SHARED_DATA_DIR]
set -euo pipefail
case_name="$1" syncplan="$2" python="$3" workdir="$4" clusters="$5" mpiexec="${6:-}" shared="${7:-}"
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
    # The profile records the workload it was made at (batch 8, seq 1024):
    # `whatif --profile` without --batch or --seq has the same samples/s and tokens/s as --model's
    # sweep at the same points, and its throughput plot is drawn.
    point=(--cluster "$base" --workers 8,64 --bandwidth-Gbps 10 --period 4 --strategies ssgd,dp)
    "$syncplan" whatif --profile gpt2.json "${point[@]}" --csv recorded.csv --plot recorded.svg >/dev/null
    "$syncplan" whatif "${model[@]}" "${point[@]}" --csv model.csv >/dev/null
    [[ -s recorded.svg ]] || { echo "FAIL: no plot from a profile with its workload"; exit 1; }
    "$python" - recorded.csv model.csv <<'PY'
import csv, sys
recorded, model = (list(csv.DictReader(open(path))) for path in sys.argv[1:3])
assert len(recorded) == len(model) == 4, (len(recorded), len(model))
for a, b in zip(recorded, model):
    for column in ("batch_per_worker", "seq", "samples_per_s", "tokens_per_s"):
        assert a[column] and a[column] == b[column], (column, a[column], b[column])
print("ok: whatif --profile with a recorded workload has --model's samples/s and tokens/s at 4 points")
PY
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
    # A profile of all-zero times on 1 worker (no all-reduce): every period is 0 s, so no
    # speedup and no throughput: empty cells, not inf or NaN, and the same 2 x 3 rows from 2 ranks
    # (rank 1's arrived empty).
    "$python" -c 'import json, sys
layers = [{"name": n, "param_count": 256, "param_bytes": 1024, "forward_s": 0, "backward_s": 0, "update_s": 0,
           "sync_s": None} for n in ("embed", "hidden", "head")]
json.dump({"format": "syncplan.profile/v1", "model": "zero", "source": "estimated:test", "workers": None,
           "layers": layers}, open("zero.json", "w"))'
    zero=(whatif --profile zero.json --cluster "$clusters/8nodes-1gpu-10gbps.json" --workers 1 --period 2,4
          --strategies ssgd,flsgd,best --batch 4 --jobs 1)
    "$syncplan" "${zero[@]}" --csv zero1.csv >/dev/null
    timeout -k 5 240 "$mpiexec" --allow-run-as-root --oversubscribe -np 2 "$syncplan" "${zero[@]}" --csv zero2.csv >/dev/null
    cmp zero1.csv zero2.csv || { echo "FAIL: 2 ranks wrote other rows than 1"; diff zero1.csv zero2.csv; exit 1; }
    ! tail -n +2 zero1.csv | grep -qiE "nan|inf" || { cat zero1.csv; echo "FAIL: inf or NaN in the rows of an all-zero profile"; exit 1; }
    "$python" -c 'import csv, sys
rows = list(csv.DictReader(open("zero1.csv")))
assert len(rows) == 6 and all(r["status"] == "ok" and float(r["period_s"]) == 0 for r in rows), rows
assert all(r["speedup_vs_ssgd"] == "" and r["samples_per_s"] == "" for r in rows), rows' \
      || { echo "FAIL: the all-zero rows are not ok with empty speedups and throughputs"; exit 1; }
    echo "ok: an all-zero profile gives 6 rows of 0 s, no speedup, no inf or NaN, alike on 2 ranks"
    ;;
  progress)
    command -v script >/dev/null || { echo "skip: no script(1) to give the command a terminal"; exit 77; }
    script -qec "'$syncplan' whatif --model gpt2 --cluster '$base' --workers 8,16 --period 4 --strategies ssgd,dp \
      --jobs 1 --csv p.csv" /dev/null >terminal.txt
    cat terminal.txt
    grep -q "4/4 points, .* points/s, .* s left" terminal.txt || { echo "FAIL: no progress bar on the terminal"; exit 1; }
    [[ $(wc -l <p.csv) -eq 5 ]] || { echo "FAIL: p.csv does not hold 4 rows"; exit 1; }
    ;;
  real_profile)
    reference="$shared/dreamddp/gpt2-8workers-10gbit"
    [[ -f "$reference/bp.json" ]] || { echo "skip: no reference data at $reference"; exit 77; }
    "$syncplan" import dreamddp --bp "$reference/bp.json" --comm "$reference/comm.json" --model gpt2 \
      --tied lm_head=transformer.wte -o gpt2-dreamddp.json
    bash "$here/../cli/expect_error.sh" --workdir "$workdir/refused" --expect "param_bytes" --expect "layer '" \
      --absent out.csv -- "$syncplan" whatif --profile "$workdir/gpt2-dreamddp.json" --cluster "$base" \
      --workers 8,64 --period 10 --strategies ssgd,dreamddp --csv out.csv
    ;;
  allreduce_auto)
    # --allreduce auto is the cluster file's "allreduce": "auto": the same CSV byte
    # for byte, said in the summary; and it is not the file's own algorithm (hierarchical here):
    # ssgd's period differs at 4,096 workers.
    point=(--workers 8,4096 --bandwidth-Gbps 10 --period 4 --strategies ssgd,best --search-rounds 3)
    "$syncplan" whatif "${model[@]}" --cluster "$base" --allreduce auto "${point[@]}" --csv flag.csv --json flag.json \
      >summary.txt
    cat summary.txt
    grep -q "auto all-reduce" summary.txt || { echo "FAIL: the summary does not name the auto all-reduce"; exit 1; }
    "$python" -c 'import json, sys; a = json.load(open("flag.json"))["allreduce"]; assert a == "auto", a' ||
      { echo "FAIL: the JSON does not record the auto all-reduce"; exit 1; }
    "$python" -c 'import json, sys; d = json.load(open(sys.argv[1])); d["allreduce"] = "auto"; json.dump(d, open("auto.json", "w"))' "$base"
    "$syncplan" whatif "${model[@]}" --cluster auto.json "${point[@]}" --csv file.csv >/dev/null
    "$syncplan" whatif "${model[@]}" --cluster "$base" "${point[@]}" --csv own.csv >/dev/null
    cmp flag.csv file.csv || { echo "FAIL: --allreduce auto differs from a cluster file saying auto"; exit 1; }
    "$python" - flag.csv own.csv <<'PY'
import csv, sys
auto, own = (list(csv.DictReader(open(path))) for path in sys.argv[1:3])
pick = lambda rows: next(float(r["period_s"]) for r in rows if r["workers"] == "4096" and r["strategy"] == "ssgd")
assert pick(auto) != pick(own), (pick(auto), pick(own))
print(f"ok: ssgd at 4,096 workers: auto {pick(auto):.6g} s, hierarchical {pick(own):.6g} s a period")
PY
    # A cluster file that names no algorithm: "auto" under --model (an estimate of an NCCL
    # cluster), "ring" under --profile (docs/cluster.md).
    "$python" -c 'import json, sys; d = json.load(open(sys.argv[1])); del d["allreduce"]; json.dump(d, open("unnamed.json", "w"))' "$base"
    "$syncplan" whatif "${model[@]}" --cluster unnamed.json "${point[@]}" --csv unnamed.csv >unnamed.txt
    grep -q "auto all-reduce" unnamed.txt || { echo "FAIL: --model with no algorithm named did not run auto"; cat unnamed.txt; exit 1; }
    cmp flag.csv unnamed.csv || { echo "FAIL: --model with no algorithm named differs from --allreduce auto"; exit 1; }
    "$syncplan" profile "${model[@]}" --device estimate -o gpt2.json >/dev/null
    "$syncplan" whatif --profile gpt2.json --cluster unnamed.json "${point[@]}" --csv profile.csv >profile.txt
    grep -q "ring all-reduce" profile.txt || { echo "FAIL: --profile with no algorithm named did not run the ring"; cat profile.txt; exit 1; }
    ;;
  *) echo "unknown case $case_name" >&2; exit 1 ;;
esac
