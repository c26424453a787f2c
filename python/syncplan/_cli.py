"""Shared machinery of the package's command-line entry points: input files that are read only when
regular, whole-or-nothing output files, finding a Python with torch, spawning local ranks and
finding the syncplan binary."""

import argparse
import errno
import os
import re
import secrets
import shutil
import stat
import subprocess
import sys
import time

from .errors import UsageError, printable

MILLISECONDS_PER_SECOND = 1e3     # for printed summaries
MAX_LOCAL_RANKS = 64
MAX_THREADS = 1024                # torch.set_num_threads per process: beyond any machine's cores
GROUP_TIMEOUT_S = 120             # torch.distributed's own timeout for one collective
RANK_VARIABLES = ("RANK", "WORLD_SIZE")  # set by torchrun (and by the ranks spawn_ranks starts)
NPROC_HELP = "ranks to spawn on this machine (default: 2); under torchrun (RANK and WORLD_SIZE set) the job's own ranks"
# The folder that holds the package (python/ in the repository): spawned and re-executed entry
# points run as `python -m syncplan.X` with it on PYTHONPATH, never as a file inside the package
# (whose folder first on sys.path would shadow torch with syncplan/torch.py).
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The repository root when the package runs from its source tree (python/syncplan): build/bin is there.
SOURCE_ROOT = os.path.dirname(PACKAGE_ROOT)


def check_number_range(option, value, low, high, why=""):
    """UsageError "OPTION: LOW to HIGH[ (WHY)], got VALUE" unless low <= value <= high (NaN fails)."""
    if not low <= value <= high:
        raise UsageError(f"{option}: {low} to {high}{f' ({why})' if why else ''}, got {value}")


class Parser(argparse.ArgumentParser):
    """argparse that raises UsageError (one line, exit 2) instead of printing usage and exiting, and
    reads every negative number as a value."""

    # argparse reads a word after an option as its value when it looks like a negative number, and
    # its own pattern has digits and a point only: "--lr -1e-3", "--lr -inf" and "--lr -nan" said
    # "expected one argument" instead of the range check's message. (A private attribute, the same
    # from Python 3.2 to 3.13; the parsers here have no option that looks like a number.)
    NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|infinity|nan)$", re.IGNORECASE)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = self.NEGATIVE_NUMBER

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
# Input and output paths
# --------------------------------------------------------------------------------------------------

# What open_regular's OSError says (core/json_io.cpp read_text_file's words).
IS_DIRECTORY = "it is a directory"
NOT_REGULAR = "not a regular file"


def open_regular(path, mode="r"):
    """Opens `path` for reading when it is a regular file: a FIFO or a device would block or never
    end (core/json_io.cpp read_text_file). The open itself never blocks (O_NONBLOCK, which reads of
    a regular file ignore). Raises OSError: the system's, or with strerror IS_DIRECTORY or NOT_REGULAR."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        kind = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(kind):
            raise OSError(errno.EISDIR, IS_DIRECTORY, str(path))
        if not stat.S_ISREG(kind):
            raise OSError(errno.EINVAL, NOT_REGULAR, str(path))
        return os.fdopen(descriptor, mode)
    except BaseException:
        os.close(descriptor)
        raise


def check_input_paths(inputs):
    """Before a command reads anything, as tools/cli_common.cpp check_input_paths does: UsageError
    "OPTION: PATH: no such file" (is a directory, not a file; not a regular file; cannot read file
    (why)) for the first (option, path) whose path is not a regular file this process can open;
    None paths are skipped."""
    for option, path in inputs:
        if path is None:
            continue
        try:
            open_regular(path, "rb").close()
        except OSError as error:
            why = ("no such file" if error.errno == errno.ENOENT else
                   "is a directory, not a file" if error.strerror == IS_DIRECTORY else
                   NOT_REGULAR if error.strerror == NOT_REGULAR else
                   f"cannot read file ({error.strerror or error})")
            raise UsageError(f"{option}: {printable(path)}: {why}") from None


def _same_file(a, b):
    return os.path.realpath(a) == os.path.realpath(b)


def check_output_paths(outputs, inputs=()):
    """Before a command does its work, as tools/cli_common.cpp check_output_paths does, so that a
    long job does not fail at its very end: for each (option, path) with a path, UsageError
    "OPTION: PATH: ..." when its folder does not exist, it is a directory, no file can be created in
    its folder (tried with a temporary file, removed again: root passes os.access on /proc and
    /sys), or it names the same file as an input (it would be overwritten) or an earlier output.
    An existing target that is not a regular file (/dev/null, a FIFO) is written directly, with no
    new file; whether a FIFO gets a reader is known only when it is written (write_outputs)."""
    for i, (option, path) in enumerate(outputs):
        if path is None:
            continue
        shown = f"{option}: {printable(path)}"
        target = os.path.realpath(path)
        folder = os.path.dirname(target)
        if not os.path.isdir(folder):
            raise UsageError(f"{shown}: folder {printable(folder)} does not exist")
        if os.path.isdir(target):
            raise UsageError(f"{shown}: is a directory")
        if not os.path.exists(target) or os.path.isfile(target):
            try:
                probe, temporary = _create_beside(target)
                probe.close()
                os.remove(temporary)
            except OSError as error:
                raise UsageError(f"{shown}: cannot create a file in folder {printable(folder)} "
                                 f"({error.strerror or error})") from None
        for other, other_path in inputs:
            if other_path is not None and _same_file(path, other_path):
                raise UsageError(f"{shown}: same file as {other}; it would be overwritten")
        for other, other_path in outputs[:i]:
            if other_path is not None and _same_file(path, other_path):
                raise UsageError(f"{shown}: same file as {other}")


# Tries at a fresh temporary name before giving up (each name has 48 random bits).
TEMPORARY_NAME_TRIES = 100
# How long a FIFO's writer waits for a reader to open it (core/json_io.cpp kFifoReaderWait: a reader
# started just before the command, `cat fifo &`, may open it a moment later).
FIFO_READER_WAIT_S = 5
FIFO_RETRY_S = 0.01


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


def _write_fifo(target, text):
    """Writes `text` into the FIFO `target` as core/json_io.cpp write_fifo does: opened without
    blocking (open(2) with O_NONBLOCK fails with ENXIO while no process has it open for reading),
    retried for FIFO_READER_WAIT_S, then refused instead of waiting forever; with a reader, written
    in blocking mode."""
    deadline = time.monotonic() + FIFO_READER_WAIT_S
    while True:
        try:
            descriptor = os.open(target, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            break
        except OSError as error:
            if error.errno != errno.ENXIO:
                raise
            if time.monotonic() >= deadline:
                raise OSError(errno.ENXIO, "a FIFO that no process opened for reading within "
                                           f"{FIFO_READER_WAIT_S} s") from None
            time.sleep(FIFO_RETRY_S)
    os.set_blocking(descriptor, True)
    with os.fdopen(descriptor, "w") as out:
        out.write(text)


def write_outputs(files):
    """Writes every (path, text) or (path, text, shown) whole or not at all, as core/json_io.hpp's
    OutputFiles does: first refuses, writing nothing, a directory as target or a missing folder;
    then writes each target that exists and is not a regular file (/dev/null, a FIFO: _write_fifo)
    directly, before any temporary file exists, so that a failing one leaves nothing behind; then
    each other one to a temporary file beside it (beside a symbolic link's target, which is
    replaced), and renames them all. Raises UsageError "SHOWN: cannot write file (...)"; `shown` is
    how the message names the file, by default its path (a command passes "--flag: PATH")."""
    pending = []
    for entry in files:
        path, text = entry[0], entry[1]
        shown = entry[2] if len(entry) > 2 else printable(path)
        target = os.path.realpath(path)
        folder = os.path.dirname(target)
        if os.path.isdir(target):
            raise UsageError(f"{shown}: cannot write file ({IS_DIRECTORY})")
        if not os.path.isdir(folder):
            raise UsageError(f"{shown}: cannot write file (folder {printable(folder)} does not exist)")
        pending.append((shown, target, text, os.path.exists(target) and not os.path.isfile(target)))
    renamed = []
    shown = None
    try:
        try:
            for shown, target, text, direct in pending:
                if direct and stat.S_ISFIFO(os.stat(target).st_mode):
                    _write_fifo(target, text)
                elif direct:
                    with open(target, "w") as out:
                        out.write(text)
            for shown, target, text, direct in pending:
                if not direct:
                    out, temporary = _create_beside(target)
                    renamed.append((shown, target, temporary))
                    with out:
                        out.write(text)
            for shown, target, temporary in renamed:
                os.replace(temporary, target)
        except OSError as error:
            raise UsageError(f"{shown}: cannot write file ({error.strerror or error})") from error
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


def oversubscription_warning(ranks, threads, cpus):
    """The warning for `ranks` ranks of `threads` compute threads each on one machine whose ranks may
    run on `cpus` CPUs, or None when ranks x threads <= cpus: as syncplan run's (core/host_cpus.hpp,
    docs/runtime.md section 7.1), the ranks then compute in the kernel's time slices, which neither
    the profile's per-layer medians nor the DES (a processor per worker) see."""
    if ranks * threads <= cpus:
        return None
    each = "" if threads == 1 else f" of {threads} threads each"
    fit = cpus // threads
    advice = (f"run at most {fit} rank{'' if fit == 1 else 's'}{each} here" if fit >= 1
              else f"run 1 rank of at most {cpus} thread{'' if cpus == 1 else 's'} here")
    return (f"{ranks} rank{'' if ranks == 1 else 's'}{each} on this machine share{'s' if ranks == 1 else ''} {cpus} "
            f"CPU{'' if cpus == 1 else 's'}: they compute in time slices, so each computes more than the profile's "
            f"step and more than the DES predicts (it gives every rank a processor of its own; docs/runtime.md "
            f"section 7.1); for timings {advice}")
