#!/usr/bin/env python3
"""Checks the log and trace of `syncplan run` against what the test derives itself (run_cases.sh).

  schedule LOG PROFILE RANKS ITERATIONS (--plan PLAN | --strategy NAME --period H)
      every (iteration, rank) has one line, and its buckets are what the plan or strategy says,
      derived here from the profile's layers (forward order; param_count, tied_to, frozen): a
      layer's all-reduce carries its parameters when it owns some (param_count > 0, not frozen);
      tied layers have param_count 0 and sync with their owner (the owner is wte, the tie group's
      latest-ready layer here). Buckets are in backprop order (the reverse of forward order).
  loss LOG NAME
      prints NAME's mean loss over the ranks in the first and last 3 iterations; fails unless it fell
      by at least 0.5 nats per token (ln 256 = 5.55 is a uniform guess over bytes).
  compare NAME LOG BASELINE_LOG
      prints how far NAME's final mean loss ends from the baseline's (ssgd).
  overlap TRACE
      some all-reduce runs while a later layer's backward runs on the same rank and iteration.
  emulated TRACE LOG RANKS GBPS LATENCY_US
      every all-reduce lasts at least the ring model's time of its bytes (2(p-1) alpha +
      2(p-1)/p n / B, docs/collectives.md 3), buckets of a rank and iteration end first in, first
      out (each ends no earlier than the previous one's end plus its own time); log and trace say
      the link is emulated.
  delayed LOG TRACE|- PLAN PROFILE
      a delayed-averaging run (docs/time-model.md section 13), derived here from the plan's
      sync_iterations and sync_delays: every line's sync_delays are its buckets' delays; its
      applied list is the d = 0 buckets of its own iteration (launch order), then the delayed
      syncs due before its step (launched in iteration - d, no earlier than the log's first
      iteration), in sync order (launch iteration ascending, then backprop order), each with
      start_s <= end_s <= applied_s; syncs due after the log's last line are applied nowhere.
      TRACE: one all-reduce event per applied delayed sync and rank, filed under its launch
      iteration with args delay and applied_iteration = iteration + delay, and at least one that
      ends after its launch iteration's update (the sync spans iterations).
"""
import json
import sys


def read_log(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def owning_layers(profile):
    return [layer["name"] for layer in profile["layers"]
            if layer.get("param_count", 0) > 0 and not layer.get("frozen", False)]


def expected_buckets(args, profile, iterations):
    names = [layer["name"] for layer in profile["layers"]]
    owning = set(owning_layers(profile))
    backprop = [n for n in reversed(names) if n in owning]
    if args[0] == "--plan":
        with open(args[1]) as f:
            plan = json.load(f)
        period = plan["period"]
        if "buckets" in plan:
            per_h = [[list(b) for b in plan["buckets"]["iterations"][h]] for h in range(period)]
        else:
            syncs = {layer["name"]: layer["sync_iterations"] for layer in plan["layers"]}
            per_h = [[[n] for n in backprop if h in syncs[n]] for h in range(period)]
    else:
        strategy, period = args[1], int(args[3])
        every = [[n] for n in backprop]
        if strategy in ("ssgd", "wfbp"):
            per_h = [every] * period
        elif strategy == "flsgd":
            per_h = [[] for _ in range(period - 1)] + [every]
        elif strategy == "plsgd-even":
            all_backprop = list(reversed(names))
            group = -(-len(all_backprop) // period)  # ceil(L/H) over every layer, SPEC section 5
            per_h = [[[n] for n in all_backprop[h * group:(h + 1) * group] if n in owning] for h in range(period)]
        else:
            sys.exit(f"check_run.py: unknown strategy {strategy}")
    return [per_h[i % period] for i in range(iterations)]


def check_schedule(log_path, profile_path, ranks, iterations, args):
    with open(profile_path) as f:
        profile = json.load(f)
    lines = read_log(log_path)
    expected = expected_buckets(args, profile, iterations)
    seen = {}
    for line in lines:
        key = (line["iteration"], line["rank"])
        if key in seen:
            sys.exit(f"FAIL: iteration {key[0]} rank {key[1]} logged twice")
        seen[key] = line
    want = {(i, r) for i in range(iterations) for r in range(ranks)}
    if set(seen) != want:
        sys.exit(f"FAIL: log lines for {sorted(set(seen) ^ want)[:5]} missing or extra")
    buckets = 0
    for (i, r), line in sorted(seen.items()):
        if line["buckets"] != expected[i]:
            sys.exit(f"FAIL: iteration {i} rank {r}: executed {line['buckets']}, the schedule says {expected[i]}")
        if line["synced_layers"] != [n for b in expected[i] for n in b]:
            sys.exit(f"FAIL: iteration {i} rank {r}: synced_layers {line['synced_layers']}")
        for key in ("loss", "iteration_s", "compute_s", "wait_s"):
            if not isinstance(line[key], (int, float)) or line[key] < 0:
                sys.exit(f"FAIL: iteration {i} rank {r}: {key} = {line[key]}")
        buckets += len(line["buckets"])
    print(f"ok: {len(lines)} log lines ({iterations} iterations x {ranks} ranks), {buckets} buckets, each as the schedule says")


def mean_loss(lines, iterations):
    values = [line["loss"] for line in lines if line["iteration"] in iterations]
    return sum(values) / len(values)


def final_loss(lines):
    last = max(line["iteration"] for line in lines)
    return mean_loss(lines, range(last - 2, last + 1))


def check_loss(log_path, name):
    lines = read_log(log_path)
    first, last = mean_loss(lines, range(3)), final_loss(lines)
    print(f"{name}: mean loss over the ranks {first:.4f} in iterations 0-2, {last:.4f} in the last 3")
    if not last < first - 0.5:
        sys.exit(f"FAIL: {name}: the loss did not fall by 0.5 nats")
    print(f"ok: {name}: the loss fell by {first - last:.4f} nats per token")


def compare(name, log_path, baseline_path):
    mine, base = final_loss(read_log(log_path)), final_loss(read_log(baseline_path))
    print(f"{name}: final mean loss {mine:.4f}, {mine - base:+.4f} nats from ssgd's {base:.4f}")


def trace_events(path):
    with open(path) as f:
        trace = json.load(f)
    if trace["syncplan"]["source"] != "measured":
        sys.exit("FAIL: the trace does not say source measured")
    return trace, [e for e in trace["traceEvents"] if e.get("ph") == "X"]


def check_overlap(path):
    trace, events = trace_events(path)
    names = None
    backward = [e for e in events if e["cat"] == "backward"]
    allreduces = [e for e in events if e["cat"] == "allreduce"]
    found = 0
    example = None
    for a in allreduces:
        start, end = a["ts"], a["ts"] + a["dur"]
        for b in backward:
            if b["pid"] != a["pid"] or b["args"]["iteration"] != a["args"]["iteration"]:
                continue
            # A later layer's backward: it starts after the all-reduce was launched (backprop order).
            if b["ts"] >= start and b["ts"] < end:
                found += 1
                example = example or (a["name"], b["name"], a["args"]["iteration"], a["pid"])
                break
    print(f"{found} of {len(allreduces)} all-reduces overlap a later layer's backward")
    if not found:
        sys.exit("FAIL: no all-reduce overlaps a later layer's backward")
    print(f"ok: e.g. '{example[0]}' runs during '{example[1]}' (iteration {example[2]}, rank {example[3]})")


def check_emulated(trace_path, log_path, ranks, gbps, latency_us):
    trace, events = trace_events(trace_path)
    link = trace["syncplan"]["emulated_link"]
    if link != {"bandwidth_Gbps": gbps, "latency_us": latency_us}:
        sys.exit(f"FAIL: the trace's emulated_link is {link}")
    for line in read_log(log_path):
        if line.get("emulated_link") != {"bandwidth_Gbps": gbps, "latency_us": latency_us}:
            sys.exit(f"FAIL: log line {line['iteration']}/{line['rank']} does not say the link is emulated")
    p = ranks
    bandwidth_Bps = gbps * 1e9 / 8
    def ring_s(n):
        return 2 * (p - 1) * latency_us * 1e-6 + 2 * (p - 1) / p * n / bandwidth_Bps
    slack_us = 1.0  # the trace's microseconds are rounded from seconds
    groups = {}
    for e in events:
        if e["cat"] == "allreduce":
            groups.setdefault((e["pid"], e["args"]["iteration"]), []).append(e)
    checked = 0
    for key, group in groups.items():
        group.sort(key=lambda e: e["ts"])
        free = -1e300
        for e in group:
            own_us = ring_s(e["args"]["bytes"]) * 1e6
            end = e["ts"] + e["dur"]
            if e["dur"] + slack_us < own_us:
                sys.exit(f"FAIL: {e['name']} (rank {key[0]}, iteration {key[1]}): {e['dur']:.1f} us, "
                         f"less than the ring model's {own_us:.1f} us for {e['args']['bytes']} bytes")
            if end + slack_us < max(e["ts"], free) + own_us:
                sys.exit(f"FAIL: {e['name']} (rank {key[0]}, iteration {key[1]}) ends before the previous "
                         f"bucket's end plus its own time")
            free = max(e["ts"], free) + own_us
            checked += 1
    print(f"ok: {checked} all-reduces each last at least the ring model's time at {gbps} Gbit/s, "
          f"{latency_us} us, first in first out")


def plan_syncs(plan, profile):
    """The plan's syncs of owning layers as (name, h, d), in sync order: h, then backprop order."""
    order = {layer["name"]: i for i, layer in enumerate(profile["layers"])}
    owning = set(owning_layers(profile))
    syncs = []
    for layer in plan["layers"]:
        if layer["name"] not in owning:
            continue
        delays = layer.get("sync_delays", [0] * len(layer["sync_iterations"]))
        syncs += [(layer["name"], h, d) for h, d in zip(layer["sync_iterations"], delays)]
    return sorted(syncs, key=lambda s: (s[1], -order[s[0]]))


def check_delayed(log_path, trace_path, plan_path, profile_path):
    with open(plan_path) as f:
        plan = json.load(f)
    with open(profile_path) as f:
        profile = json.load(f)
    period, syncs = plan["period"], plan_syncs(plan, profile)
    lines = read_log(log_path)
    first = min(line["iteration"] for line in lines)
    applied_delayed = {}  # rank -> count
    for line in lines:
        k, h = line["iteration"], line["iteration"] % period
        where = f"iteration {k} rank {line['rank']}"
        launched = [s for s in syncs if s[1] == h]
        if line.get("sync_delays") != [d for _, _, d in launched]:
            sys.exit(f"FAIL: {where}: sync_delays {line.get('sync_delays')}, the plan says {[d for _, _, d in launched]}")
        want = [(k, [n], 0) for n, _, d in launched if d == 0]
        want += [(k - d, [n], d) for n, hh, d in syncs if d > 0 and hh + d == h and k - d >= first]
        got = [(a["iteration"], a["layers"], a["delay"]) for a in line["applied"]]
        if got != want:
            sys.exit(f"FAIL: {where}: applied {got}, the plan says {want}")
        for a in line["applied"]:
            if not a["start_s"] <= a["end_s"] <= a["applied_s"]:
                sys.exit(f"FAIL: {where}: applied {a}: start_s <= end_s <= applied_s does not hold")
        applied_delayed[line["rank"]] = applied_delayed.get(line["rank"], 0) + sum(d > 0 for _, _, d in want)
    total = sum(applied_delayed.values())
    if total == 0:
        sys.exit("FAIL: no delayed sync was applied: nothing was checked")
    print(f"ok: {len(lines)} log lines: sync_delays and applied as the plan says, {total} delayed corrections")
    if trace_path == "-":
        return
    _, events = trace_events(trace_path)
    update_end = {(e["pid"], e["args"]["iteration"]): e["ts"] + e["dur"] for e in events if e["cat"] == "update"}
    delayed = [e for e in events if e["cat"] == "allreduce" and e["args"].get("delay", 0) > 0]
    for rank, count in applied_delayed.items():
        mine = [e for e in delayed if e["pid"] == rank]
        if len(mine) != count:
            sys.exit(f"FAIL: rank {rank}: {len(mine)} delayed all-reduces in the trace, {count} applied in the log")
    spanning = 0
    for e in delayed:
        if e["args"]["applied_iteration"] != e["args"]["iteration"] + e["args"]["delay"]:
            sys.exit(f"FAIL: {e['name']}: args {e['args']}")
        spanning += e["ts"] + e["dur"] > update_end[(e["pid"], e["args"]["iteration"])]
    print(f"{spanning} of {len(delayed)} delayed all-reduces end after their launch iteration's update")
    if not spanning:
        sys.exit("FAIL: no delayed all-reduce spans iterations")
    print("ok: the trace's delayed all-reduces are the applied ones and some span iterations")


def main(argv):
    command = argv[1]
    if command == "schedule":
        check_schedule(argv[2], argv[3], int(argv[4]), int(argv[5]), argv[6:])
    elif command == "loss":
        check_loss(argv[2], argv[3])
    elif command == "compare":
        compare(argv[2], argv[3], argv[4])
    elif command == "overlap":
        check_overlap(argv[2])
    elif command == "emulated":
        check_emulated(argv[2], argv[3], int(argv[4]), float(argv[5]), float(argv[6]))
    elif command == "delayed":
        check_delayed(argv[2], argv[3], argv[4], argv[5])
    else:
        sys.exit(f"check_run.py: unknown command {command}")


if __name__ == "__main__":
    main(sys.argv)
