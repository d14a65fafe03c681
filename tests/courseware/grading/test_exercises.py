"""The student version of every notebook (solutions replaced by nbgrader's stubs)
must make every check cell fail, while its setup and exercise cells still run.
(nbval runs the solution versions, where the same checks must pass.)"""

from __future__ import annotations

import sys

import nbformat
import pytest
from nbclient import NotebookClient

from notebook_utils import KERNEL, NOTEBOOKS, ROOT, heading_index, is_check, read

sys.path.insert(0, str(ROOT))
from courseware.editions.make_student import student_version  # noqa: E402


def exercise_section(nb):
    start, end = heading_index(nb, "Exercises"), heading_index(nb, "Summary")
    section = nbformat.v4.new_notebook(metadata=nb.metadata)
    section.cells = nb.cells[start:end]
    return section


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_checks_fail_on_the_student_stub(path):
    student = student_version(read(path))
    assert "### BEGIN SOLUTION" not in "".join(c.source for c in student.cells), "solutions left in the student version"
    answers = [c.source for c in student.cells if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("solution")]
    assert not [a for a in answers if "<details" in a or "MARK SCHEME" in a], \
        "a released answer cell must be plain markdown (no <details> wrapper, no mark scheme)"
    section = exercise_section(student)
    client = NotebookClient(section, kernel_name=KERNEL, timeout=600, allow_errors=True,
                            resources={"metadata": {"path": str(ROOT / "notebooks")}})
    client.execute()
    checks = 0
    for cell in section.cells:
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if is_check(cell):
            checks += 1
            assert errors, f"this check passes on the stub, so it cannot tell a solution from none:\n{cell.source[:300]}"
        elif "raise NotImplementedError" not in cell.source:
            assert not errors, f"setup cell of the exercise section fails on its own:\n{cell.source[:300]}\n{errors}"
    assert checks > 0


TRAINS = (".backward(", "optim.")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_an_exercise_section_that_trains_sets_the_threads_first(path):
    """nbgrader's autograde runs only the Exercises section (courseware/editions/nbgrader_course.py), so the
    notebook's set-up cell, which calls ``set_cpu_threads()``, never runs there. Without it PyTorch
    takes both cores of a 2-core machine, and beside another process a training step waits on a
    descheduled thread: 06's solution took 307 s to autograde instead of 17 s."""
    code = [c.source for c in exercise_section(read(path)).cells if c.cell_type == "code"]
    trains = [i for i, src in enumerate(code) if any(k in src for k in TRAINS)]
    if not trains:
        return
    sets = [i for i, src in enumerate(code) if "set_cpu_threads()" in src]
    assert sets and sets[0] <= trains[0], (
        f"the Exercises section trains (code cell {trains[0]} of the section) before it calls set_cpu_threads()")
