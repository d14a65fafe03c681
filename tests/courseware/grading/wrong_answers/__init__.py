"""Wrong answers of the kinds students write, for the visible checks (issue: the student edition).

A self-paced learner never sees the hidden tests, so a visible check cell that prints "passes" after
a wrong answer teaches a falsehood. Each :class:`Wrong` here is one honest mistake (from the student
reports in the reviews and from what the lesson makes easy to get wrong: an off-by-one cumulative
sum, an ignored argument, a wrong offset, a missing residual, a softmax over the wrong axis), written
as the student's answer cell. ``tests/courseware/grading/test_wrong_answers.py`` runs each in a kernel that has run the
notebook's ``## Exercises`` section with the model answers, then runs that exercise's check cells,
the visible part and the hidden part separately, and requires:

- a wrong answer with ``hidden_only=False`` fails a **visible** check (the learner learns it there);
- one with ``hidden_only=True`` passes every visible check (a property the visible inputs cannot show
  without giving the answer away), and one of the exercise's check cells says in its first line that
  the hidden tests grade it; the declaration is checked both ways, so it cannot go stale;
- every wrong answer fails the **hidden** tests too (recorded in the kernel and judged by a judge prepared on
  the source notebook, as under autograde), so none
  could earn the points.

Right answers are kept too (:class:`Right`, a list ``RIGHT``): correct answers written another way from the
prompt alone (another order of operations, another dtype path, another formula). Each must pass every
visible and hidden check: so a hidden test that compares to a tolerance asks only for what the prompt says
(the order of random draws, the dtype, the seeds), and a learner who follows the prompt earns the points.

One module per notebook (``nbNN.py``) holds a list ``WRONG`` and may hold a list ``RIGHT``.
"""

from __future__ import annotations

import importlib
import queue
from dataclasses import dataclass
from pathlib import Path

import nbformat

HIDDEN = "### BEGIN HIDDEN TESTS"


@dataclass
class Wrong:
    exercise: str          # grade_id of the answer cell (``ex3`` for Exercise 3)
    name: str              # the mistake, in a few words
    source: str            # the answer cell as the student wrote it
    hidden_only: bool = False   # only the hidden tests can see it (the visible checks say so)


@dataclass
class Right:
    exercise: str          # grade_id of the answer cell
    name: str              # how it differs from the model answer
    source: str            # a correct answer cell, written from the prompt alone


@dataclass
class Outcome:
    wrong: Wrong | Right
    visible: dict[str, str | None]   # check cell grade_id -> the visible part's error ("Name: message") or None
    hidden: dict[str, str | None]    # check cell grade_id -> the hidden part's error or None (no hidden part: absent)


def model_answer(number: str, grade_id: str) -> str:
    """The model answer's cell of a notebook, solution markers removed: a base for a wrong answer that
    differs from it in one place (:func:`variant`)."""
    path = next(Path(__file__).resolve().parents[4].joinpath("notebooks").glob(f"{number}_*.ipynb"))
    cell = next(c for c in nbformat.read(path, as_version=4).cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    return "\n".join(l for l in cell.source.splitlines() if "### BEGIN SOLUTION" not in l and "### END SOLUTION" not in l)


def variant(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, f"the model answer no longer contains {old!r} exactly once"
    return source.replace(old, new)


def wrong_answers(number: str) -> list[Wrong]:
    try:
        module = importlib.import_module(f"wrong_answers.nb{number}")
    except ModuleNotFoundError:
        return []
    return list(module.WRONG)


def right_answers(number: str) -> list[Right]:
    try:
        module = importlib.import_module(f"wrong_answers.nb{number}")
    except ModuleNotFoundError:
        return []
    return list(getattr(module, "RIGHT", []))


def grade_id(cell) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def checks_of(nb, exercise: str) -> list:
    """The graded check cells of one exercise: ``exN_check``, ``exN_check2``, ..."""
    return [c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")
            and (grade_id(c) or "").startswith(f"{exercise}_check")]


class Kernel:
    """A course kernel, run cell by cell; ``run`` returns None or "ErrorName: message"."""

    def __init__(self, kernel_name: str, cwd: Path, timeout: float = 600):
        from jupyter_client.manager import start_new_kernel

        self.km, self.kc = start_new_kernel(kernel_name=kernel_name, cwd=str(cwd))
        self.timeout = timeout

    def run(self, code: str) -> str | None:
        error = []

        def hook(msg):
            if msg["msg_type"] == "error":
                error.append(f"{msg['content']['ename']}: {msg['content']['evalue']}")

        try:
            reply = self.kc.execute_interactive(code, timeout=self.timeout, output_hook=hook, allow_stdin=False)
        except (TimeoutError, queue.Empty):
            return "Timeout: the cell did not finish"
        if reply["content"]["status"] != "ok":
            return error[0] if error else f"{reply['content'].get('ename')}: {reply['content'].get('evalue')}"
        return None

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def run_notebook(path: Path, wrongs: list[Wrong | Right], kernel_name: str, section_start: int) -> list[Outcome]:
    """Run the source notebook's Exercises section once (model answers in), then each wrong answer
    followed by its exercise's check cells, split into their visible and hidden parts; the model
    answer is run again after each, so the next starts from a right state.

    The hidden parts run as under autograde: the kernel records what the student's code returns, and a
    judge prepared on the source notebook (``courseware.grading.hidden.Judge``: set-up cells and model answers, so in
    a judge an exercise's names are the model answer's) gives the verdict. A hidden part's outcome is
    the kernel's error if it raised one, else the judge's reason, else None (passed)."""
    import tempfile

    from courseware.grading.hidden import RECORDS_ENV, Judge
    from courseware.sections import exercise_cells

    nb = nbformat.read(path, as_version=4)
    section = exercise_cells(nb.cells[section_start:])   # up to the appendix, as autograde runs it
    answers = {grade_id(c): c.source for c in section if c.cell_type == "code"
               and c.metadata.get("nbgrader", {}).get("solution")}
    judge = Judge(nb)
    kernel = Kernel(kernel_name, path.parent)
    outcomes = []
    try:
        for cell in section:
            if cell.cell_type == "code":
                err = kernel.run(cell.source)
                assert err is None, f"{path.name}: the model answers' section fails at\n{cell.source[:300]}\n{err}"
        with tempfile.TemporaryDirectory(prefix="wrong-answers-") as root:
            for i, wrong in enumerate(wrongs):
                assert wrong.exercise in answers, f"{path.name}: no answer cell {wrong.exercise} (have {sorted(answers)})"
                checks = checks_of(nb, wrong.exercise)
                assert checks, f"{path.name}: no check cells for {wrong.exercise}"
                err = kernel.run(wrong.source)
                assert err is None, f"{path.name} {wrong.name}: the answer itself does not run: {err}"
                records = Path(root) / f"w{i}"
                records.mkdir()
                visible, hidden = {}, {}
                for check in checks:
                    shown, _, rest = check.source.partition(HIDDEN)
                    visible[grade_id(check)] = kernel.run(shown)
                    if rest:
                        kernel.run(f"import os\nos.environ[{RECORDS_ENV!r}] = {str(records)!r}")
                        hidden[grade_id(check)] = kernel.run(HIDDEN + rest)
                        kernel.run(f"import os\nos.environ.pop({RECORDS_ENV!r}, None)")
                verdicts = judge.decide(records)
                for gid in hidden:
                    hidden[gid] = hidden[gid] or verdicts.get(gid)
                outcomes.append(Outcome(wrong, visible, hidden))
                err = kernel.run(answers[wrong.exercise])
                assert err is None, f"{path.name}: the model answer {wrong.exercise} fails when run again: {err}"
    finally:
        kernel.close()
    return outcomes
