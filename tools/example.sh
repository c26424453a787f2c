#!/usr/bin/env bash
# The main job: builds syncplan, profiles GPT-2 (on a GPU when the build has one, else the roofline
# estimate, said so), plans a period of H = 10 iterations for the 8-worker 10 Gbit/s cluster in
# data/clusters/, and checks that the discrete-event simulator reproduces the plan; then the
# README's gallery (tools/gallery.sh: what-if plots and a Gantt chart). Then, when the
# reference data is beside the checkout (../shared/data, never copied here), the same on DreamDDP's
# measured GPT-2 profile. Outputs go to out/.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only the tool; tools/test.sh builds the tests and benchmarks. The GPU backend library (CUDA,
# cuBLAS, NCCL: a dependency of the syncplan target in a CUDA build) only when a GPU is visible:
# without one, plan --model estimates whether or not the library is there.
start=$(date +%s)
trap 'echo "example: $(( $(date +%s) - start )) s in all (build and run)"' EXIT
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep '^GPU ' >/dev/null; then cuda=AUTO; else cuda=OFF; fi
SYNCPLAN_BUILD_TARGETS=syncplan tools/build.sh -DSYNCPLAN_WITH_CUDA="$cuda"
mkdir -p out
run() { echo "\$ $*"; "$@"; echo; }
cluster=data/clusters/8nodes-1gpu-10gbps.json
run build/bin/syncplan plan --model gpt2 --cluster "$cluster" --period 10 --fill-bubbles \
  -o out/gpt2-plan-H10.json --profile-out out/gpt2-profile.json --report out/gpt2-report-H10.json
run build/bin/syncplan simulate --profile out/gpt2-profile.json --cluster "$cluster" --plan out/gpt2-plan-H10.json \
  --trace out/gpt2-plan-H10.trace.json

# The README's gallery: what-if sweeps of GPT-2 and Llama-2-7B with their plots, and the plan's
# Gantt chart (the files of docs/gallery/, made again into out/gallery).
run tools/gallery.sh out/gallery build/bin/syncplan

data=${SYNCPLAN_SHARED_DATA:-../shared/data}/dreamddp/gpt2-8workers-10gbit
if [[ ! -d "$data" ]]; then
  echo "example: DreamDDP's measured profile not found at $data (../shared beside the checkout); skipped"
  exit 0
fi
run build/bin/syncplan import dreamddp --bp "$data/bp.json" --comm "$data/comm.json" --model gpt2 --workers 8 \
  -o out/dreamddp-gpt2-profile.json
run build/bin/syncplan plan --profile out/dreamddp-gpt2-profile.json --period 10 --fill-bubbles \
  -o out/dreamddp-gpt2-plan-H10.json --report out/dreamddp-gpt2-report-H10.json
run build/bin/syncplan simulate --profile out/dreamddp-gpt2-profile.json --plan out/dreamddp-gpt2-plan-H10.json \
  --trace out/dreamddp-gpt2-plan-H10.trace.json
