"""Minutes a self-paced learner needs for each ``##`` section of a notebook, by a fixed rule, and the
short line ``*≈ N min on your own*`` that shows them under the section's heading.

Two kinds of minutes appear in a notebook, and each says which it is: this line is a self-paced reader's
time (reading the section and trying its code); a speaker note's ``**Lecture time:** N min`` is a
lecturer's time for presenting it (LECTURES.md adds those up per lecture).

The rule (an estimate, the same for every notebook) counts what a reader reads: prose at 150 words a minute
(technical text with equations), code at 20 lines a minute (the lines shown: non-blank, non-comment lines of a
code cell whose source is not folded away; a folded cell, ``source_hidden`` in JupyterLab, shows only its
outputs), printed output at 12 rows a minute (each non-blank line a cell prints, a table's rows included; stderr,
where progress bars and warnings go, is not read), 2 minutes for each figure, and for a "Check yourself" quiz
cell (``courseware.quiz``) 1 minute a question (read it and its options, choose, read the feedback), in place of
its code lines; rounded up, at least 1. Waiting for a cell to run is not included: each notebook's run time is
in the README. Speaker notes, the bootstrap cell, ``skip``-ped title cards and the solutions between nbgrader's
markers are not counted; the Exercises section carries its own estimates.

The rates were calibrated on two reviewers' estimates of the ten main lines (``CALIBRATION``, the section counts
of the notebooks they read, kept in ``tests/section_minutes_calibration.json``; ``--calibrate`` prints the
table in TESTING.md). Until issue 52 the rule read 8 logical lines of code a minute, counted no printed rows,
1 minute a figure and 20 s a quiz question: it undercounted code, tables and quizzes by 5-15 minutes a main line.

    python -m courseware section-minutes            # print the table
    python -m courseware section-minutes --write    # (re)write the lines in the notebooks
    python -m courseware section-minutes --check    # exit 1 if a line is missing or stale (tests do this)
    python -m courseware section-minutes --calibrate  # the rule against the reviewers' estimates
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
WORDS_PER_MIN, CODE_LINES_PER_MIN, OUTPUT_ROWS_PER_MIN, MIN_PER_FIGURE = 150, 20, 12, 2.0
MIN_PER_QUIZ_QUESTION = 1.0
CALIBRATION = ROOT / "tests" / "section_minutes_calibration.json"
QUIZ_CALL = re.compile(r'check_yourself\("(\d\d)", (\d+)\)')
SKIP_SECTIONS = {"exercises", "summary"}
LINE_RE = re.compile(r"^\*≈ \d+ min on your own\*$")
OLD_LINE_RE = re.compile(r"^\*≈ \d+ min\*$")     # the line before it said whose minutes they are: replaced
SOLUTION = re.compile(r"### BEGIN SOLUTION.*?### END SOLUTION", re.S)
STUDENT_ONLY = re.compile(r"<!-- student-only: .*? -->", re.S)   # not in the learner's edition


BOOTSTRAP = "# >>> course bootstrap"  # the cell that fetches the course on Colab (courseware/authoring/bootstrap_cell.py)


def _notes(cell) -> bool:
    return cell.metadata.get("slideshow", {}).get("slide_type") == "notes"


def sections(nb) -> list[tuple[int, str, list]]:
    """(index of the heading cell, title, cells) for every ``## `` section."""
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and not _notes(cell):
            heading = next((l for l in cell.source.splitlines() if l.startswith("## ")), None)
            if heading is not None:
                out.append((i, heading[3:].strip(), []))
        if out:
            out[-1][2].append(cell)
    return out


def shown_code_lines(cell) -> int:
    """The code lines a reader sees: non-blank, non-comment lines, none for a folded cell (``source_hidden``)."""
    if cell.metadata.get("jupyter", {}).get("source_hidden"):
        return 0
    src = STUDENT_ONLY.sub("", SOLUTION.sub("", cell.source))
    return sum(1 for l in src.splitlines() if l.strip() and not l.strip().startswith("#"))


def output_rows(cell) -> int:
    """Rows of printed output: non-blank stdout lines and an expression's plain-text value (not its HTML or a widget)."""
    rows = 0
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream" and o.get("name") == "stdout":
            rows += sum(1 for l in o.get("text", "").splitlines() if l.strip())
        elif o.get("output_type") == "execute_result" and "text/plain" in o.get("data", {}):
            rows += len(o["data"]["text/plain"].splitlines())
    return rows


def counts(cells) -> dict[str, int]:
    """What a reader reads in these cells: words of prose, code lines shown, printed rows, figures, quiz questions."""
    from courseware.quiz import questions

    c = dict(words=0, code=0, rows=0, figures=0, quiz=0)
    for cell in cells:
        if _notes(cell) or cell.source.startswith(BOOTSTRAP):
            continue
        src = STUDENT_ONLY.sub("", SOLUTION.sub("", cell.source))
        if cell.cell_type == "markdown":
            text = "\n".join(l for l in src.splitlines() if not (LINE_RE.match(l.strip()) or OLD_LINE_RE.match(l.strip())))
            c["words"] += len(re.findall(r"\w+", re.sub(r"\$[^$]*\$", " x ", text)))
        elif QUIZ_CALL.search(src):
            c["quiz"] += sum(len(questions(nb, int(part))) for nb, part in QUIZ_CALL.findall(src))
        else:
            c["code"] += shown_code_lines(cell)
            c["rows"] += output_rows(cell)
            c["figures"] += sum(1 for o in cell.get("outputs", []) if "image/png" in o.get("data", {}))
    return c


def minutes_of(c: dict[str, int]) -> int:
    """The rule applied to one section's :func:`counts`: rounded up, at least 1."""
    total = (c["words"] / WORDS_PER_MIN + c["code"] / CODE_LINES_PER_MIN + c["rows"] / OUTPUT_ROWS_PER_MIN
             + c["figures"] * MIN_PER_FIGURE + c["quiz"] * MIN_PER_QUIZ_QUESTION)
    return max(1, math.ceil(round(total, 9)))


def minutes(cells) -> int:
    return minutes_of(counts(cells))


def main_line_counts(nb) -> list[dict[str, int]]:
    """:func:`counts` of each ``##`` section before ``## Exercises`` (quiz cells included)."""
    from courseware.sections import exercises_start

    ex = exercises_start(nb.cells)
    ex = len(nb.cells) if ex is None else ex
    return [counts(cells) for i, title, cells in sections(nb) if i < ex]


def calibration() -> list[dict]:
    """The rule against the reviewers' estimates of each main line, quiz included (issue 52): one row a notebook
    with the estimate, the rule's minutes on the sections they read (recorded) and the old rule's minutes."""
    record = json.loads(CALIBRATION.read_text(encoding="utf-8"))
    return [{"notebook": k, "estimate": v["estimate"], "rule": sum(minutes_of(c) for c in v["sections"]),
             "old_rule": v["old_rule"]} for k, v in record["notebooks"].items()]


def expected(nb) -> dict[int, int]:
    """heading cell index -> minutes, for the sections that carry a line."""
    return {i: minutes(cells) for i, title, cells in sections(nb) if title.lower() not in SKIP_SECTIONS}


def shown(cell) -> int | None:
    for line in cell.source.splitlines():
        if LINE_RE.match(line.strip()):
            return int(re.search(r"\d+", line).group())
    return None


def write(nb) -> bool:
    changed = False
    for i, m in expected(nb).items():
        cell = nb.cells[i]
        lines = [l for l in cell.source.splitlines() if not (LINE_RE.match(l.strip()) or OLD_LINE_RE.match(l.strip()))]
        h = next(k for k, l in enumerate(lines) if l.startswith("## "))
        new = "\n".join(lines[: h + 1] + [f"*≈ {m} min on your own*"] + lines[h + 1:])
        if new != cell.source:
            cell.source, changed = new, True
    return changed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--calibrate", action="store_true")
    ap.add_argument("notebooks", nargs="*", type=Path)
    args = ap.parse_args(argv)
    if args.calibrate:
        rows = calibration()
        print("| notebook | reviewers' estimate | this rule | error | the old rule |\n|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['notebook']} | {r['estimate']} | {r['rule']} | {r['rule'] - r['estimate']:+d} | {r['old_rule']} |")
        errors = [r["rule"] - r["estimate"] for r in rows]
        print(f"\nmean error {sum(errors) / len(errors):+.1f} min, mean |error| "
              f"{sum(map(abs, errors)) / len(errors):.1f} min, largest {max(errors, key=abs):+d} min")
        return 0
    bad = 0
    for path in args.notebooks or NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        if args.write and write(nb):
            nbformat.write(nb, path)
        exp = expected(nb)
        appendix = next((i for i, title, _ in sections(nb) if title.lower().startswith("appendix:")), None)
        total = sum(m for i, m in exp.items() if appendix is None or i < appendix)
        for i, title, _ in sections(nb):
            if i in exp:
                got = shown(nb.cells[i])
                flag = "" if got == exp[i] else f"   <- shows {got}"
                bad += bool(flag)
                if not args.check or flag:
                    print(f"{path.name[:2]}  {exp[i]:>3} min  {title}{flag}")
        if not args.check:
            print(f"{path.name[:2]}  {total:>3} min  (the main line: all sections but Exercises, Summary and the appendix)\n")
    return 1 if args.check and bad else 0


if __name__ == "__main__":
    sys.exit(main())
