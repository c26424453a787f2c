"""The link sweep of the torch tools (docs/torch.md section 5): torch.distributed.all_reduce timed over
message sizes on the job's ranks, fitted by `syncplan import nccl-tests` into a syncplan.link/v1 file.

Run through `syncplan.torch_profile --link` (tools/torch_profile.py --link), as one rank of a
torchrun job or spawning its ranks.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

from ._cli import MAX_LOCAL_RANKS, GROUP_TIMEOUT_S, check_output_paths, find_syncplan, write_outputs
from .errors import UsageError

PROGRAM = "torch_profile.py"
SIZE_SUFFIXES = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}  # as syncplan profile-link's -b/-e
FLOAT32_BYTES = 4


def parse_size(option, text):
    """'64M' -> 67108864 bytes; UsageError naming the option otherwise."""
    factor = SIZE_SUFFIXES.get(text[-1:].upper(), 1)
    digits = text[:-1] if factor > 1 else text
    if not digits.isdigit():
        raise UsageError(f"{option}: expected a byte count such as 8, 64K or 16M, got '{text}'")
    return int(digits) * factor


def check_link_arguments(args):
    args.min_bytes = parse_size("--min-bytes", args.min_bytes)
    args.max_bytes = parse_size("--max-bytes", args.max_bytes)
    if args.min_bytes < FLOAT32_BYTES:
        raise UsageError(f"--min-bytes: at least {FLOAT32_BYTES} (one float32), got {args.min_bytes}")
    if args.max_bytes < 2 * args.min_bytes:
        raise UsageError(f"--max-bytes: at least twice --min-bytes ({2 * args.min_bytes}), got {args.max_bytes}: "
                         "the fit needs 2 sizes")
    if args.max_bytes > MAX_SWEEP_BYTES:
        raise UsageError(f"--max-bytes: at most {MAX_SWEEP_BYTES} (4G), got {args.max_bytes}")
    if args.step_factor < 2:
        raise UsageError(f"--step-factor: at least 2, got {args.step_factor}")
    if args.nproc is not None and not 2 <= args.nproc <= MAX_LOCAL_RANKS:
        raise UsageError(f"--nproc: 2 to {MAX_LOCAL_RANKS} ranks, got {args.nproc}")
    for name in ("iters", "warmup"):
        if getattr(args, name) < (1 if name == "iters" else 0):
            raise UsageError(f"--{name}: at least {1 if name == 'iters' else 0}, got {getattr(args, name)}")
    check_output_paths([("--link", args.link)])
    args.syncplan = find_syncplan(args.syncplan)


# --------------------------------------------------------------------------------------------------
# Link sweep: torch.distributed.all_reduce over sizes, fitted by syncplan (docs/torch.md section 5)
# --------------------------------------------------------------------------------------------------

MAX_SWEEP_BYTES = 4 * 1024 ** 3   # a bigger buffer per rank is no sweep of one machine's memory
SWEEP_TIMEOUT_S = 900             # the whole spawned sweep; a rank that hangs fails it (exit 1)
MICROSECONDS_PER_SECOND = 1e6     # nccl-tests' JSON times are microseconds
BYTES_PER_GB = 1e9                # nccl-tests' GB


def sweep_sizes(args):
    """min, min x factor, ... <= max, each rounded down to whole float32 elements (bytes)."""
    sizes, size = [], args.min_bytes
    while size <= args.max_bytes:
        sizes.append(size // FLOAT32_BYTES * FLOAT32_BYTES)
        size *= args.step_factor
    return sizes


def choose_backend(torch, requested, local_ranks):
    """auto: NCCL when CUDA has a GPU for each of this machine's `local_ranks`, else gloo."""
    if requested != "auto":
        return requested
    if (torch.cuda.is_available() and torch.cuda.device_count() >= local_ranks and
            torch.distributed.is_nccl_available()):
        return "nccl"
    return "gloo"


def sweep_rank(torch, args):
    """One rank of the sweep (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in the environment): per
    size, --warmup untimed all-reduces (the first one checked), a barrier, --iters timed ones, each
    waited for; returns rank 0's list of (size_bytes, time_s): the max over ranks of the mean."""
    import datetime
    dist = torch.distributed
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    backend = choose_backend(torch, args.backend, int(os.environ.get("LOCAL_WORLD_SIZE", world)))
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)) % torch.cuda.device_count())
    device = torch.device("cuda") if backend == "nccl" else torch.device("cpu")
    dist.init_process_group(backend, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=GROUP_TIMEOUT_S))
    wait = torch.cuda.synchronize if backend == "nccl" else (lambda: None)
    samples = []
    for size in sweep_sizes(args):
        buffer = torch.full((size // FLOAT32_BYTES,), float(rank + 1), dtype=torch.float32, device=device)
        dist.all_reduce(buffer)
        wait()
        expected = world * (world + 1) / 2  # 1 + 2 + ... + N, exact in float32
        wrong = int((buffer != expected).sum())
        if wrong:
            raise RuntimeError(f"rank {rank}: all_reduce of {size} bytes: {wrong} wrong element(s), "
                               f"expected {expected}")
        for _ in range(max(0, args.warmup - 1)):
            dist.all_reduce(buffer)
        wait()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(args.iters):
            dist.all_reduce(buffer)
            wait()
        mean = torch.tensor([(time.perf_counter() - start) / args.iters], dtype=torch.float64, device=device)
        dist.all_reduce(mean, op=dist.ReduceOp.MAX)  # the slowest rank decides when it is done
        samples.append((size, float(mean.item())))
    dist.barrier()
    dist.destroy_process_group()
    return samples, backend, world


def nccl_tests_json(samples, world, argv):
    """The samples as an nccl-tests -J file (version 2: the fields `syncplan import nccl-tests`
    reads, docs/link.md), in-place columns only: torch's all_reduce reduces in place."""
    results = []
    for size, time_s in samples:
        algbw = size / time_s / BYTES_PER_GB if time_s > 0 else 0.0
        busbw = algbw * 2 * (world - 1) / world
        measured = {"time": time_s * MICROSECONDS_PER_SECOND, "alg_bw": algbw, "bus_bw": busbw, "nwrong": 0}
        results.append({"size": size, "count": size // FLOAT32_BYTES, "type": "float", "redop": "sum",
                        "root": -1, "in_place": measured})
    return {"version": 2, "args": [PROGRAM, *argv],
            "config": {"nthreads": 1, "ngpus": 1, "devices": [{"rank": r} for r in range(world)]},
            "results": results}


def fit_link(samples, backend, world, args, argv):
    """Fits the samples with `syncplan import nccl-tests` (the C++ fit of docs/link.md, not a copy
    of it) and returns the syncplan.link/v1 text with source measured:<backend>; None when syncplan
    refused the samples (its message is passed through)."""
    with tempfile.TemporaryDirectory() as folder:
        log = os.path.join(folder, "samples.json")
        fitted = os.path.join(folder, "link.json")
        with open(log, "w") as out:
            json.dump(nccl_tests_json(samples, world, argv), out)
        result = subprocess.run([args.syncplan, "import", "nccl-tests", log, "--workers", str(world),
                                 "--in-place", "-o", fitted], capture_output=True, text=True)
        for text, stream in ((result.stdout, sys.stdout), (result.stderr, sys.stderr)):
            stream.write(text.replace(log, "the sweep").replace(fitted, args.link))
        if result.returncode != 0:
            return None
        with open(fitted) as link_file:
            link = json.load(link_file)
    link["source"] = f"measured:{backend}"
    return json.dumps(link, indent=2, allow_nan=False) + "\n"


def run_link(torch, args, argv):
    """--link in one rank (of torchrun's job or of the ranks spawn_ranks started)."""
    world = int(os.environ["WORLD_SIZE"])
    if args.nproc is not None and args.nproc != world:
        raise UsageError(f"--nproc {args.nproc}: the job has WORLD_SIZE {world} ranks")
    if world < 2:
        raise UsageError("--link: WORLD_SIZE 1: an all-reduce on one rank crosses no link; run 2 or more ranks")
    samples, backend, world = sweep_rank(torch, args)
    if int(os.environ["RANK"]) == 0:
        for size, time_s in samples:
            print(f"{size:>12} B  {time_s * MICROSECONDS_PER_SECOND:12.2f} us  ({backend}, {world} ranks)")
        text = fit_link(samples, backend, world, args, argv)
        if text is None:
            print(f"{PROGRAM}: error: syncplan could not fit the sweep (above); nothing written", file=sys.stderr)
            return 1
        write_outputs([(args.link, text)])
        print(f"link written to {args.link}")
    return 0
