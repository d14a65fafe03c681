"""Generate student versions of the notebooks with nbgrader's preprocessors:
solutions are replaced by stubs (``raise NotImplementedError()`` / "YOUR ANSWER
HERE"), mark schemes are removed, and outputs are cleared.

``clear_solutions`` (the same without clearing outputs) is also used by
``scripts/build_decks.py`` for the student slide decks and hand-outs.

    python scripts/make_student.py notebooks student      # every notebook
    python scripts/make_student.py notebooks/03_additive_attention.ipynb student
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbgrader.preprocessors import ClearMarkScheme, ClearOutput, ClearSolutions

# The lines nbgrader looks for (a line containing one of these opens or closes a region).
SOLUTION_DELIMITERS = (
    ClearSolutions.begin_solution_delimeter.default_value,
    ClearSolutions.end_solution_delimeter.default_value,
    ClearMarkScheme.begin_mark_scheme_delimeter.default_value,
    ClearMarkScheme.end_mark_scheme_delimeter.default_value,
)


def clear_solutions(nb):
    """Return a copy of ``nb`` with solutions stubbed out and mark schemes removed (outputs kept)."""
    nb = nbformat.from_dict(nb)
    resources = {}
    nb, resources = ClearSolutions().preprocess(nb, resources)
    nb, resources = ClearMarkScheme().preprocess(nb, resources)
    return nb


def student_version(nb):
    """Return a copy of ``nb`` with solutions stubbed out, mark schemes removed and outputs cleared."""
    nb = clear_solutions(nb)
    nb, _ = ClearOutput().preprocess(nb, {})
    return nb


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    src, out = Path(argv[0]), Path(argv[1])
    paths = sorted(src.glob("[0-9][0-9]_*.ipynb")) if src.is_dir() else [src]
    if not paths:
        print(f"no notebooks found at {src}")
        return 1
    out.mkdir(parents=True, exist_ok=True)
    for p in paths:
        nb = student_version(nbformat.read(p, as_version=4))
        nbformat.write(nb, out / p.name)
        print(f"wrote {out / p.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
