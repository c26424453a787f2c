#!/usr/bin/env python3
"""Checks the report's SVG files and HTML pages (docs/report.md): every SVG file, and every SVG
inlined in a page, parses as XML (xml.etree); a line plot has one series group per strategy in
each panel (--series N); a Gantt chart has as many compute blocks and all-reduces as given
(--gantt-blocks C,L), and its iterations last what `simulate -o RESULT.json` says, to 1e-9
(--result RESULT.json: an independent run of the period model); a page fetches nothing from a
network (no http(s) src/href, no script).
usage: check_pages.py [--series N] [--gantt-blocks C,L] [--result R.json] FILE.svg|FILE.html ..."""
import json
import re
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def svg_documents(path, text):
    """(name, SVG text) for an SVG file, or for each <svg>...</svg> inlined in an HTML page."""
    if path.endswith(".svg"):
        return [(path, text)]
    found = re.findall(r"<svg\b.*?</svg>", text, flags=re.S)
    return [(f"{path} (svg {i + 1})", svg) for i, svg in enumerate(found)]


def problems_of(path, series, gantt_blocks, result):
    problems = []
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except OSError as error:
        return [f"{path}: cannot read ({error})"]
    documents = svg_documents(path, text)
    if not documents:
        problems.append(f"{path}: no SVG in it")
    if path.endswith(".html"):
        for bad in re.findall(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//[^"' >]*""", text) + re.findall(r"<script", text):
            problems.append(f"{path}: would fetch or run something: {bad}")
    for name, svg in documents:
        try:
            root = ET.fromstring(svg)
        except ET.ParseError as error:
            problems.append(f"{name}: not well-formed XML: {error}")
            continue
        if root.tag != SVG + "svg":
            problems.append(f"{name}: root element {root.tag}, expected svg in the SVG namespace")
        kind = root.get("class")
        if kind == "line-plot" and series is not None:
            for panel in root.iter(SVG + "g"):
                if panel.get("class") != "panel":
                    continue
                names = [g.get("data-series") for g in panel.iter(SVG + "g") if g.get("class") == "series"]
                if len(names) != series or len(set(names)) != series:
                    problems.append(f"{name}: panel '{panel.get('data-title')}' has series {names}, expected {series} distinct")
        if kind == "gantt" and gantt_blocks is not None:
            kinds = [r.get("data-kind") for r in root.iter(SVG + "rect") if r.get("class") == "block"]
            compute = sum(1 for k in kinds if k != "sync")
            link = sum(1 for k in kinds if k == "sync")
            if (compute, link) != gantt_blocks:
                problems.append(f"{name}: {compute} compute blocks and {link} all-reduces, expected {gantt_blocks}")
            if result is not None:
                spans = [float(r.get("data-end-s")) - float(r.get("data-start-s"))
                         for r in root.iter(SVG + "rect") if r.get("class") == "period-iteration"]
                expected = result["iteration_s"]
                if len(spans) != len(expected) or any(abs(a - b) > 1e-9 for a, b in zip(spans, expected)):
                    problems.append(f"{name}: iterations {spans}, simulate says {expected}")
            for r in root.iter(SVG + "rect"):
                if r.get("class") == "block" and not float(r.get("data-start-s")) <= float(r.get("data-end-s")):
                    problems.append(f"{name}: block {r.get('data-label')} ends before it starts")
    return problems


def main(argv):
    series = gantt_blocks = result = None
    files = []
    i = 0
    while i < len(argv):
        if argv[i] == "--series":
            series = int(argv[i + 1])
            i += 2
        elif argv[i] == "--gantt-blocks":
            gantt_blocks = tuple(int(n) for n in argv[i + 1].split(","))
            i += 2
        elif argv[i] == "--result":
            with open(argv[i + 1], encoding="utf-8") as file:
                result = json.load(file)
            i += 2
        else:
            files.append(argv[i])
            i += 1
    if not files:
        print(__doc__)
        return 2
    problems = [p for path in files for p in problems_of(path, series, gantt_blocks, result)]
    for problem in problems:
        print("FAIL:", problem)
    if not problems:
        print(f"ok: {len(files)} file(s), every SVG well-formed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
