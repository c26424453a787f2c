#!/usr/bin/env bash
# tools/shaped-link.sh without a namespace (docs/cluster.md "A shaped loopback"): the cluster file
# it prints (--cluster-only) and its refusals of bad usage (exit 2, one line naming the option).
# usage: shaped_link_cases.sh SYNCPLAN WORKDIR
set -euo pipefail
syncplan="$1" workdir="$2"
root="$(cd "$(dirname "$0")/../.." && pwd)"
rm -rf "$workdir" && mkdir -p "$workdir" && cd "$workdir"
script="$root/tools/shaped-link.sh"

# 200mbit for 4 ranks: R/p = 200e6 / 4 = 5e7 bit/s = 0.05 Gbit/s per rank; 1gibit (2^30 bit/s) for 2
# ranks: 1073741824 / 2 / 1e9 = 0.536870912 Gbit/s; 10mbps is bytes: 8e7 bit/s / 2 = 0.04 Gbit/s.
for spec in "4 200mbit 0.05" "2 1gibit 0.536870912" "2 10mbps 0.04"; do
  read -r ranks rate expected <<<"$spec"
  "$script" --ranks "$ranks" --cluster-only "$rate" >c.json
  python3 - "$ranks" "$expected" <<'PY'
import json, sys
c = json.load(open("c.json"))
ranks, expected = int(sys.argv[1]), float(sys.argv[2])
assert c["workers"] == ranks and c["workers_per_node"] == 1 and c["allreduce"] == "ring", c
for key in ("intra_node", "inter_node"):
    assert abs(c[key]["bandwidth_Gbps"] - expected) <= 1e-9 * expected, (key, c[key], expected)
PY
  # syncplan reads it: one layer of 1e6 bytes on the ring, the DES runs.
  echo '{"format": "syncplan.profile/v1", "model": "m", "source": "estimated:hand", "layers": [
    {"name": "a", "param_count": 250000, "param_bytes": 1000000, "forward_s": 0, "backward_s": 0}]}' >p.json
  "$syncplan" simulate --profile p.json --cluster c.json --strategy ssgd --period 1 --iterations 1 -o r.json >/dev/null
  echo "ok: --ranks $ranks $rate: $expected Gbit/s per rank, read by simulate"
done

# Bad usage: exit 2, one line on stderr naming what was wrong, nothing written.
refused() {  # refused EXPECTED ARGS...
  local expected="$1"; shift
  local status=0
  "$script" "$@" >out.txt 2>err.txt || status=$?
  [[ $status == 2 ]] || { cat err.txt; echo "FAIL: shaped-link.sh $* exited $status, not 2"; exit 1; }
  [[ $(wc -l <err.txt) == 1 ]] || { cat err.txt; echo "FAIL: shaped-link.sh $*: not one line"; exit 1; }
  grep -qF -- "$expected" err.txt || { cat err.txt; echo "FAIL: shaped-link.sh $*: no '$expected'"; exit 1; }
  echo "ok: refused $*: $(cat err.txt)"
}
refused "no RATE"
refused "RATE: expected tc's syntax" abc -- true
refused "RATE: expected tc's syntax" 0mbit -- true
refused "expected a positive rate" -5mbit -- true
refused "expected 8kbit..1tbit" 1bit -- true
refused "expected 8kbit..1tbit" 99999tbit -- true
refused "at least 1kbit per rank" --ranks 16 --cluster-only 8kbit
refused "--ranks: expected a whole number 1..1024, got '010'" --ranks 010 --cluster-only 1mbit
refused "--ranks: expected a whole number 1..1024, got '0'" --ranks 0 --cluster-only 1mbit
refused "--latency-us: expected a number 0..1e7" --latency-us 99999999999 --cluster-only 1mbit
refused "no COMMAND after --" 1mbit
refused "--cluster-only takes no COMMAND" --cluster-only 1mbit -- echo hi
refused "a second RATE" 1mbit 2mbit
refused "unknown option '--bogus'" --bogus 1mbit -- true
refused "--cluster $PWD/nodir/c.json: cannot write" --cluster "$PWD/nodir/c.json" 1mbit -- true
[[ ! -e nodir ]] || { echo "FAIL: a refused run made nodir"; exit 1; }
echo "shaped-link.sh: cluster files and refusals as derived"
