#!/usr/bin/env python3
"""Checks a `syncplan whatif` CSV against single runs: for a few points of every strategy it writes
the point's cluster file (the base with workers and the inter-node link edited), runs `syncplan
simulate --cluster` (a strategy) or `syncplan plan` then `simulate --plan` (a plan) on the same
profile, and compares period_s, iteration_s and the speedups with the row to 1e-9 relative. An
automatic period is checked against `plan --algorithm dp --period auto --max-overhead 0.05`.
The JSON's points must be the CSV's rows.

usage: check_single_runs.py SYNCPLAN SWEEP.csv SWEEP.json PROFILE.json BASE_CLUSTER.json"""
import csv
import json
import math
import subprocess
import sys


def run(*args):
    subprocess.run(list(args), check=True, stdout=subprocess.DEVNULL)


def close(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def main():
    syncplan, csv_path, json_path, profile, base_path = sys.argv[1:6]
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    with open(json_path) as f:
        document = json.load(f)
    failures = []
    if document["format"] != "syncplan.whatif/v1" or len(document["points"]) != len(rows):
        failures.append("the JSON's points are not the CSV's rows")
    for row, point in zip(rows, document["points"]):
        if row["period_s"] and not close(float(row["period_s"]), point["period_s"]):
            failures.append(f"point {row['index']}: CSV period_s {row['period_s']} != JSON {point['period_s']}")
    with open(base_path) as f:
        base = json.load(f)
    settings = {}
    for row in rows:
        settings.setdefault((row["workers"], row["bandwidth_Gbps"], row["period_requested"]), []).append(row)
    checked = 0
    for number, ((workers, bandwidth, requested), group) in enumerate(settings.items()):
        cluster = dict(base, workers=int(workers), inter_node=dict(base["inter_node"], bandwidth_Gbps=float(bandwidth)))
        cluster_path = f"point{number}.json"
        with open(cluster_path, "w") as f:
            json.dump(cluster, f)
        if requested == "auto":
            run(syncplan, "plan", "--profile", profile, "--cluster", cluster_path, "--sync-time", "model",
                "--algorithm", "dp", "--period", "auto", "--max-overhead", "0.05", "-o", "auto.json")
            with open("auto.json") as f:
                period = json.load(f)["period"]
        else:
            period = int(requested)
        periods = {}
        # Every strategy at the settings of 8 workers, ssgd and flsgd (the baselines) and one plan elsewhere.
        for row in group:
            if row["status"] != "ok":
                failures.append(f"point {row['index']}: {row['error']}")
                continue
            if int(row["period"]) != period:
                failures.append(f"point {row['index']}: period {row['period']}, plan --period auto gives {period}")
            strategy = row["strategy"]
            if workers != "8" and strategy not in ("ssgd", "flsgd", "dreamddp"):
                continue
            common = ["--profile", profile, "--cluster", cluster_path, "--sync-time", "model", "-o", "result.json"]
            if strategy in ("ssgd", "flsgd", "ddp", "mgwfbp"):
                run(syncplan, "simulate", "--strategy", strategy, "--period", str(period), *common)
            else:
                # best: `plan` and `plan --fuse-buckets --fusion after` (alpha from the cluster), each
                # simulated; the shorter period is the row's (docs/whatif.md).
                results = []
                for fuse in ([], ["--fuse-buckets", "--fusion", "after"]) if strategy == "best" else ([],):
                    run(syncplan, "plan", "--profile", profile, "--cluster", cluster_path, "--sync-time", "model",
                        "--algorithm", strategy, "--period", str(period), "--search-rounds", "3",
                        "--time-limit-s", "600", *fuse, "-o", "plan.json")
                    run(syncplan, "simulate", "--plan", "plan.json", *common)
                    with open("result.json") as f:
                        results.append(json.load(f))
                with open("result.json", "w") as f:
                    json.dump(min(results, key=lambda r: r["period_s"]), f)
            with open("result.json") as f:
                result = json.load(f)
            periods[strategy] = result["period_s"]
            iteration_s = result["total_s"] / result["iterations"]
            for name, expected in (("period_s", result["period_s"]), ("iteration_s", iteration_s)):
                if not close(float(row[name]), expected):
                    failures.append(f"point {row['index']} ({strategy}): {name} {row[name]}, simulate gives {expected}")
            checked += 1
        for row in group:
            if row["strategy"] in periods and "ssgd" in periods and "flsgd" in periods:
                for base_name in ("ssgd", "flsgd"):
                    expected = periods[base_name] / periods[row["strategy"]]
                    if not close(float(row[f"speedup_vs_{base_name}"]), expected):
                        failures.append(f"point {row['index']}: speedup_vs_{base_name} {row[f'speedup_vs_{base_name}']}"
                                        f", single runs give {expected}")
    for failure in failures[:20]:
        print("FAIL:", failure)
    if failures or checked == 0:
        return 1
    print(f"ok: {checked} points equal their single plan/simulate runs to 1e-9")
    return 0


if __name__ == "__main__":
    sys.exit(main())
