#!/usr/bin/env bash
# `syncplan report` end to end (docs/report.md): the Gantt chart and page of a hand-written plan
# checked against `simulate` (another run of the period model) and for their SVG; then a plan
# made by `plan`, with its report's comparison and a cluster's all-reduce times.
# usage: report_cases.sh SYNCPLAN REPORT_DATA CLI_DATA CLUSTER WORKDIR
set -euo pipefail
syncplan=$1 data=$2 cli_data=$3 cluster=$4 work=$5
check="python3 $(cd "$(dirname "$0")" && pwd)/check_pages.py"
rm -rf "$work" && mkdir -p "$work" && cd "$work"
profile=$cli_data/tiny_profile.json

# The hand-written plan: per iteration forward, 3 backward, wait, update (both iterations wait,
# test_report.cpp derives 0.001 s and 0.0005 s), 12 compute blocks; 3 all-reduces.
"$syncplan" report "$data/tiny_plan.json" --profile "$profile" --svg gantt.svg --html report.html | tee out.txt
grep -q "gantt chart: 12 compute blocks, 3 all-reduces" out.txt
"$syncplan" simulate --profile "$profile" --plan "$data/tiny_plan.json" -o result.json >/dev/null
$check --gantt-blocks 12,3 --result result.json gantt.svg report.html
grep -q "0.009300" report.html  # the period, 0.0049 + 0.0044 s (test_report.cpp)

# A planned plan with its report, on a cluster's all-reduce times.
"$syncplan" plan --profile "$profile" --period 3 -o plan.json --report plan-report.json >/dev/null
"$syncplan" report plan.json --profile "$profile" --report plan-report.json --cluster "$cluster" \
  --svg cluster-gantt.svg --html cluster-report.html | tee out.txt
grep -q "all-reduce times: the cost model of" out.txt
$check cluster-gantt.svg cluster-report.html
for strategy in ssgd wfbp flsgd plsgd-even dreamddp dp; do
  grep -q "<td>$strategy</td>" cluster-report.html || { echo "FAIL: $strategy missing from the comparison"; exit 1; }
done
echo "ok: report pages checked"
