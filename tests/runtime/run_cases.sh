#!/usr/bin/env bash
# `syncplan run` end to end under mpirun on tests/runtime/data/training.txt (tests/runtime/CMakeLists.txt registers
# each case; check_run.py derives what each output must hold):
#   train       ssgd, flsgd, plsgd-even and a planned schedule (plan --device cpu, fused buckets)
#               with the same seed on 2 ranks: every log line's buckets are the schedule's, the loss
#               falls, and each strategy's final loss is printed against ssgd's
#   train_np4   plsgd-even and the plan's schedule check on 4 ranks
#   overlap     wfbp: the trace shows all-reduces running while later layers' backward runs
#   emulated    ssgd with --emulate-link-Gbps 1 --emulate-latency-us 50: all-reduces last the ring
#               model's time, first in first out, and log and trace say so
#   bad         bad input on every rank: exit 2, the message once, no log or trace, no hang
#   mismatch    ranks with different plans (mpirun's MPMD form), and --resume folders that cannot
#               continue this run (another plan, rank count or seed, no complete checkpoint, a
#               step at --iterations): exit 2, the message once, nothing written, no hang
#   delayed     a delayed-averaging plan (sync_delays, docs/time-model.md section 13) on 2 ranks:
#               the checkpoints' parameters (steps 8, 12, 20, 24) equal an independent reference that trains both
#               replicas in one process ($DELAYED_REFERENCE, delayed_reference.cpp) bit for bit;
#               the log's sync_delays and applied and the trace's delayed all-reduces are what the
#               plan says, some all-reduce runs on past its iteration's step (an emulated slow
#               link); the loss falls; a resumed run continues exactly; every delay 0 written out
#               equals no delays; a run ending inside a period drops its last syncs; a delay past
#               the period's end and a checkpoint where a sync is in flight are refused (exit 2)
#   gpu_path    the --device cuda path (TrainingDevice over the GPU backend's trainer table, NCCL's
#               communicator) on the stand-in backend $FAKE_GPU_TRAINER (host memory, MPI;
#               tests/kernels/fake_gpu_backend.cpp): every strategy's log equals the CPU run's loss
#               for loss and bucket for bucket, a resumed run continues exactly, and a backend
#               without a trainer or with too few devices is refused (exit 2, one line); a
#               delayed-averaging plan runs as on the CPU, bit for bit ($DELAYED_REFERENCE checks its
#               checkpoint), and a backend without snapshots and corrections is refused for it
# usage: run_cases.sh CASE SYNCPLAN PYTHON WORKDIR [MPIEXEC]
set -euo pipefail

case_name="$1" syncplan="$2" python="$3" workdir="$4" mpiexec="${5:-mpirun}"
here="$(cd "$(dirname "$0")" && pwd)"
text="$here/data/training.txt"  # the project's own text (10 kB of prose), always in the checkout
rm -rf "$workdir" && mkdir -p "$workdir" && cd "$workdir"
check() { "$python" "$here/check_run.py" "$@"; }
# Open MPI refuses root without these, and more ranks than cores without --oversubscribe; a hang
# is ended by timeout (exit 124) and fails the case.
mpi() { local ranks="$1"; shift; echo "\$ mpirun -np $ranks syncplan $*"; timeout -k 5 240 "$mpiexec" --allow-run-as-root --oversubscribe -np "$ranks" "$syncplan" "$@"; }
common=(--model tiny-gpt --data "$text" --batch 4 --seq 32 --seed 3 --lr 0.003)
iterations=24

# The model's layers (param_count, tied_to) and a plan of this cluster for a CPU profile, from the
# planner: the test reads the layers from the profile, not from the runtime.
make_plan() {
  "$syncplan" plan --model tiny-gpt --device cpu --batch 4 --seq 32 --period 4 \
    --cluster "$here/data/emulated-2ranks-1gbps.json" --fuse-buckets --algorithm dp -o plan.json \
    --profile-out profile.json >plan.txt
  echo "plan: $(grep -c . plan.txt) lines of plan output; buckets per iteration:" \
    "$("$python" -c 'import json; print([len(b) for b in json.load(open("plan.json"))["buckets"]["iterations"]])')"
}

# Hand-written delayed-averaging plans for tiny-gpt, H = 4, from the planner's profile of its
# layers (profile.json): the owning layers in backprop order take turns in iterations 0..3 with
# delays 2, 1, 1, 0 (so the syncs of 0 and 1 are both applied before the step of 2, in that
# order), wte (with its tied lm_head) syncs in 0 and 2 with delay 1 each; layers without
# parameters of their own sync in 0. No layer has a delayed correction due where it also syncs
# with delay 0. zero.json: the same iterations with every delay 0 written out; plain.json:
# without sync_delays; crossing.json: delayed.json with one sync of iteration 3 delayed by 1.
make_delayed_plans() {
  "$syncplan" plan --model tiny-gpt --cluster "$here/data/emulated-2ranks-1gbps.json" --period 4 --algorithm dp \
    -o base.json --profile-out profile.json >/dev/null
  "$python" - <<'EOF_PY'
import copy, json
profile = json.load(open("profile.json"))
owning = [l["name"] for l in reversed(profile["layers"])
          if l.get("param_count", 0) > 0 and not l.get("frozen", False) and l["name"] != "transformer.wte"]
delay_of = {0: 2, 1: 1, 2: 1, 3: 0}
syncs = {name: ([i % 4], [delay_of[i % 4]]) for i, name in enumerate(owning)}
syncs["transformer.wte"] = ([0, 2], [1, 1])
layers = []
for l in profile["layers"]:
    owner = l.get("tied_to", l["name"])
    iterations, delays = syncs.get(owner, ([0], [0]))
    layers.append({"name": l["name"], "sync_iterations": iterations, "sync_delays": delays})
plan = {"format": "syncplan.plan/v1", "model": "tiny-gpt", "period": 4, "algorithm": "hand", "layers": layers}
json.dump(plan, open("delayed.json", "w"), indent=1)
zero = copy.deepcopy(plan)
for l in zero["layers"]:
    l["sync_delays"] = [0] * len(l["sync_iterations"])
json.dump(zero, open("zero.json", "w"), indent=1)
for l in zero["layers"]:
    del l["sync_delays"]
json.dump(zero, open("plain.json", "w"), indent=1)
crossing = copy.deepcopy(plan)
late = next(l for l in crossing["layers"] if l["sync_iterations"] == [3])
late["sync_delays"] = [1]
json.dump(crossing, open("crossing.json", "w"), indent=1)
print(f"delayed plans: {len(owning) + 1} owning layers, {sum(d > 0 for i, ds in syncs.values() for d in ds)} delayed syncs per period")
EOF_PY
}

# expect_job_refused MESSAGE MPIRUN-ARGS...: the mpirun job exits 2 with MESSAGE once on stderr
# and writes no log or trace (the arguments name them log.jsonl and trace.json).
expect_job_refused() {
  local message="$1" rc
  shift
  rm -f log.jsonl trace.json
  echo "\$ mpirun $*"
  set +e
  timeout -k 5 240 "$mpiexec" --allow-run-as-root --oversubscribe "$@" >out.txt 2>err.txt
  rc=$?
  set -e
  grep '^syncplan' err.txt || true
  [[ $rc -eq 2 ]] || { cat err.txt; echo "FAIL: exit code $rc, expected 2 (124: it hung)"; exit 1; }
  [[ $(grep -c '^syncplan' err.txt) -eq 1 ]] || { echo "FAIL: expected one syncplan line on stderr"; exit 1; }
  grep -qF -- "$message" err.txt || { echo "FAIL: stderr does not say: $message"; exit 1; }
  [[ ! -e log.jsonl && ! -e trace.json ]] || { echo "FAIL: an output was written"; exit 1; }
}

# expect_refused MESSAGE ARGS...: `run ARGS` on 2 ranks is refused (expect_job_refused).
expect_refused() {
  local message="$1"
  shift
  expect_job_refused "$message" -np 2 "$syncplan" run "$@" --log log.jsonl --trace trace.json
}

case "$case_name" in
  train)
    make_plan
    for strategy in ssgd flsgd plsgd-even; do
      mpi 2 run --strategy "$strategy" --period 4 "${common[@]}" --iterations $iterations \
        --log "$strategy.jsonl" --trace "$strategy.trace.json"
      check schedule "$strategy.jsonl" profile.json 2 $iterations --strategy "$strategy" --period 4
      check loss "$strategy.jsonl" "$strategy"
    done
    mpi 2 run --plan plan.json "${common[@]}" --iterations $iterations --log plan.jsonl --trace plan.trace.json
    check schedule plan.jsonl profile.json 2 $iterations --plan plan.json
    check loss plan.jsonl "plan (dp, fused buckets)"
    for name in flsgd plsgd-even plan; do check compare "$name" "$name.jsonl" ssgd.jsonl; done
    ;;
  train_np4)
    make_plan
    mpi 4 run --strategy plsgd-even --period 4 "${common[@]}" --iterations 8 --log even.jsonl
    check schedule even.jsonl profile.json 4 8 --strategy plsgd-even --period 4
    mpi 4 run --plan plan.json "${common[@]}" --iterations 8 --log plan.jsonl
    check schedule plan.jsonl profile.json 4 8 --plan plan.json
    ;;
  overlap)
    mpi 2 run --strategy wfbp --period 1 "${common[@]}" --iterations 6 --trace wfbp.trace.json
    check overlap wfbp.trace.json
    ;;
  emulated)
    mpi 2 run --strategy ssgd --period 1 "${common[@]}" --iterations 4 --emulate-link-Gbps 1 \
      --emulate-latency-us 50 --log ssgd.jsonl --trace ssgd.trace.json | tee out.txt
    grep -q "emulated link: 1 Gbit/s, 50 us" out.txt || { echo "FAIL: the summary does not say the link is emulated"; exit 1; }
    check emulated ssgd.trace.json ssgd.jsonl 2 1 50
    ;;
  bad)
    make_plan
    "$python" -c '
import json
plan = json.load(open("plan.json"))
plan["layers"][5]["name"] = "transformer.h.7.attn.c_attn"
plan.pop("buckets")
json.dump(plan, open("other-model.json", "w"))'
    head -c 40 "$text" >short.txt
    expect_refused "transformer.h.7.attn.c_attn" --plan other-model.json "${common[@]}" --iterations 2
    expect_refused "--data: missing.txt" --strategy ssgd --period 1 --model tiny-gpt --data missing.txt --iterations 2
    expect_refused "--data short.txt: 40 bytes in 2 shards: rank 0's shard (bytes 0..20) has 20 bytes" --strategy ssgd --period 1 \
      --model tiny-gpt --data short.txt --iterations 2
    expect_refused "--iterations: must be in [1," --strategy ssgd --period 1 "${common[@]}" --iterations 0
    expect_refused "--device cuda" --strategy ssgd --period 1 "${common[@]}" --iterations 2 --device cuda
    expect_refused "--strategy: 'dp' is planned on a profile" --strategy dp --period 4 "${common[@]}" --iterations 2
    expect_refused "--seq 65: longer than max_position_embeddings 64" --strategy ssgd --period 1 --model tiny-gpt \
      --data "$text" --seq 65 --iterations 2
    expect_refused "give --plan PLAN.json or --strategy NAME --period H" "${common[@]}" --iterations 2
    expect_refused "--emulate-link-Gbps: must be a bandwidth" --strategy ssgd --period 1 "${common[@]}" --iterations 2 \
      --emulate-link-Gbps 0
    # A --timeout-s below its range is reported through an agreement under the default deadline
    # (under its own 1e-4 s it ended every rank as a timeout, exit 1).
    expect_refused "--timeout-s: must be a number of seconds in 1..86400, got 0.0001" --strategy ssgd --period 1 \
      "${common[@]}" --iterations 2 --timeout-s 0.0001
    # 3 ranks on 2 cores warn that they time-slice, but only once an iteration has run: bad input
    # stays the one line.
    expect_job_refused "--iterations: must be in [1," -np 3 "$syncplan" run --strategy ssgd --period 1 "${common[@]}" \
      --iterations 0 --log log.jsonl --trace trace.json
    ! grep -q "^warning" err.txt || { cat err.txt; echo "FAIL: a warning before the bad input's line"; exit 1; }
    ;;
  mismatch)
    make_plan
    # plan.json without its buckets: the same layers and sync iterations, executed as one bucket
    # per layer, so another schedule (runtime/fingerprint.hpp) that reads without error.
    "$python" -c '
import json
plan = json.load(open("plan.json"))
plan.pop("buckets")
json.dump(plan, open("unfused.json", "w"))'
    # One rank each (mpirun's MPMD form), the same flags but the plan, then but --seq.
    one=(run --model tiny-gpt --data "$text" --batch 4 --seed 3 --iterations 2 --log log.jsonl --trace trace.json)
    expect_job_refused "rank 1's plan differs from rank 0's" -np 1 "$syncplan" "${one[@]}" --seq 32 --plan plan.json \
      : -np 1 "$syncplan" "${one[@]}" --seq 32 --plan unfused.json
    expect_job_refused "rank 1's batch/sequence/ranks differs from rank 0's" -np 1 "$syncplan" "${one[@]}" --seq 32 \
      --strategy ssgd --period 1 : -np 1 "$syncplan" "${one[@]}" --seq 16 --strategy ssgd --period 1
    # A complete checkpoint of step 2 (ssgd, 2 ranks, seed 3), then folders it cannot resume.
    mpi 2 run --strategy ssgd --period 1 "${common[@]}" --iterations 2 --checkpoint ck --checkpoint-every 2 >/dev/null
    [[ -f ck/step-00000002/manifest.json ]] || { echo "FAIL: no complete checkpoint of step 2"; exit 1; }
    before=$(find ck -type f | sort | xargs sha256sum)
    # The manifest keeps the settings: the message names the one that differs, not two hashes.
    expect_refused "from another run: --strategy ssgd in the checkpoint, wfbp in this run" --strategy wfbp --period 1 \
      "${common[@]}" --iterations 4 --resume ck
    expect_job_refused "written by 2 ranks, this run has 1" -np 1 "$syncplan" run --strategy ssgd --period 1 \
      "${common[@]}" --iterations 4 --resume ck --log log.jsonl --trace trace.json
    expect_refused "was trained with --seed 3, this run has --seed 4" --strategy ssgd --period 1 --model tiny-gpt \
      --data "$text" --batch 4 --seq 32 --seed 4 --lr 0.003 --iterations 4 --resume ck
    expect_refused "nothing is left to train" --strategy ssgd --period 1 "${common[@]}" --iterations 2 --resume ck
    mkdir -p empty/step-00000004
    expect_refused "no complete checkpoint" --strategy ssgd --period 1 "${common[@]}" --iterations 4 --resume empty
    expect_refused "no such checkpoint folder" --strategy ssgd --period 1 "${common[@]}" --iterations 4 --resume absent
    expect_refused "--checkpoint-every: only with --checkpoint DIR" --strategy ssgd --period 1 "${common[@]}" \
      --iterations 4 --checkpoint-every 2
    # --checkpoint DIR is checked before training (a file failed at the first save, after
    # training, naming no flag), and the log and trace are not written.
    echo x >not-a-folder
    expect_refused "--checkpoint: not-a-folder: exists and is not a folder" --strategy ssgd --period 1 "${common[@]}" \
      --iterations 4 --checkpoint not-a-folder --checkpoint-every 2
    expect_refused "--checkpoint: /proc/syncplan-ck: " --strategy ssgd --period 1 "${common[@]}" \
      --iterations 4 --checkpoint /proc/syncplan-ck --checkpoint-every 2
    # An output at the checkpoint folder's path (made during training) is refused before training
    # (the helper's re-check: the log was lost after the last step), and so is one in a step folder.
    expect_job_refused "--log fresh-ck: is the --checkpoint folder fresh-ck; write it elsewhere" -np 2 "$syncplan" run \
      --strategy ssgd --period 1 "${common[@]}" --iterations 4 --checkpoint fresh-ck --checkpoint-every 2 --log fresh-ck \
      --trace trace.json
    mkdir -p fresh-ck/step-00000002
    expect_job_refused "--trace fresh-ck/step-00000002/t.json: is inside the --checkpoint folder fresh-ck's step folders" \
      -np 2 "$syncplan" run --strategy ssgd --period 1 "${common[@]}" --iterations 4 --checkpoint fresh-ck \
      --checkpoint-every 2 --log log.jsonl --trace fresh-ck/step-00000002/t.json
    [[ ! -e fresh-ck/step-00000002/t.json && -z "$(ls fresh-ck/step-00000002)" ]] || { echo "FAIL: fresh-ck written"; exit 1; }
    rm -rf fresh-ck
    # A fresh run into a folder of another run's steps would mix its steps in and prune them:
    # refused without --resume of that folder (with it, the resume tests below continue it).
    expect_refused "--checkpoint: ck: holds checkpoints of a run already (step 2); continue it with --resume ck" \
      --strategy ssgd --period 1 "${common[@]}" --iterations 4 --checkpoint ck --checkpoint-every 2
    expect_refused "--checkpoint: ck: holds checkpoints of a run already" --strategy ssgd --period 1 "${common[@]}" \
      --iterations 4 --checkpoint ck --checkpoint-every 2 --resume empty
    [[ "$(find ck -type f | sort | xargs sha256sum)" == "$before" ]] || { echo "FAIL: a refused run changed ck/"; exit 1; }
    [[ ! -e absent ]] || { echo "FAIL: a refused run made absent/"; exit 1; }
    ;;
  delayed)
    [[ -f "${DELAYED_REFERENCE:-}" ]] || { echo "FAIL: set DELAYED_REFERENCE to the delayed_reference program"; exit 1; }
    make_delayed_plans
    same_ranks() {  # same_ranks DIR_A DIR_B STEP: both ranks' checkpoint files are bit-identical
      local folder rank
      folder=$(printf 'step-%08d' "$3")
      for rank in 0 1; do
        cmp "$1/$folder/rank-$rank.ckpt" "$2/$folder/rank-$rank.ckpt" || { echo "FAIL: $1 and $2 differ at step $3"; exit 1; }
      done
      echo "ok: $1 and $2: both ranks' files of step $3 are bit-identical"
    }
    # 6 periods on an emulated 0.05 Gbit/s link (about 0.5 s of link time per period against
    # 0.2-0.4 s of compute), so that delayed all-reduces run on past their iteration's step.
    mpi 2 run --plan delayed.json "${common[@]}" --iterations 24 --checkpoint ck --checkpoint-every 4 \
      --emulate-link-Gbps 0.05 --log delayed.jsonl --trace delayed.trace.json
    check schedule delayed.jsonl profile.json 2 24 --plan delayed.json
    check delayed delayed.jsonl delayed.trace.json delayed.json profile.json
    check loss delayed.jsonl "delayed plan"
    "$DELAYED_REFERENCE" delayed.json "$text" 4 32 3 0.003 ck 20 24
    # Stopped after the checkpoint of step 12 and resumed to 24: the same files as the run above.
    mpi 2 run --plan delayed.json "${common[@]}" --iterations 12 --checkpoint resumed --checkpoint-every 4 >/dev/null
    "$DELAYED_REFERENCE" delayed.json "$text" 4 32 3 0.003 resumed 8 12
    mpi 2 run --plan delayed.json "${common[@]}" --iterations 24 --checkpoint resumed --checkpoint-every 4 \
      --resume resumed --log resumed.jsonl >/dev/null
    same_ranks ck resumed 24
    check delayed resumed.jsonl - delayed.json profile.json
    # Every delay 0 written out executes as no delays at all: the same files and log lines.
    mpi 2 run --plan zero.json "${common[@]}" --iterations 8 --checkpoint zero --checkpoint-every 4 --log zero.jsonl >/dev/null
    mpi 2 run --plan plain.json "${common[@]}" --iterations 8 --checkpoint plain --checkpoint-every 4 --log plain.jsonl >/dev/null
    same_ranks zero plain 8
    "$python" -c 'import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
assert [(x["loss"], x["buckets"]) for x in a] == [(y["loss"], y["buckets"]) for y in b], "zero.jsonl and plain.jsonl differ"
assert not any("applied" in x for x in a), "a plan with every delay 0 logged as delayed"
print("ok: zero.jsonl equals plain.jsonl loss for loss and bucket for bucket")' zero.jsonl plain.jsonl
    # A run that ends inside a period: the syncs due after its last step are waited for and dropped.
    mpi 2 run --plan delayed.json "${common[@]}" --iterations 6 --log mid.jsonl >/dev/null
    check delayed mid.jsonl - delayed.json profile.json
    expect_refused "field 'sync_delays': the sync of iteration 3 with delay 1 would end after the period's last iteration 3" \
      --plan crossing.json "${common[@]}" --iterations 4
    expect_refused "--checkpoint-every: 2 saves a step at period position 2 of 4, where the sync of" \
      --plan delayed.json "${common[@]}" --iterations 4 --checkpoint bad --checkpoint-every 2
    [[ ! -e bad ]] || { echo "FAIL: a refused run made bad/"; exit 1; }
    ;;
  gpu_path)
    [[ -f "${FAKE_GPU_TRAINER:-}" && -f "${FAKE_GPU_BACKEND:-}" ]] || { echo "FAIL: set FAKE_GPU_TRAINER and FAKE_GPU_BACKEND"; exit 1; }
    # same_losses A B [FROM]: every line of B (iterations >= FROM) has A's loss and buckets, bit for bit.
    same_losses() {
      "$python" - "$@" <<'EOF_PY'
import json, sys
a = {(r["iteration"], r["rank"]): r for r in map(json.loads, open(sys.argv[1]))}
b = [json.loads(line) for line in open(sys.argv[2])]
start = int(sys.argv[3]) if len(sys.argv) > 3 else 0
b = [r for r in b if r["iteration"] >= start]
assert b, "no lines to compare"
for r in b:
    x = a[(r["iteration"], r["rank"])]
    assert x["loss"] == r["loss"], f"iteration {r['iteration']} rank {r['rank']}: loss {r['loss']!r} != {x['loss']!r}"
    assert x["buckets"] == r["buckets"], f"iteration {r['iteration']}: buckets differ"
print(f"ok: {sys.argv[2]} equals {sys.argv[1]} on {len(b)} lines")
EOF_PY
    }
    # The CPU trainer computes what the stand-in does, so the GPU path must not change a bit:
    # gradients after backprop and overlapped (ssgd, wfbp), parameters before the step of each
    # iteration's group (plsgd-even) and after the step of the period's last (flsgd).
    for strategy in ssgd wfbp plsgd-even flsgd; do
      mpi 2 run --strategy "$strategy" --period 3 "${common[@]}" --iterations 6 --log "cpu-$strategy.jsonl" >/dev/null
      SYNCPLAN_GPU_BACKEND="$FAKE_GPU_TRAINER" mpi 2 run --device cuda --strategy "$strategy" --period 3 "${common[@]}" \
        --iterations 6 --log "cuda-$strategy.jsonl" --trace "cuda-$strategy.trace.json" | tee out.txt
      grep -q "(cuda: one GPU each)" out.txt || { echo "FAIL: the summary does not name the device"; exit 1; }
      same_losses "cpu-$strategy.jsonl" "cuda-$strategy.jsonl"
      "$python" -c 'import json, sys; t = json.load(open(sys.argv[1])); assert t["syncplan"]["device"] == "cuda", t["syncplan"]' \
        "cuda-$strategy.trace.json"
    done
    # Stopped after a checkpoint of step 3, resumed to 6: the same as the run that did not stop.
    SYNCPLAN_GPU_BACKEND="$FAKE_GPU_TRAINER" mpi 2 run --device cuda --strategy plsgd-even --period 3 "${common[@]}" \
      --iterations 3 --checkpoint ck --checkpoint-every 3 >/dev/null
    SYNCPLAN_GPU_BACKEND="$FAKE_GPU_TRAINER" mpi 2 run --device cuda --strategy plsgd-even --period 3 "${common[@]}" \
      --iterations 6 --resume ck --log resumed.jsonl >/dev/null
    same_losses cuda-plsgd-even.jsonl resumed.jsonl 3
    SYNCPLAN_GPU_BACKEND="$FAKE_GPU_BACKEND" expect_refused "has no trainer" --device cuda --strategy ssgd --period 1 \
      "${common[@]}" --iterations 2
    SYNCPLAN_GPU_BACKEND="$FAKE_GPU_TRAINER" FAKE_GPU_DEVICES=1 expect_refused \
      "rank 1 is local rank 1 of its machine, which has 1 visible CUDA device: run one rank per GPU" --device cuda \
      --strategy ssgd --period 1 "${common[@]}" --iterations 2
    SYNCPLAN_GPU_BACKEND="$FAKE_GPU_TRAINER" FAKE_GPU_DEVICES=0 expect_refused "--device cuda: no CUDA device is visible" \
      --device cuda --strategy ssgd --period 1 "${common[@]}" --iterations 2
    # A delayed-averaging plan: the snapshots and corrections go through the trainer's entry
    # points (device memory, its stream), and must give the CPU run's bits: the same losses and
    # buckets, the log's sync_delays and applied syncs as the plan says, and the checkpoint of
    # step 8 equal to delayed_reference's own replicas (it computes the corrections itself). The
    # emulated 0.05 Gbit/s link keeps the delayed all-reduces in flight past their steps.
    [[ -f "${DELAYED_REFERENCE:-}" ]] || { echo "FAIL: set DELAYED_REFERENCE to the delayed_reference program"; exit 1; }
    make_delayed_plans >/dev/null
    mpi 2 run --plan delayed.json "${common[@]}" --iterations 8 --log cpu-delayed.jsonl >/dev/null
    SYNCPLAN_GPU_BACKEND="$FAKE_GPU_TRAINER" mpi 2 run --device cuda --plan delayed.json "${common[@]}" --iterations 8 \
      --emulate-link-Gbps 0.05 --checkpoint cuda-delayed --checkpoint-every 4 --log cuda-delayed.jsonl >/dev/null
    same_losses cpu-delayed.jsonl cuda-delayed.jsonl
    check delayed cuda-delayed.jsonl - delayed.json profile.json
    "$DELAYED_REFERENCE" delayed.json "$text" 4 32 3 0.003 cuda-delayed 4 8
    # A backend without the snapshot entry points is refused for such a plan, before any step.
    SYNCPLAN_GPU_BACKEND="$FAKE_GPU_TRAINER" FAKE_GPU_NO_SNAPSHOTS=1 expect_refused \
      "has no snapshots and corrections for the delayed-averaging plan delayed.json" --device cuda \
      --plan delayed.json "${common[@]}" --iterations 2
    ;;
  *) echo "run_cases.sh: unknown case '$case_name'" >&2; exit 1 ;;
esac
echo "ok: $case_name"
