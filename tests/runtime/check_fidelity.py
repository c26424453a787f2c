#!/usr/bin/env python3
"""Checks and tables of tests/runtime/fidelity_cases.sh, from `syncplan compare --json` documents
(syncplan.compare/v1, docs/formats.md "Comparison") and profiles (SPEC section 3).

  check_fidelity.py profiles A.json B.json
      the step time (sum of forward_s, backward_s, update_s) of two profiles measured at once
  check_fidelity.py trace-profile PROFILE.json SKIP OUT.json TRACE.json ...
      PROFILE with each layer's forward_s and backward_s replaced by the runs' own compute events
      in the TRACEs (measured traces, docs/formats.md): in each iteration >= SKIP of each run the
      slower rank's (more compute in all), averaged over all those iterations; update_s likewise,
      shared by parameter count as the cpu profile does. The mean, not the median: on a shared
      machine a rank is now and then descheduled in the middle of a layer, and the period pays
      those pauses. The profile's spreads are left out (they are of the profiler's repeats).
  check_fidelity.py fidelity LIMIT NAME=PROFILE_COMPARE.json:OWN_COMPARE.json ...
      per run: the mean measured iteration, the DES's from the cpu profile and from the run's own
      compute (trace-profile) with their MAPEs, and the spread (the MAPE of predicting every
      iteration by the measured mean: the floor the run's own variation sets); fails when the mean measured iteration is more
      than LIMIT % from the one predicted from the runs' compute
  check_fidelity.py promise TOLERANCE SPEEDUP H NAME=PROFILE_COMPARE.json:OWN_COMPARE.json ...
      per run: the measured and predicted periods (H x the mean iteration over the compared
      iterations, whole periods) and the errors (measured - predicted) / predicted; fails when the
      |error| against the prediction from the runs' compute > TOLERANCE %, or when the measured
      speedup of `best` over `ssgd` is below SPEEDUP % of the predicted one

A COMPARE.json may hold several pairs: runs of one schedule against one prediction, pooled.
Tables are printed as Markdown (the README's tables come from here, tools/runtime-fidelity.sh).
Exit 1 with a line saying what failed.
"""
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def step_s(profile):
    return sum((layer.get(key) or 0.0) for layer in profile["layers"]
               for key in ("forward_s", "backward_s", "update_s"))


def trace_profile(profile_path, skip, out_path, trace_paths):
    profile = load(profile_path)
    slowest = []  # per run and iteration >= skip, the slower rank's {(cat, layer or None): seconds}
    for trace_path in trace_paths:
        trace = load(trace_path)
        steps = {}  # iteration -> rank -> times
        for event in trace["traceEvents"] if isinstance(trace, dict) else trace:
            if event.get("ph") != "X" or event.get("cat") not in ("forward", "backward", "update"):
                continue
            if event["args"]["iteration"] < skip:
                continue
            times = steps.setdefault(event["args"]["iteration"], {}).setdefault(event["pid"], {})
            key = (event["cat"], event["args"].get("layer"))
            times[key] = times.get(key, 0.0) + event["dur"] * 1e-6  # us -> s
        if not steps:
            sys.exit(f"FAIL: {trace_path} has no compute event from iteration {skip} on")
        # The ranks meet at every sync, so an iteration lasts as long as its slower rank's compute
        # (plus what it waits for the link).
        slowest += [max(ranks.values(), key=lambda times: sum(times.values())) for ranks in steps.values()]

    def mean_s(key):
        if any(key not in times for times in slowest):
            sys.exit(f"FAIL: an iteration of the traces lacks a {key[0]} event of {key[1] or 'the optimizer'}")
        return sum(times[key] for times in slowest) / len(slowest)

    total_parameters = sum(layer["param_count"] for layer in profile["layers"])
    update_s = mean_s(("update", None))
    for layer in profile["layers"]:
        for cat in ("forward", "backward"):
            layer[cat + "_s"] = mean_s((cat, layer["name"]))
        layer["update_s"] = update_s * layer["param_count"] / total_parameters
        # The profiler's spreads are of its repeats around its medians, not of these runs' means.
        for cat in ("forward", "backward", "update"):
            layer.pop(cat + "_spread", None)
    with open(out_path, "w") as f:
        json.dump(profile, f, indent=1)


def one_pair(path):
    """The pairs of a compare document (one per run of a schedule, all against one prediction),
    pooled: their compared iterations, the mean predicted and measured iteration over all of them,
    and the MAPE over all of them."""
    document = load(path)
    if document.get("format") != "syncplan.compare/v1" or not document["pairs"]:
        sys.exit(f"FAIL: {path} is not a syncplan.compare/v1 document")
    iterations = [entry for pair in document["pairs"] for entry in pair["iterations"] if not entry["skipped"]]
    n = len(iterations)
    return {"compared_iterations": n, "runs": len(document["pairs"]),
            "mean_predicted_s": sum(entry["predicted_s"] for entry in iterations) / n,
            "mean_measured_s": sum(entry["measured_s"] for entry in iterations) / n,
            "mape_percent": 100 * sum(abs(entry["error_s"]) / entry["measured_s"] for entry in iterations) / n,
            "iterations": iterations}


def pairs(arguments):
    """NAME=PROFILE_COMPARE.json:OWN_COMPARE.json -> [(NAME, profile's pair, run compute's pair)]."""
    runs = []
    for argument in arguments:
        name, _, paths = argument.partition("=")
        profile_path, _, own_path = paths.partition(":")
        runs.append((name, one_pair(profile_path), one_pair(own_path)))
    return runs


def profiles(a, b):
    step_a, step_b = step_s(load(a)), step_s(load(b))
    update = sum((layer.get("update_s") or 0.0) for layer in load(a)["layers"])
    print(f"profiles measured at once: step {step_a:.6f} s and {step_b:.6f} s "
          f"({abs(step_a - step_b) / max(step_a, step_b) * 100:.1f}% apart); the optimizer step "
          f"{update:.6f} s ({update / step_a * 100:.1f}% of the first)")
    if not update > 0:
        sys.exit("FAIL: the cpu profile has no update_s")


def relative_error_percent(measured, predicted):
    return (measured - predicted) / predicted * 100


def spread_percent(pair):
    """The MAPE of predicting every compared iteration by the measured mean: what the iterations'
    own variation leaves to a prediction that gives each iteration of a schedule one time."""
    measured = [entry["measured_s"] for entry in pair["iterations"]]
    mean_s = sum(measured) / len(measured)
    return 100 * sum(abs(m - mean_s) / m for m in measured) / len(measured)


def fidelity(limit, arguments):
    print("| strategy | iterations | measured mean (s) | spread | profile: predicted (s) | MAPE | "
          "runs' compute: predicted (s) | MAPE | error of the mean |")
    print("|---|---|---|---|---|---|---|---|---|")
    failed = []
    for name, profile, own in pairs(arguments):
        error = relative_error_percent(own["mean_measured_s"], own["mean_predicted_s"])
        print(f"| {name} | {own['compared_iterations']} | {own['mean_measured_s']:.4f} | {spread_percent(own):.1f}% | "
              f"{profile['mean_predicted_s']:.4f} | {profile['mape_percent']:.1f}% | "
              f"{own['mean_predicted_s']:.4f} | {own['mape_percent']:.1f}% | {error:+.1f}% |")
        if abs(error) > limit:
            failed.append(f"{name}: the mean measured iteration {own['mean_measured_s']:.4f} s is {error:+.1f}% "
                          f"from the one predicted from the runs' compute, {own['mean_predicted_s']:.4f} s "
                          f"(limit {limit}%)")
    if failed:
        sys.exit("FAIL: " + "; ".join(failed))
    print(f"every mean within {limit}% of its prediction from the runs' compute")


def promise(tolerance, speedup_percent, period, arguments):
    runs = {name: (profile, own) for name, profile, own in pairs(arguments)}
    for required in ("ssgd", "best"):
        if required not in runs:
            sys.exit(f"FAIL: no run named {required}")
    periods = {}  # name -> (measured, predicted from the profile, predicted from the runs' compute)
    for name, (profile, own) in runs.items():
        if own["compared_iterations"] % period != 0:
            sys.exit(f"FAIL: {name}: {own['compared_iterations']} iterations compared, not whole periods of {period}")
        periods[name] = tuple(period * value for value in
                              (own["mean_measured_s"], profile["mean_predicted_s"], own["mean_predicted_s"]))
    print("| strategy | measured period (s) | profile: predicted (s) | error | runs' compute: predicted (s) | "
          "error | measured speedup | predicted speedup (profile, runs' compute) |")
    print("|---|---|---|---|---|---|---|---|")
    failed = []
    ssgd = periods["ssgd"]
    for name, (measured, from_profile, from_run) in periods.items():
        error = relative_error_percent(measured, from_run)
        print(f"| {name} | {measured:.4f} | {from_profile:.4f} | {relative_error_percent(measured, from_profile):+.1f}% | "
              f"{from_run:.4f} | {error:+.1f}% | {ssgd[0] / measured:.2f}x | "
              f"{ssgd[1] / from_profile:.2f}x, {ssgd[2] / from_run:.2f}x |")
        if abs(error) > tolerance:
            failed.append(f"{name}'s measured period {measured:.4f} s is {error:+.1f}% from the predicted "
                          f"{from_run:.4f} s (tolerance {tolerance}%)")
    best = periods["best"]
    measured_speedup, predicted_speedup = ssgd[0] / best[0], ssgd[2] / best[2]
    kept = measured_speedup / predicted_speedup * 100
    print(f"best over ssgd: measured {measured_speedup:.2f}x, predicted {predicted_speedup:.2f}x from the runs' "
          f"compute ({ssgd[1] / best[1]:.2f}x from the profile): {kept:.0f}% of the predicted speedup kept "
          f"(at least {speedup_percent}% required)")
    if kept < speedup_percent:
        failed.append(f"best's measured speedup {measured_speedup:.2f}x is {kept:.0f}% of the predicted "
                      f"{predicted_speedup:.2f}x (at least {speedup_percent}% required)")
    if failed:
        sys.exit("FAIL: " + "; ".join(failed))
    print(f"the plan's promise is kept: every period within {tolerance}% of the DES, speedup kept >= {speedup_percent}%")


def main(argv):
    if len(argv) >= 5 and argv[0] == "trace-profile":
        trace_profile(argv[1], int(argv[2]), argv[3], argv[4:])
    elif len(argv) >= 3 and argv[0] == "profiles":
        profiles(argv[1], argv[2])
    elif len(argv) >= 3 and argv[0] == "fidelity":
        fidelity(float(argv[1]), argv[2:])
    elif len(argv) >= 5 and argv[0] == "promise":
        promise(float(argv[1]), float(argv[2]), int(argv[3]), argv[4:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
