#!/usr/bin/env bash
# The README's gallery (docs/gallery/): what-if studies of GPT-2 and Llama-2-7B across cluster
# sizes and bandwidths (syncplan whatif --plot; roofline estimates, so the same on every machine)
# and a plan's period as a Gantt chart (syncplan report --svg). tools/example.sh runs it into
# out/gallery; CTest golden.gallery runs it into its work folder and checks the files equal the
# committed docs/gallery/ byte for byte (regenerate: tools/gallery.sh docs/gallery).
#
# usage: tools/gallery.sh OUT_DIR [SYNCPLAN]   (SYNCPLAN default: build/bin/syncplan)
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
syncplan=$(realpath "${2:-build/bin/syncplan}")
cd "$(dirname "$0")/.."  # paths in the outputs are relative to the repository
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() { echo "\$ syncplan ${*:2}"; "$@"; }
sizes=8,64,512,4096,32768,100000
# GPT-2 small, batch 8 x 1024 per worker (bf16, H100 estimate), on nodes of one GPU each. Both
# sweeps all-reduce as NCCL would, the cheapest of ring, tree and hierarchical per message size
# (--allreduce auto, docs/collectives.md 6): a flat ring over 100,000 workers is not what runs.
run "$syncplan" whatif --model gpt2 --cluster data/clusters/8nodes-1gpu-10gbps.json --allreduce auto --workers "$sizes" \
  --bandwidth-Gbps 1,10,100 --period 10 --strategies ssgd,wfbp,flsgd,dreamddp,best \
  --csv "$work/gpt2-whatif.csv" --plot "$work/gpt2-whatif.svg"
# Llama-2-7B, batch 1 x 4096 per worker, on nodes of 8 GPUs (NVLink inside, the sweep's bandwidth between).
run "$syncplan" whatif --model llama-2-7b --batch 1 --seq 4096 --cluster data/clusters/32nodes-8gpu-100gbps.json \
  --allreduce auto --workers "$sizes" --bandwidth-Gbps 10,100,400 --period 10 --strategies ssgd,wfbp,flsgd,dreamddp,best \
  --csv "$work/llama-2-7b-whatif.csv" --plot "$work/llama-2-7b-whatif.svg"
# The main example's plan (README): GPT-2 on 8 workers at 10 Gbit/s, H = 10, as a Gantt chart.
run "$syncplan" plan --model gpt2 --cluster data/clusters/8nodes-1gpu-10gbps.json --period 10 \
  -o "$work/gpt2-plan-H10.json" --profile-out "$work/gpt2-profile.json" >/dev/null
run "$syncplan" report "$work/gpt2-plan-H10.json" --profile "$work/gpt2-profile.json" \
  --cluster data/clusters/8nodes-1gpu-10gbps.json --svg "$work/gpt2-plan-H10-gantt.svg"
for file in gpt2-whatif.svg llama-2-7b-whatif.svg gpt2-plan-H10-gantt.svg gpt2-whatif.csv llama-2-7b-whatif.csv; do
  cp "$work/$file" "$out/$file"
done
echo "gallery written to $out"
