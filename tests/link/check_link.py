#!/usr/bin/env python3
"""Checks a syncplan.link/v1 file written by profile-link or import nccl-tests (tests/link).

usage: check_link.py LINK.json --workers N --source S --sizes N1,N2,... [--alpha-us A --beta B]
Checks, beyond the reader's rules: the sizes in order, algbw = size / time / 1e9 and
busbw = algbw x 2(n-1)/n exactly (the same floating-point operations as core/link.cpp, so equal to
the bit), alpha >= 0, beta >= 0, R^2 in [0, 1]; with --alpha-us/--beta, the fit within 0.01 us and
1e-4 relative. Prints the first mismatches and exits 1 on any.
"""
import argparse
import json
import sys

parser = argparse.ArgumentParser()
parser.add_argument("link")
parser.add_argument("--workers", type=int, required=True)
parser.add_argument("--source", required=True)
parser.add_argument("--sizes", required=True)
parser.add_argument("--alpha-us", type=float)
parser.add_argument("--beta", type=float)
args = parser.parse_args()

with open(args.link) as f:
    link = json.load(f)
failures = []
expect = {"format": "syncplan.link/v1", "collective": "allreduce", "workers": args.workers, "source": args.source}
for key, value in expect.items():
    if link.get(key) != value:
        failures.append("%s: %r, expected %r" % (key, link.get(key), value))
sizes = [int(s) for s in args.sizes.split(",")]
got_sizes = [s["size_bytes"] for s in link["samples"]]
if got_sizes != sizes:
    failures.append("sizes %s, expected %s" % (got_sizes, sizes))
n = args.workers
for s in link["samples"]:
    algbw = s["size_bytes"] / s["time_s"] / 1e9 if s["time_s"] > 0 else 0.0
    if s["algbw_GBps"] != algbw:
        failures.append("size %d: algbw %r != size/time/1e9 = %r" % (s["size_bytes"], s["algbw_GBps"], algbw))
    busbw = s["algbw_GBps"] * 2.0 * (n - 1) / n
    if s["busbw_GBps"] != busbw:
        failures.append("size %d: busbw %r != algbw x 2(n-1)/n = %r" % (s["size_bytes"], s["busbw_GBps"], busbw))
    if not s["time_s"] > 0:
        failures.append("size %d: time %r is not > 0" % (s["size_bytes"], s["time_s"]))
if not (link["alpha_s"] >= 0 and link["beta_s_per_byte"] >= 0 and 0 <= link["r_squared"] <= 1):
    failures.append("alpha %r, beta %r, R^2 %r out of range" % (link["alpha_s"], link["beta_s_per_byte"],
                                                                 link["r_squared"]))
if args.alpha_us is not None and abs(link["alpha_s"] * 1e6 - args.alpha_us) > 0.01:
    failures.append("alpha %r us, expected %r us within 0.01" % (link["alpha_s"] * 1e6, args.alpha_us))
if args.beta is not None and abs(link["beta_s_per_byte"] / args.beta - 1) > 1e-4:
    failures.append("beta %r, expected %r within 1e-4 relative" % (link["beta_s_per_byte"], args.beta))

print("%s: %d samples, alpha %.3f us, beta %.4e s/B, R^2 %.5f" % (
    args.link, len(link["samples"]), link["alpha_s"] * 1e6, link["beta_s_per_byte"], link["r_squared"]))
for failure in failures[:10]:
    print("FAIL: " + failure)
sys.exit(1 if failures else 0)
