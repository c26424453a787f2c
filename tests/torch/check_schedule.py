"""Checks syncplan.schedule (python/syncplan/schedule.py) on hand-made layer lists: python3 only, no torch.

usage: check_schedule.py

Every expected schedule is derived by hand in a comment (SPEC section 5's table, docs/runtime.md
section 1): backprop index j = L - 1 - i of forward index i; one bucket per layer; only layers with
an all-reduce of their own (trainable parameters of their own) in a bucket.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from syncplan.errors import PlanError  # noqa: E402 (after the path is set)
from syncplan.schedule import (AFTER_BACKWARD, AFTER_STEP, GRADIENTS, LAYER_DONE, PARAMETERS, LayerInfo,  # noqa: E402
                               plan_schedule, strategy_schedule)

FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print(f"FAIL: {message}")


def shape(schedule):
    return [[(b.layers, b.launch, b.delay) for b in buckets] for buckets in schedule.iterations]


# Five layers in forward order: emb (owns the tied weight), drop (no parameters), fc1, fc2, head
# (tied to emb: no parameters of its own). Backprop order: head, fc2, fc1, drop, emb (j = 0..4).
LAYERS = [LayerInfo("emb", True), LayerInfo("drop", False), LayerInfo("fc1", True), LayerInfo("fc2", True),
          LayerInfo("head", False, tied_to="emb")]


def strategies():
    # ssgd, H = 2: every iteration every synced layer, backprop order, after the backprop (gradients).
    ssgd = strategy_schedule(LAYERS, "ssgd", 2)
    every = [(["fc2"], AFTER_BACKWARD, 0), (["fc1"], AFTER_BACKWARD, 0), (["emb"], AFTER_BACKWARD, 0)]
    check(ssgd.kind == GRADIENTS and shape(ssgd) == [every, every], f"ssgd: {shape(ssgd)}")
    wfbp = strategy_schedule(LAYERS, "wfbp", 1)
    check(wfbp.kind == GRADIENTS and shape(wfbp) == [[(b[0], LAYER_DONE, 0) for b in every]], f"wfbp: {shape(wfbp)}")
    # flsgd, H = 3: nothing in 0 and 1, every synced layer after the step of 2 (parameters).
    flsgd = strategy_schedule(LAYERS, "flsgd", 3)
    check(flsgd.kind == PARAMETERS and shape(flsgd) == [[], [], [(b[0], AFTER_STEP, 0) for b in every]],
          f"flsgd: {shape(flsgd)}")
    # plsgd-even, H = 2: g = ceil(5 / 2) = 3 over all L = 5 layers: h 0 = j 0..2 = head, fc2, fc1
    # (head has nothing of its own: fc2, fc1), h 1 = j 3..4 = drop, emb (emb).
    even = strategy_schedule(LAYERS, "plsgd-even", 2)
    check(shape(even) == [[(["fc2"], LAYER_DONE, 0), (["fc1"], LAYER_DONE, 0)], [(["emb"], LAYER_DONE, 0)]],
          f"plsgd-even H = 2: {shape(even)}")
    # H = 4: g = ceil(5 / 4) = 2: h 0 = head, fc2; h 1 = fc1, drop; h 2 = emb; h 3 = nothing.
    even = strategy_schedule(LAYERS, "plsgd-even", 4)
    check([[b.layers for b in it] for it in even.iterations] == [[["fc2"]], [["fc1"]], [["emb"]], []],
          f"plsgd-even H = 4: {shape(even)}")
    for name, period, text in (("dp", 2, "is planned on a profile"), ("dream", 2, "unknown 'dream'"),
                               ("ssgd", 0, "period: expected a whole number >= 1")):
        try:
            strategy_schedule(LAYERS, name, period)
            check(False, f"{name} H = {period} accepted")
        except PlanError as error:
            check(text in str(error), f"{name} H = {period}: {error}")


def plan(layers, period=2, buckets=None):
    document = {"format": "syncplan.plan/v1", "model": "m", "period": period, "algorithm": "hand",
                "layers": [dict(name=n, sync_iterations=it, **({"sync_delays": d} if d else {})) for n, it, d in layers]}
    if buckets is not None:
        document["buckets"] = {"alpha_s": 0.0, "iterations": buckets}
    return document


def plans():
    # fc2 and emb (with head, tied) in 0, fc1 in 1; backprop order in 0: fc2, then emb.
    entries = [("emb", [0], None), ("drop", [1], None), ("fc1", [1], None), ("fc2", [0], None), ("head", [0], None)]
    schedule = plan_schedule(plan(entries), "p.json", LAYERS)
    check(shape(schedule) == [[(["fc2"], LAYER_DONE, 0), (["emb"], LAYER_DONE, 0)], [(["fc1"], LAYER_DONE, 0)]],
          f"plan: {shape(schedule)}")
    fused = plan_schedule(plan(entries, buckets=[[["fc2", "emb"]], [["fc1"]]]), "p.json", LAYERS)
    check(shape(fused) == [[(["fc2", "emb"], LAYER_DONE, 0)], [(["fc1"], LAYER_DONE, 0)]], f"buckets: {shape(fused)}")
    # Delays: fc2 synced in 0 with delay 1 (applied before the step of 1).
    delayed = [("emb", [0], None), ("drop", [1], None), ("fc1", [1], None), ("fc2", [0], [1]), ("head", [0], None)]
    schedule = plan_schedule(plan(delayed), "p.json", LAYERS)
    check(shape(schedule)[0] == [(["fc2"], LAYER_DONE, 1), (["emb"], LAYER_DONE, 0)] and schedule.delayed,
          f"delayed: {shape(schedule)}")
    bad = [
        ("tied layer off its carrier", plan([("emb", [0], None), ("drop", [1], None), ("fc1", [1], None),
                                             ("fc2", [0], None), ("head", [1], None)]),
         "layer 'head': field 'sync_iterations': [1], but it shares its parameters with 'emb'"),
        ("bucket order", plan(entries, buckets=[[["emb", "fc2"]], [["fc1"]]]),
         "field 'buckets': iteration 0: bucket entry 0 is 'emb', expected 'fc2'"),
        ("bucket missing a layer", plan(entries, buckets=[[["fc2"]], [["fc1"]]]),
         "iteration 0: bucket entry 1 is '(end)', expected 'emb'"),
        ("iteration out of range", plan([("emb", [2], None)] + entries[1:]),
         "layer 'emb': field 'sync_iterations'"),
        ("delay past the period", plan([("emb", [1], [1])] + entries[1:]),
         "the sync of iteration 1 with delay 1 crosses the period's end"),
        ("delays with buckets", plan(delayed, buckets=[[["fc2", "emb"]], [["fc1"]]]), "has no 'buckets'"),
        ("unknown field", dict(plan(entries), extra=1), "unknown field 'extra'"),
        ("wrong format", dict(plan(entries), format="syncplan.profile/v1"), "field 'format'"),
        # Names reach the messages: control characters refused as core/plan.cpp refuses them (the
        # byte offset in UTF-8: "\u00e9" is 2 bytes), other line breakers shown escaped.
        ("newline in a name", plan([("\u00e9mb\nx", [0], None)] + entries[1:]),
         "layers[0]: field 'name': control character U+000A at byte 4"),
        ("DEL in a bucket", plan(entries, buckets=[[["fc2", "emb\x7f"]], [["fc1"]]]),
         "iterations[0]: a bucket's layer: field 'name': control character U+007F at byte 3"),
        ("line separator in a bucket", plan(entries, buckets=[[["fc2", "emb\u2028"]], [["fc1"]]]),
         "bucket entry 1 is 'emb\\u2028', expected 'emb'"),
        ("newline in a key", dict(plan(entries), **{"a\nb": 1}), "unknown field 'a\\nb'"),
    ]
    for label, document, text in bad:
        try:
            plan_schedule(document, "p.json", LAYERS)
            check(False, f"{label}: accepted")
        except PlanError as error:
            one_line = len(str(error).splitlines()) == 1
            check(str(error).startswith("p.json: ") and text in str(error) and one_line, f"{label}: {error!r}")


strategies()
plans()
print(f"check_schedule: {'FAILED' if FAILURES else 'passed'}")
sys.exit(1 if FAILURES else 0)
