"""The exercises' checks measured by mutation (issue 50, ``courseware/measure/mutants.py``).

Every mutant of a model answer (an operator swapped, a constant off by one, a dropped transpose, a global
in place of an argument, ...) must be killed by a visible check (at least 95 % of them per notebook) and
by the visible checks and hidden tests together (all of them), unless it is listed as equivalent in
``tests/mutants_equivalent.json`` with a reason; a listed mutant must still pass every check when the
checks' cases are drawn from other seeds (``COURSE_CASES_SEED``), or its listing is wrong.

``make test`` runs two cheap notebooks (``MUTANT_NOTEBOOKS`` picks others; ``make test-mutants`` prints the
table for every notebook).
"""

from __future__ import annotations

import ast
import json
import os
import sys

import pytest

from notebook_utils import ROOT

sys.path.insert(0, str(ROOT))
from courseware.measure import mutants  # noqa: E402

CHEAP = "10 01"


def chosen() -> list[str]:
    return os.environ.get("MUTANT_NOTEBOOKS", CHEAP).split()


def test_the_generator_makes_every_kind_of_mutant():
    source = '''def f(x, mask, n=3):
    ### BEGIN SOLUTION
    h = x.new_zeros(x.shape[0], 4) + mask
    y = torch.zeros(2, dtype=x.dtype, device=x.device)
    s = (x @ x.T).softmax(dim=-1) / n
    opt.zero_grad()
    return torch.cat([s, h], -1) if n < 2 else s.transpose(0, 1)
    ### END SOLUTION
'''
    made = mutants.generate("ex1", source, ["TOY_V"], ["mask"])
    ops = {m.op for m in made}
    assert ops >= {"arith", "compare", "const", "dim", "transpose", "swap", "term", "delete", "dtype", "global",
                   "detach"}, ops
    news = {m.new for m in made}
    assert "(torch.zeros(x.shape[0], 4))" in news, "x.new_zeros as torch.zeros"
    assert "globals()['mask']" in news and "TOY_V" in news
    assert any("[h, s]" in m.new for m in made), "the operands of torch.cat in another order"
    assert all(m.line >= 3 for m in made), "only the solution's lines change"
    for m in made:
        ast.parse(m.source)
    assert len({m.key for m in made}) == len(made)


def test_listed_equivalents_have_a_reason_and_are_still_generated():
    listed = mutants.equivalents()
    for number, marked in listed.items():
        _, _, answers, _ = mutants.prepare(number)
        keys = {m.key for ex, src in answers.items() for m in mutants.generate(ex, src, [], [])}
        for key, reason in marked.items():
            assert reason.strip(), f"{number} {key}: no reason"
            if " global " not in key:   # a global's mutants need the kernel's set-up globals
                assert key in keys, f"{number} {key}: listed as equivalent but no longer generated"


@pytest.mark.parametrize("number", chosen())
def test_the_checks_kill_every_mutant(number):
    marked = mutants.equivalents().get(number, {})
    results = mutants.run_notebook(number)
    rows = mutants.tabulate(number, results, marked)
    mutants.print_table(rows)
    live = sum(r["generated"] - r["equivalent"] for r in rows)
    visible = sum(r["visible"] for r in rows)
    survivors = [f"{r.mutant.key} ({r.outcome})" for r in results
                 if r.outcome == "survived" and r.mutant.key not in marked]
    killed = [r.mutant.key for r in results if r.mutant.key in marked and r.outcome != "survived"]
    assert not survivors, f"{number}: mutants that pass every check:\n" + "\n".join(survivors)
    assert not killed, f"{number}: listed as equivalent but a check kills them:\n" + "\n".join(killed)
    assert visible >= 0.95 * live, f"{number}: {visible} of {live} mutants killed by a visible check"
    # the listed equivalents, with the checks' cases drawn from other seeds
    if marked:
        again = mutants.run_notebook(number, keys=set(marked), env={"COURSE_CASES_SEED": "1"})
        told = [f"{r.mutant.key}: {r.where[:200]}" for r in again if r.outcome != "survived"]
        assert not told, f"{number}: listed as equivalent, told apart on other draws:\n" + "\n".join(told)


def test_the_equivalents_file_is_sorted_json():
    path = mutants.EQUIVALENT
    if path.exists():
        data = json.loads(path.read_text())
        assert list(data) == sorted(data)
