#!/usr/bin/env bash
# The gap survey of docs/time-model.md section 6 ("Which side is loose"): `plan --report` with
# default options on 29 profiles, one row each (gap of the chosen plan to the best bound, the bound
# named, whether proven optimal, the exact method's nodes, plan's wall time), then the mean and the
# largest gap. Profiles: GPT-2 and the 8-layer Llama estimated for H100-SXM at 16 workers (5 and
# 10 Gbit/s, two batch sizes each), the shared DreamDDP GPT-2 profile (8 x 10 Gbit/s; skipped with a
# message when ../shared is absent), the four LoRA sets of tests/cli/data/lora, and 20 seeded random
# profiles of 8-24 layers at H = 4 (backward 0.5-1.5 ms, all-reduce up to 1-4 ms by seed, every fifth layer frozen).
# Then the hard family (below; SYNCPLAN_GAP_HARD=0 skips it).
# usage: bench/gap_survey.sh [SYNCPLAN] (default build/bin/syncplan); writes into a temporary folder.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
syncplan="$(realpath "${1:-$here/build/bin/syncplan}")"
python=/usr/bin/python3
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
lora="$here/tests/cli/data/lora"
shared="$here/../shared/data/dreamddp/gpt2-8workers-10gbit"

cluster() {  # cluster WORKERS GBPS -> file name
  sed -e "s/\"workers\": 8/\"workers\": $1/" -e "s/\"bandwidth_Gbps\": 10,/\"bandwidth_Gbps\": $2,/" \
    "$here/data/clusters/8nodes-1gpu-10gbps.json" >"cluster-$1-$2.json"
  echo "cluster-$1-$2.json"
}

rows=()
survey() {  # survey NAME PLAN-ARGUMENTS...
  local name="$1"
  shift
  local start end
  start=$(date +%s.%N)
  "$syncplan" plan "$@" -o plan.json --report report.json >/dev/null
  end=$(date +%s.%N)
  rows+=("$("$python" - "$name" "$start" "$end" <<'PY'
import json, sys
name, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
report = json.load(open("report.json"))
chosen = report["chosen"]
exact = report.get("exact") or {}
print(f"{name}\t{100 * chosen['gap_to_lower_bound']:.4f}%\t{chosen.get('bound', '-')}\t{chosen.get('proven_optimal', False)}\t"
      f"{exact.get('nodes', '-')}\t{end - start:.3f}")
PY
)")
}

c16_5=$(cluster 16 5)
c16_10=$(cluster 16 10)
survey "gpt2 16x5 batch 42" --model gpt2 --batch 42 --cluster "$c16_5" --period 10
survey "llama-8l 16x10 batch 32" --model dreamddp-llama-8l --batch 32 --cluster "$c16_10" --period 10
survey "gpt2 16x5 batch 8" --model gpt2 --batch 8 --cluster "$c16_5" --period 10
survey "llama-8l 16x10 batch 8" --model dreamddp-llama-8l --batch 8 --cluster "$c16_10" --period 10
if [[ -d $shared ]]; then
  "$syncplan" import dreamddp --bp "$shared/bp.json" --comm "$shared/comm.json" --model gpt2 -o shared.json >/dev/null
  survey "shared gpt2 8x10 (DreamDDP)" --profile shared.json --period 10
else
  echo "gap_survey: ../shared absent: the shared GPT-2 profile is skipped" >&2
fi
for set in qwen_lora_8w_10gbit qwen_lora_16w_1gbit qwen_lora_32w_1gbit tiny_lora; do
  "$syncplan" import dreamddp --bp "$lora/${set}_bp.json" --comm "$lora/${set}_comm.json" --nonfinite zero \
    --missing-comm frozen --workers 2 -o "$set.json" >/dev/null 2>&1
  survey "$set" --profile "$set.json" --period 10
done
for seed in $(seq 1 20); do
  "$python" - "$seed" >"random-$seed.json" <<'PY'
import json, random, sys
seed = int(sys.argv[1])
rng = random.Random(seed)
layers = []
for j in range(8 + seed % 17):
    frozen = j % 5 == 4
    layers.append({"name": f"layer{j}", "param_count": 1000, "param_bytes": 4000,
                   "forward_s": 0.0005 * rng.random(), "backward_s": 0.0005 + 0.001 * rng.random(),
                   "update_s": 0.0001 * rng.random(), "sync_s": 0.0 if frozen else 0.001 * (1 + seed % 4) * rng.random()})
json.dump({"format": "syncplan.profile/v1", "model": f"random-{seed}", "source": "estimated:gap survey",
           "workers": 2, "layers": layers}, sys.stdout)
PY
  survey "random seed $seed" --profile "random-$seed.json" --period 4
done

table() {  # table TITLE: the rows so far, then their mean and largest gap
  echo "$1"
  printf '%s\n' "profile	gap	bound	proven_optimal	exact_nodes	wall_s" "${rows[@]}" | column -t -s $'\t'
  printf '%s\n' "${rows[@]}" | "$python" -c '
import sys
gaps = [float(line.split("\t")[1].rstrip("%")) for line in sys.stdin if line.strip()]
print(f"{len(gaps)} profiles: mean gap {sum(gaps) / len(gaps):.3f}%, largest {max(gaps):.3f}%")'
}
table "The survey (default plan options)"
[[ ${SYNCPLAN_GAP_HARD:-1} == 1 ]] || exit 0

# The hard family: the period's all-reduces 2-20 times one backprop, where DreamDDP's
# partial sync matters most and the suffix bound is loosest. The shared GPT-2 profile with every
# sync_s scaled by 2, 3, 5.3 (about 16 workers at 5 Gbit/s), 8, 12 and 20, at H = 5, 10 and 20;
# GPT-2 and the 8-layer Llama estimated at 16 workers and 1 and 2 Gbit/s; and 10 random profiles
# whose layer j syncs for about the backprop left behind it (c_j = (B_L - B_j) x U(0.5, 1.5)).
rows=()
if [[ -d $shared ]]; then
  for factor in 2 3 5.3 8 12 20; do
    "$python" - "$factor" shared.json >"shared-x$factor.json" <<'PY'
import json, sys
profile = json.load(open(sys.argv[2]))
for layer in profile["layers"]:
    if layer.get("sync_s") is not None:
        layer["sync_s"] *= float(sys.argv[1])
json.dump(profile, sys.stdout)
PY
    for period in 5 10 20; do survey "shared gpt2 sync x$factor H=$period" --profile "shared-x$factor.json" --period "$period"; done
  done
fi
c16_1=$(cluster 16 1)
c16_2=$(cluster 16 2)
for model in gpt2 dreamddp-llama-8l; do
  for c in "$c16_2" "$c16_1"; do survey "$model 16x${c#cluster-16-} batch 8" --model "$model" --batch 8 --cluster "$c" --period 10; done
done
for seed in $(seq 1 10); do
  "$python" - "$seed" >"hard-$seed.json" <<'PY'
import json, random, sys
seed = int(sys.argv[1])
rng = random.Random(1000 + seed)
count = 12 + 4 * (seed % 5)
backward = [0.0005 + 0.001 * rng.random() for _ in range(count)]  # backprop order
total, ready = 0.0, []
for b in backward:
    total += b
    ready.append(total)
layers = [{"name": f"layer{j}", "param_count": 1000, "param_bytes": 4000, "forward_s": 0.0003, "backward_s": b,
           "update_s": 0.00005, "sync_s": (total - r) * (0.5 + rng.random()) + 0.0001}
          for j, (b, r) in enumerate(zip(backward, ready))]
json.dump({"format": "syncplan.profile/v1", "model": f"hard-{seed}", "source": "estimated:gap survey",
           "workers": 2, "layers": layers[::-1]}, sys.stdout)
PY
  survey "hard random seed $seed" --profile "hard-$seed.json" --period $((5 + 5 * (seed % 2)))
done
table "The hard family (default plan options)"
