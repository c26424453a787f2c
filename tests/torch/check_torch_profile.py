#!/usr/bin/env python3
"""Checks tools/torch_profile.py on the built-in tiny-gpt (run by torch_case.sh with a Python that has torch).

usage: check_torch_profile.py profile|trace|custom|outputs --syncplan BIN --workdir DIR

profile: the hook profile is a valid SPEC profile whose layers are tiny-gpt's leaf modules in
         forward order, whose parameter counts add up to an independent count, and which `syncplan
         plan` accepts with --cluster (all-reduce times from param_bytes) or once sync_s is filled
         in (it refuses it alone: sync_s is null, unknown).
trace:   the --trace output imports with `syncplan import torch-trace` into the same layers in the
         same order, with forward and backward totals close to the hook-measured ones.
custom:  a MODULE:CLASS model (tied_embeddings.py) whose second embedding uses only the first one's
         weight: tied_to, parameter counts by hand, and a measured backward for the tied module.
frozen:  a MODULE:CLASS model (frozen_embedding.py) whose embedding's parameters do not require
         grad: `frozen` true on it only, a mixed layer counted by its trainable parameters, and the
         `unattributed` times present and >= 0.
link:    `--link` with 2 spawned gloo ranks (8 B .. 4 MiB) and under torchrun (1 .. 16 MiB): a syncplan.link/v1
         file, source measured:gloo, workers 2, the sizes asked for, that `syncplan simulate --link`
         accepts and that charges S-SGD more than its compute.
interpreter: run by a python3 without torch (Python's -S: no site-packages) first on PATH, the
         script re-executes itself with one that has torch; with none, one line naming the tried.
outputs: under umask 027 the profile gets mode 0640 (0666 less the umask, as any new file: not
         tempfile's 0600); a --trace that is a FIFO is written through, not replaced by a file; an
         output that cannot be written (in /sys) is exit code 2 with one line naming it, before
         profiling.
Exit code 0 when every check holds, 1 otherwise (the failed checks are printed).
"""

import argparse
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_PROFILE = os.path.join(HERE, "..", "..", "tools", "torch_profile.py")

# GPT-2's forward call order, by hand: embeddings and their dropout; per block ln_1, attention
# (c_attn, softmax -> attn_dropout, c_proj, resid_dropout), ln_2, MLP (c_fc, act, c_proj, dropout);
# ln_f and the tied lm_head. (HF's registration order differs: c_proj before attn_dropout and
# mlp.c_proj before mlp.act.)
BLOCK = ["ln_1", "attn.c_attn", "attn.attn_dropout", "attn.c_proj", "attn.resid_dropout",
         "ln_2", "mlp.c_fc", "mlp.act", "mlp.c_proj", "mlp.dropout"]
FORWARD_ORDER = (["transformer.wte", "transformer.wpe", "transformer.drop"]
                 + [f"transformer.h.{i}.{name}" for i in range(4) for name in BLOCK]
                 + ["transformer.ln_f", "lm_head"])

# tiny-gpt's parameters by hand (width 128, vocabulary 256, context 64, 4 blocks, MLP 512):
#   wte 256*128 = 32,768; wpe 64*128 = 8,192; per block ln_1 256 + c_attn 128*384+384 = 49,536
#   + c_proj 128*128+128 = 16,512 + ln_2 256 + c_fc 128*512+512 = 66,048 + mlp.c_proj 512*128+128
#   = 65,664 -> 198,272; 4 blocks 793,088; ln_f 256; lm_head 0 of its own (its weight is wte's).
#   Total 32,768 + 8,192 + 793,088 + 256 = 834,304.
TOTAL_PARAMS = 834_304
LAYER_PARAMS = {"transformer.wte": 32_768, "transformer.wpe": 8_192, "transformer.h.0.ln_1": 256,
                "transformer.h.0.attn.c_attn": 49_536, "transformer.h.0.attn.c_proj": 16_512,
                "transformer.h.3.mlp.c_fc": 66_048, "transformer.h.3.mlp.c_proj": 65_664,
                "transformer.h.2.mlp.act": 0, "transformer.ln_f": 256, "lm_head": 0}
FP32_BYTES = 4
MILLISECONDS_PER_SECOND = 1e3

# Small and quick: ~10 s per case on two cores, most of it importing torch.
RUN_ARGS = ["--batch", "2", "--seq", "32", "--iters", "3", "--warmup", "1", "--threads", "1"]

# sync_s for `plan`: ring all-reduce alpha-beta (docs/collectives.md section 3),
# T = 2(p-1) alpha + 2(p-1)/p * n / B, for p = 8 workers on 10 Gbit/s links with alpha = 5 us.
BITS_PER_GIGABIT, BITS_PER_BYTE = 1e9, 8
WORKERS, ALPHA_S, BANDWIDTH_BPS = 8, 5e-6, 10 * BITS_PER_GIGABIT / BITS_PER_BYTE

# The outputs mode's umask (group may read, others nothing) and the mode it gives a new file.
OUTPUT_UMASK = 0o027
OUTPUT_MODE = 0o640
# The quickest run that still writes a profile and a trace, for the outputs mode.
QUICK_ARGS = ["--batch", "1", "--seq", "8", "--iters", "1", "--warmup", "0", "--threads", "1", "--trace-iters", "1"]
FIFO_WAIT_S = 10  # after the script has exited, what it wrote to the FIFO is there at once

# The trace's ranges come from other iterations than the hook medians, the profiler records every op
# inside them (overhead the hook run does not have), torch without Kineto rounds each range to whole
# microseconds, and CI machines are shared: totals agree within this factor, not closely.
TOTAL_FACTOR = 3.0


class Checks:
    def __init__(self):
        self.failures = []

    def check(self, condition, message):
        if not condition:
            self.failures.append(message)
            print("FAIL:", message)
        return condition


def run(command, **kwargs):
    print("$", " ".join(command), flush=True)
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    print(result.stdout, end="")
    print(result.stderr, end="", file=sys.stderr)
    return result


def profile_model(workdir, extra):
    path = os.path.join(workdir, "profile.json")
    start = time.monotonic()
    result = run([sys.executable, TORCH_PROFILE, *RUN_ARGS, *extra, "-o", path])
    print(f"torch_profile.py took {time.monotonic() - start:.1f} s")
    if result.returncode != 0:
        print(f"FAIL: torch_profile.py exited {result.returncode}")
        sys.exit(1)
    with open(path) as profile_file:
        return path, json.load(profile_file)


def independent_parameter_count():
    """sum(p.numel()) over tiny-gpt's parameters() (each Parameter once, so the tied weight once)."""
    sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
    from syncplan.models import tiny_gpt
    model = tiny_gpt()
    return sum(p.numel() for p in model.parameters())


def check_profile(checks, workdir, syncplan):
    path, profile = profile_model(workdir, ["--optimizer", "sgd"])
    layers = profile["layers"]
    names = [layer["name"] for layer in layers]
    checks.check(profile["format"] == "syncplan.profile/v1", f"format {profile['format']}")
    checks.check(profile["source"].startswith("measured:"), f"source {profile['source']}")
    checks.check(profile["model"] == "tiny-gpt", f"model {profile['model']}")
    checks.check(set(profile) == {"format", "model", "source", "workers", "unattributed", "workload", "layers"},
                 f"keys {sorted(profile)}")
    check_unattributed(checks, profile)
    # The workload it was measured at: RUN_ARGS's --batch and --seq, tiny-gpt's fp32 parameters.
    expected_workload = {"batch": int(RUN_ARGS[RUN_ARGS.index("--batch") + 1]),
                         "seq": int(RUN_ARGS[RUN_ARGS.index("--seq") + 1]), "dtype": "fp32"}
    checks.check(profile.get("workload") == expected_workload,
                 f"workload {profile.get('workload')}, expected {expected_workload}")
    if not checks.check(names == FORWARD_ORDER, "layers are not tiny-gpt's leaf modules in forward order"):
        print("got:     ", names, "\nexpected:", FORWARD_ORDER)

    counted = sum(layer["param_count"] for layer in layers)
    independent = independent_parameter_count()
    checks.check(independent == TOTAL_PARAMS, f"model.parameters() holds {independent}, by hand {TOTAL_PARAMS}")
    checks.check(counted == independent, f"param_count sums to {counted}, model.parameters() to {independent}")
    by_name = {layer["name"]: layer for layer in layers}
    for name, count in LAYER_PARAMS.items():
        checks.check(by_name[name]["param_count"] == count, f"{name}: param_count {by_name[name]['param_count']}, "
                                                            f"by hand {count}")
    for layer in layers:
        name = layer["name"]
        checks.check(layer["param_bytes"] == FP32_BYTES * layer["param_count"], f"{name}: param_bytes")
        checks.check(layer.get("tied_to") == ("transformer.wte" if name == "lm_head" else None), f"{name}: tied_to")
        checks.check(layer["sync_s"] is None, f"{name}: sync_s should be null (unknown)")
        for field in ("forward_s", "backward_s", "update_s"):
            value = layer[field]
            checks.check(isinstance(value, float) and value >= 0, f"{name}: {field} {value!r}")
        if layer["param_count"] == 0:
            checks.check(layer["update_s"] == 0.0, f"{name}: update_s {layer['update_s']} without parameters")
        if layer["param_count"] > 10_000:  # the GEMMs do measurable work both ways
            checks.check(layer["forward_s"] > 0 and layer["backward_s"] > 0, f"{name}: zero time")

    # sync_s is unknown: plan refuses the profile as it is, takes all-reduce times from a cluster's
    # cost model on param_bytes with --cluster, and accepts it alone once sync_s is filled in.
    refused = run([syncplan, "plan", "--profile", path, "--period", "2", "-o", os.path.join(workdir, "refused.json")])
    checks.check(refused.returncode == 2 and "sync_s" in refused.stderr, "plan accepted a profile without sync_s")
    cluster = os.path.join(HERE, "..", "..", "data", "clusters", "8nodes-1gpu-10gbps.json")
    clustered = run([syncplan, "plan", "--profile", path, "--period", "2", "--cluster", cluster,
                     "-o", os.path.join(workdir, "plan-cluster.json")])
    checks.check(clustered.returncode == 0, f"syncplan plan --cluster exited {clustered.returncode}")
    for layer in layers:
        bytes_ = layer["param_bytes"]
        layer["sync_s"] = (2 * (WORKERS - 1) * ALPHA_S + 2 * (WORKERS - 1) / WORKERS * bytes_ / BANDWIDTH_BPS
                           if bytes_ > 0 else 0.0)
    profile["workers"] = WORKERS
    profile["source"] += "; sync_s estimated:ring-allreduce"
    filled = os.path.join(workdir, "profile-sync.json")
    with open(filled, "w") as out:
        json.dump(profile, out, indent=2)
    plan_path = os.path.join(workdir, "plan.json")
    planned = run([syncplan, "plan", "--profile", filled, "--period", "2", "-o", plan_path])
    if checks.check(planned.returncode == 0, f"syncplan plan exited {planned.returncode}"):
        with open(plan_path) as plan_file:
            plan = json.load(plan_file)
        checks.check([layer["name"] for layer in plan["layers"]] == FORWARD_ORDER, "plan layers differ")


def check_trace(checks, workdir, syncplan):
    trace = os.path.join(workdir, "trace.json")
    _, profile = profile_model(workdir, ["--trace", trace, "--trace-iters", "2"])
    imported_path = os.path.join(workdir, "imported.json")
    result = run([syncplan, "import", "torch-trace", trace, "--model", "tiny-gpt", "-o", imported_path])
    if not checks.check(result.returncode == 0, f"syncplan import torch-trace exited {result.returncode}"):
        return
    with open(imported_path) as imported_file:
        imported = json.load(imported_file)
    checks.check(imported["source"] == "imported:torch-trace", f"source {imported['source']}")
    checks.check([layer["name"] for layer in imported["layers"]] == FORWARD_ORDER,
                 "imported layers are not tiny-gpt's leaf modules in forward order")
    for layer in imported["layers"]:
        for field in ("forward_s", "backward_s"):
            value = layer[field]
            checks.check(isinstance(value, (int, float)) and value >= 0, f"{layer['name']}: imported {field} {value!r}")
    for field in ("forward_s", "backward_s"):
        hooks = sum(layer[field] for layer in profile["layers"])
        trace_total = sum(layer[field] or 0 for layer in imported["layers"])
        ratio = trace_total / hooks if hooks > 0 else float("inf")
        print(f"{field}: hooks {hooks * MILLISECONDS_PER_SECOND:.3f} ms, trace {trace_total * MILLISECONDS_PER_SECOND:.3f} ms, ratio {ratio:.2f}")
        checks.check(1 / TOTAL_FACTOR <= ratio <= TOTAL_FACTOR,
                     f"{field}: trace total / hook total = {ratio:.2f}, outside [1/{TOTAL_FACTOR}, {TOTAL_FACTOR}]")


def check_custom_model(checks, workdir, syncplan):
    model = os.path.join(HERE, "tied_embeddings.py") + ":TiedEmbeddings"
    _, profile = profile_model(workdir, ["--model", model])
    layers = {layer["name"]: layer for layer in profile["layers"]}
    checks.check(list(layers) == ["enc", "dec", "mix"], f"layers {list(layers)}")
    checks.check(profile["model"] == "TiedEmbeddings", f"model {profile['model']}")
    # By hand (tied_embeddings.py): enc 800, dec 0 tied to enc, mix 272.
    for name, count, tied_to in (("enc", 800, None), ("dec", 0, "enc"), ("mix", 272, None)):
        checks.check(layers[name]["param_count"] == count, f"{name}: param_count {layers[name]['param_count']}")
        checks.check(layers[name].get("tied_to") == tied_to, f"{name}: tied_to {layers[name].get('tied_to')}")
    for name, layer in layers.items():
        checks.check(layer["backward_s"] > 0, f"{name}: backward_s {layer['backward_s']} (its embedding "
                                              "backward runs, so its span is not empty)")


def check_unattributed(checks, profile):
    unattributed = profile.get("unattributed", {})
    checks.check(set(unattributed) == {"forward_s", "backward_s"}, f"unattributed keys {sorted(unattributed)}")
    for field in ("forward_s", "backward_s"):
        value = unattributed.get(field)
        checks.check(isinstance(value, float) and value >= 0, f"unattributed {field} {value!r}")


def check_frozen(checks, workdir, syncplan):
    model = os.path.join(HERE, "frozen_embedding.py") + ":FrozenEmbedding"
    path = os.path.join(workdir, "profile.json")
    result = run([sys.executable, TORCH_PROFILE, *RUN_ARGS, "--model", model, "-o", path])
    if not checks.check(result.returncode == 0, f"torch_profile.py exited {result.returncode}"):
        return
    with open(path) as profile_file:
        profile = json.load(profile_file)
    layers = {layer["name"]: layer for layer in profile["layers"]}
    checks.check(list(layers) == ["embed", "adapter", "head"], f"layers {list(layers)}")
    # By hand (frozen_embedding.py): embed 320 parameters, all frozen; adapter's trainable bias 8
    # (its frozen weight 64 left out); head 36.
    for name, count, frozen in (("embed", 320, True), ("adapter", 8, None), ("head", 36, None)):
        checks.check(layers[name]["param_count"] == count, f"{name}: param_count {layers[name]['param_count']}")
        checks.check(layers[name]["param_bytes"] == FP32_BYTES * count, f"{name}: param_bytes")
        checks.check(layers[name].get("frozen") == frozen, f"{name}: frozen {layers[name].get('frozen')!r}")
    checks.check("1 frozen" in result.stdout, "the summary does not say that 1 layer is frozen")
    checks.check("adapter has trainable and frozen parameters" in result.stderr, "no warning for the mixed layer")
    check_unattributed(checks, profile)


# The link sweep in CI: small sizes keep it to seconds on two busy cores.
# Up to 4 MiB: at the small sizes alone the noise of busy cores can make the fitted beta negative.
LINK_ARGS = ["--backend", "gloo", "--min-bytes", "8", "--max-bytes", "4M", "--iters", "3", "--warmup", "1"]
LINK_SIZES = [8 * 2 ** k for k in range(20)]  # 8 B, 16 B, ..., 4 MiB (2^22 = 8 x 2^19)


def check_link_file(checks, path, sizes, label):
    with open(path) as link_file:
        link = json.load(link_file)
    checks.check(link["format"] == "syncplan.link/v1", f"{label}: format {link['format']}")
    checks.check(link["source"] == "measured:gloo", f"{label}: source {link['source']}")
    checks.check(link["workers"] == 2, f"{label}: workers {link['workers']}")
    checks.check([s["size_bytes"] for s in link["samples"]] == sizes, f"{label}: sizes {[s['size_bytes'] for s in link['samples']]}")
    for sample in link["samples"]:
        checks.check(sample["time_s"] > 0, f"{label}: {sample['size_bytes']} B: time {sample['time_s']}")
        # 2 workers: busbw = algbw x 2(2-1)/2 = algbw (SPEC section 7).
        checks.check(abs(sample["busbw_GBps"] - sample["algbw_GBps"]) <= 1e-12 * sample["algbw_GBps"],
                     f"{label}: {sample['size_bytes']} B: busbw {sample['busbw_GBps']} != algbw {sample['algbw_GBps']}")
    checks.check(link["alpha_s"] >= 0 and link["beta_s_per_byte"] >= 0, f"{label}: alpha {link['alpha_s']}, "
                                                                          f"beta {link['beta_s_per_byte']}")
    return link


def check_link(checks, workdir, syncplan):
    link_path = os.path.join(workdir, "link.json")
    start = time.monotonic()
    result = run([sys.executable, TORCH_PROFILE, "--link", link_path, "--nproc", "2", *LINK_ARGS,
                  "--syncplan", syncplan])
    print(f"the sweep took {time.monotonic() - start:.1f} s")
    if not checks.check(result.returncode == 0, f"torch_profile.py --link exited {result.returncode}"):
        return
    check_link_file(checks, link_path, LINK_SIZES, "--nproc 2")

    # The link prices tiny-gpt's all-reduces: S-SGD's iteration is its compute plus their sum (> 0).
    profile_path, _ = profile_model(workdir, [])
    results = {}
    for with_link in (False, True):
        out = os.path.join(workdir, f"ssgd-{with_link}.json")
        extra = ["--link", link_path] if with_link else []
        if not with_link:  # compute only: every sync_s 0
            with open(profile_path) as profile_file:
                profile = json.load(profile_file)
            for layer in profile["layers"]:
                layer["sync_s"] = 0.0
            profile["workers"] = 2
            compute_only = os.path.join(workdir, "compute-only.json")
            with open(compute_only, "w") as out_file:
                json.dump(profile, out_file)
        simulated = run([syncplan, "simulate", "--profile", profile_path if with_link else compute_only,
                         "--strategy", "ssgd", "--period", "1", *extra, "-o", out])
        if not checks.check(simulated.returncode == 0, f"simulate (link {with_link}) exited {simulated.returncode}"):
            return
        with open(out) as result_file:
            results[with_link] = json.load(result_file)["period_s"]
    checks.check(results[True] > results[False], f"ssgd with the link {results[True]} s is not above its compute "
                                                 f"{results[False]} s")

    # Under torchrun (its own ranks, a free port with --standalone): a smaller sweep. torch 1.13's
    # torchrun on Python 3.11 fails on its default --redirects 0 (Std.from_str finds no NONE: 3.11
    # does not iterate zero-valued flags), so each rank's stdout is redirected and echoed (1).
    torchrun = shutil.which("torchrun")
    if torchrun is None:
        print("torchrun not on PATH: its case is not run")
        return
    under = os.path.join(workdir, "link-torchrun.json")
    result = run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                  "--redirects", "1", "--tee", "1", TORCH_PROFILE, "--link", under, "--backend", "gloo", "--min-bytes", "1M", "--max-bytes", "16M",
                  "--step-factor", "4", "--iters", "2", "--warmup", "1", "--syncplan", syncplan])
    if checks.check(result.returncode == 0, f"torchrun torch_profile.py --link exited {result.returncode}"):
        check_link_file(checks, under, [2 ** 20, 2 ** 22, 2 ** 24], "torchrun")


def check_interpreter(checks, workdir, syncplan):
    # A python3 that lacks torch: this interpreter without site-packages (-S), first on PATH.
    folder = os.path.join(workdir, "bin")
    os.makedirs(folder)
    fake = os.path.join(folder, "python3")
    with open(fake, "w") as script:
        script.write(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    os.chmod(fake, 0o755)
    lacks = subprocess.run([fake, "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is not None)"])
    if not checks.check(lacks.returncode == 0, f"{fake} finds torch even without site-packages; the case cannot run"):
        return
    environment = dict(os.environ, PATH=folder + os.pathsep + os.environ.get("PATH", ""))
    environment.pop("SYNCPLAN_TORCH_PYTHONS", None)
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        # The default list is python3, /usr/bin/python3; here torch is elsewhere.
        environment["SYNCPLAN_TORCH_PYTHONS"] = f"python3:{sys.executable}"
    profile = os.path.join(workdir, "profile.json")
    result = run([fake, TORCH_PROFILE, *QUICK_ARGS, "-o", profile], env=environment)
    checks.check(result.returncode == 0 and os.path.isfile(profile),
                 f"started by a python3 without torch: exit {result.returncode}, profile written {os.path.isfile(profile)}")

    environment["SYNCPLAN_TORCH_PYTHONS"] = "python3:/nonexistent/python3"
    result = run([fake, TORCH_PROFILE, *QUICK_ARGS, "-o", os.path.join(workdir, "none.json")], env=environment)
    lines = result.stderr.splitlines()
    checks.check(result.returncode == 1, f"no Python with torch: exit {result.returncode}, expected 1")
    checks.check(len(lines) == 1 and "no Python with PyTorch" in lines[0] and f"{fake} (no torch)" in lines[0]
                 and "/nonexistent/python3 (not found)" in lines[0],
                 f"no Python with torch: stderr is not one line naming the interpreters tried: {result.stderr!r}")
    checks.check(not os.path.exists(os.path.join(workdir, "none.json")), "a profile was written without torch")


def check_outputs(checks, workdir, syncplan):
    profile = os.path.join(workdir, "profile.json")
    fifo = os.path.join(workdir, "trace.fifo")
    os.mkfifo(fifo)
    received = []
    # Opening a FIFO blocks until the writer opens it: a reader thread takes what the script writes.
    reader = threading.Thread(target=lambda: received.append(open(fifo).read()), daemon=True)
    reader.start()
    previous = os.umask(OUTPUT_UMASK)
    try:
        result = run([sys.executable, TORCH_PROFILE, *QUICK_ARGS, "--trace", fifo, "-o", profile])
    finally:
        os.umask(previous)
    reader.join(timeout=FIFO_WAIT_S)
    if not checks.check(result.returncode == 0, f"torch_profile.py exited {result.returncode}"):
        return
    mode = stat.S_IMODE(os.stat(profile).st_mode)
    checks.check(mode == OUTPUT_MODE, f"profile.json has mode {mode:o} under umask {OUTPUT_UMASK:03o}, "
                                      f"expected {OUTPUT_MODE:o}")
    checks.check(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the --trace FIFO was replaced by a regular file")
    if checks.check(len(received) == 1, "nothing came through the --trace FIFO"):
        trace = json.loads(received[0])
        events = trace["traceEvents"] if isinstance(trace, dict) else trace  # Kineto's object or the bare array
        checks.check(any(event.get("name", "").startswith("syncplan.forward:") for event in events),
                     "the trace read from the FIFO has no syncplan.forward ranges")
    leftovers = [name for name in os.listdir(workdir) if ".tmp." in name]
    checks.check(not leftovers, f"temporary files left behind: {leftovers}")

    # sysfs refuses new files, even to root: found by the check before profiling (a file made there
    # and removed again), exit 2 with one line naming the output.
    unwritable = "/sys/syncplan-torch-test-profile.json"
    failed = run([sys.executable, TORCH_PROFILE, *QUICK_ARGS, "-o", unwritable])
    lines = failed.stderr.splitlines()
    checks.check(failed.returncode == 2, f"-o {unwritable}: exit code {failed.returncode}, expected 2")
    checks.check(len(lines) == 1 and f"-o: {unwritable}: cannot create a file in folder /sys" in lines[0],
                 f"-o {unwritable}: stderr is not one line naming it: {failed.stderr!r}")

    # Numbers torch would take to a traceback or to thousands of threads: refused before profiling,
    # one line each (--threads in the link sweep too; --seed is the profile's only).
    refused_json = os.path.join(workdir, "refused.json")
    for mode, extra, expected in ((["-o"], ["--threads", "5000"], "--threads: 1 to 1024, got 5000"),
                                  (["--link"], ["--threads", "5000"], "--threads: 1 to 1024, got 5000"),
                                  (["-o"], ["--seed", "-1"],
                                   "--seed: 0 to 18446744073709551615 (torch.manual_seed's range), got -1")):
        refused = run([sys.executable, TORCH_PROFILE, *mode, refused_json, *extra])
        lines = refused.stderr.splitlines()
        checks.check(refused.returncode == 2 and len(lines) == 1 and expected in lines[0],
                     f"{mode[0]} {' '.join(extra)}: exit {refused.returncode}, stderr {refused.stderr!r}")
        checks.check(not os.path.exists(refused_json), f"{mode[0]} {' '.join(extra)}: wrote {refused_json}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["profile", "trace", "custom", "outputs", "frozen", "link", "interpreter"])
    parser.add_argument("--syncplan", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    checks = Checks()
    modes = {"profile": check_profile, "trace": check_trace, "custom": check_custom_model, "outputs": check_outputs,
             "frozen": check_frozen, "link": check_link, "interpreter": check_interpreter}
    modes[args.mode](checks, args.workdir, args.syncplan)
    if checks.failures:
        print(f"{len(checks.failures)} check(s) failed")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
