"""The "Check yourself" quizzes (issue 41): one source per notebook, ``courseware/quizzes/NN.json``, shown by
``courseware.quiz.check_yourself`` in cells that ``courseware/authoring/quiz_cells.py`` writes at the end of the main
line's sections. Every question has feedback for every answer, the answers are valid, each notebook has 4-8
questions, and the cells in the notebooks are what the script writes. The browser side (answered by clicks on
the website, no kernel) is in ``tests/site/test_site.py``."""

import html
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from courseware.authoring import quiz_cells  # noqa: E402
from courseware.measure import main_line  # noqa: E402
from courseware import quiz  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
IDS = [p.name[:2] for p in NOTEBOOKS]
# notebooks whose quiz cells are written after a merge (their exercise sections edited elsewhere at the
# time): python -m courseware quiz-cells --write NN, execute them, then empty this set
PENDING: set[str] = set()
TAGS = re.compile(r"</?([a-zA-Z]+)[^>]*>")
ALLOWED_TAGS = {"i", "b", "code", "sub", "sup"}


def _all(number):
    return [q for part in quiz.parts(number) for q in part["questions"]]


@pytest.mark.parametrize("number", IDS)
def test_four_to_eight_questions(number):
    n = len(_all(number))
    assert 4 <= n <= 8, f"notebook {number}: {n} questions (4-8)"


def _texts(q):
    yield q["question"]
    for a in q["answers"]:
        yield from (a.get("answer", ""), a.get("feedback", ""))


@pytest.mark.parametrize("number", IDS)
def test_every_answer_has_feedback_and_the_answers_are_valid(number):
    for q in _all(number):
        where = f"{number}: {q['question'][:60]}"
        assert q["question"].strip(), where
        if q["type"] == "multiple_choice":
            assert len(q["answers"]) >= 3, f"{where}: a right answer and at least two tempting wrong ones"
            assert sum(a["correct"] is True for a in q["answers"]) == 1, f"{where}: exactly one right answer"
            assert all(a["answer"].strip() and len(a["feedback"].strip()) > 20 for a in q["answers"]), \
                f"{where}: every answer explains why it is right or wrong"
            assert len({a["answer"] for a in q["answers"]}) == len(q["answers"]), f"{where}: two answers alike"
        else:
            assert q["type"] == "numeric", where
            values = [a for a in q["answers"] if "value" in a]
            right = [a for a in values if a["correct"]]
            assert len(right) == 1 and values[0] is right[0], f"{where}: one right value, looked up first"
            assert len(values) >= 2, f"{where}: at least one tempting wrong value with its own feedback"
            assert all(len(a["feedback"].strip()) > 20 for a in values), f"{where}: feedback for every value"
            default = [a for a in q["answers"] if a.get("type") == "default"]
            assert len(default) == 1 and default[0]["feedback"].strip(), f"{where}: feedback for any other number"
            p = q.get("precision")
            shown = [float(f"{a['value']:.{p}g}") if p else a["value"] for a in values]
            assert len(set(shown)) == len(shown), f"{where}: a wrong value equals the right one at precision {p}"
        for text in _texts(q):   # the quiz writes these as HTML: a bare <pad> would vanish
            assert set(TAGS.findall(text)) <= ALLOWED_TAGS, f"{where}: {text[:80]}"


def _shown(text):
    """An answer as the reader sees it: tags dropped, entities (&lt;) as one character."""
    return html.unescape(TAGS.sub("", text))


def _right_answer_longest(q) -> bool:
    """The right answer is strictly longer than every wrong one, counted in the JSON's characters or as shown."""
    right = next(a["answer"] for a in q["answers"] if a["correct"] is True)
    wrong = [a["answer"] for a in q["answers"] if a["correct"] is not True]
    return any(len(f(right)) > max(len(f(w)) for w in wrong) for f in (str, _shown))


def _longest_right(number):
    mc = [q for q in _all(number) if q["type"] == "multiple_choice"]
    return [q["question"] for q in mc if _right_answer_longest(q)], len(mc)


@pytest.mark.parametrize("number", IDS)
def test_the_right_answer_is_not_given_away_by_its_length(number):
    """A reader found the right answer was often the longest option (35 of 48 before the wording pass): in at
    most a third of a notebook's multiple-choice questions may the right answer be the strictly longest."""
    longest, n = _longest_right(number)
    assert 3 * len(longest) <= n, f"notebook {number}: the right answer is the longest option in " \
        f"{len(longest)} of {n} questions (at most a third): {[q[:50] for q in longest]}"


def test_the_right_answer_is_rarely_the_longest_over_the_course():
    counts = [_longest_right(number) for number in IDS]
    longest, n = sum(len(c[0]) for c in counts), sum(c[1] for c in counts)
    assert longest <= 0.30 * n, f"the right answer is the longest option in {longest} of {n} questions (≤ 30 %)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_the_notebook_holds_the_cells_the_script_writes(path):
    nb = nbformat.read(path, as_version=4)
    expected = [c.source for c in quiz_cells.with_quiz(nbformat.read(path, as_version=4), path.name[:2]).cells]
    if path.name[:2] in PENDING:
        return
    assert [c.source for c in nb.cells] == expected, (
        f"{path.name}: quiz cells stale or missing: python -m courseware quiz-cells --write {path.name[:2]}")
    cells = [c for c in nb.cells if quiz_cells.is_quiz_cell(c)]
    assert len(cells) == len(quiz.parts(path.name[:2]))
    for c in cells:
        assert not c.source.startswith("# NBVAL_CHECK_OUTPUT")
        kinds = [k for o in c.outputs for k in o.get("data", {})]
        assert "text/html" in kinds and "application/javascript" in kinds, f"{path.name}: quiz cell not executed"
    r = main_line.row(path)
    assert r["quiz_questions"] == len(_all(path.name[:2]))
    assert r["quiz_minutes"] <= 8 * main_line.MIN_PER_QUIZ_QUESTION   # at most 8 questions, by the minute rule


def test_the_quiz_output_needs_nothing_from_outside(capsys):
    """The cell's output carries its scripts and styles: no URL is fetched or loaded."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    published = []
    shell.display_pub.publish = lambda data, metadata=None, **kw: published.append(data)
    quiz.check_yourself("04", 1)
    js = "".join(d.get("application/javascript", "") for d in published)
    html = "".join(d.get("text/html", "") for d in published)
    assert "show_questions" in js and "fetch(" not in js and "<script src" not in html and "@import" not in html
    assert not re.search(r"(src|href)=[\"']https?:", html + js)
    assert "MathJax.typeset([" not in js and "courseTypeset(" in js and "aria-label" in js   # courseware.quiz.quiz_script


@pytest.mark.parametrize("number", IDS)
def test_a_page_without_scripts_shows_the_questions_but_not_the_answers(number):
    """GitHub, nbviewer and a notebook not yet trusted show the quiz cell's text/plain: every question and every
    option, in the widget's order, as plain text; no feedback and no mark of the right answer (lessons r3, X-2)."""
    for part, p in enumerate(quiz.parts(number), 1):
        text = quiz.plain_text(p["questions"])
        assert not re.search(r"</?(i|b|code|sub|sup)>|&[a-z]+;", text), text
        at = 0
        for q in p["questions"]:
            at = text.index(quiz._plain(q["question"]), at)
            for a in q["answers"]:
                if q["type"] == "multiple_choice":
                    at = text.index(quiz._plain(a["answer"]), at)
                feedback = quiz._plain(a.get("feedback", ""))
                assert len(feedback) < 25 or feedback not in text, f"{number}.{part}: feedback shown: {feedback}"
        # nothing else: a heading, then per question its line and one line per option (or one for a number)
        want = 1 + sum(1 + (len(q["answers"]) if q["type"] == "multiple_choice" else 1) for q in p["questions"])
        assert len(text.splitlines()) == want, text
    assert quiz._plain("d<sub>k</sub>, e<sup>1−r/c</sup>, <code>&lt;eos&gt;</code>") == "d_k, e^(1−r/c), `<eos>`"


def test_a_part_that_names_no_section_is_refused(tmp_path, monkeypatch):
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    (tmp_path / "99.json").write_text('{"notebook": "99", "parts": [{"section": "2.", "questions": []}]}')
    monkeypatch.setattr(quiz, "QUIZZES", tmp_path)
    nb = new_notebook(cells=[new_markdown_cell("## 1. One"), new_code_cell("x = 1"), new_markdown_cell("## Exercises")])
    with pytest.raises(ValueError, match="matches 0 headings"):
        quiz_cells.with_quiz(nb, "99")
    (tmp_path / "99.json").write_text('{"notebook": "99", "parts": [{"section": "1.", "questions": []}]}')
    once = quiz_cells.with_quiz(nb, "99")
    assert [c.source for c in once.cells][2] == quiz_cells.quiz_source("99", 1)
    twice = quiz_cells.with_quiz(once, "99")
    assert [c.source for c in twice.cells] == [c.source for c in once.cells]   # idempotent


def _without_ids(outputs) -> list:
    text = "\n".join(v if isinstance(v, str) else "".join(v) for o in outputs for _, v in sorted(o.get("data", {}).items()))
    for div in set(re.findall(r'<div id="([A-Za-z]{12})"', text)):
        text = text.replace(div, "ID")
    return text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_the_quiz_outputs_show_the_quiz_as_it_is_now(path):
    """A quiz edited after its notebook ran: python -m courseware quiz-cells --outputs NN."""
    if path.name[:2] in PENDING:
        pytest.skip("quiz cells written after the merge")
    for cell in nbformat.read(path, as_version=4).cells:
        call = re.search(r'check_yourself\("(\d\d)", (\d+)\)', cell.source) if quiz_cells.is_quiz_cell(cell) else None
        if call:
            fresh = quiz_cells.quiz_outputs(call.group(1), int(call.group(2)))
            assert _without_ids(cell.outputs) == _without_ids(fresh), (
                f"{path.name}: stale quiz output: python -m courseware quiz-cells --outputs {path.name[:2]}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_each_quiz_on_a_page_has_its_own_id(path):
    """Two quizzes with one id break the page's script (the notebook's seeded `random` once gave them one)."""
    ids = []
    for cell in nbformat.read(path, as_version=4).cells:
        if quiz_cells.is_quiz_cell(cell):
            for out in cell.outputs:
                ids += re.findall(r'<div id="([A-Za-z]+)" data-shufflequestions', "".join(out.get("data", {}).get("text/html", "")))
    assert ids and len(ids) == len(set(ids)), f"{path.name}: quiz ids {ids}"


def test_check_yourself_ids_do_not_follow_the_notebooks_seed():
    import random
    seen = []
    for _ in range(2):
        random.seed(0)
        seen.append(quiz_cells.quiz_outputs("05", 1))
    html = ["".join(o[0]["data"]["text/html"]) for o in seen]
    assert html[0][:40] != html[1][:40], "check_yourself's div id repeats after random.seed(0)"
