"""Check yourself: the short quizzes in each notebook's main line, from one source, ``utils/quizzes/NN.json``.

Each file holds a notebook's questions in parts, one part a cell placed at the end of the ``##`` section it
names (``scripts/authoring/quiz_cells.py --write NN`` writes the cells). A question is in jupyterquiz's format
(a multiple-choice question's ``answers`` each with ``correct`` and ``feedback``; a numeric question's answers
a ``value`` or a ``range``, each with feedback, and a ``default`` one for any other number).

The quiz is static HTML and JavaScript carried by the cell's output (jupyterquiz inlines its scripts and
styles, nothing is fetched), so the same output works in JupyterLab with a kernel, on the website with none,
and in the student edition once the cell is run.
"""

from __future__ import annotations

import json
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
# button turns the correct or incorrect colour under white text (both >= 5:1); the feedback below it is written
# in a light version of the same colour on the dark blue (STYLE), since jupyterquiz uses one variable for both.
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
.Quiz .Feedback.correct { color: #9be7a8; }
.Quiz .Feedback.incorrect { color: #ffc4bd; }
.Quiz .Input-text { color: #101010; }
.Quiz .Feedback, .Quiz .MultipleChoiceQn, .Quiz .NumericQn { line-height: 1.35; }
@media (max-width: 600px) { .Quiz { font-size: 13pt; } .Quiz .Feedback { font-size: 13pt; } }
</style>"""


def check_yourself(notebook: str, part: int) -> None:
    """Show one part of a notebook's quiz: click an answer, read why it is right or wrong."""
    from IPython.display import HTML, display
    from jupyterquiz import display_quiz

    display_quiz(questions(notebook, part), shuffle_answers=False, colors=COLOURS, max_width=760)
    display(HTML(STYLE))
