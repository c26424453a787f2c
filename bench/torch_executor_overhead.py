"""Benchmark (not a test): PlanExecutor's bookkeeping against a hand-written loop that does the same all-reduces, on tiny-gpt with 2 gloo ranks.

usage: PYTHONPATH=python /usr/bin/python3 bench/torch_executor_overhead.py [--strategy plsgd-even]
           [--period 4] [--iterations 40] [--rounds 3] [--batch 4] [--seq 64]

The hand-written loop is DreamDDP's style (docs/torch.md section 8): the executor's own schedule and
bucket buffers, one AccumulateGrad hook per parameter that counts down its layer and launches the
layer's bucket (flat copy, one asynchronous all_reduce), a wait and copy back before the step, no
records. Both run the same iterations in alternating rounds; per round the max over ranks of the mean
iteration time, the least over rounds. Prints both and the executor's overhead in percent of an
iteration (docs/torch.md gives the figure measured here).
"""

import argparse
import datetime
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))


def hand_loop(torch, model, executor_schedule, layers_of, optimizer, batches, world):
    """Trains len(batches) iterations with hand-made hooks; returns seconds per iteration."""
    dist = torch.distributed
    from syncplan.layers import on_gradient_accumulated
    period = executor_schedule.period
    state = {"h": 0, "left": {}, "inflight": []}
    flats = [[torch.empty(sum(p.numel() for n in b.layers for p in layers_of[n]), dtype=torch.float32)
              for b in buckets] for buckets in executor_schedule.iterations]
    bucket_of = [{n: b for b, bucket in enumerate(buckets) for n in bucket.layers}
                 for buckets in executor_schedule.iterations]

    def launch(h, b):
        params = [p for n in executor_schedule.iterations[h][b].layers for p in layers_of[n]]
        flat = flats[h][b]
        torch.cat([p.detach().reshape(-1) for p in params], out=flat)
        state["inflight"].append((params, flat, dist.all_reduce(flat, async_op=True)))

    def ready(name):
        h = state["h"]
        state["left"][name] -= 1
        if state["left"][name] == 0 and name in bucket_of[h]:
            b = bucket_of[h][name]
            bucket = executor_schedule.iterations[h][b]
            if all(state["left"][n] == 0 for n in bucket.layers):
                launch(h, b)

    keep = []
    for name, params in layers_of.items():
        for p in params:
            handle, node = on_gradient_accumulated(torch, p, lambda name=name: ready(name))
            keep.append((handle, node))
    start = time.perf_counter()
    for i, tokens in enumerate(batches):
        state["h"] = i % period
        state["left"] = {n: len(ps) for n, ps in layers_of.items()}
        loss = model.example_loss(model(tokens), (tokens,))
        loss.backward()
        for params, flat, work in state["inflight"]:
            work.wait()
            flat.div_(world)
            offset = 0
            with torch.no_grad():
                for p in params:
                    p.copy_(flat[offset:offset + p.numel()].view_as(p))
                    offset += p.numel()
        state["inflight"] = []
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    elapsed = (time.perf_counter() - start) / len(batches)
    for handle, _ in keep:
        handle.remove()
    return elapsed


def executor_loop(torch, model, executor, optimizer, batches):
    start = time.perf_counter()
    for tokens in batches:
        loss = model.example_loss(model(tokens), (tokens,))
        loss.backward()
        executor.step(optimizer, loss=loss)
        optimizer.zero_grad(set_to_none=True)
    return (time.perf_counter() - start) / len(batches)


def rank(args):
    import torch
    from syncplan.models import tiny_gpt
    from syncplan.torch import PlanExecutor
    dist = torch.distributed
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]),
                            timeout=datetime.timedelta(seconds=120))
    world = dist.get_world_size()
    torch.manual_seed(1 + dist.get_rank())
    batches = [torch.randint(0, 256, (args.batch, args.seq)) for _ in range(args.iterations)]
    results = {"executor": [], "hand": []}
    for _ in range(args.rounds):
        for kind in ("executor", "hand"):
            model = tiny_gpt(seed=0)
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
            executor = PlanExecutor(model, args.strategy, period=args.period)
            model.example_loss(model(batches[0]), (batches[0],))  # the strategy's layer order: first forward
            if kind == "hand":
                layers = {layer.name: layer.trainable for layer in executor._layers if layer.trainable}
                schedule = executor.schedule
                executor.remove()
                dist.barrier()
                seconds = hand_loop(torch, model, schedule, layers, optimizer, batches, world)
            else:
                dist.barrier()
                seconds = executor_loop(torch, model, executor, optimizer, batches)
                executor.remove()
            slowest = torch.tensor([seconds], dtype=torch.float64)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
            results[kind].append(float(slowest))
    if dist.get_rank() == 0:
        hand, ours = min(results["hand"]), min(results["executor"])
        print(f"{args.strategy} H = {args.period}, tiny-gpt {args.batch} x {args.seq}, {world} gloo ranks, "
              f"{args.iterations} iterations x {args.rounds} rounds (least mean, slowest rank):")
        print(f"  hand-written hooks {hand * 1e3:.3f} ms per iteration; PlanExecutor {ours * 1e3:.3f} ms; "
              f"overhead {100 * (ours - hand) / hand:+.2f}% (rounds: hand {[round(x * 1e3, 2) for x in results['hand']]}, "
              f"executor {[round(x * 1e3, 2) for x in results['executor']]} ms)")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--strategy", default="plsgd-even")
    parser.add_argument("--period", type=int, default=4)
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=64)
    args = parser.parse_args()
    if "RANK" in os.environ:
        return rank(args)
    from syncplan._cli import free_port
    environment = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE="2")
    ranks = [subprocess.Popen([sys.executable, __file__, *sys.argv[1:]], env=dict(environment, RANK=str(r)))
             for r in range(2)]
    return max(process.wait() for process in ranks)


if __name__ == "__main__":
    sys.exit(main())
