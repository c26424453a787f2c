"""Checks what tools/torch-example.sh wrote ("the example's loss falls for every
schedule"; its table and loss curves exist): usage check_example.py OUT_DIR.

Every schedule's row in table.md has a finite measured and predicted time and a loss that fell from the
first to the last iteration (rank 0), and loss.svg draws one series per schedule, named as in the table.
The times are recorded, not asserted: the run is short and shares the machine (docs/torch.md)."""

import math
import re
import sys

SCHEDULES = ["ssgd", "flsgd", "plsgd-even", "plan", "delayed"]


def main(out):
    failures = []
    rows = {}
    for line in open(f"{out}/table.md"):
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells and cells[0] in SCHEDULES:
            rows[cells[0]] = cells
    if sorted(rows) != sorted(SCHEDULES):
        failures.append(f"table.md rows {sorted(rows)}, expected {sorted(SCHEDULES)}")
    for name, cells in rows.items():
        measured, predicted = float(cells[1]), float(cells[2])
        if not (math.isfinite(measured) and measured > 0 and math.isfinite(predicted) and predicted > 0):
            failures.append(f"{name}: measured {cells[1]}, predicted {cells[2]}")
        first, last = (float(x) for x in cells[6].split("->"))
        if not last < first:
            failures.append(f"{name}: the loss did not fall ({cells[6]})")
    svg = open(f"{out}/loss.svg").read()
    series = re.findall(r'<g class="series" data-series="([^"]+)">', svg)
    if series != SCHEDULES:
        failures.append(f"loss.svg series {series}, expected {SCHEDULES}")
    for failure in failures:
        print("FAIL:", failure)
    print(f"example: {len(rows)} schedules, {'FAILED' if failures else 'every loss fell, loss.svg has every schedule'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
