"""Every ``##`` section (but Exercises and Summary) shows a self-paced learner's minutes under its
heading, computed by scripts/measure/section_minutes.py's rule, and the line is not stale."""

from __future__ import annotations

import sys

import nbformat
import pytest

from notebook_utils import NOTEBOOKS, ROOT, read

sys.path.insert(0, str(ROOT))
from scripts.measure import section_minutes  # noqa: E402


def test_the_rule():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("## A section\n" + "word " * 298),      # 2 min of prose, heading included
                nbformat.v4.new_code_cell("\n".join(f"x{i} = {i}" for i in range(16))),  # 2 min of code
                nbformat.v4.new_markdown_cell("## Exercises\nnot counted")]
    nb.cells[1].outputs = [nbformat.v4.new_output("display_data", data={"image/png": "", "text/plain": ""})]  # 1 figure
    assert section_minutes.expected(nb) == {0: 5}
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
    assert not stale, f"(shown, by the rule) — run `python scripts/measure/section_minutes.py --write`: {stale}"
