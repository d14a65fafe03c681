"""Visible checks that try an answer on every kind of input its prompt allows.

A check that calls an answer on one example passes every mistake that example hides: a mask convention
never tried without a mask, a ``.view`` after a transpose never given a contiguous tensor, a hard-coded
size equal to the set-up cell's. This module draws the cases a prompt allows and compares the answer
with a reference on each, so a check cell is a few lines and a failure names the case::

    from courseware.grading import cases

    def make(g, B, T, layout):                     # one case's arguments, from a seeded generator
        x = cases.randn(g, B, T, 12)
        return (cases.layout(x, layout), 3)

    CASES = cases.vary(make, base=dict(B=2, T=5, layout="contiguous"),
                       B=[1, 4], T=[1, 9], layout=["non-contiguous", "transposed in memory"])
    cases.check(split_heads, reference, CASES, exact=True, what="split_heads")
    # AssertionError: split_heads fails with B=1: shape (1, 3, 5, 4) where (1, 4, 5, 3) is expected

The reference is the course's own code, a PyTorch built-in or a short independent computation in the
check cell; the cases come from fixed seeds, so the learner sees the same failure every time.

The same cases serve the hidden tests (``courseware.grading.hidden.hidden_check``): :func:`outputs` runs the answer
on each case in the student's kernel (what it returns is recorded), :func:`judge` compares a record with
the reference in the judge's process, where the cases are drawn again from the same seeds.

- :class:`Case` -- a name and the arguments of one call;
- :func:`vary` -- a base case and one case per alternative value of each parameter;
- :func:`grid` -- every combination of the parameters' values;
- :func:`check` -- the answer against the reference on every case, first failure raised by name;
- :func:`compare` -- the first difference between two results (shapes, dtypes, NaN, values), or None;
- :func:`randn`, :func:`layout`, :func:`some_true` -- inputs: seeded tensors, memory layouts, masks.
"""

from __future__ import annotations

import inspect
import itertools
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from utils.checks import Tensor, contract

__all__ = ["Case", "vary", "grid", "check", "compare", "outputs", "judge", "randn", "layout", "some_true",
           "LAYOUTS"]


@dataclass
class Case:
    """One call: ``name`` says what is special about it ("B=1, a (Tq, Tk) mask"), in the words a
    failure message uses; ``args`` and ``kwargs`` are passed to the answer and to the reference."""

    name: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)


def _label(key: str, value: Any) -> str:
    return value if isinstance(value, str) else f"{key}={value}"


SEED_ENV = "COURSE_CASES_SEED"   # added to every case's seed: other draws of the same cases (tests/courseware/measure/test_mutants.py)


def _make(make: Callable[..., Any], name: str, seed: int, params: Mapping[str, Any]) -> Case:
    seed += 1000 * int(os.environ.get(SEED_ENV, "0") or 0)
    out = make(torch.Generator().manual_seed(seed), **params)
    if isinstance(out, Case):
        return out
    if isinstance(out, Mapping):
        return Case(name, (), dict(out))
    if isinstance(out, tuple):
        return Case(name, out)
    return Case(name, (out,))


def vary(make: Callable[..., Any], base: Mapping[str, Any], *, first_seed: int = 0,
         **alternatives: Sequence[Any]) -> list[Case]:
    """The base case, then one case per alternative value of each parameter, the others at their base.

    ``make(g, **params)`` returns the arguments of one call: a tuple (positional), a dict (keyword), one
    object (a single argument) or a :class:`Case`; an alternative given as a mapping names its values
    (``sizes={"D=16, H=4": (16, 4)}``); ``g`` is a ``torch.Generator`` seeded with ``first_seed``
    plus the case's number (a parameter of ``make`` may itself be called ``seed``), so every case is drawn the same way every time. A case is named by what differs
    from the base: a string value is its own name ("non-contiguous"), any other value ``key=value``
    ("B=1"). The base case is named by all its values.
    """
    unknown = set(alternatives) - set(base)
    if unknown:
        raise ValueError(f"vary: {sorted(unknown)} have alternatives but no base value; base has {sorted(base)}")
    out = [_make(make, ", ".join(_label(k, v) for k, v in base.items()), first_seed, base)]
    for key, values in alternatives.items():
        for label, value in _labelled(key, values):
            params = {**base, key: value}
            out.append(_make(make, label, first_seed + len(out), params))
    return out


def _labelled(key: str, values: Sequence[Any] | Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(name, value) pairs: a mapping gives its own names ({"a (Tq, Tk) mask": "causal"})."""
    if isinstance(values, Mapping):
        return list(values.items())
    return [(_label(key, v), v) for v in values]


def grid(make: Callable[..., Any], *, first_seed: int = 0, **axes: Sequence[Any]) -> list[Case]:
    """Every combination of the parameters' values (``make`` as in :func:`vary`); each case is named by all
    its values. Use it for a few short axes: the number of cases is the product of their lengths."""
    keys = list(axes)
    out = []
    for combo in itertools.product(*(_labelled(k, axes[k]) for k in keys)):
        params = {k: value for k, (_, value) in zip(keys, combo)}
        out.append(_make(make, ", ".join(label for label, _ in combo), first_seed + len(out), params))
    return out


# ---------------------------------------------------------------------------------------------
# Inputs.

def randn(g: torch.Generator, *shape: int, scale: float = 1.0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Standard-normal entries times ``scale``, drawn from ``g``, of the given dtype."""
    return torch.randn(*shape, generator=g, dtype=dtype) * scale


LAYOUTS = ("contiguous", "non-contiguous", "transposed in memory")


@contract
def layout(t: Tensor["..."], kind: str) -> Tensor["..."]:
    """The same values in another memory layout: ``"contiguous"`` (a fresh copy), ``"non-contiguous"``
    (every other element of a larger buffer: strides doubled) or ``"transposed in memory"`` (stored with
    its last two axes swapped, as the output of a ``transpose`` is; 1-d tensors: non-contiguous)."""
    if kind == "contiguous":
        return t.clone(memory_format=torch.contiguous_format)
    if kind == "non-contiguous":
        return torch.stack([t, torch.full_like(t, float("nan") if t.is_floating_point() else 0)], -1)[..., 0]
    if kind == "transposed in memory":
        if t.dim() < 2:
            return layout(t, "non-contiguous")
        return t.transpose(-2, -1).contiguous().transpose(-2, -1)
    raise ValueError(f"layout: kind is one of {LAYOUTS}, got {kind!r}")


def some_true(g: torch.Generator, *shape: int, p: float = 0.6) -> torch.Tensor:
    """A random boolean tensor, True with probability ``p``, with at least one True along the last axis
    (a mask in which every query may attend to some key)."""
    m = torch.rand(*shape, generator=g) < p
    keep = torch.randint(0, shape[-1], shape[:-1], generator=g)
    return m | torch.nn.functional.one_hot(keep, shape[-1]).bool()


# ---------------------------------------------------------------------------------------------
# Comparison.

def _where(t: torch.Tensor) -> str:
    if t.dim() == 0:
        return ""
    idx = torch.nonzero(t)[0].tolist()
    return f" at [{', '.join(map(str, idx))}]"


def compare(got: Any, want: Any, *, atol: float = 1e-6, rtol: float = 1e-5, exact: bool = False,
            path: str = "") -> str | None:
    """The first difference between a result and the expected one, in words, or None.

    Tensors must match in shape and dtype and have NaN where the expected result has NaN and nowhere
    else; their values must agree to ``atol + rtol * |want|`` (``exact``: be equal). Python floats must be
    floats (not 0-d tensors); ints, bools, str and None must be equal; lists and tuples are compared item
    by item (a record turns tuples into lists, so either stands for the other), dicts key by key.
    """
    at = f"{path}: " if path else ""
    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"{at}a {type(got).__name__} where a tensor of shape {tuple(want.shape)} is expected"
        if got.shape != want.shape:
            return f"{at}shape {tuple(got.shape)} where {tuple(want.shape)} is expected"
        if got.dtype != want.dtype:
            return f"{at}dtype {got.dtype} where {want.dtype} is expected"
        g, w = got.detach().cpu(), want.detach().cpu()
        if g.dtype == torch.bool or not (g.is_floating_point() or g.is_complex()):
            bad = g != w
            return f"{at}different values{_where(bad)}" if bad.any() else None
        nan_g, nan_w = torch.isnan(g), torch.isnan(w)
        if (nan_g & ~nan_w).any():
            return f"{at}NaN{_where(nan_g & ~nan_w)} where a number is expected"
        if (nan_w & ~nan_g).any():
            return f"{at}a number{_where(nan_w & ~nan_g)} where NaN is expected"
        g, w = g.masked_fill(nan_w, 0), w.masked_fill(nan_w, 0)
        inf = torch.isinf(g) | torch.isinf(w)
        off = inf & (g != w)   # the mismatched positions only: a correctly placed infinity says nothing
        if off.any():
            i = tuple(torch.nonzero(off)[0].tolist())
            gv, wv = g[i].item(), w[i].item()
            what = "an infinity" if math.isinf(gv) else "a number"
            return f"{at}{what} ({gv:g}){_where(off)} where {wv:g} is expected"
        g, w = g.masked_fill(inf, 0), w.masked_fill(inf, 0)
        if exact:
            bad = g != w
            return f"{at}different values{_where(bad)} (max |difference| {(g - w).abs().max().item():.2e})" if bad.any() else None
        diff = (g - w).abs()
        bad = diff > atol + rtol * w.abs()
        if bad.any():
            return (f"{at}max |difference| {diff.max().item():.2e}{_where(diff == diff.max())} "
                    f"(allowed: {atol:g} + {rtol:g}·|expected|)")
        return None
    if isinstance(want, bool) or want is None or isinstance(want, str):
        return None if (type(got) is type(want) and got == want) else f"{at}{got!r} where {want!r} is expected"
    if isinstance(want, float):
        if not isinstance(got, float):
            return f"{at}a {type(got).__name__} where a Python float is expected (.item() turns a 0-d tensor into one)"
        if math.isnan(want) or math.isnan(got):
            return None if (math.isnan(want) and math.isnan(got)) else f"{at}{got!r} where {want!r} is expected"
        if exact:
            return None if got == want else f"{at}{got!r} where {want!r} is expected"
        return None if abs(got - want) <= atol + rtol * abs(want) else f"{at}{got!r} where {want!r} is expected"
    if isinstance(want, int):
        return None if (isinstance(got, int) and not isinstance(got, bool) and got == want) else \
            f"{at}{got!r} where {want!r} is expected"
    if isinstance(want, (list, tuple)):
        if not isinstance(got, (list, tuple)):
            return f"{at}a {type(got).__name__} where a {type(want).__name__} of {len(want)} is expected"
        if len(got) != len(want):
            return f"{at}{len(got)} items where {len(want)} are expected"
        for i, (a, b) in enumerate(zip(got, want)):
            problem = compare(a, b, atol=atol, rtol=rtol, exact=exact, path=f"{path}[{i}]")
            if problem:
                return problem
        return None
    if isinstance(want, Mapping):
        if not isinstance(got, Mapping) or set(got) != set(want):
            return f"{at}keys {sorted(got) if isinstance(got, Mapping) else type(got).__name__} where {sorted(want)} are expected"
        for k in want:
            problem = compare(got[k], want[k], atol=atol, rtol=rtol, exact=exact, path=f"{path}[{k!r}]")
            if problem:
                return problem
        return None
    return None if got == want else f"{at}{got!r} where {want!r} is expected"


# ---------------------------------------------------------------------------------------------
# Running the cases.

def _clone(obj: Any) -> Any:
    """A copy of the tensors in obj (the same strides where they are dense: ``clone`` keeps the layout)."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone()
    if isinstance(obj, tuple):
        return tuple(_clone(o) for o in obj)
    if isinstance(obj, list):
        return [_clone(o) for o in obj]
    if isinstance(obj, dict):
        return {k: _clone(v) for k, v in obj.items()}
    return obj


def _changed(before: Any, after: Any) -> bool:
    if isinstance(before, torch.Tensor):
        return not (before.shape == after.shape and torch.equal(torch.nan_to_num(before, 0.0), torch.nan_to_num(after.detach(), 0.0))
                    and torch.equal(torch.isnan(before), torch.isnan(after.detach()))) \
            if before.is_floating_point() else not torch.equal(before, after.detach())
    if isinstance(before, (list, tuple)):
        return any(_changed(a, b) for a, b in zip(before, after))
    if isinstance(before, dict):
        return any(_changed(before[k], after[k]) for k in before)
    return False


def _arg_names(fn: Callable[..., Any], case: Case) -> list[str]:
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"argument {i + 1}" for i in range(len(case.args))]


def _run(fn: Callable[..., Any], case: Case, what: str) -> Any:
    before = _clone((case.args, case.kwargs))
    try:
        got = fn(*case.args, **case.kwargs)
    except Exception as e:  # the learner's error, named with the case it happened on
        raise AssertionError(f"{what} fails with {case.name}: it raises {type(e).__name__}: {e}") from e
    names = _arg_names(fn, case)
    for name, a, b in zip(names, before[0], case.args):
        if _changed(a, b):
            raise AssertionError(f"{what} fails with {case.name}: it changes its argument {name} in place")
    for k in case.kwargs:
        if _changed(before[1][k], case.kwargs[k]):
            raise AssertionError(f"{what} fails with {case.name}: it changes its argument {k} in place")
    return got


def check(answer: Callable[..., Any], reference: Callable[..., Any], cases: Iterable[Case], *,
          atol: float = 1e-6, rtol: float = 1e-5, exact: bool = False, what: str = "your answer") -> int:
    """Call ``answer`` and ``reference`` on every case and compare the results (:func:`compare`).

    The reference runs on a copy of the arguments, so an answer that edits its inputs in place cannot
    change what it is compared with; such an edit is itself reported. Raises ``AssertionError`` naming
    the first failing case ("split_heads fails with B=1: shape ... where ... is expected"), including
    an error the answer raised; returns the number of cases tried.
    """
    n = 0
    for case in cases:
        mine = Case(case.name, _clone(case.args), _clone(case.kwargs))
        want = reference(*mine.args, **mine.kwargs)
        got = _run(answer, case, what)
        problem = compare(got, want, atol=atol, rtol=rtol, exact=exact)
        if problem:
            raise AssertionError(f"{what} fails with {case.name}: {problem}")
        n += 1
    return n


def outputs(answer: Callable[..., Any], cases: Iterable[Case], what: str = "your answer") -> list[Any]:
    """The answer's result on every case, for a record (``hidden_check``'s ``run``); results are detached."""
    def detach(o):
        if isinstance(o, torch.Tensor):
            return o.detach()
        if isinstance(o, (list, tuple)):
            return [detach(v) for v in o]
        if isinstance(o, dict):
            return {k: detach(v) for k, v in o.items()}
        return o
    return [detach(_run(answer, case, what)) for case in cases]


def judge(reference: Callable[..., Any], cases: Iterable[Case], got: Sequence[Any], *, atol: float = 1e-6,
          rtol: float = 1e-5, exact: bool = False, what: str = "your answer") -> None:
    """Compare recorded results (:func:`outputs`) with the reference on the same cases (``hidden_check``'s
    ``judge``); raises ``AssertionError`` naming the first failing case."""
    cases = list(cases)
    if not isinstance(got, (list, tuple)) or len(got) != len(cases):
        raise AssertionError(f"{what}: a record of {len(cases)} results is expected")
    for case, result in zip(cases, got):
        want = reference(*_clone(case.args), **_clone(case.kwargs))
        problem = compare(result, want, atol=atol, rtol=rtol, exact=exact)
        if problem:
            raise AssertionError(f"{what} fails with {case.name}: {problem}")
