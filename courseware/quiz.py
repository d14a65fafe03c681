"""Check yourself: the short quizzes in each notebook's main line, from one source, ``courseware/quizzes/NN.json``.

Each file holds a notebook's questions in parts, one part a cell placed at the end of the ``##`` section it
names (``courseware/authoring/quiz_cells.py --write NN`` writes the cells). A question is in jupyterquiz's format
(a multiple-choice question's ``answers`` each with ``correct`` and ``feedback``; a numeric question's answers
a ``value`` or a ``range``, each with feedback, and a ``default`` one for any other number).

The quiz is static HTML and JavaScript carried by the cell's output (jupyterquiz's scripts and styles inlined,
nothing is fetched; ``quiz_script`` makes its MathJax calls wait their turn and names the number box), so the same output works in JupyterLab with a kernel, on the website with none,
and in the student edition once the cell is run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

QUIZZES = Path(__file__).resolve().parent / "quizzes"


def parts(notebook: str) -> list[dict]:
    """The notebook's quiz parts, in order: ``{"section": the start of a ## heading, "questions": [...]}``."""
    path = QUIZZES / f"{notebook}.json"
    if not path.exists():
        raise FileNotFoundError(f"no quiz for notebook {notebook!r}: {path} is missing")
    return json.loads(path.read_text(encoding="utf-8"))["parts"]


def questions(notebook: str, part: int) -> list[dict]:
    """The questions of one part (numbered from 1, as the cell that shows them names it)."""
    all_parts = parts(notebook)
    if not 1 <= part <= len(all_parts):
        raise ValueError(f"notebook {notebook}'s quiz has parts 1..{len(all_parts)}, got {part}")
    return all_parts[part - 1]["questions"]


# The course's colours in place of jupyterquiz's purple: white text on a dark blue (contrast >= 7:1). A clicked
# button, and an answered number box, turns the correct or incorrect colour under white text (both >= 5:1; the
# number box's dark text on them was 2.9:1 and 3.5:1, issue 53); the feedback below it is written in a light
# version of the same colour on the dark blue (STYLE), since jupyterquiz uses one variable for both.
COLOURS = {
    "--jq-multiple-choice-bg": "#1d3557",
    "--jq-many-choice-bg": "#1d3557",
    "--jq-numeric-bg": "#1d3557",
    "--jq-string-bg": "#1d3557",
    "--jq-mc-button-bg": "#fafafa",
    "--jq-numeric-input-bg": "#fafafa",
    "--jq-numeric-input-label": "#fafafa",
    "--jq-correct-color": "#1b7a34",
    "--jq-incorrect-color": "#b3261e",
    "--jq-text-color": "#fafafa",
    "--jq-link-color": "#b9d3ff",
}
STYLE = """<style>
.Quiz { background: #1d3557; color: #fafafa; padding: 0 10px 10px; }
.Quiz .Feedback.correct { color: #9be7a8; }
.Quiz .Feedback.incorrect { color: #ffc4bd; }
.Quiz .Input-text { color: #101010; }
.Quiz .Input-text.correctButton, .Quiz .Input-text.incorrectButton { color: #ffffff; }
.Quiz .Input-text.correctButton:focus, .Quiz .Input-text.incorrectButton:focus { animation: none; background: #fafafa; color: #101010; }
.Quiz .course-quiz-check { margin: 0 10px 10px; padding: 4px 16px; font: inherit; font-size: 16px; color: #1d3557;
  background: #fafafa; border: 2px solid #b9d3ff; border-radius: 0.2rem; cursor: pointer; min-height: 40px; }
.Quiz .Feedback, .Quiz .MultipleChoiceQn, .Quiz .NumericQn { line-height: 1.35; }
@media (max-width: 600px) { .Quiz { font-size: 13pt; } .Quiz .Feedback { font-size: 13pt; } }
</style>"""

# Before jupyterquiz's code: MathJax typesets the quiz one request after another (a click's typesetting waits
# for the page's, where MathJax 3 is loaded; in JupyterLab there is none to call), and a page whose MathJax is
# still its configuration object (no ``version`` yet) is not taken for MathJax 2.
TYPESET_JS = """var courseTypeset = function (el) {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise && MathJax.typesetPromise) {
    MathJax.startup.promise = MathJax.startup.promise.then(function () { return MathJax.typesetPromise([el]); })
      .catch(function (e) { console.log(e); });
  }
};
"""
# After it: the number box gets a name a screen reader reads (jupyterquiz's label is not tied to it), a phone's
# number keyboard (inputmode) and a Check button beside Enter (a phone's keyboard may send no Enter keypress).
# The same lines are in site/_static/course.js, for quiz outputs made before them.
LABEL_JS = """
(function name(tries) {
  var root = document.getElementById("%s");
  var boxes = root ? root.querySelectorAll('.Input-text') : [];
  if (!root || !root.querySelector('.Quiz')) { if (tries < 100) setTimeout(function () { name(tries + 1); }, 100); return; }
  boxes.forEach(function (box) {
    if (box.dataset.courseReady) return;
    box.dataset.courseReady = '1';
    box.setAttribute('aria-label', 'Your answer, a number; press Enter or Check');
    box.setAttribute('inputmode', 'decimal');
    box.setAttribute('enterkeyhint', 'done');
    var check = document.createElement('button');
    check.type = 'button';
    check.className = 'course-quiz-check';
    check.textContent = 'Check';
    check.addEventListener('click', function () { if (box.onkeypress) box.onkeypress.call(box, {which: 13, keyCode: 13}); });
    box.insertAdjacentElement('afterend', check);
  });
})(0);
"""


def quiz_script(qs: list[dict], div_id: str) -> str:
    """jupyterquiz's script for the questions, with :data:`TYPESET_JS` and :data:`LABEL_JS` around it."""
    from jupyterquiz.dynamic.loader import load_questions_script
    from jupyterquiz.dynamic.renderer import build_script

    prefix, static, url = load_questions_script(qs, div_id)
    script = build_script(prefix, static, url, div_id, True)
    script = re.sub(r"\b(var|const|let) (\w+) = MathJax\.version;", r'\1 \2 = MathJax.version || "";', script)
    script = re.sub(r"MathJax\.typeset\(\[(\w+)\]\);", r"courseTypeset(\1);", script)
    return TYPESET_JS + script + LABEL_JS % div_id


def _plain(html: str) -> str:
    """A question's or an option's HTML as plain text: d<sub>k</sub> as d_k, e<sup>x</sup> as e^x, no tags."""
    import html as html_lib

    text = re.sub(r"<sub>(.*?)</sub>", lambda m: "_" + (m[1] if len(m[1]) == 1 else "{" + m[1] + "}"), html)
    text = re.sub(r"<sup>(.*?)</sup>", lambda m: "^" + (m[1] if len(m[1]) == 1 else "(" + m[1] + ")"), text)
    text = re.sub(r"</?code>", "`", text)
    return html_lib.unescape(re.sub(r"<[^>]+>", "", text))


def plain_text(qs: list[dict]) -> str:
    """The questions and their options, without the answers: what a page that runs no script shows of a quiz
    (GitHub, nbviewer, a downloaded notebook not yet trusted), so that a reader there can still try them."""
    lines = ["Check yourself (run this cell, or read it on the course's website, to click an answer and read why it "
             "is right or wrong):"]
    for i, q in enumerate(qs, 1):
        lines.append(f"{i}. {_plain(q['question'])}")
        if q["type"] == "multiple_choice":
            lines += [f"   {chr(ord('a') + j)}) {_plain(a['answer'])}" for j, a in enumerate(q["answers"])]
        else:
            lines.append("   (answer with a number)")
    return "\n".join(lines)


def check_yourself(notebook: str, part: int) -> None:
    """Show one part of a notebook's quiz: click an answer, read why it is right or wrong."""
    import secrets
    import string

    from IPython.display import HTML, display
    from jupyterquiz.dynamic.renderer import build_styles, render_div

    # not the random module: the notebooks seed it, which gave two quizzes of one page the same id
    div_id = "".join(secrets.choice(string.ascii_letters) for _ in range(12))
    div = render_div(div_id, False, False, False, 1_000_000, 760, 10, "left")   # no shuffling: one order everywhere
    display(HTML(div + build_styles(div_id, COLOURS) + STYLE))
    # where the script does not run (a downloaded notebook not yet trusted), the line a reader sees instead
    qs = questions(notebook, part)
    display({"application/javascript": quiz_script(qs, div_id), "text/plain": plain_text(qs)}, raw=True)
