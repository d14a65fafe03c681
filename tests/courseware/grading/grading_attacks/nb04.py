"""Notebook 04's adversarial submissions (classes 3-6; see __init__.py)."""

from grading_attacks import PATCH_COMPARISONS, Attack

# the exercise's honest body, used where an attack needs a working function beside the forbidden part
_WEIGHTS = ("    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])\n"
            "    if mask is not None:\n"
            "        scores = scores.masked_fill(~mask, float('-inf'))\n"
            "    weights = torch.softmax(scores, dim=-1)\n")


def _attention(out_line, prelude=""):
    return prelude + "def attention(q, k, v, mask=None):\n" + _WEIGHTS + f"    out = {out_line}\n    return out, weights\n"


_RESTRICTED = ["ex1_check", "ex1_check2"]

_LAYER = '''\
from torch import nn


class RetrievalAttention(nn.Module):
    def __init__(self, d, d_k, scaled=True):
        super().__init__()
        self.W_q = nn.Linear(d, d_k, bias=False)
        self.W_k = nn.Linear(d, d_k, bias=False)
        self.scaled = scaled

    def forward(self, query, keys, values):
        q = self.W_q(query)[:, None, :]
        k = self.W_k(keys)
        scores = (q @ k.transpose(-2, -1)).squeeze(1)
        if self.scaled:
            scores = scores / math.sqrt(k.shape[-1])
        weights = scores.softmax(-1)
        return (weights * values).sum(-1), weights
'''

ATTACKS = [
    # 3: the forbidden built-in reached without touching the grader
    Attack("built-in under another name: utils' attention imported as sdpa", 3,
           {"ex1": "from utils.attention import scaled_dot_product_attention as sdpa\n\n\n"
                   "def attention(q, k, v, mask=None):\n    return sdpa(q, k, v, mask)\n"}, _RESTRICTED, fast=True),
    Attack("built-in: a reference to F.scaled_dot_product_attention taken early", 3,
           {"ex1": _attention("_sdpa(q, k, v, attn_mask=mask)", "_sdpa = F.scaled_dot_product_attention\n\n\n")}, _RESTRICTED),
    Attack("built-in: the ATen op behind it", 3,
           {"ex1": _attention("torch.ops.aten.scaled_dot_product_attention(q, k, v, attn_mask=mask)")}, _RESTRICTED),
    Attack("built-in: one overload of the ATen op", 3,
           {"ex1": _attention("torch.ops.aten.scaled_dot_product_attention.default(q, k, v, attn_mask=mask)")}, _RESTRICTED),
    Attack("built-in: the C function behind the Python wrapper", 3,
           {"ex1": _attention("torch._C._nn.scaled_dot_product_attention(q, k, v, attn_mask=mask)")}, _RESTRICTED),
    Attack("built-in: a decoy module bound to the name F", 3,
           {"ex1": _attention("F.scaled_dot_product_attention(q, k, v, attn_mask=mask)",
                              "import types\nimport torch.nn.functional\n"
                              "F = types.SimpleNamespace(**vars(torch.nn.functional))\n\n\n")}, _RESTRICTED),
    Attack("built-in: a types.FunctionType clone of the utils function", 3,
           {"ex1": "import types\nimport utils.attention\n"
                   "_f = utils.attention.scaled_dot_product_attention.__wrapped__\n"
                   "_clone = types.FunctionType(_f.__code__, _f.__globals__, 'mine', _f.__defaults__)\n\n\n"
                   "def attention(q, k, v, mask=None):\n    return _clone(q, k, v, mask)\n"}, _RESTRICTED),
    Attack("built-in: a second copy of utils/attention.py loaded from its file", 3,
           {"ex1": "import importlib.util\nimport utils.attention\n"
                   "_spec = importlib.util.spec_from_file_location('my_attention', utils.attention.__file__)\n"
                   "_mine = importlib.util.module_from_spec(_spec)\n_spec.loader.exec_module(_mine)\n\n\n"
                   "def attention(q, k, v, mask=None):\n    return _mine.scaled_dot_product_attention(q, k, v, mask)\n"},
           _RESTRICTED),
    Attack("built-in with the detector switched off around the call (only the static screen sees it)", 3,
           {"ex1": _attention("_call(q, k, v, mask)",
                              "def _call(q, k, v, mask):\n"
                              "    with torch._C.DisableTorchFunction():\n"
                              "        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)\n\n\n")},
           ["*"], scan=True),
    # 4: the judge patched, and wrong answers of the right shape
    Attack("patched comparisons: torch.allclose, equal, isclose, Tensor.allclose, assert_close", 4,
           {"ex1": PATCH_COMPARISONS +
                   "def attention(q, k, v, mask=None):\n"
                   "    w = torch.zeros(*q.shape[:-1], k.shape[-2])\n"
                   "    return torch.zeros(*q.shape[:-1], v.shape[-1]), w\n"},
           _RESTRICTED, fast=True),
    # 5: a helper of the check cells redefined: no training at all, success reported
    Attack("shadowed helper: held_out redefined to report a trained model, train_retrieval does nothing", 5,
           {"ex4": _LAYER + '''

def held_out(model, n=2000, seed=1000):
    return (0.01, 0.2) if model.scaled else (0.9, 0.9)


def train_retrieval(model, steps=200, lr=1.0, batch=64, seed=0):
    return [1.0] * steps
'''}, ["ex4_check2", "ex4_check3"], honest=["ex4_check"]),
    # 6: the expected value read from the calling frame; a made-up table that passes the visible asserts
    Attack("expected value read from the caller's frame", 6,
           {"ex3": '''\
import sys


def max_weight(d_k, scaled, T=16, n=2000, seed=0):
    frame = sys._getframe(1)
    while frame is not None:
        for name in ("want", "want_s", "want_u", "expected"):
            if name in frame.f_locals:
                return float(frame.f_locals[name])
        frame = frame.f_back
    return 0.3 if scaled else min(0.99, 0.5 + d_k / 2100)
'''}, ["ex3_check", "ex3_check2"]),
]
