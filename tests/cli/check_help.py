#!/usr/bin/env python3
"""Checks that `syncplan COMMAND --help` names a default and a unit for its options (SPEC section
2: "Every subcommand has --help that names units and defaults").

For every option that takes a value (CLI11 prints its type: INT, FLOAT, TEXT, ...), the help text
must say its default ("default", or that it is required, or only with another option), unless it
names a file to read or write (whose default is: none). An INT or FLOAT option must also name its
unit or its range (s, Gbit/s, MiB, a fraction, 1..10000, ...). Exit 1 listing every option that
does not, 0 when all do.

usage: check_help.py SYNCPLAN "COMMAND WORDS" ...   ("" for the top level)"""
import re
import subprocess
import sys

DEFAULT = re.compile(r"default|REQUIRED|required|Needs:|Excludes:|only with|with --|instead of", re.I)
FILE = re.compile(r"\bwrite\b|\b(file|folder|DIR)\b")
UNIT = re.compile(r"\b(s|seconds?|us|ms|Gbit/s|GB/s|MiB|MB|bytes?|fraction|%|x|dimensionless|iterations?|steps?|"
                  r"workers?|ranks?|layers?|tokens?|samples?|nodes|threads|repeats|streams|count|number|rounds|"
                  r"[0-9e.+-]+\.\.[0-9e.+-]+)\b")


def options(text):
    """(head, description) of each option in a CLI11 help text; wrapped lines joined."""
    entries = []
    for line in text.splitlines():
        match = re.match(r"^  (-\S.*?)(\s{2,}(.*))?$", line)
        if match:
            entries.append([match.group(1), match.group(3) or ""])
        elif entries and line.startswith("      "):
            entries[-1][1] += " " + line.strip()
    return entries


def problems(syncplan, words):
    result = subprocess.run([syncplan, *words, "--help"], capture_output=True, text=True)
    if result.returncode != 0:
        return [f"{' '.join(words)} --help: exit {result.returncode}: {result.stderr.strip()}"]
    found = []
    for head, description in options(result.stdout):
        name = head.split()[0].rstrip(",")
        if name.startswith("-h,--help") or not re.search(r"\b(INT|UINT|FLOAT|TEXT|NUMBER)\b", head):
            continue  # flags take no value: off unless given
        where = f"syncplan {' '.join(words)} {name}".replace("  ", " ")
        if not DEFAULT.search(description + " " + head) and not FILE.search(description):
            found.append(f"{where}: no default named: {description[:90]}")
        if re.search(r"\b(FLOAT|INT|UINT)\b", head) and not UNIT.search(description):
            found.append(f"{where}: no unit or range named: {description[:90]}")
    return found


def main():
    syncplan, commands = sys.argv[1], sys.argv[2:]
    found = [line for command in commands for line in problems(syncplan, command.split())]
    print("\n".join(found) if found else f"ok: {len(commands)} help texts name their defaults and units")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
