"""Shared machinery of the package's command-line entry points: whole-or-nothing output files,
finding a Python with torch, spawning local ranks and finding the syncplan binary."""

import argparse
import os
import secrets
import shutil
import subprocess
import sys
import time

from .errors import UsageError

MILLISECONDS_PER_SECOND = 1e3     # for printed summaries
MAX_LOCAL_RANKS = 64
GROUP_TIMEOUT_S = 120             # torch.distributed's own timeout for one collective
RANK_VARIABLES = ("RANK", "WORLD_SIZE")  # set by torchrun (and by the ranks spawn_ranks starts)
NPROC_HELP = "ranks to spawn on this machine (default: 2); under torchrun (RANK and WORLD_SIZE set) the job's own ranks"
# The folder that holds the package (python/ in the repository): spawned and re-executed entry
# points run as `python -m syncplan.X` with it on PYTHONPATH, never as a file inside the package
# (whose folder first on sys.path would shadow torch with syncplan/torch.py).
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The repository root when the package runs from its source tree (python/syncplan): build/bin is there.
SOURCE_ROOT = os.path.dirname(PACKAGE_ROOT)


class Parser(argparse.ArgumentParser):
    """argparse that raises UsageError (one line, exit 2) instead of printing usage and exiting."""

    def error(self, message):
        raise UsageError(message)


def entry_command(module, script=None):
    """The arguments after the interpreter that run this entry point again: the wrapper `script`
    (tools/*.py) when one started it, else `-m module`."""
    return [os.path.abspath(script)] if script else ["-m", module]


def entry_environment(environment):
    """`environment` with the package's folder first on PYTHONPATH (for `-m syncplan.X`)."""
    paths = [PACKAGE_ROOT] + [p for p in environment.get("PYTHONPATH", "").split(os.pathsep) if p]
    return dict(environment, PYTHONPATH=os.pathsep.join(paths))


def find_syncplan(given, option="--link"):
    """The syncplan binary: `given`, else $SYNCPLAN, build/bin/syncplan of the source tree, syncplan
    on PATH. UsageError naming `option` when there is none."""
    candidates = [given] if given else [os.environ.get("SYNCPLAN"),
                                        os.path.join(SOURCE_ROOT, "build", "bin", "syncplan"),
                                        shutil.which("syncplan")]
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    if given:
        raise UsageError(f"--syncplan {given}: not an executable file")
    raise UsageError(f"{option}: no syncplan binary (not $SYNCPLAN, build/bin/syncplan or on PATH); "
                     "build it (tools/build.sh) or give --syncplan")


def free_port():
    """A TCP port free on 127.0.0.1 now (the spawned ranks' MASTER_PORT)."""
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def spawn_ranks(world, command, argv, program, timeout_s):
    """Starts `world` copies of `command` (entry_command's list) with `argv` as ranks 0..N-1 on this
    machine (torchrun's variables, MASTER_ADDR 127.0.0.1 and a free port) and waits. Returns the exit
    code: 0, or the first failed rank's code (2 stays 2: bad input found by the ranks), 1 when the
    ranks ran past `timeout_s` (every rank is then ended)."""
    environment = entry_environment(dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
                                         WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world)))
    ranks = [subprocess.Popen([sys.executable, *command, *argv],
                              env=dict(environment, RANK=str(r), LOCAL_RANK=str(r)))
             for r in range(world)]
    deadline = time.monotonic() + timeout_s
    codes = [None] * world
    while None in codes and time.monotonic() < deadline:
        for r, process in enumerate(ranks):
            codes[r] = process.poll()
        if any(code not in (None, 0) for code in codes):
            # Give the others a moment to end by themselves (they agree on bad input and exit 2).
            grace = time.monotonic() + 5
            while None in codes and time.monotonic() < grace:
                time.sleep(0.05)
                codes = [process.poll() for process in ranks]
            break
        time.sleep(0.05)
    failed = [r for r, code in enumerate(codes) if code not in (None, 0)]
    for process in ranks:
        if process.poll() is None:
            process.kill()
        process.wait()
    if failed and all(codes[r] == 2 for r in failed):
        return 2  # the ranks printed the one line
    if failed or None in codes:
        why = f"rank {failed[0]} exited {codes[failed[0]]}" if failed else f"ran past {timeout_s} s"
        print(f"{program}: error: the ranks failed ({why}); nothing written", file=sys.stderr)
        return 1
    return 0


# --------------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------------

# Tries at a fresh temporary name before giving up (each name has 48 random bits).
TEMPORARY_NAME_TRIES = 100


def _create_beside(target):
    """Opens a new hidden temporary file beside `target` for writing; returns (file, its path).

    The file gets the mode any new file gets, 0666 less the umask (tempfile.mkstemp would make it
    0600, so the renamed output would be private while every other file is not)."""
    folder, name = os.path.split(target)
    for _ in range(TEMPORARY_NAME_TRIES):
        temporary = os.path.join(folder, f".{name}.tmp.{secrets.token_hex(6)}")
        try:
            handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        return os.fdopen(handle, "w"), temporary
    raise FileExistsError(f"no free temporary name beside {target} after {TEMPORARY_NAME_TRIES} tries")


def write_outputs(files):
    """Writes every (path, text) whole or not at all, as core/json_io.hpp's OutputFiles does: each to
    a temporary file beside it (beside a symbolic link's target, which is replaced), then renames
    them all. A target that exists and is not a regular file (/dev/null, a FIFO) is written
    directly, after the others. Raises UsageError "PATH: cannot write file (...)" on failure."""
    renamed, direct = [], []
    try:
        try:
            for path, text in files:
                target = os.path.realpath(path)
                if os.path.exists(target) and not os.path.isfile(target):
                    direct.append((path, target, text))
                    continue
                out, temporary = _create_beside(target)
                renamed.append((path, target, temporary))
                with out:
                    out.write(text)
            for path, target, temporary in renamed:
                os.replace(temporary, target)
            for path, target, text in direct:
                with open(target, "w") as out:
                    out.write(text)
        except OSError as error:
            raise UsageError(f"{path}: cannot write file ({error.strerror or error})") from error
    finally:
        for _, _, temporary in renamed:
            if os.path.exists(temporary):
                os.remove(temporary)


# --------------------------------------------------------------------------------------------------
# Finding a Python that has torch
# --------------------------------------------------------------------------------------------------

# The interpreters tried, in order, when the running one has no torch (a pyenv or venv python3 may
# come first on PATH; Debian's python3-torch installs into /usr/bin/python3's dist-packages).
# SYNCPLAN_TORCH_PYTHONS (colon-separated) replaces the list.
DEFAULT_PYTHONS = ("python3", "/usr/bin/python3")
PYTHONS_VARIABLE = "SYNCPLAN_TORCH_PYTHONS"
# Set in the environment of the re-executed script, so that it never re-executes again.
REEXEC_VARIABLE = "SYNCPLAN_TORCH_PROFILE_REEXEC"
HAS_TORCH = "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"


def import_torch_or_reexec(argv, command, program):
    """Returns the torch module; when this interpreter has none, re-executes `command`
    (entry_command's list) with `argv` under the
    first of DEFAULT_PYTHONS (or $SYNCPLAN_TORCH_PYTHONS) that has it (os.execv: does not return).
    Exits 1 with one line naming every interpreter tried when none has torch."""
    try:
        import torch
        return torch
    except ImportError as error:
        reason = str(error)
    tried = [f"{sys.executable} ({reason})"]
    if not os.environ.get(REEXEC_VARIABLE):
        names = os.environ.get(PYTHONS_VARIABLE)
        for name in (names.split(":") if names else DEFAULT_PYTHONS):
            path = shutil.which(name) if name else None
            if path is None:
                tried.append(f"{name} (not found)")
                continue
            # find_spec locates torch without importing it (an import takes seconds).
            found = subprocess.run([path, "-c", HAS_TORCH], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL).returncode == 0
            if found:
                sys.stdout.flush()
                sys.stderr.flush()
                environment = entry_environment(dict(os.environ, **{REEXEC_VARIABLE: path}))
                os.execve(path, [path, *command, *argv], environment)
            tried.append(f"{path} (no torch)")
    print(f"{program}: error: no Python with PyTorch: tried {', '.join(tried)}; install python3-torch "
          f"(tools/install-deps.sh) or set {PYTHONS_VARIABLE}", file=sys.stderr)
    sys.exit(1)
