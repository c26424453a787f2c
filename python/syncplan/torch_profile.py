"""Profiles a torch.nn.Module per leaf module on the CPU and writes a syncplan.profile/v1 (SPEC section 3).

usage: torch_profile.py [--model tiny-gpt|MODULE:CLASS|FILE.py:CLASS] [--batch B] [--seq S]
                        [--iters N] [--warmup W] [--optimizer none|sgd|adamw] [--threads T]
                        [--trace TRACE.json [--trace-iters K]] -o PROFILE.json
       torch_profile.py --link LINK.json [--nproc N] [--backend auto|gloo|nccl] [--min-bytes 8]
                        [--max-bytes 64M] [--step-factor 2] [--iters N] [--warmup W] [--syncplan BIN]

Layers are the leaf modules (modules without children) in forward call order, named as
`named_modules()` names them (transformer.h.0.attn.c_attn). docs/torch.md describes the whole
workflow; the measurement rules follow.

What is measured, per training iteration (forward, loss, backward, optional optimizer step), after
`--warmup` iterations; each layer's figure is the median over `--iters` iterations:

* forward_s: from the end of the module's forward pre-hook to the start of its forward hook, summed
  over its calls in the iteration. The instrumentation (marking inputs, hooking outputs) happens
  outside that window.
* backward_s: from the moment the gradient of the module's output is complete to the moment the
  gradients of its inputs are computed and its own parameters' gradients are accumulated into
  `.grad`, summed over calls. Backward runs on the calling thread on the CPU and the engine runs
  ready nodes in decreasing sequence number, so no other module's backward runs inside that span.
  Start: a tensor hook on each output (`Tensor.register_hook`, a pre-hook of the output's grad_fn:
  it fires right before the module's last autograd node runs). End: the later of (a) the backward of
  an identity autograd Function wrapped around the module's inputs by the forward pre-hook, and
  (b) the post-hook of each owned parameter's AccumulateGrad node (the hook DDP and Horovod use for
  "gradient ready"). When neither applies (a module using only another layer's weight on token ids),
  the post-hook of the node that produced its output ends the span.
  Why not `register_full_backward_hook` (torch 1.13): when no input requires grad (the embeddings,
  whose input is token ids) it fires when the *output* gradient is ready, i.e. at the start of the
  module's backward, so wte/wpe would measure ~0 s; it fires before the parameters' AccumulateGrad
  nodes may have run; and its BackwardHookFunction is applied inside Module.__call__ between the
  pre-hook and the forward hook, so it would inflate every forward_s by its own overhead. The
  deprecated `register_backward_hook` sees only the module's last autograd node.
* Functional code outside leaf modules (GPT-2's attention matmuls and softmax inside `attn`, the
  residual adds, the loss) belongs to no layer; the script prints how much of the whole forward and
  backward the layers cover and writes the rest as the profile's top-level `unattributed`
  {forward_s, backward_s} (per iteration the whole pass minus the layers' sum, the median).
* frozen: true for a layer whose own parameters all have requires_grad False (DDP syncs none of
  them); a layer with some trainable parameters counts only those in param_count/param_bytes.
* update_s: with `--optimizer sgd|adamw`, each layer's owned parameters get their own optimizer
  (same hyperparameters; the math equals one optimizer over the model, both being per-parameter) and
  update_s is the time of that optimizer's step(), so per-call overhead counts once per layer (the
  script prints the sum beside one whole-model step for comparison). 0 for layers without
  parameters. With `--optimizer none` (default) update_s is null (unknown).
* sync_s is null: the all-reduce time depends on the cluster, not on this machine. `syncplan plan`
  needs it; fill it from a measured link (`syncplan profile-link`) or a cluster model.
* param_count/param_bytes: parameters the module owns directly (`recurse=False`). A Parameter
  object shared by several modules (GPT-2's lm_head.weight is transformer.wte.weight) is counted
  once, by the first module in forward order that owns it; the others get `tied_to` naming it.

--link sweeps torch.distributed.all_reduce instead (docs/torch.md section 5): as one rank of a
torchrun job, or spawning --nproc ranks of itself; the max over ranks of the mean time per size is
fitted by `syncplan import nccl-tests` (the C++ fit) and written as syncplan.link/v1 with source
measured:gloo or measured:nccl.

When this interpreter cannot import torch, the command re-executes itself with python3 or
/usr/bin/python3, whichever has torch first (docs/torch.md).

Entry points: `tools/torch_profile.py ARGS` (a wrapper that puts python/ on sys.path) and
`python3 -m syncplan.torch_profile ARGS` (PYTHONPATH=python or the installed package); the model is
syncplan.models' tiny-gpt, the link sweep syncplan.torch_link.

--trace additionally records `--trace-iters` more iterations with torch.profiler and writes its
Chrome trace, each leaf module's forward wrapped in record_function("syncplan.forward:NAME") and its
backward (the span above) in record_function("syncplan.backward:NAME"); `syncplan import
torch-trace` reads it (docs/torch.md).

MODULE:CLASS (or FILE.py:CLASS) names a class built with no arguments whose instances provide
`example_inputs(batch, seq)` (a tuple of forward arguments) and `example_loss(output, inputs)`
(a scalar tensor); the built-in tiny-gpt is such a class.

Exit codes: 0 success; 2 bad arguments or an output that cannot be written (one line on stderr);
1 any other failure. Outputs are written whole or not at all (temporary file, then rename), with the
mode any new file gets (0666 less the umask).
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

from . import torch_link
from ._cli import (MAX_THREADS, MILLISECONDS_PER_SECOND, NPROC_HELP, RANK_VARIABLES, Parser, check_number_range,
                   check_output_paths, entry_command, import_torch_or_reexec, spawn_ranks, write_outputs)
from .errors import UsageError, printable
from .layers import assign_owners, on_gradient_accumulated
from .models import check_model_argument, load_model_class

PROGRAM = "torch_profile.py"
MODULE = "syncplan.torch_profile"
TRACE_FORWARD_PREFIX = "syncplan.forward:"
TRACE_BACKWARD_PREFIX = "syncplan.backward:"
PROFILE_FORMAT = "syncplan.profile/v1"
SOURCE = "measured:cpu-torch"


# --------------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------------

# Options of one mode only (argparse dests); --iters, --warmup and --threads serve both.
PROFILE_ONLY = ("model", "model_name", "batch", "seq", "optimizer", "seed", "trace", "trace_iters")
LINK_ONLY = ("nproc", "backend", "min_bytes", "max_bytes", "step_factor", "syncplan")


def parse_arguments(argv):
    parser = Parser(prog=PROGRAM, description=__doc__.split("\n\n")[0],
                     epilog="Writes forward_s, backward_s and update_s in seconds per iteration (medians), "
                            "param_count and param_bytes per leaf module; sync_s null. What is measured: "
                            "docs/torch.md and this script's docstring.",
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="tiny-gpt",
                        help="tiny-gpt (built in: GPT-2 style, 4 blocks, width 128, 4 heads, byte "
                             "vocabulary, context 64), MODULE:CLASS or FILE.py:CLASS (default: tiny-gpt)")
    parser.add_argument("--model-name", help="profile's 'model' field (default: tiny-gpt or CLASS)")
    parser.add_argument("--batch", type=int, default=4, help="sequences per batch (default: 4)")
    parser.add_argument("--seq", type=int, default=64, help="tokens per sequence (default: 64)")
    parser.add_argument("--iters", type=int, default=10,
                        help="measured iterations; each layer's time is their median (default: 10)")
    parser.add_argument("--warmup", type=int, default=3, help="iterations run before measuring (default: 3)")
    parser.add_argument("--optimizer", choices=["none", "sgd", "adamw"], default="none",
                        help="measure update_s with this optimizer per layer; none: update_s null "
                             "(default: none)")
    parser.add_argument("--threads", type=int, help=f"torch.set_num_threads, 1 to {MAX_THREADS} (default: torch's own)")
    parser.add_argument("--seed", type=int, default=0, help="torch.manual_seed, 0 to 2^64-1 (default: 0)")
    parser.add_argument("--trace", help="also write a torch.profiler Chrome trace (JSON) of "
                                        "--trace-iters iterations with module annotations")
    parser.add_argument("--trace-iters", type=int, default=3, help="iterations in --trace (default: 3)")
    parser.add_argument("-o", "--output", help="profile to write (syncplan.profile/v1 JSON)")
    link = parser.add_argument_group("link sweep (--link instead of -o; docs/torch.md section 5)")
    link.add_argument("--link", help="sweep torch.distributed.all_reduce and write this syncplan.link/v1 file")
    link.add_argument("--nproc", type=int, help=NPROC_HELP)
    link.add_argument("--backend", choices=["auto", "gloo", "nccl"], default="auto",
                      help="torch.distributed backend; auto: nccl when CUDA has a GPU per rank, else gloo "
                           "(default: auto)")
    link.add_argument("--min-bytes", default="8", help="smallest all-reduce, bytes per rank; K/M/G = x1024 "
                                                       "(default: 8)")
    link.add_argument("--max-bytes", default="64M", help="largest all-reduce (default: 64M)")
    link.add_argument("--step-factor", type=int, default=2, help="size multiplier between samples (default: 2)")
    link.add_argument("--syncplan", help="the syncplan binary that fits the samples (default: $SYNCPLAN, "
                                         "build/bin/syncplan beside tools/, then syncplan on PATH)")
    args = parser.parse_args(argv)
    if (args.output is None) == (args.link is None):
        raise UsageError("give -o/--output PROFILE.json (profile a model) or --link LINK.json (sweep all-reduce), "
                         "one of them")
    # Options of the other mode would do nothing: refuse them rather than ignore them.
    unused = LINK_ONLY if args.link is None else PROFILE_ONLY
    for dest in unused:
        if getattr(args, dest) != parser.get_default(dest):
            raise UsageError(f"--{dest.replace('_', '-')}: only with {'--link' if args.link is None else '-o'}")
    if args.threads is not None:
        check_number_range("--threads", args.threads, 1, MAX_THREADS)
    check_number_range("--seed", args.seed, 0, 2**64 - 1, "torch.manual_seed's range")
    if args.link is not None:
        torch_link.check_link_arguments(args)
        return args

    for name, minimum in (("batch", 1), ("seq", 1), ("iters", 1), ("warmup", 0), ("trace_iters", 1)):
        value = getattr(args, name)
        if value < minimum:
            raise UsageError(f"--{name.replace('_', '-')}: at least {minimum}, got {value}")
    check_model_argument(args.model)
    check_output_paths([("-o", args.output), ("--trace", args.trace)])
    return args


# --------------------------------------------------------------------------------------------------
# Layers: leaf modules, their own parameters and ties
# --------------------------------------------------------------------------------------------------

class Layer:
    """One leaf module: name, owned (untied) parameters, tie, and per-iteration times (s)."""

    def __init__(self, name, module):
        self.name = name
        self.module = module
        self.params = []        # Parameters this layer owns (first in forward order to hold them)
        self.tied_to = None     # name of the layer owning a Parameter this module also uses
        self.forward_s = []     # per measured iteration
        self.backward_s = []
        self.update_s = []


class Call:
    """One call of a leaf module in one iteration: timestamps in time.perf_counter() seconds."""

    def __init__(self, layer, owns_params):
        self.layer = layer
        self.forward_start = self.forward_end = None
        self.backward_start = None
        self.backward_end = None
        self.pending = 0          # end events still expected: input mark + owned parameter grads
        self.owns_params = owns_params
        self.forward_range = None  # open record_function of the forward, in --trace iterations
        self.trace_range = None    # open record_function of the backward, in --trace iterations


def make_input_grad_mark(torch):
    """The identity autograd Function whose backward says "this call's input gradients are done"."""

    class InputGradMark(torch.autograd.Function):
        @staticmethod
        def forward(ctx, call_done, *tensors):
            ctx.call_done = call_done
            return tensors

        @staticmethod
        def backward(ctx, *grads):
            ctx.call_done()
            return (None,) + grads

    return InputGradMark


class HookProfiler:
    """Forward pre-hooks, forward hooks, output tensor hooks, input marks and AccumulateGrad hooks
    on every leaf module; records per-call spans for one iteration at a time."""

    def __init__(self, torch, model):
        self.torch = torch
        self.mark = make_input_grad_mark(torch)
        self.layers = {}          # module name -> Layer, in named_modules order until ordered
        self.forward_order = []   # Layer, in first-call order
        self.calls = []           # Call of the current iteration
        self.first_call = {}      # Layer -> its first Call of the current iteration
        self.open_calls = {}      # Layer -> stack of calls between pre-hook and forward hook
        self.annotate = False     # wrap spans in record_function (trace iterations)
        self.accumulators = []    # AccumulateGrad nodes kept alive so their hooks stay registered
        for name, module in model.named_modules():
            if name and not list(module.children()):
                layer = Layer(name, module)
                self.layers[name] = layer
                module.register_forward_pre_hook(self._pre_hook(layer))
                module.register_forward_hook(self._post_hook(layer))

    # -- hooks --------------------------------------------------------------------------------------
    def _pre_hook(self, layer):
        def hook(module, inputs):
            call = Call(layer, owns_params=layer not in self.first_call)
            self.first_call.setdefault(layer, call)
            self.open_calls.setdefault(layer, []).append(call)
            self.calls.append(call)
            if layer not in self.forward_order:
                self.forward_order.append(layer)
            marked = [i for i, x in enumerate(inputs)
                      if isinstance(x, self.torch.Tensor) and x.requires_grad]
            if marked and self.torch.is_grad_enabled():
                call.pending += 1
                outputs = self.mark.apply(lambda: self._end_event(call), *(inputs[i] for i in marked))
                inputs = list(inputs)
                for i, tensor in zip(marked, outputs):
                    inputs[i] = tensor
                inputs = tuple(inputs)
            if self.annotate:
                call.forward_range = self.torch.autograd.profiler.record_function(
                    TRACE_FORWARD_PREFIX + layer.name)
                call.forward_range.__enter__()
            call.forward_start = time.perf_counter()
            return inputs
        return hook

    def _post_hook(self, layer):
        def hook(module, inputs, output):
            now = time.perf_counter()
            call = self.open_calls[layer].pop()
            call.forward_end = now
            if self.annotate:
                call.forward_range.__exit__(None, None, None)
            if call.owns_params:
                call.pending += sum(1 for p in layer.params if p.requires_grad)
            outputs = [t for t in _tensors(self.torch, output) if t.requires_grad and t.grad_fn is not None]
            for tensor in outputs:
                tensor.register_hook(lambda grad, call=call: self._start_event(call))
            if outputs and call.pending == 0:
                # Only another layer's parameters need gradients (a tied weight on token ids): the
                # span ends when the node that produced the output has run.
                call.pending = 1
                outputs[0].grad_fn.register_hook(lambda grad_inputs, grad_outputs, call=call: self._end_event(call))
        return hook

    def _start_event(self, call):
        if call.backward_start is None:
            if self.annotate:
                call.trace_range = self.torch.autograd.profiler.record_function(
                    TRACE_BACKWARD_PREFIX + call.layer.name)
                call.trace_range.__enter__()
            call.backward_start = time.perf_counter()

    def _end_event(self, call):
        now = time.perf_counter()
        call.pending -= 1
        if call.pending == 0:
            call.backward_end = now
            if call.trace_range is not None:
                call.trace_range.__exit__(None, None, None)
                call.trace_range = None

    def hook_parameters(self):
        """After the first forward: orders layers, assigns parameters to their first owner in
        forward order, and hooks each owned parameter's AccumulateGrad node."""
        assign_owners(self.forward_order, UsageError)
        for layer in self.forward_order:
            for parameter in layer.params:
                if parameter.requires_grad:
                    _, keep = on_gradient_accumulated(self.torch, parameter,
                                                      lambda layer=layer: self._parameter_done(layer))
                    self.accumulators.append(keep)

    def _parameter_done(self, layer):
        if layer in self.first_call:  # else only modules tied to it ran: their own spans end them
            self._end_event(self.first_call[layer])

    # -- iterations ---------------------------------------------------------------------------------
    def begin_iteration(self):
        self.calls, self.first_call, self.open_calls = [], {}, {}

    def iteration_times(self):
        """Per layer: (forward_s, backward_s) of the iteration just run, summed over its calls."""
        times = {layer: [0.0, 0.0] for layer in self.forward_order}
        for call in self.calls:
            times[call.layer][0] += call.forward_end - call.forward_start
            if call.backward_start is None:  # no output needed a gradient: no backward work
                continue
            if call.backward_end is None:
                raise RuntimeError(f"layer {call.layer.name}: backward started but its input or "
                                   "parameter gradients never arrived")
            times[call.layer][1] += call.backward_end - call.backward_start
        return times


def _tensors(torch, value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(torch, item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(torch, item)


# --------------------------------------------------------------------------------------------------
# Training iterations
# --------------------------------------------------------------------------------------------------

def make_optimizer(torch, kind, params):
    if kind == "sgd":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9)
    return torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01)


def run_iteration(torch, model, inputs, profiler, optimizers):
    """One training iteration; returns (forward_s, backward_s, per-layer update_s) wall times."""
    profiler.begin_iteration()
    start = time.perf_counter()
    loss = model.example_loss(model(*inputs), inputs)
    forward_end = time.perf_counter()
    loss.backward()
    backward_end = time.perf_counter()
    update_s = {}
    for layer, optimizer in optimizers:
        step_start = time.perf_counter()
        optimizer.step()
        update_s[layer] = time.perf_counter() - step_start
    model.zero_grad(set_to_none=True)
    return forward_end - start, backward_end - forward_end, update_s


def median(values):
    return statistics.median(values) if values else None


def profile_model(torch, args):
    model_class, default_name = load_model_class(torch, args.model)
    torch.manual_seed(args.seed)
    model = model_class()
    model.train()
    inputs = model.example_inputs(args.batch, args.seq)
    profiler = HookProfiler(torch, model)
    if not profiler.layers:
        raise UsageError(f"--model {args.model}: the model has no submodules to profile")

    # The first forward fixes the call order; parameters are then assigned and hooked.
    with torch.no_grad():
        model(*inputs)
    profiler.hook_parameters()
    order = profiler.forward_order
    never_called = [name for name, layer in profiler.layers.items() if layer not in order]
    for name in never_called:
        print(f"{PROGRAM}: warning: leaf module {name} is never called in forward; left out", file=sys.stderr)
    in_layers = {id(p) for layer in order for p in layer.params}
    stray = [name for name, p in model.named_parameters() if id(p) not in in_layers]
    if stray:
        print(f"{PROGRAM}: warning: {len(stray)} parameter(s) are owned by no called leaf module and "
              f"are in no layer (first: {stray[0]})", file=sys.stderr)

    optimizers = []
    if args.optimizer != "none":
        optimizers = [(layer, make_optimizer(torch, args.optimizer, layer.params))
                      for layer in order if layer.params]

    whole_forward_s, whole_backward_s, whole_step_s = [], [], []
    for iteration in range(args.warmup + args.iters):
        forward_s, backward_s, update_s = run_iteration(torch, model, inputs, profiler, optimizers)
        if iteration < args.warmup:
            continue
        whole_forward_s.append(forward_s)
        whole_backward_s.append(backward_s)
        for layer, (layer_forward_s, layer_backward_s) in profiler.iteration_times().items():
            layer.forward_s.append(layer_forward_s)
            layer.backward_s.append(layer_backward_s)
            layer.update_s.append(update_s.get(layer, 0.0))
    if optimizers:  # one step over the whole model, for comparison with the per-layer sum
        whole_model_optimizer = make_optimizer(torch, args.optimizer, list(model.parameters()))
        for iteration in range(args.warmup + args.iters):
            profiler.begin_iteration()
            model.example_loss(model(*inputs), inputs).backward()
            step_start = time.perf_counter()
            whole_model_optimizer.step()
            if iteration >= args.warmup:
                whole_step_s.append(time.perf_counter() - step_start)
            model.zero_grad(set_to_none=True)

    trace_text = record_trace(torch, model, inputs, profiler, optimizers, args) if args.trace else None

    layers = []
    for layer in order:
        synced = synced_parameters(layer)
        entry = {
            "name": layer.name,
            "param_count": sum(p.numel() for p in synced),
            "param_bytes": sum(p.numel() * p.element_size() for p in synced),
            "forward_s": median(layer.forward_s),
            "backward_s": median(layer.backward_s),
            "update_s": median(layer.update_s) if args.optimizer != "none" else None,
            "sync_s": None,
        }
        if layer.tied_to is not None:
            entry["tied_to"] = layer.tied_to
        if is_frozen(layer):
            entry["frozen"] = True
        layers.append(entry)
    for layer in order:
        if not is_frozen(layer) and len(synced_parameters(layer)) < len(layer.params):
            print(f"{PROGRAM}: warning: layer {layer.name} has trainable and frozen parameters; "
                  "param_count and param_bytes hold only the trainable ones (those DDP all-reduces)",
                  file=sys.stderr)
    unattributed = unattributed_times(order, whole_forward_s, whole_backward_s)
    profile = {"format": PROFILE_FORMAT, "model": args.model_name or default_name, "source": SOURCE,
               "workers": None, "unattributed": unattributed, "layers": layers}
    # The workload it was measured at (docs/formats.md, `workload`), when the parameters are all of
    # one dtype the format names: `syncplan whatif --profile` then knows the batch behind samples/s.
    dtypes = {p.dtype for p in model.parameters() if p.is_floating_point()}
    dtype_names = {torch.float32: "fp32", torch.bfloat16: "bf16"}
    if len(dtypes) == 1 and next(iter(dtypes)) in dtype_names:
        profile["workload"] = {"batch": args.batch, "seq": args.seq, "dtype": dtype_names[next(iter(dtypes))]}
    summary = summarize(order, whole_forward_s, whole_backward_s, whole_step_s, optimizers, torch, args)
    return profile, trace_text, summary


def synced_parameters(layer):
    """The layer's own parameters that training updates and DDP all-reduces (requires_grad); all
    of them for a frozen layer, whose profile entry keeps what it holds (it syncs nothing)."""
    trainable = [p for p in layer.params if p.requires_grad]
    return trainable if trainable else layer.params


def is_frozen(layer):
    """A layer is frozen when it owns parameters and none of them requires grad (docs/torch.md)."""
    return bool(layer.params) and not any(p.requires_grad for p in layer.params)


def unattributed_times(order, whole_forward_s, whole_backward_s):
    """The profile's `unattributed` key: per measured iteration, the whole forward (backward) pass
    minus the sum of the layers' forward_s (backward_s) in that iteration, clamped at 0; the median
    over iterations, in seconds (docs/formats.md, docs/time-model.md, "Unattributed compute")."""
    result = {}
    for key, whole, index in (("forward_s", whole_forward_s, 0), ("backward_s", whole_backward_s, 1)):
        rest = [max(0.0, total - sum(layer.forward_s[i] if index == 0 else layer.backward_s[i] for layer in order))
                for i, total in enumerate(whole)]
        result[key] = median(rest)
    return result


def record_trace(torch, model, inputs, profiler, optimizers, args):
    """Runs --trace-iters annotated iterations under torch.profiler; returns the Chrome trace text."""
    from torch.profiler import ProfilerActivity, profile
    profiler.annotate = True
    try:
        with profile(activities=[ProfilerActivity.CPU]) as recorder:
            for _ in range(args.trace_iters):
                run_iteration(torch, model, inputs, profiler, optimizers)
    finally:
        profiler.annotate = False
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        recorder.export_chrome_trace(path)
        with open(path) as trace_file:
            return trace_file.read()


def summarize(order, whole_forward_s, whole_backward_s, whole_step_s, optimizers, torch, args):
    forward_sum = sum(median(layer.forward_s) for layer in order)
    backward_sum = sum(median(layer.backward_s) for layer in order)
    frozen = sum(1 for layer in order if is_frozen(layer))
    lines = [
        f"profiled {len(order)} layers of {args.model}" + (f" ({frozen} frozen)" if frozen else "") +
        f": batch {args.batch} x {args.seq} tokens, "
        f"median of {args.iters} iterations after {args.warmup} warm-up, {torch.get_num_threads()} thread(s)",
        coverage_line("forward", forward_sum, median(whole_forward_s)) +
        " (the rest: code outside leaf modules, e.g. attention math and the loss, and the hooks themselves)",
        coverage_line("backward", backward_sum, median(whole_backward_s)),
        "the rest of each pass is written as the profile's 'unattributed' times (docs/time-model.md, 'Unattributed compute')",
    ]
    if optimizers:
        update_sum = sum(median(layer.update_s) for layer in order)
        lines.append(f"update ({args.optimizer}): per-layer steps sum to {update_sum * MILLISECONDS_PER_SECOND:.3f} ms; "
                     f"one step over the whole model takes {median(whole_step_s) * MILLISECONDS_PER_SECOND:.3f} ms")
    return lines


def coverage_line(phase, layers_s, whole_s):
    """'forward: layers 1.234 ms of 1.456 ms (84.8%)': the share of the measured pass the layers cover."""
    share = f" ({100 * layers_s / whole_s:.1f}%)" if whole_s > 0 else ""
    return (f"{phase}: layers {layers_s * MILLISECONDS_PER_SECOND:.3f} ms of "
            f"{whole_s * MILLISECONDS_PER_SECOND:.3f} ms{share}")


def main(argv, script=None):
    """The command line (the module's docstring); `script`: the wrapper file that started it
    (tools/torch_profile.py), re-executed for spawned ranks and another interpreter. Returns the
    exit code."""
    command = entry_command(MODULE, script)
    try:
        args = parse_arguments(argv)
        if args.link is not None and not all(name in os.environ for name in RANK_VARIABLES):
            # each rank finds torch itself
            return spawn_ranks(args.nproc or 2, command, argv, PROGRAM, torch_link.SWEEP_TIMEOUT_S)
        torch = import_torch_or_reexec(argv, command, PROGRAM)
        if args.threads is not None:
            torch.set_num_threads(args.threads)
        if args.link is not None:
            return torch_link.run_link(torch, args, argv)
        profile, trace_text, summary = profile_model(torch, args)
        files = [(args.output, json.dumps(profile, indent=2, allow_nan=False) + "\n")]
        if trace_text is not None:
            files.append((args.trace, trace_text))
        write_outputs(files)
    except UsageError as error:
        print(f"{PROGRAM}: {printable(error)}", file=sys.stderr)
        return 2
    for line in summary:
        print(line)
    print(f"profile written to {args.output}" + (f"; trace written to {args.trace}" if args.trace else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

