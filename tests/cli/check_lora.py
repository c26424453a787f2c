#!/usr/bin/env python3
"""Checks on frozen layers for the LoRA CLI cases (lora_cases.sh); numbers to 1e-9 relative.

  check_lora.py frozen PROFILE.json LAYERS FROZEN     layer and frozen counts; frozen layers have a
                                                      backward time and no sync_s, the others sync_s
  check_lora.py period RESULT.json SECONDS            the result's period_s (DES: total_s of one period)
  check_lora.py not-below FROZEN.json DROP.json       period_s of the first >= the second's (results),
                                                      or every strategy's (reports)
  check_lora.py no-sync TRACE.json PROFILE.json       no all-reduce event names a frozen layer
"""
import json
import sys

TOLERANCE = 1e-9


def load(path):
    with open(path) as f:
        return json.load(f)


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def period_of(result):
    # One period is simulated by default, so the DES's total_s is its period when period_s is absent.
    return result["period_s"] if "period_s" in result else result["total_s"]


def check_frozen(path, layers, frozen):
    profile = load(path)
    entries = profile["layers"]
    marked = [layer for layer in entries if layer.get("frozen") is True]
    if len(entries) != int(layers) or len(marked) != int(frozen):
        fail(f"{path}: {len(entries)} layers, {len(marked)} frozen; expected {layers} and {frozen}")
    for layer in entries:
        if layer.get("frozen") is True and (layer.get("sync_s") is not None or layer.get("backward_s") is None):
            fail(f"{path}: frozen layer {layer['name']} has sync_s {layer.get('sync_s')!r}, "
                 f"backward_s {layer.get('backward_s')!r}")
        if "frozen" not in layer and layer.get("sync_s") is None:
            fail(f"{path}: layer {layer['name']} is not frozen but has no sync_s")
        if layer.get("frozen") is False:
            fail(f"{path}: layer {layer['name']}: frozen false is written (only true is)")
    print(f"ok {path}: {layers} layers, {frozen} frozen")


def check_period(path, seconds):
    actual, expected = period_of(load(path)), float(seconds)
    if abs(actual - expected) > TOLERANCE * max(abs(actual), abs(expected)):
        fail(f"{path}: period_s {actual!r}, expected {expected!r}")
    print(f"ok {path}: period_s {actual}")


def check_not_below(frozen_path, drop_path):
    frozen, drop = load(frozen_path), load(drop_path)
    if "strategies" in frozen:
        pairs = [(name, frozen["strategies"][name]["period_s"], drop["strategies"][name]["period_s"])
                 for name in frozen["strategies"]]
    else:
        pairs = [("period_s", period_of(frozen), period_of(drop))]
    for name, above, below in pairs:
        if above < below * (1 - TOLERANCE):
            fail(f"{name}: frozen {above!r} s is below drop {below!r} s ({frozen_path}, {drop_path})")
        print(f"ok {name}: frozen {above} s >= drop {below} s")


def check_no_sync(trace_path, profile_path):
    frozen = {layer["name"] for layer in load(profile_path)["layers"] if layer.get("frozen")}
    events = load(trace_path)["traceEvents"]
    # The period model's link events are "sync", the DES's "allreduce".
    syncs = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("sync", "allreduce")]
    for event in syncs:
        args = event.get("args", {})
        named = set(args.get("layers", [])) | ({args["layer"]} if "layer" in args else set())
        if named & frozen:
            fail(f"{trace_path}: all-reduce '{event.get('name')}' syncs frozen {sorted(named & frozen)}")
    if not syncs:
        fail(f"{trace_path}: no all-reduce at all")
    print(f"ok {trace_path}: {len(syncs)} all-reduces, none of the {len(frozen)} frozen layers")


CHECKS = {"frozen": check_frozen, "period": check_period, "not-below": check_not_below, "no-sync": check_no_sync}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in CHECKS:
        sys.exit(__doc__)
    CHECKS[sys.argv[1]](*sys.argv[2:])
