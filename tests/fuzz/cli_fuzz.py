#!/usr/bin/env python3
"""Grammar-based fuzzing of syncplan's command lines: every subcommand, extreme values in every option.

Each subcommand's options are read from `syncplan SUB --help` (CLI11's layout), so a new option is
fuzzed as soon as it exists. Every case starts from a valid base command line built on the
repository's fixtures (BASES below; each must exit 0 as written, checked first) and applies one or
two mutations: an option's value replaced by an extreme (0, -0, subnormals, 1e308, 1e309, NaN,
2^31, 2^53 + 1, 2^63, 2^64, 20 digits, "", a 5,000-character string, control characters, a
directory, /dev/null, /dev/full, a FIFO, a missing path, another fixture), an option of the
subcommand that the base lacks added with such a value, an option dropped or given twice, an output
path equal to an input path or to another output.

Each case runs in a fresh folder with a timeout (20 s) and must keep SPEC section 2's promise: exit 0,
or exit 2 with exactly one line on stderr; never a crash (a signal), exit 1 ("syncplan: error: ..."),
a hang or a traceback; after a failing run no output it names exists that did not exist before, no
file that existed has changed, and no temporary file (.syncplan-*.tmp) is left. A failing case is
printed as a shell command line that reproduces it; the script exits 1 when any case failed.

Usage: cli_fuzz.py --syncplan build/bin/syncplan [--seed 1] [--cases 300 | --seconds S] [--jobs 2]
       cli_fuzz.py --syncplan build/bin/syncplan --seed 1 --case 17     # one case again, verbose
"""

import argparse
import collections
import concurrent.futures
import hashlib
import os
import pathlib
import random
import re
import resource
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
TIMEOUT_S = 20  # a case running longer is a hang
SLOW_S = 10  # a case longer than this is reported as slow (not a failure)
MEMORY_LIMIT_GIB = 16  # address-space limit of each run: a runaway allocation fails instead of swamping the machine

LONG = "x" * 5000
# Values put into options. Numbers first: every numeric field gets each of these.
NUMBERS = ["0", "-0", "-1", "0.5", "1e-320", "4.9e-324", "1e-9", "1e308", "1e309", "-1e309", "nan", "inf",
           "-inf", "2147483647", "2147483648", "4294967297", "9007199254740993", "9223372036854775807",
           "9223372036854775808", "-9223372036854775809", "18446744073709551616", "99999999999999999999",
           "1e19", "0x10", "010", "+5", ".5", "1.", "7"]
STRINGS = ["", " ", LONG, "a\nb", "a\x01b", "\t", "\x7f", "-", "=", ",", ",,", "a,", "\u00e9\u2028", "auto",
           "%s%n", "../x"]
# Paths, relative to the case's folder (which has adir/ and fifo when a command line names them).
PATHS = ["adir", "./adir", "adir/", ".", "/", "/dev/null", "/dev/full", "/dev/zero", "./fifo", "missing.json",
         "no/such/folder/x.json", "/proc/self/status"]
# Suffixed sizes (profile-link -b/-e) and list forms (whatif's comma-separated sweeps).
SIZES = ["1K", "8K", "1M", "1G", "0K", "-1K", "16777216G", "99999999999999999999K", "1.5K", "1e3K", "K", "8k", "8KB"]

# Options that write a file (checked after a failing run); per subcommand, names that are inputs there.
OUTPUT_OPTIONS = {"-o", "--output", "--report", "--svg", "--html", "--csv", "--json", "--plot", "--trace", "--log",
                  "--profile-out"}
NOT_OUTPUT = {"report": {"--report"}}  # report --report reads a plan report
# Folders a run fills as it goes (run --checkpoint): complete checkpoints may stay after a later failure.
PROGRESS_FOLDERS = {"--checkpoint"}

# Fixtures, copied into a case's folder under these names when its command line names them.
FIXTURES = {
    "tiny_profile.json": "tests/cli/data/tiny_profile.json",
    "cluster.json": "data/clusters/8nodes-1gpu-10gbps.json",
    "cluster_2workers.json": "tests/cli/data/cluster_2workers.json",
    "link.json": "tests/link/data/link_good.json",
    "plan.json": "tests/report/data/tiny_plan.json",
    "bp.json": "tests/cli/data/tiny_bp.json",
    "comm.json": "tests/cli/data/tiny_comm.json",
    "nccl.log": "tests/link/data/allreduce_8gpu.log",
    "nccl.json": "tests/link/data/allreduce_16gpu.json",
    "torch_trace.json": "tests/fuzz/corpus/torch_trace/valid_annotations.json",
    "pm_result_h2.json": "tests/runtime/data/compare/pm_result_h2.json",
    "des_result_4.json": "tests/runtime/data/compare/des_result_4.json",
    "log_2ranks.jsonl": "tests/runtime/data/compare/log_2ranks.jsonl",
    "log_fast.jsonl": "tests/runtime/data/compare/log_fast.jsonl",
    "trace_pred.json": "tests/runtime/data/compare/trace_pred.json",
    "trace_meas.json": "tests/runtime/data/compare/trace_meas.json",
    "spec.json": "data/models/tiny-gpt.json",
    "data.txt": "README.md",  # training text for run: bytes
}
# Small inputs written by hand (no fixture in the repository has them).
TEXTS = {"schedule.json": '{"H": 2, "schedule": {"embed": 0, "hidden": 1, "head": 0}}'}

# Valid command lines per subcommand (words after `syncplan`). A base may have setup command lines
# (run first in the case's folder, each must exit 0) that make inputs: a plan report, a checkpoint.
RUN = "--model tiny-gpt --data data.txt --batch 1 --seq 8"
BASES = {
    "import dreamddp": [
        "--bp bp.json --comm comm.json -o out.json",
        "--bp bp.json --comm comm.json --model tiny --workers 2 --nonfinite zero --missing-comm drop "
        "--tied head=embed -o out.json",
    ],
    "import dreamddp-schedule": ["schedule.json --profile tiny_profile.json -o out.json"],
    "import nccl-tests": ["nccl.log -o out.json", "nccl.json --workers 16 --in-place --fit absolute -o out.json"],
    "import torch-trace": ["torch_trace.json --model m --missing-backward null -o out.json"],
    "plan": [
        "--profile tiny_profile.json --period 2 -o out.json --report report.json",
        "--profile tiny_profile.json --period auto --max-overhead 1 --algorithm search --time-limit-s 0.2 "
        "--search-rounds 20 --patience 5 --seed 3 --cluster cluster_2workers.json --fuse-buckets -o out.json",
        "--profile tiny_profile.json --period 4 --every-iteration head --fill-bubbles --link link.json "
        "--sync-time model --exact-nodes 1000 -o out.json",
        "--profile tiny_profile.json --period 4 --max-delay 2 --algorithm best -o out.json",
        "--model tiny-gpt --batch 1 --seq 8 --device estimate --gpu H100-SXM --dtype fp32 --cluster cluster.json "
        "--period 4 --time-limit-s 0.2 --profile-out profile_out.json -o out.json",
    ],
    "simulate": [
        "--profile tiny_profile.json --strategy wfbp --period 2 -o out.json --trace trace_out.json",
        "--profile tiny_profile.json --plan plan.json --cluster cluster_2workers.json --iterations 4 "
        "--comm-streams 2 --trace-workers 2 -o out.json --trace trace_out.json",
        "--profile tiny_profile.json --strategy ddp --period 1 --cluster cluster.json --bucket-cap-mb 1 "
        "--link link.json --sync-time model -o out.json",
    ],
    "profile": [
        "--model tiny-gpt --batch 1 --seq 8 --device estimate --gpu H100 -o out.json",
        "--model spec.json --batch 1 --seq 8 --device cpu --warmup 0 --repeats 1 --dtype fp32 "
        "--report report_out.json -o out.json",
    ],
    "profile-link": ["--backend mpi -b 64K -e 1M -f 4 -w 1 -n 2 --fit absolute -o out.json"],
    "run": [
        f"--strategy ssgd --period 1 {RUN} --iterations 1 --log log.jsonl --trace trace_out.json",
        f"--strategy plsgd-even --period 2 {RUN} --iterations 2 --seed 5 --lr 0.01 --timeout-s 10 "
        "--checkpoint ck --checkpoint-every 1 --emulate-link-Gbps 100 --emulate-latency-us 1 --log log.jsonl",
        (f"--strategy plsgd-even --period 2 {RUN} --iterations 3 --resume ck --log log.jsonl",
         [f"run --strategy plsgd-even --period 2 {RUN} --iterations 2 --checkpoint ck --checkpoint-every 2"]),
    ],
    "compare": [
        "pm_result_h2.json log_2ranks.jsonl --skip 1 --json out.json",
        "trace_pred.json trace_meas.json des_result_4.json log_2ranks.jsonl --skip 0 --json out.json",
    ],
    "report": [
        "plan.json --profile tiny_profile.json --svg out.svg --html out.html",
        ("plan2.json --profile tiny_profile.json --cluster cluster.json --link link.json --sync-time model "
         "--report plan_report.json --svg out.svg --html out.html",
         ["plan --profile tiny_profile.json --period 2 -o plan2.json --report plan_report.json"]),
        "--loss a=log_2ranks.jsonl b=log_fast.jsonl --svg out.svg",
    ],
    "whatif": [
        "--profile tiny_profile.json --batch 8 --cluster cluster.json --workers 8,16 --strategies wfbp,dp "
        "--period 2 --jobs 1 --csv out.csv --json out.json --plot out.svg --html out.html",
        "--model tiny-gpt --batch 1 --seq 8 --dtype fp32 --gpu H100-SXM --cluster cluster.json --strategies ssgd,best "
        "--period 2,auto --max-overhead 0.5 --time-limit-s 0.1 --search-rounds 5 --seed 2 --iterations 4 --jobs 1 "
        "--bandwidth-Gbps 10,100 --latency-us 5 --jitter-sigma 0.1 --straggler 2 --fill-bubbles --fuse-buckets "
        "--plot-metric speedup --plot out.svg",
        "--profile tiny_profile.json --cluster cluster.json --scaling strong --global-batch 64 --batch 8 "
        "--strategies ssgd --period 1 --jobs 1 --csv out.csv",
    ],
}


class Option:
    """One option of a subcommand as its --help shows it."""

    def __init__(self, names, kind, choices, multi):
        self.names = names  # ["-o", "--output"]
        self.kind = kind  # "flag", "INT", "UINT", "FLOAT", "TEXT"
        self.choices = choices  # ["fp32", "bf16"] or []
        self.multi = multi  # takes several values ("TEXT ...")

    @property
    def name(self):  # the long name when there is one
        return next((n for n in self.names if n.startswith("--")), self.names[0])


OPTION_LINE = re.compile(r"^  (-[^ ]+(?:,-[^ ]+)*)(?: +(.*))?$")
POSITIONAL_LINE = re.compile(r"^  ([a-z][a-z_]*) +(TEXT|INT|UINT|FLOAT)\b(.*)$")


def parse_help(text):
    """The options and positionals of one CLI11 help page: ({name: Option}, [positional names], [subcommands])."""
    options, positionals, subcommands, section = {}, [], [], None
    for line in text.splitlines():
        if line and not line.startswith(" "):
            section = line.rstrip(":")
            continue
        if section == "Subcommands":
            words = line.split()
            if words:
                subcommands.append(words[0])
        elif section == "Positionals":
            match = POSITIONAL_LINE.match(line)
            if match:
                positionals.append(match.group(1))
        elif section == "Options":
            match = OPTION_LINE.match(line)
            if not match:
                continue
            names = match.group(1).split(",")
            rest = match.group(2) or ""
            if "--help" in names:
                continue
            type_match = re.match(r"(TEXT|INT|UINT|FLOAT)(:\{([^}]*)\})?", rest)
            kind, choices = "flag", []
            if type_match:
                kind = type_match.group(1)
                if type_match.group(3):
                    choices = type_match.group(3).split(",")
            multi = bool(re.match(r"\S+ \.\.\.", rest))
            option = Option(names, kind, choices, multi)
            for name in names:
                options[name] = option
    return options, positionals, subcommands


def discover(syncplan, env):
    """{"plan": ({name: Option}, positionals), "import dreamddp": ..., ...} from the --help pages."""
    found = {}

    def visit(path):
        done = subprocess.run([syncplan] + path + ["--help"], capture_output=True, text=True, env=env, timeout=30)
        if done.returncode != 0:
            raise SystemExit(f"cli_fuzz.py: `syncplan {' '.join(path)} --help` exited {done.returncode}")
        options, positionals, subcommands = parse_help(done.stdout)
        if path:
            if subcommands:
                for sub in subcommands:
                    visit(path + [sub])
                return
            found[" ".join(path)] = (options, positionals)
        else:
            for sub in subcommands:
                visit([sub])

    visit([])
    return found


def parse_base(words, options):
    """A base command line as items: ["opt", name, [values]] (values [] for a flag) or ["pos", None, [value]]."""
    items, i = [], 0
    while i < len(words):
        word = words[i]
        if word.startswith("-") and word in options:
            option = options[word]
            if option.kind == "flag":
                items.append(["opt", word, []])
                i += 1
                continue
            values = [words[i + 1]]
            i += 2
            while option.multi and i < len(words) and not words[i].startswith("-"):
                values.append(words[i])
                i += 1
            items.append(["opt", word, values])
        elif word.startswith("-"):
            raise SystemExit(f"cli_fuzz.py: a base names {word}, which --help does not list: update BASES")
        else:
            items.append(["pos", None, [word]])
            i += 1
    return items


def render(items, equals_form=()):
    words = []
    for index, (kind, name, values) in enumerate(items):
        if kind == "pos":
            words += values
        elif index in equals_form and name.startswith("--") and len(values) == 1:
            words.append(f"{name}={values[0]}")
        else:
            words += [name] + values
    return words


def output_names(command):
    return OUTPUT_OPTIONS - NOT_OUTPUT.get(command, set())


class Case:
    def __init__(self, index, command, base, setup, words, mutations):
        self.index, self.command, self.base, self.setup = index, command, base, setup
        self.words = words  # after `syncplan COMMAND`
        self.mutations = mutations  # text, e.g. "--period = '1e309'"
        self.outputs = []  # output paths named (relative to the folder)
        self.progress = []  # folders named by PROGRESS_FOLDERS options


def pick_value(rng, option, inputs):
    """An extreme value for `option` (None: a flag)."""
    kind = option.kind if option is not None else "TEXT"
    pools = []
    if kind in ("INT", "UINT", "FLOAT"):
        pools = [NUMBERS] * 6 + [STRINGS, PATHS]
    else:
        pools = [NUMBERS] * 3 + [STRINGS] * 2 + [PATHS] * 3 + [list(inputs) or PATHS]
        if option is not None and option.name in ("--min-bytes", "--max-bytes"):
            pools += [SIZES] * 4
        if option is not None and option.choices:
            pools += [option.choices] * 2
    value = rng.choice(rng.choice(pools))
    return value


def list_edit(rng, value):
    """A comma list (whatif's sweeps) or NAME=VALUE (--tied, --loss) with one part made extreme."""
    for separator in (",", "="):
        if separator in value:
            parts = value.split(separator)
            parts[rng.randrange(len(parts))] = rng.choice(NUMBERS + STRINGS[:3] + PATHS[:4])
            return separator.join(parts)
    return None


def make_case(rng, index, commands, bases):
    command = rng.choice(sorted(bases))
    base_index = rng.randrange(len(bases[command]))
    words, setup = bases[command][base_index]
    options, _ = commands[command]
    items = [list(item[:2]) + [list(item[2])] for item in parse_base(words, options)]
    inputs = sorted({v for kind, name, values in items for v in values
                     if v in FIXTURES or v in TEXTS or v in ("plan2.json", "plan_report.json")})
    outputs = output_names(command)
    mutations = []
    count = 1 if rng.random() < 0.75 else 2
    for _ in range(count):
        how = rng.choices(["value", "add", "drop", "duplicate", "same-path", "list"], [45, 25, 8, 10, 7, 5])[0]
        valued = [i for i, item in enumerate(items) if item[2]]
        present = {item[1] for item in items}
        if how == "value" and valued:
            i = rng.choice(valued)
            option = options.get(items[i][1]) if items[i][1] else None
            j = rng.randrange(len(items[i][2]))
            items[i][2][j] = pick_value(rng, option, inputs)
            mutations.append(f"value of {items[i][1] or 'a positional'} -> {short(items[i][2][j])}")
        elif how == "add":
            absent = sorted({o.name for o in options.values()} - present)
            if not absent:
                continue
            option = options[rng.choice(absent)]
            values = [] if option.kind == "flag" else [pick_value(rng, option, inputs)]
            items.insert(rng.randrange(len(items) + 1), ["opt", option.name, values])
            mutations.append(f"added {option.name} {short(values[0]) if values else ''}".rstrip())
        elif how == "drop" and items:
            i = rng.randrange(len(items))
            mutations.append(f"dropped {items[i][1] or 'positional ' + items[i][2][0]}")
            del items[i]
        elif how == "duplicate" and items:
            i = rng.randrange(len(items))
            copy = [items[i][0], items[i][1], list(items[i][2])]
            if copy[2] and rng.random() < 0.5:
                copy[2][-1] = pick_value(rng, options.get(copy[1]) if copy[1] else None, inputs)
            items.insert(rng.randrange(len(items) + 1), copy)
            mutations.append(f"duplicated {copy[1] or 'positional'} {short(' '.join(copy[2]))}".rstrip())
        elif how == "same-path":
            named = [i for i, item in enumerate(items) if item[1] in outputs]
            targets = inputs + [items[i][2][0] for i in named]
            if not targets:
                continue
            target = rng.choice(targets)
            if named and rng.random() < 0.7:
                i = rng.choice(named)
                items[i][2] = [target]
                mutations.append(f"{items[i][1]} -> {target} (an input or another output)")
            else:
                absent = sorted({o.name for o in options.values() if o.name in outputs} - present)
                if not absent:
                    continue
                name = rng.choice(absent)
                items.append(["opt", name, [target]])
                mutations.append(f"added {name} {target} (an input or another output)")
        elif how == "list":
            edits = [(i, j) for i, item in enumerate(items) for j, v in enumerate(item[2]) if "," in v or "=" in v]
            if not edits:
                continue
            i, j = rng.choice(edits)
            items[i][2][j] = list_edit(rng, items[i][2][j])
            mutations.append(f"part of {items[i][1] or 'a positional'} -> {short(items[i][2][j])}")
    equals_form = {i for i in range(len(items)) if rng.random() < 0.15}
    case = Case(index, command, base_index, setup, render(items, equals_form), mutations or ["none (the base)"])
    case.outputs = sorted({v for kind, name, values in items if name in outputs for v in values})
    case.progress = sorted({v for kind, name, values in items if name in PROGRESS_FOLDERS for v in values})
    return case


def short(value):
    if value == LONG:
        return "<5000 x>"
    return repr(value) if len(value) < 60 else repr(value[:40] + "...")


def shell_word(word):
    """One shell word that reproduces `word` exactly ($'...' for control characters)."""
    if word == LONG:
        return '"$(printf \'x%.0s\' $(seq 5000))"'
    if all(ch.isprintable() for ch in word):
        return shlex.quote(word)
    escaped = "".join(ch if ch.isprintable() and ch not in "\\'" else
                      "\\%s" % ch if ch in "\\'" else "\\x%02x" % ord(ch) if ord(ch) < 0x100 else
                      "\\u%04x" % ord(ch) for ch in word)
    return "$'" + escaped + "'"


def needed_files(words):
    """Fixtures and prepared paths (adir, fifo) that a command line names."""
    joined = "\0".join(words)
    files = [name for name in list(FIXTURES) + list(TEXTS) if name in joined]
    return files, "adir" in joined, "fifo" in joined


def prepare(folder, words):
    files, need_dir, need_fifo = needed_files(words)
    for name in files:
        if name in FIXTURES:
            shutil.copyfile(REPO / FIXTURES[name], folder / name)
        else:
            (folder / name).write_text(TEXTS[name])
    if need_dir:
        (folder / "adir").mkdir()
    if need_fifo:
        os.mkfifo(folder / "fifo")


def reproducer(syncplan, case):
    all_words = [w for line in case.setup for w in shlex.split(line)] + case.words
    files, need_dir, need_fifo = needed_files(all_words)
    steps = ['cd "$(mktemp -d)"']
    for name in files:
        if name in FIXTURES:
            steps.append(f"cp {shlex.quote(str(REPO / FIXTURES[name]))} {name}")
        else:
            steps.append(f"printf %s {shlex.quote(TEXTS[name])} > {name}")
    if need_dir:
        steps.append("mkdir adir")
    if need_fifo:
        steps.append("mkfifo fifo")
    for line in case.setup:
        steps.append(f"{shlex.quote(syncplan)} {line} >/dev/null")
    steps.append(" ".join([shlex.quote(syncplan)] + case.command.split() + [shell_word(w) for w in case.words]))
    return " && ".join(steps)


def snapshot(folder):
    """{relative path: digest} of every file under `folder` (not following links; the FIFO by kind only)."""
    state = {}
    for root, dirs, files in os.walk(folder):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, folder)
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode):
                with open(path, "rb") as handle:
                    state[rel] = hashlib.sha1(handle.read()).hexdigest()
            else:
                state[rel] = f"mode {stat.S_IFMT(info.st_mode):o}"
    return state


def limit_memory():
    limit = MEMORY_LIMIT_GIB << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def execute(argv, folder, env, timeout):
    """(returncode or "hang", stdout, stderr, seconds). The run gets a session of its own, killed whole on a hang."""
    start = time.monotonic()
    process = subprocess.Popen(argv, cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True, preexec_fn=limit_memory)
    try:
        out, err = process.communicate(timeout=timeout)
        code = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        code = "hang"
    return code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), time.monotonic() - start


BAD_TEXT = ["Traceback", "terminate called", "Sanitizer", "Assertion", "what():", "Segmentation", "core dumped",
            "internal error", "std::"]


def judge(case, code, err, before, after, folder):
    """The promise's failures of one run: [(kind, detail)]."""
    problems = []
    if code == "hang":
        return [("hang", f"no exit within {TIMEOUT_S} s")]
    lines = err.rstrip("\n").split("\n") if err.strip() else []
    if code < 0:
        problems.append((f"signal {-code} ({signal.Signals(-code).name})", err[-300:]))
    elif code == 1:
        problems.append(("exit 1", lines[-1] if lines else "(no message)"))
    elif code not in (0, 2):
        problems.append((f"exit {code}", lines[-1] if lines else "(no message)"))
    if code == 2:
        if len(lines) != 1:
            problems.append((f"exit 2 with {len(lines)} lines on stderr", " | ".join(lines)[:300]))
        elif lines[0].startswith("syncplan: error:"):
            problems.append(("exit 2 with an internal error's prefix", lines[0][:300]))
    for text in BAD_TEXT:
        if text in err:
            problems.append((f"'{text}' on stderr", err[:300]))
            break
    created = set(after) - set(before)
    temporaries = sorted(p for p in created if os.path.basename(p).startswith(".syncplan-") or p.endswith(".tmp"))
    if temporaries:
        problems.append(("temporary file left", ", ".join(temporaries)))
    if code != 0:
        named = {os.path.normpath(p) for p in case.outputs}
        left = sorted(p for p in created if p in named)
        if left:
            problems.append(("output written by a failing run", ", ".join(left)))
        changed = sorted(p for p in before if p in after and before[p] != after[p])
        if changed:
            problems.append(("existing file changed by a failing run", ", ".join(changed)))
        progress = [os.path.normpath(p) + os.sep for p in case.progress]
        other = sorted(p for p in created if p not in named and p not in temporaries
                       and not any(p.startswith(folder) for folder in progress))
        if other:
            problems.append(("file created by a failing run", ", ".join(other)[:300]))
    return problems


def run_case(syncplan, case, work, env, keep):
    folder = pathlib.Path(tempfile.mkdtemp(prefix=f"case-{case.index}-", dir=work))
    try:
        setup_words = [w for line in case.setup for w in shlex.split(line)]
        prepare(folder, setup_words + case.words)
        for line in case.setup:
            code, _, err, _ = execute([syncplan] + shlex.split(line), folder, env, TIMEOUT_S * 3)
            if code != 0:
                return {"code": "setup", "problems": [("setup failed", f"exit {code}: {err[-300:]}")], "seconds": 0,
                        "err": err}
        before = snapshot(folder)
        code, out, err, seconds = execute([syncplan] + case.command.split() + case.words, folder, env, TIMEOUT_S)
        after = snapshot(folder)
        problems = judge(case, code, err, before, after, folder)
        return {"code": code, "problems": problems, "seconds": seconds, "err": err, "out": out}
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


def class_of(case, problem):
    """Findings of one kind, on one subcommand, from one option, with the same message shape, are one class."""
    kind, detail = problem
    shape = re.sub(r"[0-9]+", "N", detail)[:80]
    shape = re.sub(r"'[^']*'", "'…'", shape)
    touched = re.findall(r"(--?[a-zA-Z][-a-zA-Z0-9]*|positional)", " ".join(case.mutations))
    return (case.command, kind, " ".join(sorted(set(touched))), shape)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--syncplan", required=True, help="the syncplan binary")
    parser.add_argument("--seed", type=int, default=1, help="seed of the case generator (default 1)")
    parser.add_argument("--cases", type=int, default=300, help="cases to run (default 300)")
    parser.add_argument("--seconds", type=float, default=0, help="stop starting cases after this many seconds")
    parser.add_argument("--jobs", type=int, default=1, help="cases at a time (default 1)")
    parser.add_argument("--case", type=int, action="append", help="run only this case of --seed (repeatable)")
    parser.add_argument("--only", action="append", help="only this subcommand, e.g. 'plan' or 'import dreamddp'")
    parser.add_argument("--work", type=pathlib.Path, help="folder for the cases' folders (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep every case's folder")
    parser.add_argument("--skip-base-check", action="store_true", help="do not run the bases unmutated first")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case")
    args = parser.parse_args()

    syncplan = str(pathlib.Path(args.syncplan).resolve())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_", "PMI_"))}
    env.update(OMP_NUM_THREADS="1", LC_ALL="C")
    commands = discover(syncplan, env)
    missing = sorted(set(commands) - set(BASES))
    if missing:
        print(f"cli_fuzz.py: no base command line for {', '.join(missing)}: add one to BASES", file=sys.stderr)
        return 2
    bases = {}
    for command, lines in BASES.items():
        if command not in commands:
            print(f"cli_fuzz.py: BASES names '{command}', which syncplan --help does not list", file=sys.stderr)
            return 2
        if args.only and command not in args.only:
            continue
        bases[command] = [(shlex.split(line), []) if isinstance(line, str) else (shlex.split(line[0]), line[1])
                          for line in BASES[command]]
    if not bases:
        print("cli_fuzz.py: --only names no subcommand", file=sys.stderr)
        return 2

    work = args.work or pathlib.Path(tempfile.mkdtemp(prefix="syncplan-cli-fuzz-"))
    work.mkdir(parents=True, exist_ok=True)
    if not args.skip_base_check and not args.case:
        broken = []
        for command in sorted(bases):
            for index, (words, setup) in enumerate(bases[command]):
                case = Case(-1, command, index, setup, words, ["none (the base)"])
                case.outputs = []
                result = run_case(syncplan, case, work, env, False)
                if result["code"] != 0:
                    broken.append(f"  {reproducer(syncplan, case)}\n    exit {result['code']}: "
                                  f"{result['err'].strip()[-300:]}")
        if broken:
            print("cli_fuzz.py: base command lines that do not exit 0 (fix BASES or the fixtures):", file=sys.stderr)
            print("\n".join(broken), file=sys.stderr)
            return 2

    rng = random.Random(args.seed)
    total = max(args.cases, max(args.case) + 1 if args.case else 0)
    cases = [make_case(rng, i, commands, bases) for i in range(total)]
    if args.case:
        cases = [cases[i] for i in args.case]

    start = time.monotonic()
    per_command = collections.Counter()
    codes = collections.defaultdict(collections.Counter)
    classes = collections.OrderedDict()
    slow = []
    lock = threading.Lock()

    def one(case):
        if args.seconds and time.monotonic() - start > args.seconds:
            return
        result = run_case(syncplan, case, work, env, args.keep)
        with lock:
            per_command[case.command] += 1
            codes[case.command][result["code"]] += 1
            if result["seconds"] > SLOW_S:
                slow.append((case, result["seconds"]))
            for problem in result["problems"]:
                key = class_of(case, problem)
                classes.setdefault(key, []).append((case, problem))
            if args.verbose or args.case:
                print(f"case {case.index} [{case.command}] {'; '.join(case.mutations)}: exit {result['code']} "
                      f"in {result['seconds']:.2f} s")
                print(f"  {reproducer(syncplan, case)}")
                if result["err"].strip():
                    print("  stderr: " + result["err"].strip()[:500].replace("\n", "\n          "))
                for kind, detail in result["problems"]:
                    print(f"  FAIL {kind}: {detail}")

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(one, cases))
    elapsed = time.monotonic() - start
    if not args.work and not args.keep:
        shutil.rmtree(work, ignore_errors=True)

    ran = sum(per_command.values())
    print(f"cli_fuzz.py: seed {args.seed}, {ran} cases in {elapsed:.0f} s, {len(classes)} finding classes")
    print(f"  {'subcommand':<26} {'cases':>6}  exit codes")
    for command in sorted(per_command):
        seen = ", ".join(f"{code}: {n}" for code, n in sorted(codes[command].items(), key=lambda kv: str(kv[0])))
        print(f"  {command:<26} {per_command[command]:>6}  {seen}")
    for case, seconds in slow:
        print(f"  SLOW case {case.index} [{case.command}] took {seconds:.1f} s: {reproducer(syncplan, case)}")
    for (command, kind, touched, _), found in classes.items():
        case, (_, detail) = found[0]
        print(f"FAIL [{command}] {kind} ({len(found)} case{'s' if len(found) > 1 else ''}; {touched or 'base'}): "
              f"{detail}")
        print(f"  case {case.index} of seed {args.seed}: {'; '.join(case.mutations)}")
        print(f"  {reproducer(syncplan, case)}")
    return 1 if classes else 0


if __name__ == "__main__":
    sys.exit(main())
