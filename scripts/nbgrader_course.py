"""The course's notebooks as an nbgrader course: preprocessors, the release, and a course directory.

Three pieces, used by ``nbgrader_config.py``, ``scripts/make_student.py`` and the round-trip test:

- ``ClearReleaseMetadata``: a released notebook carries no ipywidgets state, no execution
  timestamps and no collapsed (``source_hidden``) cells;
- ``RELEASE_PREPROCESSORS``: nbgrader's ``generate_assignment`` pipeline with it added;
  ``release(nb)`` applies the same pipeline in memory (without the gradebook);
- ``ExerciseSectionExecute``: nbgrader's ``Execute`` that runs only the ``## Exercises`` section,
  which is self-contained by the course's convention (CONTRIBUTING.md), so autograding does not
  re-run a notebook's demonstration training for every student.

Build a course directory (source/ and release/, one assignment per notebook, named after it)::

    python scripts/nbgrader_course.py course                 # every notebook
    python scripts/nbgrader_course.py course --notebooks 04 06
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

import nbformat
from nbgrader.preprocessors import (
    CheckCellMetadata,
    ClearHiddenTests,
    ClearMarkScheme,
    ClearOutput,
    ClearSolutions,
    ComputeChecksums,
    Execute,
    IncludeHeaderFooter,
    InstantiateTests,
    LockCells,
    NbGraderPreprocessor,
    SaveCells,
)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from tag_exercises import unwrap_details  # noqa: E402
EXERCISES_HEADING = "## exercises"


def exercise_section_start(nb) -> int | None:
    """Index of the markdown cell that opens the ``## Exercises`` section (None if there is none)."""
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and any(
            line.strip().lower() == EXERCISES_HEADING for line in cell.source.splitlines()
        ):
            return i
    return None


class ClearReleaseMetadata(NbGraderPreprocessor):
    """Drop what a released notebook must not carry: widget state, timestamps, collapsed cells,
    outputs left on non-code cells (invalid nbformat, which nbgrader warns about), and the closed
    ``<details>`` block that hides an open question's model answer in the course notebooks
    (``scripts/tag_exercises.py``): the student's answer cell is plain markdown."""

    def preprocess(self, nb, resources):
        nb.metadata.pop("widgets", None)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, cell_index):
        cell.metadata.pop("execution", None)
        if cell.cell_type == "markdown" and cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = unwrap_details(cell.source)
        if cell.cell_type != "code":  # (a markdown cell that once was a code cell can keep these)
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
        jupyter = cell.metadata.get("jupyter")
        if jupyter is not None:
            jupyter.pop("source_hidden", None)
            jupyter.pop("outputs_hidden", None)
            if not jupyter:
                del cell.metadata["jupyter"]
        return cell, resources


class ExerciseSectionExecute(Execute):
    """Execute only the ``## Exercises`` section (every cell, when a notebook has none).

    The cells before it keep the (cleared) state they arrived in. A section that needs
    something from earlier in the notebook fails here, which is what the course's
    convention (the section is self-contained) rules out.
    """

    def preprocess(self, nb, resources, km=None):
        start = exercise_section_start(nb)
        if not start:
            return super().preprocess(nb, resources, km=km)
        head, nb.cells = nb.cells[:start], nb.cells[start:]
        try:
            nb, resources = super().preprocess(nb, resources, km=km)
        finally:
            nb.cells = head + nb.cells
        return nb, resources


# nbgrader's GenerateAssignment.preprocessors, with ClearReleaseMetadata after ClearOutput.
RELEASE_PREPROCESSORS = [
    IncludeHeaderFooter,
    InstantiateTests,
    LockCells,
    ClearSolutions,
    ClearOutput,
    ClearReleaseMetadata,
    CheckCellMetadata,
    ComputeChecksums,
    SaveCells,
    ClearHiddenTests,
    ClearMarkScheme,
    ComputeChecksums,
    CheckCellMetadata,
]


# Open questions keep their mark scheme in the (manually graded) answer cell, next to the model
# answer, rather than in a separate nbgrader "task" cell; nbgrader removes it from the release either way.
RELEASE_CONFIG = {"ClearMarkScheme": {"enforce_metadata": False}}


def release(nb):
    """The notebook nbgrader's ``generate_assignment`` releases, computed in memory.

    The same preprocessors in the same order, less ``SaveCells`` (it writes the gradebook) and
    ``IncludeHeaderFooter`` (no header is configured); the round-trip test checks the two agree.
    """
    from traitlets.config import Config

    nb = nbformat.from_dict(nb)
    resources = {}
    config = Config(RELEASE_CONFIG)
    for pp in RELEASE_PREPROCESSORS:
        if pp in (SaveCells, IncludeHeaderFooter):
            continue
        nb, resources = pp(config=config).preprocess(nb, resources)
    return nb


def select(notebooks: list[str] | None) -> list[Path]:
    """The course's notebooks, or those named by number (``04``), stem or path."""
    every = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if not notebooks:
        return every
    chosen = []
    for name in notebooks:
        hits = [p for p in every if p.name.startswith(name) or p.stem == Path(name).stem]
        if not hits:
            raise SystemExit(f"no notebook matches {name!r} (give a number such as 04, a name or a path)")
        chosen.extend(h for h in hits if h not in chosen)
    return chosen


def use_this_environment() -> None:
    """Put this interpreter's bin/ first on PATH: nbgrader runs ``alembic`` (gradebook migrations)
    as a program, and ``make`` does not activate the virtual environment."""
    bin_dir = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")


def course_config(root: Path):
    """The repository's nbgrader_config.py, pointed at the course directory ``root``."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    config.CourseDirectory.root = str(Path(root).resolve())
    return config


def build_course(root: Path, notebooks: list[Path], log_level: str = "WARNING"):
    """Write ``root/source/<name>/<name>.ipynb`` for each notebook and release it with nbgrader."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    use_this_environment()
    root = Path(root)
    config = course_config(root)
    config.Application.log_level = log_level
    for p in notebooks:
        dest = root / "source" / p.stem
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, dest / p.name)
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    for p in notebooks:
        result = api.generate_assignment(p.stem, force=True, create=True)
        if not result["success"]:
            raise RuntimeError(f"nbgrader generate_assignment {p.stem} failed:\n{result.get('error', '')}\n{result.get('log', '')}")
    return api


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Build an nbgrader course directory (source -> release) from the notebooks.")
    ap.add_argument("root", type=Path, help="the course directory to write (e.g. course)")
    ap.add_argument("--notebooks", nargs="*", help="numbers, names or paths (default: every notebook)")
    args = ap.parse_args(argv)
    paths = select(args.notebooks)
    build_course(args.root, paths)
    for p in paths:
        print(f"released {args.root / 'release' / p.stem / p.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
