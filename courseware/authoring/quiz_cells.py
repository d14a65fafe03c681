"""Write a notebook's "Check yourself" cells from its quiz, ``courseware/quizzes/NN.json`` (``courseware.quiz``).

Each part of the quiz becomes one code cell at the end of the ``##`` section the part names (after the
section's last cell that is not a speaker note), calling ``courseware.quiz.check_yourself("NN", part)``. Running it
again first removes the notebook's quiz cells, so it can be re-applied after editing the JSON or the notebook.
The cells' minutes count by ``courseware/measure/section_minutes.py``'s rule for a quiz (per question).

    python -m courseware quiz-cells 04 06          # what would change
    python -m courseware quiz-cells --write 04 06  # write the cells (then execute the notebook and run
                                                         # python -m courseware section-minutes --write)
    python -m courseware quiz-cells --outputs 04   # after editing only the quiz (its JSON, courseware.quiz):
                                                         # the quiz cells' outputs made again, in place

``--outputs`` runs ``check_yourself`` for each quiz cell in a fresh IPython shell and stores what it displays
as the cell's outputs, the execution count kept: the same outputs executing the notebook gives that cell,
since a quiz cell reads only its JSON (no variable of the notebook).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from courseware.quiz import parts  # noqa: E402
from courseware.sections import exercises_start  # noqa: E402

FIRST_LINE = "# Check yourself: click an answer to read why it is right or wrong"


def quiz_source(notebook: str, part: int) -> str:
    return f'{FIRST_LINE}\nfrom courseware.quiz import check_yourself\ncheck_yourself("{notebook}", {part})'


def is_quiz_cell(cell) -> bool:
    return cell.cell_type == "code" and cell.source.startswith("# Check yourself:")


def _notes(cell) -> bool:
    return cell.metadata.get("slideshow", {}).get("slide_type") == "notes"


def notebook_path(number: str) -> Path:
    found = sorted((ROOT / "notebooks").glob(f"{number}_*.ipynb"))
    if len(found) != 1:
        raise SystemExit(f"no single notebook numbered {number} in notebooks/")
    return found[0]


def with_quiz(nb, number: str):
    """The notebook with its quiz cells (re)written; raises if a part names no section of the main line."""
    nb.cells = [c for c in nb.cells if not is_quiz_cell(c)]
    end = exercises_start(nb.cells)
    end = len(nb.cells) if end is None else end
    headings = [(i, line[3:].strip()) for i, c in enumerate(nb.cells[:end]) if c.cell_type == "markdown" and not _notes(c)
                for line in [next((ln for ln in c.source.splitlines() if ln.startswith("## ")), "")] if line]
    inserts = []
    for k, part in enumerate(parts(number), start=1):
        hits = [n for n, (i, title) in enumerate(headings) if title.startswith(part["section"])]
        if len(hits) != 1:
            raise ValueError(f"{number} part {k}: section {part['section']!r} matches {len(hits)} headings of the "
                             f"main line: {[t for _, t in headings]}")
        n = hits[0]
        start, stop = headings[n][0], headings[n + 1][0] if n + 1 < len(headings) else end
        last = max(i for i in range(start, stop) if not _notes(nb.cells[i]))
        inserts.append((last + 1, k))
    for at, k in sorted(inserts, reverse=True):
        cell = nbformat.v4.new_code_cell(quiz_source(number, k))
        cell.metadata["tags"] = ["quiz"]
        cell.metadata["slideshow"] = {"slide_type": "subslide"}   # a page of its own in the decks
        nb.cells.insert(at, cell)
    return nb


def quiz_outputs(number: str, part: int) -> list:
    """What ``check_yourself(number, part)`` displays, as notebook outputs."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from courseware.quiz import check_yourself

    InteractiveShell.instance()
    with capture_output() as captured:
        check_yourself(number, part)
    return [nbformat.v4.new_output("display_data", data=dict(o.data), metadata=dict(o.metadata or {}))
            for o in captured.outputs]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--outputs", action="store_true", help="make the quiz cells' outputs again, in place")
    ap.add_argument("notebooks", nargs="+", help="notebook numbers, e.g. 04")
    args = ap.parse_args(argv)
    for number in args.notebooks:
        path = notebook_path(number)
        nb = nbformat.read(path, as_version=4)
        before = [(c.source, dict(c.metadata)) for c in nb.cells]
        old = {c.source: c for c in nb.cells if is_quiz_cell(c)}
        nb = with_quiz(nb, number)
        for i, c in enumerate(nb.cells):   # a cell that did not change keeps its id and outputs
            if is_quiz_cell(c) and c.source in old:
                old[c.source].metadata.update(c.metadata)
                nb.cells[i] = old[c.source]
        changed = [(c.source, c.metadata) for c in nb.cells] != before
        where = [i for i, c in enumerate(nb.cells) if is_quiz_cell(c)]
        print(f"{path.name}: {len(where)} quiz cells at {where}" + (" (changed)" if changed else " (unchanged)"))
        if args.write and changed:
            nbformat.write(nb, path)
        if args.outputs:
            nb = nbformat.read(path, as_version=4)
            for c in nb.cells:
                call = re.search(r'check_yourself\("(\d\d)", (\d+)\)', c.source) if is_quiz_cell(c) else None
                if call and c.get("execution_count"):
                    c.outputs = quiz_outputs(call.group(1), int(call.group(2)))
            nbformat.write(nb, path)
            print(f"{path.name}: quiz outputs made again")
    return 0


if __name__ == "__main__":
    sys.exit(main())
