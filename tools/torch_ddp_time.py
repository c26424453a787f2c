#!/usr/bin/env python3
"""Measures data-parallel training iterations of tiny-gpt with torch.distributed (gloo) for tools/ddp-compare.sh.

usage: torch_ddp_time.py measure [--nproc 2] [--configs compute,ddp:1,ddp:25,ssgd] [--batch 4] [--seq 64]
                                 [--iters 20] [--warmup 5] [--threads 1] -o MEASURED.json
       torch_ddp_time.py table --measured MEASURED.json --predicted NAME=RESULT.json ... -o TABLE.json

measure: spawns --nproc ranks (or runs as one rank under torchrun), each training tiny-gpt
(syncplan.models' tiny-gpt, data/models/tiny-gpt.json's model; SGD, next-byte loss, the same
batch every iteration, one thread per rank) in each configuration in turn:
  compute   no synchronization at all: the compute part of every other configuration
  ddp:CAP   torch.nn.parallel.DistributedDataParallel with bucket_cap_mb CAP (MiB in torch)
  ssgd      S-SGD, one all-reduce per layer after backprop: each leaf module's own trainable
            gradients flattened into one buffer, all-reduced (sum) and divided by the ranks, in
            backprop order, then the step (syncplan's `ssgd`: no overlap, docs/time-model.md 3)
  localsgd:H  local SGD with PyTorch's own PeriodicModelAverager (period H, no warm-up): after
            every H-th step the whole model's parameters are averaged in one flat all-reduce
            (syncplan's `flsgd` on a profile whose one layer is the whole model; the timed
            iterations must be a multiple of H and start at a multiple of H: --warmup and --iters)
Per configuration: --warmup untimed iterations, a barrier, --iters timed ones; the time is the
max over ranks of each rank's mean iteration (s), the least over --rounds round-robin rounds. Rank 0 writes {"configs": {name: seconds}}.

table: prints measured against predicted (syncplan simulate -o results, `mean_iteration_s`) with the error of the total and of the communication part (iteration minus the compute
configuration, for both), and writes the table as JSON. docs/torch.md section 6.

Exit codes: 0 success; 2 bad arguments or an output that cannot be written (one line); 1 any other
failure (a rank that fails ends the others).
"""

import argparse
import json
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = "torch_ddp_time.py"
sys.path.insert(0, os.path.join(HERE, "..", "python"))
from syncplan import _cli as cli, models  # noqa: E402 (after the path is set)
from syncplan.errors import UsageError  # noqa: E402

DEFAULT_CONFIGS = "compute,ddp:1,ddp:25,ssgd"
TIMEOUT_S = 600
PERCENT = 100


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def parse_arguments(argv):
    parser = _Parser(prog=PROGRAM, description=__doc__.split("\n\n")[0],
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    measure = commands.add_parser("measure", help="time the configurations (seconds per iteration)")
    measure.add_argument("--nproc", type=int, help=cli.NPROC_HELP)
    measure.add_argument("--configs", default=DEFAULT_CONFIGS,
                         help=f"comma-separated: compute, ddp:CAP_MB, ssgd, localsgd:H (default: {DEFAULT_CONFIGS})")
    measure.add_argument("--batch", type=int, default=4, help="sequences per batch and rank (default: 4)")
    measure.add_argument("--seq", type=int, default=64, help="tokens per sequence (default: 64)")
    measure.add_argument("--iters", type=int, default=20, help="timed iterations per configuration (default: 20)")
    measure.add_argument("--warmup", type=int, default=5, help="untimed iterations first (default: 5)")
    measure.add_argument("--threads", type=int, default=1, help="torch.set_num_threads per rank (default: 1)")
    measure.add_argument("--rounds", type=int, default=2,
                         help="times every configuration is timed, round-robin; the least counts (default: 2)")
    measure.add_argument("-o", "--output", required=True, help="JSON to write: {\"configs\": {name: s}}")
    table = commands.add_parser("table", help="measured against predicted, as a table and JSON")
    table.add_argument("--measured", required=True, help="measure's output")
    table.add_argument("--predicted", action="append", default=[], metavar="NAME=RESULT.json",
                       help="syncplan simulate -o result of configuration NAME (repeatable)")
    table.add_argument("-o", "--output", required=True, help="JSON table to write")
    args = parser.parse_args(argv)
    if args.command == "measure":
        for name, minimum in (("iters", 1), ("warmup", 0), ("batch", 1), ("seq", 1), ("threads", 1), ("rounds", 1)):
            if getattr(args, name) < minimum:
                raise UsageError(f"--{name}: at least {minimum}, got {getattr(args, name)}")
        if args.nproc is not None and not 2 <= args.nproc <= cli.MAX_LOCAL_RANKS:
            raise UsageError(f"--nproc: 2 to {cli.MAX_LOCAL_RANKS}, got {args.nproc}")
        args.configs = [parse_config(text) for text in args.configs.split(",")]
    folder = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(folder):
        raise UsageError(f"-o {args.output}: folder {folder} does not exist")
    return args


def parse_config(text):
    """'ddp:25' -> ('ddp:25', 25.0); 'localsgd:4' -> ('localsgd:4', 4); 'compute' and 'ssgd' ->
    (name, None)."""
    if text in ("compute", "ssgd"):
        return text, None
    kind, _, cap = text.partition(":")
    if kind == "localsgd":
        if not cap.isdigit() or int(cap) < 1:
            raise UsageError(f"--configs: '{text}': localsgd:H needs a whole period H >= 1")
        return text, int(cap)
    try:
        cap_mb = float(cap)
    except ValueError:
        cap_mb = -1.0
    if kind != "ddp" or not cap_mb > 0:
        raise UsageError(f"--configs: '{text}' is not compute, ssgd, localsgd:H or ddp:CAP_MB with a cap > 0")
    return text, cap_mb


# --------------------------------------------------------------------------------------------------
# measure
# --------------------------------------------------------------------------------------------------

def layer_gradients(model):
    """Per leaf module with trainable parameters of its own (each Parameter once, first owner in
    named_modules order), in backprop order (reverse): the lists of parameters S-SGD averages."""
    seen, layers = set(), []
    for _, module in model.named_modules():
        if list(module.children()):
            continue
        own = [p for p in module.parameters(recurse=False) if p.requires_grad and id(p) not in seen]
        seen.update(id(p) for p in own)
        if own:
            layers.append(own)
    return list(reversed(layers))


def average_per_layer(torch, layers, world):
    """S-SGD after backprop: one all-reduce per layer of its flattened gradients, then / world."""
    from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors
    for params in layers:
        grads = [p.grad for p in params]
        flat = _flatten_dense_tensors(grads)
        torch.distributed.all_reduce(flat)
        flat.div_(world)
        for grad, averaged in zip(grads, _unflatten_dense_tensors(flat, grads)):
            grad.copy_(averaged)


def time_config(torch, args, name, cap_mb, world):
    """Mean seconds per iteration of one configuration on this rank (after --warmup)."""
    dist = torch.distributed
    torch.manual_seed(0)  # the same initial model on every rank, as DDP's broadcast would make it
    model = models.define_tiny_gpt(torch)()
    model.train()
    torch.manual_seed(1 + dist.get_rank())  # each rank its own batch
    inputs = model.example_inputs(args.batch, args.seq)
    averager = None
    if name.startswith("localsgd:"):
        from torch.distributed.algorithms.model_averaging.averagers import PeriodicModelAverager
        averager = PeriodicModelAverager(period=cap_mb, warmup_steps=0)
        cap_mb = None  # no DDP: each rank trains its own replica between the averages
    if cap_mb:
        # The causal masks are constant bool buffers, which gloo cannot broadcast: DDP leaves them.
        torch.nn.parallel.DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(
            model, [name for name, _ in model.named_buffers()])
    trained = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=cap_mb) if cap_mb else model
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    layers = layer_gradients(model)

    def iteration():
        loss = model.example_loss(trained(*inputs), inputs)
        loss.backward()
        if name == "ssgd":
            average_per_layer(torch, layers, world)
        optimizer.step()
        if averager is not None:  # before zero_grad: torch 1.13's averager skips parameters without .grad
            averager.average_parameters(model.parameters())
        optimizer.zero_grad(set_to_none=True)

    for _ in range(args.warmup):
        iteration()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(args.iters):
        iteration()
    return (time.perf_counter() - start) / args.iters


def measure_rank(torch, args):
    import datetime
    dist = torch.distributed
    world = int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", rank=int(os.environ["RANK"]), world_size=world,
                            timeout=datetime.timedelta(seconds=cli.GROUP_TIMEOUT_S))
    torch.set_num_threads(args.threads)
    measured = {}
    # Round-robin rounds, the least per configuration: the first configuration timed otherwise pays
    # the process's start-up (allocator, caches) and a busy machine's bursts hit one of them only.
    for _ in range(args.rounds):
        for name, cap_mb in args.configs:
            mean = torch.tensor([time_config(torch, args, name, cap_mb, world)], dtype=torch.float64)
            dist.all_reduce(mean, op=dist.ReduceOp.MAX)  # the slowest rank's mean
            measured[name] = min(measured.get(name, float("inf")), float(mean.item()))
    dist.destroy_process_group()
    return measured, world


def run_measure(args, argv):
    if not all(name in os.environ for name in cli.RANK_VARIABLES):
        return cli.spawn_ranks(args.nproc or 2, cli.entry_command(None, __file__), argv, PROGRAM, TIMEOUT_S)
    torch = cli.import_torch_or_reexec(argv, cli.entry_command(None, __file__), PROGRAM)
    measured, world = measure_rank(torch, args)
    if int(os.environ["RANK"]) == 0:
        document = {"model": "tiny-gpt", "backend": "gloo", "workers": world, "batch": args.batch, "seq": args.seq,
                    "iters": args.iters, "rounds": args.rounds, "threads": args.threads, "configs": measured}
        cli.write_outputs([(args.output, json.dumps(document, indent=2) + "\n")])
        for name, seconds in measured.items():
            print(f"measured {name}: {seconds * cli.MILLISECONDS_PER_SECOND:.3f} ms per iteration")
    return 0


# --------------------------------------------------------------------------------------------------
# table
# --------------------------------------------------------------------------------------------------

def read_json(path, what):
    try:
        with open(path) as source:
            return json.load(source)
    except (OSError, ValueError) as error:
        raise UsageError(f"{what} {path}: cannot read ({error})") from error


def relative_error(predicted, measured):
    """(predicted - measured) / measured, or None when measured is not positive."""
    return (predicted - measured) / measured if measured > 0 else None


def run_table(args):
    measured = read_json(args.measured, "--measured").get("configs", {})
    predicted = {}
    for item in args.predicted:
        name, _, path = item.partition("=")
        if not name or not path:
            raise UsageError(f"--predicted {item}: expected NAME=RESULT.json")
        result = read_json(path, "--predicted")
        # mean_iteration_s: both engines' results have it (docs/formats.md).
        if not isinstance(result.get("mean_iteration_s"), (int, float)):
            raise UsageError(f"--predicted {path}: no mean_iteration_s (not a syncplan.result/v1?)")
        predicted[name] = result["mean_iteration_s"]
    for name in ("compute",):
        if name not in measured or name not in predicted:
            raise UsageError(f"the '{name}' configuration must be measured and predicted (it is the compute part)")
    rows = []
    for name in measured:
        if name not in predicted:
            raise UsageError(f"--predicted: no prediction for the measured configuration '{name}'")
        comm_measured = measured[name] - measured["compute"]
        comm_predicted = predicted[name] - predicted["compute"]
        rows.append({"config": name, "measured_s": measured[name], "predicted_s": predicted[name],
                     "error_total": relative_error(predicted[name], measured[name]),
                     "measured_comm_s": comm_measured, "predicted_comm_s": comm_predicted,
                     "error_comm": relative_error(comm_predicted, comm_measured) if name != "compute" else None})
    ms = cli.MILLISECONDS_PER_SECOND
    print(f"{'config':<10} {'measured ms':>12} {'predicted ms':>13} {'error':>8} {'comm meas ms':>13} "
          f"{'comm pred ms':>13} {'comm error':>11}")
    for row in rows:
        def percent(value):
            return "-" if value is None else f"{PERCENT * value:+.1f}%"
        print(f"{row['config']:<10} {row['measured_s'] * ms:12.3f} {row['predicted_s'] * ms:13.3f} "
              f"{percent(row['error_total']):>8} {row['measured_comm_s'] * ms:13.3f} "
              f"{row['predicted_comm_s'] * ms:13.3f} {percent(row['error_comm']):>11}")
    bad = [f"{row['config']} ({key} {row[key]})" for row in rows for key in ("measured_s", "predicted_s")
           if not row[key] > 0]
    if bad:
        print(f"{PROGRAM}: error: times that are not positive: {', '.join(bad)}", file=sys.stderr)
        return 1
    document = {"units": "seconds per iteration; errors are (predicted - measured) / measured",
                "comm": "iteration minus the compute configuration's (measured and predicted alike)",
                "rows": rows}
    cli.write_outputs([(args.output, json.dumps(document, indent=2) + "\n")])
    return 0


def main(argv):
    try:
        args = parse_arguments(argv)
        return run_measure(args, argv) if args.command == "measure" else run_table(args)
    except UsageError as error:
        print(f"{PROGRAM}: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
