#!/usr/bin/env bash
# End to end from a torch model to a measured run (docs/torch.md section 8):
# tiny-gpt (syncplan.models) profiled with syncplan.torch_profile, the gloo link measured with the
# package's sweep on the same 2 ranks, `syncplan plan --algorithm best` and a delayed plan
# (--max-delay 1), then each of ssgd, flsgd, plsgd-even, the plan and the delayed plan trained on 2
# gloo ranks with syncplan.torch_train (PlanExecutor) on the GPL-3 text, and each run compared with
# `syncplan simulate`'s prediction by `syncplan compare`. Over a real link where permitted: the
# script runs itself inside tools/shaped-link.sh at TORCH_EXAMPLE_RATE (default 50mbit, tc's
# syntax; `none` for plain loopback); where namespaces or tc are not permitted (shaped-link.sh's
# exit 77) over plain loopback, said in the output.
#
# usage: tools/torch-example.sh [OUT_DIR]   (default: out/torch-example; SYNCPLAN=path/to/syncplan,
#        PYTHON=a python with torch, TORCH_EXAMPLE_ITERATIONS=K, default 64, TORCH_EXAMPLE_RATE)
# Writes OUT_DIR/table.md (measured, predicted, error, speedups over ssgd, loss first -> last),
# OUT_DIR/loss.svg (every schedule's loss against wall-clock time: syncplan report --loss) and
# every profile, plan, log, trace and comparison beside it.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
syncplan=${SYNCPLAN:-$root/build/bin/syncplan}
out=${1:-$root/out/torch-example}
python=${PYTHON:-/usr/bin/python3}
text=/usr/share/common-licenses/GPL-3
batch=4 seq=32 period=4 iterations=${TORCH_EXAMPLE_ITERATIONS:-64} skip=4
if [[ ! -x $syncplan ]]; then
  echo "torch-example.sh: no syncplan at $syncplan (build it: tools/build.sh, or set SYNCPLAN)" >&2
  exit 2
fi
if [[ ! -f $text ]]; then
  echo "torch-example.sh: no training text $text" >&2
  exit 2
fi
mkdir -p "$out"
rate=${TORCH_EXAMPLE_RATE:-50mbit}
link_text="plain loopback (127.0.0.1)"
if [[ -n ${SHAPED_LINK_RATE:-} ]]; then
  link_text="loopback shaped to $SHAPED_LINK_RATE by tools/shaped-link.sh"
elif [[ $rate != none ]]; then
  status=0
  "$root/tools/shaped-link.sh" --ranks 2 "$rate" -- "$0" "$out" || status=$?
  [[ $status == 77 ]] || exit "$status"
  echo "torch-example.sh: no shaped link here (above); over plain loopback instead" >&2
fi
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
start=$SECONDS
step() { echo "== $* ($((SECONDS - start)) s)"; }

step "link: $link_text"
# Measured beside a second process doing the same (its load), as the 2 ranks compute at once: its
# 20 timed iterations come after 10 warm-up ones, inside the other's 60 (fidelity_cases.sh's way).
step "profile: tiny-gpt compute per layer (syncplan.torch_profile, beside a second process, AdamW)"
"$python" -m syncplan.torch_profile --model tiny-gpt --batch $batch --seq $seq --threads 1 --optimizer adamw \
  --iters 60 --warmup 3 -o "$out/profile-load.json" >/dev/null &
load=$!
"$python" -m syncplan.torch_profile --model tiny-gpt --batch $batch --seq $seq --threads 1 --optimizer adamw \
  --iters 20 --warmup 10 -o "$out/profile.json"
wait "$load"

step "link: gloo all-reduce sweep on 2 ranks (syncplan.torch_profile --link)"
"$python" -m syncplan.torch_profile --link "$out/link.json" --nproc 2 --backend gloo --threads 1 \
  --min-bytes 8 --max-bytes 4M --iters 10 --warmup 3 --syncplan "$syncplan"

step "plan: best and delayed (--max-delay 1), H = $period"
# The link's warnings (a poor fit, sizes beyond the sweep) are the same for every command that reads
# it: shown once, from this plan; the later commands show only warnings of their own.
# quiet_after_plan ERR COMMAND...: COMMAND with its stderr in ERR, then the lines of ERR that the
# first plan did not show (all of them when COMMAND fails, which then ends the script).
quiet_after_plan() {
  local err="$1" status=0
  shift
  "$@" 2>"$err" || status=$?
  if ((status)); then cat "$err" >&2; exit "$status"; fi
  grep -vxFf "$out/plan.err" "$err" >&2 || true
}
status=0
"$syncplan" plan --profile "$out/profile.json" --link "$out/link.json" --period $period --algorithm best \
  -o "$out/plan.json" >"$out/plan.txt" 2>"$out/plan.err" || status=$?
cat "$out/plan.txt"
cat "$out/plan.err" >&2
((status == 0)) || exit "$status"
quiet_after_plan "$out/delayed.err" "$syncplan" plan --profile "$out/profile.json" --link "$out/link.json" \
  --period $period --algorithm best --max-delay 1 -o "$out/delayed.json" >/dev/null

declare -A source=(
  [ssgd]="--strategy ssgd --period 1"
  [flsgd]="--strategy flsgd --period $period"
  [plsgd-even]="--strategy plsgd-even --period $period"
  [plan]="--plan $out/plan.json"
  [delayed]="--plan $out/delayed.json"
)
names=(ssgd flsgd plsgd-even plan delayed)
for name in "${names[@]}"; do
  step "train: $name on 2 gloo ranks, $iterations iterations (syncplan.torch_train)"
  # shellcheck disable=SC2086 (the source's words)
  "$python" -m syncplan.torch_train --nproc 2 ${source[$name]} --model tiny-gpt --data "$text" --batch $batch \
    --seq $seq --iterations $iterations --log "$out/$name.jsonl" --trace "$out/$name.trace.json"
  # shellcheck disable=SC2086
  quiet_after_plan "$out/predicted-$name.err" "$syncplan" simulate --profile "$out/profile.json" \
    --link "$out/link.json" ${source[$name]} -o "$out/predicted-$name.json" >/dev/null
  "$syncplan" compare "$out/predicted-$name.json" "$out/$name.jsonl" --skip $skip --json "$out/compare-$name.json" \
    >"$out/compare-$name.txt"
done

step "table"
"$python" - "$out" "${names[@]}" <<'EOF'
import json, sys
out, names = sys.argv[1], sys.argv[2:]
rows = {}
for name in names:
    pair = json.load(open(f"{out}/compare-{name}.json"))["pairs"][0]
    losses = [json.loads(line)["loss"] for line in open(f"{out}/{name}.jsonl") if json.loads(line)["rank"] == 0]
    rows[name] = (pair["mean_measured_s"], pair["mean_predicted_s"], losses[0], losses[-1])
lines = ["| schedule | measured s/iteration | predicted | error (measured - predicted) / predicted | "
         "speedup over ssgd measured | predicted | loss (rank 0) |",
         "|---|---|---|---|---|---|---|"]
for name, (measured, predicted, first, last) in rows.items():
    lines.append(f"| {name} | {measured:.4f} | {predicted:.4f} | {100 * (measured - predicted) / predicted:+.1f}% | "
                 f"{rows['ssgd'][0] / measured:.2f} | {rows['ssgd'][1] / predicted:.2f} | {first:.3f} -> {last:.3f} |")
open(f"{out}/table.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
step "loss curves"
# Every schedule's loss (mean over the ranks) against wall-clock time, one line each (docs/report.md).
loss_args=()
for name in "${names[@]}"; do loss_args+=(--loss "$name=$out/$name.jsonl"); done
"$syncplan" report "${loss_args[@]}" --svg "$out/loss.svg"
echo "torch-example.sh: written to $out ($link_text; $((SECONDS - start)) s)"
