"""Minutes a self-paced learner needs for each ``##`` section of a notebook, by a fixed rule, and the
short line ``*≈ N min on your own*`` that shows them under the section's heading.

Two kinds of minutes appear in a notebook, and each says which it is: this line is a self-paced reader's
time (reading the section and trying its code); a speaker note's ``**Lecture time:** N min`` is a
lecturer's time for presenting it (LECTURES.md adds those up per lecture).

The rule (an estimate, the same for every notebook): prose at 150 words a minute (technical text
with equations), code at 8 lines a minute (read it, predict what it prints, check; a line is a logical
line, a statement or a compound statement's header, so a statement wrapped to the page's width over several
lines counts once: scripts/authoring/code_width.py), and 1 minute
for each figure; a "Check yourself" quiz cell (``utils.quiz``) 20 seconds a question (read it, click, read
the feedback), in place of its code lines; rounded up, at least 1. Waiting for a cell to run is not included: each
notebook's run time is in the README. Speaker notes, the bootstrap cell, ``skip``-ped title cards and the solutions
between nbgrader's markers are not counted; the Exercises section carries its own estimates.

    python scripts/measure/section_minutes.py            # print the table
    python scripts/measure/section_minutes.py --write    # (re)write the lines in the notebooks
    python scripts/measure/section_minutes.py --check    # exit 1 if a line is missing or stale (tests do this)
"""

from __future__ import annotations

import argparse
import io
import math
import re
import sys
import tokenize
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
WORDS_PER_MIN, CODE_LINES_PER_MIN, MIN_PER_FIGURE = 150, 8, 1.0
MIN_PER_QUIZ_QUESTION = 1 / 3
QUIZ_CALL = re.compile(r'check_yourself\("(\d\d)", (\d+)\)')
SKIP_SECTIONS = {"exercises", "summary"}
LINE_RE = re.compile(r"^\*≈ \d+ min on your own\*$")
OLD_LINE_RE = re.compile(r"^\*≈ \d+ min\*$")     # the line before it said whose minutes they are: replaced
SOLUTION = re.compile(r"### BEGIN SOLUTION.*?### END SOLUTION", re.S)
STUDENT_ONLY = re.compile(r"<!-- student-only: .*? -->", re.S)   # not in the learner's edition


BOOTSTRAP = "# >>> course bootstrap"  # the cell that fetches the course on Colab (scripts/authoring/bootstrap_cell.py)


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


def code_lines(source: str) -> int:
    """Logical lines of code (Python's NEWLINE tokens; IPython's ``%``/``!`` lines count one each), comments and
    blank lines left out; where the source does not tokenize, its non-blank, non-comment lines."""
    blanked = "\n".join(re.sub(r"^(\s*)[%!].*$", r"\1pass", line) for line in source.split("\n"))
    try:
        return sum(1 for t in tokenize.generate_tokens(io.StringIO(blanked).readline) if t.type == tokenize.NEWLINE)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return sum(1 for l in source.splitlines() if l.strip() and not l.strip().startswith("#"))


def minutes(cells) -> int:
    from utils.quiz import questions

    words = code = figures = quiz = 0
    for cell in cells:
        if _notes(cell) or cell.source.startswith(BOOTSTRAP):
            continue
        src = STUDENT_ONLY.sub("", SOLUTION.sub("", cell.source))
        if cell.cell_type == "markdown":
            text = "\n".join(l for l in src.splitlines() if not (LINE_RE.match(l.strip()) or OLD_LINE_RE.match(l.strip())))
            words += len(re.findall(r"\w+", re.sub(r"\$[^$]*\$", " x ", text)))
        elif QUIZ_CALL.search(src):
            quiz += sum(len(questions(nb, int(part))) for nb, part in QUIZ_CALL.findall(src))
        else:
            code += code_lines(src)
            figures += sum(1 for o in cell.get("outputs", []) if "image/png" in o.get("data", {}))
    total = words / WORDS_PER_MIN + code / CODE_LINES_PER_MIN + figures * MIN_PER_FIGURE + quiz * MIN_PER_QUIZ_QUESTION
    return max(1, math.ceil(round(total, 9)))


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
    ap.add_argument("notebooks", nargs="*", type=Path)
    args = ap.parse_args(argv)
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
