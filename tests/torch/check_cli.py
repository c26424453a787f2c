"""Checks syncplan._cli's helpers: oversubscription_warning (torch_train's warning, as syncplan
run's in core/host_cpus.hpp) and Parser's reading of negative numbers: python3 only, no torch.

usage: check_cli.py
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from syncplan._cli import Parser, oversubscription_warning  # noqa: E402 (after the path is set)
from syncplan.errors import UsageError  # noqa: E402

FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print(f"FAIL: {message}")


# 2 ranks of 1 thread on 2 CPUs fit; 4 ranks of 2 threads on 8 fit (8 threads on 8 CPUs).
check(oversubscription_warning(2, 1, 2) is None, "2 ranks on 2 CPUs warned")
check(oversubscription_warning(4, 2, 8) is None, "4 x 2 threads on 8 CPUs warned")
# 4 ranks of 1 thread on 2 CPUs: the same text as syncplan run's (tests/unit/test_host_cpus.cpp).
check(oversubscription_warning(4, 1, 2) ==
      "4 ranks on this machine share 2 CPUs: they compute in time slices, so each computes more than the profile's "
      "step and more than the DES predicts (it gives every rank a processor of its own; docs/runtime.md section "
      "7.1); for timings run at most 2 ranks here", "4 ranks on 2 CPUs: %r" % oversubscription_warning(4, 1, 2))
# 3 ranks of 4 threads on 8 CPUs: 12 threads on 8; 8 // 4 = 2 ranks fit.
three = oversubscription_warning(3, 4, 8) or ""
check(three.startswith("3 ranks of 4 threads each on this machine share 8 CPUs:"), "3 x 4 on 8: %r" % three)
check(three.endswith("run at most 2 ranks of 4 threads each here"), "3 x 4 on 8, the advice: %r" % three)
# 2 ranks of 1 thread on 1 CPU; and 1 rank of 4 threads on 2 CPUs (still at most 1 rank).
check((oversubscription_warning(2, 1, 1) or "").startswith("2 ranks on this machine share 1 CPU:"), "2 on 1 CPU")
# 1 rank of 4 threads on 2 CPUs: no whole rank of 4 threads fits; the advice is fewer threads.
one = oversubscription_warning(1, 4, 2) or ""
check(one.startswith("1 rank of 4 threads each on this machine shares 2 CPUs:"), "1 x 4 on 2: %r" % one)
check(one.endswith("for timings run 1 rank of at most 2 threads here"), "1 x 4 on 2, the advice: %r" % one)

# Parser: a negative number in any notation is a value, not an option ("--lr -1e-3" was "expected
# one argument"); a word that is not a number still is an option.
parser = Parser(prog="p")
parser.add_argument("--lr", type=float)
parser.add_argument("--name")
for text, expected in (("-1e-3", -1e-3), ("-2", -2.0), ("-.5", -0.5), ("-1.5E+2", -150.0), ("-inf", float("-inf"))):
    value = parser.parse_args(["--lr", text]).lr
    check(value == expected, f"--lr {text}: {value!r}, expected {expected!r}")
nan = parser.parse_args(["--lr", "-NaN"]).lr
check(nan != nan, f"--lr -NaN: {nan!r}, expected nan")
try:
    parser.parse_args(["--name", "-x"])
    check(False, "--name -x: accepted '-x' as a value")
except UsageError as error:
    check("expected one argument" in str(error), f"--name -x: {error}")

if FAILURES:
    sys.exit(f"{len(FAILURES)} check(s) failed")
print("oversubscription_warning and Parser: every case as derived")
