"""PlanExecutor: executes a syncplan plan or strategy inside an ordinary PyTorch training loop with
the semantics of `syncplan run` (docs/runtime.md sections 1-2, docs/torch.md "PlanExecutor").

    executor = PlanExecutor(model, "plan.json")   # or PlanExecutor(model, "plsgd-even", period=4)
    for batch in data:
        loss = loss_fn(model(batch))
        loss.backward()
        executor.step(optimizer, loss=loss)       # instead of optimizer.step()
        optimizer.zero_grad()

In iteration h = i mod H of the period the buckets of h are all-reduced: a parameter-averaging
bucket (plans, plsgd-even) is launched asynchronously as soon as the gradients of its layers are
accumulated (an AccumulateGrad hook), overlapped with the rest of the backprop, and every bucket is
waited for before the optimizer step (DreamDDP's semantics, SPEC section 5). S-SGD averages every
layer's gradients after the backprop, WFBP as each layer's gradients are ready, full local SGD
(flsgd) the whole model's parameters after the step of every H-th iteration. A bucket is one flat
buffer and one all-reduce; a parameter shared by several modules (tied weights) is averaged once,
by its owner. The averages are SUM then division by the world size on gloo (which has no AVG) and
ReduceOp.AVG on NCCL; the executor makes no CUDA call of its own.

Gradient accumulation: backward passes inside `with executor.no_sync():` launch nothing; the last
micro-batch's backward outside it launches the iteration's syncs (docs/torch.md "Gradient
accumulation"). With a GradScaler, step() makes every rank skip when any rank found inf or NaN
gradients (docs/torch.md "GradScaler").

Only `torch.distributed` calls on the given process group; hooks are registered in one place
(`_hook_parameters`) and removed by `remove()`.
"""

import contextlib
import json
import math
import time

from . import schedule as schedules
from ._cli import open_regular, write_outputs
from .layers import assign_owners, on_gradient_accumulated
from .records import MeasuredTrace, trace_text
from .errors import PlanError, printable, quoted, require_printable_name


class SyncError(RuntimeError):
    """An all-reduce that failed or missed the process group's timeout (a dead or stopped rank): one
    line naming the rank, the iteration and the bucket's first layer."""


def _own_parameters(module):
    return list(module.parameters(recurse=False))


def _first_tensor(torch, value):
    """The first tensor in a module's output (a tensor, or nested tuples, lists and dicts), or None."""
    if isinstance(value, torch.Tensor):
        return value
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (tuple, list)) else ()
    for item in items:
        found = _first_tensor(torch, item)
        if found is not None:
            return found
    return None


class _Layer:
    """One layer: its module, the parameters it owns (first owner in forward order) and which of
    them are averaged (the trainable ones)."""

    def __init__(self, name, module):
        self.name = name
        self.module = module
        self.params = []       # owned parameters (a tied layer owns none)
        self.tied_to = None    # the owner of a parameter this module uses but does not own

    @property
    def trainable(self):
        return [p for p in self.params if p.requires_grad]

    @property
    def frozen(self):
        return bool(self.params) and not self.trainable


class _BucketState:
    """A bucket of the schedule with its flat buffer (allocated once) and what is in flight."""

    def __init__(self, bucket, index, params, torch):
        self.bucket = bucket
        self.index = index     # its place in its iteration's issue order (the sync order of corrections)
        self.params = params
        dtypes = {(p.dtype, p.device) for p in params}
        if len(dtypes) != 1:
            raise PlanError(f"bucket {quoted(bucket.layers[0])} .. {quoted(bucket.layers[-1])}: parameters of different dtypes "
                            f"or devices ({sorted(str(d) for d in dtypes)}); one all-reduce needs one")
        dtype, device = dtypes.pop()
        self.slices = []
        offset = 0
        for p in params:
            self.slices.append((p, offset, p.numel()))
            offset += p.numel()
        self.numel = offset
        self.bytes = offset * params[0].element_size()
        self.flat = torch.empty(offset, dtype=dtype, device=device)
        # A delayed sync's snapshot s of the parameters at launch (docs/time-model.md section 13).
        self.snapshot = torch.empty_like(self.flat) if bucket.delay > 0 else None
        self.launch_iteration = None
        self.work = None
        self.done = False      # averaged and written back
        self.launch_s = None
        self.complete_s = None


class PlanExecutor:
    """Executes a plan or a strategy in the caller's training loop (module docstring).

    model: the torch.nn.Module being trained (its parameters are averaged in place).
    plan: a plan file (syncplan.plan/v1, SPEC section 4) or its parsed dict; with `period` H, a
        strategy's name instead (ssgd, wfbp, flsgd, plsgd-even).
    group: the torch.distributed process group (default: the world); its timeout bounds every wait.
    profile: optional syncplan.profile/v1 (path or dict) the plan was made on: its parameter counts,
        ties and frozen layers are checked against the model, and for a strategy it gives the layer
        order (otherwise the order of the first forward pass's calls).
    allow_unplanned: accept modules with parameters that the plan does not name (never averaged).
    clock: seconds, monotonic (time.perf_counter); injectable for tests.
    warn: called with each warning line (a profile of another world size); default: kept in
        `warnings` only.

    Construction is collective: every rank checks the plan against its model, then the ranks agree
    (one all_gather_object), so that a bad input raises PlanError with the same one line on every
    rank before any step. Checks (docs/torch.md "Checks before training"): an unreadable or malformed
    plan, a plan layer that is not a module of the model, a module with parameters that the plan
    does not name, parameter counts, ties or frozen layers that differ from the profile's, and a
    plan that differs between ranks. A profile measured for another world size gives a warning (its
    timing prediction no longer holds; the semantics do not depend on it), not an error.
    """

    def __init__(self, model, plan, group=None, *, period=None, profile=None, allow_unplanned=False,
                 clock=time.perf_counter, warn=None):
        import torch
        import torch.distributed as dist
        self._torch = torch
        self._dist = dist
        self.model = model
        self.group = group
        self._clock = clock
        self.rank = dist.get_rank(group)
        self.world_size = dist.get_world_size(group)
        self.warnings = []
        self._warn = warn if warn is not None else (lambda line: None)
        backend = dist.get_backend(group)
        self._average_op = getattr(dist.ReduceOp, "AVG", None) if backend == "nccl" else None
        self._op = self._average_op if self._average_op is not None else dist.ReduceOp.SUM
        self._handles = []          # every hook, for remove()
        self._accumulators = []     # AccumulateGrad nodes kept alive so their hooks stay registered
        self.schedule = None
        self._layers = None
        self.iteration = 0
        self.skipped_steps = 0
        self.records = []           # this rank's log lines (docs/formats.md "Training log")
        # The last recorded iteration: {start_s, end_s, wait_s}, and its buckets: {layers, bytes,
        # launch_s, complete_s}, times on `clock` (complete_s: when the all-reduce was seen done).
        self.last_iteration = None
        self.last_buckets = []
        self._iteration_start = None
        self._wait_s = 0.0
        self._pending_order = None  # call order being recorded in the first forward (strategy, no profile)
        self._accumulating = False  # inside no_sync(): backward passes launch nothing

        error, fingerprint = None, None
        try:
            profile_doc = self._read_profile(profile)
            if period is not None:  # a strategy
                self._strategy = (plan, period)
                schedules.strategy_schedule([], plan, period)  # checks the name and the period
                if profile_doc is not None:
                    self._set_layers([entry["name"] for entry in profile_doc["layers"]], profile_doc, allow_unplanned,
                                     profile_doc["_origin"])
                fingerprint = json.dumps([plan, period])
            else:
                self._strategy = None
                document, origin = schedules.read_plan(plan)
                names = [name for name, _, _ in schedules.parse_plan(document, origin)[2]]
                self._set_layers(names, profile_doc, allow_unplanned, origin)
                self.schedule = schedules.plan_schedule(document, origin, self._layer_infos())
                fingerprint = self.schedule.fingerprint()
        except PlanError as problem:
            error = str(problem)
        self._agree(error, fingerprint)
        self._origin_s = self._clock()   # the trace's zero: just after the ranks agreed (a collective)
        self._trace = MeasuredTrace(self.rank, self._origin_s)
        self._marks = {}                 # this iteration's times: forward_end, backward_start, ...
        self._ready = []                 # (layer name, time its gradients were all accumulated)
        self._delayed = []               # delayed syncs in flight: (due iteration, state)
        self._applied = []               # this iteration's applied averages (the log's `applied`)
        if self._layers is None:
            self._record_call_order()
        else:
            self._prepare()
        self._handles.append(model.register_forward_pre_hook(self._forward_starts))
        self._handles.append(model.register_forward_hook(self._forward_ends))

    # -- checks -------------------------------------------------------------------------------------
    def _read_profile(self, profile):
        if profile is None:
            return None
        if isinstance(profile, dict):
            document, origin = profile, "the profile"
        else:
            origin = printable(profile)
            try:
                with open_regular(profile) as profile_file:
                    document = json.load(profile_file)
            except OSError as error:
                raise PlanError(f"{origin}: cannot read the profile ({error.strerror or error})") from None
            except ValueError as error:
                raise PlanError(f"{origin}: not a JSON profile ({error})") from None
        layers = document.get("layers") if isinstance(document, dict) else None
        if not isinstance(layers, list) or not all(isinstance(l, dict) and isinstance(l.get("name"), str) for l in layers):
            raise PlanError(f"{origin}: field 'layers': expected an array of layers with names (syncplan.profile/v1)")
        for index, entry in enumerate(layers):  # as the C++ reader (core/profile.cpp): names reach messages
            require_printable_name(entry["name"], f"{origin}: layers[{index}]")
        workers = document.get("workers")
        if isinstance(workers, int) and workers != self.world_size:
            line = (f"warning: {origin}: measured for {workers} workers, this group has {self.world_size}: "
                    "the plan's timing prediction does not hold (its synchronization does)")
            self.warnings.append(line)
            self._warn(line)
        document = dict(document)
        document["_origin"] = origin
        return document

    def _set_layers(self, names, profile_doc, allow_unplanned, origin="the plan"):
        modules = dict(self.model.named_modules())
        layers = []
        for name in names:
            if name not in modules:
                raise PlanError(f"{origin}: layer {quoted(name)} is not a module of the model "
                                f"(model.named_modules() has no {quoted(name)})")
            layers.append(_Layer(name, modules[name]))
        assign_owners(layers, PlanError)
        planned = {id(p) for layer in layers for p in layer.params}
        if not allow_unplanned:
            for name, module in self.model.named_modules():
                stray = [p for p in _own_parameters(module) if id(p) not in planned]
                if stray:
                    count = sum(p.numel() for p in stray)
                    raise PlanError(f"{origin}: module {quoted(name or '(the model)')} has {count} parameters that no "
                                    "layer of the plan owns (name it in the plan, or allow_unplanned / "
                                    "--allow-unplanned to leave them unsynchronized)")
        if profile_doc is not None:
            self._check_profile(layers, profile_doc)
        self._layers = layers

    def _check_profile(self, layers, profile_doc):
        origin = profile_doc["_origin"]
        entries = profile_doc["layers"]
        names = [layer.name for layer in layers]
        if [entry["name"] for entry in entries] != names:
            first = next((i for i, (a, b) in enumerate(zip(entries, names)) if a["name"] != b), min(len(entries), len(names)))
            found = entries[first]["name"] if first < len(entries) else "(end)"
            expected = names[first] if first < len(names) else "(end)"
            raise PlanError(f"{origin}: layer {first} is {quoted(found)}, the plan's is {quoted(expected)} "
                            "(the profile's layers must be the plan's, in the same order)")
        for entry, layer in zip(entries, layers):
            synced = layer.trainable or layer.params
            count = sum(p.numel() for p in synced)
            # A tied layer may count the shared parameters it uses (as the C++ model's profiles may) or not.
            shared = sum(p.numel() for p in _own_parameters(layer.module) if not any(p is q for q in layer.params))
            accepted = {count, count + shared} if layer.tied_to is not None else {count}
            if "param_count" in entry and entry["param_count"] is not None and entry["param_count"] not in accepted:
                raise PlanError(f"{origin}: layer {quoted(layer.name)}: field 'param_count': {entry['param_count']}, but "
                                f"the model's module has {count} parameters of its own")
            if entry.get("tied_to") != layer.tied_to:
                raise PlanError(f"{origin}: layer {quoted(layer.name)}: field 'tied_to': {json.dumps(entry.get('tied_to'))}, "
                                f"but in the model it is {json.dumps(layer.tied_to)}")
            if bool(entry.get("frozen", False)) != layer.frozen:
                raise PlanError(f"{origin}: layer {quoted(layer.name)}: field 'frozen': {bool(entry.get('frozen', False))}, "
                                f"but in the model it is {layer.frozen}")

    def _agree(self, error, fingerprint):
        """Every rank's (error, fingerprint) to every rank; raises PlanError on all of them with the
        lowest failing rank's line, or when the schedules differ."""
        everyone = [None] * self.world_size
        self._dist.all_gather_object(everyone, (error, fingerprint), group=self.group)
        for problem, _ in everyone:
            if problem is not None:
                raise PlanError(problem)
        reference = everyone[0][1]
        for rank, (_, theirs) in enumerate(everyone):
            if theirs != reference:
                raise PlanError(f"rank {rank}: its plan or strategy differs from rank 0's (every rank must execute "
                                "the same schedule)")

    # -- layers and hooks ---------------------------------------------------------------------------
    def _layer_infos(self):
        return [schedules.LayerInfo(layer.name, bool(layer.trainable), layer.tied_to) for layer in self._layers]

    def _record_call_order(self):
        """Strategy without a profile: the layers are the modules that are leaves or own parameters,
        in the order of the first forward pass's calls; the schedule is made when it ends."""
        self._pending_order, self._order_handles = [], []
        for name, module in self.model.named_modules():
            if name and (not list(module.children()) or _own_parameters(module)):
                self._order_handles.append(module.register_forward_pre_hook(
                    lambda module, inputs, name=name: self._pending_order.append(name)
                    if name not in self._pending_order else None))
        self._order_handles.append(self.model.register_forward_hook(self._first_forward_done))
        self._handles.extend(self._order_handles)

    def _first_forward_done(self, module, inputs, output):
        for handle in self._order_handles:
            handle.remove()
        order = self._pending_order
        self._pending_order = None
        self._set_layers(order, None, allow_unplanned=True)
        self._prepare()

    def _prepare(self):
        """Makes the strategy's schedule (when not yet made), the buckets' buffers and the hooks."""
        if self.schedule is None:
            strategy, period = self._strategy
            self.schedule = schedules.strategy_schedule(self._layer_infos(), strategy, period)
        by_name = {layer.name: layer for layer in self._layers}
        self._states = []
        for buckets in self.schedule.iterations:
            states = []
            for index, bucket in enumerate(buckets):
                params = [p for name in bucket.layers for p in by_name[name].trainable]
                states.append(_BucketState(bucket, index, params, self._torch))
            self._states.append(states)
        # Per position h: layer name -> indices of h's LAYER_DONE buckets that hold it.
        self._buckets_of = []
        for states in self._states:
            holders = {}
            for b, state in enumerate(states):
                if state.bucket.launch == schedules.LAYER_DONE:
                    for name in state.bucket.layers:
                        holders.setdefault(name, []).append(b)
            self._buckets_of.append(holders)
        # Every parameter some bucket averages (GradScaler agreement: are the others' gradients local?).
        self._averaged = {id(p) for states in self._states for state in states for p in state.params}
        self._hook_parameters()
        self._begin_iteration()

    def _hook_parameters(self):
        """One hook per trainable owned parameter of a synced layer, fired once its gradient is
        accumulated into .grad (register_post_accumulate_grad_hook on torch >= 2.1; on 1.13 the
        post-hook of its AccumulateGrad node, whose reference is kept so the hook stays)."""
        for index, layer in enumerate(self._layers):
            for parameter in layer.trainable:
                handle, keep = on_gradient_accumulated(self._torch, parameter,
                                                       lambda index=index: self._parameter_ready(index))
                self._handles.append(handle)
                if keep is not None:
                    self._accumulators.append(keep)

    def remove(self):
        """Removes every hook the executor registered (the model trains on unsynchronized)."""
        for handle in self._handles:
            if hasattr(handle, "remove"):
                handle.remove()
        self._handles, self._accumulators = [], []

    # -- the iteration ------------------------------------------------------------------------------
    @property
    def period(self):
        return self.schedule.period if self.schedule is not None else self._strategy[1]

    @property
    def position(self):
        """h = iteration mod H: the period position of the current iteration."""
        return self.iteration % self.period

    def _begin_iteration(self):
        h = self.position
        self._remaining = [len(layer.trainable) for layer in self._layers]
        self._bucket_left = [len(state.bucket.layers) for state in self._states[h]]
        self._launched = []
        for state in self._states[h]:
            state.work, state.done, state.launch_s, state.complete_s = None, False, None, None

    def _forward_starts(self, module, inputs):
        if self._iteration_start is None:
            self._iteration_start = self._clock()

    def _forward_ends(self, module, inputs, output):
        """Marks the forward's end, and the backprop's start with a hook on the output's gradient."""
        self._marks["forward_end"] = self._clock()
        tensor = _first_tensor(self._torch, output)
        if tensor is not None and tensor.requires_grad:
            tensor.register_hook(self._backward_starts)

    def _backward_starts(self, grad):
        if not self._accumulating:  # the backprop that launches the syncs: the last micro-batch's
            self._marks.setdefault("backward_start", self._clock())  # returns None: the gradient stays

    def _parameter_ready(self, index):
        """A parameter's gradient is accumulated; when its layer's last one is, launches every
        LAYER_DONE bucket of h whose layers are now all done. Inside no_sync() nothing: the gradient
        just accumulates, and the last micro-batch's backward outside it counts."""
        if self._accumulating:
            return
        self._remaining[index] -= 1
        name = self._layers[index].name
        if (self._remaining[index] < 0 and self.schedule.kind == schedules.GRADIENTS
                and self._buckets_of[self.position].get(name)):
            # Its gradient accumulated again before the step, after a bucket holding it could have
            # launched on the first pass's gradients alone (wfbp), whose average before_step would
            # then write over this pass's. DDP refuses the same ("mark a variable ready only once").
            # Averaged parameters (local SGD, plans) and buckets launched after the backward (ssgd)
            # take a later gradient as gradient accumulation does.
            raise RuntimeError(f"PlanExecutor: iteration {self.iteration}: a second backward pass before the step "
                               f"accumulated the gradients of layer {quoted(name)} again, after its all-reduce had "
                               "launched with the first pass's; run every backward pass but the step's last "
                               "inside `with executor.no_sync():` (gradient accumulation), or add the losses and "
                               "call backward once")
        if self._remaining[index] != 0:
            return
        self._ready.append((name, self._clock()))
        h = self.position
        for b in self._buckets_of[h].get(name, ()):
            self._bucket_left[b] -= 1
            state = self._states[h][b]
            if self._bucket_left[b] == 0 and state.work is None:
                self._launch(state)

    def _sources(self, state):
        gradients = self.schedule.kind == schedules.GRADIENTS
        for p, offset, count in state.slices:
            yield p, (p.grad if gradients else p.detach()), offset, count

    def _launch(self, state):
        for p, source, offset, count in self._sources(state):
            if source is None:
                state.flat[offset:offset + count].zero_()  # no gradient this iteration: contributes 0
            else:
                state.flat[offset:offset + count].copy_(source.reshape(-1))
        if state.snapshot is not None:
            state.snapshot.copy_(state.flat)
            self._delayed.append((self.iteration + state.bucket.delay, state))
        state.launch_iteration = self.iteration
        state.launch_s = self._clock()
        state.work = self._dist.all_reduce(state.flat, op=self._op, group=self.group, async_op=True)
        try:
            state.work.get_future().then(lambda future, state=state: setattr(state, "complete_s", self._clock()))
        except (AttributeError, RuntimeError):  # a backend without futures: the wait's end stands
            pass
        self._launched.append(state)

    def _finish(self, state, apply=True):
        """Waits for a bucket's all-reduce and writes the average m back into the gradients or
        parameters: p <- m, or for a delayed sync the correction p <- p + (m - s) with s its snapshot
        (docs/time-model.md section 13); with apply=False only waits (a dropped sync). SyncError
        naming the rank, iteration and bucket when it fails or times out."""
        try:
            state.work.wait()
        except RuntimeError as error:
            reason = " ".join(str(error).split())
            raise SyncError(f"rank {self.rank}: iteration {self.iteration}: the all-reduce of bucket "
                            f"{quoted(state.bucket.layers[0])} failed or missed the process group's timeout ({reason})") from None
        state.done = True
        if state.complete_s is None:
            state.complete_s = self._clock()
        if not apply:
            return
        if self._average_op is None:
            state.flat.div_(self.world_size)
        gradients = self.schedule.kind == schedules.GRADIENTS
        for p, offset, count in state.slices:
            average = state.flat[offset:offset + count].view_as(p)
            if state.snapshot is not None:
                with self._torch.no_grad():
                    p.add_(average - state.snapshot[offset:offset + count].view_as(p))
            elif gradients:
                if p.grad is None:
                    p.grad = average.clone()
                else:
                    p.grad.copy_(average)
            else:
                with self._torch.no_grad():
                    p.copy_(average)
        if self.schedule.delayed:
            self._applied.append({"iteration": state.launch_iteration, "layers": list(state.bucket.layers),
                                  "delay": state.bucket.delay, "start_s": state.launch_s - self._origin_s,
                                  "end_s": state.complete_s - self._origin_s,
                                  "applied_s": self._clock() - self._origin_s})

    def before_step(self):
        """Before optimizer.step(): launches the buckets of h not launched yet (S-SGD's, or any whose
        layers got no gradient) in issue order, then waits for every bucket of h in flight and writes
        the averages back. SyncError when one fails or times out."""
        self._outside_no_sync("before_step")
        start = self._clock()
        self._ensure_ready()
        self._marks["before_step"] = start
        for state in self._states[self.position]:
            if state.work is None and state.bucket.launch != schedules.AFTER_STEP:
                self._launch(state)
        for state in list(self._launched):
            if not state.done and state.snapshot is None:
                self._finish(state)
        # The delayed syncs due now, in sync order (launch iteration, then issue order), after this
        # iteration's own averages (docs/runtime.md section 11).
        due = sorted((entry for entry in self._delayed if entry[0] == self.iteration),
                     key=lambda entry: (entry[1].launch_iteration, entry[1].index))
        self._delayed = [entry for entry in self._delayed if entry[0] != self.iteration]
        for _, state in due:
            self._finish(state)
            self._trace_allreduce(state)
        self._marks["step"] = self._clock()
        self._wait_s += self._marks["step"] - start

    def after_step(self, loss=None, stepped=True):
        """After optimizer.step(): with `stepped` (the step ran), averages flsgd's buckets (after the
        step of the period's last iteration), records the iteration's log line (with `loss`, a float
        or a 0-d tensor) and advances the iteration counter by one. With stepped=False (a GradScaler
        skipped the step: inf or NaN gradients) nothing is recorded and the counter stays, so the
        retried iteration syncs the same layers again: no sync is lost."""
        self._outside_no_sync("after_step")
        start = self._clock()
        self._ensure_ready()
        self._marks["after_step"] = start
        if not stepped:
            for state in self._launched:  # every rank must complete what it started
                if not state.done:
                    self._finish(state, apply=state.snapshot is None)
            # This attempt's delayed syncs are dropped: the retried iteration starts them again.
            self._delayed = [entry for entry in self._delayed if entry[1] not in self._launched]
            self.skipped_steps += 1
            self._next_iteration()
            return
        for state in self._launched:  # launched and not waited for: before_step was not called
            if not state.done and state.snapshot is None:
                self._finish(state)
        for state in self._states[self.position]:
            if state.bucket.launch == schedules.AFTER_STEP:
                self._launch(state)
                self._finish(state)
        end = self._clock()
        self._wait_s += end - start
        self._record(loss, end)
        self.iteration += 1
        self._next_iteration()

    def _next_iteration(self):
        self._wait_s = 0.0
        self._iteration_start = None
        self._marks, self._ready, self._applied = {}, [], []
        self._begin_iteration()

    def drain(self):
        """Waits for the delayed syncs still in flight and drops them: a run that ends inside a
        period never runs the steps they were due before (docs/runtime.md section 11). Every rank
        must call it (each completes the collectives it started); write_log calls it."""
        for _, state in self._delayed:
            self._finish(state, apply=False)
        self._delayed = []

    @contextlib.contextmanager
    def no_sync(self):
        """Gradient accumulation, as DDP's no_sync(): the backward passes inside launch no all-reduce
        (the gradients accumulate in .grad); the iteration's syncs start at the last micro-batch's
        backward, outside it, over the accumulated gradients (ssgd, wfbp) or the parameters (local
        SGD, partial sync, plans), exactly as without accumulation (docs/torch.md "Gradient
        accumulation"). The counter still advances once per optimizer step. RuntimeError when
        nested, and from before_step, after_step and step inside it."""
        if self._accumulating:
            raise RuntimeError("PlanExecutor.no_sync: already inside no_sync() (it does not nest)")
        self._accumulating = True
        try:
            yield
        finally:
            self._accumulating = False

    def _outside_no_sync(self, what):
        if self._accumulating:
            raise RuntimeError(f"PlanExecutor.{what}: called inside no_sync(); step after the with block, once the "
                               "last micro-batch's backward ran outside it")

    def step(self, optimizer, scaler=None, loss=None):
        """before_step(), the step, after_step(): `optimizer.step()`, or with a GradScaler
        `scaler.step(optimizer)` and `scaler.update()`, where every rank skips the step when any rank
        found inf or NaN gradients (agree_skip). A skipped step keeps the counter. Returns whether
        the step ran."""
        self._outside_no_sync("step")
        self.before_step()
        stepped = True
        if scaler is None:
            optimizer.step()
        else:
            stepped = not self.agree_skip(optimizer, scaler)
            scaler.step(optimizer)
            scaler.update()
        self.after_step(loss=loss, stepped=stepped)
        return stepped

    def agree_skip(self, optimizer, scaler):
        """True when `scaler.step(optimizer)` is to skip this step, the same answer on every rank;
        call it after before_step() and before scaler.step() (step() does). An enabled GradScaler's
        gradients are unscaled (scaler.unscale_, unless the loop did it already) and this rank's
        found_inf read from the scaler's per-optimizer state. Where the ranks' gradients may differ
        (parameter averaging, or parameters whose gradients no bucket averages), one all-reduce of
        a 1-element flag with MAX over the group makes the answer common, and a rank that found
        nothing gets found_inf 1 so that its scaler skips and lowers its scale too (docs/torch.md
        "GradScaler"). Under ssgd and wfbp averaging every gradient the ranks agree already: no
        all-reduce. TypeError for a scaler without GradScaler's per-optimizer state; SyncError when
        the all-reduce fails or times out."""
        self._outside_no_sync("agree_skip")
        if not scaler.is_enabled():
            return False  # a disabled scaler steps always
        states = getattr(scaler, "_per_optimizer_states", None)
        if states is None:
            raise TypeError(f"PlanExecutor.agree_skip: {type(scaler).__name__} has no per-optimizer found_inf state "
                            "(torch's GradScaler._per_optimizer_states), so the ranks cannot agree on a skip")
        state = states[id(optimizer)]
        if getattr(state["stage"], "name", None) == "READY":
            scaler.unscale_(optimizer)
        found = list(state["found_inf_per_device"].values())
        if found:
            flag = found[0].detach().float().sum().reshape(1)  # a new tensor on found_inf's device
            for tensor in found[1:]:
                flag += tensor.to(flag.device)
        else:  # no gradient on this rank: found nothing, still takes part in the all-reduce
            device = next((p.device for group in optimizer.param_groups for p in group["params"]), None)
            flag = self._torch.zeros(1, device=device)
        if self._ranks_may_disagree(optimizer):
            try:
                self._dist.all_reduce(flag, op=self._dist.ReduceOp.MAX, group=self.group, async_op=True).wait()
            except RuntimeError as error:
                reason = " ".join(str(error).split())
                raise SyncError(f"rank {self.rank}: iteration {self.iteration}: the all-reduce that agrees on a "
                                f"GradScaler skip failed or missed the process group's timeout ({reason})") from None
        skip = bool(flag.item() > 0)
        if skip:
            for tensor in found:
                tensor.fill_(1.0)
        return skip

    def _ranks_may_disagree(self, optimizer):
        """Whether the ranks' gradients may differ when the scaler looks at them: always under
        parameter averaging; with averaged gradients only for trainable parameters of the optimizer
        that no bucket averages (unplanned: allow_unplanned, or modules a strategy's first forward
        did not call)."""
        self._ensure_ready()
        if self.schedule.kind != schedules.GRADIENTS:
            return True
        return any(p.requires_grad and id(p) not in self._averaged
                   for group in optimizer.param_groups for p in group["params"])

    def _ensure_ready(self):
        if self.schedule is None or not hasattr(self, "_states"):
            raise RuntimeError("PlanExecutor: before_step/after_step before the model's first forward pass "
                               "(a strategy's layer order comes from it)")

    def _record(self, loss, end):
        start = self._iteration_start if self._iteration_start is not None else end
        iteration_s = max(0.0, end - start)
        wait_s = min(self._wait_s, iteration_s)
        if loss is not None:
            loss = float(loss.detach().item() if hasattr(loss, "detach") else loss)
            if not math.isfinite(loss):
                loss = None
        buckets = [list(state.bucket.layers) for state in self._states[self.position]]
        line = {"iteration": self.iteration, "rank": self.rank, "loss": loss,
                "iteration_s": iteration_s, "compute_s": iteration_s - wait_s, "wait_s": wait_s,
                "synced_layers": [name for bucket in buckets for name in bucket], "buckets": buckets}
        if self.schedule.delayed:  # docs/formats.md "Training log": sync_delays and applied
            line["sync_delays"] = [state.bucket.delay for state in self._states[self.position]]
            line["applied"] = self._applied
        self.records.append(line)
        self.last_iteration = {"start_s": start, "end_s": end, "wait_s": wait_s}
        self.last_buckets = [{"layers": list(state.bucket.layers), "bytes": state.bytes,
                              "launch_s": state.launch_s, "complete_s": state.complete_s}
                             for state in self._states[self.position] if state.launch_s is not None]
        self._trace_iteration(start, end)

    # -- records ------------------------------------------------------------------------------------
    def _trace_iteration(self, start, end):
        """The iteration's compute and its own (not delayed) all-reduces in the trace."""
        marks = self._marks
        forward_end = marks.get("forward_end", start)
        self._trace.compute(self.iteration, start, forward_end, marks.get("backward_start", forward_end), self._ready,
                            marks.get("step"), marks.get("after_step"))
        for state in self._states[self.position]:
            if state.launch_s is not None and state.snapshot is None:
                self._trace_allreduce(state)

    def _trace_allreduce(self, state):
        self._trace.allreduce(state.bucket.layers, state.bytes, state.launch_s, state.complete_s,
                              state.launch_iteration, state.bucket.delay)

    def trace_text(self, about=None):
        """Collective: on rank 0 the text of every rank's events as a measured Chrome trace
        (docs/formats.md "Measured trace", syncplan.records: pid = rank, ts/dur in microseconds from
        the executor's start, a "syncplan" object with "source": "measured"), None on the others.
        `about`: more keys for the "syncplan" object (model, batch, seq, ...)."""
        everyone = [None] * self.world_size
        self._dist.all_gather_object(everyone, self._trace.events, group=self.group)
        if self.rank != 0:
            return None
        description = {"strategy": self.schedule.strategy, "algorithm": self.schedule.algorithm,
                       "period": self.period, "sync": self.schedule.kind, "ranks": self.world_size,
                       "iterations": len(self.records), "runtime": "syncplan.torch",
                       "plan": self.schedule.origin, "emulated_link": None}
        return trace_text(everyone, dict(description, **(about or {})))

    def write_trace(self, path, about=None):
        """Collective: rank 0 writes trace_text(about) to `path`, whole or not at all; `syncplan
        compare` reads it."""
        text = self.trace_text(about)
        if text is not None:
            write_outputs([(path, text)])

    def gather_records(self):
        """Collective: every rank's log lines, sorted by iteration then rank (on every rank)."""
        everyone = [None] * self.world_size
        self._dist.all_gather_object(everyone, self.records, group=self.group)
        return sorted((line for lines in everyone for line in lines), key=lambda l: (l["iteration"], l["rank"]))

    def log_text(self):
        """Collective (drains first): on rank 0 every rank's log lines as JSON lines (docs/formats.md
        "Training log", what `syncplan compare` reads), None on the others."""
        self.drain()
        lines = self.gather_records()
        return "".join(json.dumps(line, allow_nan=False) + "\n" for line in lines) if self.rank == 0 else None

    def write_log(self, path):
        """Collective: rank 0 writes log_text() to `path`, whole or not at all."""
        text = self.log_text()
        if text is not None:
            write_outputs([(path, text)])
