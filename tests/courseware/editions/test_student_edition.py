"""The student edition: what a class's student is given holds only what a student has.

One source, three editions (README, "Three editions"): the notebooks in ``notebooks/`` are the
learner's edition (model answers and speaker notes folded behind their toggles); ``make student`` /
``make course`` give the student's (``courseware/editions/nbgrader_course.py``: ``student_edition``, then
nbgrader's release); the decks keep the notes for the lecturer. These tests build the student edition
of every notebook (in memory: the same functions ``make student`` runs) and fail on anything a
student could not use: speaker notes, pointers to the repository's scripts, run logs and instructor
files, promises of cells the release does not have, test-runner directives, grading markers.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from courseware.authoring.tag_exercises import NOTES_CLOSE, NOTES_OPEN  # noqa: E402
from courseware.editions.nbgrader_course import (LEARNER_ONLY, STUDENT_ONLY, exercise_section_start, is_speaker_notes,  # noqa: E402
                             release, student_edition)

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

# What must not be in a student's notebook, and why.
LEFTOVERS = {
    r"(?i)speaker notes": "speaker notes are the lecturer's",
    r"INSTRUCTORS\.md": "an instructor's file",
    r"\bscripts/": "the repository's scripts (a student has the notebook and the course package)",
    r"\bruns/": "the repository's run logs",
    r"(?i)\bcollapsed\b": "a promise of collapsed model-answer cells the release does not have",
    r"(?i)\bcommitted\b": "the repository's history",
    r"NBVAL_": "a test-runner directive",
    r"(?i)\bseed 0\d\d\b": "the course's source documents",
    r"(?i)model answer": "model answers are not released",
    r"learner-only|student-only": "an edition marker",
    r"### (BEGIN|END) (SOLUTION|HIDDEN TESTS|MARK SCHEME)": "an nbgrader marker",
    r"hidden_check\(|COURSE_GRADING": "the hidden tests",
}


def _read(path):
    return nbformat.read(path, as_version=4)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem[:2])
def test_the_student_edition_has_no_leftovers(path):
    nb = release(_read(path))
    found = [f"cell {i} ({cell.cell_type}): {why}: {m.group(0)!r} in {cell.source[max(0, m.start() - 60):m.end() + 40]!r}"
             for i, cell in enumerate(nb.cells) for pattern, why in LEFTOVERS.items()
             for m in [re.search(pattern, cell.source)] if m]
    assert not any(is_speaker_notes(c) for c in nb.cells)
    assert not found, f"{path.name}, student edition:\n" + "\n".join(found)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem[:2])
def test_the_student_edition_keeps_the_lesson_and_every_exercise(path):
    """Only notes cells go; every code cell keeps its code (less nbval directives); the Exercises
    section and every graded cell are there."""
    nb, edition = _read(path), student_edition(_read(path))
    kept = [c for c in nb.cells if not is_speaker_notes(c)]
    assert len(edition.cells) == len(kept)
    for before, after in zip(kept, edition.cells):
        assert before.cell_type == after.cell_type and before.metadata.get("nbgrader") == after.metadata.get("nbgrader")
        if before.cell_type == "code":
            assert [line for line in before.source.splitlines() if not line.startswith("# NBVAL_")] \
                == after.source.splitlines()
    assert exercise_section_start(edition) is not None


def test_the_edition_markers_are_removed_and_replaced():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("Keep this.<!-- learner-only --> Run `scripts/x.py`.<!-- /learner-only -->"
                                      "<!-- student-only: Ask your instructor. --> End."),
        nbformat.v4.new_markdown_cell("**Speaker notes** · say this", metadata={"slideshow": {"slide_type": "notes"}}),
        nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nprint(1)\n"),
    ])
    out = student_edition(nb)
    assert [c.source for c in out.cells][:1] == ["Keep this.Ask your instructor. End."]
    assert len(out.cells) == 2 and out.cells[1].source == "print(1)\n"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem[:2])
def test_the_learner_edition_markers_are_well_formed_and_invisible(path):
    """Markers pair up, do not nest, and render as nothing in the learner's edition: an HTML comment
    that opens a line must be the whole line (CommonMark would otherwise show the rest of the line
    as raw HTML)."""
    for i, cell in enumerate(_read(path).cells):
        if cell.cell_type != "markdown":
            assert "learner-only" not in cell.source and "student-only" not in cell.source, f"cell {i}: markers are for markdown"
            continue
        opens, closes = cell.source.count("<!-- learner-only -->"), cell.source.count("<!-- /learner-only -->")
        assert opens == closes == len(LEARNER_ONLY.findall(cell.source)), f"cell {i}: unpaired or nested learner-only"
        for m in STUDENT_ONLY.finditer(cell.source):
            assert "--" not in m.group(1), f"cell {i}: '--' inside a comment"
        for line in cell.source.splitlines():
            if line.startswith("<!--") and ("learner-only" in line or "student-only" in line):
                assert re.fullmatch(r"<!--.*?-->", line), f"cell {i}: a marker opens the line {line[:80]!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem[:2])
def test_speaker_notes_stay_out_of_the_learners_reading_flow(path):
    """In the learner's edition every speaker-notes cell is folded: its rendering is one closed
    ``<details>`` line (JupyterLab renders a markdown cell whose source is collapsed, so the collapsed
    source alone would leave the notes in a reader's way; tests/browser/test_lab.py checks the page), and
    none sits between an exercise's prompt and its answer."""
    nb = _read(path)
    for i, cell in enumerate(nb.cells):
        if not is_speaker_notes(cell):
            continue
        assert cell.metadata.get("jupyter", {}).get("source_hidden"), f"cell {i}: speaker notes not collapsed"
        assert cell.source.startswith(NOTES_OPEN) and cell.source.endswith(NOTES_CLOSE), \
            f"cell {i}: speaker notes not folded in a closed <details> block (run courseware/authoring/tag_exercises.py)"
        assert cell.source.count("<details") == 1 and "<details open" not in cell.source, f"cell {i}"
        after = nb.cells[i + 1] if i + 1 < len(nb.cells) else None
        assert not (after is not None and after.metadata.get("nbgrader", {}).get("solution")), \
            f"cell {i}: speaker notes between an exercise's prompt and its answer"


def test_grade_ids_read_like_the_exercise_headings_and_instructors_md_lists_them():
    """Exercise 3's answer cell is ``ex3`` and its checks ``ex3_check``, ``ex3_check2`` ... (so a gradebook
    line names the exercise the student saw), and INSTRUCTORS.md's table is the one the script prints."""
    from courseware.authoring.tag_exercises import EXERCISE_RE, gradebook_table

    for path in NOTEBOOKS:
        number = None
        for i, cell in enumerate(_read(path).cells):
            heading = EXERCISE_RE.search(cell.source) if cell.cell_type == "markdown" else None
            number = int(heading.group(1)) if heading else number
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
            if gid:
                assert re.fullmatch(rf"ex{number}(_check\d*)?", gid), f"{path.name} cell {i}: {gid} under Exercise {number}"
    text = (ROOT / "INSTRUCTORS.md").read_text(encoding="utf-8")
    table = gradebook_table(NOTEBOOKS)
    assert table in text, "INSTRUCTORS.md's gradebook table is stale: python -m courseware tag-exercises --table notebooks/*.ipynb"


def _rules(text: str) -> str:
    """A forbid list as one line, whatever its layout (black's one item a line, a trailing comma)."""
    text = " ".join(text.split()).rstrip(", ")
    return re.sub(r"([\[(]) ", r"\1", re.sub(r",? ?([\])])", r"\1", text))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem[:2])
def test_visible_checks_apply_the_rules_the_hidden_tests_apply(path):
    """An exercise whose hidden tests forbid built-ins applies the same list in a visible check
    (``with forbid([...])``), so a learner meets the rule where the notebook states it."""
    hidden, visible = {}, {}
    for cell in _read(path).cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id") or ""
        if "_check" not in gid:
            continue
        exercise = gid.split("_")[0]
        shown, _, block = cell.source.partition("### BEGIN HIDDEN TESTS")
        m = re.search(r"forbid=(.*?)\)(?:[ \t]*#[^\n]*)?\s*\n### END", block, re.S)
        if m:
            rules = m.group(1).strip()
            if rules == "FORBID":
                rules = re.search(r"^FORBID = (\[.*?\])\n", block, re.S | re.M).group(1)
            hidden.setdefault(exercise, set()).add(_rules(rules))
        v = re.search(r"^with forbid\(\s*(\[.*?\])\s*\):", shown, re.S | re.M)
        if v:
            visible.setdefault(exercise, set()).add(_rules(v.group(1)))
    for exercise, rules in hidden.items():
        assert len(rules) == 1, f"{path.name} {exercise}: its check cells' hidden blocks forbid different things: {rules}"
        assert visible.get(exercise) == rules, \
            f"{path.name} {exercise}: no visible check applies the hidden tests' rule {rules} (with forbid([...]):)"
    assert set(visible) <= set(hidden), f"{path.name}: a visible rule without a hidden one: {set(visible) - set(hidden)}"


def _repository_url() -> str:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]["Repository"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem[:2])
def test_every_link_of_the_released_notebook_leads_somewhere(path):
    """A released notebook sits alone in ``course/release/<name>/`` (or ``student/``): a link to a file by a
    relative path (``../NOTATION.md``) leads nowhere there. Every link is an address or an anchor in the
    notebook, and the notation table is linked where it lives, the repository's NOTATION.md."""
    nb = release(_read(path))
    links = [(i, m.group(1)) for i, cell in enumerate(nb.cells) if cell.cell_type == "markdown"
             for m in re.finditer(r"\]\(([^)\s]+)", cell.source)]
    relative = [(i, link) for i, link in links if not re.match(r"https?://|#", link)]
    assert not relative, f"{path.name}, student edition: links by a relative path: {relative}"
    notation = [link for _, link in links if link.endswith("NOTATION.md")]
    assert notation == [f"{_repository_url()}/blob/main/NOTATION.md"], notation


def test_instructors_md_points_table_matches_the_notebooks():
    """INSTRUCTORS.md's table of points per notebook (points, by tests, by hand, and the total) is what the
    nbgrader metadata gives (it said 11 for notebook 10 after its Exercise 4 made it 15)."""
    text = (ROOT / "INSTRUCTORS.md").read_text(encoding="utf-8")
    rows = {m.group(1): tuple(int(m.group(k)) for k in (2, 3, 4))
            for m in re.finditer(r"^\| (\d\d) [^|]*\| (\d+) \| (\d+) \| (\d+) \|", text, re.M)}
    want = {}
    for path in NOTEBOOKS:
        graded = [c.metadata["nbgrader"] for c in _read(path).cells if c.metadata.get("nbgrader", {}).get("grade")]
        by_hand = sum(g.get("points", 0) for g in graded if g.get("solution"))
        total = sum(g.get("points", 0) for g in graded)
        want[path.name[:2]] = (total, total - by_hand, by_hand)
    assert rows == want, "INSTRUCTORS.md's points table: " + "; ".join(
        f"{k} says {rows.get(k)}, the notebook {v}" for k, v in want.items() if rows.get(k) != v)
    totals = re.search(r"^\| \*\*all\*\* \| \*\*(\d+)\*\* \| \*\*(\d+)\*\* \| \*\*(\d+)\*\* \|", text, re.M)
    assert totals and tuple(map(int, totals.groups())) == tuple(map(sum, zip(*want.values())))


def test_lectures_md_lists_every_exercise_with_its_points():
    """Each lecture's "**Exercises**:" line in LECTURES.md names every exercise of its notebook, in order, with
    the points the nbgrader metadata gives (notebook 10's Exercise 4 was missing from it)."""
    text = (ROOT / "LECTURES.md").read_text(encoding="utf-8")
    for path in NOTEBOOKS:
        points: dict[int, int] = {}
        for cell in _read(path).cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade"):
                n = int(re.match(r"ex(\d+)", meta["grade_id"]).group(1))
                points[n] = points.get(n, 0) + meta.get("points", 0)
        section = re.search(rf"^## {path.name[:2]} ·.*?(?=^## |\Z)", text, re.M | re.S)
        assert section, f"LECTURES.md has no section for {path.name[:2]}"
        line = re.search(r"\*\*Exercises\*\*:(.*?)(?=\n- \*\*|\Z)", section.group(0), re.S)
        assert line, f"LECTURES.md, {path.name[:2]}: no Exercises line"
        listed = {int(n): int(p) for n, p in re.findall(r"Exercise (\d+) — .*?\((\d+) points?\)", " ".join(line.group(1).split()))}
        assert listed == points, f"LECTURES.md, {path.name[:2]}: lists {listed}, the notebook has {points}"
