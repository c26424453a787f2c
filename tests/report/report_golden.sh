#!/usr/bin/env bash
# The Gantt chart of DreamDDP's own H = 10 schedule of GPT-2 (the reference data beside the
# checkout, SPEC section 6): the chart's period must be expected.json's
# dreamddp_published_schedule_period_s (computed by an independent implementation) to 1e-9, and
# every SVG well-formed. Exit 77 (a skip) when the reference data is absent.
# usage: report_golden.sh SYNCPLAN SHARED_DATA_DIR WORKDIR
set -euo pipefail
syncplan=$1 shared=$2 work=$3
ref=$shared/dreamddp/gpt2-8workers-10gbit
if [[ ! -f $ref/expected.json ]]; then
  echo "SKIP: no reference data at $ref (../shared/data beside the checkout)"
  exit 77
fi
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$syncplan" import dreamddp --bp "$ref/bp.json" --comm "$ref/comm.json" --model gpt2 -o profile.json >/dev/null
"$syncplan" import dreamddp-schedule "$ref/dreamddp_schedule_H10.json" --profile profile.json -o plan.json >/dev/null
"$syncplan" report plan.json --profile profile.json --svg gantt.svg --html report.html
python3 "$here/check_pages.py" gantt.svg report.html
python3 - "$ref/expected.json" gantt.svg <<'PY'
import json, sys
import xml.etree.ElementTree as ET
expected = json.load(open(sys.argv[1]))["H10"]["dreamddp_published_schedule_period_s"]
drawn = float(ET.parse(sys.argv[2]).getroot().get("data-period-s"))
print(f"chart period {drawn!r} s, expected.json {expected!r} s")
sys.exit(0 if abs(drawn - expected) <= 1e-9 else 1)
PY
