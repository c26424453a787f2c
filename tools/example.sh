#!/usr/bin/env bash
# The main job on real data: builds syncplan, imports DreamDDP's measured GPT-2 profile (8 workers,
# 10 Gbit/s; read from ../shared/data beside the checkout, never copied here), plans a period of
# H = 10 iterations, and checks that the simulator reproduces the plan. Outputs go to out/.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh
data=${SYNCPLAN_SHARED_DATA:-../shared/data}/dreamddp/gpt2-8workers-10gbit
if [[ ! -d "$data" ]]; then
  echo "example: reference data not found at $data (it lives in ../shared beside the checkout)" >&2
  exit 2
fi
mkdir -p out
run() { echo "\$ $*"; "$@"; echo; }
run build/bin/syncplan import dreamddp --bp "$data/bp.json" --comm "$data/comm.json" --model gpt2 --workers 8 \
  -o out/gpt2-profile.json
run build/bin/syncplan plan --profile out/gpt2-profile.json --period 10 --fill-bubbles -o out/gpt2-plan-H10.json \
  --report out/gpt2-report-H10.json
run build/bin/syncplan simulate --profile out/gpt2-profile.json --plan out/gpt2-plan-H10.json \
  --trace out/gpt2-plan-H10.trace.json
