#!/usr/bin/env bash
# `syncplan compare` end to end: the hand-made files of data/compare/ through the command line, and
# `simulate` results and traces of the CLI tests' tiny profile compared with themselves and with a
# copy whose times are scaled by hand. One function per case; tests/runtime/CMakeLists.txt registers
# each with CTest.
#
# usage: compare_cases.sh CASE SYNCPLAN PYTHON WORKDIR
#   hand_files          two pairs of hand-made files with --json: MAPE, all-reduce errors, ranking
#   period_model_self   simulate (period model) -o and --trace: result vs trace and trace vs itself
#                       give MAPE 0; vs the trace scaled by 1.25 give 20%
#   des_self            the same with simulate --cluster (the DES) over 6 iterations of 2 workers
set -euo pipefail

case_name="$1" syncplan="$2" python="$3" workdir="$4"
here="$(cd "$(dirname "$0")" && pwd)"
data="$here/data/compare"
cli_data="$here/../cli/data"
run() { echo "\$ syncplan ${*}"; "$syncplan" "$@"; }
rm -rf "$workdir" && mkdir -p "$workdir" && cd "$workdir"

# check_json FILE PYTHON-EXPRESSION...: each expression, on the document `d`, must be true.
check_json() {
  local file="$1"
  shift
  "$python" - "$file" "$@" <<'EOF'
import json, math, sys
d = json.load(open(sys.argv[1]))
close = lambda a, b, tol=1e-9: abs(a - b) <= tol * max(1.0, abs(b))
failed = [e for e in sys.argv[2:] if not eval(e, {"d": d, "close": close, "math": math})]
for e in failed:
    print(f"FAIL: {sys.argv[1]}: {e}")
sys.exit(1 if failed else 0)
EOF
}

# scale_trace IN OUT FACTOR: every ts and dur times FACTOR (a run slower by FACTOR in everything).
scale_trace() {
  "$python" - "$1" "$2" "$3" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
f = float(sys.argv[3])
for e in d["traceEvents"]:
    for k in ("ts", "dur"):
        if k in e:
            e[k] *= f
json.dump(d, open(sys.argv[2], "w"))
EOF
}

hand_files() {
  # Derived in compare_test.cpp: pm_result_h2 vs log_2ranks MAPE 17.778% (skip 1); pm_result_h1 vs
  # log_fast (6 ms vs 10, 5, 10 ms) MAPE (40 + 20 + 40) / 3 = 33.333%; both rank the second run
  # faster. trace_pred vs trace_meas: MAPE (12.409 + 9.0909) / 2 = 10.750% (skip 0), 3 matched
  # all-reduces, mean |start error| 0.3 ms, mean |end error| 0.5333 ms.
  run compare "$data/pm_result_h2.json" "$data/log_2ranks.jsonl" "$data/pm_result_h1.json" "$data/log_fast.jsonl" \
    --json two.json | tee two.txt
  grep -q "MAPE 17.78% over 3 iterations (first 1 skipped)" two.txt || { echo "FAIL: MAPE line of run 1"; exit 1; }
  grep -q "the prediction ranks the runs as measured" two.txt || { echo "FAIL: ranking line"; exit 1; }
  # By position (H = 2, iterations 1..3): h = 1 holds iterations 1 and 3, predicted 20 ms each,
  # measured (25 + 15) / 2 = 20 ms; the H = 1 run has no such table.
  [[ $(grep -c "by position in the period (H = 2;" two.txt) == 1 ]] || { echo "FAIL: one position table"; exit 1; }
  grep -Eq "^1 +2 +0\.020000 +0\.020000 +0\.00%" two.txt || { echo "FAIL: position 1's row"; exit 1; }
  # Iteration 2: 0.010 predicted, 0.010 measured (a sum of 50 - 40 ms): the difference's rounding
  # (-5.2e-18 s) prints as 0.
  grep -Eq "^2 +0\.010000 +0\.010000 +0\.000000 +0\.00%" two.txt || { echo "FAIL: iteration 2's error_s"; exit 1; }
  check_json two.json 'd["format"] == "syncplan.compare/v1"' 'd["skip"] == 1' \
    'close(d["pairs"][0]["mape_percent"], (20 + 100 / 3) / 3)' 'close(d["pairs"][1]["mape_percent"], 100 / 3)' \
    'd["pairs"][0]["predicted_kind"] == "period-model result"' 'd["pairs"][0]["predicted_period"] == 2' \
    'd["pairs"][0]["measured_kind"] == "run log"' 'd["pairs"][0]["measured_ranks"] == 2' \
    'd["pairs"][0]["iterations"][0]["skipped"] and not d["pairs"][0]["iterations"][1]["skipped"]' \
    'close(d["pairs"][0]["iterations"][1]["error_percent"], 20)' \
    'd["ranking"]["same"] and d["ranking"]["predicted_order"] == [1, 0]' \
    'd["pairs"][0]["period"] == 2 and [p["iterations"] for p in d["pairs"][0]["positions"]] == [1, 2]' \
    'd["pairs"][1]["period"] == 1 and d["pairs"][1]["positions"] == []'
  run compare "$data/trace_pred.json" "$data/trace_meas.json" --skip 0 --json traces.json | tee traces.txt
  grep -q "3 matched, 0 only predicted, 1 only measured" traces.txt || { echo "FAIL: all-reduce summary"; exit 1; }
  check_json traces.json 'd["ranking"] is None' 'd["pairs"][0]["measured_kind"] == "measured trace"' \
    'close(d["pairs"][0]["mape_percent"], (0.85 / 6.85 + 0.6 / 6.6) / 2 * 100)' \
    'close(d["pairs"][0]["allreduces"]["mean_abs_start_error_s"], 0.0003)' \
    'close(d["pairs"][0]["allreduces"]["mean_abs_end_error_s"], 0.0016 / 3)' \
    'd["pairs"][0]["allreduces"]["matched"][2]["layers"] == ["embed", "head"]'
}

# self_checks RESULT TRACE: result vs its trace and the trace vs itself give MAPE 0 and all-reduce
# errors 0; the trace vs its copy scaled by 1.25 gives, in every iteration, (1.25 p - p) / 1.25 p =
# 20%, and all-reduce start and end errors of 0.25 times the predicted ones.
self_checks() {
  local result="$1" trace="$2"
  run compare "$result" "$trace" --skip 0 --json result-vs-trace.json
  # The result's iteration_s and the trace's event extents are two ways to the same times.
  check_json result-vs-trace.json 'close(d["pairs"][0]["mape_percent"], 0, 1e-6)' \
    'd["pairs"][0]["compared_iterations"] == len(d["pairs"][0]["iterations"])'
  run compare "$trace" "$trace" --json self.json
  check_json self.json 'd["pairs"][0]["mape_percent"] == 0' \
    'd["pairs"][0]["allreduces"]["mean_abs_start_error_s"] == 0' \
    'd["pairs"][0]["allreduces"]["mean_abs_end_error_s"] == 0' \
    'd["pairs"][0]["allreduces"]["predicted_only"] == 0 and d["pairs"][0]["allreduces"]["measured_only"] == 0' \
    'len(d["pairs"][0]["allreduces"]["matched"]) > 0'
  scale_trace "$trace" scaled.json 1.25
  run compare "$trace" scaled.json --json scaled-compare.json | tee scaled.txt
  check_json scaled-compare.json 'close(d["pairs"][0]["mape_percent"], 20, 1e-6)' \
    'all(close(r["error_percent"], 20, 1e-6) for r in d["pairs"][0]["iterations"])' \
    'all(close(m["start_error_s"], 0.25 * m["predicted_start_s"], 1e-6) for m in d["pairs"][0]["allreduces"]["matched"])' \
    'all(close(m["end_error_s"], 0.25 * m["predicted_end_s"], 1e-6) for m in d["pairs"][0]["allreduces"]["matched"])'
  # Two runs, the scaled one slower both predicted (its own trace) and measured: ranked alike.
  run compare "$trace" "$trace" scaled.json scaled.json --json ranked.json | tee ranked.txt
  check_json ranked.json 'd["ranking"]["same"]' 'd["ranking"]["measured_order"] == [0, 1]'
  grep -q "predicted run 1 < run 2; measured run 1 < run 2; 1 of 1 pairs" ranked.txt || { echo "FAIL: ranking line"; exit 1; }
  # The result and its trace predict one figure (up to rounding): a tie on both sides, ordered alike.
  run compare "$result" "$trace" "$trace" "$trace" | tee tied.txt
  grep -q "predicted run 1 = run 2; measured run 1 = run 2; 1 of 1 pairs" tied.txt || { echo "FAIL: tie line"; exit 1; }
}

period_model_self() {
  # plsgd-even, H = 3 on the tiny profile: one layer per iteration (3 all-reduces per period).
  run simulate --profile "$cli_data/tiny_profile.json" --strategy plsgd-even --period 3 -o result.json --trace trace.json
  self_checks result.json trace.json
  check_json self.json 'd["pairs"][0]["predicted_kind"] == "period-model trace"' 'd["pairs"][0]["predicted_period"] == 3'
}

des_self() {
  run simulate --profile "$cli_data/tiny_profile.json" --cluster "$cli_data/cluster_2workers.json" --strategy wfbp \
    --period 1 --iterations 6 -o result.json --trace trace.json
  self_checks result.json trace.json
  check_json self.json 'd["pairs"][0]["predicted_kind"] == "simulated trace"' 'd["pairs"][0]["predicted_period"] is None' \
    'len(d["pairs"][0]["iterations"]) == 6'
}

"$case_name"
echo "PASS: $case_name"
