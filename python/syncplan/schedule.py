"""The executed schedule of a strategy or a plan, in plain Python: per period position h its
all-reduce buckets in issue order, as runtime/schedule.cpp builds them for `syncplan run`
(docs/runtime.md section 1), so that the torch executor syncs the same layers in the same iterations.

Layers are given in forward call order (SPEC section 3); backprop visits them in reverse, and
backprop index j = L - 1 - i names forward index i. Only a layer with an all-reduce of its own is in
a bucket: it owns trainable parameters (a tie group's carrier owns the shared ones, so a tied layer
has none of its own) and is not frozen (docs/time-model.md section 11, docs/formats.md "Plan").
"""

import json
import math

from ._cli import open_regular
from .errors import PlanError, printable, quoted, require_printable_name

PLAN_FORMAT = "syncplan.plan/v1"
STRATEGIES = ("ssgd", "wfbp", "flsgd", "plsgd-even")
PLANNED = ("dreamddp", "dp", "search", "best")  # planned on a profile: `syncplan plan`, then the plan

# Where a bucket's all-reduce starts (runtime/schedule.hpp's LaunchPoint).
LAYER_DONE = "layer_done"          # as soon as its last layer's gradients are accumulated
AFTER_BACKWARD = "after_backward"  # after the whole backprop (in before_step): ssgd
AFTER_STEP = "after_step"          # after the optimizer step (in after_step): flsgd

GRADIENTS = "gradients"    # ssgd, wfbp: the gradients are averaged before the step
PARAMETERS = "parameters"  # flsgd, plsgd-even, plans: the parameters are averaged


class Bucket:
    """One all-reduce: `layers` (names, backprop order; the last one finishes it), `launch` (one of
    LAYER_DONE, AFTER_BACKWARD, AFTER_STEP), `delay` d (the average is applied as a correction
    before the step of iteration h + d; 0: averaged in place before h's step)."""

    def __init__(self, layers, launch, delay=0):
        self.layers = list(layers)
        self.launch = launch
        self.delay = delay

    def __repr__(self):
        return f"Bucket({self.layers}, {self.launch})"


class Schedule:
    """What a rank all-reduces: `iterations[h]` lists period position h's buckets in issue order;
    `kind` is GRADIENTS or PARAMETERS; `strategy` is a STRATEGIES name or "plan" (then
    `algorithm` is the plan's and `origin` its file)."""

    def __init__(self, iterations, kind, strategy, algorithm, origin=None):
        self.iterations = iterations
        self.kind = kind
        self.strategy = strategy
        self.algorithm = algorithm
        self.origin = origin

    @property
    def period(self):
        return len(self.iterations)

    def synced_layers(self, h):
        """Every bucket's layers of position h, in issue order (the log's synced_layers)."""
        return [name for bucket in self.iterations[h] for name in bucket.layers]

    @property
    def delayed(self):
        """True when some bucket has a delay > 0 (a delayed-averaging plan)."""
        return any(bucket.delay > 0 for buckets in self.iterations for bucket in buckets)

    def fingerprint(self):
        """A text equal on two ranks exactly when their schedules are equal (checked before training)."""
        return json.dumps([self.kind, [[[b.layers, b.launch, b.delay] for b in it] for it in self.iterations]])


class LayerInfo:
    """One layer of the model as the schedule sees it: `name`, `synced` (True when it has an
    all-reduce of its own: trainable parameters of its own, not frozen), `tied_to` (the carrier's
    name for a layer whose parameters another layer owns, else None)."""

    def __init__(self, name, synced, tied_to=None):
        self.name = name
        self.synced = synced
        self.tied_to = tied_to


def _program(layers, per_iteration, kind, strategy, algorithm, origin=None):
    """per_iteration: H lists of (backprop indices, launch); keeps the layers with an all-reduce."""
    count = len(layers)
    iterations = []
    for ops in per_iteration:
        buckets = []
        for indices, launch in ops:
            names = [layers[count - 1 - j].name for j in indices if layers[count - 1 - j].synced]
            if names:
                buckets.append(Bucket(names, launch))
        iterations.append(buckets)
    return Schedule(iterations, kind, strategy, algorithm, origin)


def strategy_schedule(layers, strategy, period):
    """The schedule of a strategy (SPEC section 5's table, docs/runtime.md section 1) on `layers`
    (LayerInfo, forward order) with period H = `period`: ssgd every layer every iteration after the
    backprop; wfbp every layer every iteration as its gradient is ready; flsgd every layer after the
    step of iteration H - 1; plsgd-even group h = backprop indices [h g, (h + 1) g), g = ceil(L/H),
    over all L layers (simulator/strategies/plsgd_even.cpp). One bucket per layer. PlanError for
    an unknown strategy or a period below 1."""
    if not isinstance(period, int) or isinstance(period, bool) or period < 1:
        raise PlanError(f"period: expected a whole number >= 1, got {period!r}")
    count = len(layers)
    if strategy in ("ssgd", "wfbp"):
        launch = AFTER_BACKWARD if strategy == "ssgd" else LAYER_DONE
        per_iteration = [[([j], launch) for j in range(count)] for _ in range(period)]
        return _program(layers, per_iteration, GRADIENTS, strategy, strategy)
    if strategy == "flsgd":
        per_iteration = [[] for _ in range(period - 1)] + [[([j], AFTER_STEP) for j in range(count)]]
        return _program(layers, per_iteration, PARAMETERS, strategy, strategy)
    if strategy == "plsgd-even":
        group = max(1, math.ceil(count / period))
        per_iteration = [[] for _ in range(period)]
        for j in range(count):
            per_iteration[j // group].append(([j], LAYER_DONE))
        return _program(layers, per_iteration, PARAMETERS, strategy, strategy)
    if strategy in PLANNED:
        raise PlanError(f"strategy: {quoted(strategy)} is planned on a profile: write its plan with `syncplan plan "
                        f"--algorithm {strategy}` and execute that plan")
    raise PlanError(f"strategy: unknown {quoted(strategy)} (the executor runs {', '.join(STRATEGIES)}, or a plan)")


# --------------------------------------------------------------------------------------------------
# Plans (SPEC section 4, docs/formats.md "Plan")
# --------------------------------------------------------------------------------------------------

PLAN_KEYS = {"format", "model", "period", "algorithm", "layers", "predicted", "buckets"}
LAYER_KEYS = {"name", "sync_iterations", "sync_delays"}


def read_plan(source):
    """The plan document from a path (str or os.PathLike) or an already parsed dict; returns
    (document, origin: the path as messages show it). PlanError naming the file when it cannot be
    read, is not a regular file (a FIFO would block) or is not JSON."""
    if isinstance(source, dict):
        return source, "the plan"
    origin = printable(source)
    try:
        with open_regular(source) as plan_file:
            return json.load(plan_file), origin
    except OSError as error:
        raise PlanError(f"{origin}: cannot read the plan ({error.strerror or error})") from None
    except ValueError as error:
        raise PlanError(f"{origin}: not a JSON plan ({error})") from None


def _whole(value):
    return isinstance(value, int) and not isinstance(value, bool)


def parse_plan(document, origin):
    """Checks a syncplan.plan/v1 document's shape; returns (period, algorithm, [(name, iterations,
    delays)] in the plan's order, buckets or None). PlanError naming the file and the field."""
    if not isinstance(document, dict):
        raise PlanError(f"{origin}: expected a JSON object (a syncplan.plan/v1 plan)")
    unknown = sorted(set(document) - PLAN_KEYS)
    if unknown:
        raise PlanError(f"{origin}: unknown field {quoted(unknown[0])}")
    if document.get("format") != PLAN_FORMAT:
        raise PlanError(f"{origin}: field 'format': expected \"{PLAN_FORMAT}\", got {json.dumps(document.get('format'))}")
    period = document.get("period")
    if not _whole(period) or period < 1:
        raise PlanError(f"{origin}: field 'period': expected a whole number >= 1, got {json.dumps(period)}")
    algorithm = document.get("algorithm", "plan")
    if not isinstance(algorithm, str):
        raise PlanError(f"{origin}: field 'algorithm': expected a string")
    entries = document.get("layers")
    if not isinstance(entries, list) or not entries:
        raise PlanError(f"{origin}: field 'layers': expected a non-empty array")
    layers, seen = [], set()
    for index, entry in enumerate(entries):
        where = f"{origin}: layers[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise PlanError(f"{where}: expected an object with a string 'name'")
        name = entry["name"]
        require_printable_name(name, where)  # as the C++ reader (core/plan.cpp): names reach messages
        where = f"{origin}: layer {quoted(name)}"
        unknown = sorted(set(entry) - LAYER_KEYS)
        if unknown:
            raise PlanError(f"{where}: unknown field {quoted(unknown[0])}")
        if name in seen:
            raise PlanError(f"{where}: listed twice")
        seen.add(name)
        iterations = entry.get("sync_iterations")
        if (not isinstance(iterations, list) or not iterations or
                not all(_whole(h) and 0 <= h < period for h in iterations)):
            raise PlanError(f"{where}: field 'sync_iterations': expected a non-empty array of iterations in "
                            f"0..{period - 1}, got {json.dumps(iterations)}")
        if len(set(iterations)) != len(iterations):
            raise PlanError(f"{where}: field 'sync_iterations': an iteration twice in {json.dumps(iterations)}")
        delays = entry.get("sync_delays", [0] * len(iterations))
        if (not isinstance(delays, list) or len(delays) != len(iterations) or
                not all(_whole(d) and d >= 0 for d in delays)):
            raise PlanError(f"{where}: field 'sync_delays': expected one whole number >= 0 per entry of "
                            f"sync_iterations, got {json.dumps(delays)}")
        for h, d in zip(iterations, delays):
            if h + d > period - 1:
                raise PlanError(f"{where}: field 'sync_delays': the sync of iteration {h} with delay {d} "
                                f"crosses the period's end ({period} iterations)")
        layers.append((name, iterations, delays))
    buckets = document.get("buckets")
    if buckets is not None:
        if (not isinstance(buckets, dict) or not isinstance(buckets.get("iterations"), list) or
                len(buckets["iterations"]) != period or
                not all(isinstance(it, list) and all(isinstance(b, list) and b and all(isinstance(n, str) for n in b)
                                                     for b in it) for it in buckets["iterations"])):
            raise PlanError(f"{origin}: field 'buckets': expected {{\"alpha_s\", \"iterations\": {period} arrays of "
                            "buckets (non-empty arrays of layer names)}")
        buckets = buckets["iterations"]
        for h, iteration in enumerate(buckets):
            for name in (name for bucket in iteration for name in bucket):
                require_printable_name(name, f"{origin}: field 'buckets': iterations[{h}]: a bucket's layer")
    return period, algorithm, layers, buckets


def plan_schedule(document, origin, layers):
    """The schedule of a parsed plan on the model's `layers` (LayerInfo, in the plan's order, which is
    the model's forward order): per iteration h the layers whose sync_iterations hold h, one bucket
    each in backprop order, launched as the layer's gradients are ready, or the plan's buckets as
    given; a sync with delay d (`sync_delays`) is applied before the step of h + d (docs/time-model.md
    section 13). PlanError naming the file, the layer and the field: a tied layer whose iterations
    are not its carrier's, a bucket that is not h's synced layers in backprop order, delays with
    buckets."""
    period, algorithm, entries, buckets = parse_plan(document, origin)
    info = {layer.name: layer for layer in layers}
    iterations_of = {name: iterations for name, iterations, _ in entries}
    delay_of = {(name, h): d for name, iterations, delays in entries for h, d in zip(iterations, delays)}
    for name, iterations, delays in entries:
        if any(delays) and buckets is not None:
            raise PlanError(f"{origin}: layer {quoted(name)}: field 'sync_delays': a plan with delayed syncs has no "
                            "'buckets' (docs/formats.md \"Plan\")")
        carrier = info[name].tied_to
        if carrier is not None and sorted(iterations_of.get(carrier, [])) != sorted(iterations):
            raise PlanError(f"{origin}: layer {quoted(name)}: field 'sync_iterations': {json.dumps(iterations)}, but it "
                            f"shares its parameters with {quoted(carrier)}, which syncs in {json.dumps(iterations_of.get(carrier))} "
                            "(a tied layer has its carrier's iterations)")
    backprop = [layer for layer in reversed(layers)]
    per_h = [[layer.name for layer in backprop if layer.synced and h in iterations_of[layer.name]]
             for h in range(period)]
    if buckets is None:
        iterations = [[Bucket([name], LAYER_DONE, delay_of[(name, h)]) for name in names]
                      for h, names in enumerate(per_h)]
    else:
        iterations = []
        for h, given in enumerate(buckets):
            flat = [name for bucket in given for name in bucket]
            if flat != per_h[h]:
                first = next((i for i, (a, b) in enumerate(zip(flat, per_h[h])) if a != b), min(len(flat), len(per_h[h])))
                found = flat[first] if first < len(flat) else "(end)"
                expected = per_h[h][first] if first < len(per_h[h]) else "(end)"
                raise PlanError(f"{origin}: field 'buckets': iteration {h}: bucket entry {first} is {quoted(found)}, expected "
                                f"{quoted(expected)} (the buckets must hold iteration {h}'s synced layers with an all-reduce "
                                "of their own, each once, in backprop order)")
            iterations.append([Bucket(bucket, LAYER_DONE) for bucket in given])
    return Schedule(iterations, PARAMETERS, "plan", algorithm, origin)
