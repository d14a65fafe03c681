"""Every committed notebook: executed top to bottom, no errors, kernel named, outputs
present, the course structure, and an autograded check after every exercise."""

from __future__ import annotations

import json
import re

import pytest

from notebook_utils import BEGIN, KERNEL, NOTEBOOKS, ROOT, exercise_cells, heading_index, is_check, read

import sys

sys.path.insert(0, str(ROOT))
from courseware.authoring import bootstrap_cell  # noqa: E402
from courseware.authoring import tag_exercises  # noqa: E402

ids = [p.name for p in NOTEBOOKS]


def test_there_are_notebooks_and_numbers_are_unique():
    assert NOTEBOOKS, "no notebooks found in notebooks/"
    numbers = [p.name[:2] for p in NOTEBOOKS]
    assert len(numbers) == len(set(numbers)), f"two notebooks share a number: {numbers}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_title_counts_the_lectures(path):
    """The first cell says "lecture N of M" with this notebook's number and the course's length."""
    found = re.search(r"lecture (\d+) of (\d+)", read(path).cells[0].source)
    assert found, "the title cell must say 'lecture N of M'"
    assert (int(found[1]), int(found[2])) == (int(path.name[:2]), len(NOTEBOOKS)), found[0]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_executed_in_order_without_errors(path):
    nb = read(path)
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    counts = [c.execution_count for c in code]
    assert None not in counts, f"{sum(c is None for c in counts)} code cells were not executed"
    assert counts == list(range(1, len(code) + 1)), f"not executed top to bottom in one fresh run: {counts[:10]}..."
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, f"error outputs: {[e.ename + ': ' + e.evalue for e in errors]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_kernel_and_outputs(path):
    nb = read(path)
    assert nb.metadata.get("kernelspec", {}).get("name") == KERNEL, "notebook must name the course kernel"
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert outputs, "notebook was committed without outputs"
    assert any("image/png" in o.get("data", {}) for o in outputs), "notebook shows no figure"
    text = json.dumps([o for o in outputs if o.output_type != "display_data" or "image/png" not in o.get("data", {})])
    for private in ("/work/", "/root/", "/home/"):
        assert private not in text, f"outputs leak a local path containing {private!r}"
    assert path.stat().st_size < 3_000_000, "notebook is over 3 MB; lower figure dpi or drop bulky outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_course_structure(path):
    nb = read(path)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# "), "open with a '# Title' markdown cell"
    intro = "\n".join(c.source for c in nb.cells[:3] if c.cell_type == "markdown").lower()
    assert "what you will learn" in intro, "say what the learner will learn"
    assert "builds on" in intro, "say what the notebook builds on"
    ex, summary = heading_index(nb, "Exercises"), heading_index(nb, "Summary")
    assert ex is not None and summary is not None, "needs '## Exercises' and '## Summary' sections"
    assert ex < summary, "exercises come before the summary"
    assert all(i > ex for i in exercise_cells(nb)), "exercise cells belong in the Exercises section"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_every_exercise_has_a_check_cell(path):
    nb = read(path)
    exercises = exercise_cells(nb)
    assert exercises, "every notebook has at least one graded exercise"
    for i in exercises:
        nxt = next((c for c in nb.cells[i + 1:] if c.cell_type == "code"), None)
        assert nxt is not None and is_check(nxt), f"exercise cell {i} is not followed by a '# CHECK' cell"
        assert "### END SOLUTION" in nb.cells[i].source
    for c in nb.cells:
        if is_check(c):
            assert BEGIN not in c.source
            assert re.search(r"\bassert\b|raise\b|torch\.testing", c.source), "a check cell must check something"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_answers_are_collapsed_and_exercises_graded_like_assignments(path):
    """A learner's default view hides the model answers (JupyterLab's source_hidden: the cell shows as
    a bar to click); every code exercise has hidden tests; open questions have a mark scheme; every
    exercise prompt states its points, and the section's heading states the notebook's total."""
    nb = read(path)
    section = nb.cells[heading_index(nb, "Exercises"):heading_index(nb, "Summary")]
    answers = [c for c in section if BEGIN in c.source]
    assert answers and all(c.metadata.get("jupyter", {}).get("source_hidden") for c in answers), \
        "answer cells must be collapsed (run courseware/authoring/tag_exercises.py)"
    for c in answers:
        if c.cell_type == "markdown":
            assert "### BEGIN MARK SCHEME" in c.source, f"an open question without a mark scheme:\n{c.source[:200]}"
            # JupyterLab collapses a markdown cell's source, not its rendering: the answer is also in a
            # closed <details> block (no `open` attribute), opened on a click
            assert c.source.startswith(tag_exercises.DETAILS_OPEN) and c.source.endswith(tag_exercises.DETAILS_CLOSE), \
                f"an open question's answer must be wrapped in a closed <details> block:\n{c.source[:200]}"
    checks = {}
    for c in section:
        gid = c.metadata.get("nbgrader", {}).get("grade_id", "")
        if is_check(c):
            checks.setdefault(gid.split("_check")[0], []).append(c)
    assert all(any("### BEGIN HIDDEN TESTS" in c.source for c in cells) for cells in checks.values()), \
        f"exercises without hidden tests: {[k for k, v in checks.items() if not any('### BEGIN HIDDEN TESTS' in c.source for c in v)]}"
    total = tag_exercises.total_points(nb)
    assert re.search(rf"\*\*{total} points\*\* in all", section[0].source), f"the Exercises heading must say '**{total} points** in all'"
    prompts = [c for c in section if c.cell_type == "markdown" and re.match(r"(\*\*|### )Exercise \d+ ", c.source)]
    assert prompts and all(re.search(r"\d+ points?\b", c.source) and "min" in c.source for c in prompts), \
        "every exercise prompt states its points and an estimated time"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_nbgrader_metadata_is_current(path):
    assert tag_exercises.main(["--check", str(path)]) == 0, "run courseware/authoring/tag_exercises.py on this notebook"


def test_compared_outputs_are_an_allowlist():
    """nbval runs in lax mode: only cells marked NBVAL_CHECK_OUTPUT are compared (CONTRIBUTING.md)."""
    makefile = (ROOT / "Makefile").read_text()
    assert "--nbval-lax" in makefile and "--nbval " not in makefile


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_outputs_compared_and_threads_chosen_the_course_way(path):
    nb = read(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert not any("NBVAL_IGNORE_OUTPUT" in c.source for c in code), "lax mode: unmark the cell instead"
    checked = [c for c in code if c.source.startswith("# NBVAL_CHECK_OUTPUT")]
    assert checked, "mark the cells whose deterministic output is part of the lesson with # NBVAL_CHECK_OUTPUT"
    for c in checked:
        assert c.outputs, "a compared cell must have an output to compare"
        # an output that depends on training, sampling or timing differs between computers: assert it instead
        found = [w for w in ("fit(", "perf_counter", "time.time(", "multinomial", "evaluate_bleu(", ".generate(")
                 if w in c.source]
        assert not found, f"a compared cell trains, samples or times ({found}): drop # NBVAL_CHECK_OUTPUT\n{c.source[:200]}"
    lesson = [c for c in code if not c.source.startswith(bootstrap_cell.BEGIN)]
    assert "set_cpu_threads()" in lesson[0].source, "the first code cell after the bootstrap chooses the thread count"
    assert not any("set_num_threads" in c.source for c in code), "use utils.training.set_cpu_threads"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_explorers_go_through_explore(path):
    """Every explorer is shown with utils.explorers.explore (one figure, PNG fallback for the
    saved view), never with ipywidgets.interact directly (which leaves a stale second figure);
    and its saved output carries that PNG, so the committed notebook shows a figure."""
    nb = read(path)
    explorers = 0
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or BEGIN in cell.source:
            continue
        assert not re.search(r"\binteract(ive)?\s*\(", cell.source), f"cell {i}: use utils.explorers.explore"
        if re.search(r"\bexplore\s*\(", cell.source):
            explorers += 1
            bundles = [o["data"] for o in cell.outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
            assert len(bundles) == 1 and "image/png" in bundles[0], f"cell {i}: explorer output without a figure"
            assert not [o for o in cell.outputs if "image/png" in o.get("data", {}) and o["data"] is not bundles[0]], \
                f"cell {i}: a figure outside the explorer"
    assert explorers >= 1, "every notebook has at least one explorer"
