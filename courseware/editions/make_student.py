"""Generate the student versions of the notebooks: nbgrader's release.

``make student`` runs nbgrader's ``generate_assignment`` on every notebook (in a temporary
course directory, with the repository's ``nbgrader_config.py``) and copies the released
notebooks to ``student/``: solutions replaced by stubs (``raise NotImplementedError()`` /
"YOUR ANSWER HERE"), hidden tests and mark schemes removed, outputs, widget state and
timestamps cleared, graded cells locked and checksummed.

``student_version(nb)`` computes the same notebook in memory (``courseware/editions/nbgrader_course.py``'s
``release``; the round-trip test checks they agree). ``clear_solutions`` (solutions, hidden
tests and mark schemes removed, outputs kept) is used by ``courseware/editions/build_decks.py`` for the
student slide decks and hand-outs.

    python -m courseware student notebooks student      # every notebook
    python -m courseware student notebooks/03_additive_attention.ipynb student
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import nbformat
from nbgrader.preprocessors import ClearHiddenTests, ClearMarkScheme, ClearSolutions
from traitlets.config import Config

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from courseware.editions.nbgrader_course import RELEASE_CONFIG, build_course, release  # noqa: E402
from courseware.authoring.tag_exercises import unwrap_details  # noqa: E402

# The lines nbgrader looks for (a line containing one of these opens or closes a region).
SOLUTION_DELIMITERS = (
    ClearSolutions.begin_solution_delimeter.default_value,
    ClearSolutions.end_solution_delimeter.default_value,
    ClearMarkScheme.begin_mark_scheme_delimeter.default_value,
    ClearMarkScheme.end_mark_scheme_delimeter.default_value,
    ClearHiddenTests.begin_test_delimeter.default_value,
    ClearHiddenTests.end_test_delimeter.default_value,
)


def clear_solutions(nb):
    """Return a copy of ``nb`` with solutions stubbed out, hidden tests and mark schemes removed (outputs kept)."""
    nb = nbformat.from_dict(nb)
    for cell in nb.cells:  # the closed <details> around an open question's answer (courseware/authoring/tag_exercises.py)
        if cell.cell_type == "markdown" and cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = unwrap_details(cell.source)
    resources = {}
    for pp in (ClearSolutions, ClearHiddenTests, ClearMarkScheme):
        nb, resources = pp(config=Config(RELEASE_CONFIG)).preprocess(nb, resources)
    return nb


def student_version(nb):
    """Return nbgrader's release of ``nb`` (see the module docstring)."""
    return release(nb)


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
    with tempfile.TemporaryDirectory() as course:
        build_course(Path(course), [p.resolve() for p in paths])
        for p in paths:
            shutil.copyfile(Path(course) / "release" / p.stem / p.name, out / p.name)
            print(f"wrote {out / p.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
