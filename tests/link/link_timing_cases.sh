#!/usr/bin/env bash
# Timing under --link end to end (docs/link.md "Buckets under a link", docs/des.md): ddp and mgwfbp
# on a link fit alone, their refusals, and a plan fused on a curved link (the 16-rank A100 log's
# shape) that simulate reproduces. Registered by tests/link/CMakeLists.txt.
#
# usage: link_timing_cases.sh SYNCPLAN PYTHON WORKDIR REPO
set -euo pipefail

syncplan="$1" python="$2" workdir="$3" repo="$4"
cli="$repo/tests/cli/data" link_data="$repo/tests/link/data"
rm -rf "$workdir" && mkdir -p "$workdir" && cd "$workdir"
run() { echo "\$ syncplan ${*}"; "$syncplan" "$@"; }
# expect_refused TEXT COMMAND...: exit 2, one line on stderr containing TEXT.
expect_refused() {
  local text="$1" status=0
  shift
  "$syncplan" "$@" 2>err.txt || status=$?
  cat err.txt
  [[ $status == 2 && $(wc -l <err.txt) == 1 ]] && grep -qF -- "$text" err.txt ||
    { echo "FAIL: syncplan $* exited $status, expected 2 with '$text'"; exit 1; }
}

# tiny_profile.json (backprop: head 2400 B, hidden 800 B, embed 400 B; F 0.6 ms, gradients ready
# 1.6, 2.6, 3.6 ms, U 0.3 ms; workers 2) on link_8workers.json (8 workers; T(n) = 7e-4 + 1.4e-9 n
# below its smallest measured size, 1 MiB, so every size here is on the line).
# ddp: first bucket 1 MiB holds all 3,600 B: one all-reduce from 3.6 ms of T(3600) = 0.70504 ms,
#   then U: 3.6 + 0.70504 + 0.3 = 4.60504 ms (charged as its layers' sum, 2.10504 ms: 6.00504 ms).
# mgwfbp: merging hidden into {head} ends 2.6 + T(3200) = 3.30448 > 3.30112 separately; embed into
#   {hidden} 3.6 + T(1200) = 4.30168 > 4.30056: three buckets, wfbp's 4.30056 + 0.3 = 4.60056 ms.
run simulate --profile "$cli/tiny_profile.json" --link "$cli/link_8workers.json" --strategy ddp --period 1 \
  -o ddp.json | tee ddp.txt
grep -q "cluster: none; the 8 workers of the link fit" ddp.txt || { echo "FAIL: no link-only note"; exit 1; }
run simulate --profile "$cli/tiny_profile.json" --link "$cli/link_8workers.json" --strategy mgwfbp --period 1 \
  -o mgwfbp.json
# Refusals: no link times to run on, and neither --cluster nor --link.
expect_refused "--sync-time measured needs --cluster" simulate --profile "$cli/tiny_profile.json" \
  --link "$cli/link_8workers.json" --sync-time measured --strategy ddp --period 1
expect_refused "add --cluster CLUSTER.json or --link LINK.json" simulate --profile "$cli/tiny_profile.json" \
  --strategy mgwfbp --period 1

# A curved link: the A100-shaped 16-rank log (its line misses 1 MiB by 31%), tiny-gpt's layers
# (bf16, up to 262 kB: inside the measured sizes), a fused plan, and simulate --plan on the same link.
run import nccl-tests "$link_data/allreduce_16gpu_a100_ib.log" -o a100.json 2>import.txt
cat import.txt
grep -q "warning: .*R^2 0.896" import.txt || { echo "FAIL: no poor-fit warning for the A100 shape"; exit 1; }
run plan --model tiny-gpt --link a100.json --period 2 --fuse-buckets -o plan.json --profile-out profile.json \
  --report report.json | tee plan.txt
grep -q "start-up time at the smallest sizes" plan.txt || { echo "FAIL: alpha not from the small sizes"; exit 1; }
run simulate --profile profile.json --link a100.json --plan plan.json -o period.json | tee sim.txt
grep -q "reproduces the plan's predicted figures" sim.txt || { echo "FAIL: the fused plan is not reproduced"; exit 1; }
run simulate --profile profile.json --link a100.json --strategy ddp --period 1 --bucket-cap-mb 0.1 -o ddp-a100.json

"$python" - <<'PY'
import json, sys

def fail(message):
    print("FAIL:", message)
    sys.exit(1)

def close(what, actual, expected):
    if abs(actual - expected) > 1e-9 * abs(expected):
        fail(f"{what}: got {actual!r}, expected {expected!r}")
    print(f"ok {what} = {actual!r}")

ddp, mgwfbp = json.load(open("ddp.json")), json.load(open("mgwfbp.json"))
for name, result in (("ddp", ddp), ("mgwfbp", mgwfbp)):
    for key, value in (("engine", "des"), ("workers", 8), ("sync_time", "link"), ("link_bytes", [])):
        if result.get(key) != value:
            fail(f"{name}: {key} is {result.get(key)!r}, expected {value!r}")
close("ddp total_s", ddp["total_s"], 4.60504e-3)
close("mgwfbp total_s", mgwfbp["total_s"], 4.60056e-3)

# The plan's buckets: fewer all-reduces than layers with parameters, and the lower bound below it.
plan, report = json.load(open("plan.json")), json.load(open("report.json"))
fused = report["chosen"]["buckets"]
if not fused["allreduces"] < fused["unfused_allreduces"]:
    fail(f"no bucket was fused: {fused}")
if not report["lower_bound_period_s"] <= plan["predicted"]["period_s"]:
    fail("the fused lower bound is above the plan")
close("simulated period", json.load(open("period.json"))["period_s"], plan["predicted"]["period_s"])
print("ok", fused["allreduces"], "fused all-reduces of", fused["unfused_allreduces"])
PY
echo "ok: --link timing"
