#!/usr/bin/env bash
# Compares syncplan's predictions with real PyTorch runs (docs/torch.md section 6): tiny-gpt on 2 gloo
# ranks with DDP (bucket caps 1 and 25 MB) and S-SGD with one all-reduce per layer, measured, then
# predicted by `syncplan simulate` from tools/torch_profile.py's compute profile and gloo link fit.
#
# usage: tools/ddp-compare.sh [OUT_DIR]      (default: out/ddp-compare; SYNCPLAN=path/to/syncplan)
# Prints the table and writes OUT_DIR/comparison.json (with every input and result beside it).
# Times are recorded, not asserted: the script fails only when a step fails or a time is not
# positive. About 1-2 minutes on 2 idle cores.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
syncplan=${SYNCPLAN:-$root/build/bin/syncplan}
out=${1:-$root/out/ddp-compare}
# Small batches keep it short; both the profile and the runs use one thread per process (2 ranks on
# 2 cores), so the profile's compute is what each rank does.
batch=2 seq=32 threads=1
caps=(1 25)
if [[ ! -x $syncplan ]]; then
  echo "ddp-compare.sh: no syncplan at $syncplan (build it: tools/build.sh, or set SYNCPLAN)" >&2
  exit 2
fi
mkdir -p "$out"
# python3 is enough to start them: both scripts re-execute themselves with a Python that has torch.
python=${PYTHON:-python3}
start=$SECONDS
step() { echo "== $* ($((SECONDS - start)) s)"; }

step "profile: tiny-gpt compute per layer, one process"
"$python" "$root/tools/torch_profile.py" --model tiny-gpt --batch $batch --seq $seq --threads $threads \
  --optimizer sgd --iters 10 --warmup 3 -o "$out/profile.json"

step "link: gloo all-reduce sweep on 2 ranks, 8 B .. 4 MiB (tiny-gpt's whole model is 3.3 MB)"
"$python" "$root/tools/torch_profile.py" --link "$out/link.json" --nproc 2 --backend gloo --threads $threads \
  --min-bytes 8 --max-bytes 4M --iters 10 --warmup 3 --syncplan "$syncplan"

configs=compute,ssgd
for cap in "${caps[@]}"; do configs+=",ddp:$cap"; done
step "measure: $configs on 2 gloo ranks"
"$python" "$root/tools/torch_ddp_time.py" measure --nproc 2 --configs "$configs" --batch $batch --seq $seq \
  --threads $threads --iters 10 --warmup 3 -o "$out/measured.json"

# ddp runs in the discrete-event simulator, which needs a cluster: one node of the link's 2 workers
# (its nominal link is unused: --link gives every all-reduce time).
cat > "$out/cluster.json" <<'EOF'
{"format": "syncplan.cluster/v1", "name": "2 local gloo ranks (times from --link)", "workers": 2,
 "workers_per_node": 2, "intra_node": {"bandwidth_Gbps": 10, "latency_us": 10}, "allreduce": "ring"}
EOF

step "predict: syncplan simulate"
# compute: the same profile with no all-reduce (every sync_s 0 at the link's worker count).
"$python" - "$out/profile.json" "$out/profile-compute.json" <<'EOF'
import json, sys
profile = json.load(open(sys.argv[1]))
profile["workers"] = 2
for layer in profile["layers"]:
    layer["sync_s"] = 0.0
json.dump(profile, open(sys.argv[2], "w"), indent=1)
EOF
"$syncplan" simulate --profile "$out/profile-compute.json" --strategy ssgd --period 1 -o "$out/predicted-compute.json" >/dev/null
"$syncplan" simulate --profile "$out/profile.json" --strategy ssgd --period 1 --link "$out/link.json" \
  -o "$out/predicted-ssgd.json" >/dev/null
predicted=(--predicted "compute=$out/predicted-compute.json" --predicted "ssgd=$out/predicted-ssgd.json")
for cap in "${caps[@]}"; do
  "$syncplan" simulate --profile "$out/profile.json" --strategy ddp --period 1 --bucket-cap-mb "$cap" \
    --link "$out/link.json" --cluster "$out/cluster.json" -o "$out/predicted-ddp-$cap.json" >/dev/null
  predicted+=(--predicted "ddp:$cap=$out/predicted-ddp-$cap.json")
done

step "comparison (tiny-gpt, batch $batch x $seq, gloo, 2 ranks)"
"$python" "$root/tools/torch_ddp_time.py" table --measured "$out/measured.json" "${predicted[@]}" \
  -o "$out/comparison.json"
echo "comparison written to $out/comparison.json ($((SECONDS - start)) s in all)"
