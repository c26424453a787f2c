#!/usr/bin/env python3
"""Checks that module dependencies point one way (SPEC section 1): core <- model, comm <- profiler,
simulator <- planner <- runtime <- tools. A source file in module M may include headers of M
itself and of modules on lower levels only; modules on one level (model and comm; profiler and
simulator) do not include each other. Prints every offending include as FILE:LINE and exits 1 when there is one."""
import pathlib
import re
import sys

LEVELS = {"core": 0, "model": 1, "comm": 1, "profiler": 2, "simulator": 2, "planner": 3,
          "gpu": 3, "runtime": 4, "report": 4, "tools": 5}
SOURCE_SUFFIXES = {".hpp", ".cpp", ".cu", ".cuh", ".h"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')


def offending_includes(root):
    """(file, line number, including module, included module) for each include against the order."""
    found = []
    for module, level in LEVELS.items():
        folder = root / module
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                match = INCLUDE.match(line)
                if not match or match.group(1) not in LEVELS:
                    continue
                target = match.group(1)
                if target != module and LEVELS[target] >= level:
                    found.append((path.relative_to(root), number, module, target))
    return found


def self_test():
    """The check must be able to fail: a tree with a downward, an upward and a same-level include."""
    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        root = pathlib.Path(folder)
        files = {"core/a.hpp": '#include "core/b.hpp"\n', "planner/p.cpp": '#include "simulator/s.hpp"\n',
                 "core/bad.cpp": '#include "planner/p.hpp"\n', "model/bad.hpp": '  #  include "comm/c.hpp"\n'}
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        found = sorted((str(path), module, target) for path, _, module, target in offending_includes(root))
        expected = [("core/bad.cpp", "core", "planner"), ("model/bad.hpp", "model", "comm")]
        if found != expected:
            print(f"check_layering self-test: found {found}, expected {expected}", file=sys.stderr)
            return 1
    print("layering self-test: the upward and the same-level include are found, the downward ones pass")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    if not (root / "core").is_dir():
        print(f"check_layering: {root} has no core/ folder (give the repository root)", file=sys.stderr)
        return 2
    found = offending_includes(root)
    for path, number, module, target in found:
        print(f"{path}:{number}: {module}/ (level {LEVELS[module]}) includes {target}/ (level {LEVELS[target]})")
    print(f"layering: {len(found)} include(s) against the module order" if found else "layering: every include points down")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
