"""Notebook 10's adversarial submissions (classes 3, 4 and 6; see __init__.py).

Its Exercises section defines no helper that a check cell calls, so there is no class 5 here."""

from grading_attacks import PATCH_COMPARISONS, Attack

_EX1 = ["ex1_check", "ex1_check2"]
_EX2 = ["ex2_check", "ex2_check2"]
_EX3 = ["ex3_check", "ex3_check2"]


def _repeat(body, prelude=""):
    return prelude + "def repeat_heads(k, n_rep):\n" + f"    return {body}\n"


ATTACKS = [
    # 3: the forbidden utils.scale functions and torch.repeat_interleave, reached without touching the grader
    Attack("built-in under another name: utils.scale's online_softmax_update imported as fold", 3,
           {"ex1": "from utils.scale import online_softmax_update as fold\n\n\n"
                   "def online_update(m, l, acc, scores, v):\n    return fold(m, l, acc, scores, v)\n"}, _EX1, fast=True),
    Attack("built-in: a types.FunctionType clone of utils.scale.online_softmax_update", 3,
           {"ex1": "import types\nimport utils.scale\n"
                   "_f = utils.scale.online_softmax_update.__wrapped__\n"
                   "_clone = types.FunctionType(_f.__code__, _f.__globals__, 'mine', _f.__defaults__)\n\n\n"
                   "def online_update(m, l, acc, scores, v):\n    return _clone(m, l, acc, scores, v)\n"}, _EX1),
    Attack("built-in: a second copy of utils/scale.py loaded from its file (online_softmax_update)", 3,
           {"ex1": "import importlib.util\nimport utils.scale\n"
                   "_spec = importlib.util.spec_from_file_location('my_scale', utils.scale.__file__)\n"
                   "_mine = importlib.util.module_from_spec(_spec)\n_spec.loader.exec_module(_mine)\n\n\n"
                   "def online_update(m, l, acc, scores, v):\n"
                   "    return _mine.online_softmax_update(m, l, acc, scores, v)\n"}, _EX1),
    Attack("built-in: a reference to torch.repeat_interleave taken early, under another name", 3,
           {"ex3": _repeat("_spread(k, n_rep, dim=1)", "import torch\n_spread = torch.repeat_interleave\n\n\n")}, _EX3),
    Attack("built-in: the ATen op torch.ops.aten.repeat_interleave", 3,
           {"ex3": _repeat("torch.ops.aten.repeat_interleave(k, n_rep, 1)")}, _EX3),
    Attack("built-in: the C function torch._C._VariableFunctions.repeat_interleave", 3,
           {"ex3": _repeat("torch._C._VariableFunctions.repeat_interleave(k, n_rep, dim=1)")}, _EX3),
    Attack("built-in: a types.FunctionType clone of utils.scale.repeat_kv", 3,
           {"ex3": _repeat("_clone(k, n_rep)",
                           "import types\nimport utils.scale\n"
                           "_f = utils.scale.repeat_kv\n"
                           "_clone = types.FunctionType(_f.__code__, _f.__globals__, 'mine', _f.__defaults__)\n\n\n")},
           _EX3),
    # 4: the comparisons patched to say "equal", and a wrong answer of the right shape in every exercise
    Attack("patched comparisons: torch.allclose, equal, isclose, Tensor.allclose, assert_close", 4,
           {"ex1": PATCH_COMPARISONS +
                   "def online_update(m, l, acc, scores, v):   # the old sums never rescaled\n"
                   "    m_new = torch.maximum(m, scores.max(dim=-1, keepdim=True).values)\n"
                   "    p = torch.exp(scores - m_new)\n"
                   "    return m_new, l + p.sum(dim=-1, keepdim=True), acc + p @ v\n",
            "ex2": "def merge(o1, L1, o2, L2):   # the two outputs averaged\n"
                   "    return (o1 + o2) / 2, torch.maximum(L1, L2)\n",
            "ex3": _repeat("k.repeat(1, n_rep, 1, 1)   # tiled, not interleaved: head h reads h % H_kv")},
           _EX1 + _EX2 + _EX3, fast=True),
    # 6: the scores and values the visible check built, read from the caller's frame; sets with no keys answered
    # honestly, and the fallback (the first set's answer) fails the hidden tests
    Attack("expected value read from the caller's frame (the visible check's scores e and values v)", 6,
           {"ex2": '''\
import sys


def merge(o1, L1, o2, L2):
    if torch.isinf(L2).all():
        return o1, L1
    if torch.isinf(L1).all():
        return o2, L2
    frame = sys._getframe(1)
    while frame is not None:
        for scope in (frame.f_locals, frame.f_globals):
            e, v = scope.get("e"), scope.get("v")
            if isinstance(e, torch.Tensor) and isinstance(v, torch.Tensor) and e.dim() == 2 \\
                    and e.shape[0] == o1.shape[0] and e.shape[1] == v.shape[0] and v.shape[1] == o1.shape[1]:
                return torch.softmax(e, dim=-1) @ v, torch.logsumexp(e, dim=-1)
        frame = frame.f_back
    return o1, L1
'''}, _EX2),
]
