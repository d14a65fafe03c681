"""Each notebook reads in one sitting: a main line within its budget, then exercises, summary and
references, then an appendix with the measurements behind the claims (issue 38). The budget, the
appendix's place, its independence and every assert are checked here; ``courseware/measure/main_line.py``
prints the table."""

import json
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from courseware.measure import main_line  # noqa: E402
from courseware.measure.section_minutes import NOTEBOOKS  # noqa: E402
from courseware.sections import exercise_cells  # noqa: E402

RECORD = json.loads((ROOT / "tests" / "main_line.json").read_text(encoding="utf-8"))
IDS = [p.name[:2] for p in NOTEBOOKS]


def test_the_table_prints(capsys):
    assert main_line.main([]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 1 + len(NOTEBOOKS)
    print(out)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_main_line_budget(path):
    r = main_line.row(path)
    ceiling = RECORD["pending"].get(r["notebook"])
    if ceiling is None:
        assert r["main_minutes"] <= main_line.BUDGET, (
            f"{path.name}: the main line takes {r['main_minutes']} min by courseware/measure/section_minutes.py's rule "
            f"(budget {main_line.BUDGET}); move evidence to the appendix or cut repetition")
        assert r["has_appendix"], f"{path.name}: no '{main_line.APPENDIX_HEADING}' heading"
    else:   # not split yet: it may not grow
        assert r["main_minutes"] <= ceiling, f"{path.name}: {r['main_minutes']} min, more than the {ceiling} recorded"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_appendix_comes_last_and_stands_apart(path):
    nb = nbformat.read(path, as_version=4)
    p = main_line.parts(nb)
    if not p["appendix"]:
        return
    headings = [l for c in p["exercises"] if c.cell_type == "markdown" for l in c.source.splitlines()]
    assert any(l.strip().lower() == "## exercises" for l in headings), f"{path.name}: the appendix comes before the Exercises"
    assert any(l.startswith("### References") for l in headings), f"{path.name}: the appendix comes before the references"
    used = main_line.appendix_names_used_before(nb)
    assert not used, f"{path.name}: cells before the appendix use names only the appendix defines: {used}"
    not_skipped = [i for i, c in enumerate(p["appendix"])
                   if c.metadata.get("slideshow", {}).get("slide_type") not in ("skip", "notes")]
    assert not not_skipped, f"{path.name}: appendix cells not 'skip' in RISE (python -m courseware main-line --write)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_every_assert_accounted_for(path):
    r = main_line.row(path)
    now = sum(r["asserts"].values())
    removed = RECORD["removed"].get(r["notebook"], [])
    assert all(item.get("why") for item in removed), "each removed assert says why"
    before = RECORD["asserts_before"][r["notebook"]]
    assert now + sum(item["count"] for item in removed) >= before, (
        f"{path.name}: {now} asserts now (main {r['asserts']['main']}, exercises {r['asserts']['exercises']}, "
        f"appendix {r['asserts']['appendix']}), {before} before: record each removal and its reason in "
        f"tests/main_line.json")


def _toy():
    nb = new_notebook()
    nb.cells = [new_markdown_cell("# Toy"), new_markdown_cell("## 1. Idea"), new_code_cell("x = 1\nassert x == 1"),
                new_markdown_cell("## Exercises"), new_code_cell("y = 2"),
                new_markdown_cell("## Summary"), new_markdown_cell("### References\n\n- a paper"),
                new_markdown_cell(f"{main_line.APPENDIX_HEADING}\n<a id=\"appendix\"></a>"),
                new_code_cell("seeds = [x, 2]\nassert len(seeds) == 2\nassert seeds")]
    return nb


def test_parts_and_the_autograded_section():
    nb = _toy()
    p = main_line.parts(nb)
    assert [len(p[k]) for k in ("main", "exercises", "appendix")] == [3, 4, 2]
    assert [main_line.asserts(p[k]) for k in ("main", "exercises", "appendix")] == [1, 0, 2]
    assert exercise_cells(nb.cells) == nb.cells[3:7]     # autograde stops at the appendix
    assert exercise_cells(nb.cells[:7]) == nb.cells[3:7]


def test_a_main_line_that_leans_on_the_appendix_is_found():
    nb = _toy()
    assert main_line.appendix_names_used_before(nb) == []
    nb.cells[4] = new_code_cell("y = len(seeds)")
    assert main_line.appendix_names_used_before(nb) == [(4, "seeds")]


def test_decks_and_slide_pages_leave_the_appendix_out():
    from courseware.editions.build_decks import LecturePreprocessor
    from courseware.measure.slide_report import pages

    nb = _toy()
    assert main_line.mark_appendix_skipped(nb) and not main_line.mark_appendix_skipped(nb)
    for c in nb.cells[:7]:
        c.metadata["slideshow"] = {"slide_type": "slide"}
    assert sorted(i for page in pages(nb) for i in page["cells"]) == list(range(7))
    for c in nb.cells[7:]:   # even a deck whose appendix cells are not marked skip
        c.metadata["slideshow"] = {"slide_type": "slide"}
    assert sorted(i for page in pages(nb) for i in page["cells"]) == list(range(7))
    out, _ = LecturePreprocessor(kind="slides", variant="student").preprocess(nbformat.from_dict(nb), {})
    assert not any("Appendix" in c.source for c in out.cells) and len(out.cells) == 7
    out, _ = LecturePreprocessor(kind="handouts", variant="student").preprocess(nbformat.from_dict(nb), {})
    assert any(main_line.APPENDIX_HEADING in c.source for c in out.cells)   # hand-outs keep it


def test_the_student_edition_keeps_the_appendix():
    from courseware.editions.nbgrader_course import exercise_section_end, student_edition

    nb = _toy()
    edition = student_edition(nb)
    assert any(main_line.APPENDIX_HEADING in c.source for c in edition.cells)
    assert exercise_section_end(edition) == 7 and exercise_section_end(nb) == 7


def test_the_website_gives_the_appendix_its_own_page():
    import copy

    from courseware.editions.build_site import split_appendix, with_appendix_pages

    nb = _toy()
    nb.cells[2:2] = [new_markdown_cell("Seeds and a control: [Appendix A.1](#appendix-a1); the idea: [above](#1-idea).")]
    nb.cells.append(new_markdown_cell("<a id=\"appendix-a1\"></a>\n### A.1 Seeds\n\n*Supports:* [the idea](#1-idea); "
                                      "more in [A.1](#appendix-a1)"))
    before = copy.deepcopy(nb)
    chapter, appendix = split_appendix(nb, "11_toy")
    assert nb == before                                               # the reader's copy is not changed
    assert len(chapter.cells) + len(appendix.cells) == len(nb.cells)
    assert not any(main_line.APPENDIX_HEADING in c.source for c in chapter.cells)
    assert '<a href="11_toy_appendix.html#appendix-a1">Appendix A.1</a>' in chapter.cells[2].source
    assert "[above](#1-idea)" in chapter.cells[2].source               # a link within the chapter stays
    assert appendix.cells[0].source.startswith("# Appendix to Toy: the measurements behind the claims")
    assert appendix.cells[-1].source.splitlines()[1] == "## A.1 Seeds"   # one level up, under the page title
    assert '<a href="11_toy.html#1-idea">the idea</a>' in appendix.cells[-1].source
    assert '<a href="#appendix-a1">A.1</a>' in appendix.cells[-1].source   # MyST knows no <a id> target: raw HTML
    assert split_appendix(_toy_without_appendix(), "12_plain")[1] is None
    toc = {"parts": [{"chapters": [{"file": "notebooks/11_toy"}, {"file": "notebooks/12_plain"}]}]}
    chapters = with_appendix_pages(toc, ["11_toy"])["parts"][0]["chapters"]
    assert chapters == [{"file": "notebooks/11_toy", "sections": [{"file": "notebooks/11_toy_appendix"}]},
                        {"file": "notebooks/12_plain"}]


def _toy_without_appendix():
    nb = _toy()
    nb.cells = nb.cells[:7]
    return nb
