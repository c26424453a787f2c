#!/usr/bin/env python3
"""Runs syncplan.torch_profile (python/syncplan/torch_profile.py): the per-module torch profiler and, with --link, the all-reduce link sweep.

usage: torch_profile.py [--model tiny-gpt|MODULE:CLASS|FILE.py:CLASS] ... -o PROFILE.json
       torch_profile.py --link LINK.json [--nproc N] [--backend auto|gloo|nccl] ...

The options, what is measured and the exit codes: `--help` and docs/torch.md. This wrapper only
puts the package's folder (python/) on sys.path, so that the command works from a checkout without
installing the package (`pip install ./python` installs it; then `python3 -m syncplan.torch_profile`).
"""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree from running the tools
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from syncplan.torch_profile import main  # noqa: E402 (after the path is set)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], script=__file__))
