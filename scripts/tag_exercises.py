"""Write nbgrader metadata onto a notebook's exercise and check cells.

Conventions (CONTRIBUTING.md):
- a cell whose source contains ``### BEGIN SOLUTION`` is a solution cell
  (code: an exercise to implement; markdown: an open question's model answer);
- a code cell whose source starts with ``# CHECK`` is a check (autograded) cell.

Cells are numbered in order (``ex1``, ``ex1_check``, ``q1`` ...). Every other
cell's nbgrader metadata is removed. Usage::

    python scripts/tag_exercises.py notebooks/01_tokens_and_embeddings.ipynb [...]
    python scripts/tag_exercises.py --check notebooks/*.ipynb   # exit 1 if any would change
"""

from __future__ import annotations

import argparse
import copy
import sys

import nbformat

BEGIN = "### BEGIN SOLUTION"


def is_solution(cell) -> bool:
    return BEGIN in cell.source


def is_check(cell) -> bool:
    return cell.cell_type == "code" and cell.source.lstrip().startswith("# CHECK")


def tag(nb) -> None:
    n_ex = n_q = 0
    last_ex = None
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
        if is_solution(cell):
            if cell.cell_type == "code":
                n_ex += 1
                last_ex = f"ex{n_ex}"
                grade_id = last_ex
            else:
                n_q += 1
                grade_id = f"q{n_q}"
            meta = {"grade": False, "solution": True, "locked": False, "grade_id": grade_id}
            if cell.cell_type == "markdown":  # open questions are graded by hand
                meta.update(grade=True, points=1)
        elif is_check(cell):
            if last_ex is None:
                raise SystemExit(f"a '# CHECK' cell comes before any exercise cell:\n{cell.source[:200]}")
            meta = {"grade": True, "solution": False, "locked": True, "points": 1, "grade_id": f"{last_ex}_check"}
            last_ex = None
        else:
            continue
        meta["schema_version"] = 3
        cell.metadata["nbgrader"] = meta


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="+")
    ap.add_argument("--check", action="store_true", help="only report notebooks whose metadata is out of date")
    args = ap.parse_args(argv)
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
        print("nbgrader metadata out of date (run scripts/tag_exercises.py):", *stale, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
