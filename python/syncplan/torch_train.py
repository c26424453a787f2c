"""Trains a torch model data-parallel with a syncplan plan or strategy through PlanExecutor: the driver of the examples and tests (docs/torch.md "PlanExecutor").

usage: python3 -m syncplan.torch_train (--plan PLAN.json | --strategy NAME --period H)
           [--model tiny-gpt|MODULE:CLASS|FILE.py:CLASS] [--iterations K] [--batch B] [--seq S]
           [--data FILE] [--seed S] [--lr LR] [--threads T] [--profile PROFILE.json]
           [--allow-unplanned] [--timeout-s T] [--backend gloo|nccl] [--nproc N] [--log LOG.jsonl] [--trace TRACE.json]

As one rank of a torchrun job (RANK and WORLD_SIZE set), or spawning --nproc ranks of itself on
127.0.0.1. Every rank builds the model from --seed (the same initial parameters), trains it with
AdamW (--lr, torch's defaults otherwise) for --iterations steps on its own batches, and the
executor synchronizes it as the plan says; rank 0 writes every rank's log lines (--log, the format
of `syncplan run --log`, docs/formats.md "Training log") and the measured trace (--trace, the
format of `syncplan run --trace`, "Measured trace").

Batches: with --data, the file's bytes (tiny-gpt's byte vocabulary) cut into one shard per rank as
`syncplan run` does (rank r of N takes bytes [floor(r F / N), floor((r + 1) F / N)), reads B x S
tokens at its cursor, which advances B x S and wraps at the shard's end); without it, the model's
example_inputs(B, S) drawn anew each iteration (torch's generator seeded by --seed and the rank).

Exit codes: 0 success; 2 bad arguments, plan, profile or model (one line from rank 0, before any
step, every rank having checked: docs/torch.md "Checks before training"; the paths and flags before
any rank starts: "The driver"), or a --log/--trace that cannot be written at the end (a FIFO that
no process opened for reading within 5 s); 1 any other failure, e.g. an all-reduce that failed or
missed the --timeout-s deadline because a rank died or stopped (one line per surviving rank).
"""

import datetime
import os
import sys

from ._cli import (MAX_LOCAL_RANKS, MAX_THREADS, NPROC_HELP, RANK_VARIABLES, Parser, check_input_paths,
                   check_number_range, check_output_paths, entry_command, import_torch_or_reexec, open_regular,
                   oversubscription_warning, spawn_ranks, write_outputs)
from .errors import PlanError, UsageError, printable
from .models import TINY_GPT, TINY_GPT_CONTEXT, check_model_argument, load_model_class
from .schedule import strategy_schedule

PROGRAM = "torch_train.py"
MODULE = "syncplan.torch_train"
SPAWN_TIMEOUT_S = 3600  # the whole spawned job; each wait within it has --timeout-s
MAX_LEARNING_RATE = 10  # syncplan run's bound (runtime/trainer.cpp kMaxLearningRate)
MAX_SEED = (2**64 - 1 - MAX_LOCAL_RANKS) // MAX_LOCAL_RANKS  # seed * MAX_LOCAL_RANKS + 1 + rank < 2^64


def parse_arguments(argv):
    parser = Parser(prog=PROGRAM, description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--plan", help="syncplan.plan/v1 file to execute")
    source.add_argument("--strategy", help="ssgd, wfbp, flsgd or plsgd-even (with --period)")
    parser.add_argument("--period", type=int, help="H of --strategy")
    parser.add_argument("--model", default="tiny-gpt", help="tiny-gpt, MODULE:CLASS or FILE.py:CLASS (default: tiny-gpt)")
    parser.add_argument("--iterations", type=int, default=8, help="optimizer steps (default: 8)")
    parser.add_argument("--batch", type=int, default=4, help="sequences per batch and rank (default: 4)")
    parser.add_argument("--seq", type=int, default=32, help="tokens per sequence (default: 32)")
    parser.add_argument("--data", help="text file whose bytes are the tokens (tiny-gpt); default: example_inputs")
    parser.add_argument("--seed", type=int, default=3,
                        help=f"initial parameters and batches, 0 to {MAX_SEED} (default: 3)")
    parser.add_argument("--lr", type=float, default=0.003,
                        help=f"AdamW's learning rate, in (0, {MAX_LEARNING_RATE}) (default: 0.003)")
    parser.add_argument("--threads", type=int, default=1,
                        help=f"torch.set_num_threads per rank, 1 to {MAX_THREADS} (default: 1)")
    parser.add_argument("--profile", help="the plan's profile: its param_count, tied_to and frozen are checked")
    parser.add_argument("--allow-unplanned", action="store_true",
                        help="accept modules with parameters that the plan does not name (never averaged)")
    parser.add_argument("--timeout-s", type=float, default=60.0,
                        help="the process group's timeout: every wait for the other ranks, 1 to 86400 s (default: 60)")
    parser.add_argument("--backend", choices=["gloo", "nccl"], default="gloo", help="(default: gloo)")
    parser.add_argument("--nproc", type=int, help=NPROC_HELP)
    parser.add_argument("--log", help="JSON lines to write (rank 0, whole at the end)")
    parser.add_argument("--trace", help="measured Chrome trace to write (rank 0, whole at the end)")
    args = parser.parse_args(argv)
    if args.plan is None and args.strategy is None:
        raise UsageError("give --plan PLAN.json or --strategy NAME --period H")
    if args.strategy is not None and args.period is None:
        raise UsageError(f"--strategy {printable(args.strategy)}: give --period H")
    if args.plan is not None and args.period is not None:
        raise UsageError("--period: only with --strategy (a plan has its own period)")
    if args.strategy is not None:
        try:
            strategy_schedule([], args.strategy, args.period)
        except PlanError as error:  # "period: ..." or "strategy: ...", the executor's argument names
            raise UsageError(f"--{error}") from None
    for name, minimum in (("iterations", 1), ("batch", 1), ("seq", 2)):
        if getattr(args, name) < minimum:
            raise UsageError(f"--{name}: at least {minimum}, got {getattr(args, name)}")
    # syncplan run's ranges (runtime/trainer.cpp): a deadline that detects a dead rank without
    # overflowing torch's timedelta, and a learning rate AdamW can step with.
    check_number_range("--timeout-s", args.timeout_s, 1, 86400, "seconds")
    if not 0 < args.lr < MAX_LEARNING_RATE:
        raise UsageError(f"--lr: must be a number > 0 and below {MAX_LEARNING_RATE} (AdamW's steps would overflow), "
                         f"got {args.lr}")
    check_number_range("--threads", args.threads, 1, MAX_THREADS)
    # Each rank seeds its batches with seed * MAX_LOCAL_RANKS + 1 + rank, which torch.manual_seed
    # takes below 2^64.
    check_number_range("--seed", args.seed, 0, MAX_SEED)
    if args.nproc is not None and not 1 <= args.nproc <= MAX_LOCAL_RANKS:
        raise UsageError(f"--nproc: 1 to {MAX_LOCAL_RANKS} ranks, got {args.nproc}")
    check_model_argument(args.model)
    if args.model == TINY_GPT and args.seq > TINY_GPT_CONTEXT:
        raise UsageError(f"--seq: at most tiny-gpt's context {TINY_GPT_CONTEXT}, got {args.seq}")
    # Only regular files are read (a FIFO would block every rank) and every output's place must take
    # a new file, all before any rank starts (docs/torch.md "The driver").
    inputs = [("--plan", args.plan), ("--profile", args.profile), ("--data", args.data)]
    check_input_paths(inputs)
    check_output_paths([("--log", args.log), ("--trace", args.trace)], inputs)
    return args


class ByteShard:
    """This rank's shard of a file's bytes and its cursor (syncplan run's data order, runtime/byte_data.hpp)."""

    def __init__(self, torch, path, rank, world, batch, seq):
        try:
            with open_regular(path, "rb") as data_file:
                data = data_file.read()
        except OSError as error:
            raise UsageError(f"--data: {printable(path)}: cannot read file ({error.strerror or error})") from None
        begin, end = len(data) * rank // world, len(data) * (rank + 1) // world
        self.torch = torch
        self.tokens = torch.tensor(list(data[begin:end]), dtype=torch.int64)
        if self.tokens.numel() < batch * seq:
            raise UsageError(f"--data: {printable(path)}: rank {rank}'s shard has {self.tokens.numel()} bytes, fewer "
                             f"than one batch ({batch} x {seq})")
        self.batch, self.seq, self.cursor = batch, seq, 0

    def next(self):
        count = self.batch * self.seq
        index = (self.cursor + self.torch.arange(count)) % self.tokens.numel()
        self.cursor = (self.cursor + count) % self.tokens.numel()
        return (self.tokens[index].view(self.batch, self.seq),)


def train_rank(torch, args):
    """One rank: returns the exit code (the module's docstring)."""
    from .executor import PlanExecutor, SyncError
    dist = torch.distributed
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(args.threads)
    if args.backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)) % torch.cuda.device_count())
    device = torch.device("cuda") if args.backend == "nccl" else torch.device("cpu")
    try:
        dist.init_process_group(args.backend, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=args.timeout_s))
    # A rank that did not come, or came and stopped, within the timeout: RuntimeError, or (torch
    # 1.13's TCPStore client, when the store does not answer in time) TimeoutError, an OSError.
    except (RuntimeError, OSError) as error:
        print(f"{PROGRAM}: rank {rank}: the process group did not form: {printable(' '.join(str(error).split()))}",
              file=sys.stderr, flush=True)
        return 1

    def say(line, stream=sys.stderr):
        if rank == 0:
            print(f"{PROGRAM}: {printable(line)}", file=stream, flush=True)

    # Ranks that time-slice the machine's CPUs: said by its first rank once the first iteration has
    # run (bad input found before it stays one line).
    oversubscribed = None
    if args.backend == "gloo" and int(os.environ.get("LOCAL_RANK", rank)) == 0:
        oversubscribed = oversubscription_warning(int(os.environ.get("LOCAL_WORLD_SIZE", world)), args.threads,
                                                  len(os.sched_getaffinity(0)))

    try:
        model_class, _ = load_model_class(torch, args.model)
        torch.manual_seed(args.seed)  # the same initial parameters on every rank
        model = model_class().to(device)
        model.train()
        source = args.plan if args.plan is not None else args.strategy
        executor = PlanExecutor(model, source, period=args.period, profile=args.profile,
                                allow_unplanned=args.allow_unplanned, warn=say)
        data = ByteShard(torch, args.data, rank, world, args.batch, args.seq) if args.data else None
    except (UsageError, PlanError) as error:
        say(str(error))
        return 2
    except RuntimeError as error:  # the ranks' agreement failed: another rank ended before it
        print(f"{PROGRAM}: rank {rank}: before the first iteration: {printable(' '.join(str(error).split()))}",
              file=sys.stderr, flush=True)
        return 1
    torch.manual_seed(args.seed * MAX_LOCAL_RANKS + 1 + rank)  # each rank its own batches
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    say(f"{world} rank{'' if world == 1 else 's'} agreed on {args.plan or args.strategy} (H = {executor.period}); "
        f"training {args.iterations} iterations", sys.stdout)
    try:
        for _ in range(args.iterations):
            inputs = data.next() if data is not None else model.example_inputs(args.batch, args.seq)
            inputs = tuple(x.to(device) for x in inputs)
            loss = model.example_loss(model(*inputs), inputs)
            loss.backward()
            executor.step(optimizer, loss=loss)
            optimizer.zero_grad(set_to_none=True)
            if oversubscribed:
                print(f"{PROGRAM}: warning: {oversubscribed}", file=sys.stderr, flush=True)
                oversubscribed = None
        executor.drain()  # delayed syncs still in flight at the end are dropped (docs/runtime.md section 11)
        # Both files from rank 0 in one write, whole or neither (gathered by every rank first).
        files = []
        if args.log:
            files.append((args.log, executor.log_text(), f"--log: {printable(args.log)}"))
        if args.trace:
            files.append((args.trace, executor.trace_text({"model": args.model, "batch": args.batch, "seq": args.seq,
                                                           "device": device.type}), f"--trace: {printable(args.trace)}"))
        if rank == 0:
            write_outputs(files)
        losses = [record["loss"] for record in executor.records]
        say(f"rank 0: {len(losses)} iterations of {executor.schedule.strategy} (H = {executor.period}), loss "
            f"{losses[0]:.4f} -> {losses[-1]:.4f}" + (f"; log written to {args.log}" if args.log else ""), sys.stdout)
    except (UsageError, PlanError) as error:
        # Found only in the loop: a model's example_inputs refusing the arguments, a strategy's layers
        # (known at the first forward) that one all-reduce cannot hold, an output that cannot be written.
        say(str(error))
        return 2
    except SyncError as error:
        print(f"{PROGRAM}: {printable(error)}", file=sys.stderr, flush=True)
        return 1
    except RuntimeError as error:  # a collective of the driver's own (the log's gathering) that failed
        reason = " ".join(str(error).split())
        print(f"{PROGRAM}: rank {rank}: {printable(reason)}", file=sys.stderr, flush=True)
        return 1
    dist.destroy_process_group()
    return 0


def main(argv, script=None):
    """The command line (the module's docstring); returns the exit code."""
    command = entry_command(MODULE, script)
    try:
        args = parse_arguments(argv)
        if not all(name in os.environ for name in RANK_VARIABLES):
            return spawn_ranks(args.nproc or 2, command, argv, PROGRAM, SPAWN_TIMEOUT_S)
        torch = import_torch_or_reexec(argv, command, PROGRAM)
        code = train_rank(torch, args)
        if code == 1:
            # A collective failed: the process group's threads may still wait for a stopped peer,
            # and the interpreter's exit would join them; the line is out, so leave now.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        return code
    except UsageError as error:
        print(f"{PROGRAM}: {printable(error)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
