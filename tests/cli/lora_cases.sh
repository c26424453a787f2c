#!/usr/bin/env bash
# Frozen layers end to end: DreamDDP-shaped LoRA profile sets (a backward file with more modules
# than the all-reduce file) imported with --missing-comm drop and frozen, planned and simulated
# with both engines; checked with check_lora.py and check_json.py.
#
# usage: lora_cases.sh CASE SYNCPLAN PYTHON WORKDIR [CASE ARGUMENTS]
#   tiny_lora                  hand-derived periods of a 3-module LoRA layer, both policies, both engines
#   lora_set NAME WORKERS H    one of data/lora/NAME_{bp,comm}.json: import, plan, simulate; frozen >= drop
#   missing_comm_errors        error (default) names the layers and the options; an all-reduce time
#                              without a backward time stays an error under drop
#   model_spec_frozen          a spec freezing tiny-gpt's embeddings: profile and plan --model mark them
set -euo pipefail

case_name="$1" syncplan="$2" python="$3" workdir="$4"
shift 4
here="$(cd "$(dirname "$0")" && pwd)"
data="$here/data/lora"
lora() { "$python" "$here/check_lora.py" "$@"; }
check() { "$python" "$here/check_json.py" "$@"; }
run() { echo "\$ syncplan ${*}"; "$syncplan" "$@"; }
rm -rf "$workdir" && mkdir -p "$workdir" && cd "$workdir"

# tiny_lora_{bp,comm}.json, forward order: proj.base_layer (b 8 ms, no all-reduce: frozen base
# weight), proj.lora_A (b 1, c 3 ms), proj.lora_B (b 1, c 2 ms). Backprop order: lora_B, lora_A,
# base_layer. F = U = 0, H = 2.
#   frozen: B = 1, 2, 10 ms, B_L = 10, sum c = 5 (base_layer's c = 0)
#     ssgd   H (B_L + sum c) = 2 x 15                                   = 30 ms
#     wfbp   lora_B 1->3, lora_A 3->6, all hidden before B_L: 10 each   = 20 ms
#     flsgd  H B_L + sum c = 20 + 5                                     = 25 ms
#     dp     nothing can beat H B_L = 20 (wfbp's plan already hides it) = 20 ms
#   drop (base_layer and its 8 ms leave the timing): B = 1, 2, B_L = 2
#     ssgd   2 x (2 + 5)                                                = 14 ms
#     wfbp   1->3, 3->6: wait 4, 6 per iteration                        = 12 ms
#     flsgd  2 x 2 + 5                                                  =  9 ms
#     dp     {lora_B} 1->3: 3; {lora_A} 2->5: 5 (or both in one: 6 + 2) =  8 ms
# The DES on a 2-worker cluster without jitter, with the measured sync_s (--workers 2), runs the
# same timeline, so its periods are the same numbers.
tiny_lora() {
  local cluster="$here/data/cluster_2workers.json"
  for policy in frozen drop; do
    run import dreamddp --bp "$data/tiny_lora_bp.json" --comm "$data/tiny_lora_comm.json" --workers 2 \
      --missing-comm "$policy" -o "$policy.json" | tee "import-$policy.txt"
    grep -q "1 layer without an all-reduce time" "import-$policy.txt" ||
      { echo "FAIL: the import did not say how many layers it $policy"; exit 1; }
    run plan --profile "$policy.json" --period 2 --algorithm dp -o "plan-$policy.json" --report "report-$policy.json"
    run simulate --profile "$policy.json" --plan "plan-$policy.json" -o "result-$policy.json" \
      --trace "trace-$policy.json" | tee "simulate-$policy.txt"
    grep -q "reproduces the plan's predicted figures" "simulate-$policy.txt" ||
      { echo "FAIL: simulate --plan did not reproduce the $policy plan"; exit 1; }
    for strategy in ssgd wfbp flsgd; do
      run simulate --profile "$policy.json" --strategy "$strategy" --period 2 --cluster "$cluster" \
        -o "des-$strategy-$policy.json"
    done
    run simulate --profile "$policy.json" --plan "plan-$policy.json" --cluster "$cluster" -o "des-plan-$policy.json" \
      --trace "des-trace-$policy.json"
  done
  lora frozen frozen.json 3 1
  lora frozen drop.json 2 0
  check report report-frozen.json ssgd=0.030 wfbp=0.020 flsgd=0.025 dp=0.020 \
    --and report report-drop.json ssgd=0.014 wfbp=0.012 flsgd=0.009 dp=0.008 \
    --and reproduces plan-frozen.json result-frozen.json \
    --and trace trace-frozen.json result-frozen.json 2
  lora period des-ssgd-frozen.json 0.030
  lora period des-wfbp-frozen.json 0.020
  lora period des-flsgd-frozen.json 0.025
  lora period des-plan-frozen.json 0.020
  lora period des-ssgd-drop.json 0.014
  lora period des-wfbp-drop.json 0.012
  lora period des-flsgd-drop.json 0.009
  lora period des-plan-drop.json 0.008
  lora no-sync des-trace-frozen.json frozen.json
  lora no-sync trace-frozen.json frozen.json
  # The frozen layer is listed in the plan (SPEC 4), with at least one iteration.
  "$python" -c "import json,sys; p={l['name']: l['sync_iterations'] for l in json.load(open('plan-frozen.json'))['layers']}; sys.exit(0 if p.get('proj.base_layer') else 'FAIL: proj.base_layer not in the plan')"
  # DreamDDP schedules only its trainable layers; the frozen one is accepted without an entry.
  echo '{"H": 2, "schedule": {"proj.lora_B": 0, "proj.lora_A": 1}}' >schedule.json
  run import dreamddp-schedule schedule.json --profile frozen.json -o schedule-plan.json
  run simulate --profile frozen.json --plan schedule-plan.json -o schedule-result.json
  # lora_B alone in 0: 1->3, hidden (B_L 10); lora_A alone in 1: 2->5, hidden: 10 + 10 = 20 ms.
  lora period schedule-result.json 0.020
  lora not-below report-frozen.json report-drop.json
  echo "ok: tiny LoRA layer, hand-derived periods"
}

lora_set() {
  local name="$1" workers="$2" period="$3"
  local cluster="$data/cluster_${workers}workers.json"
  local bp="$data/${name}_bp.json" comm="$data/${name}_comm.json"
  # DreamDDP's LoRA backward files hold NaN for modules a hook saw nothing for: named, and counted.
  if "$syncplan" import dreamddp --bp "$bp" --comm "$comm" --missing-comm frozen -o refused.json 2>stderr.txt; then
    echo "FAIL: NaN times were imported without --nonfinite zero"; exit 1
  fi
  cat stderr.txt
  grep -q "layers have a non-finite time: 'base_model.model.model.embed_tokens', " stderr.txt ||
    { echo "FAIL: the message does not count the non-finite layers and name the first"; exit 1; }
  [[ ! -e refused.json ]] || { echo "FAIL: a refused import wrote refused.json"; exit 1; }
  local layers frozen noun
  layers=$("$python" -c "import json; print(len(json.load(open('$bp'), parse_constant=float)))")
  frozen=$(( layers - $("$python" -c "import json; print(len(json.load(open('$comm'))))") ))
  for policy in drop frozen; do
    run import dreamddp --bp "$bp" --comm "$comm" --workers "$workers" --nonfinite zero --missing-comm "$policy" \
      --model "$name" -o "$policy.json" 2>/dev/null | tee "import-$policy.txt"
    noun=layers
    [[ $frozen == 1 ]] && noun=layer
    grep -q "$frozen $noun without an all-reduce time" "import-$policy.txt" ||
      { echo "FAIL: the import did not count $frozen layers"; exit 1; }
    run plan --profile "$policy.json" --period "$period" -o "plan-$policy.json" --report "report-$policy.json"
    run simulate --profile "$policy.json" --plan "plan-$policy.json" -o "result-$policy.json" | tee "simulate-$policy.txt"
    grep -q "reproduces the plan's predicted figures" "simulate-$policy.txt" ||
      { echo "FAIL: simulate --plan did not reproduce the $policy plan"; exit 1; }
    run simulate --profile "$policy.json" --plan "plan-$policy.json" --cluster "$cluster" -o "des-$policy.json" \
      --trace "des-trace-$policy.json"
    for strategy in ssgd wfbp flsgd; do
      run simulate --profile "$policy.json" --strategy "$strategy" --period "$period" --cluster "$cluster" \
        -o "des-$strategy-$policy.json"
    done
  done
  lora frozen drop.json $(( layers - frozen )) 0
  lora frozen frozen.json "$layers" "$frozen"
  lora not-below report-frozen.json report-drop.json
  lora not-below result-frozen.json result-drop.json
  lora not-below des-frozen.json des-drop.json
  for strategy in ssgd wfbp flsgd; do lora not-below "des-$strategy-frozen.json" "des-$strategy-drop.json"; done
  # Without jitter, the DES of a plan runs the period model's timeline.
  local expected
  expected=$("$python" -c "import json; print(repr(json.load(open('result-frozen.json'))['period_s']))")
  lora period des-frozen.json "$expected"
  lora no-sync des-trace-frozen.json frozen.json
  echo "ok: LoRA set $name"
}

missing_comm_errors() {
  set +e
  "$syncplan" import dreamddp --bp "$data/tiny_lora_bp.json" --comm "$data/tiny_lora_comm.json" -o p.json 2>err.txt
  local rc=$?
  set -e
  cat err.txt
  [[ $rc == 2 && ! -e p.json ]] || { echo "FAIL: exit $rc (expected 2) or p.json written"; exit 1; }
  grep -q "'proj.base_layer' missing from .*--missing-comm drop" err.txt ||
    { echo "FAIL: the default error does not name the layer and the way out"; exit 1; }
  echo '{"only.base_layer": 0.001}' >bp.json
  echo '{"other.lora_A": 0.001}' >comm.json
  set +e
  "$syncplan" import dreamddp --bp bp.json --comm comm.json --missing-comm drop -o p.json 2>err.txt
  rc=$?
  set -e
  cat err.txt
  [[ $rc == 2 ]] && grep -q "other.lora_A" err.txt ||
    { echo "FAIL: an all-reduce time without a backward time must stay an error (exit $rc)"; exit 1; }
  echo "ok: --missing-comm errors"
}

# data/model_specs/tiny_gpt_frozen_embeddings.json is tiny-gpt with "frozen": ["transformer.w?e"]:
# wte and wpe, and lm_head through its tie to wte. The frozen spec plans as the unfrozen profile
# with those three layers marked by hand, its S-SGD syncs less, and the DES issues nothing for them.
model_spec_frozen() {
  local spec="$here/data/model_specs/tiny_gpt_frozen_embeddings.json" cluster="$here/../../data/clusters/8nodes-1gpu-10gbps.json"
  local model=(--batch 4 --seq 64 --dtype fp32 --device estimate --gpu H100-SXM)
  run profile --model "$spec" "${model[@]}" -o frozen.json | tee profile.txt
  grep -q "3 layers frozen" profile.txt || { echo "FAIL: profile did not say 3 layers are frozen"; exit 1; }
  "$python" -c 'import json; names = [l["name"] for l in json.load(open("frozen.json"))["layers"] if l.get("frozen")]; assert names == ["transformer.wte", "transformer.wpe", "lm_head"], names' ||
    { echo "FAIL: the frozen layers are not wte, wpe and lm_head"; exit 1; }
  run profile --model "$here/../../data/models/tiny-gpt.json" "${model[@]}" -o plain.json
  "$python" -c 'import json; p = json.load(open("plain.json")); [l.update(frozen=True) for l in p["layers"] if l["name"] in ("transformer.wte", "transformer.wpe", "lm_head")]; json.dump(p, open("marked.json", "w"))'
  run plan --model "$spec" "${model[@]}" --cluster "$cluster" --period 3 -o one-step.json --report one-step-report.json
  run plan --profile marked.json --cluster "$cluster" --period 3 -o marked-plan.json --report marked-report.json
  run plan --profile plain.json --cluster "$cluster" --period 3 -o plain-plan.json --report plain-report.json
  "$python" - <<'PY'
import json
one, marked, plain = (json.load(open(f"{name}-report.json"))["strategies"] for name in ("one-step", "marked", "plain"))
for name in one:
    assert abs(one[name]["period_s"] - marked[name]["period_s"]) <= 1e-12 * marked[name]["period_s"], name
assert one["ssgd"]["period_s"] < plain["ssgd"]["period_s"], (one["ssgd"], plain["ssgd"])
print("ok: plan --model with frozen patterns = the profile marked by hand; ssgd", one["ssgd"]["period_s"], "<",
      plain["ssgd"]["period_s"], "s unfrozen")
PY
  run simulate --profile frozen.json --strategy ssgd --period 3 --cluster "$cluster" -o des.json --trace des-trace.json
  lora no-sync des-trace.json frozen.json
  echo "ok: model spec frozen patterns"
}

case "$case_name" in
  tiny_lora | lora_set | missing_comm_errors | model_spec_frozen) "$case_name" "$@" ;;
  *) echo "unknown case $case_name"; exit 2 ;;
esac
