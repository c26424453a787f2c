#!/usr/bin/env bash
# `syncplan simulate --cluster` end to end (docs/des.md 4): the result JSON (engine "des") against
# hand-derived figures, a delayed-averaging plan, and the Chrome trace's shape. Registered by
# tests/cli/CMakeLists.txt.
#
# usage: cli_simulate_des.sh SYNCPLAN PYTHON WORKDIR PROFILE CLUSTER
#   PROFILE  tests/cli/data/tiny_profile.json; CLUSTER  data/clusters/8nodes-1gpu-10gbps.json
set -euo pipefail

syncplan="$1" python="$2" workdir="$3" profile="$4" cluster="$5"
rm -rf "$workdir" && mkdir -p "$workdir" && cd "$workdir"
run() { echo "\$ syncplan ${*}"; "$syncplan" "$@"; }

# tiny_profile.json, backprop order: head (2400 bytes, sync_s 3 ms), hidden (800, 1 ms),
# embed (400, 0.5 ms); every layer forward 0.2 ms, backward 1 ms, update 0.1 ms: F = 0.6 ms,
# gradients ready 1.6, 2.6, 3.6 ms after the iteration starts, U = 0.3 ms. Profile workers 2.
#
# Cluster: 8 nodes of 1 GPU, intra 3600 Gbit/s 5 us, inter 10 Gbit/s = 1.25e9 bytes/s, 50 us.
# The profile's workers (2) differ from the cluster's (8): --sync-time auto uses the cost model.
# Ring over 8 workers, every hop crossing two node links: alpha = max(5, 50) us, B = 1.25e9:
#   T(n) = 14 * 50e-6 + 2 * 7/8 * n / 1.25e9 = 7e-4 + 1.4e-9 n s
#   head 7.0336e-4, hidden 7.0112e-4, embed 7.0056e-4 s.
# wfbp, H = 1: head 1.6 -> 2.30336 ms; hidden 2.6 -> 3.30112; embed 3.6 -> 4.30056;
# update -> 4.60056 ms. 2 iterations: total 9.20112e-3 s; exposed (4.30056 - 3.6) x 2 = 1.40112e-3.
run simulate --profile "$profile" --cluster "$cluster" --strategy wfbp --period 1 --iterations 2 \
  --trace trace.json -o result.json
# --sync-time measured: head 1.6 -> 4.6, hidden 4.6 -> 5.6, embed 5.6 -> 6.1, update -> 6.4 ms;
# 2 iterations 12.8e-3 s (the period model's wfbp for H = 2 on this profile).
run simulate --profile "$profile" --cluster "$cluster" --strategy wfbp --period 2 --sync-time measured \
  -o measured.json
# The same for 3 iterations, not a whole number of periods: 3 x 6.4 = 19.2e-3 s in all, and
# period_s is the mean iteration times H: 6.4e-3 x 2 = 12.8e-3 s (docs/formats.md).
run simulate --profile "$profile" --cluster "$cluster" --strategy wfbp --period 2 --sync-time measured \
  --iterations 3 -o partial.json | tee partial.txt
# ... and said so (such a period_s fell below a plan's lower bound, unlabelled).
grep -q "^note: 3 iterations are not whole periods of H = 2: period_s (H x the mean iteration)" partial.txt ||
  { echo "FAIL: no note that 3 iterations are not whole periods of H = 2"; exit 1; }
# The period model on the same strategy: engine "period-model", period_s 12.8e-3 s as above.
run simulate --profile "$profile" --strategy wfbp --period 2 -o period_model.json
# A delayed-averaging plan (docs/time-model.md section 13), H = 2: head syncs in iteration 0 with
# delay 1, hidden and embed in iteration 1. Measured times, iteration compute 0.6 + 3 + 0.3 = 3.9 ms.
# Iteration 0: head 1.6 -> 4.6 ms (applied before update 1); update_0 = 3.6, T_1 = 3.9.
# Iteration 1: A_1 = 4.5; hidden ready 6.5 -> 7.5, embed ready 7.5 -> 8.0 (the link is idle again
#   since 4.6); update_1 = max(A_1 + B_L = 7.5, 4.6, 8.0) = 8.0, wait 0.5; T_2 = 8.3.
#   iteration_s = [3.9, 4.4] ms, exposed 0.5 ms (without the delay: update_0 = 4.6, T_1 = 4.9,
#   then hidden 7.5 -> 8.5, embed 8.5 -> 9.0, T_2 = 9.3 ms).
# head's all-reduce slice spans the iteration boundary at 3.9 ms: ts 1600 us, dur 3000 us, delay 1.
cat > delayed_plan.json <<'JSON'
{"format": "syncplan.plan/v1", "model": "tiny", "period": 2, "algorithm": "search",
 "layers": [{"name": "embed", "sync_iterations": [1]}, {"name": "hidden", "sync_iterations": [1]},
            {"name": "head", "sync_iterations": [0], "sync_delays": [1]}]}
JSON
run simulate --profile "$profile" --cluster "$cluster" --plan delayed_plan.json --sync-time measured \
  --trace delayed_trace.json -o delayed.json

"$python" - <<'PY'
import json, math, sys

def fail(message):
    print("FAIL:", message)
    sys.exit(1)

def close(what, actual, expected):
    if not isinstance(actual, (int, float)) or abs(actual - expected) > 1e-9 * abs(expected):
        fail(f"{what}: got {actual!r}, expected {expected!r} (relative 1e-9)")
    print(f"ok {what} = {actual!r}")

result = json.load(open("result.json"))
for key, value in [("format", "syncplan.result/v1"), ("engine", "des"), ("strategy", "wfbp"),
                   ("sync_time", "model"), ("workers", 8), ("simulated_workers", 1), ("iterations", 2),
                   ("period", 1)]:
    if result.get(key) != value:
        fail(f"result.json: {key} is {result.get(key)!r}, expected {value!r}")
close("total_s", result["total_s"], 9.20112e-3)
close("mean_iteration_s", result["mean_iteration_s"], 4.60056e-3)
for i, seconds in enumerate(result["iteration_s"]):
    close(f"iteration_s[{i}]", seconds, 4.60056e-3)
close("exposed_comm_s", result["exposed_comm_s"], 1.40112e-3)
if not result["link_bytes"]:
    fail("result.json: link_bytes is empty for cost-model all-reduces")

measured = json.load(open("measured.json"))
if measured.get("sync_time") != "measured" or measured.get("engine") != "des":
    fail(f"measured.json: sync_time {measured.get('sync_time')!r}, engine {measured.get('engine')!r}")
close("measured total_s", measured["total_s"], 12.8e-3)

# One schema (SPEC section 4): both engines carry period_s, iteration_s and engine.
close("period_s (H = 1: one iteration)", result["period_s"], 4.60056e-3)
close("measured period_s", measured["period_s"], 12.8e-3)
partial = json.load(open("partial.json"))
close("partial total_s", partial["total_s"], 19.2e-3)
close("partial period_s", partial["period_s"], 12.8e-3)
close("partial period_s = mean_iteration_s x H", partial["period_s"], partial["mean_iteration_s"] * partial["period"])
model = json.load(open("period_model.json"))
if model.get("engine") != "period-model" or len(model.get("iteration_s", [])) != 2:
    fail(f"period_model.json: engine {model.get('engine')!r}, iteration_s {model.get('iteration_s')!r}")
close("period model period_s", model["period_s"], 12.8e-3)
close("period model period_s = sum of iteration_s", model["period_s"], sum(model["iteration_s"]))

trace = json.load(open("trace.json"))
events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
spans = {}
allreduces = 0
for e in events:
    if not (e["ts"] >= 0 and e["dur"] >= 0 and math.isfinite(e["ts"]) and math.isfinite(e["dur"])):
        fail(f"trace.json: bad ts/dur in {e}")
    if e["pid"] != 0:
        fail(f"trace.json: identical workers are simulated by worker 0 only, got pid {e['pid']}")
    spans.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["dur"]))
    allreduces += e["cat"] == "allreduce"
for key, items in spans.items():
    items.sort()
    for (ts0, dur0), (ts1, _) in zip(items, items[1:]):
        if ts1 < ts0 + dur0 - 1e-9:
            fail(f"trace.json: events overlap on (pid, tid) {key}: {ts0}+{dur0} > {ts1}")
# 3 layers x 2 iterations; 3 forwards + 3 backwards + 1 update per iteration.
if allreduces != 6:
    fail(f"trace.json: {allreduces} all-reduce events, expected 6")
if len(events) != 6 + 2 * 7:
    fail(f"trace.json: {len(events)} X events, expected 20")
print("ok trace.json: 20 events, no overlap")

delayed = json.load(open("delayed.json"))
close("delayed total_s", delayed["total_s"], 8.3e-3)
for i, expected in enumerate([3.9e-3, 4.4e-3]):
    close(f"delayed iteration_s[{i}]", delayed["iteration_s"][i], expected)
close("delayed exposed_comm_s", delayed["exposed_comm_s"], 0.5e-3)
slices = [e for e in json.load(open("delayed_trace.json"))["traceEvents"] if e.get("cat") == "allreduce"]
head = [e for e in slices if e["args"].get("layer") == "head"]
if len(slices) != 3 or len(head) != 1:
    fail(f"delayed_trace.json: {len(slices)} all-reduces ({len(head)} of head), expected 3 (1)")
close("delayed head ts (us)", head[0]["ts"], 1600)
close("delayed head dur (us)", head[0]["dur"], 3000)
if head[0]["args"].get("delay") != 1 or head[0]["args"].get("iteration") != 0:
    fail(f"delayed_trace.json: head's args {head[0]['args']!r}, expected iteration 0, delay 1")
if any("delay" in e["args"] for e in slices if e is not head[0]):
    fail("delayed_trace.json: an undelayed all-reduce carries args.delay")
print("ok delayed plan: iterations, exposed time and the trace's delayed slice")
PY
echo "ok: simulate --cluster"
