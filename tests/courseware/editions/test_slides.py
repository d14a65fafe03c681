"""Every notebook presents as a slide deck (RISE in JupyterLab, ``jupyter nbconvert --to slides``).

Checked here, with nbformat only:

- every cell's ``metadata.slideshow.slide_type``, where present, is a valid one, and every notebook
  has slideshow metadata; the first cell starts a slide;
- every markdown cell that opens a ``## `` section is a ``slide`` (and so is a cell with a ``## ``
  heading further down);
- a deck has 15-70 pages (``slide`` + ``subslide`` cells; the first cell counts as a slide). The
  course asked for about 15-35; most notebooks need more pages than that to keep every page within
  the line limit below without hiding their content, and notebook 08 (with the copy task, Adam written
  out, the warm-up experiment and the pronoun example) needs 69 (``python -m courseware slide-report``);
- **every slide** (a ``slide`` cell and the subslides that follow it) has at least one speaker-notes
  cell (slide_type ``notes``) that says ``**Point:**``, and has a ``**Lecture time:** N min``; the minutes of a
  notebook's notes add up to a 50-75 minute lecture (the outline in LECTURES.md);
- no page is taller than ``MAX_LINES`` lines, counted by ``courseware/measure/slide_report.py`` (code and
  output lines, markdown lines at 55 characters and 1.3 code lines each, PNGs by their height at
  the slide's width; ``skip`` and ``notes`` cells excluded; ``fragment`` cells count on their
  page). A page that is a single cell cannot be split by slide metadata, so it is exempt: those
  pages are listed by ``python -m courseware slide-report --pages`` and may need scrolling.

How ``MAX_LINES = 28`` was chosen: the decks were exported with nbconvert 7.17's reveal template
(its default 960x700 slide, scaled to the window) against a local copy of reveal.js 4.6.1 (npm),
require.js and MathJax 2.7.9, opened in headless Debian chromium with ``--window-size=1280,720``,
and a script stepped through every page and recorded its ``scrollHeight``. A page fits when it is at
most 700 px high. Over all 293 pages of a first assignment, every page counted at 26 lines or fewer
fitted apart from the notebooks' long title cells (now skipped behind short title cards); the first overflow at 27 lines was a page of long wrapped text output, after which text
output was counted at 80 instead of 110 characters a line. With the metadata committed here, every
page of more than one cell counted at 28 lines or fewer measured at most 700 px, except one title
page, which was then split. Measured again on the committed notebooks (323 pages): no page of more
than one cell is over 700 px; 31 single-cell pages are (all counted at 30 lines or more).
One line of code measured 22.8 px.
"""

from __future__ import annotations

import sys

import pytest

from notebook_utils import NOTEBOOKS, ROOT, read

sys.path.insert(0, str(ROOT))
from courseware.measure import slide_report  # noqa: E402
from courseware.sections import appendix_start  # noqa: E402

MAX_LINES = 28
PAGES = (15, 70)
MINUTES = (50, 75)

ids = [p.name for p in NOTEBOOKS]


def is_section(cell) -> bool:
    return cell.cell_type == "markdown" and any(line.startswith("## ") for line in cell.source.splitlines())


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_slide_types_are_valid(path):
    nb = read(path)
    assert any("slideshow" in c.metadata for c in nb.cells), "no slideshow metadata"
    for i, c in enumerate(nb.cells):
        if "slideshow" in c.metadata:
            assert c.metadata.slideshow.get("slide_type") in slide_report.SLIDE_TYPES, f"cell {i}: {c.metadata.slideshow}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_first_cell_and_sections_start_slides(path):
    nb = read(path)
    assert slide_report.slide_type(nb.cells[0]) == "slide"
    end = appendix_start(nb.cells)   # the appendix is not in the deck: its cells are "skip" (tests/courseware/measure/test_main_line.py)
    for i, c in enumerate(nb.cells[:end]):
        if c.cell_type == "markdown" and c.source.startswith("## "):
            assert slide_report.slide_type(c) == "slide", f"cell {i} opens a section: {c.source.splitlines()[0]}"
        if is_section(c):
            assert slide_report.slide_type(c) == "slide", f"cell {i} holds a section heading"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_slide_count(path):
    n = len(slide_report.pages(read(path)))
    assert PAGES[0] <= n <= PAGES[1], f"{n} pages (slides + subslides)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_every_slide_has_speaker_notes(path):
    nb = read(path)
    for k, slide in enumerate(slide_report.slides(nb)):
        notes = [nb.cells[i] for page in slide for i in page["notes"]]
        first = nb.cells[slide[0]["cells"][0]].source.splitlines()[:1]
        assert notes, f"slide {k} ({first}) has no notes cell"
        assert any("**Point:**" in n.source for n in notes), f"slide {k} ({first}): notes say no **Point:**"
        assert any(slide_report.TIME_RE.search(n.source) for n in notes), f"slide {k} ({first}): no **Lecture time:** N min"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_notes_minutes_make_a_lecture(path):
    total = sum(slide_report.note_minutes(read(path)))
    assert MINUTES[0] <= total <= MINUTES[1], f"notes add up to {total} min"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_no_page_overflows(path):
    nb = read(path)
    over = [(p["cells"], round(p["lines"], 1)) for p in slide_report.pages(nb)
            if p["lines"] > MAX_LINES and len(p["cells"]) > 1]
    assert not over, f"pages over {MAX_LINES} lines (cells, lines); start a subslide: {over}"


def test_notes_cells_are_markdown():
    for path in NOTEBOOKS:
        for c in read(path).cells:
            if slide_report.slide_type(c) == "notes":
                assert c.cell_type == "markdown"
