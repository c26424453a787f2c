#!/usr/bin/env bash
# `syncplan simulate --cluster` at 100,000 workers (docs/des.md section 5): identical
# workers run as one representative in little memory and equal the period model on the same
# all-reduce times; a straggler makes every worker simulated, and what would not fit in memory is
# refused up front (exit 2, with the estimate); on 1 worker it says that the all-reduce costs
# nothing. Registered by tests/cli/CMakeLists.txt.
#
# usage: cli_scale.sh SYNCPLAN PYTHON WORKDIR PROFILE
#   PROFILE  tests/cli/data/tiny_profile.json
set -euo pipefail

syncplan="$1" python="$2" workdir="$3" profile="$4"
rm -rf "$workdir" && mkdir -p "$workdir" && cd "$workdir"

# 12,500 nodes of 8 GPUs: NVLink-like 3600 Gbit/s and 5 us inside, 100 Gbit/s and 10 us between.
cat > cluster.json <<'JSON'
{"format": "syncplan.cluster/v1", "name": "100,000 GPUs, 8 per node", "workers": 100000,
 "workers_per_node": 8, "intra_node": {"bandwidth_Gbps": 3600, "latency_us": 5},
 "inter_node": {"bandwidth_Gbps": 100, "latency_us": 10}, "allreduce": "ring"}
JSON
"$python" - <<'PY'
import json
cluster = json.load(open("cluster.json"))
cluster["compute_slowdown"] = {"3": 2.0}
json.dump(cluster, open("straggler.json", "w"))
PY

# Runs a command with its stdout into the file $1 and prints its peak resident memory in KiB:
# /usr/bin/time's %M where it exists, else the child's ru_maxrss from Python (an upper bound).
peak_kib() {
  local out="$1"
  shift
  if [[ -x /usr/bin/time ]]; then
    /usr/bin/time -f '%M' -o peak.txt "$@" > "$out"
    tail -1 peak.txt
  else
    "$python" -c 'import resource, subprocess, sys; subprocess.run(sys.argv[2:], check=True, stdout=open(sys.argv[1], "w")); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$out" "$@"
  fi
}

echo "\$ syncplan simulate --profile tiny_profile.json --cluster cluster.json --strategy wfbp --period 2"
identical_kib=$(peak_kib stdout.txt "$syncplan" simulate --profile "$profile" --cluster cluster.json --strategy wfbp \
  --period 2)
cat stdout.txt
echo "peak resident memory: ${identical_kib} KiB"
echo "\$ syncplan simulate ... -o result.json"
written_kib=$(peak_kib written.txt "$syncplan" simulate --profile "$profile" --cluster cluster.json --strategy wfbp \
  --period 2 -o result.json)
echo "peak resident memory: ${written_kib} KiB"
echo "\$ syncplan simulate ... --cluster straggler.json -o straggler_result.json (one straggler: every worker simulated)"
straggler_kib=$(peak_kib straggler.txt "$syncplan" simulate --profile "$profile" --cluster straggler.json \
  --strategy wfbp --period 2 -o straggler_result.json)
cat straggler.txt
echo "peak resident memory: ${straggler_kib} KiB"

# 100,000 simulated workers x 100,000 iterations keep at least 40 bytes per worker and iteration
# (docs/des.md section 5): 400 GB, refused before anything is allocated.
set +e
"$syncplan" simulate --profile "$profile" --cluster straggler.json --strategy wfbp --period 2 --iterations 100000 \
  -o refused.json > refused.txt 2>&1
code=$?
set -e
cat refused.txt
[[ $code == 2 ]] || { echo "FAIL: the run too large for memory exited $code, expected 2"; exit 1; }
[[ ! -e refused.json ]] || { echo "FAIL: refused.json was written"; exit 1; }
grep -q "needs about .* GiB) of memory for 100000 simulated worker(s) x 100000 iterations" refused.txt &&
  grep -q "available" refused.txt || { echo "FAIL: the refusal does not give the estimate and what is available"; exit 1; }

# One worker: the all-reduce is over a group of one; simulate says that it costs nothing, and the
# iteration is the compute alone: F + B + U = 0.6 + 3 + 0.3 ms = 3.9 ms.
cat > one.json <<'JSON'
{"format": "syncplan.cluster/v1", "workers": 1, "intra_node": {"bandwidth_Gbps": 100, "latency_us": 10}}
JSON
"$syncplan" simulate --profile "$profile" --cluster one.json --strategy wfbp --period 1 | tee one.txt
grep -q "1 worker: an all-reduce over a group of one costs nothing" one.txt ||
  { echo "FAIL: simulate on 1 worker does not say that the all-reduce costs nothing"; exit 1; }
grep -q "total_s 0.003900 .*exposed_comm_s 0.000000 .*comm_busy_s 0.000000" one.txt ||
  { echo "FAIL: simulate on 1 worker: expected total_s 0.003900 with nothing exposed or running"; exit 1; }

IDENTICAL_KIB="$identical_kib" WRITTEN_KIB="$written_kib" STRAGGLER_KIB="$straggler_kib" "$python" - "$profile" <<'PY'
import json, os, re, sys

def fail(message):
    print("FAIL:", message)
    sys.exit(1)

def close(what, actual, expected, relative=1e-9):
    if abs(actual - expected) > relative * abs(expected):
        fail(f"{what}: got {actual!r}, expected {expected!r} (relative {relative})")
    print(f"ok {what} = {actual!r}")

# The period model by hand (SPEC section 5) on the cost model's all-reduce times
# (docs/collectives.md 3): p = 100,000, the bottleneck the node links at 100 Gbit/s = 1.25e10
# bytes/s, alpha the larger latency, 10 us: T(n) = 2 (p-1) 1e-5 + 2 (p-1)/p n / 1.25e10, about 2 s.
p = 100000
def allreduce_s(n):
    return 2 * (p - 1) * 1e-5 + 2 * (p - 1) / p * n / 1.25e10
layers = json.load(open(sys.argv[1]))["layers"]
forward = sum(layer["forward_s"] for layer in layers)
update = sum(layer["update_s"] for layer in layers)
# wfbp: every layer every iteration, in backprop order (the profile's reverse), on one FIFO link.
t, link = forward, 0.0
for layer in reversed(layers):
    t += layer["backward_s"]
    link = max(t, link) + allreduce_s(layer["param_bytes"])
iteration = max(t, link) + update

result = json.load(open("result.json"))
for key, value in [("engine", "des"), ("workers", 100000), ("simulated_workers", 1), ("sync_time", "model"),
                   ("iterations", 2)]:
    if result.get(key) != value:
        fail(f"result.json: {key} is {result.get(key)!r}, expected {value!r}")
close("period_s (2 iterations of H = 2)", result["period_s"], 2 * iteration)
# The command prints the period model on the same all-reduce times beside the DES.
stdout = open("stdout.txt").read()
match = re.search(r"period model \(one worker, same all-reduce times\): period_s ([0-9.e+-]+); DES mean per period ([0-9.e+-]+)", stdout)
if not match:
    fail("simulate did not print the period model line")
# Printed with 6 decimals: 12.003681 s to 1e-7.
close("printed period model", float(match.group(1)), 2 * iteration, 1e-7)
close("printed DES mean per period", float(match.group(2)), float(match.group(1)))
if "simulated 1 of 100000 workers (identical workers: one representative)" not in stdout:
    fail("simulate did not say that one representative ran")
# Bytes per directed link: 2 per worker and 2 per node, each 2 (p-1)/p bytes per byte all-reduced.
if len(result["link_bytes"]) != 225000:
    fail(f"link_bytes has {len(result['link_bytes'])} entries, expected 225,000")
per_iteration = sum(layer["param_bytes"] for layer in layers) * 2
close("bytes on a worker link", result["link_bytes"][0]["bytes"], per_iteration * 2 * (p - 1) / p)

straggler = json.load(open("straggler_result.json"))
if straggler.get("simulated_workers") != 100000:
    fail(f"straggler_result.json: simulated_workers {straggler.get('simulated_workers')!r}, expected 100000")
# Worker 3 computes at half speed; the rest wait for it: the same schedule with times x 2.
t, link = 2 * forward, 0.0
for layer in reversed(layers):
    t += 2 * layer["backward_s"]
    link = max(t, link) + allreduce_s(layer["param_bytes"])
close("straggler period_s", straggler["period_s"], 2 * (max(t, link) + 2 * update))

# Memory (resident peak, KiB; measured 45, 126 and 167 MB). One representative needs no per-worker
# state; what grows with the workers is the result's bytes per directed link, 225,000 named
# entries (about 100 bytes each, twice: the run's and the result document's): under 64 MB in all.
# Written as JSON (-o) they take about 350 bytes more each: under 160 MB. Every simulated worker
# costs more (its iteration times, compute intervals, result rows), yet 100,000 of them for
# 2 iterations stay under 400 MB. A per-worker cost of 2.5 kB (a random generator each) would
# break the first two bounds.
kib = {name: int(os.environ[name + "_KIB"]) for name in ("IDENTICAL", "WRITTEN", "STRAGGLER")}
print(f"peak resident memory (KiB): {kib}")
for name, limit in (("IDENTICAL", 64e6), ("WRITTEN", 160e6), ("STRAGGLER", 400e6)):
    if kib[name] * 1024 > limit:
        fail(f"{name.lower()} run at 100,000 workers peaked at {kib[name]} KiB, over {limit / 1e6:.0f} MB")
print("ok: 100,000 workers")
PY
