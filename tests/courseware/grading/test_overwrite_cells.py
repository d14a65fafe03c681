"""Autograde does not report an untouched check cell as changed (issue 50; jupyter/nbgrader#1961).

nbgrader's gradebook keeps a check cell with its hidden tests, and their checksum; the release, and an
untouched submission, hold the cell without them, so nbgrader's ``OverwriteCells`` warned "Attribute
'checksum' ... has changed!" for every check cell with a hidden block. ``OverwriteReleasedCells`` restores
such a cell silently and still warns (and restores) when the visible part was edited.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

import nbformat
from nbgrader import utils

from notebook_utils import ROOT

sys.path.insert(0, str(ROOT))
from courseware.editions.nbgrader_course import OverwriteReleasedCells  # noqa: E402

SOURCE = "# CHECK · 2 points\nassert f(1) == 2, 'f(1)'\n### BEGIN HIDDEN TESTS\nassert f(2) == 3\n### END HIDDEN TESTS"
RELEASED = "# CHECK · 2 points\nassert f(1) == 2, 'f(1)'"


def _autograde(submitted: str):
    source = nbformat.v4.new_code_cell(SOURCE)
    source.metadata.nbgrader = {"grade": True, "solution": False, "locked": True, "grade_id": "ex1_check",
                                "points": 2, "schema_version": 3}
    stored = SimpleNamespace(name="ex1_check", source=SOURCE, locked=True, cell_type="code",
                             checksum=utils.compute_checksum(source))
    cell = nbformat.v4.new_code_cell(submitted)
    cell.metadata.nbgrader = dict(source.metadata.nbgrader)
    gradebook = SimpleNamespace(find_source_cell=lambda *a: stored,
                                find_graded_cell=lambda *a: SimpleNamespace(max_score=2))
    step = OverwriteReleasedCells()
    step.gradebook, step.notebook_id, step.assignment_id = gradebook, "nb", "a"
    warnings = []
    step.report_change = lambda name, attr, old, new: warnings.append((name, attr))
    cell, _ = step.preprocess_cell(cell, {}, 0)
    return cell, warnings


def test_an_untouched_check_cell_is_restored_without_a_warning():
    cell, warnings = _autograde(RELEASED)
    assert warnings == [] and cell.source == SOURCE


def test_an_edited_check_cell_is_still_reported_and_restored():
    cell, warnings = _autograde(RELEASED.replace("== 2", "== 2 or True"))
    assert warnings == [("ex1_check", "checksum")] and cell.source == SOURCE
