#!/usr/bin/env python3
"""Inputs fuzzers rarely reach, made by hand for one reader and fed to `syncplan` as users run it.

Every reader gets: very long tokens, names and lines (100,000 characters), JSON nested 100,000
levels deep in each field whose value a message may print, huge, tiny and overflowing numbers
(1e309, -0, 1e-320, integers past int64), names and lines of only whitespace of every kind
(\\t \\v \\f \\r, NBSP), names at and past the 1,024-character limit, and names or keys that contain
one another. Each run must end with exit 0 (the input was valid) or exit 2 with exactly one line on
stderr and no output file; cases marked "refused" must give exit 2. Never a crash, a sanitizer
report, an uncaught exception or a hang (docs/fuzzing.md, "Inputs by hand").

Usage: edge_inputs.py --syncplan BIN --cli-data tests/cli/data --repo-data data --work DIR READER
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys

LONG = 100_000  # characters of a long token, name or line
DEPTH = 100_000  # levels of a deeply nested JSON value
LIMIT = 1024  # longest layer name (docs/formats.md, "Profile")

# JSON texts for one value; True: no reader accepts it there (a nested value where a scalar goes,
# a number that is no double), so exit 2 is required; False: valid in some fields (exit 0 or 2).
VALUES = {
    "deep array": ("[" * DEPTH + "]" * DEPTH, True),
    "deep object": ('{"a":' * DEPTH + "1" + "}" * DEPTH, True),
    "deep array in a string field's place": ("[" * DEPTH + '"x"' + "]" * DEPTH, True),
    "long string": (json.dumps("n" * LONG), False),
    "long string of NULs escaped": ('"' + "\\u0000" * 1000 + '"', False),
    "name at the limit": (json.dumps("a" * LIMIT), False),
    "name past the limit": (json.dumps("a" * (LIMIT + 1)), False),
    "1e309": ("1e309", True),
    "-1e309": ("-1e309", True),
    "-0": ("-0", False),
    "-0.0": ("-0.0", False),
    "1e-320": ("1e-320", False),
    "4.9e-324": ("4.9e-324", False),
    "2^63": ("9223372036854775808", False),
    "2^64": ("18446744073709551616", False),
    "-2^63-1": ("-9223372036854775809", False),
    "30 digits": ("123456789012345678901234567890", False),
    "1e19": ("1e19", False),
    "NaN": ("NaN", False),
    "-Infinity": ("-Infinity", False),
}
WHITESPACE = {"tab": "\t", "vertical tab": "\v", "form feed": "\f", "carriage return": "\r",
              "NBSP": "\u00a0", "space": " ", "line separator": "\u2028", "ideographic space": "\u3000"}
for kind, char in WHITESPACE.items():
    VALUES[f"string of only {kind}"] = (json.dumps(char * 3), False)
    VALUES[f"string of only {kind}, unescaped"] = ('"' + char * 3 + '"', False)

# Whole files that are never valid for a JSON reader.
FILES = {
    "empty": "",
    "one long line of letters": "x" * LONG,
    "one long token of digits": "1" * LONG,
    "deep array": "[" * DEPTH + "]" * DEPTH,
    "deep object": '{"a":' * DEPTH + "1" + "}" * DEPTH,
    "deep array, unclosed": "[" * DEPTH,
    "long string, unclosed": '"' + "s" * LONG,
    "BOM only": "\ufeff",
}
for kind, char in WHITESPACE.items():
    FILES[f"only {kind}"] = char * 100
    FILES[f"lines of only {kind}"] = (char * 10 + "\n") * 100


def profile_text(layers='{"name": "a", "backward_s": 0.001, "sync_s": 0.001}', model='"toy"', source='"estimated:hand"',
                 workers="2"):
    return ('{"format": "syncplan.profile/v1", "model": %s, "source": %s, "workers": %s, "layers": [%s]}'
            % (model, source, workers, layers))


# Per reader: the command (FILE: the input; OUT: the output that must not appear on refusal), the
# input's file name, and templates in which @V@ stands for one JSON value from VALUES.
def readers(cli_data, repo_data):
    tiny_profile = str(cli_data / "tiny_profile.json")
    layer = '{"name": "a", "param_count": 10, "param_bytes": 40, "forward_s": 0.001, "backward_s": 0.001, "update_s": 0.001, "sync_s": 0.001}'
    two = lambda first, second: "%s, %s" % (first, second)
    spread = '{"samples": %s, "min_s": 0.0005, "p10_s": 0.0008, "p90_s": %s, "max_s": 0.002}'  # around backward_s 0.001
    plan = ('{"format": "syncplan.plan/v1", "model": "tiny", "period": %s, "algorithm": %s, "layers": ['
            '{"name": %s, "sync_iterations": %s}, {"name": "hidden", "sync_iterations": [0]}, '
            '{"name": "head", "sync_iterations": [0]}]%s}')
    link = ('{"format": "syncplan.link/v1", "collective": "allreduce", "workers": %s, "source": %s, "alpha_s": %s,'
            ' "beta_s_per_byte": 1e-9, "r_squared": 1.0, "samples": [{"size_bytes": %s, "time_s": %s, "algbw_GBps": 0.0,'
            ' "busbw_GBps": 0.0}]}')
    cluster = ('{"format": "syncplan.cluster/v1", "name": %s, "workers": %s, "workers_per_node": 1, "intra_node": '
               '{"bandwidth_Gbps": 8, "latency_us": 10}, "inter_node": {"bandwidth_Gbps": %s, "latency_us": %s}}')
    spec = json.loads((repo_data / "models" / "tiny-gpt.json").read_text())
    gpus = json.loads((repo_data / "gpus.json").read_text())
    trace_event = '{"name": %s, "ph": "X", "ts": %s, "dur": %s, "tid": 1, "pid": "CPU functions", "args": {}}'
    fwd_a, bwd_a = '"syncplan.forward:a"', '"syncplan.backward:a"'
    trace = lambda first: "[%s, %s]" % (first, trace_event % (bwd_a, "20", "5"))
    log = (cli_data.parent.parent / "link" / "data" / "allreduce_8gpu.log").read_text()
    return {
        "profile": (["simulate", "--profile", "FILE", "--strategy", "wfbp", "--period", "1", "-o", "OUT"], "profile.json", [
            profile_text(model="@V@"), profile_text(source="@V@"), profile_text(workers="@V@"),
            profile_text(layers='{"name": @V@, "backward_s": 0.001, "sync_s": 0.001}'),
            profile_text(layers=layer.replace('"backward_s": 0.001', '"backward_s": @V@')),
            profile_text(layers=layer.replace('"sync_s": 0.001', '"sync_s": @V@')),
            profile_text(layers=layer.replace('"param_count": 10', '"param_count": @V@')),
            profile_text(layers=layer.replace('"param_bytes": 40', '"param_bytes": @V@')),
            profile_text(layers=two(layer, layer.replace('"a"', '"a.a"').replace('"sync_s": 0.001', '"tied_to": @V@'))),
            profile_text(layers=layer.replace('"name": "a"', '"name": "a", @V@: 1')),
            profile_text(layers=layer.replace('"sync_s": 0.001', '"sync_s": 0.001, "backward_spread": ' + spread % ("5", "@V@"))),
            profile_text(layers=layer.replace('"sync_s": 0.001', '"sync_s": 0.001, "backward_spread": ' + spread % ("@V@", "0.0015"))),
        ]),
        "plan": (["simulate", "--profile", tiny_profile, "--plan", "FILE", "-o", "OUT"], "plan.json", [
            plan % ("@V@", '"hand"', '"embed"', "[0]", ""), plan % ("1", "@V@", '"embed"', "[0]", ""),
            plan % ("1", '"hand"', "@V@", "[0]", ""), plan % ("1", '"hand"', '"embed"', "[@V@]", ""),
            plan % ("1", '"hand"', '"embed"', "@V@", ""),
            plan % ("1", '"hand"', '"embed"', "[0]", ', "buckets": {"alpha_s": @V@, "iterations": [[["head", "hidden", "embed"]]]}'),
            plan % ("1", '"hand"', '"embed"', "[0]", ', "buckets": {"alpha_s": 0, "iterations": [[[@V@, "hidden", "embed"]]]}'),
            plan % ("1", '"hand"', '"embed"', "[0]", ', "predicted": {"period_s": @V@, "iteration_s": [1], "wait_s": [0]}'),
        ]),
        "cluster": (["simulate", "--profile", tiny_profile, "--cluster", "FILE", "--strategy", "wfbp", "--period", "1",
                     "-o", "OUT"], "cluster.json", [
            cluster % ("@V@", "2", "8", "10"), cluster % ('"c"', "@V@", "8", "10"),
            cluster % ('"c"', "2", "@V@", "10"), cluster % ('"c"', "2", "8", "@V@"),
            cluster[:-1] % ('"c"', "2", "8", "10") + ', "jitter": {"distribution": "measured", "correlation": @V@}}',
        ]),
        "link": (["simulate", "--profile", tiny_profile, "--strategy", "wfbp", "--period", "1", "--link", "FILE",
                  "-o", "OUT"], "link.json", [
            link % ("@V@", '"estimated:hand"', "1e-5", "8", "1e-5"), link % ("2", "@V@", "1e-5", "8", "1e-5"),
            link % ("2", '"estimated:hand"', "@V@", "8", "1e-5"), link % ("2", '"estimated:hand"', "1e-5", "@V@", "1e-5"),
            link % ("2", '"estimated:hand"', "1e-5", "8", "@V@"),
        ]),
        "model_spec": (["profile", "--model", "FILE", "--batch", "1", "--seq", "8", "--device", "estimate",
                        "--gpu", "H100-SXM", "-o", "OUT"], "spec.json",
                       [json.dumps(dict(spec, **{key: "@V@"})).replace('"@V@"', "@V@")
                        for key in ("name", "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                    "norm_eps", "embd_pdrop")]),
        "gpu_catalog": (["profile", "--model", str(repo_data / "models" / "tiny-gpt.json"), "--batch", "1", "--seq", "8",
                         "--device", "estimate", "--gpu", "H100-SXM", "-o", "OUT"], "datadir/gpus.json",
                        [json.dumps(dict(gpus, **{key: "@V@"})).replace('"@V@"', "@V@")
                         for key in ("compute_efficiency", "memory_efficiency")] +
                        [json.dumps(dict(gpus, gpus=[dict(gpus["gpus"][0], **{key: "@V@"})] + gpus["gpus"][1:]))
                         .replace('"@V@"', "@V@") for key in gpus["gpus"][0]]),
        "dreamddp_bp": (["import", "dreamddp", "--bp", "FILE", "--comm", str(cli_data / "tiny_comm.json"), "-o", "OUT"],
                        "bp.json", ['{"embed": @V@, "hidden": 0.001, "head": 0.001}',
                                    '{@V@: 0.001, "embed": 0.001, "hidden": 0.001, "head": 0.001}',
                                    '{"embed": 0.001, "embed.embed": @V@, "hidden": 0.001, "head": 0.001}']),
        "dreamddp_comm": (["import", "dreamddp", "--bp", str(cli_data / "tiny_bp.json"), "--comm", "FILE", "-o", "OUT"],
                          "comm.json", ['{"embed": @V@, "hidden": 0.001, "head": 0.001}',
                                        '{"embed": 0.001, "hidden": 0.001, "head": 0.001, @V@: 0.001}']),
        "dreamddp_schedule": (["import", "dreamddp-schedule", "FILE", "--profile", tiny_profile, "-o", "OUT"],
                              "schedule.json", ['{"H": @V@, "schedule": {"embed": 0, "hidden": 0, "head": 0}}',
                                                '{"H": 2, "schedule": {"embed": @V@, "hidden": 0, "head": 0}}',
                                                '{"H": 2, "schedule": {"embed": [0, @V@], "hidden": 0, "head": 0}}',
                                                '{"H": 2, "schedule": {@V@: 0, "embed": 0, "hidden": 0, "head": 0}}']),
        "nccl_tests_json": (["import", "nccl-tests", "FILE", "-o", "OUT"], "nccl.json", nccl_json_templates(cli_data)),
        "nccl_tests_text": (["import", "nccl-tests", "FILE", "-o", "OUT"], "nccl.log", nccl_text_templates(log)),
        "torch_trace": (["import", "torch-trace", "FILE", "--missing-backward", "null", "-o", "OUT"], "trace.json", [
            trace(trace_event % ("@V@", "0", "10")), trace(trace_event % (fwd_a, "@V@", "10")),
            trace(trace_event % (fwd_a, "0", "@V@")),
            "[%s, %s]" % (trace_event % (fwd_a, "0", "10"), trace_event % ("@V@", "20", "5")),
            '{"traceEvents": %s, "deviceProperties": @V@}' % trace(trace_event % (fwd_a, "0", "10")),
            trace((trace_event % (fwd_a, "0", "10")).replace('"args": {}', '"args": {"Sequence number": @V@}')),
            "[%s, %s, %s]" % (trace_event % ('"syncplan.forward:syncplan.forward:a"', "0", "10"),
                              trace_event % ('"syncplan.forward:a"', "1", "5"), trace_event % ("@V@", "20", "5")),
        ]),
        **compare_readers(cli_data.parent.parent / "runtime" / "data" / "compare"),
    }


def compare_readers(data):
    """`syncplan compare`'s three inputs, each against a fixed other side of tests/runtime/data/compare
    (docs/compare.md): a simulate result as PREDICTED, a measured trace and a run log as MEASURED,
    with @V@ in each field the reader checks."""
    result = (data / "pm_result_h2.json").read_text()
    trace = (data / "trace_meas.json").read_text()
    log = (data / "log_2ranks.jsonl").read_text()
    first_line = log.splitlines()[0]
    backward = '"ts": 1300, "dur": 1000, "args": {"iteration": 0, "layer": "head"}'
    allreduce = '"ts": 2400, "dur": 2200, "args": {"iteration": 0, "layer": "head", "bytes": 1024}'
    assert backward in trace and allreduce in trace, "trace_meas.json changed: update edge_inputs.py"
    def in_log(old, new):  # the first line of the log with one value replaced
        assert old in first_line, "log_2ranks.jsonl changed: update edge_inputs.py"
        return log.replace(first_line, first_line.replace(old, new), 1)
    def in_result(old, new):
        assert old in result, "pm_result_h2.json changed: update edge_inputs.py"
        return result.replace(old, new, 1)
    out = ["--json", "OUT"]
    return {
        "compare_result": (["compare", "FILE", str(data / "log_2ranks.jsonl")] + out, "result.json", [
            in_result('"engine": "period-model"', '"engine": @V@'), in_result('"period": 2', '"period": @V@'),
            in_result("0.01,", "@V@,"), in_result('"format": "syncplan.result/v1"', '"format": @V@'),
            in_result('"model": "tiny"', '"model": "tiny", @V@: 1'),
        ]),
        "compare_trace": (["compare", str(data / "trace_pred.json"), "FILE"] + out, "trace.json", [
            trace.replace(backward, backward.replace('"ts": 1300', '"ts": @V@'), 1),
            trace.replace(backward, backward.replace('"dur": 1000', '"dur": @V@'), 1),
            trace.replace(backward, backward.replace('"iteration": 0', '"iteration": @V@'), 1),
            trace.replace(backward, backward.replace('"ts"', '"pid": @V@, "ts"'), 1),
            trace.replace(allreduce, allreduce.replace('"layer": "head"', '"layer": @V@'), 1),
            trace.replace(allreduce, allreduce.replace('"layer": "head"', '"layers": [@V@]'), 1),
            trace.replace(allreduce, allreduce.replace('"layer": "head"', '"layers": @V@'), 1),
        ]),
        "compare_log": (["compare", str(data / "pm_result_h2.json"), "FILE"] + out, "log.jsonl", [
            in_log('"iteration": 0', '"iteration": @V@'), in_log('"rank": 0', '"rank": @V@'),
            in_log('"loss": 5.5', '"loss": @V@'), in_log('"iteration_s": 0.05', '"iteration_s": @V@'),
            in_log('"compute_s": 0.04', '"compute_s": @V@'), in_log('"wait_s": 0.01', '"wait_s": @V@'),
            in_log('["head", "embed"]', '[@V@, "embed"]'), in_log('[["head"], ["embed"]]', '[[@V@], ["embed"]]'),
            in_log('"buckets"', '@V@: 1, "buckets"'),
        ]),
    }


def log_cases(log):
    """Whole run logs with whitespace-only lines, a 100,000-character line and 100,000 lines put in."""
    lines = log.splitlines()
    cases = {}
    for kind, char in WHITESPACE.items():
        cases[f"a line of only {kind} between lines"] = lines[:2] + [char * 20] + lines[2:]
        cases[f"every line padded with {kind}"] = [char + line + char for line in lines]
    cases["a 100,000-character line of spaces"] = lines[:2] + [" " * LONG] + lines[2:]
    cases["a line padded to 100,000 characters"] = [lines[0][:-1] + " " * LONG + "}"] + lines[1:]
    cases["100,000 blank lines"] = lines[:2] + [""] * LONG + lines[2:]
    cases["one line cut short at the end"] = lines[:-1] + [lines[-1][:20]]
    return {name: "\n".join(body) + "\n" for name, body in cases.items()}


def nccl_json_templates(cli_data):
    """tests/link/data/allreduce_16gpu.json (all_reduce_perf -J), with @V@ in each kind of field."""
    document = json.loads((cli_data.parent.parent / "link" / "data" / "allreduce_16gpu.json").read_text())
    templates = []
    first = document["results"][0]
    for key in first:
        value = first[key]
        if isinstance(value, dict):
            for inner in value:
                edited = json.loads(json.dumps(document))
                edited["results"][0][key][inner] = "@V@"
                templates.append(json.dumps(edited).replace('"@V@"', "@V@"))
        else:
            edited = json.loads(json.dumps(document))
            edited["results"][0][key] = "@V@"
            templates.append(json.dumps(edited).replace('"@V@"', "@V@"))
    for key in document:
        if key != "results":
            edited = dict(document, **{key: "@V@"})
            templates.append(json.dumps(edited).replace('"@V@"', "@V@"))
    return templates


def nccl_text_templates(log):
    """all_reduce_perf's table with @V@ (raw text, not JSON) in a size, count, type, time and busbw cell."""
    lines = log.splitlines()
    row = next(i for i, line in enumerate(lines) if line.strip().startswith("8 "))
    templates = []
    for column in range(9):
        words = lines[row].split()
        words[column] = "@V@"
        templates.append("\n".join(lines[:row] + ["  ".join(words)] + lines[row + 1:]) + "\n")
    return templates


# A value in a text cell is a token, not JSON: a row whose first cell is no number is chatter to
# skip, an unknown type or redop is allowed (docs/link.md), a time that is inf is skipped; only
# the outcome (exit 0 or 2, one line) is checked.
TEXT_READERS = {"nccl_tests_text"}


def text_cases(log):
    """Whole nccl-tests logs with long lines, whitespace-only lines and long tokens put in."""
    lines = log.splitlines()
    header = next(i for i, line in enumerate(lines) if "size" in line and "count" in line)
    cases = {}
    for kind, char in WHITESPACE.items():
        cases[f"a line of only {kind} among the rows"] = lines[:header + 3] + [char * 20] + lines[header + 3:]
        cases[f"every row padded with {kind}"] = [char + line + char for line in lines]
    cases["a 100,000-character comment line"] = lines[:2] + ["#" + "c" * LONG] + lines[2:]
    cases["a 100,000-character token in a row"] = lines[:header + 3] + ["8 " + "9" * LONG] + lines[header + 3:]
    cases["a 100,000-character line of spaces"] = lines[:header + 3] + [" " * LONG] + lines[header + 3:]
    cases["a rank line with a 100,000-character host"] = [
        line.replace("node-a01", "h" * LONG) if line.startswith("#  Rank  0") else line for line in lines]
    cases["10,000 rank lines"] = lines[:5] + ["#  Rank %d Group  0 Pid  1 on   n device  0 [0] GPU" % i
                                              for i in range(10_000)] + lines[13:]
    return {name: "\n".join(body) + "\n" for name, body in cases.items()}


def run(syncplan, command, file_path, out_path, text, env):
    file_path.parent.mkdir(parents=True, exist_ok=True)
    file_path.write_bytes(text.encode("utf-8", "surrogatepass"))
    if out_path.exists():
        out_path.unlink()
    argv = [syncplan] + [str(file_path) if word == "FILE" else str(out_path) if word == "OUT" else word
                         for word in command]
    if "datadir" in str(file_path):
        env = dict(env, SYNCPLAN_DATA_DIR=str(file_path.parent))
    try:
        done = subprocess.run(argv, capture_output=True, timeout=60, env=env)
    except subprocess.TimeoutExpired:
        return "hang (over 60 s)"
    err = done.stderr.decode("utf-8", "replace")
    if done.returncode == 0:
        return None if out_path.exists() else "exit 0 without an output file"
    if done.returncode != 2:
        return f"exit {done.returncode}: {err[-400:]!r}"
    lines = err.rstrip("\n").split("\n")
    if len(lines) != 1 or not lines[0].strip():
        return f"exit 2 with {len(lines)} lines on stderr: {err[:400]!r}"
    if out_path.exists():
        return "exit 2 but the output was written"
    return 2


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--syncplan", required=True)
    parser.add_argument("--cli-data", required=True, type=pathlib.Path)
    parser.add_argument("--repo-data", required=True, type=pathlib.Path)
    parser.add_argument("--work", required=True, type=pathlib.Path)
    parser.add_argument("reader")
    args = parser.parse_args()
    table = readers(args.cli_data.resolve(), args.repo_data.resolve())
    if args.reader not in table:
        print(f"edge_inputs.py: unknown reader '{args.reader}' (known: {', '.join(table)})", file=sys.stderr)
        return 2
    command, file_name, templates = table[args.reader]
    work = args.work / args.reader
    work.mkdir(parents=True, exist_ok=True)
    file_path, out_path = work / file_name, work / "out.json"
    env = dict(os.environ, OMP_NUM_THREADS="1")

    cases = []  # (description, text, refused required)
    for t, template in enumerate(templates):
        for name, (value, refused) in VALUES.items():
            cases.append((f"template {t}, {name}", template.replace("@V@", value),
                          refused and args.reader not in TEXT_READERS))
    if args.reader == "nccl_tests_text":
        cases += [(name, text, False) for name, text in text_cases(templates[0].replace("@V@", "8")).items()]
    if args.reader == "compare_log":
        valid = (args.cli_data.parent.parent / "runtime" / "data" / "compare" / "log_2ranks.jsonl").read_text()
        cases += [(name, text, False) for name, text in log_cases(valid).items()]
    cases += [(f"whole file: {name}", text, True) for name, text in FILES.items()]

    failures, counts = [], {0: 0, 2: 0}
    for description, text, refused in cases:
        outcome = run(args.syncplan, command, file_path, out_path, text, env)
        if outcome is None or outcome == 2:
            code = 0 if outcome is None else 2
            counts[code] += 1
            if refused and code == 0:
                failures.append(f"{description}: accepted (exit 0), must be refused")
        else:
            failures.append(f"{description}: {outcome}")
    print(f"edge inputs of {args.reader}: {len(cases)} cases, {counts[2]} refused with one line, "
          f"{counts[0]} accepted, {len(failures)} failures")
    for failure in failures:
        print("  FAIL " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
