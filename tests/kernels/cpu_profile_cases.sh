#!/usr/bin/env bash
# `syncplan profile --device cpu` end to end (docs/profiler.md): the profile is valid, every layer
# of tiny-gpt is there with positive times where it computes, the spread over the repeats is
# printed (the CTest output line "spread over 5 repeats ..."), the side report matches the
# profile, and the profile plans. tests/kernels/CMakeLists.txt registers each case.
#
# usage: cpu_profile_cases.sh CASE SYNCPLAN PYTHON WORKDIR
#   tiny_gpt   tiny-gpt at batch 2 x seq 32, 1 warm-up + 5 repeats, --report; then plan --link
#   ceiling    --gemm-ceiling at batch 1 x seq 8, where every layer's product is tiny (8 x 128 x 512)
#              and the ceiling's best comes from the squares 256^3 and up: the check passes and is
#              reported
#   ceiling_repeated  --gemm-ceiling at batch 8 x seq 64, 5 runs, none may fail: there tiny-gpt's
#              products (512 x 128 x 512) run as fast as the squares, and the check once failed
#              falsely in 1 of 3 runs; the ceiling now includes the layers' own GEMM shapes and the
#              check has a 50 % margin (docs/profiler.md section 6)
set -euo pipefail

case_name="$1" syncplan="$2" python="$3" workdir="$4"
here="$(cd "$(dirname "$0")" && pwd)"
link="$here/../cli/data/link_8workers.json"
rm -rf "$workdir" && mkdir -p "$workdir" && cd "$workdir"
run() { echo "\$ syncplan ${*}"; "$syncplan" "$@"; }

tiny_gpt() {
  start=$(date +%s.%N)
  run profile --model tiny-gpt --batch 2 --seq 32 --device cpu --warmup 1 --repeats 5 --report report.json \
    -o profile.json | tee profile.txt
  end=$(date +%s.%N)
  echo "cpu profile of tiny-gpt took $("$python" -c "print(round($end - $start, 2))") s (wall, process included)"
  grep -q "^spread over 5 repeats (coefficient of variation): whole step .*; layer correlation " profile.txt ||
    { echo "FAIL: no spread line"; exit 1; }
  # tiny-gpt: 45 layers; transformer.drop (p = 0) is the only layer without a kernel, so exactly 0;
  # every other one computes or moves data, so > 0 both ways (lm_head included: tied, but it runs).
  "$python" - profile.json report.json <<'PY'
import json, sys
p, r = (json.load(open(path)) for path in sys.argv[1:3])
assert p["format"] == "syncplan.profile/v1" and p["model"] == "tiny-gpt", p["model"]
assert p["source"] == "measured:cpu", p["source"]
assert len(p["layers"]) == 45, len(p["layers"])
assert sum(l["param_count"] for l in p["layers"]) == 834304
for layer in p["layers"]:
    idle = layer["name"] == "transformer.drop"
    for field in ("forward_s", "backward_s"):
        value = layer[field]
        assert (value == 0) if idle else (value > 0), (layer["name"], field, value)
assert r["format"] == "syncplan.profile-report/v1" and r["repeats"] == 5 and r["warmup_steps"] == 1
assert [l["name"] for l in r["layers"]] == [l["name"] for l in p["layers"]]
for lp, lr in zip(p["layers"], r["layers"]):
    assert lp["forward_s"] == lr["forward_s"] and lp["backward_s"] == lr["backward_s"], lp["name"]
    assert len(lr["forward_samples_s"]) == 5 and len(lr["backward_samples_s"]) == 5
    samples = sorted(lr["forward_samples_s"])
    assert samples[2] == lr["forward_s"], (lp["name"], samples, lr["forward_s"])  # the median of 5
# Each pass's spread (docs/formats.md, "Compute spread"): the report's samples' min, p10, p90, max
# (linear interpolation: h = 4 p over 5 sorted repeats), around the profile's median.
def quantile(xs, p):
    xs, h = sorted(xs), (len(xs) - 1) * p
    k = int(h)
    return xs[k] if k + 1 == len(xs) else xs[k] + (h - k) * (xs[k + 1] - xs[k])
for lp, lr in zip(p["layers"], r["layers"]):
    for pass_ in ("forward", "backward"):
        spread, samples = lp[pass_ + "_spread"], lr[pass_ + "_samples_s"]
        assert spread["samples"] == 5 and spread["min_s"] == min(samples) and spread["max_s"] == max(samples), spread
        assert abs(spread["p10_s"] - quantile(samples, 0.1)) <= 1e-15 and abs(spread["p90_s"] - quantile(samples, 0.9)) <= 1e-15
        assert spread["p10_s"] <= lp[pass_ + "_s"] <= spread["p90_s"], (lp["name"], pass_)
    assert lp["update_spread"]["samples"] == 5 and lp["update_spread"]["min_s"] <= lp["update_s"], lp["name"]
assert 0 <= r["step"]["layer_correlation"] <= 1, r["step"]
cvs = [l["forward_cv"] for l in r["layers"] if l["forward_cv"] is not None]
print(f"ok: tiny-gpt cpu profile valid; step CV {100 * r['step']['cv']:.1f} %, "
      f"median layer forward CV {100 * sorted(cvs)[len(cvs) // 2]:.1f} %")
PY
  run plan --profile profile.json --link "$link" --period 2 -o plan.json >plan.txt
  "$python" - plan.json profile.json <<'PY'
import json, sys
plan, profile = (json.load(open(path)) for path in sys.argv[1:3])
assert plan["format"] == "syncplan.plan/v1" and plan["period"] == 2, plan["period"]
assert [l["name"] for l in plan["layers"]] == [l["name"] for l in profile["layers"]]
assert all(l["sync_iterations"] and all(0 <= h < 2 for h in l["sync_iterations"]) for l in plan["layers"])
assert plan["predicted"]["period_s"] > 0
print(f"ok: the measured profile plans with --link: period {plan['predicted']['period_s']:.6f} s")
PY
}

ceiling() {
  run profile --model tiny-gpt --batch 1 --seq 8 --device cpu --gemm-ceiling --report report.json \
    -o profile.json | tee profile.txt
  grep -q "^ceiling check: no layer above the GEMM ceiling" profile.txt || { echo "FAIL: no ceiling check"; exit 1; }
  "$python" - report.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ceiling = r["gemm_ceiling_flops_per_s"]
assert ceiling > 0 and "Eigen" in r["gemm_ceiling_shape"], (ceiling, r["gemm_ceiling_shape"])
rates = [x for l in r["layers"] for x in (l["forward_flops_per_s"], l["backward_flops_per_s"]) if x is not None]
assert rates and max(rates) <= ceiling, (max(rates), ceiling)
print(f"ok: ceiling {ceiling:.3g} FLOP/s ({r['gemm_ceiling_shape']}), fastest layer pass {max(rates):.3g} FLOP/s")
PY
}

ceiling_repeated() {
  for run_number in 1 2 3 4 5; do
    run profile --model tiny-gpt --batch 8 --seq 64 --device cpu --gemm-ceiling --report "report$run_number.json" \
      -o "profile$run_number.json" | tee "profile$run_number.txt"
    grep -q "^ceiling check: no layer above the GEMM ceiling" "profile$run_number.txt" ||
      { echo "FAIL: run $run_number: no ceiling check line"; exit 1; }
  done
  "$python" - report*.json <<'PY'
import json, sys
for path in sys.argv[1:]:
    r = json.load(open(path))
    rates = [x for l in r["layers"] for x in (l["forward_flops_per_s"], l["backward_flops_per_s"]) if x is not None]
    print(f"{path}: ceiling {r['gemm_ceiling_flops_per_s']:.3g} FLOP/s ({r['gemm_ceiling_shape']}), "
          f"fastest layer pass {max(rates):.3g} FLOP/s ({100 * max(rates) / r['gemm_ceiling_flops_per_s']:.0f} %)")
PY
  echo "ok: 5 runs at batch 8 x seq 64 without a ceiling failure"
}

"$case_name"
