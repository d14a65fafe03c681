"""Every ``##`` section (but Exercises and Summary) shows a self-paced learner's minutes under its
heading, computed by courseware/measure/section_minutes.py's rule, and the line is not stale."""

from __future__ import annotations

import sys

import nbformat
import pytest

from notebook_utils import NOTEBOOKS, ROOT, read

sys.path.insert(0, str(ROOT))
from courseware.measure import section_minutes  # noqa: E402


def test_the_rule():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("## A section\n" + "word " * 298),      # 2 min of prose, heading included
                nbformat.v4.new_code_cell("\n".join(f"x{i} = {i}" for i in range(16))),  # 2 min of code
                nbformat.v4.new_markdown_cell("## Exercises\nnot counted")]
    nb.cells[1].outputs = [nbformat.v4.new_output("display_data", data={"image/png": "", "text/plain": ""})]  # 1 figure
    assert section_minutes.expected(nb) == {0: 5}             # 2 + 0.8 + 2 = 4.8, rounded up
    nb.cells[1].outputs.append(nbformat.v4.new_output("stream", name="stdout", text="row\n" * 12))   # 12 rows: 1 min
    nb.cells[1].outputs.append(nbformat.v4.new_output("stream", name="stderr", text="progress\n" * 99))  # not read
    assert section_minutes.expected(nb) == {0: 6}
    nb.cells[1].metadata["jupyter"] = {"source_hidden": True}  # folded: its code is not read, its outputs are
    assert section_minutes.expected(nb) == {0: 5}
    nb.cells[1].outputs, nb.cells[1].metadata = nb.cells[1].outputs[:1], {}
    assert section_minutes.write(nb) and nb.cells[0].source.splitlines()[1] == "*≈ 5 min on your own*"
    assert not section_minutes.write(nb)                      # idempotent
    nb.cells[0].source = nb.cells[0].source.replace("≈ 5", "≈ 9")
    assert section_minutes.shown(nb.cells[0]) == 9 != section_minutes.expected(nb)[0]
    nb.cells[0].source = nb.cells[0].source.replace("≈ 9 min on your own", "≈ 5 min")   # unnamed minutes: stale
    assert section_minutes.shown(nb.cells[0]) is None
    assert section_minutes.write(nb) and nb.cells[0].source.count("min") == 1 and "on your own" in nb.cells[0].source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_sections_show_their_minutes(path):
    nb = read(path)
    exp = section_minutes.expected(nb)
    assert exp, "no ## sections found"
    stale = {nb.cells[i].source.splitlines()[0]: (section_minutes.shown(nb.cells[i]), m)
             for i, m in exp.items() if section_minutes.shown(nb.cells[i]) != m}
    assert not stale, f"(shown, by the rule) — run `python -m courseware section-minutes --write`: {stale}"


def test_the_rule_is_calibrated_on_the_reviewers_estimates():
    """Issue 52: the rule against two reviewers' estimates of the ten main lines (quiz included), on the section
    counts of the notebooks they read (tests/section_minutes_calibration.json; the table is in TESTING.md)."""
    rows = section_minutes.calibration()
    assert len(rows) == 10
    errors = [r["rule"] - r["estimate"] for r in rows]
    assert abs(sum(errors)) / len(errors) <= 1.5, errors          # no bias either way
    assert sum(map(abs, errors)) / len(errors) <= 4, errors        # the estimates are rounded to 5 minutes
    assert max(map(abs, errors)) <= 7, errors
    old = [r["old_rule"] - r["estimate"] for r in rows]
    assert sum(map(abs, old)) > 1.5 * sum(map(abs, errors)), old   # the old rule was further off
