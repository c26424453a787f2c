#!/usr/bin/env bash
# The `syncplan profile` runs that succeed, their outputs checked against figures derived by hand
# (docs/models.md). tests/cli/CMakeLists.txt registers each case with CTest.
#
# usage: profile_cases.sh CASE SYNCPLAN PYTHON WORKDIR
#   tiny_roofline   tiny-gpt on the made-up GPU "round" (data/datadir_round): per-layer times by hand
#   shipped         every shipped spec on a shipped GPU: layer counts and parameter totals
#   plan_model      plan --model (the main job's one step) equals profile, then plan --profile
#   defaults        profile and plan --model default to the same GPU and dtype; --gpu prefixes
set -euo pipefail

case_name="$1" syncplan="$2" python="$3" workdir="$4"
here="$(cd "$(dirname "$0")" && pwd)"
data="$here/data"
repo_data="$(cd "$here/../../data" && pwd)"
check() { "$python" "$here/check_json.py" "$@"; }
run() { echo "\$ syncplan ${*}"; "$syncplan" "$@"; }
rm -rf "$workdir" && mkdir -p "$workdir" && cd "$workdir"

# tiny-gpt (d 128, 4 heads, I 512, V 256, no dropout), batch 4 x seq 64: T = 256 tokens, fp32 (4 B).
# GPU "round": 10 TFLOP/s FP32 (matrix products and elementwise alike in fp32), 1000 GB/s,
# compute efficiency 0.5, memory efficiency 0.8 (so 5e12 FLOP/s and 8e11 B/s effective).
#   h.0.mlp.c_fc, Linear 128 -> 512 with bias:
#     forward  2*256*128*512 = 33,554,432 + bias 131,072 = 33,685,504 FLOPs / 5e12 = 6.7371008e-6 s;
#              bytes 4 (32,768 + 65,536 + 131,072 + 512) = 919,552 / 8e11 = 1.14944e-6 s -> 6.7371008e-6
#     backward 67,108,864 + 131,072 = 67,239,936 / 5e12 = 1.34479872e-5 s;
#              bytes 4 (65,536 + 262,144 + 131,072 + 512) = 1,837,056 / 8e11 = 2.29632e-6 -> 1.34479872e-5
#     param_count 128*512 + 512 = 66,048; param_bytes 264,192
#   h.0.ln_1, LayerNorm 128: forward 7*32,768 = 229,376 FLOPs -> 4.58752e-8 s; bytes
#     4 (65,536 + 256) = 263,168 -> 3.2896e-7 s (memory-bound). Backward 13*32,768 -> 8.51968e-8 s;
#     bytes 4 (98,304 + 384) = 394,752 -> 4.9344e-7 s.
#   transformer.drop: p = 0, the identity: 0 s both ways.
#   lm_head: tied to transformer.wte, owns no parameters.
tiny_roofline() {
  SYNCPLAN_DATA_DIR="$data/datadir_round" run profile --model "$repo_data/models/tiny-gpt.json" \
    --batch 4 --seq 64 --dtype fp32 --device estimate --gpu round -o profile.json | tee profile.txt
  grep -q "an estimate, not a measurement" profile.txt ||
    { echo "FAIL: profile did not say its times are an estimate"; exit 1; }
  check profile profile.json transformer.h.0.mlp.c_fc forward_s 6.7371008e-6 \
    --and profile profile.json transformer.h.0.mlp.c_fc backward_s 1.34479872e-5 \
    --and profile profile.json transformer.h.0.mlp.c_fc param_count 66048 \
    --and profile profile.json transformer.h.0.mlp.c_fc param_bytes 264192 \
    --and profile profile.json transformer.h.0.ln_1 forward_s 3.2896e-7 \
    --and profile profile.json transformer.h.0.ln_1 backward_s 4.9344e-7 \
    --and profile profile.json transformer.drop forward_s 0 \
    --and profile profile.json lm_head param_count 0 \
    --and profile profile.json lm_head sync_s null
  "$python" - profile.json <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
assert p["format"] == "syncplan.profile/v1" and p["model"] == "tiny-gpt", p["model"]
assert p["source"] == "estimated:roofline:round", p["source"]
assert p["workers"] is None
assert p["layers"][-1]["tied_to"] == "transformer.wte"
assert len(p["layers"]) == 45 and sum(l["param_count"] for l in p["layers"]) == 834304
print("ok: tiny-gpt profile shape, source, ties and total")
EOF
}

# Every shipped spec expands and profiles on a shipped GPU; the totals are the published counts
# (derived in tests/unit/test_model_spec.cpp) and param_bytes are 2 per parameter in bf16.
shipped() {
  for pair in gpt2:124439808:125 gpt2-medium:354823168:245 gpt2-large:774030080:365 gpt2-xl:1557611200:485 \
              llama-2-7b:6738415616:324 dreamddp-llama-8l:176431616:84 tiny-gpt:834304:45; do
    IFS=: read -r model total layers <<<"$pair"
    run profile --model "$model" --batch 2 --seq 64 --dtype bf16 --device estimate --gpu H100-SXM -o "$model.json"
    "$python" - "$model.json" "$model" "$total" "$layers" <<'EOF'
import json, sys
path, model, total, layers = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
p = json.load(open(path))
assert p["model"] == model and p["source"] == "estimated:roofline:H100-SXM"
assert len(p["layers"]) == layers, (len(p["layers"]), layers)
assert sum(l["param_count"] for l in p["layers"]) == total
assert all(l["param_bytes"] == 2 * l["param_count"] for l in p["layers"])
assert all(l["forward_s"] >= 0 and l["backward_s"] >= 0 for l in p["layers"])
print(f"ok: {model}: {layers} layers, {total} parameters")
EOF
  done
}

# plan --model profiles and plans in one step: the same plan as `profile` then `plan --profile`,
# with the all-reduce times of the link fit (tests/cli/data/link_8workers.json: 7e-4 + 1.4e-9 n s).
plan_model() {
  export SYNCPLAN_DATA_DIR="$data/datadir_round"
  local model=(--batch 4 --seq 64 --dtype fp32)
  run profile --model "$repo_data/models/tiny-gpt.json" "${model[@]}" --device estimate --gpu round -o profile.json
  run plan --profile profile.json --link "$data/link_8workers.json" --period 3 -o two-step.json
  run plan --model "$repo_data/models/tiny-gpt.json" "${model[@]}" --gpu round --link "$data/link_8workers.json" \
    --period 3 -o one-step.json --report report.json | tee plan.txt
  grep -q "roofline estimate for round, not a measurement" plan.txt || { echo "FAIL: plan --model did not say it estimates"; exit 1; }
  # --device cpu measures (in fp32 by default there: the CPU kernels compute in fp32 only).
  run plan --model "$repo_data/models/tiny-gpt.json" --batch 1 --seq 8 --device cpu --link "$data/link_8workers.json" \
    --period 2 -o cpu-plan.json --profile-out cpu-profile.json
  "$python" -c 'import json; p = json.load(open("cpu-profile.json")); assert p["source"] == "measured:cpu", p["source"]; assert all(l["param_bytes"] == 4 * l["param_count"] for l in p["layers"])' ||
    { echo "FAIL: plan --model --device cpu"; exit 1; }
  "$python" - <<'EOF'
import json
one, two = json.load(open("one-step.json")), json.load(open("two-step.json"))
assert one["layers"] == two["layers"], "plans differ"
assert abs(one["predicted"]["period_s"] - two["predicted"]["period_s"]) <= 1e-12 * two["predicted"]["period_s"]
report = json.load(open("report.json"))
assert report["profile"].startswith("--model ") and report["link"].endswith("link_8workers.json"), report
print("ok: plan --model equals profile + plan --profile:", one["predicted"]["period_s"], "s per period")
EOF
}

# profile and plan --model default alike: the estimate on H100-SXM in bf16 (2 bytes per parameter;
# fp32 only on the CPU), so `profile --device estimate` needs no --gpu; --gpu takes a unique
# case-insensitive prefix ("h100" is H100-SXM, the only name starting with it in data/gpus.json).
defaults() {
  run profile --model tiny-gpt --batch 2 --seq 16 --device estimate -o default.json
  run profile --model tiny-gpt --batch 2 --seq 16 --device estimate --gpu h100 --dtype bf16 -o explicit.json
  run plan --model tiny-gpt --batch 2 --seq 16 --device estimate --link "$data/link_8workers.json" --period 2 \
    -o plan.json --profile-out plan-profile.json
  "$python" - <<'EOF'
import json
default, explicit, planned = (json.load(open(name)) for name in ("default.json", "explicit.json", "plan-profile.json"))
assert default["source"] == "estimated:roofline:H100-SXM", default["source"]
assert all(layer["param_bytes"] == 2 * layer["param_count"] for layer in default["layers"]), "not bf16"
assert default == explicit, "the defaults are not H100-SXM and bf16"
assert default == planned, "profile and plan --model made different profiles"
print("ok: profile and plan --model default to H100-SXM in bf16")
EOF
}

"$case_name"
