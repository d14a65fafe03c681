"""Each notebook's main line against its budget, and where its checks are: a table per notebook of the
main line's minutes (the ``##`` sections before ``## Exercises``, by the rule in
``courseware/measure/section_minutes.py``, without the "Check yourself" quiz cells, whose minutes and questions
are shown beside them), the appendix's minutes, and the ``assert`` statements of the
main line, the Exercises section (with the Summary and references) and the appendix.

    python -m courseware main-line          # the table
    python -m courseware main-line --json   # the same, as JSON
    python -m courseware main-line --write  # mark every appendix cell "skip" for RISE's live slideshow

A notebook's order: the main line, ``## Exercises``, ``## Summary`` (with ``### References``), then
``## Appendix: the measurements behind the claims``, which holds the controls, seed spreads,
bootstraps, provenance and timing studies behind the main line's claims. Autograde stops at the
appendix heading (``courseware.grading.hidden.exercise_cells``), the slide decks leave the appendix out, and the
student edition keeps it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from courseware.measure.section_minutes import MIN_PER_QUIZ_QUESTION, NOTEBOOKS, QUIZ_CALL, minutes, sections  # noqa: E402
from courseware.sections import APPENDIX_HEADING, appendix_start, exercises_start  # noqa: E402

BUDGET = 45   # minutes of reading for a notebook's main line
ASSERT = re.compile(r"^\s*assert\b", re.M)


def parts(nb) -> dict[str, list]:
    """The notebook's cells in its three parts: main line, exercises (to the appendix), appendix."""
    n = len(nb.cells)
    ex = exercises_start(nb.cells)
    ap = appendix_start(nb.cells)
    ex = n if ex is None else ex
    ap = n if ap is None else ap
    return {"main": nb.cells[:min(ex, ap)], "exercises": nb.cells[min(ex, ap):ap], "appendix": nb.cells[ap:]}


def asserts(cells) -> int:
    return sum(len(ASSERT.findall(c.source)) for c in cells if c.cell_type == "code")


def is_quiz(cell) -> bool:
    return cell.cell_type == "code" and bool(QUIZ_CALL.search(cell.source))


def main_line_minutes(nb, quiz: bool = False) -> int:
    """The main line's reading minutes; its "Check yourself" quiz cells (``courseware.quiz``) only with ``quiz=True``:
    the budget is for the lesson, the quiz's minutes are shown beside it (and in each section's line)."""
    ex = exercises_start(nb.cells)
    ex = len(nb.cells) if ex is None else ex
    return sum(minutes([c for c in cells if quiz or not is_quiz(c)]) for i, title, cells in sections(nb) if i < ex)


def quiz_questions(nb) -> int:
    from courseware.quiz import questions

    return sum(len(questions(n, int(k))) for c in parts(nb)["main"] if is_quiz(c) for n, k in QUIZ_CALL.findall(c.source))


def appendix_minutes(nb) -> int:
    ap = appendix_start(nb.cells)
    return 0 if ap is None else minutes(nb.cells[ap:])


def code_names(source: str) -> tuple[set[str], set[str]]:
    """(global names a cell binds, global names it reads): from the cell's symbol table, so a function's
    parameters and locals are not taken for the notebook's variables. IPython magics are dropped first."""
    import symtable

    from IPython.core.inputtransformer2 import TransformerManager

    try:
        top = symtable.symtable(TransformerManager().transform_cell(source), "<cell>", "exec")
    except SyntaxError:
        return set(), set()
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    read = {s.get_name() for s in top.get_symbols() if s.is_referenced()}
    stack = list(top.get_children())
    while stack:
        table = stack.pop()
        stack.extend(table.get_children())
        read |= {s.get_name() for s in table.get_symbols() if s.is_referenced() and s.is_global()}
    return bound, read - bound


def appendix_names_used_before(nb) -> list[tuple[int, str]]:
    """(cell index, name) for each cell before the appendix that reads a name which only the appendix
    binds: the main line and the exercises must not depend on the appendix."""
    p = parts(nb)
    before = p["main"] + p["exercises"]
    bound_before = set().union(*(code_names(c.source)[0] for c in before if c.cell_type == "code"))
    only_appendix = set().union(*(code_names(c.source)[0] for c in p["appendix"] if c.cell_type == "code")) - bound_before
    out = []
    for i, c in enumerate(before):
        if c.cell_type == "code":
            out += [(i, name) for name in sorted(code_names(c.source)[1] & only_appendix)]
    return out


def mark_appendix_skipped(nb) -> bool:
    """Every appendix cell ``skip`` in the slideshow metadata (speaker notes stay ``notes``, which every
    edition recognises them by), so RISE's live slideshow leaves the appendix out as the built decks do.
    True if anything changed."""
    start = appendix_start(nb.cells)
    changed = False
    for cell in nb.cells[len(nb.cells) if start is None else start:]:
        if cell.metadata.get("slideshow", {}).get("slide_type") not in ("skip", "notes"):
            cell.metadata["slideshow"] = {"slide_type": "skip"}
            changed = True
    return changed


def row(path: Path) -> dict:
    nb = nbformat.read(path, as_version=4)
    p = parts(nb)
    q = quiz_questions(nb)
    return {"notebook": path.name[:2], "main_minutes": main_line_minutes(nb), "appendix_minutes": appendix_minutes(nb),
            "quiz_questions": q, "quiz_minutes": round(q * MIN_PER_QUIZ_QUESTION, 1),
            "has_appendix": appendix_start(nb.cells) is not None,
            "asserts": {k: asserts(v) for k, v in p.items()}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("notebooks", nargs="*", type=Path)
    args = ap.parse_args(argv)
    paths = args.notebooks or NOTEBOOKS
    if args.write:
        for path in paths:
            nb = nbformat.read(path, as_version=4)
            if mark_appendix_skipped(nb):
                nbformat.write(nb, path)
                print(f"{path.name}: appendix cells marked skip")
    rows = [row(p) for p in paths]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'nb':<3} {'main min':>8} {'quiz':>10} {'appendix min':>12}  {'asserts: main':>13} {'exercises':>9} {'appendix':>8} {'total':>5}")
    for r in rows:
        a = r["asserts"]
        flag = "" if r["main_minutes"] <= BUDGET else f"   over the {BUDGET}-minute budget"
        quiz = f"+{r['quiz_minutes']:.1f} ({r['quiz_questions']}q)" if r["quiz_questions"] else "-"
        print(f"{r['notebook']:<3} {r['main_minutes']:>8} {quiz:>10} {r['appendix_minutes'] if r['has_appendix'] else '-':>12}  "
              f"{a['main']:>13} {a['exercises']:>9} {a['appendix']:>8} {sum(a.values()):>5}{flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
