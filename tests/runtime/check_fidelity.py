#!/usr/bin/env python3
"""Checks and tables of tests/runtime/fidelity_cases.sh, from `syncplan compare --json` documents
(syncplan.compare/v1, docs/formats.md "Comparison") and profiles (SPEC section 3).

  check_fidelity.py profiles A.json B.json
      the step time (sum of forward_s, backward_s, update_s) of two profiles measured at once
  check_fidelity.py median-profile OUT.json PROFILE.json ...
      the first PROFILE with each layer's forward_s, backward_s and update_s replaced by their
      median over all the PROFILEs (the same model, measured in turn: one invocation's step moved
      by up to 20% from the next on the 2-core machine), without the spreads
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
  check_fidelity.py order NAME=PROFILE_COMPARE.json:OWN_COMPARE.json ...
      the schedules ordered by mean iteration, measured and predicted from the runs' compute, and
      Spearman's rank correlation of the two; fails when the orders differ
  check_fidelity.py steady PROFILE.json SKIP TRACE.json ...
      the compute of each run's iterations (the slower rank's forward, backward and update events)
      against the profile's step: iteration 0, iteration SKIP, the last, and the median from SKIP
      on (a steady state is one whose first and later iterations agree)
  check_fidelity.py shaped TOLERANCE H NAME=CLUSTER.json:LINK.json:COMPUTE.json ...
      runs over a shaped link (fidelity_cases.sh shaped): per schedule the measured mean iteration,
      its prediction from the cluster file and from the in-namespace link fit with their errors,
      the communication part (measured: the run minus the compute-only run of the same schedule on
      the unshaped loopback; predicted: the link fit's prediction minus the compute-only run's,
      COMPUTE.json's, made on the unshaped loopback's own link fit), the speedup over ssgd measured
      and predicted, and the rank
      correlation of the orders; fails when a mean iteration is further than TOLERANCE % from its
      prediction from the link fit

A LIMIT, TOLERANCE or SPEEDUP of `none` prints the same table and checks no time: the CTest
tests on a shared machine check the pipeline's logic with it, the scripts that print the
README's tables check times (docs/runtime.md section 7).

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


def median_profile(out_path, profile_paths):
    profiles = [load(path) for path in profile_paths]
    first = profiles[0]
    for other, path in zip(profiles[1:], profile_paths[1:]):
        if [layer["name"] for layer in other["layers"]] != [layer["name"] for layer in first["layers"]]:
            sys.exit(f"FAIL: {path} has other layers than {profile_paths[0]}")
    steps = ", ".join(f"{step_s(profile):.6f}" for profile in profiles)
    for i, layer in enumerate(first["layers"]):
        for key in ("forward_s", "backward_s", "update_s"):
            if layer.get(key) is not None:
                layer[key] = median([profile["layers"][i][key] for profile in profiles])
        for cat in ("forward", "backward", "update"):
            layer.pop(cat + "_spread", None)
    with open(out_path, "w") as f:
        json.dump(first, f, indent=1)
    print(f"profiles measured in turn: steps {steps} s; the per-layer medians' step {step_s(first):.6f} s")


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


def compute_per_iteration(trace_path):
    """{iteration: the slower rank's compute (forward + backward + update events), s} of a trace."""
    trace = load(trace_path)
    steps = {}
    for event in trace["traceEvents"] if isinstance(trace, dict) else trace:
        if event.get("ph") != "X" or event.get("cat") not in ("forward", "backward", "update"):
            continue
        ranks = steps.setdefault(event["args"]["iteration"], {})
        ranks[event["pid"]] = ranks.get(event["pid"], 0.0) + event["dur"] * 1e-6  # us -> s
    return {iteration: max(ranks.values()) for iteration, ranks in steps.items()}


def median(values):
    ordered = sorted(values)
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def steady(profile_path, skip, trace_paths):
    step = step_s(load(profile_path))
    print("| run | iteration 0 (s) | iteration %d (s) | last (s) | median from %d on (s) | median / profile step |"
          % (skip, skip))
    print("|---|---|---|---|---|---|")
    medians = []
    for path in trace_paths:
        compute = compute_per_iteration(path)
        later = [compute[i] for i in sorted(compute) if i >= skip]
        if not later or 0 not in compute:
            sys.exit(f"FAIL: {path} has no compute events of iteration 0 and from iteration {skip} on")
        medians.append(median(later))
        last = max(compute)
        print(f"| {path} | {compute[0]:.4f} | {compute.get(skip, float('nan')):.4f} | {compute[last]:.4f} | "
              f"{medians[-1]:.4f} | {medians[-1] / step:.2f} |")
    pooled = median(medians)
    print(f"profile step {step:.4f} s; the runs' median compute {pooled:.4f} s "
          f"({relative_error_percent(pooled, step):+.1f}% from the profile)")


def shaped(tolerance, period, arguments):
    rows = []
    for argument in arguments:
        name, _, paths = argument.partition("=")
        parts = paths.split(":")
        if len(parts) != 3:
            sys.exit(f"FAIL: {argument}: expected NAME=CLUSTER.json:LINK.json:COMPUTE.json")
        rows.append((name,) + tuple(one_pair(path) for path in parts))
    names = [row[0] for row in rows]
    if "ssgd" not in names:
        sys.exit("FAIL: no run named ssgd")
    print("| schedule | measured (s) | cluster file: predicted (s) | error | link fit: predicted (s) | error | "
          "communication measured (s) | predicted (s) | error | speedup over ssgd measured | predicted |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ssgd = rows[names.index("ssgd")]
    failed = []
    for name, cluster, link, compute in rows:
        measured = link["mean_measured_s"]
        comm_measured = measured - compute["mean_measured_s"]
        comm_predicted = link["mean_predicted_s"] - compute["mean_predicted_s"]
        link_error = relative_error_percent(measured, link["mean_predicted_s"])
        comm_error = relative_error_percent(comm_measured, comm_predicted) if comm_predicted > 0 else float("nan")
        print(f"| {name} | {measured:.4f} | {cluster['mean_predicted_s']:.4f} | "
              f"{relative_error_percent(measured, cluster['mean_predicted_s']):+.1f}% | {link['mean_predicted_s']:.4f} | "
              f"{link_error:+.1f}% | {comm_measured:.4f} | {comm_predicted:.4f} | {comm_error:+.1f}% | "
              f"{ssgd[2]['mean_measured_s'] / measured:.2f}x | {ssgd[2]['mean_predicted_s'] / link['mean_predicted_s']:.2f}x |")
        if tolerance is not None and abs(link_error) > tolerance:
            failed.append(f"{name}: the mean iteration {measured:.4f} s is {link_error:+.1f}% from its prediction "
                          f"from the link fit (tolerance {tolerance}%)")
    measured = [row[2]["mean_measured_s"] for row in rows]
    for way, index in (("cluster file", 1), ("link fit", 2)):
        predicted = [row[index]["mean_predicted_s"] for row in rows]
        print(f"rank correlation of the predicted ({way}) and measured order: {spearman(measured, predicted):.2f}")
    if failed:
        sys.exit("FAIL: " + "; ".join(failed))


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


def limit_of(text):
    """A percentage limit, or None for `none` (report only)."""
    return None if text == "none" else float(text)


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
        if limit is not None and abs(error) > limit:
            failed.append(f"{name}: the mean measured iteration {own['mean_measured_s']:.4f} s is {error:+.1f}% "
                          f"from the one predicted from the runs' compute, {own['mean_predicted_s']:.4f} s "
                          f"(limit {limit}%)")
    if failed:
        sys.exit("FAIL: " + "; ".join(failed))
    if limit is None:
        print("timing not checked (limit none): the table reports")
    else:
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
        if tolerance is not None and abs(error) > tolerance:
            failed.append(f"{name}'s measured period {measured:.4f} s is {error:+.1f}% from the predicted "
                          f"{from_run:.4f} s (tolerance {tolerance}%)")
    best = periods["best"]
    measured_speedup, predicted_speedup = ssgd[0] / best[0], ssgd[2] / best[2]
    kept = measured_speedup / predicted_speedup * 100
    required = "not checked" if speedup_percent is None else f"at least {speedup_percent}% required"
    print(f"best over ssgd: measured {measured_speedup:.2f}x, predicted {predicted_speedup:.2f}x from the runs' "
          f"compute ({ssgd[1] / best[1]:.2f}x from the profile): {kept:.0f}% of the predicted speedup kept "
          f"({required})")
    if speedup_percent is not None and kept < speedup_percent:
        failed.append(f"best's measured speedup {measured_speedup:.2f}x is {kept:.0f}% of the predicted "
                      f"{predicted_speedup:.2f}x (at least {speedup_percent}% required)")
    if failed:
        sys.exit("FAIL: " + "; ".join(failed))
    if tolerance is None and speedup_percent is None:
        print("timing not checked (tolerance and speedup none): the table reports")
    else:
        print(f"the plan's promise is kept: periods within {tolerance if tolerance is not None else 'any'}% of the DES, "
              f"speedup kept >= {speedup_percent if speedup_percent is not None else 'any'}%")


def ranks(values):
    """1-based ranks of `values` (ties get the mean of their ranks), as Spearman's rho uses them."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            result[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return result


def spearman(a, b):
    """Spearman's rank correlation: Pearson's correlation of the ranks; 1.0 for fewer than 2 values
    or when either side has no spread (all tied)."""
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    if n < 2:
        return 1.0
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va, vb = sum((x - ma) ** 2 for x in ra), sum((y - mb) ** 2 for y in rb)
    return 1.0 if va == 0 or vb == 0 else cov / (va * vb) ** 0.5


def order(arguments):
    runs = pairs(arguments)
    names = [name for name, _, _ in runs]
    measured = [own["mean_measured_s"] for _, _, own in runs]
    predicted = [own["mean_predicted_s"] for _, _, own in runs]
    measured_order = [names[i] for i in sorted(range(len(names)), key=lambda i: measured[i])]
    predicted_order = [names[i] for i in sorted(range(len(names)), key=lambda i: predicted[i])]
    rho = spearman(measured, predicted)
    print(f"fastest first: measured {', '.join(measured_order)}; predicted {', '.join(predicted_order)}; "
          f"Spearman's rank correlation {rho:.2f}")
    if measured_order != predicted_order:
        sys.exit("FAIL: the predicted order of the schedules is not the measured one")


def main(argv):
    if len(argv) >= 3 and argv[0] == "median-profile":
        median_profile(argv[1], argv[2:])
    elif len(argv) >= 5 and argv[0] == "trace-profile":
        trace_profile(argv[1], int(argv[2]), argv[3], argv[4:])
    elif len(argv) >= 3 and argv[0] == "profiles":
        profiles(argv[1], argv[2])
    elif len(argv) >= 3 and argv[0] == "fidelity":
        fidelity(limit_of(argv[1]), argv[2:])
    elif len(argv) >= 5 and argv[0] == "promise":
        promise(limit_of(argv[1]), limit_of(argv[2]), int(argv[3]), argv[4:])
    elif len(argv) >= 4 and argv[0] == "steady":
        steady(argv[1], int(argv[2]), argv[3:])
    elif len(argv) >= 4 and argv[0] == "shaped":
        shaped(limit_of(argv[1]), int(argv[2]), argv[3:])
    elif len(argv) >= 3 and argv[0] == "order":
        order(argv[1:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except (OSError, ValueError, KeyError, IndexError, TypeError, ZeroDivisionError) as error:
        # A missing or malformed input of this checker: one line, not a traceback.
        sys.exit(f"FAIL: check_fidelity.py {' '.join(sys.argv[1:2])}: {type(error).__name__}: {error}")
