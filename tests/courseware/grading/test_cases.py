"""courseware.grading.cases: the cases are drawn the same way every time, and a failure names the case and the problem."""

from __future__ import annotations

import math

import pytest
import torch

from courseware.grading import cases
from courseware.grading.cases import Case


def _split(x, h):
    B, T, D = x.shape
    return x.reshape(B, T, h, D // h).transpose(1, 2)


def _make(g, B, T, kind):
    return (cases.layout(cases.randn(g, B, T, 12), kind), 3)


def test_vary_draws_a_base_case_and_one_per_alternative_named_by_what_differs():
    cs = cases.vary(_make, base=dict(B=2, T=5, kind="contiguous"), B=[1], kind=["non-contiguous"])
    assert [c.name for c in cs] == ["B=2, T=5, contiguous", "B=1", "non-contiguous"]
    assert cs[1].args[0].shape == (1, 5, 12) and not cs[2].args[0].is_contiguous()
    again = cases.vary(_make, base=dict(B=2, T=5, kind="contiguous"), B=[1], kind=["non-contiguous"])
    assert all(torch.equal(a.args[0], b.args[0]) for a, b in zip(cs, again))      # fixed seeds
    with pytest.raises(ValueError, match="no base value"):
        cases.vary(_make, base=dict(B=2, T=5, kind="contiguous"), H=[1])


def test_grid_makes_every_combination_and_make_may_return_a_dict_or_one_object():
    cs = cases.grid(lambda g, a, b: {"x": torch.full((a,), float(b))}, a=[1, 2], b=[3, 4, 5])
    assert len(cs) == 6 and cs[0].name == "a=1, b=3" and cs[0].kwargs["x"].tolist() == [3.0]
    one = cases.vary(lambda g, n: torch.zeros(n), base=dict(n=2), n={"an empty one": 0})
    assert one[0].args[0].shape == (2,) and one[1].name == "an empty one" and one[1].args[0].shape == (0,)
    named = cases.grid(lambda g, a: a, a={"small": 1, "large": 300})
    assert [c.name for c in named] == ["small", "large"] and named[1].args == (300,)


def test_layouts_keep_the_values_and_change_the_memory():
    x = torch.randn(2, 3, 4)
    for kind in cases.LAYOUTS:
        y = cases.layout(x, kind)
        assert torch.equal(y, x) and y.shape == x.shape
    assert not cases.layout(x, "non-contiguous").is_contiguous()
    assert cases.layout(x, "transposed in memory").stride() == (12, 1, 3)
    assert not cases.layout(torch.randn(5), "transposed in memory").is_contiguous()
    with pytest.raises(ValueError, match="kind is one of"):
        cases.layout(x, "sideways")


def test_some_true_leaves_every_row_something_to_attend_to():
    m = cases.some_true(torch.Generator().manual_seed(0), 50, 7, 3, p=0.05)
    assert m.dtype == torch.bool and m.any(-1).all() and not m.all()


def test_check_passes_a_right_answer_written_another_way_and_counts_the_cases():
    cs = cases.vary(_make, base=dict(B=2, T=5, kind="contiguous"), B=[1, 4], kind=["non-contiguous"])
    other = lambda x, h: torch.stack(x.chunk(h, dim=-1), dim=1)
    assert cases.check(other, _split, cs, exact=True) == 4


def test_check_names_the_case_and_the_problem():
    cs = cases.vary(_make, base=dict(B=2, T=5, kind="contiguous"), T=[3], kind=["transposed in memory"])
    no_transpose = lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1)
    with pytest.raises(AssertionError, match=r"split_heads fails with B=2, T=5, contiguous: different values"):
        cases.check(no_transpose, _split, cs, exact=True, what="split_heads")
    flat = lambda x, h: _split(x.view(x.shape[0], -1).view(x.shape), h)     # .view raises on a transposed layout
    with pytest.raises(AssertionError, match=r"fails with transposed in memory: it raises RuntimeError"):
        cases.check(flat, _split, cs)
    with pytest.raises(AssertionError, match=r"shape \(2, 5, 3, 4\) where \(2, 3, 5, 4\) is expected"):
        cases.check(lambda x, h: _split(x, h).transpose(1, 2), _split, cs)


def test_check_reports_nan_dtype_floats_and_in_place_edits():
    c = [Case("scores of 300", (torch.tensor([300.0, 0.0]),))]
    softmax = lambda s: torch.softmax(s, -1)
    naive = lambda s: s.exp() / s.exp().sum()
    with pytest.raises(AssertionError, match=r"fails with scores of 300: NaN at \[0\] where a number is expected"):
        cases.check(naive, softmax, c)
    with pytest.raises(AssertionError, match="dtype torch.float64 where torch.float32"):
        cases.check(lambda s: softmax(s.double()), softmax, c)
    with pytest.raises(AssertionError, match="a Tensor where a Python float is expected"):
        cases.check(lambda s: s.max(), lambda s: s.max().item(), c)
    def in_place(s):
        s[1] = -math.inf
        return softmax(s)
    with pytest.raises(AssertionError, match="changes its argument s in place"):
        cases.check(in_place, softmax, c)


def test_compare_handles_nesting_nan_inf_and_tolerances():
    t = torch.tensor([1.0, float("nan"), float("-inf")])
    assert cases.compare((t, {"a": 1.0}), [t.clone(), {"a": 1.0 + 1e-9}]) is None
    assert "items" in cases.compare([t], (t, t))
    assert "[1]['a']" in cases.compare((t, {"a": 1.0}), (t, {"a": 2.0}))
    assert "a number at [1] where NaN" in cases.compare(torch.tensor([1.0, 0.0, -math.inf]), t)
    assert "an infinity (inf) at [2] where -inf is expected" in cases.compare(torch.tensor([1.0, math.nan, math.inf]), t)
    # issue 50: a correctly placed -inf elsewhere does not make a finite slip read as "an infinity"
    kept = torch.tensor([0.5, -math.inf, 0.25, -math.inf])
    assert cases.compare(torch.tensor([0.5, -math.inf, 0.25, 0.1]), kept) == \
        "a number (0.1) at [3] where -inf is expected"
    assert cases.compare(torch.tensor([0.5, -math.inf, -math.inf, -math.inf]), kept) == \
        "an infinity (-inf) at [2] where 0.25 is expected"
    assert cases.compare(torch.tensor([1.0]), torch.tensor([1.0 + 1e-4]), atol=1e-3) is None
    assert "max |difference|" in cases.compare(torch.tensor([1.0]), torch.tensor([1.0 + 1e-4]))
    assert "different values" in cases.compare(torch.tensor([1.0]), torch.tensor([1.0 + 1e-7]), exact=True)
    assert "different values" in cases.compare(torch.tensor([True]), torch.tensor([False]))
    assert "where 3 is expected" in cases.compare(True, 3)


def test_outputs_and_judge_split_the_check_for_the_hidden_tests():
    from courseware.grading.hidden import from_bytes, to_bytes

    cs = cases.vary(_make, base=dict(B=2, T=5, kind="contiguous"), B=[1], kind=["non-contiguous"])
    record = from_bytes(to_bytes(cases.outputs(_split, cs)))            # tuples come back as lists, layouts as copies
    cases.judge(_split, cases.vary(_make, base=dict(B=2, T=5, kind="contiguous"), B=[1], kind=["non-contiguous"]),
                record, exact=True)
    with pytest.raises(AssertionError, match="fails with B=1"):
        cases.judge(lambda x, h: _split(x, h) * (x.shape[0] > 1), cs, record)
    with pytest.raises(AssertionError, match="a record of 3 results"):
        cases.judge(_split, cs, record[:2])
