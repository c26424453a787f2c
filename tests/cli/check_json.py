#!/usr/bin/env python3
"""Checks on the JSON files syncplan writes, for the CLI tests (tests/cli/CMakeLists.txt).

Every check prints what it compared and exits 1 with the first mismatches; numbers are compared
to 1e-9 relative, the tolerance of SPEC section 4's "reproducible by syncplan simulate --plan".

  check_json.py report REPORT.json [NAME=SECONDS]...      report shape; optional expected period_s
                                                           per strategy (or lower_bound_period_s)
  check_json.py plan PLAN.json ALGORITHM [LAYER=H,H]...   plan shape, algorithm, sync iterations
  check_json.py reproduces PLAN.json RESULT.json          result equals the plan's `predicted`
  check_json.py trace TRACE.json RESULT.json SYNCS        X events never overlap on one (pid, tid),
                                                           SYNCS all-reduces, all inside the period
  check_json.py profile PROFILE.json LAYER FIELD VALUE    one layer's field (a number or null)
  check_json.py golden REPORT.json EXPECTED.json BLOCK    report vs expected.json's block (e.g. H10)
  check_json.py golden-result RESULT.json EXPECTED.json BLOCK FIGURE
                                                           result's period_s vs one expected figure

Several checks run in one call when separated by "--and" (one interpreter start instead of many).
"""
import json
import math
import sys

TOLERANCE = 1e-9
STRATEGIES = ["ssgd", "wfbp", "flsgd", "plsgd-even", "dreamddp", "dp"]
US_PER_S = 1e6  # Chrome trace ts/dur are microseconds


class Mismatch(Exception):
    pass


def load(path):
    with open(path) as f:
        return json.load(f)


def close(actual, expected):
    scale = max(abs(actual), abs(expected))
    return scale == 0 or abs(actual - expected) <= TOLERANCE * scale


def require(condition, message):
    if not condition:
        raise Mismatch(message)


def require_close(what, actual, expected):
    require(isinstance(actual, (int, float)) and not isinstance(actual, bool),
            f"{what}: expected a number, got {actual!r}")
    require(close(actual, expected),
            f"{what}: got {actual!r}, expected {expected!r} (relative tolerance {TOLERANCE})")
    print(f"ok {what} = {actual!r} (expected {expected!r})")


def check_report(path, *expectations):
    report = load(path)
    strategies = report.get("strategies")
    require(isinstance(strategies, dict), f"{path}: 'strategies' is not an object")
    for name in STRATEGIES:
        entry = strategies.get(name)
        require(isinstance(entry, dict), f"{path}: strategies['{name}'] is missing or not an object")
        period = entry.get("period_s")
        require(isinstance(period, (int, float)) and math.isfinite(period) and period > 0,
                f"{path}: strategies['{name}']['period_s'] is {period!r}, expected a positive number")
    bound = report.get("lower_bound_period_s")
    require(isinstance(bound, (int, float)) and math.isfinite(bound),
            f"{path}: 'lower_bound_period_s' is {bound!r}")
    for name in STRATEGIES:
        require(strategies[name]["period_s"] >= bound * (1 - 1e-12),
                f"{path}: {name} period {strategies[name]['period_s']!r} beats the lower bound {bound!r}")
    print(f"ok {path}: strategies {', '.join(STRATEGIES)} and lower_bound_period_s {bound!r}")
    for expectation in expectations:
        name, value = expectation.split("=", 1)
        if name == "lower_bound_period_s":
            actual = bound
        elif name == "spec_lower_bound_s":
            actual = report["lower_bounds"]["spec_s"]
        else:
            actual = strategies[name]["period_s"]
        require_close(f"{path}: {name}", actual, float(value))


def check_plan(path, algorithm, *layers):
    plan = load(path)
    require(plan.get("format") == "syncplan.plan/v1", f"{path}: format is {plan.get('format')!r}")
    require(plan.get("algorithm") == algorithm, f"{path}: algorithm {plan.get('algorithm')!r}, expected {algorithm!r}")
    by_name = {layer["name"]: layer["sync_iterations"] for layer in plan["layers"]}
    for expectation in layers:
        name, iterations = expectation.split("=", 1)
        wanted = [int(h) for h in iterations.split(",")]
        require(by_name.get(name) == wanted, f"{path}: layer '{name}' syncs in {by_name.get(name)!r}, expected {wanted!r}")
    print(f"ok {path}: algorithm {algorithm}, layers {by_name}")


def check_reproduces(plan_path, result_path):
    predicted = load(plan_path)["predicted"]
    result = load(result_path)
    require_close("period_s", result["period_s"], predicted["period_s"])
    require(len(result["iteration_s"]) == len(predicted["iteration_s"]), "iteration counts differ")
    for h, (actual, expected) in enumerate(zip(result["iteration_s"], predicted["iteration_s"])):
        require_close(f"iteration_s[{h}]", actual, expected)
    for h, (actual, expected) in enumerate(zip(result["iteration_wait_s"], predicted["wait_s"])):
        require_close(f"wait_s[{h}]", actual, expected)


def check_trace(trace_path, result_path, syncs):
    events = load(trace_path)["traceEvents"]
    period_us = load(result_path)["period_s"] * US_PER_S
    slack_us = 1e-9 * max(period_us, 1.0)  # rounding of sums of microseconds
    spans = [e for e in events if e.get("ph") == "X"]
    require(spans, f"{trace_path}: no complete ('X') events")
    streams = {}
    for e in spans:
        require(e["dur"] >= 0, f"{trace_path}: negative duration in {e}")
        require(e["ts"] >= -slack_us and e["ts"] + e["dur"] <= period_us + slack_us,
                f"{trace_path}: event outside the period [0, {period_us}] us: {e}")
        streams.setdefault((e["pid"], e["tid"]), []).append(e)
    for key, stream in sorted(streams.items()):
        stream.sort(key=lambda e: e["ts"])
        for before, after in zip(stream, stream[1:]):
            require(after["ts"] >= before["ts"] + before["dur"] - slack_us,
                    f"{trace_path}: (pid, tid) {key}: '{before['name']}' [{before['ts']}, "
                    f"{before['ts'] + before['dur']}] us overlaps '{after['name']}' starting at {after['ts']} us")
        print(f"ok (pid, tid) {key}: {len(stream)} events, none overlapping")
    all_reduces = [e for e in spans if e.get("cat") == "sync"]
    require(len(all_reduces) == int(syncs), f"{trace_path}: {len(all_reduces)} all-reduces, expected {syncs}")
    print(f"ok {len(all_reduces)} all-reduces inside the period of {period_us} us")


def check_profile(path, layer_name, field, value):
    profile = load(path)
    require(profile.get("format") == "syncplan.profile/v1", f"{path}: format is {profile.get('format')!r}")
    layers = {layer["name"]: layer for layer in profile["layers"]}
    require(layer_name in layers, f"{path}: no layer '{layer_name}'")
    actual = layers[layer_name].get(field)
    if value == "null":
        require(actual is None, f"{path}: layer '{layer_name}' {field} is {actual!r}, expected null")
        print(f"ok {path}: layer '{layer_name}' {field} is null")
    else:
        require_close(f"{path}: layer '{layer_name}' {field}", actual, float(value))


def check_golden(report_path, expected_path, block):
    report = load(report_path)
    expected = load(expected_path)[block]
    period = expected["period"]
    require(report["period"] == period, f"{report_path}: period {report['period']}, expected {period}")
    strategies = report["strategies"]
    require_close("ssgd period_s (H x ssgd_nooverlap_iteration_s)", strategies["ssgd"]["period_s"],
                  period * expected["ssgd_nooverlap_iteration_s"])
    require_close("wfbp period_s (H x wfbp_iteration_s)", strategies["wfbp"]["period_s"],
                  period * expected["wfbp_iteration_s"])
    require_close("flsgd period_s", strategies["flsgd"]["period_s"], expected["flsgd_period_s"])
    require_close("plsgd-even period_s", strategies["plsgd-even"]["period_s"], expected["plsgd_even_period_s"])
    require_close("dp period_s", strategies["dp"]["period_s"], expected["dp_contiguous_period_s"])
    require_close("lower_bounds.spec_s", report["lower_bounds"]["spec_s"], expected["lower_bound_period_s"])
    require(report["lower_bound_period_s"] >= report["lower_bounds"]["spec_s"],
            f"{report_path}: the tightest bound is below SPEC's")


def check_golden_result(result_path, expected_path, block, figure):
    require_close(f"{result_path}: period_s vs {block}.{figure}", load(result_path)["period_s"],
                  load(expected_path)[block][figure])


CHECKS = {
    "report": check_report,
    "plan": check_plan,
    "reproduces": check_reproduces,
    "trace": check_trace,
    "profile": check_profile,
    "golden": check_golden,
    "golden-result": check_golden_result,
}

def split_checks(arguments):
    checks = [[]]
    for argument in arguments:
        if argument == "--and":
            checks.append([])
        else:
            checks[-1].append(argument)
    return checks


if __name__ == "__main__":
    checks = split_checks(sys.argv[1:])
    if any(not check or check[0] not in CHECKS for check in checks):
        sys.exit(__doc__)
    for name, *arguments in checks:
        try:
            CHECKS[name](*arguments)
        except (Mismatch, KeyError, TypeError, ValueError, OSError) as error:
            print(f"FAIL: {name} {' '.join(arguments)}: {type(error).__name__}: {error}")
            sys.exit(1)
