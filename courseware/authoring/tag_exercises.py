"""Write nbgrader metadata onto a notebook's exercise, check and mark-scheme cells.

Conventions (CONTRIBUTING.md):
- a cell whose source contains ``### BEGIN SOLUTION`` is a solution cell
  (code: an exercise to implement; markdown: an open question's model answer); it is
  collapsed (JupyterLab's ``jupyter.source_hidden``) so a learner sees the answer only on a click;
- a code cell whose source starts with ``# CHECK`` is a check (autograded) cell; its first line
  gives its points (``# CHECK · 2 points``, 1 when it names none); ``### BEGIN HIDDEN TESTS`` ...
  ``### END HIDDEN TESTS`` inside it are run by nbgrader's autograde but removed from the release;
- an open question's answer cell (markdown, with the model answer as its solution) is graded by
  hand: it holds a mark scheme between ``### BEGIN MARK SCHEME`` and ``### END MARK SCHEME``
  that names its points (``2 points``), removed from the release like the model answer. JupyterLab
  collapses only the *source* of a markdown cell, not its rendering, so the answer and mark scheme are
  also wrapped in a closed HTML ``<details>`` block (``DETAILS_OPEN`` ... ``DETAILS_CLOSE``): a learner
  sees one "Model answer" line and opens it on a click. The release unwraps it
  (``courseware/editions/nbgrader_course.py``), so a student's answer cell is plain markdown;
- a speaker-notes cell (``slideshow.slide_type == "notes"``) is the lecturer's: for the same reason its
  source is collapsed *and* wrapped in a closed ``<details>`` block (``NOTES_OPEN`` ... ``NOTES_CLOSE``),
  so a learner reading in JupyterLab, Colab or on GitHub sees one "Speaker notes" line, not the notes.
  The decks unwrap it (``courseware/editions/build_decks.py``: reveal.js shows the notes in its speaker view) and
  the student's edition drops the cell.

Grade ids follow the exercise headings (``**Exercise 3 — …`` or ``### Exercise 3 — …``): Exercise 3's
answer cell is ``ex3`` (a code answer or an open question's), its check cells ``ex3_check``,
``ex3_check2`` ..., so a gradebook line names the exercise the notebook shows. Every other cell's
nbgrader metadata is removed. ``--table`` prints the gradebook table of INSTRUCTORS.md. Usage::

    python -m courseware tag-exercises notebooks/01_tokens_and_embeddings.ipynb [...]
    python -m courseware tag-exercises --check notebooks/*.ipynb   # exit 1 if any would change
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from pathlib import Path

import nbformat

BEGIN = "### BEGIN SOLUTION"
MARK_SCHEME = "### BEGIN MARK SCHEME"
POINTS_RE = re.compile(r"(\d+)\s+points?\b")
DETAILS_OPEN = ("<details>\n<summary><b>Model answer and mark scheme</b> (click to open; write your own answer "
                "first)</summary>\n")
DETAILS_CLOSE = "\n</details>"


def wrap_details(source: str) -> str:
    """The answer cell's source inside a closed <details> block (idempotent)."""
    body = unwrap_details(source)
    return f"{DETAILS_OPEN}\n{body}\n{DETAILS_CLOSE}"


def unwrap_details(source: str) -> str:
    """The answer cell's source without the <details> block ``wrap_details`` put around it."""
    if source.startswith(DETAILS_OPEN) and source.endswith(DETAILS_CLOSE):
        source = source[len(DETAILS_OPEN):-len(DETAILS_CLOSE)]
    return source.strip("\n")


NOTES_OPEN = ("<details class=\"speaker-notes\">\n<summary><b>Speaker notes</b> (for a lecturer presenting "
              "this notebook as slides; a reader can skip them)</summary>\n")
NOTES_CLOSE = "\n</details>"


def is_speaker_notes(cell) -> bool:
    return cell.metadata.get("slideshow", {}).get("slide_type") == "notes"


def wrap_notes(source: str) -> str:
    """A speaker-notes cell's source inside a closed <details> block (idempotent)."""
    return f"{NOTES_OPEN}\n{unwrap_notes(source)}\n{NOTES_CLOSE}"


def unwrap_notes(source: str) -> str:
    """A speaker-notes cell's source without the <details> block ``wrap_notes`` put around it."""
    if source.startswith(NOTES_OPEN) and source.endswith(NOTES_CLOSE):
        source = source[len(NOTES_OPEN):-len(NOTES_CLOSE)]
    return source.strip("\n")


def is_solution(cell) -> bool:
    return BEGIN in cell.source


def is_check(cell) -> bool:
    return cell.cell_type == "code" and cell.source.lstrip().startswith("# CHECK")


def points(text: str, default: int | None = 1) -> int:
    m = POINTS_RE.search(text)
    if m is None:
        if default is None:
            raise SystemExit(f"a mark-scheme cell must say how many points it is worth ('N points'):\n{text[:200]}")
        return default
    return int(m.group(1))


def collapse(cell, hidden: bool) -> None:
    jupyter = cell.metadata.get("jupyter", {})
    if hidden:
        jupyter["source_hidden"] = True
    else:
        jupyter.pop("source_hidden", None)
    if jupyter:
        cell.metadata["jupyter"] = jupyter
    else:
        cell.metadata.pop("jupyter", None)


EXERCISE_RE = re.compile(r"(?m)^(?:\*\*|### )Exercise (\d+) —")


def tag(nb) -> None:
    number = None      # the exercise whose heading came last
    last_ex = None
    n_checks = 0
    used = set()
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
        if is_speaker_notes(cell):
            if cell.cell_type != "markdown":
                raise SystemExit(f"a speaker-notes cell must be markdown:\n{cell.source[:200]}")
            cell.source = wrap_notes(cell.source)
            collapse(cell, True)
            continue
        heading = EXERCISE_RE.search(cell.source) if cell.cell_type == "markdown" else None
        if heading:
            number = int(heading.group(1))
        if is_solution(cell):
            if number is None:
                raise SystemExit(f"an answer cell comes before any exercise heading (**Exercise N — …):\n{cell.source[:200]}")
            grade_id = f"ex{number}"
            if grade_id in used:
                raise SystemExit(f"Exercise {number} has two answer cells; put the answer in one cell:\n{cell.source[:200]}")
            used.add(grade_id)
            last_ex, n_checks = (grade_id, 0) if cell.cell_type == "code" else (last_ex, n_checks)
            meta = {"grade": False, "solution": True, "locked": False, "grade_id": grade_id}
            if cell.cell_type == "markdown":  # open questions are graded by hand, by their mark scheme
                if MARK_SCHEME not in cell.source:
                    raise SystemExit(f"an open question's answer cell needs a mark scheme ({MARK_SCHEME}):\n{cell.source[:200]}")
                meta.update(grade=True, points=points(cell.source.split(MARK_SCHEME, 1)[1], default=None))
                cell.source = wrap_details(cell.source)
            collapse(cell, True)
        elif is_check(cell):
            if last_ex is None or last_ex != f"ex{number}":
                raise SystemExit(f"a '# CHECK' cell must follow its exercise's code answer cell:\n{cell.source[:200]}")
            n_checks += 1
            grade_id = f"{last_ex}_check" + ("" if n_checks == 1 else str(n_checks))
            meta = {"grade": True, "solution": False, "locked": True,
                    "points": points(cell.source.splitlines()[0]), "grade_id": grade_id}
        else:
            continue
        meta["schema_version"] = 3
        cell.metadata["nbgrader"] = meta


def gradebook_table(paths) -> str:
    """INSTRUCTORS.md's table: per notebook and exercise, its heading, grade ids and points."""
    rows = ["| notebook | exercise | answer cell | check cells (points) |", "|---|---|---|---|"]
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        titles, cells = {}, {}
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                for m in re.finditer(r"(?m)^(?:\*\*|### )Exercise (\d+) — ([^*\n]+)", cell.source):
                    titles.setdefault(int(m.group(1)), m.group(2).strip())
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade_id"):
                n = int(re.match(r"ex(\d+)", meta["grade_id"]).group(1))
                cells.setdefault(n, []).append(meta)
        for n in sorted(cells):
            answer = next(m for m in cells[n] if m.get("solution"))
            checks = [f"`{m['grade_id']}` ({m['points']})" for m in cells[n] if m.get("grade") and not m.get("solution")]
            kind = f"by hand ({answer['points']})" if answer.get("grade") else ", ".join(checks)
            rows.append(f"| {Path(path).stem[:2]} | {n} — {titles.get(n, '')} | `{answer['grade_id']}` | {kind} |")
    return "\n".join(rows)


def total_points(nb) -> int:
    return sum(c.metadata.get("nbgrader", {}).get("points", 0) for c in nb.cells)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="+")
    ap.add_argument("--check", action="store_true", help="only report notebooks whose metadata is out of date")
    ap.add_argument("--table", action="store_true", help="print INSTRUCTORS.md's gradebook table and exit")
    args = ap.parse_args(argv)
    if args.table:
        print(gradebook_table(args.notebooks))
        return 0
    stale = []
    for path in args.notebooks:
        nb = nbformat.read(path, as_version=4)
        before = copy.deepcopy(nb)
        tag(nb)
        if nb != before:
            stale.append(path)
            if not args.check:
                nbformat.write(nb, path)
    if args.check and stale:
        print("nbgrader metadata out of date (run courseware/authoring/tag_exercises.py):", *stale, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
