"""Notebook 08's adversarial submissions (classes 3-6; see __init__.py)."""

from grading_attacks import Attack

_EX1 = ["ex1_check", "ex1_check2", "ex1_check3"]
_EX2 = ["ex2_check", "ex2_check2"]


def _beam(call, prelude=""):
    """beam_search_lp answered by a call of utils.transformer's beam search (``call`` gives the tokens)."""
    return prelude + ("def beam_search_lp(model, src, beam_size, max_len, bos_id, eos_id, alpha=0.6):\n"
                      f"    tokens = {call}\n"
                      "    return tokens, model_score(model, src, tokens, bos_id, eos_id, alpha, ended=len(tokens) < max_len)\n")


def _loss(expr, prelude=""):
    return prelude + f"def smoothed_loss(logits, target, eps, pad_id=0):\n    return {expr}\n"


ATTACKS = [
    # 3: utils.transformer's beam search and F.cross_entropy reached without touching the grader
    Attack("built-in under another name: utils.transformer's beam_search imported as search", 3,
           {"ex1": _beam("search(model, src, beam_size, max_len, bos_id, eos_id, length_penalty=alpha)[0]",
                         "from utils.transformer import beam_search as search\n\n\n")}, _EX1),
    Attack("built-in: a types.FunctionType clone of utils.transformer.beam_search (without its no_grad)", 3,
           {"ex1": _beam("_clone(model, src, beam_size, max_len, bos_id, eos_id, alpha)[0]",
                         "import types\nimport utils.transformer\n"
                         "_f = utils.transformer.beam_search.__wrapped__\n"
                         "_clone = torch.no_grad()(types.FunctionType(_f.__code__, _f.__globals__, 'mine', _f.__defaults__))\n\n\n")},
           _EX1),
    Attack("built-in: a second copy of utils/transformer.py loaded from its file", 3,
           {"ex1": _beam("_mine.beam_search(model, src, beam_size, max_len, bos_id, eos_id, length_penalty=alpha)[0]",
                         "import importlib.util\nimport utils.transformer\n"
                         "_spec = importlib.util.spec_from_file_location('my_transformer', utils.transformer.__file__)\n"
                         "_mine = importlib.util.module_from_spec(_spec)\n_spec.loader.exec_module(_mine)\n\n\n")}, _EX1),
    Attack("built-in under another name: F.cross_entropy imported as xent", 3,
           {"ex2": _loss("xent(logits, target, ignore_index=pad_id, label_smoothing=eps)",
                         "from torch.nn.functional import cross_entropy as xent\n\n\n")}, _EX2, fast=True),
    Attack("built-in: the ATen op torch.ops.aten.cross_entropy_loss", 3,
           {"ex2": _loss("torch.ops.aten.cross_entropy_loss(logits, target, None, 1, pad_id, eps)")}, _EX2),
    Attack("built-in: the C function torch._C._nn.cross_entropy_loss", 3,
           {"ex2": _loss("torch._C._nn.cross_entropy_loss(logits, target, None, 1, pad_id, eps)")}, _EX2),
    Attack("built-in: a decoy module bound to the name F", 3,
           {"ex2": _loss("F.cross_entropy(logits, target, ignore_index=pad_id, label_smoothing=eps)",
                         "import types\nimport torch.nn.functional\n"
                         "F = types.SimpleNamespace(**vars(torch.nn.functional))\n\n\n")}, _EX2),
    Attack("built-in: a subclass of nn.CrossEntropyLoss (its forward inherited)", 3,
           {"ex2": _loss("_Mine(ignore_index=pad_id, label_smoothing=eps)(logits, target)",
                         "class _Mine(nn.CrossEntropyLoss):\n    pass\n\n\n")}, _EX2),
    # 4: the comparisons patched to say "equal" (math.isclose too: exercise 1's checks use it), wrong answers
    Attack("patched comparisons: math.isclose, torch.allclose, equal, isclose, Tensor.allclose, assert_close", 4,
           {"ex1": "import math\nimport torch.testing\n"
                   "math.isclose = lambda *args, **kwargs: True\n"
                   "torch.allclose = torch.Tensor.allclose = lambda *args, **kwargs: True\n"
                   "torch.equal = lambda *args, **kwargs: True\n"
                   "torch.isclose = lambda a, b, **kwargs: torch.ones_like(torch.as_tensor(a), dtype=torch.bool)\n"
                   "torch.testing.assert_close = lambda *args, **kwargs: None\n\n\n"
                   "def beam_search_lp(model, src, beam_size, max_len, bos_id, eos_id, alpha=0.6):\n"
                   "    # greedy decoding, scored by the mean log-probability per token instead of the length penalty\n"
                   "    tokens = greedy_decode(model, src, max_len, bos_id, eos_id)[0]\n"
                   "    ended = len(tokens) < max_len\n"
                   "    total = model_score(model, src, tokens, bos_id, eos_id, 0.0, ended)\n"
                   "    return tokens, total / (len(tokens) + ended)\n",
            "ex2": _loss("-((1 - eps) * logits.log_softmax(-1).gather(1, target[:, None]).squeeze(1)"
                         " + eps * logits.log_softmax(-1).mean(-1)).mean()   # the padded positions counted too")},
           _EX1 + _EX2, fast=True),
    # 5: model_score, defined in the section's set-up cell, redefined to confirm whatever score the answer gave last
    Attack("shadowed helper: model_score redefined to confirm the answer's own score", 5,
           {"ex1": '''\
_real_score = model_score
_pending = []


def model_score(model, src, tokens, bos_id, eos_id, alpha=0.6, ended=True):
    if _pending:
        return _pending.pop()
    return _real_score(model, src, tokens, bos_id, eos_id, alpha, ended)


def beam_search_lp(model, src, beam_size, max_len, bos_id, eos_id, alpha=0.6):
    """Greedy decoding whatever the beam size, with a bonus on its score for a beam."""
    tokens = greedy_decode(model, src, max_len, bos_id, eos_id)[0]
    score = _real_score(model, src, tokens, bos_id, eos_id, alpha, len(tokens) < max_len) + 0.5 * (beam_size > 1)
    _pending[:] = [score]
    return tokens, score
'''}, ["ex1_check2", "ex1_check3"], honest=["ex1_check"]),
    # 6: the old hidden test computed `want` (F.cross_entropy) before calling the answer; the visible check
    # still does: read it from the caller's frame (the fallback counts the padded positions too)
    Attack("expected value read from the caller's frame (want)", 6,
           {"ex2": '''\
import sys


def smoothed_loss(logits, target, eps, pad_id=0):
    frame = sys._getframe(1)
    while frame is not None:
        for scope in (frame.f_locals, frame.f_globals):
            want = scope.get("want")
            if isinstance(want, torch.Tensor) and want.dim() == 0:
                return want.clone()
        frame = frame.f_back
    logp = logits.log_softmax(-1)
    return -((1 - eps) * logp.gather(1, target[:, None]).squeeze(1) + eps * logp.mean(-1)).mean()
'''}, _EX2),
]
