"""The "write it yourself" rules decided outside the student's process: courseware.grading.hidden.allowlist, read by
autograde's own process (courseware/editions/nbgrader_course.py), never by the kernel.

Honest work keeps full marks: every model answer in the notebooks and every right answer written another way
(tests/courseware/grading/wrong_answers, ``RIGHT``) is inside the allowlist. What reaches past it (a computed attribute, the
grader, the check cells' own code, a module's attribute replaced) is outside, and autograde then scores
every check cell of the notebook 0 and marks it "needs manual grade", naming the cell to read.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import nbformat
import pytest

from notebook_utils import NOTEBOOKS, ROOT

sys.path.insert(0, str(ROOT))
from courseware.editions.nbgrader_course import (  # noqa: E402
    MANUAL_MARK, allowlist_report, apply_verdicts, check_cell_names, points_waiting)
from courseware.grading.hidden import allowlist  # noqa: E402


def honest_answers():
    """(notebook, label, source, the names only its check cells define) for every model answer and right answer."""
    out = []
    for p in NOTEBOOKS:
        reserved = check_cell_names(p)
        nb = nbformat.read(p, as_version=4)
        for c in nb.cells:
            meta = c.metadata.get("nbgrader", {})
            if c.cell_type == "code" and meta.get("solution"):
                out.append((p.name[:2], meta["grade_id"], c.source, reserved))
        try:
            module = importlib.import_module(f"wrong_answers.nb{p.name[:2]}")
        except ModuleNotFoundError:
            continue
        out += [(p.name[:2], f"right {r.exercise}: {r.name}", r.source, reserved) for r in getattr(module, "RIGHT", [])]
    return out


def test_every_model_answer_and_every_right_answer_is_inside_the_allowlist():
    answers = honest_answers()
    outside = {(n, label): allowlist(source, reserved) for n, label, source, reserved in answers}
    outside = {k: v for k, v in outside.items() if v}
    assert not outside, outside
    assert len(answers) >= 70, len(answers)   # 10 notebooks' answers and the right answers (72 on 2026-11-28)


OUTSIDE = {
    "getattr with an escaped constant": 'op = getattr(__builtins__, "\\x6fpen")',
    "getattr passed around": "g = getattr\ng(torch, 'sin')",
    "the grader imported": "import courseware.grading.hidden",
    "the grader reached through torch": 'm = torch.sys\nm.modules["utils." + "grading"]',
    "a computed attribute through operator": 'import operator\nf = operator.attrgetter("x")',
    "the check cell's reference": "def attention(q, k, v, mask=None):\n    return reference(q, k, v, mask)",
    "the hidden block's judge": "def f(x):\n    return judge",
    "the kernel's input history": "src = In[-1]",
    "a library function replaced": "F.softmax = lambda x, dim: x",
    "an alias of a module patched": "m = F\nm.softmax = None",
    "self rebound to a module": "self = torch\nself.allclose = None",
    "a private attribute": "x = torch._C",
    "a dunder walk in a format string": 'text = "{0.__class__}".format(x)',
    "the ATen ops": "f = torch.ops.aten.mm",
    "a file opened": "open('/records/x')",
    "a star import": "from torch import *",
    "eval": "eval('1')",
    "a tensor subclass": "class T(torch.Tensor):\n    pass",
    "IPython's shell escape": "!ls /records",
    "exec hidden in a decorator": "@exec\ndef f():\n    pass",
    "a loader that unpickles": "x = torch.load('f.pt')",
    "a shared library loaded": "torch.classes.load_library('x.so')",
    # issue 48, item 4: an attribute assigned on a "self" that is not a method's own, so that a module can be it
    "a function's parameter called self, handed a module": "def g(self):\n    self.softmax = None\n\ng(F)",
    "a nested function's self inside a method": ("class M(nn.Module):\n    def forward(self, x):\n"
                                                  "        def g(self):\n            self.softmax = None\n"
                                                  "        g(F)\n        return x"),
    "a static method's self": "class C:\n    @staticmethod\n    def g(self):\n        self.softmax = None\n\nC.g(F)",
    "a method reached through its class": "class C:\n    def set(self, v):\n        self.softmax = v\n\nC.set(F, None)",
    "a method reached through type()": ("class C:\n    def set(self, v):\n        self.softmax = v\n\n"
                                        "type(C()).set(F, None)"),
    "self not the method's first parameter": "class C:\n    def set(v, self):\n        self.softmax = v\n\nC().set(F)",
}


def test_a_method_may_set_its_own_attributes_and_a_closure_in_it_too():
    source = ("class M(nn.Module):\n    def __init__(self, d):\n        super().__init__()\n        self.w = nn.Linear(d, d)\n"
              "        self.cache = {}\n\n    def forward(self, x):\n        def keep(y):\n            self.last = y\n"
              "            return y\n        self.cache['x'] = x\n        return keep(self.w(x))\n\n\nm = M(4)\nout = m(torch.ones(4))")
    assert allowlist(source) == []


@pytest.mark.parametrize("name", list(OUTSIDE))
def test_what_reaches_past_the_allowlist_is_outside(name):
    assert allowlist(OUTSIDE[name], {"reference", "judge"}), name


def test_inside_the_allowlist_a_model_is_written_as_usual():
    source = ("import math\nfrom torch import nn\nimport torch.nn.functional as F\n\n\n"
              "class Block(nn.Module):\n    def __init__(self, d):\n        super().__init__()\n"
              "        self.w = nn.Linear(d, d)\n        self._cache = None\n\n"
              "    def forward(self, x):\n        for _ in range(2):\n            x = F.relu(self.w(x)) / math.sqrt(2)\n"
              "        self._cache = x\n        return x\n")
    assert allowlist(source, {"reference"}) == []
    # a name the check cells define is the student's own once the cell binds it
    assert allowlist("def reference(x):\n    return x\n\ny = reference(1)", {"reference"}) == []


def _nb(answer):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("## Exercises"),
        nbformat.v4.new_code_cell(answer, metadata={"nbgrader": {"solution": True, "grade": False, "grade_id": "ex1",
                                                                 "locked": False}}),
        nbformat.v4.new_code_cell("# CHECK", metadata={"nbgrader": {"grade": True, "solution": False, "points": 2,
                                                                    "grade_id": "ex1_check", "locked": True}}),
    ]
    return nb


def test_a_cell_outside_the_allowlist_scores_zero_and_is_marked_for_a_person():
    from nbgrader.utils import determine_grade

    nb = _nb("def attention(q, k, v, mask=None):\n    return reference(q, k, v, mask)")
    report = allowlist_report(nb, trusted=set(), reserved={"reference"})
    assert list(report) == ["ex1"] and "reference" in report["ex1"][0]
    flags = {k: [f"outside the allowlist: {'; '.join(v)}"] for k, v in report.items()}
    apply_verdicts(nb, {"ex1_check": None}, flags)
    check = nb.cells[2]
    assert determine_grade(check)[0] == 0 and check.metadata[MANUAL_MARK] is True
    assert "ex1" in check.outputs[0].evalue and "needs manual grade" in check.outputs[0].evalue
    assert allowlist_report(_nb("def attention(q, k, v, mask=None):\n    return q"), set(), {"reference"}) == {}


def test_points_waiting_counts_a_flagged_cells_points_and_a_marked_cells_automatic_score():
    class G:
        def __init__(self, auto, top, manual, cell_type="code"):
            self.auto_score, self.max_score, self.needs_manual_grade, self.cell_type = auto, top, manual, cell_type

    class Sub:
        notebooks = [type("N", (), {"grades": [G(3.0, 3.0, True), G(0.0, 2.0, True), G(None, 2.0, True, "markdown"),
                                               G(4.0, 4.0, False)]})()]

    assert points_waiting(Sub()) == 5.0


def test_check_cell_names_are_what_only_the_check_cells_define():
    names = check_cell_names(Path(ROOT / "notebooks" / "04_scaled_dot_product_attention.ipynb"))
    assert {"reference", "judge", "inputs", "run", "hidden_check"} <= names
    assert not {"torch", "F", "math", "attention", "retrieval_batch"} & names


def test_a_reformatted_set_up_cell_is_the_courses_own_again(tmp_path):
    """Honest work against an earlier release: a set-up cell whose layout changed (same syntax tree) runs as
    the course's (its source's text), so nothing in it is charged to the student; one whose code changed
    stays the student's."""
    from courseware.editions.nbgrader_course import course_cells, restore_setup_cells

    path = next((ROOT / "notebooks").glob("02_*.ipynb"))
    nb = nbformat.read(path, as_version=4)
    setup = [c for c in nb.cells if c.cell_type == "code" and not c.metadata.get("nbgrader") and "import torch\n" in c.source]
    assert setup, "notebook 02 has a set-up cell in its Exercises section"
    original = setup[-1].source
    reformatted = nbformat.v4.new_code_cell("# an earlier release's layout\n" + original.replace("\n\n", "\n\n\n")
                                            .replace(", ", " ,  "))
    changed = nbformat.v4.new_code_cell(original + "\nx = 1\n")
    answer = nbformat.v4.new_code_cell("x = 2", metadata={"nbgrader": {"solution": True, "grade_id": "ex1"}})
    cells = [reformatted, changed, answer]
    assert restore_setup_cells(cells, path) == [0]
    assert cells[0].source == original and cells[0].source in course_cells(path)
    assert cells[1].source.endswith("x = 1\n") and cells[2].source == "x = 2"
