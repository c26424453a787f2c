#!/usr/bin/env python3
"""Checks that every CTest test has exactly the labels of the project's list (unit, golden, des, cli,
link, torch, gpu, kernels, runtime and reallink), so `ctest -L NAME` selects every test of a kind. Reads CTest's own
test list (`ctest --show-only=json-v1`) of the build folder given; exits 1 naming each test
without a label or with an unknown one."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

KNOWN_LABELS = {"unit", "golden", "des", "cli", "link", "torch", "gpu", "kernels", "runtime", "reallink"}


def label_problems(tests):
    """One line for each test whose labels are missing or not in KNOWN_LABELS."""
    problems = []
    for test in tests:
        labels = []
        for prop in test.get("properties", []):
            if prop.get("name") == "LABELS":
                labels = prop.get("value", [])
        if not labels:
            problems.append(f"{test['name']}: no label")
        elif not set(labels) <= KNOWN_LABELS:
            problems.append(f"{test['name']}: unknown label(s) {sorted(set(labels) - KNOWN_LABELS)}")
    return problems


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        # The check must be able to fail: one good, one unlabeled, one with a label off the list.
        tests = [{"name": "a", "properties": [{"name": "LABELS", "value": ["unit"]}]}, {"name": "b"},
                 {"name": "c", "properties": [{"name": "LABELS", "value": ["unit", "slow"]}]}]
        found = label_problems(tests)
        expected = ["b: no label", "c: unknown label(s) ['slow']"]
        if found != expected:
            print(f"check_labels self-test: found {found}, expected {expected}", file=sys.stderr)
            return 1
        print("labels self-test: the unlabeled and the unknown label are found")
        return 0
    if len(sys.argv) != 3:
        print("usage: check_labels.py CTEST BUILD_DIR | --self-test", file=sys.stderr)
        return 2
    # ctest writes Testing/Temporary/LastTest.log even for --show-only: run in the build folder it
    # wiped the log of the run this test is part of, so it lists a copy of the folder's
    # CTestTestfile.cmake tree (they name everything else by absolute path).
    with tempfile.TemporaryDirectory(prefix="syncplan-labels-") as scratch:
        for folder, _, files in os.walk(sys.argv[2]):
            if "CTestTestfile.cmake" in files:
                target = os.path.join(scratch, os.path.relpath(folder, sys.argv[2]))
                os.makedirs(target, exist_ok=True)
                shutil.copy(os.path.join(folder, "CTestTestfile.cmake"), target)
        listing = subprocess.run([sys.argv[1], "--show-only=json-v1"], cwd=scratch, capture_output=True, text=True,
                                 check=True)
    tests = json.loads(listing.stdout)["tests"]
    problems = label_problems(tests)
    for line in problems:
        print(line)
    print(f"labels: {len(problems)} of {len(tests)} tests without a known label" if problems
          else f"labels: all {len(tests)} tests carry a known label")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
