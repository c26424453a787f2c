#!/usr/bin/env bash
# The link model end to end (docs/link.md "The link model", "Warnings"): a token-bucket link swept
# to 1 MiB with a poor fit times all-reduces past its sweep at its largest size's bandwidth, rising
# with the size; plan, simulate and report warn on stderr, once each, about the poor fit and the
# all-reduces beyond the sweep, exit 0, and say nothing of the sweep when every all-reduce is
# inside it. Registered by tests/link/CMakeLists.txt.
#
# usage: link_model_cases.sh SYNCPLAN PYTHON WORKDIR REPO
set -euo pipefail

syncplan="$1" python="$2" workdir="$3" repo="$4"
cli="$repo/tests/cli/data"
rm -rf "$workdir" && mkdir -p "$workdir" && cd "$workdir"
fail() { echo "FAIL: $*"; exit 1; }
# run NAME ARGS...: runs syncplan, exit 0 required; stdout to NAME.out, stderr to NAME.err (shown).
run() {
  local name="$1" status=0
  shift
  echo "\$ syncplan $*"
  "$syncplan" "$@" >"$name.out" 2>"$name.err" || status=$?
  cat "$name.err"
  [[ $status == 0 ]] || { cat "$name.out"; fail "syncplan $* exited $status"; }
}
# count TEXT FILE: how many lines of FILE contain TEXT.
count() { grep -cF -- "$1" "$2" || true; }

# The link: 50 us, then a 64 KiB burst at line rate (1.25e8 B/s) and the rest at 3e6 B/s, swept
# 8 B .. 1 MiB by factor 2 (the shape of a tc-shaped link). Its alpha-beta fit, with relative errors, is
# computed here (weighted least squares by the normal equations): R^2 0.418. Profiles of one
# layer (3.3 MB, 1.5 MiB, 500 kB) and of four 400 kB layers (1.6 MB together, beyond the sweep
# only when fused).
"$python" - <<'PY'
import json

def shaper_s(n):
    return 50e-6 + min(n, 65536) / 1.25e8 + max(n - 65536, 0) / 3e6

sizes = [8 << i for i in range(18)]
times = [shaper_s(n) for n in sizes]
w = [1 / t ** 2 for t in times]
s, sn, snn = sum(w), sum(a * n for a, n in zip(w, sizes)), sum(a * n * n for a, n in zip(w, sizes))
st, snt = sum(a * t for a, t in zip(w, times)), sum(a * n * t for a, n, t in zip(w, sizes, times))
alpha, beta = (snn * st - sn * snt) / (s * snn - sn * sn), (s * snt - sn * st) / (s * snn - sn * sn)
assert alpha > 0 and beta > 0
mean = st / s
r2 = 1 - sum(a * (t - alpha - beta * n) ** 2 for a, n, t in zip(w, sizes, times)) / sum(
    a * (t - mean) ** 2 for a, t in zip(w, times))
samples = [{"size_bytes": n, "time_s": t, "algbw_GBps": n / t / 1e9, "busbw_GBps": n / t / 1e9 * 2 * 3 / 4}
           for n, t in zip(sizes, times)]
json.dump({"format": "syncplan.link/v1", "collective": "allreduce", "workers": 4, "source": "estimated:shaper",
           "alpha_s": alpha, "beta_s_per_byte": beta, "r_squared": r2, "samples": samples},
          open("shaper.json", "w"), indent=1)
print(f"shaper fit: alpha {alpha:.4g} s, beta {beta:.4g} s/B, R^2 {r2:.3f}")

def profile(name, layer_bytes):
    layers = [{"name": f"l{i}", "param_count": b // 4, "param_bytes": b, "forward_s": 0.001,
               "backward_s": 0.002, "update_s": 0.0005} for i, b in enumerate(layer_bytes)]
    json.dump({"format": "syncplan.profile/v1", "model": name, "source": "estimated:test", "layers": layers},
              open(name + ".json", "w"), indent=1)

profile("big", [3300000])
profile("mid", [1572864])
profile("small", [500000])
profile("four", [400000] * 4)
PY

# ssgd at H = 1 on one layer: period = F + B + U + T(n) (docs/time-model.md); T is checked below.
for name in big mid small; do
  run "$name" simulate --profile "$name.json" --link shaper.json --strategy ssgd --period 1 -o "$name-result.json"
done
for name in big mid small; do
  [[ $(count "R^2 0.418 < 0.9" "$name.err") == 1 ]] || fail "$name: expected one poor-fit warning"
done
[[ $(count "all-reduces up to 3300000 bytes are beyond the sweep (largest measured size 1048576 bytes)" big.err) == 1 ]] ||
  fail "big: expected one beyond-the-sweep warning naming 3300000 and 1048576 bytes"
[[ $(count "algbw 0.003194 GB/s" big.err) == 1 ]] || fail "big: the warning should name the largest size's algbw"
[[ $(count "all-reduces up to 1572864 bytes" mid.err) == 1 ]] || fail "mid: expected the beyond-the-sweep warning"
[[ $(count "beyond the sweep" small.err) == 0 ]] || fail "small: 500 kB is inside the sweep, no warning expected"
[[ $(wc -l <big.err) == 2 ]] || fail "big: two warning lines expected"

# The same link in plan: four 400 kB layers are inside the sweep; fused, the dynamic program times
# their 1.6 MB bucket, beyond it. report on the fused plan: its buckets' largest.
run four-plan plan --profile four.json --link shaper.json --period 1 -o four-plan.json
[[ $(count "beyond the sweep" four-plan.err) == 0 ]] || fail "plan unfused: no layer is beyond the sweep"
run four-fused plan --profile four.json --link shaper.json --period 1 --fuse-buckets -o four-fused.json
[[ $(count "all-reduces up to 1600000 bytes are beyond the sweep" four-fused.err) == 1 ]] ||
  fail "plan --fuse-buckets: expected the whole model's 1600000 bytes"
run four-report report four-fused.json --profile four.json --link shaper.json
[[ $(count "R^2 0.418" four-report.err) == 1 ]] || fail "report: expected the poor-fit warning"
# ddp on the link alone: the first bucket closes at >= 1 MiB, three layers (1.2 MB), then one.
run four-ddp simulate --profile four.json --link shaper.json --strategy ddp --period 1 -o four-ddp.json
[[ $(count "all-reduces up to 1200000 bytes are beyond the sweep" four-ddp.err) == 1 ]] ||
  fail "ddp: expected its 1200000-byte bucket"

# A good link (R^2 1, sizes 1 MiB .. 16 MiB) and layers inside it: nothing on stderr.
run good simulate --profile "$cli/tiny_profile.json" --link "$cli/link_8workers.json" --strategy wfbp --period 1
[[ ! -s good.err ]] || fail "a good fit with every all-reduce inside the sweep should warn of nothing"

"$python" - <<'PY'
import json, sys

def fail(message):
    print("FAIL:", message)
    sys.exit(1)

link = json.load(open("shaper.json"))
largest = max(link["samples"], key=lambda s: s["size_bytes"])
n_max, t_max = largest["size_bytes"], largest["time_s"]

def sync_s(name):
    # ssgd, H = 1, one layer: period = F 1 ms + B 2 ms + U 0.5 ms + T(n).
    return json.load(open(name + "-result.json"))["period_s"] - 3.5e-3

big, mid, small = sync_s("big"), sync_s("mid"), sync_s("small")
# Beyond the sweep, at the largest size's algbw: T(n) = t_max x n / n_max (docs/link.md step 4).
for name, value, n in (("big", big, 3300000), ("mid", mid, 1572864)):
    expected = t_max * n / n_max
    if abs(value - expected) > 1e-9 * expected:
        fail(f"{name}: T({n}) = {value!r}, expected t_max x n / n_max = {expected!r}")
    print(f"ok T({n}) = {value:.6g} s = {n / n_max:.4f} x T(1 MiB)")
if not t_max < mid < big:
    fail(f"not rising: T(1 MiB) {t_max}, T(1.5 MiB) {mid}, T(3.3 MB) {big}")
# 500 kB lies between 256 KiB and 512 KiB: log-log between their times, below T(1 MiB).
times = {s["size_bytes"]: s["time_s"] for s in link["samples"]}
if not times[262144] < small < times[524288]:
    fail(f"T(500 kB) = {small} is not between its neighbours")
print("ok: rising through and past the sweep")
PY
echo "ok: link model and warnings"
