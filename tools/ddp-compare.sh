#!/usr/bin/env bash
# Compares syncplan's predictions with real PyTorch runs (docs/torch.md section 6): tiny-gpt on 2 gloo
# ranks with DDP (bucket caps 1 and 25 MB), S-SGD with one all-reduce per layer and local SGD with
# PyTorch's PeriodicModelAverager (H = 4), measured, then predicted by `syncplan simulate` from
# tools/torch_profile.py's compute profile and gloo link fit; with DDP_COMPARE_CLUSTER=FILE (a
# cluster file, e.g. tools/shaped-link.sh's inside its namespace) predicted from it as well.
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

period=4
configs=compute,ssgd,localsgd:$period
for cap in "${caps[@]}"; do configs+=",ddp:$cap"; done
step "measure: $configs on 2 gloo ranks"
"$python" "$root/tools/torch_ddp_time.py" measure --nproc 2 --configs "$configs" --batch $batch --seq $seq \
  --threads $threads --iters 12 --warmup 3 -o "$out/measured.json"

step "predict: syncplan simulate"
# Two input files from the link's worker count: the compute profile (every sync_s 0: no all-reduce)
# and, for ddp, which runs in the discrete-event simulator and so needs a cluster, one node of
# those workers (its nominal link is unused: --link gives every all-reduce time).
# PyTorch's averager flattens the whole model into one buffer: a profile whose one layer is the
# whole model (its compute and bytes summed) times that one all-reduce (profile-flat.json).
"$python" - "$out/link.json" "$out/profile.json" "$out/profile-compute.json" "$out/cluster.json" "$out/profile-flat.json" <<'EOF'
import json, sys
link_path, profile_path, compute_path, cluster_path, flat_path = sys.argv[1:]
workers = json.load(open(link_path))["workers"]
profile = json.load(open(profile_path))
profile["workers"] = workers
for layer in profile["layers"]:
    layer["sync_s"] = 0.0
json.dump(profile, open(compute_path, "w"), indent=1)
original = json.load(open(profile_path))
whole = {"name": "model"}
for key in ("param_count", "param_bytes", "forward_s", "backward_s", "update_s"):
    if any(layer.get(key) is not None for layer in original["layers"]):
        whole[key] = sum(layer.get(key) or 0 for layer in original["layers"])
flat = dict(original, workers=workers, layers=[whole])
json.dump(flat, open(flat_path, "w"), indent=1)
cluster = {"format": "syncplan.cluster/v1", "name": f"{workers} local ranks (all-reduce times from --link)",
           "workers": workers, "workers_per_node": workers, "allreduce": "ring",
           "intra_node": {"bandwidth_Gbps": 10, "latency_us": 10}}
json.dump(cluster, open(cluster_path, "w"), indent=1)
EOF
"$syncplan" simulate --profile "$out/profile-compute.json" --strategy ssgd --period 1 -o "$out/predicted-compute.json" >/dev/null
"$syncplan" simulate --profile "$out/profile.json" --strategy ssgd --period 1 --link "$out/link.json" \
  -o "$out/predicted-ssgd.json" >/dev/null
"$syncplan" simulate --profile "$out/profile-flat.json" --strategy flsgd --period $period --link "$out/link.json" \
  -o "$out/predicted-localsgd.json" >/dev/null
predicted=(--predicted "compute=$out/predicted-compute.json" --predicted "ssgd=$out/predicted-ssgd.json"
           --predicted "localsgd:$period=$out/predicted-localsgd.json")
for cap in "${caps[@]}"; do
  "$syncplan" simulate --profile "$out/profile.json" --strategy ddp --period 1 --bucket-cap-mb "$cap" \
    --link "$out/link.json" --cluster "$out/cluster.json" -o "$out/predicted-ddp-$cap.json" >/dev/null
  predicted+=(--predicted "ddp:$cap=$out/predicted-ddp-$cap.json")
done

step "comparison (tiny-gpt, batch $batch x $seq, gloo, 2 ranks): predicted from the gloo link fit"
"$python" "$root/tools/torch_ddp_time.py" table --measured "$out/measured.json" "${predicted[@]}" \
  -o "$out/comparison.json"
if [[ -n "${DDP_COMPARE_CLUSTER:-}" ]]; then
  cluster_file="$DDP_COMPARE_CLUSTER"
  "$syncplan" simulate --profile "$out/profile.json" --cluster "$cluster_file" --strategy ssgd --period 1 \
    -o "$out/cluster-ssgd.json" >/dev/null
  "$syncplan" simulate --profile "$out/profile-flat.json" --cluster "$cluster_file" --strategy flsgd --period $period \
    -o "$out/cluster-localsgd.json" >/dev/null
  predicted=(--predicted "compute=$out/predicted-compute.json" --predicted "ssgd=$out/cluster-ssgd.json"
             --predicted "localsgd:$period=$out/cluster-localsgd.json")
  for cap in "${caps[@]}"; do
    "$syncplan" simulate --profile "$out/profile.json" --strategy ddp --period 1 --bucket-cap-mb "$cap" \
      --cluster "$cluster_file" -o "$out/cluster-ddp-$cap.json" >/dev/null
    predicted+=(--predicted "ddp:$cap=$out/cluster-ddp-$cap.json")
  done
  step "comparison: predicted from the cluster file $cluster_file"
  "$python" "$root/tools/torch_ddp_time.py" table --measured "$out/measured.json" "${predicted[@]}" \
    -o "$out/comparison-cluster.json"
fi
echo "comparison written to $out/comparison.json ($((SECONDS - start)) s in all)"
